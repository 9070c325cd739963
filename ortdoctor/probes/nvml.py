"""A ctypes binding of the thirteen NVML functions the driver probe calls, shaped like pynvml.

Importing pynvml (nvidia-ml-py 13.615.71) defines ~1,600 constants and ~210 ctypes structures: on a
GPU host that import alone was most of the driver probe's time, for a handful of calls. :func:`bind`
wraps an already loaded ``libnvidia-ml`` (:mod:`ortdoctor.probes.driver` loads it by absolute path
from trusted places only, never through the current directory) in an object whose methods have
pynvml's names, arguments and return types, so :func:`ortdoctor.probes.driver.probe_driver` takes
either:

* ``nvmlInit()``, ``nvmlInitWithFlags(flags)`` -> None:
  ``nvmlReturn_t nvmlInitWithFlags(unsigned int flags)`` (``nvmlInit`` passes 0)
* ``nvmlShutdown()`` -> None: ``nvmlReturn_t nvmlShutdown(void)``
* ``nvmlErrorString(code)`` -> str: ``const char* nvmlErrorString(nvmlReturn_t result)``
* ``nvmlSystemGetDriverVersion()`` -> str: ``nvmlSystemGetDriverVersion(char* version, unsigned int length)``
* ``nvmlSystemGetCudaDriverVersion()``, ``nvmlSystemGetCudaDriverVersion_v2()`` -> int (13000 is 13.0):
  ``nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion)`` and ``..._v2(int* cudaDriverVersion)``
* ``nvmlDeviceGetCount()`` -> int: ``nvmlDeviceGetCount_v2(unsigned int* deviceCount)``
* ``nvmlDeviceGetHandleByIndex(index)`` -> handle:
  ``nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device)``
* ``nvmlDeviceGetName(handle)``, ``nvmlDeviceGetUUID(handle)`` -> str:
  ``nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length)``, likewise ``nvmlDeviceGetUUID``
* ``nvmlDeviceGetCudaComputeCapability(handle)`` -> (major, minor):
  ``nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor)``
* ``nvmlDeviceGetMemoryInfo(handle)`` -> an object with ``.total``, ``.free``, ``.used`` (bytes):
  ``nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory)``
* ``nvmlDeviceGetComputeMode(handle)`` -> int (0 default .. 3 exclusive-process):
  ``nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode)``

Every function returns ``nvmlReturn_t`` (an enum, int-sized) except nvmlErrorString. Sources: the NVML
API reference, https://docs.nvidia.com/deploy/nvml-api/ ("Initialization and Cleanup": nvmlInitWithFlags
"is completely similar to nvmlInit_v2" other than its flags; "System Queries"; "Device Queries", whose
handles come from nvmlDeviceGetHandleByIndex_v2), and NVIDIA's own binding (nvidia-ml-py 13.615.71's
pynvml.py), which calls the same symbols: ``nvmlInit()`` is ``nvmlInitWithFlags(0)``, ``nvmlDeviceGetCount``
and ``nvmlDeviceGetHandleByIndex`` call the ``_v2`` symbols. Sizes from nvml.h:
``nvmlDevice_t`` is ``struct nvmlDevice_st*``; ``nvmlMemory_t`` (v1) is ``{unsigned long long total, free,
used}`` in bytes; buffers are NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE (80), NVML_DEVICE_NAME_V2_BUFFER_SIZE
(96) and NVML_DEVICE_UUID_V2_BUFFER_SIZE (96).

As in pynvml: a return code other than NVML_SUCCESS raises :class:`NVMLError` with the code in ``.value``;
strings come back as ``str`` (nvidia-ml-py decodes them on Python 3); ``str(error)`` is pynvml's text for
the codes it knows and the library's ``nvmlErrorString`` for the others, so reports read the same
whichever binding answered. Two differences: text that is not UTF-8 is decoded with replacement
characters, where pynvml raises UnicodeDecodeError; and before the first ``nvmlInit`` pynvml has not
loaded the library and raises NVML_ERROR_UNINITIALIZED from every function, where this binding's
library is loaded already, so ``nvmlErrorString`` answers and the queries get the library's own answer
(UNINITIALIZED from NVML itself).

Why pynvml stays as a fallback: :func:`bind` resolves every symbol above when it is called and raises
:class:`NvmlBindingError` when one is missing (a driver older than one of the functions, or another
library under that name). pynvml looks each function up only when it is called, so with such a library
it still answers every query the library has (the probe falls back from
``nvmlSystemGetCudaDriverVersion_v2`` to the unversioned query, for one): the probe imports it only then,
and on systems other than Linux and Windows, where this binding loads no library.
"""

from __future__ import annotations

import ctypes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NVMLError", "NvmlBindingError", "bind"]

NVML_SUCCESS = 0
NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80
NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96
NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96

# pynvml's texts for the return codes it knows (NVMLError._errcode_to_string in nvidia-ml-py), keyed by the
# nvmlReturn_t values of nvml.h; other codes read as the library's nvmlErrorString, as in pynvml.
_PYNVML_TEXTS = {
    1: "Uninitialized",
    2: "Invalid Argument",
    3: "Not Supported",
    4: "Insufficient Permissions",
    5: "Already Initialized",
    6: "Not Found",
    7: "Insufficient Size",
    8: "Insufficient External Power",
    9: "Driver Not Loaded",
    10: "Timeout",
    11: "Interrupt Request Issue",
    12: "NVML Shared Library Not Found",
    13: "Function Not Found",
    14: "Corrupted infoROM",
    15: "GPU is lost",
    16: "GPU requires restart",
    17: "The operating system has blocked the request.",
    18: "RM has detected an NVML/RM version mismatch.",
    20: "Insufficient Memory",
    999: "Unknown Error",
}


class NVMLError(Exception):
    """An NVML call returned ``value`` (an ``nvmlReturn_t`` other than NVML_SUCCESS), as pynvml's NVMLError."""

    def __init__(self, value: int, text: str) -> None:
        super().__init__(value)
        self.value = value
        self.text = text

    def __str__(self) -> str:
        return self.text


class NvmlBindingError(Exception):
    """The loaded library lacks a function this binding calls."""


class c_nvmlMemory_t(ctypes.Structure):  # nvml.h's and pynvml's name
    """nvmlMemory_t (v1): bytes of device memory."""

    _fields_ = (("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong))


_c_int_p = ctypes.POINTER(ctypes.c_int)
_c_uint_p = ctypes.POINTER(ctypes.c_uint)
_HANDLE = ctypes.c_void_p  # nvmlDevice_t: an opaque struct nvmlDevice_st*
_TEXT = (_HANDLE, ctypes.c_char_p, ctypes.c_uint)

# symbol -> argument types; every one returns nvmlReturn_t except nvmlErrorString
_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "nvmlInitWithFlags": (ctypes.c_uint,),
    "nvmlShutdown": (),
    "nvmlErrorString": (ctypes.c_int,),
    "nvmlSystemGetDriverVersion": (ctypes.c_char_p, ctypes.c_uint),
    "nvmlSystemGetCudaDriverVersion": (_c_int_p,),
    "nvmlSystemGetCudaDriverVersion_v2": (_c_int_p,),
    "nvmlDeviceGetCount_v2": (_c_uint_p,),
    "nvmlDeviceGetHandleByIndex_v2": (ctypes.c_uint, ctypes.POINTER(_HANDLE)),
    "nvmlDeviceGetName": _TEXT,
    "nvmlDeviceGetUUID": _TEXT,
    "nvmlDeviceGetCudaComputeCapability": (_HANDLE, _c_int_p, _c_int_p),
    "nvmlDeviceGetMemoryInfo": (_HANDLE, ctypes.POINTER(c_nvmlMemory_t)),
    "nvmlDeviceGetComputeMode": (_HANDLE, _c_uint_p),  # nvmlComputeMode_t; pynvml reads it as c_uint
}


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class CtypesNvml:
    """The NVML functions the driver probe calls, with pynvml's names and answers (see the module doc)."""

    NVMLError = NVMLError

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib  # keeps the library mapped while the functions are in use
        self._fn: dict[str, Any] = {}
        for name, argtypes in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise NvmlBindingError(f"{name} is not exported by the NVML library") from None
            fn.argtypes = argtypes
            fn.restype = ctypes.c_char_p if name == "nvmlErrorString" else ctypes.c_int
            self._fn[name] = fn

    def _call(self, name: str, *args: Any) -> None:
        rc = int(self._fn[name](*args))
        if rc != NVML_SUCCESS:
            raise NVMLError(rc, self._error_text(rc))

    def _error_text(self, rc: int) -> str:
        if rc in _PYNVML_TEXTS:
            return _PYNVML_TEXTS[rc]
        try:
            return self.nvmlErrorString(rc)
        except Exception:  # an unreadable text must not hide the code
            return f"NVML Error with code {rc}"

    def _text(self, name: str, size: int, *args: Any) -> str:
        buf = ctypes.create_string_buffer(size)
        self._call(name, *args, buf, size)
        return _decode(buf.value)

    # Initialization and cleanup
    def nvmlInitWithFlags(self, flags: int) -> None:
        self._call("nvmlInitWithFlags", flags)

    def nvmlInit(self) -> None:
        self._call("nvmlInitWithFlags", 0)

    def nvmlShutdown(self) -> None:
        self._call("nvmlShutdown")

    def nvmlErrorString(self, result: int) -> str:
        raw = self._fn["nvmlErrorString"](result)
        if raw is None:
            raise NVMLError(result, f"NVML Error with code {result}")
        return _decode(raw)

    # System queries
    def nvmlSystemGetDriverVersion(self) -> str:
        return self._text("nvmlSystemGetDriverVersion", NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        value = ctypes.c_int()
        self._call("nvmlSystemGetCudaDriverVersion", ctypes.byref(value))
        return value.value

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        value = ctypes.c_int()
        self._call("nvmlSystemGetCudaDriverVersion_v2", ctypes.byref(value))
        return value.value

    # Device queries
    def nvmlDeviceGetCount(self) -> int:
        count = ctypes.c_uint()
        self._call("nvmlDeviceGetCount_v2", ctypes.byref(count))
        return count.value

    def nvmlDeviceGetHandleByIndex(self, index: int) -> ctypes.c_void_p:
        handle = _HANDLE()
        self._call("nvmlDeviceGetHandleByIndex_v2", index, ctypes.byref(handle))
        return handle

    def nvmlDeviceGetName(self, handle: ctypes.c_void_p) -> str:
        return self._text("nvmlDeviceGetName", NVML_DEVICE_NAME_V2_BUFFER_SIZE, handle)

    def nvmlDeviceGetUUID(self, handle: ctypes.c_void_p) -> str:
        return self._text("nvmlDeviceGetUUID", NVML_DEVICE_UUID_V2_BUFFER_SIZE, handle)

    def nvmlDeviceGetCudaComputeCapability(self, handle: ctypes.c_void_p) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._call("nvmlDeviceGetCudaComputeCapability", handle, ctypes.byref(major), ctypes.byref(minor))
        return major.value, minor.value

    def nvmlDeviceGetMemoryInfo(self, handle: ctypes.c_void_p) -> c_nvmlMemory_t:
        memory = c_nvmlMemory_t()
        self._call("nvmlDeviceGetMemoryInfo", handle, ctypes.byref(memory))
        return memory

    def nvmlDeviceGetComputeMode(self, handle: ctypes.c_void_p) -> int:
        mode = ctypes.c_uint()
        self._call("nvmlDeviceGetComputeMode", handle, ctypes.byref(mode))
        return mode.value


def bind(lib: ctypes.CDLL) -> CtypesNvml:
    """The binding over ``lib`` (a loaded libnvidia-ml / nvml.dll); NvmlBindingError if a symbol is missing."""
    return CtypesNvml(lib)
