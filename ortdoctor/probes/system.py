"""System search locations: CUDA/cuDNN/conda variables, LD_LIBRARY_PATH (each entry annotated), the
ld.so cache (parsed in Python; ``ldconfig`` is never run), the default library directories, and on
Windows the PATH."""

from __future__ import annotations

import os
import platform as _platform
import re
import stat
import struct
import sys
import sysconfig
from collections.abc import Mapping, Sequence

from ortdoctor.facts import SearchDir, SystemInfo

__all__ = ["LdCacheError", "annotate_dir", "default_lib_dirs", "parse_ld_cache", "probe_system", "read_ld_cache"]

_NEW_MAGIC = b"glibc-ld.so.cache1.1"
_OLD_MAGIC = b"ld.so-1.7.0"
_MAX_CACHE = 64 * 1024 * 1024

# Entry flags: the low byte is the library type, the next byte the architecture (glibc ldconfig.h).
_FLAG_ELF_LIBC6 = 0x0003
_ARCH_FLAGS = {"x86_64": 0x0300, "aarch64": 0x0A00, "ppc64le": 0x0500, "s390x": 0x0400, "riscv64": 0x1000}

_TOOLKIT_RE = re.compile(r"cuda-(\d+)\.(\d+)")


class LdCacheError(ValueError):
    """The ld.so cache is not in a format we read (the message says why)."""


def parse_ld_cache(data: bytes, machine: str | None = None) -> dict[str, tuple[str, ...]]:
    """soname -> paths, in cache order (the order ``ldconfig -p`` prints and ld.so searches).

    Reads glibc's new format (``glibc-ld.so.cache1.1``), alone or after an old-format
    (``ld.so-1.7.0``) block. With ``machine`` ("x86_64", ...) only libc6 entries for that
    architecture are kept, as the loader of such a process would; unknown machines keep every entry.
    """
    if data.startswith(_NEW_MAGIC):
        new_at = 0
    elif data.startswith(_OLD_MAGIC):
        if len(data) < 16:
            raise LdCacheError("truncated old-format header")
        (nlibs_old,) = struct.unpack_from("<I", data, 12)
        new_at = 16 + nlibs_old * 12
        new_at = (new_at + 7) & ~7  # the new block is aligned to 8 bytes
        if not data.startswith(_NEW_MAGIC, new_at):
            return _parse_old(data, nlibs_old, machine)
    else:
        raise LdCacheError("unknown ld.so cache format")
    return _parse_new(data, new_at, machine)


def _parse_new(data: bytes, base: int, machine: str | None) -> dict[str, tuple[str, ...]]:
    if len(data) < base + 48:
        raise LdCacheError("truncated header")
    endian_flag = data[base + 28]
    # flags: 0 unknown (assume little), 1 invalid, 2 little endian, 3 big endian (glibc dl-cache.h)
    end = ">" if endian_flag == 3 else "<"
    nlibs, _len_strings = struct.unpack_from(end + "II", data, base + 20)
    entries_at = base + 48
    if entries_at + nlibs * 24 > len(data):
        raise LdCacheError(f"{nlibs} entries do not fit in {len(data)} bytes")
    want = _ARCH_FLAGS.get(machine or "")
    out: dict[str, list[str]] = {}
    for i in range(nlibs):
        flags, key, value = struct.unpack_from(end + "iII", data, entries_at + i * 24)
        if want is not None and (flags & 0xFF != _FLAG_ELF_LIBC6 or flags & 0xFF00 != want):
            continue
        # String offsets of the new format count from the start of its header.
        out.setdefault(_string(data, base + key), []).append(_string(data, base + value))
    return {k: tuple(v) for k, v in out.items()}


def _parse_old(data: bytes, nlibs: int, machine: str | None) -> dict[str, tuple[str, ...]]:
    strings_at = 16 + nlibs * 12
    if strings_at > len(data):
        raise LdCacheError(f"{nlibs} entries do not fit in {len(data)} bytes")
    want = _ARCH_FLAGS.get(machine or "")
    out: dict[str, list[str]] = {}
    for i in range(nlibs):
        flags, key, value = struct.unpack_from("<iII", data, 16 + i * 12)
        if want is not None and (flags & 0xFF != _FLAG_ELF_LIBC6 or flags & 0xFF00 != want):
            continue
        # Old-format offsets count from the end of the entry table.
        out.setdefault(_string(data, strings_at + key), []).append(_string(data, strings_at + value))
    return {k: tuple(v) for k, v in out.items()}


def _string(data: bytes, offset: int) -> str:
    if offset >= len(data):
        raise LdCacheError(f"string offset {offset} outside the file")
    stop = data.find(b"\0", offset)
    if stop < 0:
        raise LdCacheError(f"unterminated string at {offset}")
    return data[offset:stop].decode("utf-8", "surrogateescape")


def read_ld_cache(path: str = "/etc/ld.so.cache", machine: str | None = None) -> dict[str, tuple[str, ...]]:
    """Read and parse a cache file. Raises OSError or :class:`LdCacheError`."""
    with open(path, "rb") as f:
        data = f.read(_MAX_CACHE + 1)
    if len(data) > _MAX_CACHE:
        raise LdCacheError(f"larger than {_MAX_CACHE} bytes")
    return parse_ld_cache(data, machine)


def _multiarch() -> str | None:
    value = sysconfig.get_config_var("MULTIARCH")
    return value if isinstance(value, str) and value else None


def default_lib_dirs(multiarch: str | None = None) -> tuple[str, ...]:
    """The directories ld.so searches after everything else (trusted directories)."""
    triplet = multiarch if multiarch is not None else _multiarch()
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
        m = _TOOLKIT_RE.search(path)
        if m:
            note = f"CUDA {m.group(1)}.{m.group(2)} toolkit"
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
        machine = _platform.machine()
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
