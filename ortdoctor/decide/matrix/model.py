"""The compatibility matrix's model: what each onnxruntime-gpu release needs, and the queries on it.

These dataclasses are the contract the resolver, the diagnosis and the renderers code against. They are
built by :mod:`.validate` from a YAML document, or by :mod:`.load` from the pre-validated snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ortdoctor.core.facts import PackageStep
from ortdoctor.core.patterns import lazy
from ortdoctor.core.record import field, record, replace
from ortdoctor.decide.kernels import CUDA_FLOOR, Coverage, coverage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    from packaging.version import Version

__all__ = [
    "MATRIX_ENV",
    "CudaMajor",
    "CudnnMajor",
    "Feed",
    "JetsonFacts",
    "JetsonFeed",
    "KernelRelease",
    "KnownBad",
    "LibSpec",
    "Matrix",
    "MatrixError",
    "PackageRow",
    "PlatformArchs",
    "Recommendation",
    "Release",
    "ReleaseMatch",
    "TensorrtBuild",
    "TensorrtFacts",
    "TensorrtMajor",
    "TensorrtPip",
    "TorchMatch",
    "TorchRelease",
    "TorchVariant",
    "glibc_floor",
    "line_key",
    "parse_cuda_request",
    "parse_glibc",
    "parse_torch_request",
    "parse_version",
    "python_line",
    "wheel_platform",
]

#: The environment variable that selects a matrix file instead of the shipped one.
MATRIX_ENV = "ORTDOCTOR_MATRIX"

if TYPE_CHECKING:
    LoadKind = Literal["required", "lazy"]
else:
    LoadKind = str  # the alias is the type checker's; at run time only its name is imported


class MatrixError(Exception):
    """A matrix file that cannot be used. ``str()`` is ``"<file>: <key.path>: <what is wrong>"``."""

    def __init__(self, file: str, key_path: str, message: str) -> None:
        super().__init__(f"{file}: {key_path}: {message}" if key_path else f"{file}: {message}")
        self.file = file
        self.key_path = key_path
        self.message = message


@record
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


@record
class CudaMajor:
    major: int  # 11, 12, 13
    libraries: tuple[LibSpec, ...]  # in dependency (load) order
    min_driver_linux: str  # "525.60.13"
    min_driver_windows: str
    # finer rules where a minor needs more than the major's minimum: {"12.8": "570.26"}
    min_driver_by_minor_linux: dict[str, str] = field(default_factory=dict)
    wheel_packages: tuple[str, ...] = ()  # "nvidia-cuda-runtime-cu12", ... or the unsuffixed CUDA 13 names
    source: str = ""  # URL or "wheel:<file>"
    min_driver_by_minor_windows: dict[str, str] = field(default_factory=dict)
    driver_source: str = ""  # the URL the driver minimums come from
    notes: tuple[str, ...] = ()


@record
class CudnnMajor:
    major: int  # 8, 9
    libraries: tuple[LibSpec, ...]  # libcudnn.so.9 then its sub-libraries
    packages: dict[int, str] = field(default_factory=dict)  # CUDA major -> "nvidia-cudnn-cu13"
    source: str = ""
    notes: tuple[str, ...] = ()


@record
class Feed:
    """Where a build of a release for a CUDA major lives when it is not the PyPI default."""

    cuda: str  # "12.x", "11.8"
    cudnn_major: int | None
    index_url: str | None  # None: PyPI
    note: str = ""
    # the patch releases this build exists for (empty: every version of the line), e.g. 1.18.1 only
    versions: tuple[str, ...] = ()
    cudnn: str | None = None  # "9.x", "8.9" where documented
    source: str = ""  # URL, or "wheel:<file>" when read from the feed's wheel
    # the language bindings this build ships packages for ("python", "csharp", "cpp", "java"); empty: not
    # recorded, taken as every binding. The 1.17 and 1.18.1 CUDA 12 builds had no Java package.
    bindings: tuple[str, ...] = ()

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".")[0])

    def ships(self, binding: str) -> bool:
        """Whether this build has a package for ``binding`` ("unknown" and unrecorded lists count as yes)."""
        return not self.bindings or binding == "unknown" or binding in self.bindings


@record
class KnownBad:
    version: str  # "1.27.0"
    problem: str
    fix: str
    affects: str | None = None  # "sm_120", "linux", ...


#: The platform of the PyPI wheel every release row describes (``cuda``, ``archs``, ``provider_needed``).
LINUX_X86_64 = "linux_x86_64"
#: The other wheel platforms a row may record architectures for (``platform_archs``).
ARCH_PLATFORMS = ("win_amd64", "linux_aarch64")
#: Every wheel platform a row may record PyPI wheels for (``wheel_platforms``).
WHEEL_PLATFORMS = (LINUX_X86_64, "linux_aarch64", "win_amd64")
#: The platforms the alternative feeds' builds are offered on: the matrix records only their Linux x86_64
#: and Windows builds.
FEED_PLATFORMS = (LINUX_X86_64, "win_amd64")


@record
class PlatformArchs:
    """The GPU architectures one wheel's CUDA provider carries kernels for, read from its fatbin headers."""

    archs: tuple[str, ...]  # SASS "sm_XY[a|f]", then PTX "compute_XY[a|f]"
    ptx_isa: str | None = None  # the PTX ISA version of its PTX ("8.2"); None without PTX
    source: str = ""  # the wheel file read
    # targets of archs found only in containers of arch-specific targets alone: the general kernels lack them
    isolated: tuple[str, ...] = ()


@record
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
    # The Linux x86_64 wheel's (source_ref's) kernel targets: SASS "sm_75", "sm_90a", then PTX "compute_90",
    # with the PTX ISA version of that PTX; empty where no wheel was read.
    archs: tuple[str, ...] = ()
    ptx_isa: str | None = None
    archs_source: str = ""  # the wheel file archs were read from, where it is not source_ref
    isolated: tuple[str, ...] = ()  # targets of archs only single-GPU kernels carry (see PlatformArchs)
    # The same for the other platforms' wheels of the line: "win_amd64", "linux_aarch64".
    platform_archs: dict[str, PlatformArchs] = field(default_factory=dict)
    known_bad: tuple[KnownBad, ...] = ()
    notes: tuple[str, ...] = ()
    # per patch version, the wheel file read (source_ref names the line's reference wheel)
    wheels: dict[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = ()  # plain Requires-Dist names of the wheel: "flatbuffers", "numpy", ...
    tensorrt_needed: tuple[str, ...] = ()  # CUDA/TensorRT sonames of libonnxruntime_providers_tensorrt.so
    pypi: bool = True  # False: the PyPI onnxruntime-gpu package never had this line for Linux x86_64
    # The PyPI wheels of every version of the line: wheel platform -> the platform tag of its file name
    # ("linux_aarch64": "manylinux_2_34_aarch64"). Empty: not recorded (every platform is assumed).
    wheel_platforms: dict[str, str] = field(default_factory=dict)
    # The win_amd64 wheel's import tables (read with formats/pe.py): the CUDA and cuDNN DLLs its CUDA provider
    # and its TensorRT provider import (Windows links differently: 1.27 on import no cudart64_13.dll), and the
    # wheel read; empty where no Windows wheel was read.
    windows_needed: tuple[str, ...] = ()
    windows_tensorrt_needed: tuple[str, ...] = ()
    windows_source: str = ""

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".")[0])

    def has_wheel(self, platform: str, glibc: tuple[int, int] | None = None) -> bool:
        """PyPI has this line's wheel for ``platform`` (``wheel_platform()`` spelling), one a C library of
        version ``glibc`` (when given) can load: its manylinux floor is at or below it. A row that records
        no platforms is taken to have wheels everywhere, as before the matrix recorded them."""
        if not self.pypi:
            return False
        if not self.wheel_platforms:
            return True
        tag = self.wheel_platforms.get(platform)
        if tag is None:
            return False
        floor = glibc_floor(tag)
        return glibc is None or floor is None or floor <= glibc

    def glibc_needed(self, platform: str) -> tuple[int, int] | None:
        """The glibc the line's wheel for ``platform`` needs (its manylinux floor); None: no such wheel, not
        recorded, or not a manylinux wheel."""
        tag = self.wheel_platforms.get(platform)
        return glibc_floor(tag) if tag else None

    def bad(self, version: str) -> KnownBad | None:
        """The known-bad entry of one patch version of this line, if any."""
        return next((kb for kb in self.known_bad if kb.version == version), None)

    def kernels_for(self, platform: str = LINUX_X86_64) -> PlatformArchs | None:
        """The kernel targets of this line's wheel for a platform (``wheel_platform()`` spelling); None
        where the matrix does not know them."""
        if platform == LINUX_X86_64:
            source = self.archs_source or self.source_ref
            return PlatformArchs(self.archs, self.ptx_isa, source, self.isolated) if self.archs else None
        return self.platform_archs.get(platform)


@record
class JetsonFeed:
    """Where onnxruntime-gpu wheels for one JetPack major come from (PyPI's aarch64 wheels lack Tegra GPUs)."""

    jetpack: str  # "6": the JetPack major
    index_url: str  # a pip index, or a page listing wheels to download
    cuda: str = ""  # the CUDA of the index's builds: "12.6"
    note: str = ""
    source: str = ""
    pip_index: bool = True  # False: a page to download a wheel from, not something `--index-url` takes


@record
class JetsonFacts:
    """The matrix's ``platforms.jetson`` section: telling a Jetson apart, and where its wheels come from."""

    l4t_jetpack: dict[str, str]  # Jetson Linux (L4T) major -> JetPack major: {"36": "6"}
    socs: dict[str, str]  # device-tree SoC -> compute capability: {"tegra234": "8.7"}
    feeds: tuple[JetsonFeed, ...] = ()
    source: str = ""
    notes: tuple[str, ...] = ()

    def jetpack_of(self, l4t: str | None) -> str | None:
        """The JetPack major of an L4T release ("36.4.3" -> "6"); None when unknown."""
        return self.l4t_jetpack.get((l4t or "").split(".")[0]) if l4t else None

    def feeds_for(self, jetpack: str | None) -> tuple[JetsonFeed, ...]:
        """The feeds for a JetPack major, else every feed (the person picks the one for their JetPack)."""
        hits = tuple(f for f in self.feeds if f.jetpack == jetpack)
        return hits or self.feeds


@record
class ReleaseMatch:
    release: Release
    exact: bool  # the version itself is listed in release.versions
    unverified: bool  # newer than every known line: the nearest known line was used
    note: str  # says which line was used and why


@record
class TorchVariant:
    cuda: str  # "12.4"; "cpu" for the CPU build
    tag: str  # "cu124"
    cudnn: str | None  # "9.1.0"
    index_url: str | None  # "https://download.pytorch.org/whl/cu124" (the PyPI default is also there)
    pypi_default: bool = False
    source: str = ""  # "wheel:<file>" when read from the wheel's METADATA, else a URL

    @property
    def cuda_major(self) -> int | None:
        return None if self.cuda == "cpu" else int(self.cuda.split(".")[0])

    @property
    def cudnn_major(self) -> int | None:
        return int(self.cudnn.split(".")[0]) if self.cudnn else None


@record
class TorchRelease:
    version: str  # "2.4"
    variants: tuple[TorchVariant, ...]
    source: str = ""
    notes: tuple[str, ...] = ()
    python: tuple[str, ...] = ()  # CPython versions with Linux x86_64 wheels ("3.8" ... "3.12"); () unknown


@record
class TorchMatch:
    release: TorchRelease
    note: str = ""  # set when the version is newer than every line and the newest line stands in for it


@record
class KernelRelease:
    """A PyPI release whose wheel carries kernels for one GPU (see :meth:`Matrix.kernel_releases`)."""

    release: Release
    version: str  # the newest patch that is not known to be bad
    coverage: Coverage
    command: str  # the exact pip command
    steps: tuple[PackageStep, ...] = ()  # the same as package steps (run by the right interpreter)


@record
class Recommendation:
    release: Release
    feed: Feed | None  # None: the PyPI default wheel
    command: str  # the exact pip command
    reason: str
    version: str = ""  # the exact onnxruntime-gpu version the command installs
    torch_variant: TorchVariant | None = None  # the torch build the choice agrees with
    # a newer line's build for the same CUDA/cuDNN majors on an alternative feed, as a pip command
    alternative: str = ""
    steps: tuple[PackageStep, ...] = ()  # the command as package steps (run by the right interpreter)
    alternative_steps: tuple[PackageStep, ...] = ()
    # how the GPU asked about runs the wheel, the worst of several (None: no GPU was given, or the
    # matrix does not know the build's kernels)
    kernels: Coverage | None = None



@record
class TensorrtBuild:
    """The TensorRT major.minor one or more onnxruntime-gpu lines' TensorRT EP was built with (sourced)."""

    lines: tuple[str, ...]  # ("1.24",): onnxruntime-gpu release lines
    tensorrt: str  # "10.14"
    cuda: tuple[int, ...] = ()  # CUDA majors of the builds the row covers (the documented table's column)
    source: str = ""

    @property
    def major(self) -> int:
        return int(self.tensorrt.split(".")[0])


@record
class TensorrtPip:
    """The pip packages of one TensorRT major for one CUDA major, and which versions PyPI has."""

    cuda_major: int
    package: str  # "tensorrt-cu13": the meta package a person installs
    libs_package: str | None  # "tensorrt-cu13-libs": the distribution that owns tensorrt_libs/
    first: str  # the first and the last version of this major on PyPI for this CUDA major
    last: str

    def spec(self, major: int) -> str:
        """``tensorrt-cu13==10.*``: the major pinned (an unpinned install takes TensorRT 11)."""
        return f"{self.package}=={major}.*"


@record
class TensorrtMajor:
    major: int  # 8, 10, 11
    libraries: tuple[LibSpec, ...]  # libnvinfer, libnvinfer_plugin, libnvonnxparser, in load order
    builder_resource: str  # "libnvinfer_builder_resource.so.10": the file's name starts so, the full version follows
    pip: dict[int, TensorrtPip] = field(default_factory=dict)  # CUDA major -> packages
    apt: tuple[str, ...] = ()  # Debian/Ubuntu runtime packages: libnvinfer10 ...
    source: str = ""
    notes: tuple[str, ...] = ()


@record
class TensorrtGpuFloor:
    """From TensorRT ``since`` on, no GPU older than compute capability ``sm`` is supported (sourced)."""

    since: str  # "10.0": the first TensorRT release without the older GPUs
    sm: int  # 70: the oldest compute capability it supports, as sm_NN
    source: str = ""

    @property
    def since_tuple(self) -> tuple[int, int]:
        parsed = parse_version(self.since)  # "10.0" (validated when the matrix is read)
        return line_key(parsed) if parsed is not None else (0, 0)


@record
class TensorrtFacts:
    """What the TensorRT EP links and where TensorRT comes from (the matrix's ``tensorrt`` section).

    The major a release needs is its ``tensorrt_needed`` (read from the wheel); the minor it was built
    with is a ``builds`` row where the documentation or the release notes name it, else unknown."""

    majors: dict[int, TensorrtMajor]
    builds: tuple[TensorrtBuild, ...] = ()
    # the GPU generations each TensorRT release dropped, oldest release first
    gpu_floors: tuple[TensorrtGpuFloor, ...] = ()
    index_url: str = ""  # where the tensorrt-cuNN-libs sdists download the real wheels from
    layouts: dict[str, str] = field(default_factory=dict)  # "pip", "tarball", "apt": where the files go
    source: str = ""
    notes: tuple[str, ...] = ()

    def gpu_floor(self, version: tuple[int, int]) -> TensorrtGpuFloor | None:
        """The oldest GPU TensorRT ``version`` (major, minor) supports, None where no release dropped one yet."""
        floors = [f for f in self.gpu_floors if f.since_tuple <= version]
        return max(floors, key=lambda f: f.since_tuple) if floors else None

    def build_for(self, line: str) -> TensorrtBuild | None:
        """The documented TensorRT build of a release line ("1.24"), or None when no source names it."""
        return next((b for b in self.builds if line in b.lines), None)

    def pip_for(self, major: int, cuda_major: int | None) -> TensorrtPip | None:
        """The pip packages of TensorRT ``major`` for ``cuda_major``, None when PyPI has none."""
        tm = self.majors.get(major)
        if tm is None or cuda_major is None:
            return None
        return tm.pip.get(cuda_major)


@record
class PackageRow:
    """A package a fix may name, with the versions PyPI has (none: it must never be named)."""

    name: str
    versions: tuple[str, ...]  # oldest first
    cuda: int | None = None  # the CUDA major its wheels are built for, where the name pins one
    note: str = ""


@record
class Matrix:
    path: str
    releases: tuple[Release, ...]  # newest first
    cuda_majors: dict[int, CudaMajor]
    cudnn_majors: dict[int, CudnnMajor]
    torch: tuple[TorchRelease, ...]
    feeds: dict[str, str] = field(default_factory=dict)  # name -> index URL ("cuda12": "https://...")
    schema: int = 1
    tensorrt: TensorrtFacts | None = None  # the `tensorrt` section (None in a matrix file without one)
    packages: dict[str, PackageRow] = field(default_factory=dict)  # name -> what PyPI has
    numpy_below_2: dict[str, str | None] = field(default_factory=dict)  # Python "3.12" -> newest numpy<2
    platforms_source: str = ""  # where the releases' wheel_platforms were read
    jetson: JetsonFacts | None = None  # the `platforms.jetson` section (None in a matrix file without one)

    # -- packages ------------------------------------------------------------------------------
    def versions_of(self, name: str) -> tuple[str, ...]:
        """The versions PyPI has of a package (any spelling of its name); () when unknown or none."""
        row = self.packages.get(_normalize(name))
        return row.versions if row is not None else ()

    def newest_matching(self, name: str, prefix: str) -> str | None:
        """The newest version of ``name`` that starts with ``prefix`` (``"8.9."``), or None."""
        hits = [v for v in self.versions_of(name) if (v + ".").startswith(prefix if prefix.endswith(".") else
                                                                           prefix + ".")]
        return max(hits, key=_version_key) if hits else None

    # -- releases ------------------------------------------------------------------------------
    def release_for(self, version: str) -> ReleaseMatch | None:
        """The release line of an installed version string (PEP 440); None when unparsable or older
        than every line. Versions newer than the newest line match it with ``unverified=True``."""
        v = parse_version(version)
        if v is None:
            return None
        if not self.releases:
            return None
        key = line_key(v)
        by_line = {_line_of(r): r for r in self.releases}
        release = by_line.get(key)
        local = f" (local build '+{v.local}': the matrix describes the PyPI wheel)" if v.local else ""
        pre = v.is_prerelease or v.is_devrelease
        if release is not None:
            exact = not pre and v.base_version in release.versions
            if exact:
                note = f"{version} is a known {release.line} release{local}"
            elif pre:
                note = f"{version} is a pre-release of the {release.line} line; its facts are assumed{local}"
            else:
                note = (f"{version} is not a patch release the matrix lists for {release.line} "
                        f"(known: {', '.join(release.versions) or 'none'}); the line's facts are used{local}")
            return ReleaseMatch(release, exact, False, note)
        newest = self.releases[0]
        if key > _line_of(newest):
            # said plainly: the line is missing, what an installed build's files tell comes from them (the
            # probes read its build info, DT_NEEDED and fatbin first) and only the rest stands in from the newest
            return ReleaseMatch(newest, False, True,
                                f"{version} is newer than every line the matrix knows: the {key[0]}.{key[1]} line "
                                f"is not in the matrix yet. What an installed build's own files tell (build info, "
                                f"DT_NEEDED, kernels) is read from them; what only the matrix keeps stands in from "
                                f"the newest line, {newest.line}, unverified{local}")
        older = [r for r in self.releases if _line_of(r) < key]
        if not older:
            return None
        nearest = older[0]  # releases are newest first
        return ReleaseMatch(nearest, False, True,
                            f"the matrix has no {key[0]}.{key[1]} line; the nearest older line, "
                            f"{nearest.line}, was used and the answer is unverified{local}")

    def build_cuda(self, version: str, cuda_major: int) -> str | None:
        """The CUDA ``major.minor`` a known release (``version`` itself listed, not a local build) was
        built with for ``cuda_major``: the PyPI wheel's, or the feed build's of that major; None when the
        matrix does not know it. Old wheels (before 1.21) do not say it themselves."""
        match = self.release_for(version)
        if match is None or not match.exact or "+" in version:
            return None
        r = match.release
        if r.cuda_major == cuda_major:
            return r.cuda
        feed = next((f for f in r.feeds if f.cuda_major == cuda_major and f.cuda[:1].isdigit() and "x" not in f.cuda
                     and (not f.versions or version in f.versions)), None)
        return feed.cuda if feed is not None else None

    # -- libraries -----------------------------------------------------------------------------
    def libraries_for(self, cuda_major: int, cudnn_major: int | None) -> tuple[LibSpec, ...]:
        """Every library an ORT build of that CUDA/cuDNN major may load, in load order."""
        cuda = self.cuda_majors.get(cuda_major)
        if cuda is None:
            return ()
        libs = list(cuda.libraries)
        cudnn = self.cudnn_majors.get(cudnn_major) if cudnn_major is not None else None
        if cudnn is not None:
            package = cudnn.packages.get(cuda_major)
            libs.extend(lib if lib.package else replace(lib, package=package)
                        for lib in cudnn.libraries)
        return tuple(libs)

    def libraries_for_release(self, release: Release, feed: Feed | None = None) -> tuple[LibSpec, ...]:
        """:meth:`libraries_for` of one release, with ``load`` taken from what its provider library
        really lists in DT_NEEDED (it changes between releases: cuDNN and NVRTC moved to lazy loading
        in 1.28). Without a recorded DT_NEEDED list the major's defaults stand."""
        cuda_major = feed.cuda_major if feed else release.cuda_major
        cudnn_major = feed.cudnn_major if feed else release.cudnn_major
        libs = self.libraries_for(cuda_major, cudnn_major)
        if feed is not None or not release.provider_needed:
            return libs
        needed = set(release.provider_needed)
        return tuple(replace(lib, load="required" if lib.soname in needed else "lazy")
                     for lib in libs)

    # -- driver --------------------------------------------------------------------------------
    def min_driver(self, cuda_version: str, os_name: str) -> str | None:
        """Minimum driver for a CUDA ``major.minor`` on ``"linux"`` or ``"windows"``."""
        parsed = parse_cuda_request(cuda_version)
        if parsed is None:
            return None
        major, minor = parsed
        cuda = self.cuda_majors.get(major)
        if cuda is None:
            return None
        if os_name == "linux":
            base, by_minor = cuda.min_driver_linux, cuda.min_driver_by_minor_linux
        elif os_name == "windows":
            base, by_minor = cuda.min_driver_windows, cuda.min_driver_by_minor_windows
        else:
            return None
        if minor is not None:
            # the highest listed minor at or below the asked one raises the floor
            best: tuple[int, str] | None = None
            for key, drv in by_minor.items():
                k_major, k_minor = (int(x) for x in key.split("."))
                if k_major == major and k_minor <= minor and (best is None or k_minor > best[0]):
                    best = (k_minor, drv)
            if best is not None:
                return best[1]
        return base

    # -- torch -----------------------------------------------------------------------------------
    def torch_release(self, version: str) -> TorchRelease | None:
        """The torch release line (``"2.4"``) of a torch version string such as ``2.4.1+cu121``."""
        v = parse_version(version)
        if v is None:
            return None
        line = f"{v.release[0]}.{v.release[1] if len(v.release) > 1 else 0}"
        return next((t for t in self.torch if t.version == line), None)

    def torch_match(self, version: str) -> TorchMatch | None:
        """The line of ``version``; for a torch newer than every line, the newest line with a note (as
        :meth:`release_for` does for onnxruntime); None when unparsable or older than every line."""
        exact = self.torch_release(version)
        if exact is not None:
            return TorchMatch(exact)
        v = parse_version(version)
        if v is None or not self.torch:
            return None
        newest = max(self.torch, key=lambda t: _version_key(t.version))
        if line_key(v) <= _version_key(newest.version)[:2]:
            return None
        return TorchMatch(newest, f"torch {version} is newer than every torch line in the matrix; its builds are "
                                  f"taken to be those of {newest.version} (unverified)")

    # -- recommendation --------------------------------------------------------------------------
    def recommend(self, cuda: str | None, torch: str | None, *, python: str | None = None,
                  gpu: tuple[int, int] | None = None, gpus: Sequence[tuple[int, int]] = (),
                  platform: str = LINUX_X86_64, driver_cuda: str | None = None,
                  glibc: tuple[int, int] | None = None) -> Recommendation | None:
        """Which onnxruntime-gpu to install with this CUDA major(.minor) and/or torch version.

        The newest build (PyPI default or alternative feed) whose CUDA major matches, whose cuDNN
        major agrees with the torch variant (when a torch version is given), that has wheels for a
        Python torch has wheels for too (for ``python``, ``"3.11"``, when given), and whose newest patch
        is not known to be bad. With ``gpu`` (a compute capability), never a wheel whose kernels for
        ``platform`` are known not to run on it: first the builds with native code for it, then those
        whose PTX ``driver_cuda`` can JIT, and only then builds whose kernels the matrix does not know
        (feed builds; the reason says so); no alternative feed build is offered then. ``gpus``: every
        GPU the build must serve (a host with several generations); ``gpu`` is one more. Only a line PyPI
        has a wheel of for ``platform`` (one whose manylinux floor ``glibc``, the C library's version, meets),
        and feed builds only on Linux x86_64 and Windows (the matrix does not know the feeds' other wheels).
        None when nothing fits.
        """
        want_cuda = parse_cuda_request(cuda) if cuda else None
        if cuda and want_cuda is None:
            return None
        variants: tuple[TorchVariant, ...] = ()
        torch_rel: TorchRelease | None = None
        torch_note = ""
        if torch:
            tm = self.torch_match(torch)
            if tm is None:
                return None
            torch_rel, torch_note = tm.release, tm.note
            variants = tuple(tv for tv in torch_rel.variants if tv.cuda_major is not None)
            tag = _torch_local_tag(torch)
            if tag:  # "2.4.1+cu121": that build only
                variants = tuple(tv for tv in variants if tv.tag == tag)
            if want_cuda is not None:
                variants = tuple(tv for tv in variants if tv.cuda_major == want_cuda[0])
            # the PyPI default first: it is what `pip install torch` gives
            variants = tuple(sorted(variants, key=lambda tv: not tv.pypi_default))
            if not variants:
                return None
        # Prefer the torch build pip gives by default, then (for a GPU) native code over PTX, then a
        # verified PyPI wheel over a feed build, then the newest line.
        wanted = tuple(dict.fromkeys([*gpus, *([gpu] if gpu is not None else [])]))
        kernels = _KernelWish(wanted, platform, driver_cuda) if wanted else None
        tiers: tuple[_Tier, ...] = ("sass", "ptx", "unknown") if kernels else ("any",)
        for variant in variants or (None,):
            for tier in tiers:
                for use_feeds in (False, True):
                    for release in self.releases:
                        if not release.has_wheel(platform, glibc):
                            continue
                        if use_feeds and platform not in FEED_PLATFORMS:
                            continue
                        if release.python and not _pythons(release, torch_rel, python):
                            continue  # no Python has wheels of both (or none for the interpreter asked about)
                        for feed in release.feeds if use_feeds else (None,):
                            rec = self._fit(release, feed, want_cuda, torch_rel, variant, kernels, tier, python)
                            if rec is not None:
                                if rec.alternative and platform not in FEED_PLATFORMS:
                                    rec = replace(rec, alternative="", alternative_steps=())
                                if torch_note:
                                    rec = replace(rec, reason=f"{rec.reason} Note: {torch_note}.")
                                return rec
        return None

    def kernel_releases(self, gpu: tuple[int, int], *, platform: str = LINUX_X86_64,
                        driver_cuda: str | None = None,
                        glibc: tuple[int, int] | None = None) -> tuple[KernelRelease, ...]:
        """Every PyPI release line, newest first, whose wheel for ``platform`` (one ``glibc`` can load) is
        known to carry kernels that run on a GPU of compute capability ``gpu`` (PTX counts when
        ``driver_cuda`` can JIT it), each with its newest patch that is not known to be bad and the pip
        command that installs it."""
        out: list[KernelRelease] = []
        for release in self.releases:
            cov = _KernelWish((gpu,), platform, driver_cuda).coverage(release)
            if not release.has_wheel(platform, glibc) or cov is None or not cov.runs:
                continue
            version = _pick_version(release, None)
            if version is not None:
                steps = install_steps(release, None, version, with_extras=True)
                out.append(KernelRelease(release, version, cov, plain_command(steps), steps))
        return tuple(out)

    def _fit(self, release: Release, feed: Feed | None, want_cuda: tuple[int, int | None] | None,
             torch_rel: TorchRelease | None, variant: TorchVariant | None,
             kernels: _KernelWish | None = None, tier: _Tier = "any",
             python: str | None = None) -> Recommendation | None:
        build_cuda = feed.cuda_major if feed else release.cuda_major
        build_cudnn = feed.cudnn_major if feed else release.cudnn_major
        if want_cuda is not None and build_cuda != want_cuda[0]:
            return None
        if feed is not None and not feed.index_url:
            return None
        if variant is not None and (variant.cuda_major != build_cuda or
                                    (variant.cudnn_major is not None and variant.cudnn_major != build_cudnn)):
            return None
        cov = None
        if kernels is not None:
            cov = kernels.coverage(release) if feed is None else None  # a feed build's kernels are unknown
            if tier == "unknown" and (cov is not None or min(kernels.gpus) < CUDA_FLOOR.get(build_cuda, (0, 0))):
                return None
            if tier in ("sass", "ptx") and (cov is None or not cov.runs or (tier == "sass" and cov.verdict != "sass")):
                return None
        version = _pick_version(release, feed)
        if version is None:
            return None
        alternative: tuple[PackageStep, ...] = ()
        if feed is None and kernels is None:
            newer = self._newest_feed_build(build_cuda, build_cudnn, release)
            if newer is not None:
                alternative = install_steps(newer[0], newer[1], newer[2], with_extras=False)
        steps = install_steps(release, feed, version, with_extras=variant is None)
        return Recommendation(
            release=release, feed=feed, version=version, torch_variant=variant,
            command=plain_command(steps),
            reason=_reason(release, feed, version, want_cuda, torch_rel, variant, cov,
                           kernels.gpus if kernels is not None else (), python),
            alternative=plain_command(alternative),
            steps=steps, alternative_steps=alternative, kernels=cov,
        )

    def _newest_feed_build(self, cuda: int, cudnn: int | None,
                           than: Release) -> tuple[Release, Feed, str] | None:
        """A feed build of a newer line than ``than`` with the same CUDA/cuDNN majors."""
        for release in self.releases:
            if _line_of(release) <= _line_of(than):
                return None
            for feed in release.feeds:
                if feed.cuda_major == cuda and feed.cudnn_major == cudnn and feed.index_url:
                    version = _pick_version(release, feed)
                    if version:
                        return release, feed, version
        return None


if TYPE_CHECKING:
    _Tier = Literal["sass", "ptx", "unknown", "any"]
else:
    _Tier = str  # the alias is the type checker's; at run time only its name is imported


@record
class _KernelWish:
    """A GPU the recommendation must run on: its compute capability, the wheel platform, the driver."""

    gpus: tuple[tuple[int, int], ...]  # compute capabilities, at least one
    platform: str
    driver_cuda: str | None

    def coverage(self, release: Release) -> Coverage | None:
        """How the GPUs run the release's wheel for the platform (the worst of them); None when the matrix
        does not know."""
        kernels = release.kernels_for(self.platform)
        if kernels is None:
            return None
        covs = [coverage(g, kernels.archs, ptx_isa=kernels.ptx_isa, driver_cuda=self.driver_cuda,
                         isolated=kernels.isolated) for g in self.gpus]
        return min(covs, key=lambda c: _VERDICT_RANK[c.verdict])


_VERDICT_RANK = {"none": 0, "ptx-driver-too-old": 1, "isolated": 2, "ptx": 3, "sass": 4}


def wheel_platform(platform: str | None, machine: str | None = None) -> str:
    """The wheel platform of the matrix for a ``sysconfig.get_platform()`` string (``"linux-x86_64"`` ->
    ``"linux_x86_64"``, ``"win-amd64"`` -> ``"win_amd64"``, ``"linux-aarch64"`` -> ``"linux_aarch64"``)."""
    text = (platform or "").lower().replace("-", "_").replace(".", "_")
    if text.startswith("win"):
        return "win_amd64" if "arm" not in text else text
    if text.startswith("linux"):
        arch = text.split("_", 1)[1] if "_" in text else (machine or "").lower()
        return "linux_aarch64" if arch in ("aarch64", "arm64") else f"linux_{arch or 'x86_64'}"
    return text


def glibc_floor(tag: str) -> tuple[int, int] | None:
    """The oldest glibc a wheel's platform tag lets pip install it on: the lowest floor of its tags
    (``manylinux_2_27_x86_64.manylinux_2_28_x86_64`` -> (2, 27); ``manylinux2014`` is 2.17, ``manylinux2010``
    2.12, ``manylinux1`` 2.5, PEP 600); None for a tag that is not manylinux (``win_amd64``)."""
    floors: list[tuple[int, int]] = []
    for part in tag.split("."):
        if part.startswith("manylinux_"):
            bits = part.split("_")
            if len(bits) >= 4 and bits[1].isdigit() and bits[2].isdigit():
                floors.append((int(bits[1]), int(bits[2])))
        else:
            legacy = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
            floors.extend(v for k, v in legacy.items() if part.startswith(k + "_"))
    return min(floors) if floors else None


def parse_glibc(libc: str | None) -> tuple[int, int] | None:
    """The glibc version of ``os.confstr("CS_GNU_LIBC_VERSION")`` (``"glibc 2.36"`` -> (2, 36)); None for
    another C library (musl) or none."""
    name, _, version = (libc or "").partition(" ")
    bits = version.split(".")
    if name != "glibc" or len(bits) < 2 or not bits[0].isdigit():
        return None
    digits = len(bits[1]) - len(bits[1].lstrip("0123456789"))  # "2.17-326", "2.35+": the leading digits
    return int(bits[0]), int(bits[1][:digits] or "0")


class PlainVersion:
    """What the model reads of a ``packaging.version.Version``, for a plain release with at most a local
    label (``1.31.1``, ``2.11.0+cu130``, ``9.19.0.56``): the versions a check meets. Importing packaging
    (with ``typing``) is ~7% of a ``check``; any other version goes through it (``parse_version``), and
    ``tests/test_plain_version.py`` compares the two."""

    __slots__ = ("local", "release")
    is_prerelease = False
    is_devrelease = False

    def __init__(self, release: tuple[int, ...], local: str | None) -> None:
        self.release = release
        self.local = local

    @property
    def base_version(self) -> str:
        return ".".join(map(str, self.release))

    def __repr__(self) -> str:
        return f"<PlainVersion({self.base_version + ('+' + self.local if self.local else '')!r})>"


# A release and a local label whose segments packaging would leave as written (a number with a leading
# zero, an upper-case letter or a "-"/"_" separator is normalised by packaging: those go through it).
# The rule; _plain_parts reads it by hand (compiling it costs more than a check's version reading), and
# tests/test_hand_matchers.py holds the two to one answer.
_PLAIN_VERSION = lazy(r"v?((?:0|[1-9][0-9]*)(?:\.(?:0|[1-9][0-9]*))*)"
                      r"(?:\+((?:[a-z0-9]*[a-z][a-z0-9]*|0|[1-9][0-9]*)"
                      r"(?:\.(?:[a-z0-9]*[a-z][a-z0-9]*|0|[1-9][0-9]*))*))?")


def _plain_number(part: str) -> bool:
    """``0|[1-9][0-9]*`` (ASCII text)."""
    return part.isdigit() and (part[0] != "0" or len(part) == 1)


def _plain_parts(s: str) -> tuple[str, str | None] | None:
    """``_PLAIN_VERSION.fullmatch(s)``'s two groups (release, local); None when it does not match."""
    if not s.isascii():  # the pattern's classes are ASCII: nothing else matches
        return None
    release, plus, local = (s[1:] if s[:1] == "v" else s).partition("+")
    if not all(_plain_number(p) for p in release.split(".")):
        return None
    if not plus:
        return release, None
    for seg in local.split("."):
        # a number, or lower-case letters and digits with at least one letter
        if not (_plain_number(seg) if seg.isdigit() else seg.isalnum() and seg.islower()):
            return None
    return release, local


def parse_version(text: str | None) -> Version | PlainVersion | None:
    """A PEP 440 version, or None. packaging is imported only for a version that is not plain."""
    if text is None:
        return None
    s = str(text).strip()
    parts = _plain_parts(s)
    if parts is not None:
        return PlainVersion(tuple(int(p) for p in parts[0].split(".")), parts[1])
    from packaging.version import InvalidVersion, Version

    try:
        return Version(s)
    except InvalidVersion:
        return None


def _normalize(name: str) -> str:
    """PEP 503 name normalisation (the one rule is formats.distinfo.normalize; the model stays import-free)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _version_key(text: str) -> tuple[int, ...]:
    """A sort key for a validated release version (the matrix holds only PEP 440 versions)."""
    v = parse_version(text)
    return v.release if v is not None else ()


def _line_of(release: Release) -> tuple[int, int]:
    v = parse_version(release.line)
    return line_key(v) if v is not None else (0, 0)


def line_key(v: Version | PlainVersion) -> tuple[int, int]:
    rel = v.release
    return (rel[0], rel[1] if len(rel) > 1 else 0)


def _torch_local_tag(version: str) -> str | None:
    v = parse_version(version)
    if v is None:
        return None
    local = v.local
    return local if local and re.fullmatch(r"cu\d+|cpu|rocm[\d.]+", local) else None


def parse_cuda_request(text: str | None) -> tuple[int, int | None] | None:
    """``"12"`` -> (12, None); ``"12.4"`` / ``"12.4.1"`` / ``"cu124"`` -> (12, 4); else None."""
    if text is None:
        return None
    t = str(text).strip().lower()
    if not t.isascii():  # Unicode digits: the patterns decide
        m = _CUDA_TAG.fullmatch(t)
        if m:
            return int(m.group(1)), int(m.group(2))
        m = _CUDA_VERSION.fullmatch(t)
        if not m:
            return None
        minor = m.group(2)
        return int(m.group(1)), (int(minor) if minor and minor != "x" else None)
    if len(t) == 5 and t[:2] == "cu" and t[2:].isdigit():
        return int(t[2:4]), int(t[4])
    parts = t.split(".")
    if len(parts) > 3 or not (parts[0].isdigit() and len(parts[0]) <= 2):
        return None
    minor_ok = len(parts) > 1 and (parts[1] == "x" or (parts[1].isdigit() and len(parts[1]) <= 2))
    if len(parts) == 3 and not (minor_ok and parts[2].isdigit()):
        return None
    if len(parts) == 2 and not minor_ok:
        # "12.345": the minor takes at most two digits, so the pattern reads ".345" as the patch
        return (int(parts[0]), None) if parts[1].isdigit() else None
    minor = parts[1] if len(parts) > 1 else None
    return int(parts[0]), (int(minor) if minor and minor != "x" else None)


# The rules parse_cuda_request reads by hand (tests/test_hand_matchers.py holds the two to one answer).
_CUDA_TAG = lazy(r"cu(\d{2})(\d)")
_CUDA_VERSION = lazy(r"(\d{1,2})(?:\.(\d{1,2}|x))?(?:\.\d+)?")


def parse_torch_request(text: str | None) -> Version | PlainVersion | None:
    """A torch version string (``2.4``, ``2.4.1+cu121``) as a Version; None when unparsable."""
    return parse_version(text) if text else None


def _pick_version(release: Release, feed: Feed | None) -> str | None:
    """The newest patch of the line (on that feed) that is not known to be bad."""
    candidates = list(feed.versions) if feed and feed.versions else list(release.versions)
    good = [v for v in candidates if release.bad(v) is None]
    if not good:
        return None
    return max(good, key=_version_key)


#: What the onnxruntime-gpu wheels require from PyPI; an alternative feed does not mirror them.
_DEFAULT_PLAIN_DEPS = ("flatbuffers", "numpy", "packaging", "protobuf", "sympy")


def install_steps(release: Release, feed: Feed | None, version: str, *,
                  with_extras: bool) -> tuple[PackageStep, ...]:
    """The package steps that install ``version`` of the line (from ``feed`` when given)."""
    if feed is not None and feed.index_url:
        deps = release.requires or _DEFAULT_PLAIN_DEPS
        if "sympy" not in deps:  # moved to the `symbolic` extra in 1.24+, still needed by the tools
            deps = (*deps, "sympy")
        # The feed carries onnxruntime-gpu only: its dependencies come from PyPI first.
        return (PackageStep("install", tuple(deps)),
                PackageStep("install", (f"onnxruntime-gpu=={version}", "--index-url", feed.index_url)))
    extras = with_extras and "cuda" in release.extras and "cudnn" in release.extras
    return (PackageStep("install", (f"onnxruntime-gpu[cuda,cudnn]=={version}" if extras
                                    else f"onnxruntime-gpu=={version}",)),)


def plain_command(steps: tuple[PackageStep, ...]) -> str:
    """The steps as bare ``pip`` commands, for ``ortdoctor matrix`` (no environment to name), each quoted
    by :mod:`ortdoctor.core.shell`."""
    from ortdoctor.core.shell import posix_join

    return " && ".join(posix_join(["pip", s.verb, *s.args]) for s in steps)


def python_line(version: str | None) -> str | None:
    """``"3.11"`` of ``"3.11.7"`` (or of ``"3.11"``); None when it is not a version."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _pythons(release: Release, torch_rel: TorchRelease | None, python: str | None) -> list[str]:
    """The Python versions the release has wheels for, narrowed to torch's and to ``python``."""
    out = list(release.python)
    if torch_rel is not None and torch_rel.python:
        out = [p for p in out if p in torch_rel.python]
    line = python_line(python)
    if line is not None:
        out = [p for p in out if p == line]
    return out


def _reason(release: Release, feed: Feed | None, version: str, want_cuda: tuple[int, int | None] | None,
            torch_rel: TorchRelease | None, variant: TorchVariant | None, cov: Coverage | None = None,
            gpus: tuple[tuple[int, int], ...] = (), python: str | None = None) -> str:
    cuda = feed.cuda if feed else release.cuda
    cudnn_major = feed.cudnn_major if feed else release.cudnn_major
    where = f"the CUDA {feed.cuda} feed ({feed.index_url})" if feed else "PyPI (the default build)"
    parts = [f"onnxruntime-gpu {version} from {where} is built for CUDA {cuda} and cuDNN {cudnn_major}"]
    if want_cuda is not None:
        parts.append(f"it works with any CUDA {want_cuda[0]}.x runtime (minor-version compatibility)")
    if torch_rel is not None and variant is not None:
        where_t = "the PyPI default" if variant.pypi_default else f"from {variant.index_url}"
        parts.append(f"torch {torch_rel.version} {variant.tag} ({where_t}) uses the same CUDA "
                     f"{variant.cuda_major} and cuDNN {variant.cudnn_major or cudnn_major} majors"
                     + (f" (cuDNN {variant.cudnn})" if variant.cudnn and "." in variant.cudnn else "")
                     + ", so one set of "
                     "CUDA/cuDNN libraries serves both: import torch before creating the session, "
                     "or preload")
    if feed is not None:
        parts.append("use --index-url, not --extra-index-url: with both indexes pip takes PyPI's "
                     "build of the same version")
    if cov is not None and cov.verdict == "sass":
        parts.append(f"it carries native code for {cov.sm} ({', '.join(cov.sass)})")
    elif cov is not None:
        parts.append(f"it has no native code for {cov.sm}: the driver JIT-compiles its PTX "
                     f"({', '.join(cov.ptx)}) at first use, so the first runs are slow (the results are cached)")
    elif gpus:
        sms = ", ".join(f"sm_{g[0]}{g[1]}" for g in gpus)
        parts.append(f"the matrix does not record which GPUs this build has kernels for, and no build it does "
                     f"know fits with kernels for {sms}: check the GPU with `ortdoctor check` after installing")
    pythons = _pythons(release, torch_rel, python)
    if pythons:
        both = f" (those torch {torch_rel.version} has wheels for too)" if torch_rel is not None and torch_rel.python \
            and pythons != list(release.python) else ""
        parts.append(f"wheels exist for Python {', '.join(pythons)}{both}")
    return "; ".join(parts) + "."


