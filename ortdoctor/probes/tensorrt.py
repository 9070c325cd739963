"""TensorRT on disk: pip's ``tensorrt_libs/``, a tarball's ``lib/`` on LD_LIBRARY_PATH, apt's files in the
ld.so cache. Nothing is loaded.

TensorRT is found by the names the loader looks for (``libnvinfer.so.10``, ``libnvinfer_plugin.so.10``,
``libnvonnxparser.so.10``); the libraries of one major in one directory are one install. Its version
comes, in this order, from the pip distribution that owns the files (``tensorrt-cu13-libs 10.16.1.11``),
from dpkg's status file for apt's packages (``libnvinfer10 10.14.1.48-1+cuda12.9``, which also names the
CUDA it was built for), from the real file behind the soname (a tarball's ``libnvinfer.so.10.9.0``) or
from the builder resource's name (``libnvinfer_builder_resource.so.10.9.0``), which engine building
dlopens and a partial install lacks. Linux only: on Windows nothing is reported.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping

from ortdoctor.core.facts import (
    ElfInfo,
    SearchDir,
    SystemInfo,
    TensorrtDistribution,
    TensorrtInfo,
    TensorrtInstall,
    TensorrtLibrary,
)
from ortdoctor.core.patterns import lazy
from ortdoctor.formats.distinfo import DistIndex, normalize, open_regular
from ortdoctor.formats.elf import ElfError, read_elf
from ortdoctor.probes.platform import find_site_dirs

__all__ = ["parse_dpkg_tensorrt", "probe_tensorrt", "scan_directory", "tensorrt_component"]

# The names the loader looks for, and the versioned real files behind them.
_SONAME_RE = lazy(r"^lib(nvinfer|nvinfer_plugin|nvonnxparser)\.so\.(\d+)$")
_SONAME_PREFIXES = ("libnvinfer", "libnvonnxparser")
_COMPONENTS = ("nvinfer", "nvinfer_plugin", "nvonnxparser")
_REAL_RE = lazy(r"^lib(nvinfer|nvinfer_plugin|nvonnxparser)\.so\.(\d+(?:\.\d+)+)$")
_RESOURCE_RE = lazy(r"^libnvinfer_builder_resource(?:_win)?\.so\.(\d+)((?:\.\d+)*)$")
_CUDA_NEEDED_RE = lazy(r"^lib(?:cudart|cublas|cublasLt)\.so\.(\d+)")
_DIST_CUDA_RE = lazy(r"^tensorrt-cu(\d+)(?:-|$)")
_POST_RE = lazy(r"\.post\d+$")
_DPKG_PACKAGE_RE = lazy(r"^lib(nvinfer|nvinfer-plugin|nvonnxparsers)(\d+)$")
_DPKG_VERSION_RE = lazy(r"^(\d+(?:\.\d+)+)-[^+]*\+cuda(\d+)\.(\d+)")
_MAX_DPKG_STATUS = 64 * 1024 * 1024
_SYSTEM_PREFIXES = ("/usr/lib", "/lib", "/usr/lib64", "/lib64")


def tensorrt_component(file_name: str) -> tuple[str, int] | None:
    """``libnvinfer_plugin.so.10`` -> ("nvinfer_plugin", 10); None for anything else.

    ``_SONAME_RE.match(file_name)``, read by hand (see core/patterns.py): every name of a library
    directory and of the ld.so cache comes through here."""
    if not file_name.startswith(_SONAME_PREFIXES):
        return None
    core = file_name[:-1] if file_name.endswith("\n") else file_name  # "$" also matches before a final newline
    component, sep, major = core[3:].partition(".so.")
    if not sep or component not in _COMPONENTS or not major.isdecimal():  # isdecimal() is \d
        return None
    return component, int(major)


def scan_directory(directory: str, origin: str) -> list[TensorrtInstall]:
    """The TensorRT installs (one per major) in one directory; [] when it holds none or cannot be read."""
    try:
        with os.scandir(directory) as it:
            names = sorted(e.name for e in it)
    except OSError:
        return []
    by_major: dict[int, list[TensorrtLibrary]] = {}
    resources: dict[int, list[str]] = {}
    for name in names:
        comp = tensorrt_component(name)
        if comp is not None:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                by_major.setdefault(comp[1], []).append(_library(path, comp[0], name))
            continue
        m = _RESOURCE_RE.match(name)
        if m:
            resources.setdefault(int(m.group(1)), []).append(name)
    out = []
    for major, libs in sorted(by_major.items(), reverse=True):
        install = TensorrtInstall(directory=directory, origin=origin, major=major, libraries=tuple(libs),
                                  builder_resources=tuple(resources.get(major, ())))
        out.append(_with_file_facts(install))
    return out


def _library(path: str, component: str, soname: str) -> TensorrtLibrary:
    real = os.path.realpath(path)
    m = _REAL_RE.match(os.path.basename(real))
    version = m.group(2) if m and m.group(1) == component else None
    needed: tuple[str, ...] = ()
    if component == "nvinfer":
        try:
            info = read_elf(path)
        except ElfError:
            info = None
        if isinstance(info, ElfInfo):
            needed = info.needed
    return TensorrtLibrary(name=component, soname=soname, path=path, realpath=real, version=version, needed=needed)


def _with_file_facts(install: TensorrtInstall) -> TensorrtInstall:
    """Version from the file names, the CUDA major from libnvinfer's DT_NEEDED, where they say anything."""
    version = next((lib.version for lib in install.libraries if lib.name == "nvinfer" and lib.version), None)
    source = "file names" if version else None
    if version is None:
        for resource in install.builder_resources:
            m = _RESOURCE_RE.match(resource)
            if m and m.group(2):
                version, source = f"{m.group(1)}{m.group(2)}", f"file name {resource}"
                break
    cuda_major = cuda_source = None
    nvinfer = install.library("nvinfer")
    for soname in nvinfer.needed if nvinfer else ():
        cm = _CUDA_NEEDED_RE.match(soname)
        if cm:
            cuda_major, cuda_source = int(cm.group(1)), f"DT_NEEDED {soname}"
            break
    return TensorrtInstall(
        directory=install.directory, origin=install.origin, major=install.major, libraries=install.libraries,
        builder_resources=install.builder_resources, version=version, version_source=source,
        cuda_major=cuda_major, cuda_source=cuda_source)


def parse_dpkg_tensorrt(text: str) -> dict[int, tuple[str, str, int, str]]:
    """TensorRT runtime packages dpkg has installed: major -> (version, package, CUDA major, dpkg version).

    Reads ``libnvinfer10`` / ``libnvinfer-plugin10`` / ``libnvonnxparsers10`` stanzas whose status is
    installed and whose version has the ``+cudaMAJOR.MINOR`` suffix NVIDIA's packages carry.
    """
    out: dict[int, tuple[str, str, int, str]] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line[:1].isspace():
                fields[key.strip().lower()] = value.strip()
        pm = _DPKG_PACKAGE_RE.match(fields.get("package", ""))
        vm = _DPKG_VERSION_RE.match(fields.get("version", ""))
        if not pm or not vm or "installed" not in fields.get("status", "").split():
            continue
        major = int(pm.group(2))
        if pm.group(1) == "nvinfer" or major not in out:
            out[major] = (vm.group(1), fields["package"], int(vm.group(2)), fields["version"])
    return out


def _read_dpkg(path: str) -> str | None:
    try:
        with open_regular(path) as f:
            raw = f.read(_MAX_DPKG_STATUS)
    except (OSError, ValueError):
        return None
    return raw.decode("utf-8", "replace")


def _pip_installs(index: DistIndex) -> tuple[list[TensorrtInstall], list[TensorrtDistribution]]:
    installs: list[TensorrtInstall] = []
    dists: list[TensorrtDistribution] = []
    for ref in (r for r in index.starting_with("tensorrt") if r.name == "tensorrt" or r.name.startswith("tensorrt-")):
        dist = index.load(ref)
        name = normalize(dist.name)
        dists.append(TensorrtDistribution(name=name, version=dist.version, location=dist.location))
        dirs = dict.fromkeys(os.path.dirname(dist.abspath(rel)) for rel in dist.files()
                             if tensorrt_component(rel.rsplit("/", 1)[-1]) is not None)
        cm = _DIST_CUDA_RE.match(name)
        for directory in dirs:
            for found in scan_directory(directory, "pip"):
                installs.append(TensorrtInstall(
                    directory=found.directory, origin="pip", major=found.major, libraries=found.libraries,
                    builder_resources=found.builder_resources,
                    version=_POST_RE.sub("", dist.version) or found.version,
                    version_source=f"{name} {dist.version}", distribution=name,
                    cuda_major=int(cm.group(1)) if cm else found.cuda_major,
                    cuda_source=f"the -cu{cm.group(1)} package name" if cm else found.cuda_source))
    return installs, dists


def _searched_dirs(ld_library_path: Iterable[SearchDir]) -> list[str]:
    # Relative and empty entries are the current directory's: the search-path rules report them, and
    # nothing is looked up there.
    return [d.path for d in ld_library_path if d.exists and not d.relative and d.path]


def _cache_dirs(ldconfig: Mapping[str, tuple[str, ...]]) -> list[str]:
    dirs: dict[str, None] = {}
    for soname, paths in ldconfig.items():
        if tensorrt_component(soname) is not None:
            for p in paths:
                dirs[os.path.dirname(p)] = None
    return list(dirs)


def probe_tensorrt(
    site_dirs: Iterable[str] | None = None,
    *,
    index: DistIndex | None = None,
    system: SystemInfo | None = None,
    fs_root: str = "/",
    os_name: str | None = None,
) -> TensorrtInfo:
    """Every TensorRT install this process could load: pip first (site order), then LD_LIBRARY_PATH, then
    the ld.so cache. A directory reached two ways is reported once, under the first."""
    if (os_name or ("linux" if sys.platform.startswith("linux") else sys.platform)) != "linux":
        return TensorrtInfo()
    if index is None:
        index = DistIndex(find_site_dirs(sys.path) if site_dirs is None else site_dirs)
    system = system or SystemInfo()
    installs, dists = _pip_installs(index)
    for directory in _searched_dirs(system.ld_library_path):
        installs += scan_directory(directory, "LD_LIBRARY_PATH")
    cached = [i for d in _cache_dirs(system.ldconfig) for i in scan_directory(d, "ld.so.cache")]
    if any(_is_system_dir(i.directory, fs_root) for i in cached):
        status = _read_dpkg(os.path.join(fs_root, "var", "lib", "dpkg", "status"))
        packages = parse_dpkg_tensorrt(status) if status else {}
        cached = [_with_dpkg(i, packages) if _is_system_dir(i.directory, fs_root) else i for i in cached]
    installs += cached
    return TensorrtInfo(installs=tuple(_dedupe(installs)), distributions=tuple(dists))


def _is_system_dir(directory: str, fs_root: str) -> bool:
    """A directory apt installs into (under ``fs_root``, the probes' root in tests)."""
    rel = "/" + os.path.relpath(directory, fs_root) if fs_root not in ("", "/") else directory
    return rel.startswith(tuple(p + "/" for p in _SYSTEM_PREFIXES)) or rel in _SYSTEM_PREFIXES


def _with_dpkg(install: TensorrtInstall, packages: Mapping[int, tuple[str, str, int, str]]) -> TensorrtInstall:
    hit = packages.get(install.major)
    if hit is None:
        return install
    version, package, cuda, raw = hit
    return TensorrtInstall(
        directory=install.directory, origin=install.origin, major=install.major, libraries=install.libraries,
        builder_resources=install.builder_resources, version=version, version_source=f"dpkg {package}",
        distribution=install.distribution, cuda_major=cuda,
        cuda_source=f"dpkg {package} {raw}")


def _dedupe(installs: list[TensorrtInstall]) -> list[TensorrtInstall]:
    seen: set[tuple[str, int]] = set()
    out = []
    for i in installs:
        key = (os.path.realpath(i.directory), i.major)
        if key not in seen:
            seen.add(key)
            out.append(i)
    return out
