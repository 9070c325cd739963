"""The compatibility matrix: what each onnxruntime-gpu release needs, loaded from ``compat_matrix.yaml``.

INTERFACE DRAFT: the dataclasses and function signatures below are the contract other modules code
against. The loader, the validation and the lookups are filled in behind them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

LoadKind = Literal["required", "lazy"]


class MatrixError(Exception):
    """A matrix file that cannot be used. ``str()`` is ``"<file>: <key.path>: <what is wrong>"``."""

    def __init__(self, file: str, key_path: str, message: str) -> None:
        super().__init__(f"{file}: {key_path}: {message}" if key_path else f"{file}: {message}")
        self.file = file
        self.key_path = key_path
        self.message = message


@dataclass(frozen=True)
class LibSpec:
    """One shared library of a CUDA or cuDNN major."""

    name: str  # "cudart", "cublas", "cublasLt", "cufft", "curand", "nvrtc", "cudnn", "cudnn_graph", ...
    soname: str  # Linux: "libcudart.so.13"
    windows_dll: str | None  # "cudart64_13.dll"
    load: LoadKind  # "required": DT_NEEDED of the CUDA provider; "lazy": dlopen'd at run time
    package: str | None  # the NVIDIA wheel that ships it: "nvidia-cuda-runtime", "nvidia-cudnn-cu13"
    linux_dirs: tuple[str, ...]  # relative to a site dir, in preference order: ("nvidia/cu13/lib", ...)
    windows_dirs: tuple[str, ...]  # ("nvidia/cu13/bin/x86_64", ...)
    version_function: str | None = None  # "cudaRuntimeGetVersion", "cudnnGetVersion", ...
    depends: tuple[str, ...] = ()  # names of LibSpecs to load first ("cublas" depends on "cublasLt")
    # cuDNN sub-libraries are dlopen'd by libcudnn.so.9 itself; preload may still load them by path.
    sublibrary_of: str | None = None


@dataclass(frozen=True)
class CudaMajor:
    major: int  # 11, 12, 13
    libraries: tuple[LibSpec, ...]  # in dependency (load) order
    min_driver_linux: str  # "525.60.13"
    min_driver_windows: str
    # finer rules where a minor needs more than the major's minimum: {"12.8": "570.26"}
    min_driver_by_minor_linux: dict[str, str] = field(default_factory=dict)
    wheel_packages: tuple[str, ...] = ()  # "nvidia-cuda-runtime-cu12", ... or the unsuffixed CUDA 13 names
    source: str = ""  # URL or "wheel:<file>"


@dataclass(frozen=True)
class CudnnMajor:
    major: int  # 8, 9
    libraries: tuple[LibSpec, ...]  # libcudnn.so.9 then its sub-libraries
    packages: dict[int, str] = field(default_factory=dict)  # CUDA major -> "nvidia-cudnn-cu13"
    source: str = ""


@dataclass(frozen=True)
class Feed:
    """Where a build of a release for a CUDA major lives when it is not the PyPI default."""

    cuda: str  # "12.x", "11.8"
    cudnn_major: int | None
    index_url: str | None  # None: PyPI
    note: str = ""


@dataclass(frozen=True)
class KnownBad:
    version: str  # "1.27.0"
    problem: str
    fix: str
    affects: str | None = None  # "sm_120", "linux", ...


@dataclass(frozen=True)
class Release:
    line: str  # "1.31" (a release line: every 1.31.x)
    versions: tuple[str, ...]  # known patch releases on PyPI: ("1.31.0", "1.31.1")
    cuda: str  # CUDA major.minor of the PyPI onnxruntime-gpu wheel: "13.0"
    cudnn_major: int | None
    cudnn: str | None  # "9.x", "8.2.4" where documented
    source: Literal["wheel", "doc"]
    source_ref: str  # the wheel file read, or the doc URL
    python: tuple[str, ...] = ()  # "3.11", "3.12", ...
    torch: str | None = None  # a PEP 440 specifier of compatible torch releases: ">=2.4"
    feeds: tuple[Feed, ...] = ()  # alternative builds (other CUDA majors)
    provider_needed: tuple[str, ...] = ()  # DT_NEEDED of libonnxruntime_providers_cuda.so, as read
    pybind_needed_cuda: tuple[str, ...] = ()  # CUDA sonames the pybind module itself needs (1.27.0!)
    extras: dict[str, tuple[str, ...]] = field(default_factory=dict)  # "cuda": ("nvidia-cuda-runtime~=13.0",...)
    archs: tuple[str, ...] = ()  # "sm_75", ... where read from the wheel
    known_bad: tuple[KnownBad, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReleaseMatch:
    release: Release
    exact: bool  # the version itself is listed in release.versions
    unverified: bool  # newer than every known line: the nearest known line was used
    note: str  # says which line was used and why


@dataclass(frozen=True)
class TorchVariant:
    cuda: str  # "12.4"; "cpu" for the CPU build
    tag: str  # "cu124"
    cudnn: str | None  # "9.1.0"
    index_url: str | None  # "https://download.pytorch.org/whl/cu124"; None for the PyPI default
    pypi_default: bool = False


@dataclass(frozen=True)
class TorchRelease:
    version: str  # "2.4"
    variants: tuple[TorchVariant, ...]


@dataclass(frozen=True)
class Recommendation:
    release: Release
    feed: Feed | None  # None: the PyPI default wheel
    command: str  # the exact pip command
    reason: str


@dataclass(frozen=True)
class Matrix:
    path: str
    releases: tuple[Release, ...]  # newest first
    cuda_majors: dict[int, CudaMajor]
    cudnn_majors: dict[int, CudnnMajor]
    torch: tuple[TorchRelease, ...]

    def release_for(self, version: str) -> ReleaseMatch | None:
        """The release line of an installed version string (PEP 440); None when unparsable or older
        than every line. Versions newer than the newest line match it with ``unverified=True``."""
        raise NotImplementedError

    def libraries_for(self, cuda_major: int, cudnn_major: int | None) -> tuple[LibSpec, ...]:
        """Every library an ORT build of that CUDA/cuDNN major may load, in load order."""
        raise NotImplementedError

    def min_driver(self, cuda_version: str, os_name: str) -> str | None:
        """Minimum driver for a CUDA ``major.minor`` on ``"linux"`` or ``"windows"``."""
        raise NotImplementedError

    def recommend(self, cuda: str | None, torch: str | None) -> Recommendation | None:
        """Which onnxruntime-gpu to install with this CUDA major(.minor) and/or torch version."""
        raise NotImplementedError


def default_matrix_path() -> Path:
    """The shipped file: inside the installed package, else at the repository root (source checkout)."""
    here = Path(__file__).resolve().parent
    inside = here / "compat_matrix.yaml"
    return inside if inside.is_file() else here.parent / "compat_matrix.yaml"


def load_matrix(path: str | Path | None = None) -> Matrix:
    """Load and validate a matrix. ``None``: ``$ORTDOCTOR_MATRIX`` if set, else the shipped file.

    Raises:
        MatrixError: unreadable, not YAML, wrong types, inconsistent, duplicate versions.
    """
    raise NotImplementedError
