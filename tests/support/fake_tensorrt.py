"""gcc-built TensorRT and plugin-EP stand-ins, installed the way pip, a tarball and apt lay them out.

The TensorRT stand-ins carry the real sonames (``libnvinfer.so.10``, ``libnvinfer_plugin.so.10``,
``libnvonnxparser.so.10``) and export the real version functions with NVIDIA's encoding
(``getInferLibVersion`` -> 10000*major + 100*minor + patch), so a preload can prove what it loaded. The
pip layout is that of ``tensorrt-cuNN`` (a meta distribution without files), ``tensorrt-cuNN-libs``
(``tensorrt_libs/``) and ``tensorrt-cuNN-bindings`` (``tensorrt_bindings/``), as the package table
records them (scripts/data/package_table.yaml, doc_facts.tensorrt_layout).

The plugin stand-in copies the ELF facts of ``onnxruntime-ep-nv-tensorrt-rtx-cu13`` 0.5.0
(tests/data/plugin_eps/nv_tensorrt_rtx_cu13_0_5_0.json, read from the real wheel): the same file names,
sonames and DT_NEEDED, and an ``__init__.py`` of our own that does at import what the real one does (it
is never run by ortdoctor, which reads it as text).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fake_site import install_dist
from tests.support.sharedlibs import build_so

DATA = Path(__file__).resolve().parents[1] / "data" / "plugin_eps"
PLUGIN_FACTS = DATA / "nv_tensorrt_rtx_cu13_0_5_0.json"


def version_int(version: str) -> int:
    major, minor, patch = (int(x) for x in [*version.split("."), "0", "0"][:3])
    return major * 10000 + minor * 100 + patch if major >= 10 else major * 1000 + minor * 100 + patch


def build_tensorrt(out: Path, version: str, *, cuda_needed: Path | None = None) -> dict[str, Path]:
    """Compile libnvinfer / libnvinfer_plugin / libnvonnxparser of ``version`` ("11.4.0.106") and its builder
    resource into ``out``. ``cuda_needed`` (a built libcudart) becomes a DT_NEEDED of libnvinfer."""
    major = version.split(".")[0]
    short = ".".join(version.split(".")[:3])
    code = version_int(version)
    libs: dict[str, Path] = {}
    libs["nvinfer"] = build_so(out, f"libnvinfer.so.{major}", needed=(cuda_needed,) if cuda_needed else (),
                               source=f"int getInferLibVersion(void) {{ return {code}; }}\n")
    libs["nvinfer_plugin"] = build_so(out, f"libnvinfer_plugin.so.{major}", needed=(libs["nvinfer"],),
                                      source="int initLibNvInferPlugins(void *l, const char *n) { return 1; }\n")
    libs["nvonnxparser"] = build_so(out, f"libnvonnxparser.so.{major}", needed=(libs["nvinfer"],),
                                    source=f"int getNvOnnxParserVersion(void) {{ return {code}; }}\n")
    libs["builder_resource"] = build_so(out, f"libnvinfer_builder_resource.so.{short}")
    return libs


def install_tensorrt_pip(site: Path, libs: dict[str, Path], version: str, cuda_major: int, *,
                         parser: bool = True, builder_resource: bool = True) -> Path:
    """``pip install tensorrt-cuNN==version``: the meta, -libs and -bindings distributions. Returns
    ``site/tensorrt_libs``."""
    major = version.split(".")[0]
    short = ".".join(version.split(".")[:3])
    name = f"tensorrt-cu{cuda_major}"
    files: dict[str, bytes | Path] = {
        "tensorrt_libs/__init__.py": b"",
        f"tensorrt_libs/libnvinfer.so.{major}": libs["nvinfer"],
        f"tensorrt_libs/libnvinfer_plugin.so.{major}": libs["nvinfer_plugin"],
    }
    if parser:
        files[f"tensorrt_libs/libnvonnxparser.so.{major}"] = libs["nvonnxparser"]
    if builder_resource:
        files[f"tensorrt_libs/libnvinfer_builder_resource.so.{short}"] = libs["builder_resource"]
    install_dist(site, f"{name}-libs", version, files)
    install_dist(site, f"{name}-bindings", version, {"tensorrt_bindings/__init__.py": b""})
    install_dist(site, name, version, {}, requires=(f"tensorrt_cu{cuda_major}_libs=={version}",
                                                    f"tensorrt_cu{cuda_major}_bindings=={version}"))
    return site / "tensorrt_libs"


def install_tensorrt_tarball(root: Path, libs: dict[str, Path], version: str) -> Path:
    """``TensorRT-<version>/lib`` as the tar file unpacks: versioned files and soname symlinks."""
    major = version.split(".")[0]
    short = ".".join(version.split(".")[:3])
    lib = root / f"TensorRT-{version}" / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    for comp in ("nvinfer", "nvinfer_plugin", "nvonnxparser"):
        real = lib / f"lib{comp}.so.{short}"
        real.write_bytes(libs[comp].read_bytes())
        (lib / f"lib{comp}.so.{major}").symlink_to(real.name)
        (lib / f"lib{comp}.so").symlink_to(f"lib{comp}.so.{major}")
    (lib / f"libnvinfer_builder_resource.so.{short}").write_bytes(libs["builder_resource"].read_bytes())
    return lib


def plugin_facts() -> dict[str, object]:
    data: dict[str, object] = json.loads(PLUGIN_FACTS.read_text())
    return data


def install_plugin(site: Path, build_dir: Path, *, cudart_file: str | None = None) -> Path:
    """The TensorRT-RTX plugin stand-in, built from the real wheel's ELF facts. Returns its package dir.

    ``cudart_file`` renames the bundled cudart file (a package that ships it under its soname)."""
    facts = plugin_facts()
    package = str(facts["import_name"])
    libraries = facts["shared_libraries"]
    assert isinstance(libraries, list)
    stubs: dict[str, Path] = {}

    def stub(soname: str) -> Path:
        # libraries the plugin takes from the system (libcuda, libnvidia-ml, libz, ...): link-time stand-ins
        if soname not in stubs:
            stubs[soname] = build_so(build_dir / "system", soname)
        return stubs[soname]

    built: dict[str, Path] = {}
    for entry in sorted(libraries, key=lambda e: len(e["needed"])):  # dependencies first
        deps = tuple(built[n] if n in built else stub(n) for n in entry["needed"])
        file_name = str(entry["file"]).rsplit("/", 1)[-1]
        if cudart_file and file_name.startswith("libcudart"):
            file_name = cudart_file
        runpath = ":".join(entry.get("runpath", [])) + (":" if entry.get("runpath_has_cwd") else "")
        args = (f"-Wl,-rpath,{runpath}",) if runpath else ()
        out = build_so(build_dir / "plugin", entry["soname"], needed=deps, filename=file_name,
                       extra_args=(*args, "-Wl,--enable-new-dtags") if args else ())
        built[entry["soname"]] = out
    files: dict[str, bytes | Path] = {f"{package}/{p.name}": p for p in built.values()}
    files[f"{package}/__init__.py"] = INIT_PY.encode()
    files[f"{package}/_version.py"] = f'__version__ = "{facts["version"]}"\n'.encode()
    install_dist(site, str(facts["name"]), str(facts["version"]), files)
    return site / package


# A stand-in with the same import-time behaviour as the real package's __init__.py: it prepends its
# directory to LD_LIBRARY_PATH, creates soname symlinks, preloads its TensorRT-RTX libraries RTLD_GLOBAL
# and imports onnxruntime. Written for these tests; ortdoctor only reads it.
INIT_PY = '''"""Stand-in of the TensorRT-RTX plugin package (import-time behaviour only)."""
import ctypes
import os
import pathlib

_here = pathlib.Path(__file__).parent
_EP_NAME = "NvTensorRTRTXExecutionProvider"


def get_ep_name():
    return _EP_NAME


def get_library_path():
    return str(_here / "libonnxruntime_providers_nv_tensorrt_rtx.so")


def _setup():
    os.environ["LD_LIBRARY_PATH"] = str(_here) + os.pathsep + os.environ.get("LD_LIBRARY_PATH", "")
    for real, link in (("libtensorrt_rtx.so.1.7.1", "libtensorrt_rtx.so.1"),
                       ("libtensorrt_onnxparser_rtx.so.1.7.1", "libtensorrt_onnxparser_rtx.so.1")):
        if not (_here / link).exists():
            os.symlink(real, _here / link)
        ctypes.CDLL(str(_here / link), mode=ctypes.RTLD_GLOBAL)
    import onnxruntime  # noqa: F401
'''
