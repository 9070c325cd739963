"""The Python interpreter and the platform it runs on: version, architecture, libc, venv/conda,
container and WSL hints, and the site directories that hold installed distributions."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping

from ortdoctor.core.facts import PythonInfo
from ortdoctor.formats.distinfo import list_dist_infos
from ortdoctor.probes.interpreter import Interpreter, this_interpreter
from ortdoctor.probes.stdlib_answers import directory_entries, which

__all__ = ["find_site_dirs", "probe_python"]

_CGROUP_HINTS = ("docker", "kubepods", "containerd", "libpod", "lxc")
#: The file `ortdoctor hook install` writes (ortdoctor.preloading.hook_install.PTH_NAME: a test keeps them equal).
HOOK_PTH = "ortdoctor_hook.pth"


def _os_name(sys_platform: str) -> str:
    if sys_platform.startswith("linux"):
        return "linux"
    if sys_platform in ("win32", "cygwin"):
        return "windows"
    return sys_platform


def find_site_dirs(sys_path: Iterable[str]) -> tuple[str, ...]:
    """Every entry of ``sys_path`` that is a directory holding ``*.dist-info``, in path order.

    That covers the venv's site-packages, the user site and ``pip install --target`` directories put
    on PYTHONPATH; all of them feed ``import``, so all of them are searched.
    """
    out: list[str] = []
    for entry in sys_path:
        if not entry:  # "" is the current directory of `python -c`: not an install location
            continue
        path = os.path.abspath(entry)
        if path not in out and os.path.isdir(path) and list_dist_infos(path):
            out.append(path)
    return tuple(out)


def _read_head(path: str, limit: int = 16 * 1024) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _libc(fs_root: str) -> str | None:
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        value = None
    if value:
        return value  # "glibc 2.36"
    # musl has no confstr for it; its loader's name gives it away.
    if directory_entries(os.path.join(fs_root, "lib"), "ld-musl-", ".so.1"):
        return "musl"
    return None


def _container_hints(environ: Mapping[str, str], fs_root: str) -> tuple[str, ...]:
    hints: list[str] = []
    for marker in ("/.dockerenv", "/run/.containerenv"):
        if os.path.exists(os.path.join(fs_root, marker.lstrip("/"))):
            hints.append(marker)
    cgroup = _read_head(os.path.join(fs_root, "proc/1/cgroup"))
    if cgroup:
        for word in _CGROUP_HINTS:
            if word in cgroup:
                hints.append(f"cgroup:{word}")
    if environ.get("KUBERNETES_SERVICE_HOST"):
        hints.append("KUBERNETES_SERVICE_HOST")
    if environ.get("container"):  # set by podman and systemd-nspawn
        hints.append(f"container={environ['container']}")
    return tuple(hints)


def _is_wsl(environ: Mapping[str, str], fs_root: str) -> bool:
    if environ.get("WSL_DISTRO_NAME"):
        return True
    version = _read_head(os.path.join(fs_root, "proc/version"), 4096)
    return bool(version and "microsoft" in version.lower())


def _start_method(os_name: str) -> str | None:
    """The multiprocessing start method, without importing multiprocessing or fixing its context."""
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        try:
            chosen = mp.get_start_method(allow_none=True)  # None: not fixed yet, and it stays so
            return str(chosen or mp.get_all_start_methods()[0])  # the first one is the default
        except (AttributeError, IndexError, ValueError):
            pass
    if os_name in ("windows", "darwin"):
        return "spawn"
    if os_name == "linux":
        return "forkserver" if sys.version_info >= (3, 14) else "fork"
    return None


def _launcher_python(script: str) -> str | None:
    """The interpreter a ``pip``/console-script launcher runs: its ``#!`` line, or the ``exec`` line of the
    ``#!/bin/sh`` form pip writes when the interpreter's path is too long for a ``#!`` line."""
    head = _read_head(script, 1024)
    if not head or not head.startswith("#!"):
        return None
    first, _, rest = head.partition("\n")
    target = first[2:].strip().split()[0] if first[2:].strip() else ""
    if os.path.basename(target) == "sh":
        m = re.search(r"""exec' "?([^"\s]+)"?""", rest)
        return m.group(1) if m else None
    if os.path.basename(target) == "env":  # "#!/usr/bin/env python3": whatever python3 is on PATH
        return None
    return target or None


def probe_python(
    *,
    sys_path: Iterable[str] | None = None,
    environ: Mapping[str, str] | None = None,
    fs_root: str = "/",
    interpreter: Interpreter | None = None,
) -> PythonInfo:
    """Describe the inspected interpreter (default: the running one; ``interpreter`` for ``--python``).
    ``sys_path``, ``environ`` and ``fs_root`` are seams for tests."""
    env = os.environ if environ is None else environ
    it = interpreter or this_interpreter()
    os_name = _os_name(it.sys_platform)
    venv = it.prefix if it.prefix != it.base_prefix else None
    sites = find_site_dirs(it.path if sys_path is None else sys_path)
    path = env.get("PATH")
    pip = which("pip", path) if path is not None else None
    creator = _venv_creator(venv) if venv else None
    uv = which("uv", path) if path is not None else None
    if uv is None and creator == "uv":
        uv = _uv_elsewhere(env)
    return PythonInfo(
        version=it.version,
        executable=it.executable,
        implementation=it.implementation,
        platform=it.platform,
        machine=it.machine,
        os=os_name,
        libc=_libc(fs_root) if os_name == "linux" else None,
        venv=venv,
        conda_prefix=env.get("CONDA_PREFIX") or None,
        container=_container_hints(env, fs_root) if os_name == "linux" else (),
        wsl=_is_wsl(env, fs_root) if os_name == "linux" else False,
        site_dirs=sites,
        multiprocessing_start_method=_start_method(os_name) if not it.other else None,
        prefix=it.prefix,
        has_pip=any(name.lower().startswith("pip-") for site in sites for name in list_dist_infos(site)),
        pip_on_path=pip,
        pip_on_path_python=_launcher_python(pip) if pip else None,
        uv_on_path=uv,
        virtual_env=env.get("VIRTUAL_ENV") or None,
        inspected_other=it.other,
        hook_pth=next((p for site in sites if os.path.isfile(p := os.path.join(site, HOOK_PTH))), None),
        base_executable=it.base_executable if venv else None,
        user_site=it.user_site,
        venv_creator=creator,
        env_manager=_env_manager(it.prefix, creator),
    )


def _env_manager(prefix: str, creator: str | None) -> str | None:
    """The tool that owns this environment's package list, so that a fix can name its command too: a pixi
    environment (``<project>/.pixi/envs/NAME``, a conda prefix), a poetry venv (its cache directory, or an
    in-project ``.venv`` beside ``poetry.lock``), a conda environment (``conda-meta/``)."""
    norm = prefix.replace("\\", "/")
    if "/.pixi/envs/" in norm + "/":
        return "pixi"
    if "/pypoetry/virtualenvs/" in norm or (
            os.path.basename(norm) == ".venv" and os.path.isfile(os.path.join(os.path.dirname(prefix), "poetry.lock"))):
        return "poetry"
    if os.path.isdir(os.path.join(prefix, "conda-meta")):
        return "conda"
    return None

def _venv_creator(prefix: str) -> str | None:
    """``uv`` when ``uv venv`` made this venv (its ``pyvenv.cfg`` has a ``uv = VERSION`` line): such a venv
    has no pip, and uv is its installer."""
    text = _read_head(os.path.join(prefix, "pyvenv.cfg"), 4096) or ""
    keys = {line.partition("=")[0].strip().lower() for line in text.splitlines() if "=" in line}
    return "uv" if "uv" in keys else None


def _uv_elsewhere(environ: Mapping[str, str]) -> str | None:
    """uv where its own installer puts it, for a uv venv whose shell does not have uv on PATH."""
    home = environ.get("HOME")
    if not home or not os.path.isabs(home):
        return None
    for place in (environ.get("XDG_BIN_HOME") or os.path.join(home, ".local", "bin"), os.path.join(home, ".cargo", "bin")):
        candidate = os.path.join(place, "uv")
        if os.path.isabs(candidate) and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
