"""Small onnxruntime-gpu wheels of a release, built here: a gcc-compiled CUDA provider with real DT_NEEDED
entries and a real fatbin (the committed nvcc-built fixtures' containers in its ``.nv_fatbin`` section), a
pybind module, a TensorRT provider, METADATA and the build-info file; Windows CUDA and TensorRT provider DLL
images with import tables (the CUDA one with its fatbin) and a Linux aarch64 provider with its fatbin; and
the CPU ``onnxruntime`` wheels' names. scripts/add_release.py reads them offline (``--wheels DIR``) exactly
as it reads PyPI's."""

from __future__ import annotations

import zipfile
from pathlib import Path

from tests.support.fatbins import fatbin_containers, library, make_pe
from tests.support.sharedlibs import build_so

#: The Python versions the built release has wheels for (free-threaded ones too, which the row leaves out).
PYTHONS = ("cp311-cp311", "cp312-cp312", "cp313-cp313", "cp313-cp313t", "cp314-cp314")
CUDA_NEEDED = ("libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", "libcudart.so.13")
TENSORRT_NEEDED = ("libcublas.so.13", "libnvinfer.so.10", "libnvonnxparser.so.10", "libcudart.so.13",
                   "libcudnn.so.9")
#: The win_amd64 providers' import tables: CUDA/cuDNN/TensorRT DLLs (the row's windows_needed and
#: windows_tensorrt_needed) among the DLLs of Windows and onnxruntime that the row leaves out.
WINDOWS_NEEDED = ("cublasLt64_13.dll", "cublas64_13.dll", "cudart64_13.dll")
WINDOWS_TENSORRT_NEEDED = ("cublas64_13.dll", "nvinfer_10.dll", "nvonnxparser_10.dll", "cudnn64_9.dll")
_WINDOWS_OWN = ("onnxruntime_providers_shared.dll", "KERNEL32.dll", "VCRUNTIME140.dll")
#: The kernel targets of each platform's provider: the fixtures' fatbins.
LINUX_FATBIN = "sass_ptx_zstd"  # sm_75, sm_86, compute_86 (ISA 9.0)
WINDOWS_FATBIN = "arch_specific"  # sm_90a, sm_120a, compute_90a (ISA 9.0)
AARCH64_FATBIN = "sass_only"  # sm_75, sm_80


def _metadata(version: str) -> str:
    return (f"Metadata-Version: 2.1\nName: onnxruntime-gpu\nVersion: {version}\nRequires-Python: >=3.11\n"
            "Requires-Dist: flatbuffers\nRequires-Dist: numpy>=1.21.6\nRequires-Dist: packaging\n"
            "Requires-Dist: protobuf>=4.25.8\n"
            'Requires-Dist: sympy; extra == "symbolic"\n'
            'Requires-Dist: nvidia-cuda-runtime~=13.0; extra == "cuda"\n'
            'Requires-Dist: nvidia-curand~=10.0; extra == "cuda"\n'
            'Requires-Dist: nvidia-cudnn-cu13~=9.0; extra == "cudnn"\n\nthe description\n')


def _fatbin_source(name: str) -> str:
    """C code that puts a fixture's fatbin containers into ``.nv_fatbin``, as nvcc-linked libraries carry them."""
    body = b"".join(fatbin_containers(library(name).read_bytes()))
    return ('__attribute__((section(".nv_fatbin"), used, aligned(8))) const unsigned char fatbin[] = {'
            + ",".join(str(b) for b in body) + "};\nint provider_marker(void) { return 42; }\n")


def _libraries(build: Path) -> dict[str, Path]:
    """The gcc-built libraries every wheel of every version shares (built once per directory)."""
    needed = {n: build_so(build / "deps", n) for n in sorted({*CUDA_NEEDED, *TENSORRT_NEEDED})}
    return {
        "provider": build_so(build, "libonnxruntime_providers_cuda.so", source=_fatbin_source(LINUX_FATBIN),
                             needed=tuple(needed[n] for n in CUDA_NEEDED)),
        "aarch64": build_so(build / "aarch64", "libonnxruntime_providers_cuda.so",
                            source=_fatbin_source(AARCH64_FATBIN)),
        "tensorrt": build_so(build, "libonnxruntime_providers_tensorrt.so",
                             needed=tuple(needed[n] for n in TENSORRT_NEEDED)),
        "pybind": build_so(build, "onnxruntime_pybind11_state.so"),
    }


def build_release(out: Path, version: str, *, cuda_version: str = "13.0", build: Path | None = None) -> Path:
    """Write ``version``'s wheels into ``out`` (created): every Python of PYTHONS for Linux x86_64, one
    cp311 wheel for win_amd64 and linux_aarch64, and empty-bodied CPU ``onnxruntime`` wheels."""
    out.mkdir(parents=True, exist_ok=True)
    libs = _libraries(build or out.parent / f".build-{out.name}")
    info = f"package_name = 'onnxruntime-gpu'\n__version__ = '{version}'\ncuda_version = '{cuda_version}'\n"
    dist = f"onnxruntime_gpu-{version}.dist-info"
    for py in PYTHONS:
        with zipfile.ZipFile(out / f"onnxruntime_gpu-{version}-{py}-manylinux_2_28_x86_64.whl", "w") as zf:
            zf.writestr("onnxruntime/capi/build_and_package_info.py", info)
            zf.writestr(f"{dist}/METADATA", _metadata(version))
            zf.write(libs["provider"], "onnxruntime/capi/libonnxruntime_providers_cuda.so")
            zf.write(libs["tensorrt"], "onnxruntime/capi/libonnxruntime_providers_tensorrt.so")
            tag = py.split("-")[1]
            zf.write(libs["pybind"], f"onnxruntime/capi/onnxruntime_pybind11_state.{tag}-x86_64-linux-gnu.so")
    dll = make_pe([(b".text", b"\xc3" * 64),
                   (b".nv_fatb", b"".join(fatbin_containers(library(WINDOWS_FATBIN).read_bytes())))],
                  imports=(*WINDOWS_NEEDED[:2], _WINDOWS_OWN[0], WINDOWS_NEEDED[2], *_WINDOWS_OWN[1:]))
    tensorrt_dll = make_pe([(b".text", b"\xc3" * 64)], imports=(*WINDOWS_TENSORRT_NEEDED, *_WINDOWS_OWN))
    with zipfile.ZipFile(out / f"onnxruntime_gpu-{version}-cp311-cp311-win_amd64.whl", "w") as zf:
        zf.writestr(f"{dist}/METADATA", _metadata(version))
        zf.writestr("onnxruntime/capi/onnxruntime_providers_cuda.dll", dll)
        zf.writestr("onnxruntime/capi/onnxruntime_providers_tensorrt.dll", tensorrt_dll)
    with zipfile.ZipFile(out / f"onnxruntime_gpu-{version}-cp311-cp311-manylinux_2_34_aarch64.whl", "w") as zf:
        zf.writestr(f"{dist}/METADATA", _metadata(version))
        zf.write(libs["aarch64"], "onnxruntime/capi/libonnxruntime_providers_cuda.so")
    for name in (f"onnxruntime-{version}-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
                 f"onnxruntime-{version}-cp312-cp312-win_amd64.whl",
                 f"onnxruntime-{version}-cp312-cp312-macosx_13_0_arm64.whl"):
        with zipfile.ZipFile(out / name, "w") as zf:
            zf.writestr(f"onnxruntime-{version}.dist-info/METADATA", "Metadata-Version: 2.1\n")
    return out
