"""Which PyPI package ships a CUDA or cuDNN library, and which CUDA major a library name belongs to.

Every answer is read from the compatibility matrix (``LibSpec.package``, ``CudnnMajor.packages``,
``Release.cuda``), never typed in by hand, so a fix can only name a package the matrix knows. ``None``
means "no such wheel": there is no ``nvidia-cudnn-cu13`` 8.x and no CUDA 10 wheel at all, and saying
nothing is better than printing a package that does not exist.

The functions are small on purpose: each answers one question a fix needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ortdoctor.decide.matrix.model import LibSpec, Matrix, Release

__all__ = [
    "LibraryOwner",
    "PypiLine",
    "cuda_majors_with_wheels",
    "cudnn_wheel",
    "cudnn_wheels",
    "current_cuda_majors",
    "library_owners",
    "pypi_lines_by_cuda",
    "release_line",
    "wheel_for",
]


def wheel_for(matrix: Matrix, component: str, cuda_major: int) -> str | None:
    """The NVIDIA wheel that ships ``component`` (a ``LibSpec.name``: ``"cudart"``, ``"cublasLt"``,
    ``"cufft"``, ...) for CUDA ``cuda_major``; None when the matrix names no wheel for it."""
    cuda = matrix.cuda_majors.get(cuda_major)
    if cuda is None:
        return None
    wanted = component.lower()
    return next((lib.package for lib in cuda.libraries if lib.name.lower() == wanted and lib.package), None)


def cudnn_wheel(matrix: Matrix, cudnn_major: int, cuda_major: int) -> str | None:
    """The cuDNN wheel of one cuDNN major built for one CUDA major (``nvidia-cudnn-cu12`` for 9 on
    CUDA 12); None when that pair was never published."""
    cudnn = matrix.cudnn_majors.get(cudnn_major)
    return cudnn.packages.get(cuda_major) if cudnn is not None else None


def cudnn_wheels(matrix: Matrix, cudnn_major: int) -> dict[int, str]:
    """Every CUDA major that has a wheel of this cuDNN major, newest CUDA first."""
    cudnn = matrix.cudnn_majors.get(cudnn_major)
    if cudnn is None:
        return {}
    return dict(sorted(cudnn.packages.items(), reverse=True))


def cuda_majors_with_wheels(matrix: Matrix) -> tuple[int, ...]:
    """The CUDA majors whose libraries come as pip wheels, newest first."""
    return tuple(sorted((m for m, c in matrix.cuda_majors.items() if c.wheel_packages), reverse=True))


@dataclass(frozen=True)
class LibraryOwner:
    """A CUDA or cuDNN major whose library set has a file of this name."""

    family: str  # "cuda" or "cudnn"
    major: int
    spec: LibSpec


def library_owners(matrix: Matrix, name: str) -> tuple[LibraryOwner, ...]:
    """Every CUDA/cuDNN major that lists ``name`` as a soname or a Windows DLL name (case-insensitive).

    ``libcurand.so.10`` belongs to CUDA 11, 12 and 13 alike, so it says nothing about the major;
    ``libcublasLt.so.11`` belongs to CUDA 11 only.
    """
    wanted = name.lower()
    out: list[LibraryOwner] = []
    for major, cuda in matrix.cuda_majors.items():
        out += [LibraryOwner("cuda", major, lib) for lib in cuda.libraries if _named(lib, wanted)]
    for major, cudnn in matrix.cudnn_majors.items():
        out += [LibraryOwner("cudnn", major, lib) for lib in cudnn.libraries if _named(lib, wanted)]
    return tuple(out)


def _named(lib: LibSpec, wanted: str) -> bool:
    return lib.soname.lower() == wanted or (lib.windows_dll or "").lower() == wanted


def current_cuda_majors(matrix: Matrix) -> frozenset[int]:
    """The CUDA majors of the newest release line: its PyPI build and its alternative feeds."""
    if not matrix.releases:
        return frozenset()
    newest = matrix.releases[0]
    return frozenset({newest.cuda_major, *(f.cuda_major for f in newest.feeds)})


@dataclass(frozen=True)
class PypiLine:
    """A run of consecutive release lines whose PyPI onnxruntime-gpu wheel uses one CUDA major."""

    first: str  # "1.19"
    last: str  # "1.26"
    cuda_major: int
    cudnn_major: int | None

    def span(self) -> str:
        return self.first if self.first == self.last else f"{self.first}-{self.last}"


def pypi_lines_by_cuda(matrix: Matrix) -> tuple[PypiLine, ...]:
    """Which onnxruntime-gpu lines on PyPI are built for which CUDA major, newest first
    (``1.27-1.31 -> CUDA 13``, ``1.19-1.26 -> CUDA 12``, ...)."""
    runs: list[PypiLine] = []
    for release in matrix.releases:  # newest first
        if not release.pypi:
            continue
        if runs and runs[-1].cuda_major == release.cuda_major:
            runs[-1] = PypiLine(release.line, runs[-1].last, release.cuda_major, runs[-1].cudnn_major)
        else:
            runs.append(PypiLine(release.line, release.line, release.cuda_major, release.cudnn_major))
    return tuple(runs)


def release_line(matrix: Matrix, version: str | None) -> Release | None:
    """The matrix line of an onnxruntime version string, when the matrix knows that exact line."""
    if not version:
        return None
    found = matrix.release_for(version)
    return found.release if found is not None and not found.unverified else None
