"""What a set of declared files would install, as the matrix sees it: the stack ``ortdoctor lint`` judges.

A :class:`Stack` is one environment the files describe (a requirements file with what it includes, a
pyproject's dependencies with one optional group, a Dockerfile stage, a conda file, a lock file): its
requirement pins, the package feeds it names, and what else it declares (the Python, the base image's
CUDA and cuDNN, conda's CUDA, target GPUs, a driver floor), each with the file and line it came from.

The functions here are pure: which onnxruntime-gpu builds a pin can install (:func:`ort_builds`), which
CUDA and cuDNN major a torch pin brings (:func:`torch_majors`), which a base image tag names
(:func:`image_majors`), which a pinned NVIDIA wheel is for. Requirement strings are parsed with
``packaging``; a marker is read for Linux x86_64, the platform the matrix's rows describe.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ortdoctor.core.package_names import ORT_CPU, ORT_DIRECTML, ORT_GPU, ORT_NIGHTLY, ORT_OPENVINO
from ortdoctor.core.record import record
from ortdoctor.decide.matrix.model import Feed, Matrix, Release, ReleaseMatch
from ortdoctor.decide.ort_dependents import dependents

__all__ = [
    "CPU_FLAVOURS",
    "GPU_PACKAGE",
    "PYTHONS",
    "Declared",
    "OrtBuild",
    "Pin",
    "Stack",
    "Where",
    "admitted_pythons",
    "applies",
    "exact_version",
    "feed_major",
    "image_majors",
    "lowest_python",
    "matching_versions",
    "names_relevant",
    "ort_builds",
    "parse_pin",
    "release_match",
    "relevant",
    "torch_index_major",
    "torch_majors",
    "wheel_major",
]

GPU_PACKAGE = ORT_GPU
#: Distributions that install the same `onnxruntime/` package as onnxruntime-gpu without its CUDA EP.
CPU_FLAVOURS = (ORT_CPU, ORT_DIRECTML, ORT_OPENVINO, ORT_NIGHTLY)
#: The CPython minors a declaration is checked for when it gives no upper bound.
PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15")


@record
class Where:
    """A place in a file: a finding names it, a fix replaces its line."""

    file: str  # as given on the command line, or relative to the directory linted
    line: int  # 1-based
    text: str = ""  # the line as written (what a replacement replaces)


@record
class Pin:
    name: str  # canonical: "onnxruntime-gpu"
    spec: str  # "==1.18.0", ">=1.17", "" (any), "@ URL" (a direct reference)
    extras: tuple[str, ...]
    marker: str | None
    where: Where
    requirement: str  # the requirement as written: "onnxruntime-gpu[cuda]==1.20.1; sys_platform == 'linux'"
    index: str | None = None  # the index a lock file says it comes from
    optional: bool = False  # a lock file marks it optional (installed only with an extra)
    via: str | None = None  # onnxruntime-gpu required by this requirement's metadata (where: its line)


@record
class Declared:
    """A fact a file states about the environment beside its pins."""

    kind: str  # "python", "cuda", "cudnn", "gpu", "driver", "ignore" (a finding id [tool.ortdoctor] silences)
    value: str  # "3.10", "12.4", "9", "sm_70", "535.104"
    origin: str  # "the base image nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04", "requires-python"
    where: Where
    exact: bool = True  # python: the version itself (an image), not a lower bound (requires-python)
    admits: tuple[str, ...] = ()  # python, not exact: every minor of PYTHONS the declaration admits


@record
class Stack:
    name: str  # "requirements.txt", "pyproject.toml [project.optional-dependencies] gpu", "Dockerfile"
    pins: tuple[Pin, ...]
    feeds: tuple[tuple[str, str, Where], ...] = ()  # (kind, url, where): "index-url", "extra-index-url"
    declared: tuple[Declared, ...] = ()
    locked: bool = False  # a lock file: the versions are what gets installed
    # a distributable package's own requirements (a pyproject with a build system: its dependencies and
    # extras): what its users' installers resolve beside their own pins, so a fix is a range, not one version
    library: bool = False
    # (a file of this stack, a Python another stack that installs that file declares): a Dockerfile that
    # installs Python 3.10 and `-r requirements.txt` runs that file's lines under 3.10, so a fix written
    # into it must have a 3.10 wheel even where the file read alone declares no Python
    installed_under: tuple[tuple[str, Declared], ...] = ()


@record
class OrtBuild:
    version: str
    release: Release
    cuda_major: int
    cudnn_major: int | None
    feed: Feed | None  # None: the PyPI wheel


# -- requirements ---------------------------------------------------------------------------------
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def relevant(name: str) -> bool:
    """Whether any rule reads a requirement of this (canonical) name: the onnxruntime flavours, torch,
    NVIDIA wheels and the packages whose metadata requires onnxruntime."""
    return (name == GPU_PACKAGE or name in CPU_FLAVOURS or name == "torch" or name.startswith("nvidia-")
            or name in dependents())


def names_relevant(text: str) -> bool:
    """Whether a requirement string names a package a rule reads: the check before building its place and
    parsing it (most requirements of a file are not)."""
    m = _NAME.match(text)
    return m is not None and relevant(canonicalize_name(m.group(1)))


@lru_cache(maxsize=16384)
def _parsed(text: str) -> tuple[str, str, tuple[str, ...], str | None] | None:
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    # the marker as written (packaging re-quotes it), for a replacement line that changes nothing else
    marker = text.split(";", 1)[1].strip() if req.marker and ";" in text else (str(req.marker) if req.marker else None)
    # a direct reference (`name @ URL`) installs that one file: no range of versions to judge
    spec = f"@ {req.url}" if req.url else str(req.specifier)
    return canonicalize_name(req.name), spec, tuple(sorted(req.extras)), marker


def parse_pin(text: str, where: Where, *, index: str | None = None, optional: bool = False,
              every: bool = False) -> Pin | None:
    """A requirement string as a Pin; None for what is not a named requirement (a path, an URL, garbage)
    and, unless ``every``, for a package no rule reads (most of a lock file: parsing them costs time)."""
    text = text.strip()
    m = _NAME.match(text)
    if m is None or (not every and not relevant(canonicalize_name(m.group(1)))):
        return None
    parsed = _parsed(text)
    if parsed is None:
        return None
    name, spec, extras, marker = parsed
    return Pin(name, spec, extras, marker, where, text, index, optional)


def _env(python: str | None) -> dict[str, str]:
    env = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
           "os_name": "posix", "implementation_name": "cpython", "platform_python_implementation": "CPython",
           "extra": ""}
    if python:
        env["python_version"] = python
        env["python_full_version"] = python + ".0"
    return env


def applies(pin: Pin, python: str | None, extras: Iterable[str] = ()) -> bool:
    """Whether pip would install the pin on Linux x86_64 under ``python`` ("3.11"; None: any, so a marker
    that only names the Python is taken as true)."""
    if not pin.marker:
        return True
    return _applies(pin.marker, python, tuple(extras))


@lru_cache(maxsize=8192)
def _applies(text: str, python: str | None, extras: tuple[str, ...]) -> bool:
    try:
        marker = Marker(text)
    except InvalidMarker:
        return True
    pythons = [python] if python else list(PYTHONS)
    for extra in (*extras, ""):
        for p in pythons:
            env = _env(p)
            env["extra"] = extra
            try:
                if marker.evaluate(env):
                    return True
            except (UndefinedComparison, UndefinedEnvironmentName):
                return True
    return False


def exact_version(spec: str) -> str | None:
    """The version of ``==X``/``===X`` (not ``==X.*``); None otherwise."""
    m = re.fullmatch(r"===?\s*([^,*\s]+)", spec.strip())
    return m.group(1) if m else None


def _spec(spec: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        return None


def _vkey(v: str) -> Version:
    try:
        return Version(v)
    except InvalidVersion:
        return Version("0")


# release_for() builds its index of lines on every call; a monorepo asks about the same few versions
# thousands of times
_MATCHES: dict[tuple[int, str], ReleaseMatch | None] = {}


def release_match(matrix: Matrix, version: str) -> ReleaseMatch | None:
    """``matrix.release_for(version)``, remembered."""
    key = (id(matrix), version)
    if key not in _MATCHES:
        if len(_MATCHES) > 4096:
            _MATCHES.clear()
        _MATCHES[key] = matrix.release_for(version)
    return _MATCHES[key]


_MATCHING: dict[tuple[int, str, str], list[str]] = {}


def matching_versions(matrix: Matrix, name: str, spec: str) -> list[str]:
    """The versions PyPI has of ``name`` that ``spec`` admits, oldest first (no pre-releases)."""
    key = (id(matrix), name, spec)
    if key not in _MATCHING:
        if len(_MATCHING) > 4096:
            _MATCHING.clear()
        ss = _spec(spec)
        _MATCHING[key] = [] if ss is None else sorted(
            (v for v in matrix.versions_of(name) if ss.contains(v, prereleases=False)), key=_vkey)
    return list(_MATCHING[key])


def lowest_python(spec: str) -> str | None:
    """The lowest CPython minor of :data:`PYTHONS` a requires-python specifier admits."""
    ss = _spec(spec)
    if ss is None:
        return None
    return next((p for p in PYTHONS if ss.contains(p + ".0") or ss.contains(p + ".99")), None)


def admitted_pythons(spec: str) -> tuple[str, ...]:
    """Every CPython minor of :data:`PYTHONS` a requires-python specifier admits."""
    ss = _spec(spec)
    if ss is None:
        return ()
    return tuple(p for p in PYTHONS if ss.contains(p + ".0") or ss.contains(p + ".99"))


# -- feeds ----------------------------------------------------------------------------------------
def _norm_url(url: str) -> str:
    return url.strip().rstrip("/").lower()


def feed_major(matrix: Matrix, url: str) -> int | None:
    """The CUDA major of onnxruntime-gpu builds an index URL serves (the matrix's feeds); None otherwise."""
    for name, feed_url in matrix.feeds.items():
        if _norm_url(feed_url) == _norm_url(url) or _norm_url(url).startswith(_norm_url(feed_url)):
            m = re.search(r"(\d+)$", name)
            return int(m.group(1)) if m else None
    # the same Azure Artifacts feeds under their older organisation URL
    # (https://pkgs.dev.azure.com/onnxruntime/onnxruntime/_packaging/onnxruntime-cuda-12/pypi/simple)
    m = re.search(r"/_packaging/onnxruntime-cuda-(\d+)/pypi/simple", url, re.IGNORECASE)
    return int(m.group(1)) if m else None


_TORCH_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/)?(cu\d+|cpu|rocm[\d.]+)", re.IGNORECASE)


def torch_index_major(url: str) -> tuple[str, int | None] | None:
    """``("cu121", 12)`` for a PyTorch index URL, ``("cpu", None)``; None for any other URL."""
    m = _TORCH_INDEX.search(url)
    if m is None:
        return None
    tag = m.group(1).lower()
    if tag.startswith("cu"):
        return tag, int(tag[2:-1])
    return tag, None


def ort_builds(matrix: Matrix, version: str, feeds: Sequence[tuple[str, str]], *,
               index: str | None = None) -> list[OrtBuild]:
    """The builds of onnxruntime-gpu ``version`` pip can pick with these feeds (``(kind, url)``): the
    PyPI wheel unless ``--index-url`` names an onnxruntime feed, and each feed's build of that version.
    ``index``: the one index a lock file names."""
    match = release_match(matrix, version)
    if match is None:
        return []
    release = match.release
    urls = [(kind, url) for kind, url in feeds if kind in ("index-url", "extra-index-url")]
    if index is not None:
        urls = [("index-url", index)]
    majors = {feed_major(matrix, url): kind for kind, url in urls}
    majors.pop(None, None)
    pypi = not any(kind == "index-url" for kind in majors.values())
    if index is not None and feed_major(matrix, index) is None:
        pypi = True
    out: list[OrtBuild] = []
    if pypi and release.pypi:
        out.append(OrtBuild(version, release, release.cuda_major, release.cudnn_major, None))
    for feed in release.feeds:
        if feed.cuda_major in majors and (not feed.versions or version in feed.versions):
            out.append(OrtBuild(version, release, feed.cuda_major, feed.cudnn_major, feed))
    if not out and release.pypi:
        out.append(OrtBuild(version, release, release.cuda_major, release.cudnn_major, None))
    return out


# -- what other packages and images bring ---------------------------------------------------------
def torch_majors(matrix: Matrix, pin: Pin, feeds: Sequence[tuple[str, str]]) -> tuple[int | None, int | None,
                                                                                      str] | None:
    """(CUDA major, cuDNN major, why) of a torch pin: its ``+cuXYZ`` tag, else a PyTorch index URL's tag
    with its version, else the PyPI default build of its exact version. None when it cannot be told
    (a range without an index) or for a CPU build."""
    version = exact_version(pin.spec)
    local = re.search(r"\+(cu\d+|cpu|rocm[\d.]+)$", version or "")
    tag: str | None = local.group(1).lower() if local else None
    how = f"`{pin.requirement}`"
    if tag is None:
        for kind, url in ([("index-url", pin.index)] if pin.index else []) + list(feeds):
            if version is None and kind != "index-url":
                # an unpinned torch with the PyTorch index as an extra one: pip takes the highest version
                # of either index, and PyPI's newest is higher than anything on an old cuXYZ index
                continue
            hit = torch_index_major(url)
            if hit is not None:
                tag, how = hit[0], f"`{pin.requirement}` from {url}"
                break
    if tag is not None and not tag.startswith("cu"):
        return None
    line = matrix.torch_release(version) if version else None
    if tag is None:
        if line is None:
            return None
        default = next((v for v in line.variants if v.pypi_default), None)
        if default is None or default.cuda_major is None:
            return None
        return default.cuda_major, default.cudnn_major, f"`{pin.requirement}` (PyPI's build of it is {default.tag})"
    cuda = int(tag[2:-1])
    cudnn = None
    if line is not None:
        variant = next((v for v in line.variants if v.tag == tag), None)
        cudnn = variant.cudnn_major if variant is not None else None
    return cuda, cudnn, how


def wheel_major(matrix: Matrix, name: str) -> int | None:
    """The CUDA major a pinned NVIDIA wheel is built for, from the package table."""
    row = matrix.packages.get(canonicalize_name(name))
    if row is not None and row.cuda is not None:
        return row.cuda
    m = re.fullmatch(r"nvidia-[a-z0-9-]+-cu(\d+)", canonicalize_name(name))
    return int(m.group(1)) if m else None


_NV_CUDA = re.compile(r"(?:^|/)(?:nvidia/)?cuda:(\d+)\.(\d+)(?:\.\d+)?-(?:(cudnn(\d*))-)?", re.IGNORECASE)
_PT_IMAGE = re.compile(r"(?:^|/)pytorch/pytorch:([\d.]+)-cuda(\d+)\.(\d+)-cudnn(\d+)-", re.IGNORECASE)


def image_majors(image: str) -> tuple[str, int | None] | None:
    """(CUDA ``major.minor``, cuDNN major or None) a base image's tag names: ``nvidia/cuda:X.Y.Z-cudnnN-...``
    (``-cudnn-`` without a number: cuDNN 9, the only major those tags carry) and ``pytorch/pytorch:T-cudaX.Y-
    cudnnN-...``; None for other images."""
    m = _PT_IMAGE.search(image)
    if m:
        return f"{m.group(2)}.{m.group(3)}", int(m.group(4))
    m = _NV_CUDA.search(image)
    if m and ("nvidia/cuda:" in image.lower() or image.lower().startswith("cuda:")):
        cudnn: int | None = None
        if m.group(3):
            cudnn = int(m.group(4)) if m.group(4) else 9
        return f"{m.group(1)}.{m.group(2)}", cudnn
    return None
