"""Decide which file to load for every CUDA and cuDNN library the installed onnxruntime build needs.

:func:`resolve` is a pure function of the inspected facts (:class:`~ortdoctor.core.facts.Environment`),
the matrix's library list and a :class:`DirIndex` (which files exist in which candidate directory,
and whether that directory is safe). The only impure helper, :func:`index_dirs`, lists directories;
:func:`search_dirs` says which ones to list. Tests build a ``DirIndex`` by hand or from ``tmp_path``.

Search order (the same for every library, so one source can serve the whole set):

``loaded`` (already mapped in this process) -> ``directory`` (explicit) -> ``torch`` (its ``lib``
dir, only when its CUDA and cuDNN majors match the build) -> ``nvidia-wheel`` (every site directory,
both wheel layouts) -> ``conda`` -> ``cuda-home`` (CUDA_HOME, CUDA_PATH, CUDNN_PATH) -> ``system``
(LD_LIBRARY_PATH, the ld.so cache, the default directories).

``directory`` follows ``onnxruntime.preload_dlls``: ``None`` is the whole order, ``""`` is the NVIDIA
wheels then the system, a path is that directory then the system.
"""

from __future__ import annotations

import functools
import ntpath
import os
import posixpath
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ortdoctor.core.facts import Candidate, Environment, Finding, LibraryPlan, Plan, Source

if TYPE_CHECKING:
    from ortdoctor.decide.matrix import LibSpec

__all__ = [
    "BUILTIN",
    "BuiltinLib",
    "DirIndex",
    "DirListing",
    "DirectoryError",
    "SearchTier",
    "builtin_libraries",
    "index_dirs",
    "libraries_for",
    "resolve",
    "search_dirs",
    "version_from_filename",
]

# The libraries of the NVIDIA driver are never preloaded: they must match the kernel module.
DRIVER_SONAMES = frozenset({"libcuda.so.1", "libnvidia-ml.so.1", "nvcuda.dll", "nvml.dll"})

_SOURCE_RANK: dict[str, int] = {
    "loaded": 0, "directory": 1, "torch": 2, "nvidia-wheel": 3, "conda": 4, "cuda-home": 5, "system": 6,
}


class DirectoryError(RuntimeError, ValueError):
    """The ``directory`` argument cannot be used (it does not exist, or cannot be resolved).

    A RuntimeError, as ``onnxruntime.preload_dlls`` raises for a missing directory.
    """


# --------------------------------------------------------------------------------------------------
# The library list: the matrix, with a built-in copy of its CUDA 12/13 and cuDNN 8/9 rows
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BuiltinLib:
    """Same fields as :class:`ortdoctor.decide.matrix.LibSpec`, without importing the matrix module (and YAML):
    ``import ortdoctor.hook`` must cost little more than the dlopens themselves."""

    name: str
    soname: str
    windows_dll: str | None
    load: str
    package: str | None
    linux_dirs: tuple[str, ...]
    windows_dirs: tuple[str, ...]
    version_function: str | None = None
    depends: tuple[str, ...] = ()
    sublibrary_of: str | None = None


if TYPE_CHECKING:
    Spec = LibSpec | BuiltinLib


class _BuiltinMatrix:
    """Stands in for a Matrix where only the library rows are needed (the hook's fast path)."""

    def libraries_for(self, cuda_major: int, cudnn_major: int | None) -> tuple[Spec, ...]:
        return builtin_libraries(cuda_major, cudnn_major)


#: Pass as ``matrix`` to use the built-in library rows instead of reading compat_matrix.yaml.
BUILTIN = _BuiltinMatrix()

def _cuda_specs(major: int) -> tuple[Spec, ...]:
    if major >= 13:
        lin = ("nvidia/cu13/lib",)
        win = ("nvidia/cu13/bin/x86_64", "nvidia/cu13/bin/arm64")
        dirs = dict.fromkeys(("cublas", "nvrtc", "curand", "cufft", "cudart"), (lin, win))
        pkgs = {"cublas": "nvidia-cublas", "nvrtc": "nvidia-cuda-nvrtc", "curand": "nvidia-curand",
                "cufft": "nvidia-cufft", "cudart": "nvidia-cuda-runtime"}
        cufft, nvrtc_dll = 12, f"nvrtc64_{major}0_0.dll"
    else:
        dirs = {
            "cublas": (("nvidia/cublas/lib",), ("nvidia/cublas/bin",)),
            "nvrtc": (("nvidia/cuda_nvrtc/lib",), ("nvidia/cuda_nvrtc/bin",)),
            "curand": (("nvidia/curand/lib",), ("nvidia/curand/bin",)),
            "cufft": (("nvidia/cufft/lib",), ("nvidia/cufft/bin",)),
            "cudart": (("nvidia/cuda_runtime/lib",), ("nvidia/cuda_runtime/bin",)),
        }
        pkgs = {"cublas": f"nvidia-cublas-cu{major}", "nvrtc": f"nvidia-cuda-nvrtc-cu{major}",
                "curand": f"nvidia-curand-cu{major}", "cufft": f"nvidia-cufft-cu{major}",
                "cudart": f"nvidia-cuda-runtime-cu{major}"}
        cufft, nvrtc_dll = major - 1, f"nvrtc64_{major}0_0.dll"
    return (
        BuiltinLib("cublasLt", f"libcublasLt.so.{major}", f"cublasLt64_{major}.dll", "required", pkgs["cublas"],
                *dirs["cublas"], version_function="cublasLtGetVersion"),
        BuiltinLib("cublas", f"libcublas.so.{major}", f"cublas64_{major}.dll", "required", pkgs["cublas"],
                *dirs["cublas"], version_function="cublasGetVersion_v2", depends=("cublasLt",)),
        BuiltinLib("nvrtc", f"libnvrtc.so.{major}", nvrtc_dll, "lazy", pkgs["nvrtc"], *dirs["nvrtc"],
                version_function="nvrtcVersion"),
        BuiltinLib("curand", "libcurand.so.10", "curand64_10.dll", "required", pkgs["curand"], *dirs["curand"],
                version_function="curandGetVersion"),
        BuiltinLib("cufft", f"libcufft.so.{cufft}", f"cufft64_{cufft}.dll", "lazy", pkgs["cufft"], *dirs["cufft"],
                version_function="cufftGetVersion"),
        BuiltinLib("cudart", f"libcudart.so.{major}", f"cudart64_{major}.dll", "required", pkgs["cudart"],
                *dirs["cudart"], version_function="cudaRuntimeGetVersion"),
    )


def _cudnn_specs(major: int, cuda_major: int) -> tuple[Spec, ...]:
    pkg = f"nvidia-cudnn-cu{cuda_major}"
    lin, win = ("nvidia/cudnn/lib",), ("nvidia/cudnn/bin",)
    subs = (
        ("graph", "ops", "cnn", "adv", "heuristic", "engines_precompiled", "engines_runtime_compiled")
        if major >= 9
        else ("ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train")
    )
    main = BuiltinLib("cudnn", f"libcudnn.so.{major}", f"cudnn64_{major}.dll", "lazy", pkg, lin, win,
                   version_function="cudnnGetVersion", depends=("cublasLt",))
    return (main, *(
        BuiltinLib(f"cudnn_{s}", f"libcudnn_{s}.so.{major}", f"cudnn_{s}64_{major}.dll", "lazy", pkg, lin, win,
                sublibrary_of="cudnn")
        for s in subs
    ))


def builtin_libraries(cuda_major: int, cudnn_major: int | None) -> tuple[Spec, ...]:
    """The CUDA 12/13 and cuDNN 8/9 library rows, for when no matrix file can be read.

    Load order is onnxruntime's (cublasLt, cublas, nvrtc, curand, cufft, cudart, cudnn), then the cuDNN
    sub-libraries.
    """
    specs = _cuda_specs(cuda_major)
    if cudnn_major is not None:
        specs += _cudnn_specs(cudnn_major, cuda_major)
    return specs


def libraries_for(matrix: object | None, cuda_major: int, cudnn_major: int | None) -> tuple[Spec, ...]:
    """``matrix.libraries_for(...)``, or :func:`builtin_libraries` when there is no usable matrix."""
    if matrix is not None:
        try:
            specs = matrix.libraries_for(cuda_major, cudnn_major)  # type: ignore[attr-defined]
        except (NotImplementedError, KeyError, LookupError, AttributeError):
            specs = ()
        if specs:
            return tuple(specs)
    return builtin_libraries(cuda_major, cudnn_major)


# --------------------------------------------------------------------------------------------------
# Directory index: the one place that touches the file system
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DirListing:
    """One directory as listed, with what makes it unsafe to load from."""

    path: str  # as searched (absolute)
    exists: bool
    realpath: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)  # file name -> realpath of the file
    world_writable: bool = False  # writable by anyone and not sticky: anyone can plant a library
    foreign_owner: int | None = None  # uid of a non-root owner other than the current user
    unsafe_files: Mapping[str, str] = field(default_factory=dict)  # file name -> why the file is unsafe


DirIndex = Mapping[str, DirListing]


def _unsafe_reason(st: os.stat_result, uid: int) -> tuple[bool, int | None]:
    world = bool(st.st_mode & stat.S_IWOTH) and not (st.st_mode & stat.S_ISVTX)
    foreign = st.st_uid if st.st_uid not in (0, uid) else None
    return world, foreign


def index_dirs(
    dirs: Iterable[str], *, stems: Iterable[str] | None = None, uid: int | None = None
) -> dict[str, DirListing]:
    """List each absolute directory once (files only, symlinks resolved) with its safety attributes.

    ``stems`` (``"libcudart.so"``, ...) keeps only the files of those components, so a system
    directory with thousands of libraries costs one ``listdir``. A symlinked directory is judged by its
    target, so a link into ``/tmp`` counts as ``/tmp``.
    """
    wanted = tuple(stems) if stems is not None else None
    wanted_dot = tuple(w + "." for w in wanted) if wanted is not None else None
    me = os.getuid() if uid is None and hasattr(os, "getuid") else (uid or 0)
    out: dict[str, DirListing] = {}
    for d in dirs:
        if d in out:
            continue
        if not d or not os.path.isabs(d):
            out[d] = DirListing(d, exists=False)
            continue
        real = os.path.realpath(d)
        try:
            st = os.stat(real)
            names = os.listdir(real)
        except OSError:
            out[d] = DirListing(d, exists=False, realpath=real)
            continue
        world, foreign = _unsafe_reason(st, me)
        files: dict[str, str] = {}
        unsafe: dict[str, str] = {}
        for name in names:
            if ".so" not in name and not name.lower().endswith(".dll"):
                continue
            if wanted is not None and wanted_dot is not None and ".so" in name and not (
                    name in wanted or name.startswith(wanted_dot)):
                continue
            full = os.path.join(real, name)
            target = os.path.realpath(full)
            try:
                fst = os.stat(target)
            except OSError:
                continue
            if not stat.S_ISREG(fst.st_mode):
                continue
            files[name] = target
            f_world, f_foreign = _unsafe_reason(fst, me)
            if f_world:
                unsafe[name] = f"world-writable file {target}"
            elif f_foreign is not None:
                unsafe[name] = f"file {target} owned by another user (uid {f_foreign})"
            elif os.path.dirname(target) != real:
                # the file is a link out of this directory: judge the directory it really lives in
                try:
                    pst = os.stat(os.path.dirname(target))
                except OSError:
                    continue
                p_world, p_foreign = _unsafe_reason(pst, me)
                if p_world:
                    unsafe[name] = f"links into world-writable directory {os.path.dirname(target)}"
                elif p_foreign is not None:
                    unsafe[name] = f"links into a directory owned by another user (uid {p_foreign})"
        out[d] = DirListing(d, True, real, files, world, foreign, unsafe)
    return out


# --------------------------------------------------------------------------------------------------
# Search tiers
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchTier:
    source: Source
    dirs: tuple[str, ...]  # absolute directories, in order
    origin: str = ""  # for the report: "LD_LIBRARY_PATH", "ld.so.cache", "site /x/y", ...
    rejected: tuple[tuple[str, str], ...] = ()  # (entry, reason) entries never searched


def _cuda_major(env: Environment) -> int | None:
    v = env.ort.cuda_version
    m = re.match(r"\s*(\d+)", v) if isinstance(v, str) else None
    if m:
        return int(m.group(1))
    return _cuda_major_from_provider(env)


# libcudart.so.13 / libcudart.so.11.0; cudart64_13.dll / cudart64_110.dll (CUDA 11 adds the minor digit)
_CUDART_NEEDED = re.compile(r"^(?:libcudart\.so\.(\d+)(?:\.\d+)?|cudart64_(\d\d)\d?\.dll)$", re.IGNORECASE)


def _cuda_major_from_provider(env: Environment) -> int | None:
    """The build's CUDA major from the CUDA provider's own cudart dependency, when
    build_and_package_info.py gives no usable cuda_version but says it is a GPU package.

    package_name must say so: a CPU wheel installed over a GPU one leaves the GPU provider library
    behind, and its DT_NEEDED then describes files that onnxruntime will never load.
    """
    name = (env.ort.package_name or "").lower()
    provider = env.ort.cuda_provider
    if not name.startswith("onnxruntime-") or provider is None:
        return None
    deps = getattr(provider, "needed", None) or getattr(provider, "imports", ())
    for dep in deps:
        m = _CUDART_NEEDED.match(dep)
        if m:
            return int(m.group(1) or m.group(2))
    return None


def _major_of(version: str | None) -> int | None:
    m = re.match(r"\s*(\d+)", version or "")
    return int(m.group(1)) if m else None


def _is_windows(env: Environment) -> bool:
    return env.python.os == "windows"


def _arch_dir(env: Environment) -> str:
    return "arm64" if env.python.machine.lower() in ("arm64", "aarch64") else "x86_64"


def _spec_dirs(spec: Spec, env: Environment) -> tuple[str, ...]:
    if _is_windows(env):
        arch = _arch_dir(env)
        return tuple(d for d in spec.windows_dirs if not d.endswith(("/x86_64", "/arm64")) or d.endswith(arch))
    return spec.linux_dirs


def _join(env: Environment, base: str, rel: str) -> str:
    if _is_windows(env):
        return base.rstrip("\\/") + "\\" + rel.replace("/", "\\")
    return posixpath.normpath(posixpath.join(base, rel))


def _isabs(env: Environment, path: str) -> bool:
    return ntpath.isabs(path) if _is_windows(env) else posixpath.isabs(path)


def _site_dirs(env: Environment) -> list[str]:
    sites = [s for s in env.python.site_dirs if s and _isabs(env, s)]
    for w in env.nvidia_wheels:
        if w.location and _isabs(env, w.location) and w.location not in sites:
            sites.append(w.location)
    return sites


def resolve_directory(directory: str, env: Environment) -> str:
    """An explicit ``directory`` as an absolute path: relative ones are taken from the onnxruntime
    package directory (as ``onnxruntime.preload_dlls`` does), never from the current directory."""
    if os.path.isabs(directory):
        return os.path.normpath(directory)
    if not env.ort.package_dir:
        raise DirectoryError(
            f"directory {directory!r} is relative, and relative directories are taken from the onnxruntime "
            "package directory, but onnxruntime is not installed; give an absolute path"
        )
    return os.path.normpath(os.path.join(env.ort.package_dir, directory))


def search_dirs(
    env: Environment,
    specs: Sequence[Spec],
    *,
    directory: str | None = None,
    cuda_major: int | None = None,
    cudnn_major: int | None = None,
) -> tuple[SearchTier, ...]:
    """The tiers to search, in order, without touching the file system (``loaded`` is not a tier)."""
    tiers: list[SearchTier] = []
    win = _is_windows(env)
    rel_dirs = list(dict.fromkeys(d for s in specs for d in _spec_dirs(s, env)))
    want_all = directory is None

    if directory:
        tiers.append(SearchTier("directory", (resolve_directory(directory, env),), "--directory"))

    if want_all and env.torch and env.torch.lib_dir:
        t = env.torch
        cudnn_ok = cudnn_major is None or t.cudnn is None or _major_of(t.cudnn) == cudnn_major
        if _major_of(t.cuda) == cuda_major and cuda_major is not None and cudnn_ok:
            tiers.append(SearchTier("torch", (t.lib_dir,), f"torch {t.version}"))
        else:
            tiers.append(SearchTier("torch", (), f"torch {t.version}", rejected=((
                t.lib_dir,
                f"torch {t.version} uses CUDA {t.cuda or 'none'} / cuDNN {t.cudnn or '?'}, the build needs "
                f"CUDA {cuda_major} / cuDNN {cudnn_major}",
            ),)))

    if directory is None or directory == "":
        for site in _site_dirs(env):
            tiers.append(SearchTier("nvidia-wheel", tuple(_join(env, site, r) for r in rel_dirs), site))

    if want_all:
        conda = env.system.conda_prefix or env.python.conda_prefix
        if conda:
            sub = ("Library\\bin", "bin") if win else ("lib",)
            tiers.append(SearchTier("conda", tuple(_join(env, conda, s) for s in sub), "CONDA_PREFIX"))
        for var, root in (("CUDA_HOME", env.system.cuda_home), ("CUDA_PATH", env.system.cuda_path),
                          ("CUDNN_PATH", env.system.cudnn_path)):
            if not root:
                continue
            if win:
                sub = (f"bin\\{'x64'}", "bin")
            else:
                arch = env.python.machine if env.python.machine not in ("AMD64", "") else "x86_64"
                sub = ("lib64", "lib", f"targets/{arch}-linux/lib")
            tiers.append(SearchTier("cuda-home", tuple(_join(env, root, s) for s in sub), var))

    # The system: what the dynamic loader would search, minus what must never be searched.
    if win:
        tiers.append(SearchTier("system", tuple(d.path for d in env.system.windows_path
                                                if d.path and not d.relative), "PATH"))
        return tuple(tiers)
    ok: list[str] = []
    rejected: list[tuple[str, str]] = []
    for sd in env.system.ld_library_path:
        if not sd.path:
            rejected.append(("", "empty LD_LIBRARY_PATH entry (means the current directory)"))
        elif sd.relative or not os.path.isabs(sd.path):
            rejected.append((sd.path, f"relative LD_LIBRARY_PATH entry {sd.path!r} (resolved against the "
                                      "current directory)"))
        else:
            ok.append(sd.path)
    tiers.append(SearchTier("system", tuple(ok), "LD_LIBRARY_PATH", rejected=tuple(rejected)))
    cache_dirs = []
    wanted = component_stems(specs)
    for soname, paths in env.system.ldconfig.items():
        sm = _stem_major(soname)
        if sm is not None and sm[0] in wanted:
            cache_dirs.extend(posixpath.dirname(p) for p in paths)
    tiers.append(SearchTier("system", tuple(dict.fromkeys(cache_dirs)), "ld.so.cache"))
    tiers.append(SearchTier("system", tuple(d.path for d in env.system.default_dirs if d.path), "default"))
    return tuple(tiers)


# --------------------------------------------------------------------------------------------------
# Versions and name matching
# --------------------------------------------------------------------------------------------------
_SONAME_RE = re.compile(r"^(?P<stem>.+?\.so)\.(?P<ver>\d+(?:\.\d+)*)$")
_DLL_RE = re.compile(r"^(?P<stem>[A-Za-z_]+?)(?:64)?_(?P<ver>\d+)(?:_0)?\.dll$", re.IGNORECASE)


def component_stems(specs: Iterable[Spec]) -> frozenset[str]:
    """``libcudart.so.13`` -> ``libcudart.so``: the names that identify each component, any major."""
    out = set()
    for s in specs:
        sm = _stem_major(s.soname)
        if sm is not None:
            out.add(sm[0])
    return frozenset(out)


@functools.lru_cache(maxsize=4096)
def _stem_major(name: str) -> tuple[str, int] | None:
    m = _SONAME_RE.match(name)
    if m:
        return m.group("stem"), int(m.group("ver").split(".")[0])
    m = _DLL_RE.match(name)
    if m:
        ver = m.group("ver")
        return m.group("stem").lower(), int(ver[:-1] if len(ver) == 3 else ver)  # nvrtc64_130_0 -> 13
    return None


def _same_component(name: str, soname: str) -> bool:
    a, b = _stem_major(name), _stem_major(soname)
    return a is not None and b is not None and a[0] == b[0]


def version_from_filename(path: str, soname: str) -> str | None:
    """``libcudnn.so.9.14.0`` -> ``"9.14.0"``: the file name (of the symlink's target) says more than
    the soname. None when it says nothing beyond the soname's major."""
    base = os.path.basename(path)
    m = _SONAME_RE.match(base)
    s = _SONAME_RE.match(soname)
    if not m or not s or m.group("stem") != s.group("stem"):
        return None
    ver = m.group("ver")
    return ver if ver.count(".") >= 1 and ver != s.group("ver") else None


def _matches_loaded(path: str, soname: str) -> bool:
    base = os.path.basename(path)
    return base == soname or base.startswith(soname + ".")


def _norm_pkg(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _wheel_version(env: Environment, spec: Spec, directory: str, site: str | None) -> str | None:
    if spec.package is None:
        return None
    want = _norm_pkg(spec.package)
    for w in env.nvidia_wheels:
        if _norm_pkg(w.name) != want:
            continue
        if (site and os.path.normpath(w.location) == os.path.normpath(site)) or directory in w.lib_dirs:
            return w.version
    return None


# --------------------------------------------------------------------------------------------------
# The resolver
# --------------------------------------------------------------------------------------------------
@dataclass
class _Cand:
    path: str  # the path to load (directory + soname); realpath kept for comparisons
    real: str
    source: Source
    rank: int  # global search position
    origin: str  # coherence unit: site dir for wheels, the directory otherwise
    version: str | None
    rejected: str | None = None


def _finding(id_: str, severity: str, title: str, detail: str, fix: str | None) -> Finding:
    return Finding(id=id_, severity=severity, title=title, detail=detail, fix=fix)  # type: ignore[arg-type]


def _is_sub(spec: Spec) -> bool:
    return spec.sublibrary_of is not None


def resolve(
    env: Environment,
    matrix: object | None,
    *,
    directory: str | None = None,
    cuda: bool = True,
    cudnn: bool = True,
    cwd: str | None = None,
    allow_unsafe_dirs: bool = False,
    mapped: Sequence[str] = (),
    index: DirIndex | None = None,
) -> Plan:
    """Plan which file to load for each library the installed onnxruntime build needs.

    Pure given ``index``; without one, the directories are listed with :func:`index_dirs` first.
    ``mapped`` are realpaths already mapped in the process that will load (besides ``env.mapped``);
    ``cwd`` is the current directory, whose files are never candidates unless ``directory`` names it.

    Raises:
        DirectoryError: ``directory`` is a path that does not exist or cannot be resolved.
    """
    cuda_major = _cuda_major(env)
    cudnn_major = env.ort.cudnn_major
    if cuda_major is not None and cudnn_major is None:
        cudnn_major = 9 if cuda_major >= 12 else 8
    findings: list[Finding] = []
    if cuda_major is None:
        return Plan(None, cudnn_major, directory, (), ())

    specs = list(libraries_for(matrix, cuda_major, cudnn_major))
    win = _is_windows(env)

    # Cross-check with the provider's real DT_NEEDED: a CUDA library it needs that the matrix lacks is
    # added, so a newer build's needs are never silently ignored.
    needed: tuple[str, ...] | None = None
    prov = env.ort.cuda_provider
    if prov is not None and hasattr(prov, "needed"):
        needed = tuple(prov.needed)  # type: ignore[union-attr]
    elif prov is not None and hasattr(prov, "imports"):
        needed = tuple(prov.imports)  # type: ignore[union-attr]
    known = {(s.windows_dll or "").lower() if win else s.soname for s in specs}
    if needed is not None:
        cuda_like = re.compile(r"^(lib)?(cu|nvrtc|nvJitLink|cudnn)", re.IGNORECASE)
        for n in needed:
            key = n.lower() if win else n
            if key in known or n in DRIVER_SONAMES or n.lower() in DRIVER_SONAMES or not cuda_like.match(n):
                continue
            sm = _stem_major(n)
            name = (sm[0].removeprefix("lib").removesuffix(".so") if sm else n)
            specs.append(BuiltinLib(name, n, n if win else None, "required", None, (), ()))
            findings.append(_finding(
                "matrix-missing-library", "info", f"{n} is needed by the CUDA provider but not in the matrix",
                f"{getattr(prov, 'path', 'the CUDA provider')} lists {n} as needed; it was searched for anyway.",
                None))

    tiers = search_dirs(env, specs, directory=directory, cuda_major=cuda_major, cudnn_major=cudnn_major)
    if index is None:
        index = index_dirs((d for t in tiers for d in t.dirs), stems=None if win else component_stems(specs))

    if directory:
        explicit = tiers[0].dirs[0]
        listing = index.get(explicit)
        if listing is None or not listing.exists:
            raise DirectoryError(f"directory {directory!r} does not exist (looked for {explicit})")

    cwd_real = os.path.realpath(cwd) if cwd else None

    # Findings about search entries that are never searched.
    reasons = list(dict.fromkeys(reason for t in tiers if t.source == "system" for _e, reason in t.rejected))
    if reasons:
        findings.append(_finding(
            "ld-library-path-unsafe-entry", "warning", "LD_LIBRARY_PATH has entries that mean the current directory",
            f"{'; '.join(reasons)}. ortdoctor never loads from them, but the dynamic loader searches them for "
            "every library a program loads by name.",
            "Remove empty and relative entries (a leading, trailing or doubled ':') from LD_LIBRARY_PATH."))

    # Directory-level safety, reported once per directory.
    unsafe_dirs: dict[str, str] = {}
    for t in tiers:
        for d in t.dirs:
            lst = index.get(d)
            if lst is None or not lst.exists or d in unsafe_dirs:
                continue
            if lst.world_writable:
                unsafe_dirs[d] = f"world-writable directory {lst.realpath or d}"
            elif lst.foreign_owner is not None:
                unsafe_dirs[d] = f"directory {lst.realpath or d} owned by another user (uid {lst.foreign_owner})"

    skip_reason: dict[str, str] = {}
    for s in specs:
        is_cudnn = s.name == "cudnn" or s.sublibrary_of == "cudnn" or s.name.startswith("cudnn")
        if is_cudnn and not cudnn:
            skip_reason[s.name] = "--no-cudnn"
        elif not is_cudnn and not cuda:
            skip_reason[s.name] = "--no-cuda"

    all_mapped = tuple(dict.fromkeys((*env.mapped, *mapped)))
    cands: dict[str, list[_Cand]] = {}
    other: dict[str, list[Candidate]] = {}
    used_unsafe: set[str] = set()
    for s in specs:
        soname = (s.windows_dll or s.soname) if win else s.soname
        lst_c: list[_Cand] = []
        for p in all_mapped:
            if _matches_loaded(p, soname):
                lst_c.append(_Cand(p, p, "loaded", -1, p, version_from_filename(p, soname)))
        rank = 0
        seen_real: set[str] = set()
        others: list[Candidate] = []
        for t in tiers:
            site = t.origin if t.source == "nvidia-wheel" else None
            for d in t.dirs:
                rank += 1
                lst = index.get(d)
                if lst is None or not lst.exists:
                    continue
                files = lst.files
                if win:
                    files = {k.lower(): v for k, v in files.items()}
                key = soname.lower() if win else soname
                if key in files:
                    real = files[key]
                    full = _join(env, d, soname)
                    version = _wheel_version(env, s, d, site) or version_from_filename(real, soname)
                    c = _Cand(full, real, t.source, rank, site or d, version)
                    if real in seen_real:
                        continue  # the same file reached again through another tier
                    seen_real.add(real)
                    if cwd_real and lst.realpath == cwd_real and t.source != "directory":
                        c.rejected = "in the current directory"
                    elif d in unsafe_dirs and not allow_unsafe_dirs:
                        c.rejected = unsafe_dirs[d]
                        used_unsafe.add(d)
                    elif key in lst.unsafe_files and not allow_unsafe_dirs:
                        c.rejected = lst.unsafe_files[key]
                        used_unsafe.add(d)
                    lst_c.append(c)
                # files of the same component for another major (libcudart.so.12 beside a CUDA 13 build)
                want = _stem_major(soname)
                for name, real in sorted(files.items()):
                    sm = _stem_major(name)
                    if want and sm and sm[0] == want[0] and sm[1] != want[1] and name == _canonical(name):
                        reason = _other_major_reason(s.name, sm[1], cuda_major, cudnn_major)
                        others.append(Candidate(_join(env, d, name), t.source,
                                                version_from_filename(real, name), reason))
        if not win:
            for name, paths in env.system.ldconfig.items():
                want = _stem_major(soname)
                sm = _stem_major(name)
                if want and sm and sm[0] == want[0] and sm[1] != want[1]:
                    for p in paths:
                        if all(o.path != p for o in others):
                            others.append(Candidate(p, "system", None, f"{name} (ld.so.cache) is for another "
                                                                      f"major, build needs {soname}"))
        cands[s.name] = lst_c
        other[s.name] = others

    for d in sorted(used_unsafe):
        findings.append(_finding(
            "unsafe-library-dir", "warning", "A library directory is writable by others and was not used",
            f"{unsafe_dirs.get(d, d)}: anyone who can write there can plant a library that runs in your process.",
            f"chmod o-w {index[d].realpath or d}  (or, if you trust it, pass --allow-unsafe-dirs)"))

    # Choose: one coherent origin per group (CUDA libraries; cuDNN and its sub-libraries).
    chosen: dict[str, _Cand | None] = {}
    groups: dict[str, list[Spec]] = {"cuda": [], "cudnn": []}
    for s in specs:
        groups["cudnn" if (s.name == "cudnn" or s.sublibrary_of) else "cuda"].append(s)
    for gname, members in groups.items():
        active = [s for s in members if s.name not in skip_reason]
        score: dict[str, list[int]] = {}
        for s in active:
            for c in cands[s.name]:
                if c.rejected is None and c.source != "loaded":
                    entry = score.setdefault(c.origin, [0, c.rank])
                    entry[0] += 1
                    entry[1] = min(entry[1], c.rank)
        # Main libraries count for more than sub-libraries, so a complete cuDNN wins over loose
        # sub-libraries; ties go to the earlier place in the search order.
        weights: dict[str, tuple[int, int]] = {}
        for origin, (_n, first_rank) in score.items():
            n = sum(
                1 if _is_sub(s) else 100
                for s in active
                if any(c.origin == origin and c.rejected is None and c.source != "loaded" for c in cands[s.name])
            )
            weights[origin] = (-n, first_rank)
        best = min(weights, key=weights.__getitem__) if weights else None
        for s in members:
            if s.name in skip_reason:
                chosen[s.name] = None
                continue
            pick: _Cand | None = None
            # Already mapped wins (the loader would reuse it anyway); then an explicit --directory.
            forced = [c for c in cands[s.name] if c.source == "loaded"] or [
                c for c in cands[s.name] if c.source == "directory" and c.rejected is None]
            if forced:
                pick = forced[0]
            else:
                ok = [c for c in cands[s.name] if c.rejected is None]
                pick = next((c for c in ok if c.origin == best), None) or (ok[0] if ok else None)
            # Acceptable alternatives keep rejected=None (facts.Candidate's contract): the diagnosis
            # compares their versions with the chosen one to find conflicting copies.
            chosen[s.name] = pick
        origins = {c.origin for s in active if (c := chosen.get(s.name)) is not None and c.source != "loaded"}
        if len(origins) > 1:
            pairs = [("cublas", "cublasLt")] if gname == "cuda" else [
                ("cudnn", s.name) for s in active if _is_sub(s)]
            split = [(a, b) for a, b in pairs
                     if chosen.get(a) is not None and chosen.get(b) is not None
                     and chosen[a].origin != chosen[b].origin]  # type: ignore[union-attr]
            detail = "; ".join(f"{s.name} from {c.path}" for s in active if (c := chosen.get(s.name)))
            if split:
                a, b = split[0]
                findings.append(_finding(
                    "lib-sources-mixed", "warning", f"{a} and {b} would come from different places",
                    f"No single location has the whole set: {detail}. Libraries of one family must come from "
                    "one release.",
                    "Install the matching NVIDIA wheels in one environment: pip install 'onnxruntime-gpu[cuda,cudnn]'"))
            else:
                findings.append(_finding(
                    "lib-sources-mixed", "info", f"The {gname} libraries come from more than one place",
                    f"No single location has all of them: {detail}.", None))

    # Sub-libraries are dlopen'd by the main cuDNN library from its own directory (RUNPATH $ORIGIN).
    libs: list[LibraryPlan] = []
    for s in specs:
        pick = chosen.get(s.name)
        soname = (s.windows_dll or s.soname) if win else s.soname
        required = (soname in needed) if needed is not None and not _is_sub(s) else s.load == "required"
        if needed is not None and win:
            required = soname.lower() in {n.lower() for n in needed}
        candidates = tuple(Candidate(c.path, c.source, c.version, c.rejected) for c in cands[s.name])
        chosen_c = None if pick is None else Candidate(pick.path, pick.source, pick.version, None)
        libs.append(LibraryPlan(
            name=s.name, soname=soname, required=required, chosen=chosen_c, candidates=candidates,
            other_major=tuple(other[s.name]), skipped=skip_reason.get(s.name),
        ))
    return Plan(cuda_major, cudnn_major, directory, tuple(libs), tuple(findings))


def _other_major_reason(name: str, major: int, cuda_major: int, cudnn_major: int | None) -> str:
    if name == "cudnn" or name.startswith("cudnn"):
        return f"cuDNN {major} file, build needs cuDNN {cudnn_major}"
    if name == "cufft":  # cuFFT's major is one below CUDA's since CUDA 12 (libcufft.so.11 = CUDA 12)
        return f"CUDA {major + 1} file (cuFFT {major}), build needs CUDA {cuda_major}"
    return f"CUDA {major} file, build needs CUDA {cuda_major}"


def _canonical(name: str) -> str:
    """Count ``libcudart.so.12`` and ``libcudart.so.12.9.79`` once: only the soname-like name."""
    m = _SONAME_RE.match(name)
    if m and "." in m.group("ver"):
        return ""
    return name


def tier_dirs(plan_tiers: Iterable[SearchTier]) -> list[str]:
    """Every directory of the tiers, in order, each once (what ``failed[].searched`` reports)."""
    return list(dict.fromkeys(d for t in plan_tiers for d in t.dirs))
