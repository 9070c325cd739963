"""System search locations: CUDA/cuDNN/conda variables, LD_LIBRARY_PATH (each entry annotated), the
ld.so cache (parsed in Python; ``ldconfig`` is never run), the default library directories, and on
Windows the PATH."""

from __future__ import annotations

import os
import stat
import struct
import sys
from collections.abc import Mapping, Sequence

from ortdoctor.core.facts import SearchDir, SystemInfo
from ortdoctor.core.patterns import digits_end, lazy
from ortdoctor.formats.ldcache import LdCacheError, read_ld_cache
from ortdoctor.probes import stdlib_answers

__all__ = ["annotate_dir", "default_lib_dirs", "probe_system"]

# The rule; _toolkit_version reads it by hand (see core/patterns.py)
_TOOLKIT_RE = lazy(r"cuda-(\d+)\.(\d+)")


def _toolkit_version(path: str) -> tuple[str, str] | None:
    """``_TOOLKIT_RE.search(path)``'s groups: ("13", "0") for ``/usr/local/cuda-13.0/lib64``."""
    if not path.isascii():
        m = _TOOLKIT_RE.search(path)
        return (m.group(1), m.group(2)) if m else None
    at = path.find("cuda-")
    while at != -1:
        major_end = digits_end(path, at + 5)
        if major_end > at + 5 and path[major_end:major_end + 1] == ".":
            minor_end = digits_end(path, major_end + 1)
            if minor_end > major_end + 1:
                return path[at + 5:major_end], path[major_end + 1:minor_end]
        at = path.find("cuda-", at + 1)
    return None


def default_lib_dirs(multiarch: str | None = None) -> tuple[str, ...]:
    """The directories ld.so searches after everything else (trusted directories)."""
    triplet = multiarch if multiarch is not None else stdlib_answers.multiarch()
    dirs = []
    if triplet:
        dirs += [f"/lib/{triplet}", f"/usr/lib/{triplet}"]
    dirs += ["/lib", "/usr/lib", "/lib64", "/usr/lib64"]
    return tuple(dirs)


def annotate_dir(path: str, origin: str, *, uid: int | None = None, cwd: str | None = None) -> SearchDir:
    """Describe one search directory: does it exist, is it relative, who may write to it."""
    me = (os.getuid() if hasattr(os, "getuid") else None) if uid is None else uid
    note: str | None = None
    relative = not os.path.isabs(path)
    if path == "":
        note = "empty entry = current directory"
    elif relative:
        note = "relative entry: resolved against the current directory"
    target = os.path.join(cwd or os.getcwd(), path) if relative else path
    try:
        st = os.stat(target)
    except OSError:
        return SearchDir(path=path, origin=origin, exists=False, relative=relative, note=note or "missing")
    if not stat.S_ISDIR(st.st_mode):
        return SearchDir(path=path, origin=origin, exists=False, relative=relative, note=note or "not a directory")
    world_writable = bool(st.st_mode & stat.S_IWOTH)
    foreign = me is not None and st.st_uid not in (0, me)
    if note is None:
        toolkit = _toolkit_version(path)
        if toolkit:
            note = f"CUDA {toolkit[0]}.{toolkit[1]} toolkit"
    return SearchDir(path=path, origin=origin, exists=True, relative=relative, world_writable=world_writable,
                     foreign_owner=foreign, note=note)


def probe_system(
    environ: Mapping[str, str] | None = None,
    *,
    ld_cache_path: str | None = "/etc/ld.so.cache",
    default_dirs: Sequence[str] | None = None,
    machine: str | None = None,
    os_name: str | None = None,
    uid: int | None = None,
    cwd: str | None = None,
) -> SystemInfo:
    """Describe the search locations. Every argument is a seam for tests; defaults are this process's."""
    env = os.environ if environ is None else environ
    if os_name is None:
        os_name = "windows" if sys.platform == "win32" else ("linux" if sys.platform.startswith("linux") else sys.platform)
    if machine is None:
        machine = stdlib_answers.machine()
    problems: list[str] = []

    ld_entries: tuple[SearchDir, ...] = ()
    ldconfig: dict[str, tuple[str, ...]] = {}
    defaults: tuple[SearchDir, ...] = ()
    windows_path: tuple[SearchDir, ...] = ()
    if os_name == "windows":
        raw_path = env.get("PATH", "")
        windows_path = tuple(annotate_dir(p, "PATH", uid=uid, cwd=cwd) for p in raw_path.split(";") if p)
    else:
        raw = env.get("LD_LIBRARY_PATH")
        if raw is not None and raw != "":
            # Every entry counts, empty ones too: "a::b" and a trailing ":" put the cwd on the path.
            ld_entries = tuple(annotate_dir(p, "LD_LIBRARY_PATH", uid=uid, cwd=cwd) for p in raw.split(":"))
        if ld_cache_path is not None:
            try:
                ldconfig = read_ld_cache(ld_cache_path, machine)
            except FileNotFoundError:
                problems.append(f"{ld_cache_path} does not exist (no ld.so cache: only default directories)")
            except (OSError, LdCacheError, struct.error) as exc:
                problems.append(f"{ld_cache_path} could not be read: {exc}")
        dirs = default_lib_dirs() if default_dirs is None else tuple(default_dirs)
        defaults = tuple(annotate_dir(d, "default", uid=uid, cwd=cwd) for d in dirs)

    return SystemInfo(
        conda_prefix=env.get("CONDA_PREFIX") or None,
        cuda_home=env.get("CUDA_HOME") or None,
        cuda_path=env.get("CUDA_PATH") or None,
        cudnn_path=env.get("CUDNN_PATH") or None,
        ld_library_path=ld_entries,
        ldconfig=ldconfig,
        default_dirs=defaults,
        windows_path=windows_path,
        problems=tuple(problems),
    )
