"""Load shared libraries by absolute path and prove which file ended up mapped.

* :func:`already_loaded` says whether a soname is already in the process (a later ``dlopen`` of that
  soname returns that copy, whatever the search path says) and where it came from, from
  ``/proc/self/maps``: asking the loader (``RTLD_NOLOAD`` with a bare soname) would make it search and
  open files in directories ortdoctor refuses.
* :func:`load` loads one absolute path through the gate (:mod:`ortdoctor.native.gate`: judged, opened,
  checked, ``dlopen``'ed with ``RTLD_NOW | RTLD_LOCAL`` unless asked for ``RTLD_GLOBAL``, mapping proved):
  a library loaded by path this way still satisfies a later ``dlopen("<soname>")`` and ``DT_NEEDED``.
* :func:`mapped_file` finds the file in ``/proc/self/maps`` by inode and realpath, because maps shows the
  real file (``libcudnn.so.9.19.0``), not the name that was asked for.
* :func:`library_version` calls the library's own version function through ctypes; none of them
  needs a GPU or a CUDA context.

The Windows parts (DLL directories, the MSVC runtime check) are written against the documented
behaviour of ``os.add_dll_directory`` and ``LoadLibraryEx``; only their pure parts are tested, and they
have not been run on Windows.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ortdoctor.formats.procmaps import MappedObject, mapped_objects, mapped_paths
from ortdoctor.native import gate

__all__ = [
    "MSVC_RUNTIME_DLLS",
    "LoadError",
    "Loaded",
    "MappedObject",
    "already_loaded",
    "decode_version",
    "library_version",
    "load",
    "mapped_file",
    "mapped_objects",
    "mapped_paths",
    "missing_msvc_runtime",
    "prove",
]

#: The Visual C++ runtime onnxruntime and the CUDA DLLs link against (Windows).
MSVC_RUNTIME_DLLS = ("vcruntime140.dll", "msvcp140.dll", "vcruntime140_1.dll")


#: The gate's refusal or the loader's: ``str()`` says why (:class:`ortdoctor.native.gate.GateError`).
LoadError = gate.GateError


@dataclass
class Loaded:
    path: str  # the path that was loaded (absolute)
    handle: ctypes.CDLL
    # the file the gate checked as /proc/self/maps shows it after the load; None when no mapping of it
    # appeared (another copy was handed back, or the file changed) or maps cannot be read
    mapped: MappedObject | None
    accepted_unsafe: tuple[str, ...] = ()  # what only --allow-unsafe-dirs let through
    # the files mapped right after this load, from the same read of /proc/self/maps as the proof: the
    # answer to "already loaded?" until the next load (None when maps cannot be read)
    mapped_now: list[str] | None = None
    gate_record: gate.Mapped | None = None  # what the gate returned, for the proof


# --------------------------------------------------------------------------------------------------
# Linux: /proc/self/maps
# --------------------------------------------------------------------------------------------------
def already_loaded(soname: str, mapped: list[str] | None = None) -> str | None:
    """The realpath of the copy of ``soname`` already in this process, or None (from ``/proc/self/maps``,
    or from ``mapped``: :attr:`Loaded.mapped_now` of the last load, when nothing was loaded since)."""
    if sys.platform == "win32":
        return _windows_loaded(soname)
    return gate.mapped_copy(soname, mapped)


def mapped_file(path: str, maps: Sequence[MappedObject] | None = None) -> MappedObject | None:
    """The maps entry of the file at ``path`` (same inode and same realpath), or None."""
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return None
    if maps is not None:
        return next((m for m in maps if m.inode == st.st_ino and m.path == real), None)
    # Scan the maps text for the inode first: realpath only on the few lines that match.
    try:
        with open("/proc/self/maps", "rb") as f:
            text = f.read(64 * 1024 * 1024).decode("utf-8", "surrogateescape")
    except OSError:
        return None
    needle = f" {st.st_ino} "
    for line in text.splitlines():
        if needle not in line:
            continue
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[4] == str(st.st_ino) and os.path.realpath(parts[5]) == real:
            return MappedObject(real, st.st_ino, parts[3])
    return None


def load(path: str, *, global_: bool = False, allow_unsafe: gate.Allowance = False, named: Iterable[str] = (),
         judge: gate.Judge | None = None, prove_now: bool = True) -> Loaded:
    """Load an absolute path through the gate; the handle with the maps entry of the file it checked.

    ``prove_now=False``: the proof waits for :func:`prove` (after the library's version function, so the
    one read of the maps also sees what that call mapped).

    Raises:
        LoadError: the gate refused the file (:class:`ortdoctor.native.gate.Refused`: nothing of it ran)
            or the loader did (missing dependency, wrong ELF class...).
    """
    got = gate.load(path, global_=global_, allow_unsafe=allow_unsafe, named=named, judge=judge, prove_now=False)
    loaded = Loaded(path, got.handle, None, got.accepted_unsafe, gate_record=got)
    if prove_now:
        prove(loaded)
    return loaded


def prove(loaded: Loaded) -> None:
    """The gate's proof for a :func:`load` made with ``prove_now=False``: sets :attr:`Loaded.mapped` and
    :attr:`Loaded.mapped_now` from one read of ``/proc/self/maps``."""
    got = loaded.gate_record
    if sys.platform == "win32" or got is None:
        return
    text = gate.prove((got,))
    if got.mapped_path is not None:
        loaded.mapped = MappedObject(got.mapped_path, got.inode, got.device)  # the kernel's path: resolved
    loaded.mapped_now = None if text is None else gate.mapped_files(text)


# --------------------------------------------------------------------------------------------------
# Version functions (peers.md section 3.3: signatures and encodings)
# --------------------------------------------------------------------------------------------------
def decode_version(function: str, value: int | tuple[int, int]) -> str:
    """Turn a version function's raw answer into ``major.minor[.patch]``."""
    if isinstance(value, tuple):  # nvrtcVersion, nvJitLinkVersion
        return f"{value[0]}.{value[1]}"
    v = int(value)
    if function in ("cudaRuntimeGetVersion", "cudaDriverGetVersion", "cuDriverGetVersion"):
        return f"{v // 1000}.{(v % 1000) // 10}"  # 13000 -> 13.0
    if function == "cudnnGetVersion":
        if v >= 90000:  # cuDNN 9: 10000*major + 100*minor + patch
            return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}"
        return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"  # cuDNN <= 8: 1000*major + 100*minor
    if function in ("getInferLibVersion", "getNvOnnxParserVersion"):
        if v >= 10000:  # TensorRT >= 10: 10000*major + 100*minor + patch (NvInferRuntimeBase.h)
            return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}"
        return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"  # TensorRT 8: 1000*major + 100*minor + patch
    if function in ("cublasLtGetVersion", "cublasGetVersion_v2", "cublasGetVersion"):
        if v >= 100000:  # cuBLAS >= 12: 10000*major + 100*minor + patch
            return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}"
        return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"  # cuBLAS 11
    # cufftGetVersion, curandGetVersion, cusolverGetVersion: 1000*major + 100*minor + patch
    return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"


def library_version(handle: ctypes.CDLL, function: str | None) -> str | None:
    """Call the library's own version function; None when it has none or the call fails."""
    if not function:
        return None
    try:
        fn = getattr(handle, function)
    except AttributeError:
        return None
    try:
        if function in ("cudnnGetVersion", "cublasLtGetVersion"):
            fn.restype, fn.argtypes = ctypes.c_size_t, ()
            return decode_version(function, fn())
        if function in ("getInferLibVersion", "getNvOnnxParserVersion"):  # int32 f(void)
            fn.restype, fn.argtypes = ctypes.c_int32, ()
            tv = int(fn())
            return decode_version(function, tv) if tv > 0 else None
        if function in ("nvrtcVersion", "nvJitLinkVersion"):
            a, b = ctypes.c_int(0), ctypes.c_int(0)
            fn.restype = ctypes.c_int
            if fn(ctypes.byref(a), ctypes.byref(b)) != 0:
                return None
            return decode_version(function, (a.value, b.value))
        v = ctypes.c_int(0)
        fn.restype = ctypes.c_int
        # cublasGetVersion_v2 takes a handle first; NULL is allowed for the version query
        rc = fn(None, ctypes.byref(v)) if function == "cublasGetVersion_v2" else fn(ctypes.byref(v))
        if rc != 0 or v.value <= 0:
            return None
        return decode_version(function, v.value)
    except (OSError, ValueError, ctypes.ArgumentError):
        return None


# --------------------------------------------------------------------------------------------------
# Windows (pure helpers tested everywhere; the calls themselves not run on Windows yet)
# --------------------------------------------------------------------------------------------------
def missing_msvc_runtime(present: Iterable[str]) -> list[str]:
    """Which of the MSVC runtime DLLs are absent from ``present`` (file names, any case)."""
    have = {p.lower() for p in present}
    return [d for d in MSVC_RUNTIME_DLLS if d not in have]


def check_msvc_runtime() -> list[str]:
    """Windows: the MSVC runtime DLLs that cannot be loaded ([] elsewhere: nothing to check)."""
    if sys.platform != "win32":
        return []
    return [dll for dll in MSVC_RUNTIME_DLLS if not gate.windows_system_dll_loads(dll)]


_dll_dir_handles: list[object] = []


def add_dll_directories(dirs: Iterable[str]) -> list[str]:
    """Windows: make ``dirs`` searchable for the dependencies of DLLs loaded later; returns those added.

    The handles are kept for the life of the process: closing one would remove the directory again.
    """
    added: list[str] = []
    if sys.platform != "win32":
        return added
    for d in dirs:
        try:
            _dll_dir_handles.append(os.add_dll_directory(d))
            added.append(d)
        except OSError:
            continue
    return added


def _windows_loaded(dll: str) -> str | None:
    kernel32 = gate.windows_kernel32()
    if kernel32 is None:
        return None
    try:
        kernel32.GetModuleHandleW.restype = ctypes.c_void_p
        h = kernel32.GetModuleHandleW(dll)
        if not h:
            return None
        buf = ctypes.create_unicode_buffer(32768)
        n = kernel32.GetModuleFileNameW(ctypes.c_void_p(h), buf, 32768)
        return buf.value[:n] if n else dll
    except (OSError, AttributeError):
        return None
