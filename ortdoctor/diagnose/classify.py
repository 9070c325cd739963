"""ONNX Runtime / CUDA error text -> the failure it stands for, with what happened, why, and the fix.

Matching is by the words of the message, never by ORT's source line numbers (``provider_bridge_ort.cc:1778``
changes with every release). Each :class:`Match` names a finding id of
:mod:`ortdoctor.core.catalog` (one id, ``cuda-ep-fell-back-to-cpu``, is documented here until the
catalog has it) and quotes the line it matched, so a person can see why ortdoctor said so.

The classifier is pure and total: any text in, a list out, no exception (fuzzed in the tests). It only
looks at each line's first 16 KiB and at most 20,000 lines, so a huge log cannot make it slow.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ortdoctor.core.catalog import CATALOG as _CATALOG
from ortdoctor.core.facts import Match
from ortdoctor.formats.ortlog import strip_ansi

_MAX_LINES = 20_000
_MAX_LINE = 16 * 1024
_MAX_EVIDENCE = 600

#: Findings that only say "the CUDA EP was not used"; a more specific cause usually sits beside them.
CONSEQUENCE_IDS = frozenset({"cuda-ep-fell-back-to-cpu"})


#: Ids whose (title, cause, fix) the classifier quotes in its matches and `explain` falls back to. The text
#: is taken from the catalog, the single source of every finding's documentation.
LOCAL_DOCS: dict[str, tuple[str, str, str]] = {
    fid: (_CATALOG[fid].title, _CATALOG[fid].cause, _CATALOG[fid].fix) for fid in ("cuda-ep-fell-back-to-cpu",)
}


@dataclass(frozen=True)
class Context:
    """What is known about the build the text came from (from the text itself or the environment)."""

    cuda_major: int | None = None
    cudnn_major: int | None = None
    ort_version: str | None = None


_Builder = Callable[["re.Match[str]", str, Context], "Match | None"]


@dataclass(frozen=True)
class _Rule:
    needles: tuple[str, ...]  # cheap lower-case substring prefilter: one must occur in the line
    pattern: re.Pattern[str]
    build: _Builder


# --------------------------------------------------------------------------------------------------
# Library names
# --------------------------------------------------------------------------------------------------
_CUDA_LIB = re.compile(r"^lib(cudart|cublasLt|cublas|cufft|curand|cusparse|cusolver|nvrtc|nvJitLink)\.so\.(\d+)")
_CUDNN_LIB = re.compile(r"^libcudnn(?:_\w+)?\.so\.(\d+)")
_TRT_LIB = re.compile(r"^lib(nvinfer\w*|nvonnxparser|nvparsers)\.so")

_CUDA13_WHEEL = {
    "cudart": "nvidia-cuda-runtime",
    "cublas": "nvidia-cublas",
    "cublasLt": "nvidia-cublas",
    "cufft": "nvidia-cufft",
    "curand": "nvidia-curand",
    "cusparse": "nvidia-cusparse",
    "cusolver": "nvidia-cusolver",
    "nvrtc": "nvidia-cuda-nvrtc",
    "nvJitLink": "nvidia-nvjitlink",
}


def _cuda_major_of(component: str, so_major: int) -> int | None:
    """The CUDA major a library soname belongs to, where the soname alone tells."""
    if component in ("cudart", "cublas", "cublasLt", "nvrtc", "nvJitLink"):
        return so_major
    if component == "cufft":  # cuFFT 10 = CUDA 11, 11 = CUDA 12, 12 = CUDA 13
        return so_major + 1
    return None  # cuRAND stays .so.10; cuSPARSE/cuSOLVER sonames span majors


def _wheel_for(component: str, cuda_major: int | None) -> str | None:
    base = _CUDA13_WHEEL.get(component)
    if base is None or cuda_major is None:
        return None
    if cuda_major >= 13:
        return base
    return f"{base}-cu{cuda_major}"


_PRELOAD_HINT = (
    "then make the libraries loadable: `import ortdoctor.hook` before onnxruntime (or "
    "`ortdoctor preload`, or onnxruntime.preload_dlls())"
)


def _evidence(line: str) -> str:
    line = line.strip()
    return line if len(line) <= _MAX_EVIDENCE else line[: _MAX_EVIDENCE - 3] + "..."


# --------------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------------
def _missing_library(soname: str, line: str, ctx: Context) -> Match | None:
    soname = soname.rsplit("/", 1)[-1]
    low = line.lower()
    if soname in ("libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ml.so"):
        return Match(
            "driver-missing",
            f"{soname} could not be loaded: the NVIDIA driver's user-space library is not on this system.",
            "libcuda.so.1 (and libnvidia-ml.so.1) come with the NVIDIA driver, not with CUDA or pip wheels. "
            "It is missing when no driver is installed, on a machine without an NVIDIA GPU, or in a "
            "container started without GPU passthrough.",
            "Install the NVIDIA driver (e.g. sudo apt-get install nvidia-driver-580); in Docker: "
            "docker run --gpus all ... with nvidia-container-toolkit on the host.",
            _evidence(line),
            {"soname": soname},
        )
    if soname == "libcuda.so":
        return Match(
            "wsl-libcuda-missing",
            "libcuda.so (the unversioned name) could not be loaded.",
            "Some libraries (cuDNN 8's sub-libraries) dlopen `libcuda.so` by its unversioned name. In WSL2 "
            "the driver's libcuda lives in /usr/lib/wsl/lib, which is not always on the loader path, and "
            "the unversioned link may be missing.",
            "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH; in WSL install only the Windows "
            "driver. Elsewhere, check that the driver is installed (libcuda.so.1).",
            _evidence(line),
            {"soname": soname},
        )
    if soname.startswith("libonnxruntime_providers_cuda"):
        return Match(
            "ort-cpu-only",
            "The CUDA provider library itself is missing from the onnxruntime package.",
            "Only onnxruntime-gpu ships libonnxruntime_providers_cuda.so; when the CPU `onnxruntime` wheel "
            "was installed over it (or the GPU wheel was partly uninstalled) the file is gone.",
            "pip uninstall -y onnxruntime onnxruntime-gpu && pip install \"onnxruntime-gpu[cuda,cudnn]\"",
            _evidence(line),
            {"soname": soname},
        )
    if _TRT_LIB.match(soname) or "providers_tensorrt" in low:
        return _tensorrt(line, {"soname": soname})
    m = _CUDNN_LIB.match(soname)
    if m:
        have = int(m.group(1))
        if ctx.cudnn_major is not None and have != ctx.cudnn_major:
            return Match(
                "cudnn-major-mismatch",
                f"{soname} was asked for, but this onnxruntime build uses cuDNN {ctx.cudnn_major}.",
                "A build linked against one cuDNN major cannot use another (cuDNN 8 and 9 are not "
                "interchangeable); the library asking for it was built for a different cuDNN.",
                "Install releases built for the same cuDNN major, or keep them in separate environments.",
                _evidence(line),
                {"soname": soname, "cudnn_major": str(have)},
            )
        cu = ctx.cuda_major
        wheel = (
            f'pip install "nvidia-cudnn-cu{cu}=={have}.*"'
            if cu
            else f'pip install "nvidia-cudnn-cu13=={have}.*" (nvidia-cudnn-cu12 for a CUDA 12 build)'
        )
        return Match(
            "cuda-lib-missing",
            f"cuDNN ({soname}) could not be found by the dynamic loader.",
            f"The CUDA provider needs cuDNN {have}. Either it is not installed, or it is installed where "
            "the loader does not look (pip's nvidia-cudnn wheels put it in site-packages/nvidia/cudnn/lib, "
            "which is never on the loader path by itself).",
            f"{wheel}, {_PRELOAD_HINT}.",
            _evidence(line),
            {"soname": soname, "cudnn_major": str(have), "library": "cudnn"},
        )
    m = _CUDA_LIB.match(soname)
    if m:
        component, so_major = m.group(1), int(m.group(2))
        lib_major = _cuda_major_of(component, so_major)
        details = {"soname": soname, "library": component}
        if lib_major is not None:
            details["cuda_major"] = str(lib_major)
        if lib_major is not None and ctx.cuda_major is not None and lib_major != ctx.cuda_major:
            return Match(
                "cuda-major-mismatch",
                f"{soname} (CUDA {lib_major}) was asked for, but this onnxruntime build is for CUDA "
                f"{ctx.cuda_major}.",
                "CUDA's compatibility holds only within one major: libraries of CUDA "
                f"{lib_major} cannot stand in for CUDA {ctx.cuda_major} ones. Something in the process "
                "(another ORT-family package, an old pin) was built for the other major.",
                "Install builds for one CUDA major (`ortdoctor matrix` lists which onnxruntime-gpu is built "
                "for which CUDA), or keep them in separate environments.",
                _evidence(line),
                details,
            )
        wheel = _wheel_for(component, lib_major)
        install = f"pip install {wheel}" if wheel else 'pip install "onnxruntime-gpu[cuda,cudnn]"'
        return Match(
            "cuda-lib-missing",
            f"The CUDA library {soname} could not be found by the dynamic loader.",
            "The CUDA provider links a fixed set of CUDA libraries of one major. This one is either not "
            "installed or installed where the loader does not look (pip's nvidia-* wheels live in "
            "site-packages/nvidia/*/lib, CUDA 13 in nvidia/cu13/lib, never on the loader path by "
            "themselves). A CUDA major different from the build's cannot stand in.",
            f"{install}, {_PRELOAD_HINT}.",
            _evidence(line),
            details,
        )
    if low.count("onnxruntime") and ("cuda" in soname or soname.startswith("libnv")):
        return Match(
            "cuda-lib-missing",
            f"The library {soname} could not be found by the dynamic loader.",
            "A library the CUDA provider depends on is not installed or not on the loader path.",
            f'pip install "onnxruntime-gpu[cuda,cudnn]", {_PRELOAD_HINT}.',
            _evidence(line),
            {"soname": soname},
        )
    return None


def _so_missing(m: re.Match[str], line: str, ctx: Context) -> Match | None:
    soname = m.group(1)
    low = line.lower()
    if "importerror" in low or "onnxruntime_pybind11_state" in low:
        lib = _CUDA_LIB.match(soname.rsplit("/", 1)[-1])
        if lib is not None:
            return _import_fails(soname, line, ctx)
    return _missing_library(soname, line, ctx)


def _import_fails(soname: str, line: str, ctx: Context) -> Match:
    bad = ctx.ort_version in (None, "1.27.0")
    fid = "ort-known-bad-release" if ctx.ort_version == "1.27.0" else "ort-import-fails"
    return Match(
        fid,
        f"`import onnxruntime` itself failed: its native module needs {soname}, which cannot be loaded.",
        "onnxruntime-gpu 1.27.0's Linux pybind module gained a direct dependency on libcudart.so.13, so "
        "the import fails on CPU-only and CUDA 12 hosts before any session exists"
        + (" (this looks like that release)." if bad else ".")
        + " Code that catches the ImportError often reports it as 'onnxruntime not installed'.",
        'pip install "onnxruntime-gpu!=1.27.0" (1.28+, or <1.27 for CUDA 12), or install the CUDA runtime '
        f"it needs (pip install nvidia-cuda-runtime), {_PRELOAD_HINT}.",
        _evidence(line),
        {"soname": soname},
    )


def _tensorrt(line: str, details: dict[str, str] | None = None) -> Match:
    return Match(
        "tensorrt-unavailable",
        "The TensorRT execution provider could not be created (TensorRT libraries are not loadable).",
        "onnxruntime-gpu lists TensorrtExecutionProvider first but never bundles TensorRT; code that passes "
        "get_available_providers() straight through tries it, fails, and falls back, which buries any "
        "CUDA failure that follows.",
        "Ask for providers=['CUDAExecutionProvider', 'CPUExecutionProvider'] explicitly, or install the "
        'TensorRT major the build links, pinned: pip install "tensorrt-cu13==10.*" --extra-index-url '
        "https://pypi.nvidia.com (tensorrt-cu12==10.* for CUDA 12 builds), then `ortdoctor preload --tensorrt`.",
        _evidence(line),
        details or {},
    )


def _tensorrt_symbol(m: re.Match[str], line: str, ctx: Context) -> Match:
    return Match(
        "tensorrt-older-than-build",
        f"The TensorRT provider library found TensorRT but not the function {m.group(1)} in it.",
        "The TensorRT libraries that were loaded are older than (or another build than) the TensorRT "
        "onnxruntime's TensorRT EP was built with, so a function the provider calls is missing.",
        'Install the newest TensorRT of the major the provider links: pip install "tensorrt-cu13==10.*" '
        "--extra-index-url https://pypi.nvidia.com (tensorrt-cu12==10.* for CUDA 12 builds); `ortdoctor check` "
        "names the version it was built with.",
        _evidence(line),
        {"symbol": m.group(1)},
    )


def _simple(fid: str, what: str, why: str, fix: str, *, consequence: bool = False) -> _Builder:
    def build(m: re.Match[str], line: str, ctx: Context) -> Match:
        return Match(fid, what, why, fix, _evidence(line), {}, consequence)

    return build


def _cuda_code(m: re.Match[str], line: str, ctx: Context) -> Match | None:
    code = int(m.group(1))
    builder = _BY_CODE.get(code)
    if builder is None:
        return None
    found = builder(m, line, ctx)
    if found is not None:
        found.details.setdefault("cuda_error", str(code))
    return found


def _ep_not_created(m: re.Match[str], line: str, ctx: Context) -> Match:
    details: dict[str, str] = {}
    req = _REQUIRE.search(line)
    if req:
        details = {"cudnn_major": req.group(1), "cuda_major": req.group(2)}
    return Match(
        "cuda-ep-fell-back-to-cpu",
        "The" + LOCAL_DOCS["cuda-ep-fell-back-to-cpu"][0][3:] + "."
        + (f" The build needs cuDNN {details['cudnn_major']} and CUDA {details['cuda_major']}." if details else ""),
        LOCAL_DOCS["cuda-ep-fell-back-to-cpu"][1],
        LOCAL_DOCS["cuda-ep-fell-back-to-cpu"][2],
        _evidence(line),
        details,
        consequence=True,
    )


def _windows_dll_missing(m: re.Match[str], line: str, ctx: Context) -> Match:
    dll = m.group(1) if m.lastindex else None
    if dll and "cudnn" in dll.lower():
        what = f"cuDNN ({dll}) could not be found on the DLL search path."
        fix = (
            "Add the versioned cuDNN folder (e.g. C:\\Program Files\\NVIDIA\\CUDNN\\v9.x\\bin\\13.x) to PATH "
            'and restart the shell, or pip install "onnxruntime-gpu[cuda,cudnn]" and call '
            "onnxruntime.preload_dlls() (or `import ortdoctor.hook`) first."
        )
    else:
        what = (f"{dll} could not be found" if dll else "A DLL that onnxruntime_providers_cuda.dll imports is "
                "missing") + " (Windows error 126, ERROR_MOD_NOT_FOUND)."
        fix = (
            "Add %CUDA_PATH%\\bin and the cuDNN bin folder to PATH and restart the shell, or pip install "
            '"onnxruntime-gpu[cuda,cudnn]" and call onnxruntime.preload_dlls() (or `import ortdoctor.hook`) '
            "first; install the VC++ runtime (https://aka.ms/vs/17/release/vc_redist.x64.exe)."
        )
    return Match(
        "cuda-lib-missing",
        what,
        "The provider DLL is there; one of the CUDA/cuDNN DLLs it imports is not on the search path "
        "(PATH lookups are not recursive, the cuDNN 9 installer puts DLLs in bin\\<cuda version>, and "
        "os.add_dll_directory does not help ORT's own provider loading).",
        fix,
        _evidence(line),
        {"dll": dll} if dll else {},
    )


# CUDA runtime error codes (cudaError_t) and what they stand for.
_BY_CODE: dict[int, _Builder] = {
    35: _simple(
        "driver-too-old",
        "CUDA reports error 35 (cudaErrorInsufficientDriver): the driver is older than the CUDA runtime "
        "onnxruntime was built with, or there is no usable driver at all.",
        "Each CUDA major needs a minimum driver (CUDA 12: >= 525.60.13, CUDA 13: R580+ on Linux). The same "
        "error appears when libcuda.so.1 cannot be loaded (no driver, or a container without GPU "
        "passthrough); `ortdoctor check` tells the two apart.",
        "Upgrade the NVIDIA driver (e.g. sudo apt-get install nvidia-driver-580), or install an "
        "onnxruntime-gpu built for the CUDA major the driver supports (see `ortdoctor matrix`).",
    ),
    100: _simple(
        "no-gpu-visible",
        "CUDA reports error 100 (cudaErrorNoDevice): no CUDA-capable device is visible.",
        "The driver loads but shows no GPU: Docker without --gpus, Kubernetes without a GPU resource, "
        "CUDA_VISIBLE_DEVICES empty or -1, NVIDIA_VISIBLE_DEVICES=void, or a GPU-less VM.",
        "docker run --gpus all ... (nvidia-container-toolkit on the host); unset or correct "
        "CUDA_VISIBLE_DEVICES.",
    ),
    101: _simple(
        "invalid-device-ordinal",
        "CUDA reports error 101 (invalid device ordinal): the requested device_id is not a visible GPU.",
        "CUDA numbers the GPUs that CUDA_VISIBLE_DEVICES leaves visible from 0, so an id valid for the whole "
        "machine can be out of range, and -1 is never valid.",
        "Pass a device_id below the number of visible GPUs (count from 0 after CUDA_VISIBLE_DEVICES).",
    ),
    3: _simple(
        "cuda-after-fork",
        "CUDA reports error 3 (initialization error) when selecting the device.",
        "Typical in a process forked after CUDA was initialised in the parent (multiprocessing's default "
        "'fork' on Linux): CUDA does not support fork() after initialisation.",
        'multiprocessing.set_start_method("spawn") before starting workers, or create sessions only inside '
        "the workers.",
    ),
    209: _simple(
        "gpu-arch-unsupported",
        "CUDA reports error 209 (cudaErrorNoKernelImageForDevice): this build has no kernels for the GPU.",
        "Wheels carry device code for a fixed list of architectures. MatMul (cuBLAS) may still work while "
        "ORT's own kernels (Add, Relu, Mul) fail at run time.",
        "Install an onnxruntime-gpu build that includes the architecture (1.28+ for sm_120; a CUDA 12 build "
        "for pre-Turing GPUs), or build with CMAKE_CUDA_ARCHITECTURES.",
    ),
    804: _simple(
        "cuda-compat-on-unsupported-hw",
        "CUDA reports error 804: forward compatibility was attempted on hardware that does not support it.",
        "A container's cuda-compat libcuda (/usr/local/cuda/compat) only works on data-centre GPUs with a "
        "supported driver branch, or the host driver is older than the image needs.",
        "Remove the compat directory from LD_LIBRARY_PATH (or the image's ld.so.conf.d entry), or upgrade "
        "the host driver to what the image needs.",
    ),
    803: _simple(
        "driver-library-mismatch",
        "CUDA reports error 803: the system's display driver and CUDA driver do not match.",
        "The user-space driver libraries and the kernel module are from different driver versions "
        "(an upgrade without a reboot, or a container's libraries against another host driver).",
        "Reboot (or reload the nvidia kernel modules); align the container's driver libraries with the host.",
    ),
    999: _simple(
        "driver-error",
        "CUDA reports error 999 (unknown error) when initialising the device.",
        "The driver is installed but in a broken state, most often after suspend and resume (nvidia_uvm), "
        "or the GPU fell off the bus.",
        "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm, or reboot; `nvidia-smi` shows the GPU's state.",
    ),
    2: _simple(
        "gpu-out-of-memory",
        "CUDA reports error 2 (out of memory).",
        "The GPU's memory is taken: other processes, or several sessions each keeping their own BFC arena "
        "that grows in powers of two.",
        "Stop other GPU processes (nvidia-smi lists them), or limit the arena: ('CUDAExecutionProvider', "
        "{'arena_extend_strategy': 'kSameAsRequested', 'gpu_mem_limit': N}), or use smaller batches.",
    ),
}
_BY_CODE[46] = _BY_CODE[100]  # cudaErrorDevicesUnavailable: exclusive-process GPU already taken: visible but unusable

_REQUIRE = re.compile(r"Require cuDNN (\d+)\.\* and CUDA (\d+)\.\*")

_NAMED_ERRORS: dict[str, int] = {
    "cudaErrorInsufficientDriver": 35,
    "CUDA driver version is insufficient for CUDA runtime version": 35,
    "cudaErrorNoDevice": 100,
    "no CUDA-capable device is detected": 100,
    "cudaErrorInvalidDevice": 101,
    "invalid device ordinal": 101,
    "cudaErrorNoKernelImageForDevice": 209,
    "no kernel image is available for execution on the device": 209,
    "forward compatibility was attempted on non supported HW": 804,
    "cudaErrorCompatNotSupportedOnDevice": 804,
    "cudaErrorSystemDriverMismatch": 803,
    "cudaErrorMemoryAllocation": 2,
}


def _named_error(m: re.Match[str], line: str, ctx: Context) -> Match | None:
    text = m.group(0)
    for name, code in _NAMED_ERRORS.items():
        if name.lower() == text.lower():
            found = _BY_CODE[code](m, line, ctx)
            if found is not None:
                found.details.setdefault("cuda_error", str(code))
            return found
    return None


_RULES: tuple[_Rule, ...] = (
    # "<soname>: cannot open shared object file" (glibc's dlerror), wherever it appears: ORT's
    # "Failed to load library ... with error:", an ImportError, a dlopen in cuDNN or onnxruntime-genai.
    _Rule(
        ("cannot open shared object file",),
        re.compile(r"([\w+.-]{1,200}\.so(?:\.\d{1,6}){0,4})\s*:\s*cannot open shared object file"),
        _so_missing,
    ),
    _Rule(
        ("cuda failure", "cuda error"),
        re.compile(r"CUDA (?:failure|error)\s+(\d{1,4})\b", re.IGNORECASE),
        _cuda_code,
    ),
    _Rule(
        tuple(k.lower() for k in _NAMED_ERRORS),
        re.compile("|".join(re.escape(k) for k in _NAMED_ERRORS), re.IGNORECASE),
        _named_error,
    ),
    _Rule(
        ("cudasetdevice(getdeviceid())",),
        re.compile(r"CUDA error executing cudaSetDevice\(GetDeviceId\(\)\)", re.IGNORECASE),
        _BY_CODE[3],
    ),
    _Rule(
        ("cudnn_status_sublibrary_version_mismatch",),
        re.compile(r"CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"),
        _simple(
            "cudnn-sublibrary-mismatch",
            "cuDNN reports CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH: its sub-libraries come from different "
            "cuDNN releases.",
            "cuDNN 9 dlopens its sub-libraries (libcudnn_*.so.9) by bare name; when one is missing from the "
            "wheel or a partial copy, the loader takes a system copy of another version.",
            "pip install --force-reinstall nvidia-cudnn-cu13 (cu12 for CUDA 12), or remove the stray "
            "system cuDNN from the loader path; LD_DEBUG=libs shows where each libcudnn_* came from.",
        ),
    ),
    _Rule(
        ("with link time reference",),
        re.compile(r"symbol \S+ version \S+ not defined in file \S+ with link time reference"),
        _simple(
            "lib-multiple-copies",
            "A library was loaded next to a copy of its partner from another release (symbol version not "
            "defined).",
            "Several CUDA installs each provide some libraries; the first match on the search path wins per "
            "soname, so cuBLAS and cuBLASLt (or cuDNN's pieces) came from different releases.",
            "Remove stale CUDA directories from LD_LIBRARY_PATH and keep one source of CUDA libraries; "
            "`ortdoctor preload --directory \"\"` loads one consistent set.",
        ),
    ),
    _Rule(
        ("error 127", "winerror 127", "procedure could not be found"),
        re.compile(r"(?:WinError 127|error 127|procedure could not be found)", re.IGNORECASE),
        _simple(
            "lib-multiple-copies",
            "Windows could not find a procedure in a DLL (error 127): two incompatible versions of a "
            "CUDA/cuDNN DLL are mixed in the process.",
            "A process holds one DLL per name; torch/lib's cuDNN (or an older CUDA bin on PATH) was loaded "
            "first and lacks what the other library expects.",
            "Import torch before onnxruntime and do not preload a different cuDNN, align the cuDNN versions, "
            "or remove the older CUDA/cuDNN folder from PATH.",
        ),
    ),
    _Rule(
        ("loadlibrary failed with error 126", "which is missing", "could not locate", "error 126"),
        re.compile(
            r"(?:\"|\b)([\w.-]{1,80}\.dll)\"? which is missing|Could not locate ([\w.-]{1,80}\.dll)"
            r"|LoadLibrary failed with error 126|error 126",
            re.IGNORECASE,
        ),
        lambda m, line, ctx: _windows_dll_missing(_DllGroup(m), line, ctx),  # type: ignore[arg-type]
    ),
    _Rule(
        ("dll load failed while importing onnxruntime_pybind11_state", "winerror 1114", "error 1114",
         "visual c++ redistributable is not installed", "dll initialization routine failed"),
        re.compile(
            r"DLL load failed while importing onnxruntime_pybind11_state|WinError 1114|error 1114"
            r"|Visual C\+\+ Redistributable is not installed|DLL initialization routine failed",
            re.IGNORECASE,
        ),
        _simple(
            "msvc-runtime-missing",
            "Windows could not load onnxruntime's native module (a DLL it needs is missing or failed to "
            "initialise).",
            "Usually the Visual C++ 2019+ runtime is missing, or an older msvcp140.dll (from conda or "
            "another package) is loaded first.",
            "Install https://aka.ms/vs/17/release/vc_redist.x64.exe, or update/remove conda's vc14_runtime "
            "/ vs2015_runtime.",
        ),
    ),
    _Rule(
        ("driver/library version mismatch", "nvml_error_lib_rm_version_mismatch"),
        re.compile(r"Driver/library version mismatch|NVML_ERROR_LIB_RM_VERSION_MISMATCH", re.IGNORECASE),
        _simple(
            "driver-library-mismatch",
            "NVML reports a driver/library version mismatch.",
            "The user-space driver was upgraded but the kernel module still runs the old version; CUDA "
            "cannot initialise until they match.",
            "Reboot (or unload and reload the nvidia kernel modules).",
        ),
    ),
    _Rule(
        ("nvml shared library not found", "libnvidia-ml.so.1 not found"),
        re.compile(r"NVML Shared Library Not Found|libnvidia-ml\.so\.1 not found", re.IGNORECASE),
        lambda m, line, ctx: _missing_library("libnvidia-ml.so.1", line, ctx),
    ),
    _Rule(
        ("is not a symbolic link",),
        re.compile(r"/usr/lib/wsl/lib/libcuda\.so\.1 is not a symbolic link"),
        lambda m, line, ctx: _missing_library("libcuda.so", line, ctx),
    ),
    _Rule(
        ("not in available provider names",),
        re.compile(r"Specified provider '(?:CUDA|Tensorrt)ExecutionProvider' is not in available provider names"),
        _simple(
            "ort-cpu-only",
            "The CUDA execution provider is not compiled into the onnxruntime that was imported.",
            "The `onnxruntime` package on PyPI is CPU-only; when both it and onnxruntime-gpu are installed "
            "the one installed last owns the shared files. ORT only warns and runs on the CPU.",
            'pip uninstall -y onnxruntime onnxruntime-gpu && pip install "onnxruntime-gpu[cuda,cudnn]"',
        ),
    ),
    _Rule(
        ("asked to use cudaexecutionprovider",),
        re.compile(
            r"Asked to use CUDAExecutionProvider as an ONNX Runtime execution provider, but the available "
            r"execution providers are \[[^\]]{0,300}\]"
        ),
        lambda m, line, ctx: None if "CUDAExecutionProvider" in m.group(0).split("are [", 1)[-1] else Match(
            "ort-cpu-only",
            "Optimum asked for the CUDA execution provider, but the imported onnxruntime only offers "
            "the CPU.",
            "The CPU `onnxruntime` wheel is installed (alone, or over onnxruntime-gpu, whose files it "
            "overwrote).",
            'pip uninstall -y onnxruntime onnxruntime-gpu && pip install "onnxruntime-gpu[cuda,cudnn]"',
            _evidence(line),
        ),
    ),
    _Rule(
        ("gpu dependencies are not loaded", "multiple onnxruntime packages are installed"),
        re.compile(
            r"GPU dependencies are not loaded|multiple onnxruntime packages are installed", re.IGNORECASE
        ),
        _simple(
            "ort-multiple-packages",
            "More than one onnxruntime distribution is installed into the same `onnxruntime/` package.",
            "onnxruntime and onnxruntime-gpu (and -directml, -openvino) share one import package; the one "
            "installed last overwrote the other's files, often through a transitive dependency.",
            "pip uninstall -y onnxruntime onnxruntime-gpu onnxruntime-directml onnxruntime-openvino && "
            'pip install "onnxruntime-gpu[cuda,cudnn]"',
        ),
    ),
    _Rule(
        ("undefined symbol",),
        re.compile(r"providers_tensorrt\.so(?: with error)?:.*?undefined symbol: (\w+)", re.IGNORECASE),
        _tensorrt_symbol,
    ),
    _Rule(
        ("tensorrtexecutionprovider", "tensorrt libraries"),
        re.compile(
            r"Failed to create TensorrtExecutionProvider|Please install TensorRT libraries"
            r"|libonnxruntime_providers_tensorrt\.so with error",
            re.IGNORECASE,
        ),
        lambda m, line, ctx: None if "undefined symbol" in line else _tensorrt(line),
    ),
    _Rule(
        ("failed to allocate memory",),
        re.compile(r"Failed to allocate memory for requested buffer", re.IGNORECASE),
        lambda m, line, ctx: _BY_CODE[2](m, line, ctx),
    ),
    _Rule(
        ("cuda graph",),
        re.compile(r"cannot use the CUDA Graph feature|CUDA Graphs?\b.{0,80}(?:not supported|cannot|fail)",
                   re.IGNORECASE),
        _simple(
            "cuda-graph-unsupported",
            "The session cannot use CUDA graphs as requested (enable_cuda_graph).",
            "CUDA graphs need every node on the CUDA EP, no control flow (If/Loop/Scan), fixed shapes, and "
            "inputs/outputs bound through IOBinding at the same device addresses on every run.",
            "Bind inputs with OrtValue.ortvalue_from_numpy(x, 'cuda', 0) and update them in place "
            "(update_inplace); keep shapes fixed; fold shape subgraphs; avoid control flow.",
        ),
    ),
    _Rule(
        ("explicitly set the providers parameter",),
        re.compile(r"required to explicitly set the providers parameter"),
        _simple(
            "providers-not-set",
            "InferenceSession was created without providers= on a GPU build.",
            "Since ORT 1.9 a build with more than the CPU provider refuses to guess: the caller must list "
            "the providers.",
            "InferenceSession(path, providers=['CUDAExecutionProvider', 'CPUExecutionProvider'])",
        ),
    ),
    _Rule(
        ("is deprecated. please use",),
        re.compile(r"THIS PROJECT '(nvidia-[\w-]+-cu13)' IS DEPRECATED", re.IGNORECASE),
        _simple(
            "nvidia-wheel-stub",
            "pip tried to install a deprecated nvidia-*-cu13 stub package.",
            "From CUDA 13 NVIDIA's component wheels are unsuffixed (nvidia-cublas, nvidia-cuda-runtime); "
            "the -cu13 names are 0.0.1 stubs that refuse to build. Only cuDNN keeps its suffix.",
            "pip install nvidia-cuda-runtime nvidia-cublas nvidia-cufft nvidia-curand nvidia-cudnn-cu13",
        ),
    ),
    _Rule(
        ("no matching distribution found for onnxruntime", "not a supported wheel on this platform"),
        re.compile(
            r"No matching distribution found for onnxruntime|is not a supported wheel on this platform",
            re.IGNORECASE,
        ),
        _simple(
            "platform-no-cuda",
            "pip found no onnxruntime wheel for this platform.",
            "onnxruntime-gpu is published for Linux x86_64 (glibc >= 2.28) and Windows x64 and a limited "
            "set of Python versions; aarch64 CUDA builds are on separate feeds.",
            "Use a supported OS/Python (e.g. an Ubuntu 22.04+ image), the vendor aarch64 wheels, or pin a "
            "release that exists for this platform.",
        ),
    ),
    _Rule(
        ("cudnn is not available",),
        re.compile(r"cuDNN is not available\. Install cuDNN"),
        lambda m, line, ctx: _missing_library(f"libcudnn.so.{ctx.cudnn_major or 9}", line, ctx),
    ),
    # Consequences: the EP was not used. A cause is usually logged just before.
    _Rule(
        ("failed to create cudaexecutionprovider", "fallback to cpu ep has been explicitly disabled",
         "falling back to"),
        re.compile(
            r"Failed to create CUDAExecutionProvider|fallback to CPU EP has been explicitly disabled"
            r"|Falling back to \['CPUExecutionProvider'\]",
            re.IGNORECASE,
        ),
        _ep_not_created,
    ),
)


class _DllGroup:
    """Adapts the DLL rule's alternation so the builder sees the DLL name (if any) as group 1."""

    def __init__(self, m: re.Match[str]) -> None:
        self._m = m
        self.lastindex = 1 if (m.group(1) or m.group(2)) else None

    def group(self, index: int = 0) -> str | None:
        if index == 0:
            return self._m.group(0)
        return self._m.group(1) or self._m.group(2)


def _lines(text: str) -> Iterable[str]:
    for i, line in enumerate(strip_ansi(text).splitlines()):
        if i >= _MAX_LINES:
            return
        yield line[:_MAX_LINE]


def context_from_text(text: str, base: Context | None = None) -> Context:
    """Fill unknown build majors from ORT's own `Require cuDNN N.* and CUDA M.*` message."""
    base = base or Context()
    if base.cuda_major is not None and base.cudnn_major is not None:
        return base
    m = _REQUIRE.search(strip_ansi(text[:4_000_000]))
    if not m:
        return base
    return Context(
        cuda_major=base.cuda_major if base.cuda_major is not None else int(m.group(2)),
        cudnn_major=base.cudnn_major if base.cudnn_major is not None else int(m.group(1)),
        ort_version=base.ort_version,
    )


def classify(
    text: str,
    *,
    cuda_major: int | None = None,
    cudnn_major: int | None = None,
    ort_version: str | None = None,
) -> list[Match]:
    """Every known failure in ``text``, causes first (in order of appearance), consequences last.

    ``cuda_major`` / ``cudnn_major`` are the build's majors when known (from the environment); ORT's
    ``Require cuDNN 9.* and CUDA 13.*`` line in the text fills them otherwise. With them, a library of
    another major is reported as a major mismatch instead of a plain missing library.
    """
    if not isinstance(text, str) or not text:
        return []
    ctx = context_from_text(text, Context(cuda_major, cudnn_major, ort_version))
    found: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for line in _lines(text):
        low = line.lower()
        on_line: set[str] = set()  # one line is one message: one match per id
        for rule in _RULES:
            if not any(n in low for n in rule.needles):
                continue
            for m in rule.pattern.finditer(line):
                match = rule.build(m, line, ctx)
                if match is None:
                    continue
                key = (match.finding_id, match.details.get("soname") or match.details.get("dll") or "")
                if key in seen or match.finding_id in on_line:
                    continue
                seen.add(key)
                on_line.add(match.finding_id)
                found.append(match)
    if any(m.finding_id == "tensorrt-older-than-build" for m in found):
        # TensorRT was found and loaded, only a function was missing: ORT's generic "Please install
        # TensorRT libraries" wrapper around that error does not mean TensorRT is absent.
        found = [m for m in found if m.finding_id != "tensorrt-unavailable"]
    causes = [m for m in found if not m.consequence]
    return causes + [m for m in found if m.consequence]


def finding_ids(text: str, **kwargs: object) -> list[str]:
    """The distinct finding ids in ``text``, in :func:`classify`'s order."""
    out: list[str] = []
    for m in classify(text, **kwargs):  # type: ignore[arg-type]
        if m.finding_id not in out:
            out.append(m.finding_id)
    return out


__all__ = ["CONSEQUENCE_IDS", "LOCAL_DOCS", "Context", "Match", "classify", "finding_ids", "strip_ansi"]
