"""The compatibility matrix: what each onnxruntime-gpu release needs, loaded from ``compat_matrix.yaml``.

The dataclasses below are the contract the resolver, the diagnosis and the renderers code against.
:func:`load_matrix` reads the YAML with ``yaml.safe_load`` and validates it by hand, so a broken
file (the shipped one, ``--matrix FILE`` or ``$ORTDOCTOR_MATRIX``) is refused with a
:class:`MatrixError` that names the file, the key path and what is wrong. The schema is documented
at the top of ``compat_matrix.yaml``.

Parsing the 56 KB YAML (and importing PyYAML) would cost `check` ~35 ms on every run, so the package
also ships ``_matrix_snapshot.json``: the parsed document of the shipped YAML, written by
``scripts/gen_matrix_snapshot.py`` together with the YAML's sha256. A file whose bytes have that sha256
is read from the snapshot (same data, so the same validation runs on it); any other file (an edited
checkout, ``--matrix FILE``) is parsed as YAML. Nothing is written at run time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from packaging.version import InvalidVersion, Version

__all__ = [
    "CudaMajor", "CudnnMajor", "Feed", "KnownBad", "LibSpec", "Matrix", "MatrixError", "Recommendation",
    "Release", "ReleaseMatch", "TorchRelease", "TorchVariant", "default_matrix_path", "load_matrix",
    "parse_cuda_request", "parse_torch_request", "snapshot_document", "snapshot_path",
]

#: The environment variable that selects a matrix file instead of the shipped one.
MATRIX_ENV = "ORTDOCTOR_MATRIX"

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
    min_driver_by_minor_windows: dict[str, str] = field(default_factory=dict)
    driver_source: str = ""  # the URL the driver minimums come from
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CudnnMajor:
    major: int  # 8, 9
    libraries: tuple[LibSpec, ...]  # libcudnn.so.9 then its sub-libraries
    packages: dict[int, str] = field(default_factory=dict)  # CUDA major -> "nvidia-cudnn-cu13"
    source: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
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

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".")[0])


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
    # per patch version, the wheel file read (source_ref names the line's reference wheel)
    wheels: dict[str, str] = field(default_factory=dict)
    requires: tuple[str, ...] = ()  # plain Requires-Dist names of the wheel: "flatbuffers", "numpy", ...
    tensorrt_needed: tuple[str, ...] = ()  # CUDA/TensorRT sonames of libonnxruntime_providers_tensorrt.so
    pypi: bool = True  # False: the PyPI onnxruntime-gpu package never had this line for Linux x86_64

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".")[0])

    def bad(self, version: str) -> KnownBad | None:
        """The known-bad entry of one patch version of this line, if any."""
        return next((kb for kb in self.known_bad if kb.version == version), None)


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
    index_url: str | None  # "https://download.pytorch.org/whl/cu124" (the PyPI default is also there)
    pypi_default: bool = False
    source: str = ""  # "wheel:<file>" when read from the wheel's METADATA, else a URL

    @property
    def cuda_major(self) -> int | None:
        return None if self.cuda == "cpu" else int(self.cuda.split(".")[0])

    @property
    def cudnn_major(self) -> int | None:
        return int(self.cudnn.split(".")[0]) if self.cudnn else None


@dataclass(frozen=True)
class TorchRelease:
    version: str  # "2.4"
    variants: tuple[TorchVariant, ...]
    source: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recommendation:
    release: Release
    feed: Feed | None  # None: the PyPI default wheel
    command: str  # the exact pip command
    reason: str
    version: str = ""  # the exact onnxruntime-gpu version the command installs
    torch_variant: TorchVariant | None = None  # the torch build the choice agrees with
    # a newer line's build for the same CUDA/cuDNN majors on an alternative feed, as a pip command
    alternative: str = ""



@dataclass(frozen=True)
class Matrix:
    path: str
    releases: tuple[Release, ...]  # newest first
    cuda_majors: dict[int, CudaMajor]
    cudnn_majors: dict[int, CudnnMajor]
    torch: tuple[TorchRelease, ...]
    feeds: dict[str, str] = field(default_factory=dict)  # name -> index URL ("cuda12": "https://...")
    schema: int = 1

    # -- releases ------------------------------------------------------------------------------
    def release_for(self, version: str) -> ReleaseMatch | None:
        """The release line of an installed version string (PEP 440); None when unparsable or older
        than every line. Versions newer than the newest line match it with ``unverified=True``."""
        try:
            v = Version(version.strip())
        except (InvalidVersion, AttributeError):
            return None
        if not self.releases:
            return None
        key = _line_key(v)
        by_line = {_line_key(Version(r.line)): r for r in self.releases}
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
        if key > _line_key(Version(newest.line)):
            return ReleaseMatch(newest, False, True,
                                f"{version} is newer than every line the matrix knows; the newest line, "
                                f"{newest.line}, was used and the answer is unverified{local}")
        older = [r for r in self.releases if _line_key(Version(r.line)) < key]
        if not older:
            return None
        nearest = older[0]  # releases are newest first
        return ReleaseMatch(nearest, False, True,
                            f"the matrix has no {key[0]}.{key[1]} line; the nearest older line, "
                            f"{nearest.line}, was used and the answer is unverified{local}")

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
            libs.extend(lib if lib.package else dataclasses.replace(lib, package=package)
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
        return tuple(dataclasses.replace(lib, load="required" if lib.soname in needed else "lazy")
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
        try:
            v = Version(version.strip())
        except (InvalidVersion, AttributeError):
            return None
        line = f"{v.release[0]}.{v.release[1] if len(v.release) > 1 else 0}"
        return next((t for t in self.torch if t.version == line), None)

    # -- recommendation --------------------------------------------------------------------------
    def recommend(self, cuda: str | None, torch: str | None) -> Recommendation | None:
        """Which onnxruntime-gpu to install with this CUDA major(.minor) and/or torch version.

        The newest build (PyPI default or alternative feed) whose CUDA major matches, whose cuDNN
        major agrees with the torch variant (when a torch version is given), and whose newest patch
        is not known to be bad. None when nothing fits.
        """
        want_cuda = parse_cuda_request(cuda) if cuda else None
        if cuda and want_cuda is None:
            return None
        variants: tuple[TorchVariant, ...] = ()
        torch_rel: TorchRelease | None = None
        if torch:
            torch_rel = self.torch_release(torch)
            if torch_rel is None:
                return None
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
        # Prefer the torch build pip gives by default, then a verified PyPI wheel over a feed build,
        # then the newest line.
        for variant in variants or (None,):
            for use_feeds in (False, True):
                for release in self.releases:
                    if not release.pypi:
                        continue
                    for feed in release.feeds if use_feeds else (None,):
                        rec = self._fit(release, feed, want_cuda, torch_rel, variant)
                        if rec is not None:
                            return rec
        return None

    def _fit(self, release: Release, feed: Feed | None, want_cuda: tuple[int, int | None] | None,
             torch_rel: TorchRelease | None, variant: TorchVariant | None) -> Recommendation | None:
        build_cuda = feed.cuda_major if feed else release.cuda_major
        build_cudnn = feed.cudnn_major if feed else release.cudnn_major
        if want_cuda is not None and build_cuda != want_cuda[0]:
            return None
        if feed is not None and not feed.index_url:
            return None
        if variant is not None and (variant.cuda_major != build_cuda or
                                    (variant.cudnn_major is not None and variant.cudnn_major != build_cudnn)):
            return None
        version = _pick_version(release, feed)
        if version is None:
            return None
        alternative = ""
        if feed is None:
            newer = self._newest_feed_build(build_cuda, build_cudnn, release)
            if newer is not None:
                alternative = _install_command(newer[0], newer[1], newer[2], with_extras=False)
        return Recommendation(
            release=release, feed=feed, version=version, torch_variant=variant,
            command=_install_command(release, feed, version, with_extras=variant is None),
            reason=_reason(release, feed, version, want_cuda, torch_rel, variant),
            alternative=alternative,
        )

    def _newest_feed_build(self, cuda: int, cudnn: int | None,
                           than: Release) -> tuple[Release, Feed, str] | None:
        """A feed build of a newer line than ``than`` with the same CUDA/cuDNN majors."""
        for release in self.releases:
            if _line_key(Version(release.line)) <= _line_key(Version(than.line)):
                return None
            for feed in release.feeds:
                if feed.cuda_major == cuda and feed.cudnn_major == cudnn and feed.index_url:
                    version = _pick_version(release, feed)
                    if version:
                        return release, feed, version
        return None


_T = TypeVar("_T")


def _line_key(v: Version) -> tuple[int, int]:
    rel = v.release
    return (rel[0], rel[1] if len(rel) > 1 else 0)


def _torch_local_tag(version: str) -> str | None:
    try:
        local = Version(version.strip()).local
    except InvalidVersion:
        return None
    return local if local and re.fullmatch(r"cu\d+|cpu|rocm[\d.]+", local) else None


def parse_cuda_request(text: str | None) -> tuple[int, int | None] | None:
    """``"12"`` -> (12, None); ``"12.4"`` / ``"12.4.1"`` / ``"cu124"`` -> (12, 4); else None."""
    if text is None:
        return None
    t = str(text).strip().lower()
    m = re.fullmatch(r"cu(\d{2})(\d)", t)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.fullmatch(r"(\d{1,2})(?:\.(\d{1,2}|x))?(?:\.\d+)?", t)
    if not m:
        return None
    minor = m.group(2)
    return int(m.group(1)), (int(minor) if minor and minor != "x" else None)


def parse_torch_request(text: str | None) -> Version | None:
    """A torch version string (``2.4``, ``2.4.1+cu121``) as a Version; None when unparsable."""
    if not text:
        return None
    try:
        return Version(text.strip())
    except InvalidVersion:
        return None


def _pick_version(release: Release, feed: Feed | None) -> str | None:
    """The newest patch of the line (on that feed) that is not known to be bad."""
    candidates = list(feed.versions) if feed and feed.versions else list(release.versions)
    good = [v for v in candidates if release.bad(v) is None]
    if not good:
        return None
    return max(good, key=Version)


#: What the onnxruntime-gpu wheels require from PyPI; an alternative feed does not mirror them.
_DEFAULT_PLAIN_DEPS = ("flatbuffers", "numpy", "packaging", "protobuf", "sympy")


def _install_command(release: Release, feed: Feed | None, version: str, *, with_extras: bool) -> str:
    if feed is not None and feed.index_url:
        deps = release.requires or _DEFAULT_PLAIN_DEPS
        if "sympy" not in deps:  # moved to the `symbolic` extra in 1.24+, still needed by the tools
            deps = (*deps, "sympy")
        return (f"pip install {' '.join(deps)} && "
                f"pip install onnxruntime-gpu=={version} --index-url {feed.index_url}")
    extras = with_extras and "cuda" in release.extras and "cudnn" in release.extras
    return f'pip install "onnxruntime-gpu[cuda,cudnn]=={version}"' if extras else \
        f"pip install onnxruntime-gpu=={version}"


def _reason(release: Release, feed: Feed | None, version: str, want_cuda: tuple[int, int | None] | None,
            torch_rel: TorchRelease | None, variant: TorchVariant | None) -> str:
    cuda = feed.cuda if feed else release.cuda
    cudnn_major = feed.cudnn_major if feed else release.cudnn_major
    where = f"the CUDA {feed.cuda} feed ({feed.index_url})" if feed else "PyPI (the default build)"
    parts = [f"onnxruntime-gpu {version} from {where} is built for CUDA {cuda} and cuDNN {cudnn_major}"]
    if want_cuda is not None:
        parts.append(f"it works with any CUDA {want_cuda[0]}.x runtime (minor-version compatibility)")
    if torch_rel is not None and variant is not None:
        where_t = "the PyPI default" if variant.pypi_default else f"from {variant.index_url}"
        parts.append(f"torch {torch_rel.version} {variant.tag} ({where_t}) uses the same CUDA "
                     f"{variant.cuda_major} and cuDNN {variant.cudnn or cudnn_major} majors, so one set of "
                     "CUDA/cuDNN libraries serves both: import torch before creating the session, "
                     "or preload")
    if feed is not None:
        parts.append("use --index-url, not --extra-index-url: with both indexes pip takes PyPI's "
                     "build of the same version")
    if release.python:
        parts.append(f"wheels exist for Python {', '.join(release.python)}")
    return "; ".join(parts) + "."


# ------------------------------------------------------------------------------------------------
# Loading and validation
# ------------------------------------------------------------------------------------------------
def default_matrix_path() -> Path:
    """The shipped file: inside the installed package, else at the repository root (source checkout)."""
    package = Path(__file__).resolve().parents[1]
    inside = package / "compat_matrix.yaml"
    return inside if inside.is_file() else package.parent / "compat_matrix.yaml"


_cache: dict[str, Matrix] = {}
_cache_lock = threading.Lock()


def load_matrix(path: str | Path | None = None) -> Matrix:
    """Load and validate a matrix. ``None``: ``$ORTDOCTOR_MATRIX`` if set, else the shipped file.

    Raises:
        MatrixError: unreadable, not YAML, wrong types, inconsistent, duplicate versions.
    """
    if path is None:
        env = os.environ.get(MATRIX_ENV, "").strip()
        if env:
            return _load(Path(env))
        shipped = default_matrix_path()
        key = str(shipped)
        with _cache_lock:  # the shipped file does not change under a running process
            if key not in _cache:
                _cache[key] = _load(shipped)
            return _cache[key]
    return _load(Path(path))


def _load(path: Path) -> Matrix:
    name = str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise MatrixError(name, "", "file not found") from None
    except IsADirectoryError:
        raise MatrixError(name, "", "is a directory, not a matrix file") from None
    except OSError as exc:
        raise MatrixError(name, "", f"cannot read: {exc}") from None
    data = _snapshot_data(hashlib.sha256(raw).hexdigest())
    if data is _NO_SNAPSHOT:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MatrixError(name, "", f"cannot read: {exc}") from None
        data = _parse_yaml(name, text)
    return _Validator(name).matrix(data)


def _parse_yaml(name: str, text: str) -> Any:
    import yaml  # only for a file the snapshot does not cover: `check` with the shipped matrix skips it

    try:
        # The C build of the safe loader when PyYAML has it (same safety as yaml.safe_load, ~5x faster);
        # the pure-Python safe loader otherwise.
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MatrixError(name, "", f"not valid YAML{where}: {problem}") from None


# ------------------------------------------------------------------------------------------------
# The snapshot of the shipped YAML's parsed document
# ------------------------------------------------------------------------------------------------
SNAPSHOT_FORMAT = 1
# JSON keys are strings; the YAML has integer keys (``cuda_majors: {12: ...}``). A mapping whose keys
# are integers is written as ``{"__int_keys__": {"12": ...}}`` and turned back on reading.
_INT_KEYS = "__int_keys__"
_NO_SNAPSHOT = object()


def snapshot_path() -> Path:
    """``_matrix_snapshot.json`` inside the package."""
    return Path(__file__).resolve().parents[1] / "_matrix_snapshot.json"


def _encode(value: Any) -> Any:
    if isinstance(value, dict):
        if value and all(isinstance(k, int) and not isinstance(k, bool) for k in value):
            return {_INT_KEYS: {str(k): _encode(v) for k, v in value.items()}}
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"mixed or non-string keys cannot go into the snapshot: {list(value)[:5]}")
        if _INT_KEYS in value:
            raise TypeError(f"the key {_INT_KEYS!r} is reserved by the snapshot format")
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"{type(value).__name__} cannot go into the snapshot: {value!r}")


def _decode_object(obj: dict[str, Any]) -> dict[Any, Any]:
    if len(obj) == 1 and _INT_KEYS in obj:
        return {int(k): v for k, v in obj[_INT_KEYS].items()}
    return obj


def snapshot_document(yaml_path: str | Path) -> dict[str, Any]:
    """What ``_matrix_snapshot.json`` holds for the YAML at ``yaml_path`` (validated first).

    Raises:
        MatrixError: the YAML is not a valid matrix (a snapshot is never written for one).
    """
    path = Path(yaml_path)
    raw = path.read_bytes()
    data = _parse_yaml(str(path), raw.decode("utf-8"))
    _Validator(str(path)).matrix(data)
    return {"format": SNAPSHOT_FORMAT, "yaml_sha256": hashlib.sha256(raw).hexdigest(), "data": _encode(data)}


def _snapshot_data(sha256: str) -> Any:
    """The parsed document of the YAML whose bytes have ``sha256``, or ``_NO_SNAPSHOT``."""
    try:
        text = snapshot_path().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return _NO_SNAPSHOT
    # The digest is near the start: a file it does not match is not decoded at all.
    if sha256 not in text[:256]:
        return _NO_SNAPSHOT
    try:
        doc = json.loads(text, object_hook=_decode_object)
    except ValueError:
        return _NO_SNAPSHOT
    if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT or doc.get("yaml_sha256") != sha256:
        return _NO_SNAPSHOT
    return doc.get("data")


class _Validator:
    """Turns the parsed YAML into dataclasses, checking each value's type on the way."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, key: str, message: str) -> MatrixError:
        return MatrixError(self.file, key, message)

    # -- primitives --------------------------------------------------------------------------------
    def mapping(self, value: Any, key: str) -> dict[Any, Any]:
        if not isinstance(value, dict):
            raise self.fail(key, f"expected a mapping, got {_kind(value)}")
        return value

    def seq(self, value: Any, key: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {_kind(value)}")
        return value

    def req(self, obj: dict[Any, Any], name: str, key: str) -> Any:
        if name not in obj:
            raise self.fail(f"{key}.{name}" if key else name, "missing required key")
        return obj[name]

    def string(self, value: Any, key: str, *, allow_none: bool = False) -> Any:
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(key, f"expected a string, got {_kind(value)}")
        if isinstance(value, float):  # "12.0" written unquoted: keep the text the author meant
            raise self.fail(key, f"expected a quoted string, got the number {value!r} (write \"{value}\")")
        return str(value)

    def integer(self, value: Any, key: str, *, allow_none: bool = False) -> Any:
        if value is None and allow_none:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected an integer, got {_kind(value)}")
        return value

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_kind(value)}")
        return value

    def strings(self, value: Any, key: str) -> tuple[str, ...]:
        if value is None:
            return ()
        return tuple(self.string(v, f"{key}[{i}]") for i, v in enumerate(self.seq(value, key)))

    def unknown_keys(self, obj: dict[Any, Any], allowed: Iterable[str], key: str) -> None:
        extra = sorted(str(k) for k in obj if k not in set(allowed))
        if extra:
            raise self.fail(f"{key}.{extra[0]}" if key else extra[0],
                            f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def each(self, value: Any, key: str, fn: Callable[[Any, str], _T]) -> tuple[_T, ...]:
        return tuple(fn(item, f"{key}[{i}]") for i, item in enumerate(self.seq(value, key)))

    # -- the document ------------------------------------------------------------------------------
    def matrix(self, data: Any) -> Matrix:
        if data is None:
            raise self.fail("", "the file is empty")
        top = self.mapping(data, "(top level)")
        self.unknown_keys(top, ("schema", "feeds", "cuda_majors", "cudnn_majors", "torch", "releases"), "")
        schema = self.integer(self.req(top, "schema", ""), "schema")
        if schema != 1:
            raise self.fail("schema", f"unsupported schema version {schema} (this ortdoctor reads 1)")
        feeds_raw = self.mapping(top.get("feeds") or {}, "feeds")
        feeds = {str(k): self.string(v, f"feeds.{k}") for k, v in feeds_raw.items()}
        self.feeds = feeds
        cuda_majors = self.cuda_majors(self.req(top, "cuda_majors", ""))
        cudnn_majors = self.cudnn_majors(self.req(top, "cudnn_majors", ""))
        torch = self.each(top.get("torch") or [], "torch", self.torch_release)
        releases = self.each(self.req(top, "releases", ""), "releases", self.release)
        self.check_consistency(releases, cuda_majors, cudnn_majors, torch)
        ordered = tuple(sorted(releases, key=lambda r: _line_key(Version(r.line)), reverse=True))
        return Matrix(path=self.file, releases=ordered, cuda_majors=cuda_majors, cudnn_majors=cudnn_majors,
                      torch=torch, feeds=feeds, schema=schema)

    def lib(self, value: Any, key: str) -> LibSpec:
        obj = self.mapping(value, key)
        allowed = ("name", "soname", "windows_dll", "load", "package", "linux_dirs", "windows_dirs",
                   "version_function", "depends", "sublibrary_of")
        self.unknown_keys(obj, allowed, key)
        load = self.string(self.req(obj, "load", key), f"{key}.load")
        if load not in ("required", "lazy"):
            raise self.fail(f"{key}.load", f"must be 'required' or 'lazy', got {load!r}")
        return LibSpec(
            name=self.string(self.req(obj, "name", key), f"{key}.name"),
            soname=self.string(self.req(obj, "soname", key), f"{key}.soname"),
            windows_dll=self.string(obj.get("windows_dll"), f"{key}.windows_dll", allow_none=True),
            load=load,
            package=self.string(obj.get("package"), f"{key}.package", allow_none=True),
            linux_dirs=self.strings(obj.get("linux_dirs"), f"{key}.linux_dirs"),
            windows_dirs=self.strings(obj.get("windows_dirs"), f"{key}.windows_dirs"),
            version_function=self.string(obj.get("version_function"), f"{key}.version_function",
                                         allow_none=True),
            depends=self.strings(obj.get("depends"), f"{key}.depends"),
            sublibrary_of=self.string(obj.get("sublibrary_of"), f"{key}.sublibrary_of", allow_none=True),
        )

    def driver_map(self, value: Any, key: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v in self.mapping(value or {}, key).items():
            ks = self.string(k, f"{key}.{k}")
            if not re.fullmatch(r"\d+\.\d+", ks):
                raise self.fail(f"{key}.{k}", "keys are CUDA versions written major.minor, e.g. '12.8'")
            out[ks] = self.string(v, f"{key}.{ks}")
        return out

    def cuda_majors(self, value: Any) -> dict[int, CudaMajor]:
        out: dict[int, CudaMajor] = {}
        for k, v in self.mapping(value, "cuda_majors").items():
            key = f"cuda_majors.{k}"
            major = self.integer(k, key)
            obj = self.mapping(v, key)
            self.unknown_keys(obj, ("libraries", "min_driver", "min_driver_by_minor", "wheel_packages",
                                    "source", "notes"), key)
            driver = self.mapping(self.req(obj, "min_driver", key), f"{key}.min_driver")
            self.unknown_keys(driver, ("linux", "windows", "source", "note"), f"{key}.min_driver")
            by_minor = self.mapping(obj.get("min_driver_by_minor") or {}, f"{key}.min_driver_by_minor")
            self.unknown_keys(by_minor, ("linux", "windows", "source"), f"{key}.min_driver_by_minor")
            libs = self.each(self.req(obj, "libraries", key), f"{key}.libraries", self.lib)
            notes = self.strings(obj.get("notes"), f"{key}.notes")
            note = self.string(driver.get("note"), f"{key}.min_driver.note", allow_none=True)
            out[major] = CudaMajor(
                major=major,
                libraries=libs,
                min_driver_linux=self.string(self.req(driver, "linux", f"{key}.min_driver"),
                                             f"{key}.min_driver.linux"),
                min_driver_windows=self.string(self.req(driver, "windows", f"{key}.min_driver"),
                                               f"{key}.min_driver.windows"),
                min_driver_by_minor_linux=self.driver_map(by_minor.get("linux"),
                                                          f"{key}.min_driver_by_minor.linux"),
                min_driver_by_minor_windows=self.driver_map(by_minor.get("windows"),
                                                            f"{key}.min_driver_by_minor.windows"),
                wheel_packages=self.strings(obj.get("wheel_packages"), f"{key}.wheel_packages"),
                source=self.string(obj.get("source", ""), f"{key}.source"),
                driver_source=self.string(self.req(driver, "source", f"{key}.min_driver"),
                                          f"{key}.min_driver.source"),
                notes=(*notes, *((note,) if note else ())),
            )
        if not out:
            raise self.fail("cuda_majors", "must list at least one CUDA major")
        return out

    def cudnn_majors(self, value: Any) -> dict[int, CudnnMajor]:
        out: dict[int, CudnnMajor] = {}
        for k, v in self.mapping(value, "cudnn_majors").items():
            key = f"cudnn_majors.{k}"
            major = self.integer(k, key)
            obj = self.mapping(v, key)
            self.unknown_keys(obj, ("libraries", "packages", "source", "notes"), key)
            packages = {self.integer(ck, f"{key}.packages.{ck}"): self.string(cv, f"{key}.packages.{ck}")
                        for ck, cv in self.mapping(obj.get("packages") or {}, f"{key}.packages").items()}
            out[major] = CudnnMajor(
                major=major,
                libraries=self.each(self.req(obj, "libraries", key), f"{key}.libraries", self.lib),
                packages=packages,
                source=self.string(obj.get("source", ""), f"{key}.source"),
                notes=self.strings(obj.get("notes"), f"{key}.notes"),
            )
        return out

    def torch_release(self, value: Any, key: str) -> TorchRelease:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("version", "variants", "source", "notes"), key)
        version = self.string(self.req(obj, "version", key), f"{key}.version")
        if not re.fullmatch(r"\d+\.\d+", version):
            raise self.fail(f"{key}.version", f"expected a torch release line such as '2.4', got {version!r}")
        return TorchRelease(
            version=version,
            variants=self.each(self.req(obj, "variants", key), f"{key}.variants", self.torch_variant),
            source=self.string(obj.get("source", ""), f"{key}.source"),
            notes=self.strings(obj.get("notes"), f"{key}.notes"),
        )

    def torch_variant(self, value: Any, key: str) -> TorchVariant:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("cuda", "tag", "cudnn", "index_url", "pypi_default", "source"), key)
        cuda = self.string(self.req(obj, "cuda", key), f"{key}.cuda")
        if cuda != "cpu" and parse_cuda_request(cuda) is None:
            raise self.fail(f"{key}.cuda", f"expected 'cpu' or a CUDA version such as '12.4', got {cuda!r}")
        cudnn = self.string(obj.get("cudnn"), f"{key}.cudnn", allow_none=True)
        if cudnn is not None and not re.fullmatch(r"\d+(\.[\dx]+)*", cudnn):
            raise self.fail(f"{key}.cudnn", f"expected a cuDNN version such as '9.1.0', got {cudnn!r}")
        return TorchVariant(
            cuda=cuda,
            tag=self.string(self.req(obj, "tag", key), f"{key}.tag"),
            cudnn=cudnn,
            index_url=self.string(obj.get("index_url"), f"{key}.index_url", allow_none=True),
            pypi_default=self.boolean(obj.get("pypi_default", False), f"{key}.pypi_default"),
            source=self.string(obj.get("source", ""), f"{key}.source"),
        )

    def index_url(self, value: Any, key: str) -> str | None:
        text = self.string(value, key, allow_none=True)
        if text is None or text.startswith(("https://", "http://", "file://")):
            return text
        if text in self.feeds:  # a name from the top-level `feeds` table
            return self.feeds[text]
        raise self.fail(key, f"{text!r} is neither a URL nor a name under `feeds` "
                             f"({', '.join(sorted(self.feeds)) or 'none defined'})")

    def feed(self, value: Any, key: str) -> Feed:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("cuda", "cudnn_major", "cudnn", "index_url", "note", "versions", "source"), key)
        cuda = self.string(self.req(obj, "cuda", key), f"{key}.cuda")
        if parse_cuda_request(cuda) is None:
            raise self.fail(f"{key}.cuda", f"expected a CUDA version such as '12.x' or '11.8', got {cuda!r}")
        return Feed(
            cuda=cuda,
            cudnn_major=self.integer(obj.get("cudnn_major"), f"{key}.cudnn_major", allow_none=True),
            index_url=self.index_url(obj.get("index_url"), f"{key}.index_url"),
            note=self.string(obj.get("note", ""), f"{key}.note"),
            versions=self.versions(obj.get("versions"), f"{key}.versions"),
            cudnn=self.string(obj.get("cudnn"), f"{key}.cudnn", allow_none=True),
            source=self.string(obj.get("source", ""), f"{key}.source"),
        )

    def versions(self, value: Any, key: str) -> tuple[str, ...]:
        out = self.strings(value, key)
        for i, v in enumerate(out):
            try:
                Version(v)
            except InvalidVersion:
                raise self.fail(f"{key}[{i}]", f"not a PEP 440 version: {v!r}") from None
        dupes = sorted({v for v in out if out.count(v) > 1})
        if dupes:
            raise self.fail(key, f"duplicate version {dupes[0]}")
        return out

    def known_bad(self, value: Any, key: str) -> KnownBad:
        obj = self.mapping(value, key)
        self.unknown_keys(obj, ("version", "problem", "fix", "affects", "source"), key)
        return KnownBad(
            version=self.string(self.req(obj, "version", key), f"{key}.version"),
            problem=self.string(self.req(obj, "problem", key), f"{key}.problem"),
            fix=self.string(self.req(obj, "fix", key), f"{key}.fix"),
            affects=self.string(obj.get("affects"), f"{key}.affects", allow_none=True),
        )

    def release(self, value: Any, key: str) -> Release:
        obj = self.mapping(value, key)
        allowed = ("line", "versions", "cuda", "cudnn_major", "cudnn", "source", "source_ref", "python",
                   "torch", "feeds", "provider_needed", "pybind_needed_cuda", "extras", "archs",
                   "known_bad", "notes", "wheels", "requires", "tensorrt_needed", "pypi")
        self.unknown_keys(obj, allowed, key)
        line = self.string(self.req(obj, "line", key), f"{key}.line")
        if not re.fullmatch(r"\d+\.\d+", line):
            raise self.fail(f"{key}.line", f"expected a release line such as '1.20', got {line!r}")
        cuda = self.string(self.req(obj, "cuda", key), f"{key}.cuda")
        if parse_cuda_request(cuda) is None:
            raise self.fail(f"{key}.cuda", f"expected a CUDA version such as '12.2' or '12.x', got {cuda!r}")
        source = self.string(self.req(obj, "source", key), f"{key}.source")
        if source not in ("wheel", "doc"):
            raise self.fail(f"{key}.source", f"must be 'wheel' or 'doc', got {source!r}")
        source_ref = self.string(self.req(obj, "source_ref", key), f"{key}.source_ref")
        if source == "wheel" and not source_ref.endswith(".whl"):
            raise self.fail(f"{key}.source_ref", "a row with source 'wheel' must name the .whl file read")
        if source == "doc" and not source_ref.startswith(("https://", "http://")):
            raise self.fail(f"{key}.source_ref", "a row with source 'doc' must give the URL")
        torch = self.string(obj.get("torch"), f"{key}.torch", allow_none=True)
        if torch is not None:
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                SpecifierSet(torch)
            except InvalidSpecifier:
                raise self.fail(f"{key}.torch", f"not a PEP 440 specifier: {torch!r}") from None
        extras_raw = self.mapping(obj.get("extras") or {}, f"{key}.extras")
        extras = {str(k): self.strings(v, f"{key}.extras.{k}") for k, v in extras_raw.items()}
        wheels_raw = self.mapping(obj.get("wheels") or {}, f"{key}.wheels")
        wheels = {self.string(k, f"{key}.wheels.{k}"): self.string(v, f"{key}.wheels.{k}")
                  for k, v in wheels_raw.items()}
        return Release(
            line=line,
            versions=self.versions(self.req(obj, "versions", key), f"{key}.versions"),
            cuda=cuda,
            cudnn_major=self.integer(self.req(obj, "cudnn_major", key), f"{key}.cudnn_major", allow_none=True),
            cudnn=self.string(obj.get("cudnn"), f"{key}.cudnn", allow_none=True),
            source=source,
            source_ref=source_ref,
            python=self.strings(obj.get("python"), f"{key}.python"),
            torch=torch,
            feeds=self.each(obj.get("feeds") or [], f"{key}.feeds", self.feed),
            provider_needed=self.strings(obj.get("provider_needed"), f"{key}.provider_needed"),
            pybind_needed_cuda=self.strings(obj.get("pybind_needed_cuda"), f"{key}.pybind_needed_cuda"),
            extras=extras,
            archs=self.strings(obj.get("archs"), f"{key}.archs"),
            known_bad=self.each(obj.get("known_bad") or [], f"{key}.known_bad", self.known_bad),
            notes=self.strings(obj.get("notes"), f"{key}.notes"),
            wheels=wheels,
            requires=self.strings(obj.get("requires"), f"{key}.requires"),
            tensorrt_needed=self.strings(obj.get("tensorrt_needed"), f"{key}.tensorrt_needed"),
            pypi=self.boolean(obj.get("pypi", True), f"{key}.pypi"),
        )

    # -- cross-checks ------------------------------------------------------------------------------
    def check_consistency(self, releases: tuple[Release, ...], cuda_majors: dict[int, CudaMajor],
                          cudnn_majors: dict[int, CudnnMajor], torch: tuple[TorchRelease, ...]) -> None:
        for major, cm in cuda_majors.items():
            key = f"cuda_majors.{major}"
            names = [lib.name for lib in cm.libraries]
            for i, lib in enumerate(cm.libraries):
                self.check_soname(lib, f"{key}.libraries[{i}]", major)
                for dep in lib.depends:
                    if dep not in names[:i]:
                        raise self.fail(f"{key}.libraries[{i}].depends",
                                        f"{dep!r} must be listed before {lib.name!r} (load order)")
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise self.fail(f"{key}.libraries", f"duplicate library {dupes[0]!r}")
        for major, dm in cudnn_majors.items():
            key = f"cudnn_majors.{major}"
            for i, lib in enumerate(dm.libraries):
                if not re.fullmatch(rf"libcudnn(_[a-z_]+)?\.so\.{major}", lib.soname):
                    raise self.fail(f"{key}.libraries[{i}].soname",
                                    f"{lib.soname!r} is not a cuDNN {major} soname (libcudnn*.so.{major})")
            for cuda in dm.packages:
                if cuda not in cuda_majors:
                    raise self.fail(f"{key}.packages.{cuda}", f"CUDA major {cuda} has no `cuda_majors` entry")
        seen_lines: dict[str, int] = {}
        seen_versions: dict[str, str] = {}
        for i, r in enumerate(releases):
            key = f"releases[{i}]"
            if r.line in seen_lines:
                raise self.fail(f"{key}.line", f"duplicate release line {r.line} "
                                               f"(also releases[{seen_lines[r.line]}])")
            seen_lines[r.line] = i
            for j, v in enumerate(r.versions):
                if _line_key(Version(v)) != _line_key(Version(r.line)):
                    raise self.fail(f"{key}.versions[{j}]", f"{v} does not belong to line {r.line}")
                if v in seen_versions:
                    raise self.fail(f"{key}.versions[{j}]", f"duplicate version {v} (also in {seen_versions[v]})")
                seen_versions[v] = key
            self.check_build(r.cuda_major, r.cudnn_major, key, cuda_majors, cudnn_majors)
            for j, f in enumerate(r.feeds):
                self.check_build(f.cuda_major, f.cudnn_major, f"{key}.feeds[{j}]", cuda_majors, cudnn_majors)
                for k, v in enumerate(f.versions):
                    if v not in r.versions:
                        raise self.fail(f"{key}.feeds[{j}].versions[{k}]",
                                        f"{v} is not one of the line's versions")
            for j, kb in enumerate(r.known_bad):
                if kb.version not in r.versions:
                    raise self.fail(f"{key}.known_bad[{j}].version", f"{kb.version} is not one of the line's versions")
            for j, soname in enumerate(r.provider_needed):
                m = re.fullmatch(r"lib(cudart|cublasLt|cublas|nvrtc)\.so\.(\d+)(?:\.\d+)*", soname)
                if m and int(m.group(2)) != r.cuda_major:
                    raise self.fail(f"{key}.provider_needed[{j}]",
                                    f"{soname} belongs to CUDA {m.group(2)}, but the release says CUDA {r.cuda}")
            if r.source == "wheel" and r.source_ref not in r.wheels.values() and r.wheels:
                raise self.fail(f"{key}.source_ref", "names a wheel that `wheels` does not list")
        for i, t in enumerate(torch):
            for j, tv in enumerate(t.variants):
                if tv.cuda_major is not None and tv.cuda_major not in cuda_majors:
                    raise self.fail(f"torch[{i}].variants[{j}].cuda",
                                    f"CUDA major {tv.cuda_major} has no `cuda_majors` entry")

    def check_build(self, cuda: int, cudnn: int | None, key: str, cuda_majors: dict[int, CudaMajor],
                    cudnn_majors: dict[int, CudnnMajor]) -> None:
        if cuda not in cuda_majors:
            raise self.fail(f"{key}.cuda", f"CUDA major {cuda} has no `cuda_majors` entry "
                                           f"(known: {', '.join(map(str, sorted(cuda_majors)))})")
        if cudnn is not None and cudnn not in cudnn_majors:
            raise self.fail(f"{key}.cudnn_major", f"cuDNN major {cudnn} has no `cudnn_majors` entry "
                                                  f"(known: {', '.join(map(str, sorted(cudnn_majors)))})")

    def check_soname(self, lib: LibSpec, key: str, major: int) -> None:
        """Sonames whose number is the CUDA major must carry this major (cufft/curand have their own)."""
        m = re.fullmatch(r"lib(cudart|cublasLt|cublas|nvrtc|nvJitLink)\.so\.(\d+)(?:\.\d+)*", lib.soname)
        if m and int(m.group(2)) != major:
            raise self.fail(f"{key}.soname", f"{lib.soname} belongs to CUDA {m.group(2)}, not CUDA {major}")
        if lib.windows_dll and lib.name in ("cudart", "cublas", "cublasLt"):
            dm = re.search(r"64_(\d+)\.dll$", lib.windows_dll)
            if dm and not dm.group(1).startswith(str(major)):
                raise self.fail(f"{key}.windows_dll",
                                f"{lib.windows_dll} belongs to CUDA {dm.group(1)[:2]}, not CUDA {major}")


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)
