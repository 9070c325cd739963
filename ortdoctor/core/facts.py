"""Plain data that the probes return and the resolver, the findings and the renderers consume.

Every type here is a frozen dataclass of strings, numbers, tuples and other such dataclasses, so a
whole inspected environment can be built by hand in a test, compared, and turned into JSON with
:func:`to_jsonable`. Nothing in this module touches the file system.
"""

from __future__ import annotations

import enum

from ortdoctor.core.finding_ids import FindingId
from ortdoctor.core.record import field, field_names, record
from ortdoctor.core.shell import Command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

if TYPE_CHECKING:
    Severity = Literal["error", "warning", "info"]
else:
    Severity = str  # the alias is the type checker's; at run time only its name is imported

#: Where a library candidate came from, in the report contract's words.
if TYPE_CHECKING:
    Source = Literal["loaded", "directory", "torch", "nvidia-wheel", "conda", "cuda-home", "system"]
else:
    Source = str  # the alias is the type checker's; at run time only its name is imported


# --------------------------------------------------------------------------------------------------
# Binaries
# --------------------------------------------------------------------------------------------------
@record
class ElfInfo:
    """What the dynamic section of one ELF shared object says (see :mod:`ortdoctor.formats.elf`)."""

    path: str
    machine: str  # "x86_64", "aarch64", ... or "unknown(<e_machine>)"
    bits: int  # 32 or 64
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    # RPATH/RUNPATH has an empty entry ("a:" or "a::b"), which glibc searches as the current directory
    # (measured with glibc 2.36); rpath and runpath above leave it out
    search_path_has_cwd: bool = False


@record
class PeInfo:
    """The import table of one Windows DLL (see :mod:`ortdoctor.formats.pe`)."""

    path: str
    machine: str  # "x86_64", "arm64", "x86", or "unknown(<machine>)"
    imports: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------------
# Python and platform
# --------------------------------------------------------------------------------------------------
@record
class PythonInfo:
    version: str  # "3.11.7"
    executable: str
    implementation: str  # "CPython"
    platform: str  # sysconfig.get_platform(): "linux-x86_64", "win-amd64"
    machine: str  # platform.machine(): "x86_64", "aarch64", "AMD64"
    os: str  # "linux", "windows", "darwin", ...
    libc: str | None = None  # "glibc 2.36"
    venv: str | None = None  # sys.prefix when it differs from sys.base_prefix
    conda_prefix: str | None = None
    container: tuple[str, ...] = ()  # hints: "/.dockerenv", "cgroup:docker", "KUBERNETES_SERVICE_HOST"
    wsl: bool = False
    site_dirs: tuple[str, ...] = ()  # every directory on sys.path that can hold distributions
    # directories of the import path (or onnxruntime/, its capi/, nvidia/ in one) this user cannot read
    unreadable: tuple[str, ...] = ()
    multiprocessing_start_method: str | None = None
    # How packages get into this interpreter's environment (what every fix command must use).
    prefix: str | None = None  # sys.prefix
    has_pip: bool | None = None  # pip is installed for this interpreter (None: not looked at)
    pip_on_path: str | None = None  # the `pip` a shell runs first
    pip_on_path_python: str | None = None  # the interpreter that `pip` installs into (from its launcher)
    uv_on_path: str | None = None  # the `uv` a shell runs first
    virtual_env: str | None = None  # $VIRTUAL_ENV: the venv the shell has activated
    inspected_other: bool = False  # --python: not the interpreter ortdoctor itself runs in
    hook_pth: str | None = None  # ortdoctor's .pth file in a site directory: every start preloads
    base_executable: str | None = None  # the interpreter a venv was made from (its pip reaches the user site)
    user_site: str | None = None  # the user site directory this interpreter reads (pip install --user)
    venv_creator: str | None = None  # "uv" for a venv `uv venv` made (its pyvenv.cfg says so)
    env_manager: str | None = None  # "pixi", "poetry" or "conda": the tool whose project owns the environment


# --------------------------------------------------------------------------------------------------
# onnxruntime family
# --------------------------------------------------------------------------------------------------
@record
class OrtDistribution:
    """One installed distribution that owns files under ``onnxruntime/`` (or ``onnxruntime_genai/``)."""

    name: str  # as in METADATA: "onnxruntime-gpu"
    version: str
    location: str  # the site directory that holds its .dist-info
    dist_info: str  # path of the .dist-info directory
    # True when the pybind module on disk matches this distribution's RECORD hash, False when it does
    # not (another distribution overwrote it), None when it could not be told (no RECORD, no hash).
    owns_files_on_disk: bool | None = None
    requires: tuple[str, ...] = ()  # Requires-Dist lines, verbatim
    installer: str | None = None  # INSTALLER file ("pip", "uv", ...)
    index_url: str | None = None  # from direct_url.json when present
    problems: tuple[str, ...] = ()  # "RECORD missing", "METADATA unreadable: ..." ...


@record
class ProviderKernels:
    """The GPU architectures a CUDA library carries kernels for, read from its fatbin headers (see
    :mod:`ortdoctor.formats.fatbin`): the truth for any build, PyPI wheel or local."""

    path: str
    archs: tuple[str, ...] = ()  # SASS "sm_75", "sm_90a", then PTX "compute_90": the matrix's `archs` form
    ptx_isa: str | None = None  # the newest PTX ISA version of its PTX ("8.2"); None without PTX
    containers: int = 0  # fatbin containers (one per translation unit)
    # Targets that only some containers carry -> how many do: the kernels of the others have no image
    # for it (a hint: the union of targets can hide per-kernel gaps, which arch-gated kernels explain).
    uneven: dict[str, int] = field(default_factory=dict)
    # Targets found only in containers that hold nothing but arch-specific targets (sm_90a-only kernels):
    # the build's general kernels have no image for them (see ortdoctor.decide.kernels.coverage).
    isolated: tuple[str, ...] = ()
    error: str | None = None  # the headers could not be read: why (archs is then empty)


@record
class OrtInfo:
    installed: bool
    distributions: tuple[OrtDistribution, ...] = ()
    package_dir: str | None = None  # .../site-packages/onnxruntime
    active: str | None = None  # the distribution whose files are on disk
    version: str | None = None  # __version__ from build_and_package_info.py (else the dist version)
    package_name: str | None = None  # package_name from build_and_package_info.py
    cuda_version: str | None = None  # "13.0"; None for a CPU build or when unknown
    cudnn_major: int | None = None  # from METADATA extras, the TensorRT provider's NEEDED, or the matrix
    is_gpu_build: bool = False  # libonnxruntime_providers_cuda.so / onnxruntime_providers_cuda.dll exists
    cuda_provider: ElfInfo | PeInfo | None = None
    tensorrt_provider: ElfInfo | PeInfo | None = None
    pybind: ElfInfo | PeInfo | None = None
    build_info_path: str | None = None
    build_info_error: str | None = None  # why build_and_package_info.py could not be read
    # Other CUDA-linked ORT-family libraries (onnxruntime_genai, ...), for mixed-major checks.
    other_cuda_libraries: tuple[ElfInfo | PeInfo, ...] = ()
    problems: tuple[str, ...] = ()
    # The CUDA provider's kernel architectures (None: not read, e.g. by the preload path, or no provider).
    kernels: ProviderKernels | None = None


# --------------------------------------------------------------------------------------------------
# PyTorch
# --------------------------------------------------------------------------------------------------
@record
class TorchInfo:
    version: str  # "2.11.0+cu130"
    cuda: str | None  # "13.0"; None for a CPU build
    cudnn: str | None  # "9.19.0" when known (the nvidia-cudnn wheel it depends on), else None
    lib_dir: str | None
    location: str  # site directory
    requires: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------------
# NVIDIA wheels
# --------------------------------------------------------------------------------------------------
@record
class NvidiaWheel:
    name: str  # "nvidia-cuda-runtime", "nvidia-cudnn-cu13"
    version: str
    location: str  # site directory
    lib_dirs: tuple[str, ...] = ()  # absolute directories holding its shared libraries
    sonames: tuple[str, ...] = ()  # file names of the shared libraries it ships (libcudart.so.13, ...)
    cuda_major: int | None = None  # 12 for "-cu12", 13 for "-cu13" or the unsuffixed 13.x layout
    # (absolute path, size RECORD promises) of each shared library it ships: a truncated or replaced file
    # is told before anything maps it (mapping past a file's end kills the process with SIGBUS)
    sizes: tuple[tuple[str, int], ...] = ()


# --------------------------------------------------------------------------------------------------
# TensorRT (see ortdoctor.probes.tensorrt)
# --------------------------------------------------------------------------------------------------
@record
class TensorrtLibrary:
    """One TensorRT library file found under its soname (a symlink in a tarball or apt install)."""

    name: str  # "nvinfer", "nvinfer_plugin", "nvonnxparser"
    soname: str  # "libnvinfer.so.10"
    path: str
    realpath: str
    version: str | None = None  # from the real file's name: libnvinfer.so.10.9.0 -> "10.9.0"
    needed: tuple[str, ...] = ()  # DT_NEEDED (CUDA sonames tell the CUDA major a tarball was built for)


@record
class TensorrtInstall:
    """The TensorRT libraries of one major in one directory: a pip ``tensorrt_libs/``, a tarball's ``lib/``
    on LD_LIBRARY_PATH, or the apt packages' files in the ld.so cache."""

    directory: str
    origin: str  # "pip", "LD_LIBRARY_PATH" or "ld.so.cache"
    major: int
    libraries: tuple[TensorrtLibrary, ...] = ()
    builder_resources: tuple[str, ...] = ()  # file names: libnvinfer_builder_resource.so.10.9.0
    version: str | None = None  # the most precise version known
    version_source: str | None = None  # "tensorrt-cu13-libs 10.16.1.11", "file names", "dpkg libnvinfer10"
    distribution: str | None = None  # the pip distribution that owns the files: "tensorrt-cu13-libs"
    cuda_major: int | None = None  # the CUDA major it was built for, where something says so
    cuda_source: str | None = None  # "-cu13 package name", "dpkg version 10.14.1.48-1+cuda12.9", "DT_NEEDED"

    def library(self, name: str) -> TensorrtLibrary | None:
        return next((lib for lib in self.libraries if lib.name == name), None)


@record
class TensorrtDistribution:
    """A pip distribution of TensorRT (the meta package, -libs, -bindings), files or not."""

    name: str  # "tensorrt-cu13"
    version: str
    location: str


@record
class TensorrtInfo:
    installs: tuple[TensorrtInstall, ...] = ()  # pip first (site order), then LD_LIBRARY_PATH, then the cache
    distributions: tuple[TensorrtDistribution, ...] = ()
    problems: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------------
# Plugin execution providers (see ortdoctor.probes.plugin_eps)
# --------------------------------------------------------------------------------------------------
@record
class PluginEpPackage:
    """One installed ``onnxruntime-ep-*`` distribution and the shared libraries it bundles."""

    name: str  # "onnxruntime-ep-nv-tensorrt-rtx-cu13"
    version: str
    location: str
    import_name: str | None = None  # "onnxruntime_ep_nv_tensorrt_rtx"
    libraries: tuple[ElfInfo | PeInfo, ...] = ()  # every bundled shared library, as its headers say
    provider_library: str | None = None  # the file registered with register_execution_provider_library
    ep_names: tuple[str, ...] = ()  # "*ExecutionProvider" names its __init__.py spells out
    # What its __init__.py visibly does at import, read as text (never run): "sets LD_LIBRARY_PATH", ...
    import_effects: tuple[str, ...] = ()
    # Bundled library files whose name (or its stem, "libcudart") appears in the package's Python code:
    # files the package may load by path. A bundled file no code names is loaded only through the search.
    named_in_python: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


@record
class PluginEpInfo:
    packages: tuple[PluginEpPackage, ...] = ()
    # onnxruntime's build-info string ("ORT Build Info: git-branch=..., cuda-plugin-ep=1, ..."), read from
    # the pybind module's read-only data; get_build_info() returns it
    build_info: str | None = None
    build_info_path: str | None = None
    cuda_plugin_ep: bool | None = None  # the build info carries cuda-plugin-ep=; None: not read


# --------------------------------------------------------------------------------------------------
# System search locations
# --------------------------------------------------------------------------------------------------
@record
class SearchDir:
    """One directory the loader or ortdoctor may search, annotated for the report."""

    path: str
    origin: str  # "LD_LIBRARY_PATH", "ld.so.cache", "default", "CUDA_HOME", "conda", "PATH", ...
    exists: bool = True
    relative: bool = False  # the entry was relative (resolved against the cwd by the loader!)
    world_writable: bool = False
    foreign_owner: bool = False  # owned by a non-root user other than the current one
    note: str | None = None  # "empty entry = current directory", "CUDA 12 toolkit", ...


@record
class SystemInfo:
    conda_prefix: str | None = None
    cuda_home: str | None = None
    cuda_path: str | None = None
    cudnn_path: str | None = None
    ld_library_path: tuple[SearchDir, ...] = ()
    # soname -> paths, as `ldconfig -p` would list them (read from /etc/ld.so.cache, not by running it)
    ldconfig: dict[str, tuple[str, ...]] = field(default_factory=dict)
    default_dirs: tuple[SearchDir, ...] = ()
    windows_path: tuple[SearchDir, ...] = ()
    problems: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------------
class DriverError(str, enum.Enum):
    LIBRARY_NOT_FOUND = "library-not-found"  # no libnvidia-ml.so.1 / nvml.dll: no driver installed
    DRIVER_NOT_LOADED = "driver-not-loaded"  # library present, kernel module absent
    LIB_RM_VERSION_MISMATCH = "lib-rm-version-mismatch"  # upgraded without a reboot
    NO_PERMISSION = "no-permission"
    GPU_IS_LOST = "gpu-is-lost"
    OTHER = "other"


@record
class Device:
    index: int  # NVML index (physical order)
    name: str
    uuid: str | None = None
    compute_capability: str | None = None  # "9.0"
    memory_total_mib: int | None = None
    memory_free_mib: int | None = None
    compute_mode: str | None = None  # "default", "exclusive-process", "prohibited"


@record
class DriverInfo:
    available: bool
    version: str | None = None  # "580.159.04"
    cuda_version: str | None = None  # "13.0": the highest CUDA the driver supports
    error: str | None = None
    error_kind: DriverError | None = None
    devices: tuple[Device, ...] = ()
    cuda_visible_devices: str | None = None  # the raw variable, None when unset
    nvidia_visible_devices: str | None = None
    libcuda: tuple[str, ...] = ()  # where libcuda.so.1 / nvcuda.dll was seen
    dev_nodes: tuple[str, ...] = ()  # /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm, /dev/dxg
    kernel_module_version: str | None = None  # from /proc/driver/nvidia/version


# --------------------------------------------------------------------------------------------------
# The whole environment
# --------------------------------------------------------------------------------------------------
@record
class JetsonInfo:
    """An NVIDIA Jetson (Tegra SoC, integrated GPU) as Jetson Linux (L4T) describes itself."""

    l4t: str | None  # the Jetson Linux release: "36.4.3" (/etc/nv_tegra_release, else nvidia-l4t-core's version)
    model: str | None  # /proc/device-tree/model: "NVIDIA Jetson AGX Orin Developer Kit"
    soc: str | None  # the SoC from /proc/device-tree/compatible: "tegra234"
    evidence: tuple[str, ...] = ()  # the files that said so


@record
class Environment:
    python: PythonInfo
    ort: OrtInfo
    torch: TorchInfo | None
    nvidia_wheels: tuple[NvidiaWheel, ...]
    system: SystemInfo
    driver: DriverInfo
    # realpaths of shared objects already mapped in the inspecting process (from /proc/self/maps)
    mapped: tuple[str, ...] = ()
    tensorrt: TensorrtInfo = field(default_factory=TensorrtInfo)
    plugins: PluginEpInfo = field(default_factory=PluginEpInfo)
    jetson: JetsonInfo | None = None  # None: not a Jetson (or nothing says so)


# --------------------------------------------------------------------------------------------------
# Findings
# --------------------------------------------------------------------------------------------------
@record
class PackageStep:
    """One package command of a fix: ``pip install``/``pip uninstall`` with these arguments, run by the
    inspected interpreter (``ortdoctor fix --yes`` runs them; the finding's ``fix`` text shows them)."""

    verb: Literal["install", "uninstall"]
    args: tuple[str, ...]  # requirement specs and options, in order
    python: str | None = None  # run by this interpreter's pip (None: the inspected one's)


@record
class Finding:
    id: FindingId  # stable kebab-case slug, documented in docs/findings.md
    severity: Severity
    title: str  # one line a person reads first
    detail: str  # what was seen: versions, paths, file names
    fix: str | None  # the exact command(s) or change that resolves it
    steps: tuple[PackageStep, ...] = ()  # the package commands of the fix, when it is one
    commands: tuple[Command, ...] = ()  # every command line of ``fix``, as argument vectors (core/shell.py)


@record
class Match:
    """One recognised failure in a text (see :mod:`ortdoctor.diagnose.classify`)."""

    finding_id: FindingId
    what: str  # what happened, with the names from the message
    why: str
    fix: str
    evidence: str  # the line that matched (colour codes removed, shortened)
    details: dict[str, str] = field(default_factory=dict)  # soname, code, cuda_major, ...
    consequence: bool = False  # True for "the EP was not used" lines that follow a real cause
    packages: tuple[str, ...] = ()  # the PyPI package specs the fix tells pip to install

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.finding_id,
            "what": self.what,
            "why": self.why,
            "fix": self.fix,
            "evidence": self.evidence,
            "details": dict(self.details),
            "consequence": self.consequence,
            "packages": list(self.packages),
        }



def to_jsonable(value: Any) -> Any:
    """Turn facts (nested dataclasses, enums, tuples, dicts) into JSON-ready Python values."""
    names = field_names(value)
    if names is not None:
        return {name: to_jsonable(getattr(value, name)) for name in names}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------------
# The resolver's plan (see :mod:`ortdoctor.decide.resolve`)
# --------------------------------------------------------------------------------------------------
@record
class Candidate:
    """One file that could satisfy a soname, with where it came from and why it was not taken."""

    path: str
    source: Source
    version: str | None = None
    rejected: str | None = None  # None for the chosen candidate and for acceptable alternatives


@record
class LibraryPlan:
    name: str  # component key from the matrix: "cudart", "cublas", "cublasLt", "cudnn", "cudnn_graph", ...
    soname: str  # "libcudart.so.13" (Windows: the DLL name)
    required: bool  # True: DT_NEEDED of the provider (load-time); False: dlopen'd lazily by ORT or cuDNN
    chosen: Candidate | None
    candidates: tuple[Candidate, ...] = ()
    # Files of the same component present only for another CUDA/cuDNN major (drives *-major-mismatch).
    other_major: tuple[Candidate, ...] = ()
    skipped: str | None = None  # why it is not to be loaded at all ("--no-cudnn")


@record
class Plan:
    cuda_major: int | None
    cudnn_major: int | None
    directory: str | None  # preload_dlls semantics: None, "" or a path
    libraries: tuple[LibraryPlan, ...] = ()  # in load (dependency) order
    findings: tuple[Finding, ...] = ()  # what the resolver itself noticed (unsafe or relative dirs, ...)
    searched: tuple[str, ...] = ()  # every directory of the search order, in order, each once
