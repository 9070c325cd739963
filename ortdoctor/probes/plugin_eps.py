"""Plugin execution providers: ``onnxruntime-ep-*`` packages, and a CUDA EP built as a plugin.

A plugin EP is a shared library that onnxruntime loads through
``register_execution_provider_library(name, path)``; the packages on PyPI (the TensorRT-RTX and
OpenVINO plugins, ...) bundle it with the libraries it needs, sometimes a CUDA runtime of their own.
Every bundled library's ELF headers are read (soname, DT_NEEDED, RUNPATH), and the package's Python
code is read as text (never run) for what its import does and which bundled files it names.

From onnxruntime's main branch on (microsoft/onnxruntime#29544) the CUDA EP itself may be built as a
plugin under the same file name, ``libonnxruntime_providers_cuda.so``; only the build-info string
tells (``cuda-plugin-ep=1``), and it is compiled into the pybind module, where it is read.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable

from ortdoctor.core.facts import ElfInfo, OrtInfo, PeInfo, PluginEpInfo, PluginEpPackage
from ortdoctor.core.patterns import lazy
from ortdoctor.formats.distinfo import DistIndex, Distribution, open_regular
from ortdoctor.formats.elf_rodata import find_marked_string
from ortdoctor.probes.nvidia_wheels import shared_library_files
from ortdoctor.probes.ort import read_binary
from ortdoctor.probes.platform import find_site_dirs

__all__ = ["BUILD_INFO_MARKER", "import_effects", "probe_plugin_eps", "read_build_info"]

BUILD_INFO_MARKER = b"ORT Build Info: "
_CUDA_PLUGIN_RE = lazy(r"(?:^|[ ,])cuda-plugin-ep=(\w+)")
_EP_NAME_RE = lazy(r"""["'](\w+ExecutionProvider)["']""")
_STEM_RE = lazy(r"^(.+?)(?:\.so(?:\.[0-9.]+)?|\.dll)$", re.I)
_MAX_LIBRARIES = 64
_MAX_PYTHON = 512 * 1024  # bytes of one .py file read
_MAX_PYTHON_FILES = 32

# What an __init__.py visibly does at import, recognised by the calls it spells out.
_EFFECTS = (
    (lazy(r"os\.environ\[\s*[\"']LD_LIBRARY_PATH[\"']\s*\]\s*="), "sets LD_LIBRARY_PATH (child processes inherit it)"),
    (lazy(r"RTLD_GLOBAL"), "dlopens libraries with RTLD_GLOBAL"),
    (lazy(r"os\.symlink\(|\.symlink_to\("), "creates symlinks in its own directory"),
    (lazy(r"^\s*(?:import onnxruntime\b|from onnxruntime\b)", re.M), "imports onnxruntime"),
    (lazy(r"os\.add_dll_directory\("), "adds DLL directories"),
)


def import_effects(source: str) -> tuple[str, ...]:
    """What a package's ``__init__.py`` does at import, as far as its text shows."""
    return tuple(what for pattern, what in _EFFECTS if pattern.search(source))


def read_build_info(pybind: ElfInfo | PeInfo | None) -> str | None:
    """onnxruntime's build-info string from the pybind module's read-only data (ELF only)."""
    if not isinstance(pybind, ElfInfo):
        return None
    return find_marked_string(pybind.path, BUILD_INFO_MARKER)


def _read_text(path: str) -> str:
    try:
        with open_regular(path) as f:
            return f.read(_MAX_PYTHON).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""


def _stem(file_name: str) -> str:
    m = _STEM_RE.match(file_name)
    return m.group(1) if m else file_name


def _package(dist: Distribution) -> PluginEpPackage:
    problems: list[str] = list(dist.problems)
    lib_files = shared_library_files(dist)
    libraries: list[ElfInfo | PeInfo] = []
    for rel in lib_files[:_MAX_LIBRARIES]:
        path = dist.abspath(rel)
        if not os.path.isfile(path):
            problems.append(f"{rel} is listed in RECORD but missing")
            continue
        info, why = read_binary(path)
        if info is not None:
            libraries.append(info)
        elif why:
            problems.append(why)
    tops = [rel.split("/", 1)[0] for rel in (*lib_files, *dist.files()) if "/" in rel
            and not rel.split("/", 1)[0].endswith((".dist-info", ".data"))]
    import_name = tops[0] if tops else None
    py_files = [rel for rel in dist.files() if rel.endswith(".py") and import_name is not None
                and rel.startswith(import_name + "/")][:_MAX_PYTHON_FILES]
    texts = {rel: _read_text(dist.abspath(rel)) for rel in py_files}
    init = texts.get(f"{import_name}/__init__.py", "")
    python = "\n".join(texts.values())
    named = tuple(os.path.basename(lib.path) for lib in libraries if _stem(os.path.basename(lib.path)) in python)
    provider = next((lib.path for lib in libraries if "onnxruntime_providers_" in os.path.basename(lib.path)), None)
    return PluginEpPackage(
        name=dist.name,
        version=dist.version,
        location=dist.location,
        import_name=import_name,
        libraries=tuple(libraries),
        provider_library=provider,
        ep_names=tuple(dict.fromkeys(_EP_NAME_RE.findall(init))),
        import_effects=import_effects(init),
        named_in_python=named,
        problems=tuple(problems),
    )


def probe_plugin_eps(
    site_dirs: Iterable[str] | None = None, *, index: DistIndex | None = None, ort: OrtInfo | None = None
) -> PluginEpInfo:
    """Every ``onnxruntime-ep-*`` distribution, and whether the installed onnxruntime's CUDA EP is a plugin."""
    if index is None:
        index = DistIndex(find_site_dirs(sys.path) if site_dirs is None else site_dirs)
    packages = tuple(_package(index.load(ref)) for ref in index.starting_with("onnxruntime-ep-"))
    build_info = None
    plugin: bool | None = None
    path = None
    if ort is not None and ort.is_gpu_build and ort.pybind is not None:
        path = ort.pybind.path
        build_info = read_build_info(ort.pybind)
        if build_info is not None:
            # a build without the option does not name it: no pattern to compile then
            m = _CUDA_PLUGIN_RE.search(build_info) if "cuda-plugin-ep=" in build_info else None
            plugin = bool(m and m.group(1) not in ("0", "OFF", "off"))
    return PluginEpInfo(packages=packages, build_info=build_info, build_info_path=path, cuda_plugin_ep=plugin)
