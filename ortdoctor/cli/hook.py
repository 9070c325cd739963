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


def _nothing_to_preload(site_dir: str | None) -> str | None:
    """Why the hook would have nothing to preload here (no CUDA build of onnxruntime), with the fix; None
    when a CUDA build is installed. Without this, every interpreter start would print the same warning."""
    from ortdoctor.doctor.check import run_check

    # the hook runs with this interpreter's whole sys.path, plus the directory its .pth goes into
    report = run_check(smoke=False, sys_path=None if site_dir is None else [*sys.path, site_dir])
    if report.env.ort.is_gpu_build:
        return None
    lines = ["ortdoctor hook install: no CUDA build of onnxruntime is installed here, so the hook would have "
             "nothing to preload and would warn at every interpreter start."]
    for f in report.findings:
        if f.severity == "error" and f.id.startswith("ort-"):
            lines.append(f"  {f.title}  [{f.id}]")
            if f.fix:
                from ortdoctor.core.shell import split_fix

                # the command lines (each whole, to paste), else the first line of the prose
                commands = split_fix(f.fix, bool(f.commands))[0] or f.fix.splitlines()[:1]
                lines += [f"    fix: {line}" for line in commands]
    lines.append("Install onnxruntime-gpu first (`ortdoctor fix` shows the commands), or pass --force.")
    return "\n".join(lines)


@command.command("install")
@_SITE
@click.option("--force", is_flag=True, help="Install even when no CUDA build of onnxruntime is installed yet.")
def install_cmd(site_dir: str | None, force: bool) -> None:
    """Add ortdoctor_hook.pth to site-packages."""
    from ortdoctor.preloading.hook_install import HookInstallError, install

    if not force:
        why = _nothing_to_preload(site_dir)
        if why is not None:
            click.echo(why, err=True)
            sys.exit(exitcodes.FAIL)
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
