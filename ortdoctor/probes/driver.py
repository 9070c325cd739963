"""The NVIDIA driver, through NVML, plus the files that show whether one is installed.

NVML is asked through a small ctypes binding (:mod:`ortdoctor.probes.nvml`) of the library loaded by
absolute path; pynvml (nvidia-ml-py) only where that binding cannot be set up.

NVML answers without creating a CUDA context, so this is safe in the main process. Its error codes
tell apart "no driver installed" (the library is missing), "driver not loaded" (library present,
kernel module absent) and "driver/library mismatch" (upgraded without a reboot). No exception
escapes :func:`probe_driver`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from ortdoctor.core.driver_libraries import LIBCUDA, LIBNVML, NVCUDA_DLL, NVML_DLL
from ortdoctor.core.facts import Device, DriverError, DriverInfo
from ortdoctor.core.patterns import lazy
from ortdoctor.formats.ldcache import read_ld_cache
from ortdoctor.native import gate
from ortdoctor.probes.stdlib_answers import directory_entries, machine
from ortdoctor.probes.system import default_lib_dirs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    import ctypes

__all__ = ["cuda_version_text", "nvml_library_may_exist", "probe_driver"]

# NVML return codes (nvml.h); both bindings raise an NVMLError carrying them in `.value`.
_NVML_ERROR_KINDS = {
    12: DriverError.LIBRARY_NOT_FOUND,
    9: DriverError.DRIVER_NOT_LOADED,
    18: DriverError.LIB_RM_VERSION_MISMATCH,
    4: DriverError.NO_PERMISSION,
    15: DriverError.GPU_IS_LOST,
}
_ERROR_TEXT = {
    DriverError.LIBRARY_NOT_FOUND: "libnvidia-ml.so.1 not found: no NVIDIA driver is installed, "
    "or it was not passed into this container",
    DriverError.DRIVER_NOT_LOADED: "NVML: driver not loaded (the NVIDIA kernel module is not running)",
    DriverError.LIB_RM_VERSION_MISMATCH: "NVML: driver/library version mismatch (the driver was upgraded; "
    "reboot or reload the kernel module)",
    DriverError.NO_PERMISSION: "NVML: insufficient permissions to query the driver",
    DriverError.GPU_IS_LOST: "NVML: the GPU is lost (fell off the bus or hung)",
}
_COMPUTE_MODES = {0: "default", 1: "exclusive-thread", 2: "prohibited", 3: "exclusive-process"}
_KERNEL_MODULE_RE = lazy(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)*)")
_WSL_LIB = "/usr/lib/wsl/lib"


def cuda_version_text(value: int) -> str:
    """NVML's integer CUDA version: 13000 -> "13.0", 12080 -> "12.8"."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _mib(value: Any) -> int | None:
    return int(value) // (1024 * 1024) if isinstance(value, int) else None


def _classify(exc: BaseException) -> tuple[DriverError, str]:
    code = getattr(exc, "value", None)
    kind = _NVML_ERROR_KINDS.get(code, DriverError.OTHER) if isinstance(code, int) else DriverError.OTHER
    if kind is DriverError.OTHER:
        try:
            detail = str(exc)
        except Exception:  # a broken error string must not hide the error itself
            detail = type(exc).__name__
        return kind, f"NVML error {code}: {detail}" if isinstance(code, int) else f"NVML: {detail}"
    return kind, _ERROR_TEXT[kind]


def _device(nvml: Any, index: int) -> Device:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)

    def ask(fn_name: str, *args: Any) -> Any:
        try:
            return getattr(nvml, fn_name)(handle, *args)
        except Exception:  # one unsupported query (NOT_SUPPORTED on some boards) loses one field only
            return None

    name = ask("nvmlDeviceGetName")
    uuid = ask("nvmlDeviceGetUUID")
    cc = ask("nvmlDeviceGetCudaComputeCapability")
    mem = ask("nvmlDeviceGetMemoryInfo")
    mode = ask("nvmlDeviceGetComputeMode")
    return Device(
        index=index,
        name=_text(name) if name is not None else f"GPU {index}",
        uuid=_text(uuid) if uuid is not None else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if isinstance(cc, tuple) and len(cc) == 2 else None,
        memory_total_mib=_mib(getattr(mem, "total", None)),
        memory_free_mib=_mib(getattr(mem, "free", None)),
        compute_mode=_COMPUTE_MODES.get(mode, f"unknown({mode})") if mode is not None else None,
    )


_Answer = tuple[bool, str | None, str | None, tuple[Device, ...], DriverError | None, str | None]


def _query_nvml(nvml: Any) -> _Answer:
    """(initialised, driver version, CUDA version, devices, error kind, error text)."""
    try:
        nvml.nvmlInit()
    except Exception as exc:
        kind, text = _classify(exc)
        return False, None, None, (), kind, text
    try:
        version: str | None = None
        cuda: str | None = None
        try:
            version = _text(nvml.nvmlSystemGetDriverVersion())
        except Exception:
            version = None
        try:
            cuda = cuda_version_text(int(nvml.nvmlSystemGetCudaDriverVersion_v2()))
        except Exception:
            try:
                cuda = cuda_version_text(int(nvml.nvmlSystemGetCudaDriverVersion()))
            except Exception:
                cuda = None
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except Exception as exc:
            kind, text = _classify(exc)
            return True, version, cuda, (), kind, text
        devices: list[Device] = []
        for i in range(count):
            try:
                devices.append(_device(nvml, i))
            except Exception as exc:
                kind, text = _classify(exc)
                return True, version, cuda, tuple(devices), kind, f"device {i}: {text}"
        return True, version, cuda, tuple(devices), None, None
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def _libcuda_locations(
    os_name: str,
    environ: Mapping[str, str],
    ld_cache: Mapping[str, Sequence[str]] | None,
    fs_root: str,
    default_dirs: Sequence[str],
) -> tuple[str, ...]:
    found: list[str] = []

    def add(path: str) -> None:
        if path not in found and os.path.exists(path):
            found.append(path)

    if os_name == "windows":
        add(os.path.join(environ.get("WINDIR", "C:\\Windows"), "System32", NVCUDA_DLL))
        return tuple(found)
    for path in (ld_cache or {}).get(LIBCUDA, ()):
        add(os.path.join(fs_root, path.lstrip("/")) if fs_root != "/" else path)
    for entry in environ.get("LD_LIBRARY_PATH", "").split(":"):
        if entry and os.path.isabs(entry):
            add(os.path.join(entry, LIBCUDA))
    for d in (_WSL_LIB, *default_dirs):
        add(os.path.join(fs_root, d.lstrip("/"), LIBCUDA))
    return tuple(found)


def nvml_library_may_exist(
    os_name: str,
    ld_cache: Mapping[str, Sequence[str]] | None,
    default_dirs: Sequence[str],
    environ: Mapping[str, str] | None = None,
) -> bool:
    """Could ``dlopen("libnvidia-ml.so.1")`` (``nvml.dll`` on Windows) find a library here?

    Errs towards True: every place the dynamic loader looks (already mapped, ``LD_LIBRARY_PATH`` as the
    process started with it, the ld.so cache, the interpreter's RPATH/RUNPATH, the default directories,
    WSL's driver directory) counts, and anything unclear counts too. False means NVML's answer is
    known without loading anything: NVML_ERROR_LIBRARY_NOT_FOUND. This looks at the real machine, not at
    ``fs_root``: the loader does.
    """
    env = os.environ if environ is None else environ
    if os_name == "windows":
        return any(os.path.exists(p) for p in _nvml_dll_paths(env))
    if os_name != "linux":
        return True  # no fast answer for other systems: ask pynvml
    name = LIBNVML
    if ld_cache is None:
        try:
            ld_cache = read_ld_cache("/etc/ld.so.cache", machine())
        except Exception:
            return True  # an unreadable cache may list it
    if name in ld_cache:
        return True
    try:
        with open("/proc/self/maps", "rb") as f:
            if name.encode() in f.read():
                return True
    except OSError:
        pass
    dirs = [*env.get("LD_LIBRARY_PATH", "").split(":"), *_interpreter_search_dirs(), _WSL_LIB, *default_dirs]
    # An empty or relative LD_LIBRARY_PATH entry is searched relative to the current directory.
    return any(os.path.exists(os.path.join(d or ".", name)) for d in dirs)


def _nvml_dll_paths(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Where pynvml loads ``nvml.dll`` from, in its order: System32 (DCH drivers), then NVSMI."""
    return (os.path.join(environ.get("WINDIR", "C:/Windows"), "System32", NVML_DLL),
            os.path.join(environ.get("ProgramFiles", "C:/Program Files"), "NVIDIA Corporation", "NVSMI", NVML_DLL))


def _map_nvml_by_path(
    os_name: str,
    ld_cache: Mapping[str, Sequence[str]] | None,
    default_dirs: Sequence[str],
    environ: Mapping[str, str],
) -> tuple[ctypes.CDLL | None, tuple[DriverError, str] | None]:
    """Load ``libnvidia-ml.so.1`` (``nvml.dll`` on Windows) by absolute path: (library, None), or
    (None, the driver error to report instead of asking NVML); (None, None) on other systems.

    ``dlopen("libnvidia-ml.so.1")`` by name, as pynvml does, lets the dynamic loader search an empty or
    relative ``LD_LIBRARY_PATH`` entry, which means the current directory, and every other entry
    unjudged: a planted library there would run in this process. Only absolute places are searched:
    ``LD_LIBRARY_PATH``'s absolute entries, the ld.so cache, the interpreter's RPATH/RUNPATH, WSL's driver
    directory, the default directories, and each copy goes through the gate
    (:mod:`ortdoctor.native.gate`), which refuses one in a directory others can write. Once a library
    with that soname is mapped, the loader returns it for the name, so a pynvml asked after this gets the
    same one (pynvml is only asked once this has mapped a copy). On Windows, pynvml's two places, by
    absolute path.
    """
    if os_name not in ("linux", "windows"):
        return None, None
    if os_name == "windows":
        return _load_first([p for p in _nvml_dll_paths(environ) if os.path.isabs(p)])
    name = LIBNVML
    # Already in this process (from /proc/self/maps, never by asking the loader for the bare name): the
    # loader would hand that copy to anyone asking by name, so it is the one to bind, if the gate takes it.
    mapped = gate.mapped_copy(name)
    paths = [mapped] if mapped is not None else []
    paths += [os.path.join(d, name) for d in environ.get("LD_LIBRARY_PATH", "").split(":") if d and os.path.isabs(d)]
    paths += list((ld_cache or {}).get(name, ()))
    paths += [os.path.join(d, name) for d in (*_interpreter_search_dirs(), _WSL_LIB, *default_dirs) if os.path.isabs(d)]
    return _load_first(paths, "; a copy reachable only through the current directory (an empty or relative "
                       "LD_LIBRARY_PATH entry) is never loaded")


def _load_first(
    paths: Sequence[str], not_found_note: str = "",
) -> tuple[ctypes.CDLL | None, tuple[DriverError, str] | None]:
    """Load, through the gate, the first of ``paths`` that is a file it accepts; the first that fails to
    load is the error. A copy the gate refuses (a directory others can write, the current directory, a
    file that is not a regular one) is passed over, and named if nothing else is found."""
    refused: list[str] = []
    judge = gate.Judge()
    for path in dict.fromkeys(paths):
        if not os.path.isfile(path):
            continue
        try:
            return gate.load(path, judge=judge).handle, None
        except gate.Refused as exc:
            refused.append(f"{path} ({exc})")
        except gate.LoadFailed as exc:
            return None, (DriverError.OTHER, f"{path} could not be loaded: {exc}")
    note = not_found_note + ("; refused, never loaded: " + "; ".join(refused) if refused else "")
    return None, (DriverError.LIBRARY_NOT_FOUND, _ERROR_TEXT[DriverError.LIBRARY_NOT_FOUND] + note)


def _open_nvml(
    os_name: str,
    ld_cache: Mapping[str, Sequence[str]] | None,
    default_dirs: Sequence[str],
    environ: Mapping[str, str],
) -> tuple[Any, tuple[DriverError, str] | None]:
    """(an NVML module-like object, None), or (None, the driver error to report).

    The library loaded by :func:`_map_nvml_by_path`, bound with ctypes; pynvml only where that binding
    cannot be set up (a symbol missing, or a system other than Linux and Windows): see
    :mod:`ortdoctor.probes.nvml` for why.
    """
    lib, refused = _map_nvml_by_path(os_name, ld_cache, default_dirs, environ)
    if refused is not None:
        return None, refused
    if lib is not None:
        from ortdoctor.probes.nvml import NvmlBindingError, bind

        try:
            return bind(lib), None
        except NvmlBindingError:
            pass  # pynvml looks each function up when called: it answers what this library has
    try:
        import pynvml
    except Exception as exc:  # nvidia-ml-py missing or broken: say so, do not crash
        return None, (DriverError.OTHER, f"nvidia-ml-py is not importable: {exc}")
    return pynvml, None


def _interpreter_search_dirs() -> list[str]:
    """The interpreter's RPATH/RUNPATH entries (conda's python has ``$ORIGIN/../lib``), expanded."""
    from ortdoctor.formats.elf import ElfError, read_elf

    try:
        info = read_elf(os.path.realpath(sys.executable))
    except (ElfError, OSError):
        return []
    origin = os.path.dirname(os.path.realpath(sys.executable))
    return [d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin) for d in (*info.rpath, *info.runpath)]


def _kernel_module_version(fs_root: str) -> str | None:
    try:
        with open(os.path.join(fs_root, "proc/driver/nvidia/version"), "rb") as f:
            text = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    m = _KERNEL_MODULE_RE.search(text)
    return m.group(1) if m else None


def probe_driver(
    nvml: Any = None,
    environ: Mapping[str, str] | None = None,
    *,
    ld_cache: Mapping[str, Sequence[str]] | None = None,
    fs_root: str = "/",
    default_dirs: Sequence[str] | None = None,
    os_name: str | None = None,
) -> DriverInfo:
    """Ask NVML about the driver and the devices; look for libcuda and the device nodes.

    ``nvml`` is the pynvml module or any object with its functions; when None, the library is loaded
    by absolute path and bound with :mod:`ortdoctor.probes.nvml` (pynvml where that cannot be set up).
    ``ld_cache`` is the parsed ld.so cache (see :mod:`ortdoctor.probes.system`); when None it is read.
    """
    env = os.environ if environ is None else environ
    if os_name is None:
        os_name = "windows" if sys.platform == "win32" else ("linux" if sys.platform.startswith("linux") else sys.platform)

    version = cuda = error = None
    initialised = False
    kind: DriverError | None = None
    devices: tuple[Device, ...] = ()
    if ld_cache is None and os_name == "linux":
        try:
            ld_cache = read_ld_cache(os.path.join(fs_root, "etc/ld.so.cache"), machine())
        except Exception:
            ld_cache = {}
    dirs = default_lib_dirs() if default_dirs is None else default_dirs
    # The loader reads the real machine's cache, whatever root the file probes are pointed at.
    real_cache = ld_cache if fs_root in ("/", "") else None
    if nvml is None and not nvml_library_may_exist(os_name, real_cache, dirs):
        # What NVML would answer (no dlopen can find the library), without loading anything.
        kind, error = DriverError.LIBRARY_NOT_FOUND, _ERROR_TEXT[DriverError.LIBRARY_NOT_FOUND]
    elif nvml is None:
        nvml, refused = _open_nvml(os_name, real_cache, dirs, env)
        if refused is not None:
            kind, error = refused
    if nvml is not None:
        try:
            initialised, version, cuda, devices, kind, error = _query_nvml(nvml)
        except Exception as exc:  # belt and braces: nothing escapes a probe
            kind, error = DriverError.OTHER, f"NVML query failed: {exc!r}"

    libcuda = _libcuda_locations(os_name, env, ld_cache, fs_root, dirs)
    dev_nodes: tuple[str, ...] = ()
    if os_name == "linux":
        nodes = directory_entries(os.path.join(fs_root, "dev"), "nvidia")
        dxg = os.path.join(fs_root, "dev", "dxg")
        if os.path.exists(dxg):
            nodes.append(dxg)
        dev_nodes = tuple(nodes)

    return DriverInfo(
        available=initialised,
        version=version,
        cuda_version=cuda,
        error=error,
        error_kind=kind,
        devices=devices,
        cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
        nvidia_visible_devices=env.get("NVIDIA_VISIBLE_DEVICES"),
        libcuda=libcuda,
        dev_nodes=dev_nodes,
        kernel_module_version=_kernel_module_version(fs_root) if os_name == "linux" else None,
    )
