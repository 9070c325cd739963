#!/usr/bin/env python3
"""Write ``scripts/data/package_table.yaml``: which packages and versions a printed fix may name.

Usage:
    python scripts/data/collect_package_table.py [--out scripts/data/package_table.yaml]

Everything below ``pypi:`` is read from PyPI at run time (the PEP 691 JSON index for the file list,
the wheel's own ``METADATA``/``RECORD`` through HTTP range requests, the ELF dynamic section of a
wheel member through :func:`ortdoctor.formats.elf.read_elf`); every entry names the file it was read from.
The facts that come from documentation (feeds, TensorRT versions of each ONNX Runtime release,
apt package names, plugin EP registration) are kept by hand in ``doc_facts.yaml`` beside this file
and copied into the output unchanged. ``SOURCES.md`` tells where each fact comes from.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import io
import re
import sys
import tarfile
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pypi_remote import RemoteWheel, fetch_small, release_json, simple_index

from ortdoctor.formats.elf import ElfError, read_elf

HERE = Path(__file__).resolve().parent

# The CUDA component wheels a fix may name: (component, [names]). Unsuffixed names are the CUDA 13
# wheels; -cu11/-cu12 the older ones; -cu13 the deprecated stubs.
NVIDIA_COMPONENTS: list[tuple[str, list[str]]] = [
    ("cuda_runtime", ["nvidia-cuda-runtime-cu11", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime",
                      "nvidia-cuda-runtime-cu13"]),
    ("cublas", ["nvidia-cublas-cu11", "nvidia-cublas-cu12", "nvidia-cublas", "nvidia-cublas-cu13"]),
    ("cufft", ["nvidia-cufft-cu11", "nvidia-cufft-cu12", "nvidia-cufft", "nvidia-cufft-cu13"]),
    ("curand", ["nvidia-curand-cu11", "nvidia-curand-cu12", "nvidia-curand", "nvidia-curand-cu13"]),
    ("cuda_nvrtc", ["nvidia-cuda-nvrtc-cu11", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc",
                    "nvidia-cuda-nvrtc-cu13"]),
    ("nvjitlink", ["nvidia-nvjitlink-cu12", "nvidia-nvjitlink", "nvidia-nvjitlink-cu13"]),
    ("cudnn", ["nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "nvidia-cudnn"]),
    ("cuda_cupti", ["nvidia-cuda-cupti-cu11", "nvidia-cuda-cupti-cu12", "nvidia-cuda-cupti",
                    "nvidia-cuda-cupti-cu13"]),
    ("nccl", ["nvidia-nccl-cu11", "nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-nccl"]),
    # torch's other pins: a torch fix pulls these in, so they are checked too.
    ("cusparse", ["nvidia-cusparse-cu11", "nvidia-cusparse-cu12", "nvidia-cusparse", "nvidia-cusparse-cu13"]),
    ("cusolver", ["nvidia-cusolver-cu11", "nvidia-cusolver-cu12", "nvidia-cusolver", "nvidia-cusolver-cu13"]),
    ("nvtx", ["nvidia-nvtx-cu11", "nvidia-nvtx-cu12", "nvidia-nvtx", "nvidia-nvtx-cu13"]),
]

# Names a naive fix would print that PyPI does not have (checked: the index answers 404). The absent
# onnxruntime-ep-* names are listed with the plugin EPs.
ABSENT_NAMES = ["nvidia-cuda-runtime-cu10", "nvidia-cudnn-cu10", "nvidia-nvjitlink-cu11"]

LINUX_X86 = re.compile(r"^(manylinux.*_x86_64|linux_x86_64)$")


# --------------------------------------------------------------------------------------------- helpers

def _v(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _sorted_versions(versions: Iterable[str]) -> list[str]:
    parsed = [(v, p) for v in versions if (p := _v(v)) is not None]
    return [v for v, _ in sorted(parsed, key=lambda t: t[1])]


def _wheel_tags(filename: str) -> tuple[str, str, set[str], set[str]] | None:
    """(name, version, python tags, platform tags) of a wheel file name."""
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    return str(name), str(version), {t.interpreter for t in tags}, {t.platform for t in tags}


def _index_files(name: str) -> list[dict[str, Any]]:
    doc = simple_index(name)
    return list(doc["files"]) if doc else []


def _files_by_version(name: str) -> dict[str, list[dict[str, Any]]]:
    """Every file of a project keyed by its normalised version (wheels and sdists)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in _index_files(name):
        fn: str = f["filename"]
        tags = _wheel_tags(fn) if fn.endswith(".whl") else None
        if tags:
            version = tags[1]
        else:
            m = re.match(r"^(.+?)-(\d[^-]*?)\.(tar\.gz|zip|tar\.bz2)$", fn)
            if not m:
                continue
            version = str(_v(m.group(2)) or m.group(2))
        out[version].append(f)
    return out


def _is_linux_x86_wheel(filename: str) -> bool:
    tags = _wheel_tags(filename) if filename.endswith(".whl") else None
    return bool(tags and any(LINUX_X86.match(p) for p in tags[3]))


def _platform_family(platform: str) -> str:
    if platform == "any":
        return "any"
    if "x86_64" in platform and ("linux" in platform):
        return "linux_x86_64"
    if "aarch64" in platform and "linux" in platform:
        return "linux_aarch64"
    if platform.startswith("win"):
        return {"win_amd64": "win_amd64", "win_arm64": "win_arm64", "win32": "win32"}.get(platform, platform)
    if platform.startswith("macosx"):
        return "macos_arm64" if "arm64" in platform else ("macos_universal2" if "universal2" in platform
                                                          else "macos_x86_64")
    return platform


def _requires(metadata: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]


def _meta_field(metadata: str, field: str) -> str | None:
    for line in metadata.splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
        if not line.strip():
            break
    return None


def _extras_of(requires: list[str]) -> dict[str, list[str]]:
    extras: dict[str, list[str]] = {}
    for r in requires:
        m = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", r)
        if m:
            try:
                req = Requirement(r)
                spec = f"{req.name}{req.specifier}"
            except InvalidRequirement:
                spec = r.split(";")[0].strip()
            extras.setdefault(m.group(1), []).append(spec)
    return extras


def _series_key(version: str, depth: int) -> str:
    rel = Version(version).release
    return ".".join(str(x) for x in rel[:depth])


def _cp_tags(files: list[dict[str, Any]], platform_ok: Callable[[str], bool] = _is_linux_x86_wheel) -> list[str]:
    """The CPython versions ("3.11", "3.13t") of a release's wheels for one platform family."""
    out: set[str] = set()
    for f in files:
        fn = f["filename"]
        if not fn.endswith(".whl") or not platform_ok(fn):
            continue
        tags = _wheel_tags(fn)
        assert tags is not None
        abi_free = "t" if re.search(r"-cp3\d+t-", fn) else ""
        for py in tags[2]:
            m = re.fullmatch(r"cp3(\d+)", py)
            if m:
                out.add(f"3.{m.group(1)}{abi_free}")
            elif py in ("py3", "py2.py3"):
                out.add("any")
    return sorted(out, key=lambda s: (s == "any", int(re.sub(r"\D", "", s.split(".")[-1]) or 0), s))


def _platforms(files: list[dict[str, Any]]) -> list[str]:
    fams: set[str] = set()
    for f in files:
        tags = _wheel_tags(f["filename"]) if f["filename"].endswith(".whl") else None
        if tags:
            fams.update(_platform_family(p) for p in tags[3])
    return sorted(fams)


def _linux_wheel(files: list[dict[str, Any]], prefer_py: str = "cp311") -> dict[str, Any] | None:
    wheels = [f for f in files if f["filename"].endswith(".whl") and _is_linux_x86_wheel(f["filename"])
              and not f.get("yanked")]
    if not wheels:
        return None
    preferred = [f for f in wheels if f"-{prefer_py}-" in f["filename"]]
    return (preferred or wheels)[0]


def _remote(f: dict[str, Any]) -> RemoteWheel:
    return RemoteWheel(f["url"], int(f["size"]))


def _elf_of_member(wheel: RemoteWheel, member: str) -> dict[str, Any]:
    """SONAME / DT_NEEDED / RUNPATH of one ELF member, read from a decompressed prefix."""
    size = wheel.member_size(member)
    for nbytes in (4 << 20, 64 << 20, size):
        data = wheel.read_prefix(member, min(nbytes, size))
        with tempfile.NamedTemporaryFile(suffix=".so") as tmp:
            tmp.write(data)
            tmp.flush()
            try:
                info = read_elf(tmp.name)
            except ElfError:
                if nbytes >= size:
                    raise
                continue
        out: dict[str, Any] = {"soname": info.soname, "needed": list(info.needed)}
        if info.runpath:
            out["runpath"] = list(info.runpath)
        if info.rpath:
            out["rpath"] = list(info.rpath)
        return out
    raise AssertionError("unreachable")


def _compact(versions: list[str]) -> str:
    """'12.0.107 … 12.9.79 (21)' style summary of a sorted version list."""
    if not versions:
        return ""
    if len(versions) == 1:
        return versions[0]
    return f"{versions[0]} … {versions[-1]} ({len(versions)})"


# --------------------------------------------------------------------------------------- NVIDIA wheels

def _sdist_pkg_info(f: dict[str, Any]) -> dict[str, str]:
    """Summary and first description line of a small sdist's PKG-INFO (placeholders are a few KB)."""
    if int(f["size"]) > 256 * 1024:
        return {}
    data = fetch_small(f["url"])
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if member.name.count("/") == 1 and member.name.endswith("/PKG-INFO"):
                extracted = tar.extractfile(member)
                if extracted is None:
                    continue
                text = extracted.read().decode("utf-8", "replace")
                out = {"summary": _meta_field(text, "Summary") or ""}
                hint = re.search(r"^\s*(pip install .+)$", text, re.MULTILINE)
                if hint:
                    out["says"] = hint.group(1).strip()
                return out
    return {}


def _classify_placeholder(version: str, files: list[dict[str, Any]]) -> str | None:
    """Why a 0.0.x release is not a real package, or None for a real one."""
    v = Version(version)
    if v.release[0] != 0:
        return None
    if v.is_prerelease and not v.is_devrelease:
        return "zero-version placeholder (pre-release: pip skips it without --pre)"
    sdists = [f for f in files if not f["filename"].endswith(".whl")]
    info = _sdist_pkg_info(sdists[0]) if sdists else {}
    text = f"sdist only, summary {info.get('summary', '?')!r}"
    if "says" in info:
        text += f"; its description says {info['says']!r}"
    return text


def _cuda_major(name: str, layout_dirs: set[str], version: str) -> tuple[int | None, str]:
    m = re.search(r"-cu(\d+)$", name)
    if m:
        return int(m.group(1)), "name suffix"
    for d in layout_dirs:
        m = re.search(r"nvidia/cu(\d+)/", d + "/")
        if m:
            return int(m.group(1)), f"install directory {d}"
    return None, ""


def nvidia_package(name: str) -> dict[str, Any]:
    doc = simple_index(name)
    if doc is None:
        return {"exists": False, "source": f"https://pypi.org/simple/{name}/ answers 404"}
    by_version = _files_by_version(name)
    real: list[str] = []
    placeholders: dict[str, str] = {}
    prereleases: list[str] = []
    no_linux: list[str] = []
    for version in _sorted_versions(by_version):
        why = _classify_placeholder(version, by_version[version])
        if why:
            placeholders[version] = why
        elif Version(version).is_prerelease or Version(version).is_devrelease:
            prereleases.append(version)
        elif not any(_is_linux_x86_wheel(f["filename"]) for f in by_version[version]):
            no_linux.append(version)
        else:
            real.append(version)
    out: dict[str, Any] = {"exists": True}
    if not real:
        out["installable"] = False
    groups: dict[str, list[str]] = defaultdict(list)
    for version in real:
        groups[_series_key(version, 2)].append(version)
    majors: set[int] = set()
    layouts: list[dict[str, Any]] = []
    for key, versions in groups.items():
        newest = versions[-1]
        files = by_version[newest]
        wheel = _linux_wheel(files)
        assert wheel is not None
        rw = _remote(wheel)
        rec = rw.dist_info_file("RECORD")
        record_libs = sorted(line.split(",")[0] for line in rec.splitlines()
                             if re.search(r"\.so(\.\d+)*,", line) and "/lib" in line)
        dirs = sorted({n.rsplit("/", 1)[0] for n in record_libs})
        major, how = _cuda_major(name, set(dirs), newest)
        if major is not None:
            majors.add(major)
        layout: dict[str, Any] = {
            "linux_dir": dirs[0] if len(dirs) == 1 else dirs,
            "libs": [n.rsplit("/", 1)[1] for n in record_libs],
            "requires_dist": _requires(rw.dist_info_file("METADATA")),
            "platforms": _platforms(files),
        }
        if how and not how.startswith("name"):
            layout["cuda_major_from"] = how
        if layouts and all(layouts[-1][k] == v for k, v in layout.items()):
            layouts[-1]["series"].append(key)
            layouts[-1]["read_from"].append(wheel["filename"])
        else:
            layouts.append({"series": [key], **layout, "read_from": [wheel["filename"]]})
    if majors:
        out["cuda_major"] = sorted(majors)[0] if len(majors) == 1 else sorted(majors)
    if real:
        out["range"] = _compact(real)
        out["newest"] = real[-1]
    out["series"] = dict(groups)
    out["layouts"] = layouts
    if prereleases:
        out["prereleases"] = prereleases
    if no_linux:
        out["no_linux_x86_64_wheel"] = no_linux
    if placeholders:
        out["placeholders"] = placeholders
    out["source"] = f"https://pypi.org/simple/{name}/ (PEP 691 JSON)"
    return out


def nvidia_section() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for component, names in NVIDIA_COMPONENTS:
        out[component] = {name: nvidia_package(name) for name in names}
    return out


# ------------------------------------------------------------------------------------------- output

class _Dumper(yaml.SafeDumper):
    pass


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(isinstance(x, (str, int, float)) for x in data) and sum(len(str(x)) + 2 for x in data) < 400
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def dump(doc: Any) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)


# ----------------------------------------------------------------------------------- ONNX Runtime

def _build_info(rw: RemoteWheel, top: str) -> dict[str, str]:
    """cuda_version / cudnn_version from capi/build_and_package_info.py or capi/version_info.py."""
    out: dict[str, str] = {}
    for member in (f"{top}/capi/build_and_package_info.py", f"{top}/capi/version_info.py"):
        if member in rw.names():
            text = rw.read(member).decode("utf-8", "replace")
            for key in ("cuda_version", "cudnn_version", "package_name"):
                m = re.search(rf"^{key}\s*=\s*['\"]([^'\"]*)['\"]", text, re.MULTILINE)
                if m and key not in out:
                    out[key] = m.group(1)
    return out


def _release_rows(name: str, *, build_info: bool = False, top: str = "onnxruntime",
                  python_from: Callable[[str], bool] = _is_linux_x86_wheel) -> list[dict[str, Any]]:
    """One row per version: Python tags of its Linux x86_64 wheels, platforms, Requires-Dist, extras."""
    rows: list[dict[str, Any]] = []
    by_version = _files_by_version(name)
    for version in _sorted_versions(by_version):
        files = by_version[version]
        row: dict[str, Any] = {"version": version}
        row["python_linux_x86_64"] = _cp_tags(files, python_from)
        row["platforms"] = _platforms(files)
        if any(not f["filename"].endswith(".whl") for f in files):
            row["sdist"] = True
        yanked = sorted({f["filename"] for f in files if f.get("yanked")})
        if yanked:
            row["yanked_files"] = len(yanked)
            if len(yanked) == len(files):
                row["yanked"] = True
        rp = {str(f["requires-python"]) for f in files if f.get("requires-python")}
        if rp:
            row["requires_python"] = sorted(rp)[0] if len(rp) == 1 else sorted(rp)
        wheel = _linux_wheel(files)
        api = release_json(name, version)
        api_requires = (api or {}).get("info", {}).get("requires_dist")
        if wheel is not None:
            rw = _remote(wheel)
            requires = _requires(rw.dist_info_file("METADATA"))
            row["requires_dist"] = [r for r in requires if "extra ==" not in r]
            extras = _extras_of(requires)
            if extras:
                row["extras"] = extras
            row["extras_declared"] = sorted(extras)
            if build_info:
                info = _build_info(rw, top)
                if info.get("cuda_version"):
                    row["cuda_version"] = info["cuda_version"]
                if info.get("cudnn_version"):
                    row["cudnn_version"] = info["cudnn_version"]
            row["read_from"] = wheel["filename"]
            if api_requires is None:
                row["json_api_requires_dist"] = "empty"
            elif sorted(api_requires) != sorted(requires):
                row["json_api_requires_dist"] = api_requires
        elif api_requires:
            row["requires_dist"] = api_requires
            row["read_from"] = f"https://pypi.org/pypi/{name}/{version}/json info.requires_dist"
        rows.append(row)
    return rows


def onnxruntime_gpu_section() -> dict[str, Any]:
    rows = _release_rows("onnxruntime-gpu", build_info=True)
    return {
        "source": "https://pypi.org/simple/onnxruntime-gpu/ (PEP 691 JSON); METADATA and "
                  "onnxruntime/capi/build_and_package_info.py of the wheel in read_from",
        "versions": [r["version"] for r in rows],
        "releases": rows,
    }


def _light_rows(name: str) -> list[dict[str, Any]]:
    """Version, Python tags of the Linux x86_64 wheels and platform families, without METADATA."""
    by_version = _files_by_version(name)
    rows = []
    for version in _sorted_versions(by_version):
        files = by_version[version]
        row: dict[str, Any] = {"version": version, "python_linux_x86_64": _cp_tags(files),
                               "platforms": _platforms(files)}
        if all(f.get("yanked") for f in files):
            row["yanked"] = True
        rows.append(row)
    return rows


def onnxruntime_cpu_section() -> dict[str, Any]:
    rows = _light_rows("onnxruntime")
    return {"source": "https://pypi.org/simple/onnxruntime/ (PEP 691 JSON)",
            "versions": [r["version"] for r in rows], "releases": rows}


def _genai_cuda_facts(rw: RemoteWheel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for member in rw.names():
        base = member.rsplit("/", 1)[-1]
        if re.fullmatch(r"libonnxruntime-genai(-cuda)?\.so(\.\d+)*", base):
            elf = _elf_of_member(rw, member)
            cuda = sorted(n for n in elf["needed"] if re.match(r"lib(cudart|cublas|cublasLt|cudnn|curand|cufft)\.so", n))
            out[base] = {"needed_cuda": cuda, "needed": elf["needed"]}
    return out


def onnxruntime_genai_section() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("onnxruntime-genai", "onnxruntime-genai-cuda"):
        rows = _release_rows(name)
        if name.endswith("-cuda"):
            by_version = _files_by_version(name)
            for row in rows:
                wheel = _linux_wheel(by_version[row["version"]])
                if wheel is None:
                    continue
                facts = _genai_cuda_facts(_remote(wheel))
                needed = sorted({n for f in facts.values() for n in f["needed_cuda"]})
                row["needed_cuda"] = needed
                majors = sorted({int(m.group(1)) for n in needed if (m := re.match(r"libcudart\.so\.(\d+)", n))})
                if majors:
                    row["cuda_major"] = majors[0] if len(majors) == 1 else majors
                    row["cuda_major_from"] = "libcudart soname in DT_NEEDED of the wheel's libonnxruntime-genai*.so"
                ort = [r for r in row.get("requires_dist", []) if r.replace(" ", "").startswith("onnxruntime")]
                if ort:
                    row["onnxruntime_requirement"] = ort
        out[name] = {"source": f"https://pypi.org/simple/{name}/ (PEP 691 JSON); wheel METADATA",
                     "versions": [r["version"] for r in rows], "releases": rows}
    return out


# ------------------------------------------------------------------------------------------- torch

_TORCH_PIN = re.compile(r"^(nvidia-[a-z0-9-]+|cuda-toolkit)(\[[^\]]*\])?\s*\(?==\s*([0-9][0-9.a-z]*)\)?")


def _torch_row(version: str, files: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"version": version, "python_linux_x86_64": _cp_tags(files)}
    wheel = _linux_wheel(files)
    if wheel is None:
        return row
    requires = _requires(_remote(wheel).dist_info_file("METADATA"))
    pins: dict[str, str] = {}
    for r in requires:
        m = _TORCH_PIN.match(r.strip())
        if m:
            pins[m.group(1) + (m.group(2) or "")] = m.group(3)
    runtime = next(((k, v) for k, v in pins.items() if k.startswith(("nvidia-cuda-runtime", "cuda-toolkit"))), None)
    if runtime:
        mm = ".".join(runtime[1].split(".")[:2])
        row["pypi_cuda"] = mm
        row["pypi_cuda_from"] = f"{runtime[0].split('[')[0]}=={runtime[1]}"
    else:
        row["pypi_cuda"] = "none (no CUDA runtime pin: CPU-only or CUDA bundled in the wheel)"
    cudnn = next(((k, v) for k, v in pins.items() if k.startswith("nvidia-cudnn")), None)
    if cudnn:
        row["cudnn_pin"] = f"{cudnn[0]}=={cudnn[1]}"
    row["nvidia_pins"] = [f"{k}=={v}" for k, v in pins.items()]
    row["read_from"] = wheel["filename"]
    return row


def torch_section() -> dict[str, Any]:
    by_version = _files_by_version("torch")
    lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for version in _sorted_versions(by_version):
        v = Version(version)
        if v.is_prerelease or v.is_devrelease or v.release[:1] != (2,):
            continue
        lines[f"{v.release[0]}.{v.release[1]}"].append(_torch_row(version, by_version[version]))
    out: dict[str, Any] = {}
    for line, rows in lines.items():
        pythons = sorted({p for r in rows for p in r["python_linux_x86_64"]},
                         key=lambda s: (int(re.sub(r"\D", "", s.split(".")[1])), s))
        out[line] = {"versions": [r["version"] for r in rows], "python_linux_x86_64_any_patch": pythons,
                     "releases": rows}
    return {"source": "https://pypi.org/simple/torch/ (PEP 691 JSON); Requires-Dist of the Linux x86_64 wheel "
                      "in read_from", "lines": out}


# ------------------------------------------------------------------------------------------- numpy

def numpy_section() -> dict[str, Any]:
    by_version = _files_by_version("numpy")
    per_python: dict[str, dict[str, Any]] = {}
    finals = [v for v in _sorted_versions(by_version) if not Version(v).is_prerelease]
    for version in finals:
        files = [f for f in by_version[version] if not f.get("yanked")]
        for py in _cp_tags(files):
            if py == "any":
                continue
            slot = per_python.setdefault(py, {"first": version})
            key = "newest_below_2" if Version(version).major < 2 else "newest"
            slot[key] = version
            if Version(version).major >= 2:
                slot.setdefault("first_2x", version)
    table = {}
    for py in sorted(per_python, key=lambda s: (int(re.sub(r"\D", "", s.split(".")[1])), s)):
        slot = per_python[py]
        table[py] = {
            "first_wheel": slot["first"],
            "newest_below_2": slot.get("newest_below_2", "none: no numpy<2 wheel for this Python"),
            "first_2x": slot.get("first_2x"),
            "newest": slot.get("newest", slot.get("newest_below_2")),
        }
    return {"source": "https://pypi.org/simple/numpy/ (PEP 691 JSON): cp3XX tags of the Linux x86_64 wheels",
            "by_python_linux_x86_64": table,
            "numpy_1_26_4_python": _cp_tags(by_version.get("1.26.4", []))}


# ------------------------------------------------------------------------------------ cuda-toolkit

_TOOLKIT_EXTRAS = ("cudart", "cublas", "cufft", "curand", "nvrtc", "nvjitlink", "cupti")


def cuda_toolkit_section() -> dict[str, Any]:
    """The cuda-toolkit meta-package torch >= 2.11 pins: its extras name the component wheels."""
    by_version = _files_by_version("cuda-toolkit")
    rows = []
    for version in _sorted_versions(by_version):
        if Version(version).is_prerelease:
            continue
        wheel = next((f for f in by_version[version] if f["filename"].endswith(".whl")), None)
        if wheel is None:
            continue
        extras: dict[str, list[str]] = {}
        for r in _requires(_remote(wheel).dist_info_file("METADATA")):
            m = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", r)
            if m and m.group(1) in _TOOLKIT_EXTRAS:
                extras.setdefault(m.group(1), []).append(r.split(";")[0].strip())
        rows.append({"version": version, "extras": extras, "read_from": wheel["filename"]})
    return {"source": "https://pypi.org/simple/cuda-toolkit/ (PEP 691 JSON); Requires-Dist of each wheel's METADATA",
            "note": "A meta-package without libraries: its extras pin the component wheels (unsuffixed names for "
                    "CUDA 13, -cu12 for 12.x). torch 2.11+ requires cuda-toolkit[...]==13.x instead of the "
                    "nvidia-* wheels directly.",
            "versions": [r["version"] for r in rows], "releases": rows}


# ---------------------------------------------------------------------------------------- TensorRT

TENSORRT_PACKAGES = ["tensorrt", "tensorrt-libs", "tensorrt-bindings",
                     "tensorrt-cu11", "tensorrt-cu11-libs", "tensorrt-cu11-bindings",
                     "tensorrt-cu12", "tensorrt-cu12-libs", "tensorrt-cu12-bindings",
                     "tensorrt-cu13", "tensorrt-cu13-libs", "tensorrt-cu13-bindings"]


def _tensorrt_package(name: str) -> dict[str, Any]:
    by_version = _files_by_version(name)
    kinds: dict[str, str] = {}
    for version in _sorted_versions(by_version):
        files = by_version[version]
        has_wheel = any(f["filename"].endswith(".whl") for f in files)
        has_sdist = any(not f["filename"].endswith(".whl") for f in files)
        kinds[version] = "wheel+sdist" if has_wheel and has_sdist else ("wheel" if has_wheel else "sdist")
    finals = [v for v in kinds if Version(v).release[0] >= 8 and not Version(v).is_devrelease]
    out: dict[str, Any] = {
        "versions_10x": [v for v in finals if Version(v).major == 10],
        "versions_11x": [v for v in finals if Version(v).major == 11],
        "other_versions": [v for v in kinds if v not in finals or Version(v).major not in (10, 11)],
        "kinds": sorted(set(kinds.values())) if len(set(kinds.values())) > 1 else next(iter(set(kinds.values())), ""),
    }
    if len(set(kinds.values())) > 1:
        out["wheel_versions"] = [v for v, k in kinds.items() if "wheel" in k]
    if not name.endswith(("-libs", "-bindings")):
        # The meta package's sdist names the CUDA flavour it pulls in (egg-info/requires.txt).
        pulls: dict[str, list[str]] = {}
        for v in finals:
            sdist = next((f for f in by_version[v] if not f["filename"].endswith(".whl")), None)
            if sdist is not None:
                pulls[v] = _sdist_requires(sdist)
        out["requires_by_version"] = _runs(pulls)
    if name.endswith("-bindings"):
        layouts: list[dict[str, Any]] = []
        groups: dict[str, list[str]] = defaultdict(list)
        for v in finals:
            groups[_series_key(v, 2)].append(v)
        for key, versions in groups.items():
            newest = versions[-1]
            files = by_version[newest]
            wheel = _linux_wheel(files, "cp311")
            if wheel is None:
                continue
            elf = _elf_of_member(_remote(wheel), "tensorrt_bindings/tensorrt.so")
            layout = {"needed_tensorrt": [n for n in elf["needed"] if re.match(r"libnv", n)],
                      "search_path": elf.get("runpath", elf.get("rpath", [])),
                      "python_linux_x86_64": _cp_tags(files), "platforms": _platforms(files)}
            if layouts and all(layouts[-1][k] == v for k, v in layout.items()):
                layouts[-1]["series"].append(key)
                layouts[-1]["read_from"].append(wheel["filename"])
            else:
                layouts.append({"series": [key], **layout, "read_from": [wheel["filename"]]})
        out["bindings_elf"] = layouts
    if name.endswith("-libs"):
        newest_sdist = next((f for v in reversed(finals) for f in by_version[v]
                             if not f["filename"].endswith(".whl")), None)
        if newest_sdist is not None:
            out["sdist_build_backend"] = _sdist_build_backend(newest_sdist)
    out["source"] = f"https://pypi.org/simple/{name}/ (PEP 691 JSON)"
    return out


def _sdist_requires(f: dict[str, Any]) -> list[str]:
    if int(f["size"]) > 1024 * 1024:
        return []
    with tarfile.open(fileobj=io.BytesIO(fetch_small(f["url"]))) as tar:
        for member in tar.getmembers():
            if member.name.endswith(".egg-info/requires.txt") and member.isfile():
                extracted = tar.extractfile(member)
                text = extracted.read().decode() if extracted else ""
                return [line.strip() for line in text.split("[")[0].splitlines() if line.strip()]
    return []


def _runs(by_version: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Consecutive versions whose value has the same shape (the version number replaced by X)."""
    runs: list[dict[str, Any]] = []
    for version, value in by_version.items():
        shape = [v.replace(version, "X") for v in value]
        if runs and runs[-1]["requires"] == shape:
            runs[-1]["versions"].append(version)
        else:
            runs.append({"versions": [version], "requires": shape})
    return [{"from": r["versions"][0], "to": r["versions"][-1], "requires": r["requires"]} for r in runs]


def _sdist_build_backend(f: dict[str, Any]) -> dict[str, str]:
    data = fetch_small(f["url"])
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            if member.name.endswith("/pyproject.toml") and member.name.count("/") == 1:
                extracted = tar.extractfile(member)
                text = extracted.read().decode() if extracted else ""
                backend = re.search(r'build-backend\s*=\s*"([^"]+)"', text)
                index = re.search(r'index_url\s*=\s*"([^"]+)"', text)
                return {"file": f["filename"], "build_backend": backend.group(1) if backend else "",
                        "downloads_from": index.group(1) if index else ""}
    return {"file": f["filename"]}


def tensorrt_section() -> dict[str, Any]:
    return {name: _tensorrt_package(name) for name in TENSORRT_PACKAGES}


# ------------------------------------------------------------------------------------- plugin EPs

PLUGIN_EP_PACKAGES = ["onnxruntime-ep-nv-tensorrt-rtx", "onnxruntime-ep-nv-tensorrt-rtx-cu12",
                      "onnxruntime-ep-nv-tensorrt-rtx-cu13", "onnxruntime-ep-openvino", "onnxruntime-ep-webgpu",
                      "onnxruntime-ep-mlx", "onnxruntime-ep-rocm", "onnxruntime-ep-migraphx",
                      "onnxruntime-ep-amdgpu", "onnxruntime-ep-hipdnn"]
PLUGIN_EP_ABSENT = ["onnxruntime-ep-cuda", "onnxruntime-ep-cuda12", "onnxruntime-ep-cuda13", "onnxruntime-ep-tensorrt"]


def _plugin_wheel_facts(name: str, version: str) -> dict[str, Any]:
    wheel = _linux_wheel(_files_by_version(name)[version])
    if wheel is None:
        return {}
    rw = _remote(wheel)
    libs = []
    for member in rw.names():
        if re.search(r"\.so(\.\d+)*$", member):
            elf = _elf_of_member(rw, member)
            entry: dict[str, Any] = {"file": member, "soname": elf["soname"],
                                     "needed": [n for n in elf["needed"] if not re.match(
                                         r"lib(c|m|dl|rt|pthread|gcc_s|stdc\+\+)\.so|ld-linux", n)]}
            if elf.get("runpath") or elf.get("rpath"):
                entry["search_path"] = elf.get("runpath") or elf.get("rpath")
            libs.append(entry)
    return {"read_from": wheel["filename"], "shared_libraries": libs,
            "requires_dist": _requires(rw.dist_info_file("METADATA"))}


def plugin_ep_section() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in PLUGIN_EP_PACKAGES:
        by_version = _files_by_version(name)
        versions = _sorted_versions(by_version)
        newest = versions[-1]
        entry: dict[str, Any] = {"versions": versions, "newest": newest,
                                 "platforms": _platforms(by_version[newest])}
        if name in ("onnxruntime-ep-nv-tensorrt-rtx-cu13", "onnxruntime-ep-nv-tensorrt-rtx-cu12",
                    "onnxruntime-ep-openvino"):
            entry["newest_wheel"] = _plugin_wheel_facts(name, newest)
        else:
            wheel = next((f for f in by_version[newest] if f["filename"].endswith(".whl")), None)
            if wheel is not None:
                meta = _remote(wheel).dist_info_file("METADATA")
                entry["summary"] = _meta_field(meta, "Summary")
                entry["requires_dist"] = _requires(meta)
        entry["source"] = f"https://pypi.org/simple/{name}/ (PEP 691 JSON)"
        out[name] = entry
    for name in PLUGIN_EP_ABSENT:
        out[name] = {"exists": simple_index(name) is not None,
                     "source": f"https://pypi.org/simple/{name}/ answers 404"}
    return out


# ---------------------------------------------------------------------------------------------- main

def absent_section() -> dict[str, Any]:
    return {name: {"exists": simple_index(name) is not None,
                   "source": f"https://pypi.org/simple/{name}/ answers 404"} for name in ABSENT_NAMES}


def build() -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": 1,
        "collected": _dt.date.today().isoformat(),
        "generated_by": "python scripts/data/collect_package_table.py",
        "note": "Read from PyPI on the date above; SOURCES.md says how each section was read. The doc_facts "
                "section is copied from doc_facts.yaml (documentation, release notes, observed errors).",
        "nvidia": nvidia_section(),
        "cuda_toolkit": cuda_toolkit_section(),
        "absent": absent_section(),
        "onnxruntime_gpu": onnxruntime_gpu_section(),
        "onnxruntime": onnxruntime_cpu_section(),
        "onnxruntime_genai": onnxruntime_genai_section(),
        "torch": torch_section(),
        "numpy": numpy_section(),
        "tensorrt": tensorrt_section(),
        "plugin_eps": plugin_ep_section(),
    }
    doc["doc_facts"] = yaml.safe_load((HERE / "doc_facts.yaml").read_text())
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(HERE / "package_table.yaml"))
    args = parser.parse_args(argv)
    header = ("# Which packages and versions a printed fix may name, read from PyPI and cited documentation.\n"
              "# Generated by scripts/data/collect_package_table.py; edit doc_facts.yaml, not this file.\n"
              "# SOURCES.md says where every section comes from.\n")
    Path(args.out).write_text(header + dump(build()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
