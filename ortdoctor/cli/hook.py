"""``ortdoctor hook install|uninstall|status``: run the preload hook in every interpreter of an environment."""

from __future__ import annotations

import sys

import click

from ortdoctor.core import exitcodes

_SITE = click.option("--site-dir", default=None, metavar="DIR",
                     help="The site-packages to write into (default: this environment's purelib).")


@click.group("hook")
def command() -> None:
    """Opt-in: make every Python of this environment run `import ortdoctor.hook` at start-up."""


@command.command("install")
@_SITE
def install_cmd(site_dir: str | None) -> None:
    """Add ortdoctor_hook.pth to site-packages."""
    from ortdoctor.preloading.hook_install import HookInstallError, install

    try:
        path = install(site_dir)
    except HookInstallError as exc:
        click.echo(f"ortdoctor hook install: {exc}", err=True)
        sys.exit(exitcodes.USAGE)
    click.echo(f"wrote {path}\nEvery interpreter of this environment now preloads the CUDA/cuDNN libraries "
               "(ORTDOCTOR_DISABLE=1 turns it off; `ortdoctor hook uninstall` removes it).")


@command.command("uninstall")
@_SITE
def uninstall_cmd(site_dir: str | None) -> None:
    """Remove ortdoctor_hook.pth from site-packages."""
    from ortdoctor.preloading.hook_install import HookInstallError, pth_path, uninstall

    try:
        path = uninstall(site_dir)
    except HookInstallError as exc:
        click.echo(f"ortdoctor hook uninstall: {exc}", err=True)
        sys.exit(exitcodes.USAGE)
    click.echo(f"removed {path}" if path else f"nothing to remove: {pth_path(site_dir)} does not exist")


@command.command("status")
@_SITE
def status_cmd(site_dir: str | None) -> None:
    """Say whether the hook is installed, and where."""
    from ortdoctor.preloading.hook_install import is_installed, pth_path

    path = pth_path(site_dir)
    click.echo(f"installed: {path}" if is_installed(site_dir) else f"not installed ({path} does not exist)")
