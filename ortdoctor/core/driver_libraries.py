"""The NVIDIA driver's own libraries, by the names the loader asks for.

They come with the driver, never with CUDA, a pip wheel or conda, so the compatibility matrix does not list
them: this module is their one home.
"""

from __future__ import annotations

LIBCUDA = "libcuda.so.1"  # the CUDA driver API (Linux)
LIBNVML = "libnvidia-ml.so.1"  # NVML (Linux)
NVCUDA_DLL = "nvcuda.dll"  # the CUDA driver API (Windows, System32)
NVML_DLL = "nvml.dll"  # NVML (Windows)

#: Every name above; a library plan never resolves these (the driver's copy is the only right one).
DRIVER_LIBRARIES: frozenset[str] = frozenset({LIBCUDA, LIBNVML, NVCUDA_DLL, NVML_DLL})
