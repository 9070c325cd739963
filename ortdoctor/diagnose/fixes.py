"""Fix sentences in the terms of the stack a text came from.

The classifier knows *what* is wrong (a CUDA 12 library is missing, the build is for another CUDA
major); this module says *what to do* for the binding and OS the text shows (:mod:`.stack`): pip
wheels and ``import ortdoctor.hook`` for Python, the ``Microsoft.ML.OnnxRuntime.Gpu`` package and
DLL folders on ``PATH`` for C#, the ``onnxruntime_gpu`` artifact and ``ldconfig`` for Java, the
``ort`` crate's ``download-binaries``/``load-dynamic`` features for Rust, the release archives for
C/C++. Package names come from the matrix through :mod:`ortdoctor.decide.packages`; a package that
does not exist is never named (the functions there return None for it, and the sentence leaves it out).

Every function returns a string (or a list of package specs beside it), nothing is printed here.
"""

from __future__ import annotations

import re

from ortdoctor.decide import packages
from ortdoctor.decide.matrix.model import LINUX_X86_64, Matrix
from ortdoctor.diagnose.stack import Stack

__all__ = [
    "build_summary",
    "cuda_libraries_fix",
    "ort_for_cuda",
    "pip_specs",
    "python_loader_hint",
    "system_libraries_fix",
]

_PIP = re.compile(r"pip3? install ((?:\"[^\"]+\"|'[^']+'|[^\s,;()`]+)(?:\s+(?:\"[^\"]+\"|'[^']+'|[^\s,;()`]+))*)")
_SPEC_START = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[a-z,]+\])?(?:[=<>!~]=?[\w.*]+(?:,[=<>!~]=?[\w.*]+)*)?$")


def pip_specs(text: str) -> list[str]:
    """Every package spec a fix tells pip to install (``nvidia-cudnn-cu12==9.*``, ``numpy<2``), in order."""
    out: list[str] = []
    for part in text.split("&&"):
        for m in _PIP.finditer(part):
            for token in m.group(1).split():
                token = token.strip("\"'`").rstrip(".,;:")
                if token.startswith("-"):
                    continue
                if token in ("and", "or", "then", "pip", "install") or "/" in token or not _SPEC_START.match(token):
                    break
                if token not in out:
                    out.append(token)
    return out


def python_loader_hint(stack: Stack) -> str:
    """How a Python program makes pip's NVIDIA libraries loadable (they are never on the loader path)."""
    if stack.windows:
        return ("call onnxruntime.preload_dlls() (onnxruntime 1.21+) or `import ortdoctor.hook` before the "
                "session is created, or add the CUDA and cuDNN bin folders to PATH")
    return ("then make them loadable: `import ortdoctor.hook` before onnxruntime (or `ortdoctor preload`, "
            "or onnxruntime.preload_dlls() on 1.21+)")


def _system_where(stack: Stack) -> str:
    if stack.windows:
        return "make them findable: their bin folders on PATH (or the DLLs next to the executable)"
    if stack.os in ("linux", "wsl"):
        return ("make them findable: their lib directories in /etc/ld.so.conf.d/ and sudo ldconfig, or on "
                "LD_LIBRARY_PATH before the program starts")
    return ("make them findable: on Linux their lib directories in /etc/ld.so.conf.d/ and sudo ldconfig (or on "
            "LD_LIBRARY_PATH), on Windows their bin folders on PATH")


def system_libraries_fix(stack: Stack, what: str) -> str:
    """``what`` (e.g. "CUDA 12 and cuDNN 9") installed system-wide and made findable, in the stack's terms."""
    where = _system_where(stack)
    if stack.binding == "java":
        return (f"The onnxruntime_gpu jar (com.microsoft.onnxruntime:onnxruntime_gpu) does not ship CUDA or "
                f"cuDNN: install {what} and {where}")
    if stack.binding == "csharp":
        # since 1.17 Microsoft.ML.OnnxRuntime.Gpu only references the native packages .Gpu.Windows and .Gpu.Linux
        # (nuget.org/packages/Microsoft.ML.OnnxRuntime.Gpu.Windows, .../Microsoft.ML.OnnxRuntime.Gpu.Linux)
        return (f"The Microsoft.ML.OnnxRuntime.Gpu NuGet package does not ship CUDA or cuDNN (nor do "
                f"Microsoft.ML.OnnxRuntime.Gpu.Windows / .Gpu.Linux, which hold its native files since 1.17): "
                f"install {what} and {where}")
    if stack.binding == "rust":
        return (f"The onnxruntime binaries the ort crate downloads (download-binaries with the cuda feature) do "
                f"not ship CUDA or cuDNN: install {what} and {where}; with load-dynamic, ORT_DYLIB_PATH must "
                "point at a GPU onnxruntime build with its provider libraries beside it")
    if stack.binding == "node":
        return f"onnxruntime-node does not ship CUDA or cuDNN: install {what} and {where}"
    if stack.binding == "cpp":
        return (f"The onnxruntime GPU release archives do not ship CUDA or cuDNN: install {what} and {where}")
    return f"Install {what} and {where}"


def cuda_libraries_fix(
    matrix: Matrix,
    stack: Stack,
    *,
    what: str,
    cuda_major: int | None,
    components: tuple[str, ...] = (),
    cudnn_major: int | None = None,
) -> str:
    """Install and make loadable the CUDA/cuDNN libraries named by ``components`` (``LibSpec`` names)
    of ``cuda_major`` (and cuDNN ``cudnn_major``). ``what`` is how the sentence names them."""
    specs: list[str] = []
    if cuda_major is not None:
        for comp in components:
            wheel = packages.wheel_for(matrix, comp, cuda_major)
            if wheel and wheel not in specs:
                specs.append(wheel)
    alt = ""
    if cudnn_major is not None:
        majors = [cuda_major] if cuda_major is not None else list(packages.cudnn_wheels(matrix, cudnn_major))
        names = [w for w in (packages.cudnn_wheel(matrix, cudnn_major, m) for m in majors) if w]
        specs += [f'"{w}=={cudnn_major}.*"' for w in names[:1]]
        if len(names) > 1:  # the build's CUDA major is not known: name the other wheels of this cuDNN major
            alt = f" (or {' / '.join(names[1:])}: the one for the build's CUDA major)"
    system = system_libraries_fix(stack, what)
    if stack.python and specs:
        return (f"python -m pip install {' '.join(specs)}{alt}, {python_loader_hint(stack)}; or: {system[0].lower()}"
                f"{system[1:]}.")
    if stack.python or stack.known:
        return system + "."
    if specs:  # the text does not say which binding: the system way first, pip's way labelled
        return f"{system}. Python: python -m pip install {' '.join(specs)}{alt}, {python_loader_hint(stack)}."
    return system + "."


def build_summary(matrix: Matrix) -> str:
    """``onnxruntime-gpu on PyPI: 1.27-1.31 is built for CUDA 13, 1.19-1.26 for CUDA 12, ...`` from the matrix."""
    lines = packages.pypi_lines_by_cuda(matrix)
    if not lines:
        return ""
    parts = [f"{ln.span()} for CUDA {ln.cuda_major}" for ln in lines]
    feeds = sorted(set(matrix.feeds), reverse=True)
    feed_note = ""
    if feeds:
        urls = [matrix.feeds[n] for n in feeds]
        names = [u.rstrip("/").split("/")[-3] if u.count("/") > 4 else u for u in urls]
        feed_note = f"; builds for the other CUDA majors are on the {', '.join(names)} feeds"
    return "onnxruntime-gpu on PyPI: " + parts[0].replace(" for ", " is built for ", 1) + ", " + ", ".join(
        parts[1:]) + feed_note


def ort_for_cuda(matrix: Matrix, stack: Stack, cuda_major: int) -> str:
    """How to get an onnxruntime built for CUDA ``cuda_major`` in the stack's terms."""
    lines = [ln for ln in packages.pypi_lines_by_cuda(matrix) if ln.cuda_major == cuda_major]
    span = ", ".join(ln.span() for ln in lines)
    if stack.binding == "csharp":
        return (f"reference a Microsoft.ML.OnnxRuntime.Gpu release built for CUDA {cuda_major}"
                   + (f" (onnxruntime {span})" if span else "")
                   + "; a C++ project references Microsoft.ML.OnnxRuntime.Gpu.Windows or .Gpu.Linux of that release")
    if stack.binding == "java":
        return (f"use an onnxruntime_gpu jar release built for CUDA {cuda_major}"
                   + (f" (onnxruntime {span})" if span else ""))
    if stack.binding == "rust":
        return (f"use ort binaries built for CUDA {cuda_major} (or load-dynamic with ORT_DYLIB_PATH pointing "
                   f"at an onnxruntime GPU build for CUDA {cuda_major})")
    if stack.binding in ("cpp", "node"):
        return (f"use an onnxruntime GPU release built for CUDA {cuda_major}"
                   + (f" (onnxruntime {span})" if span else ""))
    # only what the evidenced Python, platform and GPU can install and run: never a pin of a release that
    # has no wheel for the Python in the text, or no kernels for its GPU
    gpu = divmod(stack.gpu_sm, 10) if stack.gpu_sm else None
    platform = "win_amd64" if stack.windows else LINUX_X86_64
    rec = matrix.recommend(str(cuda_major), None, python=stack.python_version, gpu=gpu, platform=platform)
    if rec is None and (stack.python_version or gpu):  # nothing fits everything: say what is known, no pin
        return (f"use an onnxruntime GPU build for CUDA {cuda_major}" + (f" (onnxruntime {span})" if span else "")
                + (f" that has a wheel for Python {stack.python_version}" if stack.python_version else ""))
    if rec is None:
        return f"use an onnxruntime GPU build for CUDA {cuda_major}" + (f" (onnxruntime {span})" if span else "")
    if stack.python:
        return f"{rec.command} (built for CUDA {cuda_major})"
    return (f"use an onnxruntime GPU build for CUDA {cuda_major}" + (f" (onnxruntime {span})" if span else "")
            + f" (Python: {rec.command})")
