"""Install or remove the ``.pth`` file that runs ``import ortdoctor.hook`` in every interpreter.

Opt-in only (``ortdoctor hook install``). The file is written into the environment's ``purelib``
site-packages and nothing else is touched. Its line imports the hook only while ortdoctor is still
installed, so a leftover file after ``pip uninstall ortdoctor`` cannot break interpreter start-up.
"""

from __future__ import annotations

import os
import sysconfig

__all__ = ["PTH_NAME", "HookInstallError", "install", "is_installed", "pth_path", "uninstall"]

PTH_NAME = "ortdoctor_hook.pth"
_MARKER = "# ortdoctor hook:"
PTH_TEXT = (
    f"{_MARKER} preload the CUDA/cuDNN libraries onnxruntime-gpu needs (remove: ortdoctor hook uninstall)\n"
    "import importlib.util as _u; _u.find_spec('ortdoctor') and __import__('ortdoctor.hook')\n"
)


class HookInstallError(OSError):
    """The .pth file cannot be written or removed; ``str()`` says why and where."""


def pth_path(site_dir: str | None = None) -> str:
    return os.path.join(site_dir or sysconfig.get_paths()["purelib"], PTH_NAME)


def _ours(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(len(_MARKER)) == _MARKER
    except OSError:
        return False


def is_installed(site_dir: str | None = None) -> bool:
    return os.path.isfile(pth_path(site_dir))


def install(site_dir: str | None = None) -> str:
    """Write the .pth file (idempotent); returns its path."""
    path = pth_path(site_dir)
    if not os.path.isdir(os.path.dirname(path)):
        raise HookInstallError(f"site-packages directory {os.path.dirname(path)} does not exist")
    if os.path.exists(path) and not _ours(path):
        raise HookInstallError(f"{path} exists and was not written by ortdoctor; not overwriting it")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(PTH_TEXT)
    except OSError as exc:
        raise HookInstallError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def uninstall(site_dir: str | None = None) -> str | None:
    """Remove the .pth file; returns its path, or None when there was none."""
    path = pth_path(site_dir)
    if not os.path.exists(path):
        return None
    if not _ours(path):
        raise HookInstallError(f"{path} was not written by ortdoctor; not removing it")
    try:
        os.remove(path)
    except OSError as exc:
        raise HookInstallError(f"cannot remove {path}: {exc.strerror or exc}") from None
    return path
