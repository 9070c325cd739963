"""What the installed onnxruntime build is: a CUDA build or not, and for which CUDA and cuDNN majors.

One answer for every release. From 1.21 on the wheel says it in ``capi/build_and_package_info.py``
(``cuda_version``); older wheels do not have that file, and their CUDA provider library's own
``DT_NEEDED`` (``libcudart.so.12``, ``libcudnn.so.8``) says it instead; the matrix's row of the release
is the last resort. A wheel that ships the CUDA provider is a GPU build, unless the files on disk belong
to a CPU flavour (a CPU wheel installed over a GPU one leaves the provider library behind).
"""

from __future__ import annotations

import re

from ortdoctor.core.facts import ElfInfo, OrtInfo
from ortdoctor.core.package_names import ORT_CPU, ORT_DIRECTML, ORT_OPENVINO, ORT_QNN
from ortdoctor.core.patterns import LazyPattern, lazy
from ortdoctor.core.record import record, replace
from ortdoctor.decide.matrix.model import Matrix, Release
from ortdoctor.decide.names import major_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

__all__ = ["CPU_FLAVOURS", "BuildMajors", "build_majors", "is_cuda_build", "with_known_cuda"]

#: Every distribution that installs a CPU build into the `onnxruntime/` import package.
CPU_FLAVOURS = (ORT_CPU, ORT_DIRECTML, ORT_OPENVINO, ORT_QNN)

# libcudart.so.13 / libcudart.so.11.0; cudart64_13.dll / cudart64_110.dll (CUDA 11 adds the minor digit)
_CUDART = lazy(r"^(?:libcudart\.so\.(\d+)(?:\.\d+)?|cudart64_(\d\d)\d?\.dll)$", re.IGNORECASE)
_CUDNN = lazy(r"^(?:libcudnn\.so\.(\d+)|cudnn64_(\d+)\.dll)$", re.IGNORECASE)

if TYPE_CHECKING:
    Source = Literal["build-info", "provider", "matrix", "default"]
else:
    Source = str  # the alias is the type checker's; at run time only its name is imported


@record
class BuildMajors:
    cuda: int | None
    cudnn: int | None
    cuda_from: Source | None = None  # where the CUDA major was read
    cudnn_from: Source | None = None


def is_cuda_build(ort: OrtInfo) -> bool:
    """The files on disk are a CUDA build: the provider library exists and neither the build info nor
    the distribution whose files are on disk says CPU."""
    if not ort.is_gpu_build:
        return False
    if ort.cuda_version:
        return True
    flavour = ort.package_name or ort.active
    return not (flavour and flavour.lower() in CPU_FLAVOURS)


def _needed(ort: OrtInfo) -> tuple[str, ...]:
    p = ort.cuda_provider
    if p is None:
        return ()
    return p.needed if isinstance(p, ElfInfo) else p.imports


def _first(pattern: LazyPattern, names: tuple[str, ...]) -> int | None:
    for name in names:
        m = pattern.match(name)
        if m:
            return int(m.group(1) or m.group(2))
    return None


def build_majors(ort: OrtInfo, matrix: Matrix | None = None) -> BuildMajors:
    """The CUDA and cuDNN majors the installed build needs; ``cuda`` is None for a CPU build or when
    nothing tells."""
    if not ort.installed or not is_cuda_build(ort):
        return BuildMajors(None, None)
    needed = _needed(ort)

    def release() -> Release | None:  # asked only when the wheel does not tell (no version parsing otherwise)
        match = matrix.release_for(ort.version) if matrix is not None and ort.version else None
        return match.release if match is not None else None

    cuda: int | None
    cuda_from: Source | None
    if (cuda := major_of(ort.cuda_version)) is not None:
        cuda_from = "build-info"
    elif (cuda := _first(_CUDART, needed)) is not None:
        cuda_from = "provider"
    elif (row := release()) is not None:
        cuda, cuda_from = row.cuda_major, "matrix"
    else:
        return BuildMajors(None, None)
    cudnn: int | None
    cudnn_from: Source
    if ort.cudnn_major is not None:
        cudnn, cudnn_from = ort.cudnn_major, "build-info"
    elif (cudnn := _first(_CUDNN, needed)) is not None:
        cudnn_from = "provider"
    elif (row := release()) is not None and row.cudnn_major is not None and row.cuda_major == cuda:
        cudnn, cudnn_from = row.cudnn_major, "matrix"
    else:
        cudnn, cudnn_from = (9 if cuda >= 12 else 8), "default"
    return BuildMajors(cuda, cudnn, cuda_from, cudnn_from)


def with_known_cuda(ort: OrtInfo, matrix: Matrix) -> OrtInfo:
    """``ort`` with ``cuda_version`` from the matrix where the wheel does not say it (before 1.21) and the
    matrix knows the release's build for the build's CUDA major (12.2 for 1.20.2, 11.8 for 1.18.0):
    every report then shows that, not "CUDA ?". Unchanged otherwise."""
    if ort.cuda_version or ort.package_name or not ort.version:
        # the build info was read (it names the package): what it says, or leaves out, stands
        return ort
    majors = build_majors(ort, matrix)
    known = matrix.build_cuda(ort.version, majors.cuda) if majors.cuda is not None else None
    return replace(ort, cuda_version=known) if known else ort
