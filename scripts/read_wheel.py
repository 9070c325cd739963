#!/usr/bin/env python3
"""Print the compatibility-matrix facts of one onnxruntime-gpu wheel, as YAML ready to paste.

Usage:
    python scripts/read_wheel.py path/to/onnxruntime_gpu-1.31.1-cp311-...whl
    python scripts/read_wheel.py --download 1.31.1 [--python-version 3.11]

It reads, without installing anything:
  * ``onnxruntime/capi/build_and_package_info.py`` (package name, version, cuda_version) and, in
    older wheels, ``capi/version_info.py`` (cuda_version, cudnn_version),
  * the METADATA ``Requires-Dist`` lines that carry an extra (``cuda``, ``cudnn``),
  * the ELF DT_NEEDED of ``capi/libonnxruntime_providers_cuda.so``, of the pybind module
    (``capi/onnxruntime_pybind11_state*.so``) and of the TensorRT provider when present,
  * the GPU architectures the CUDA provider has kernels for (``archs``: SASS ``sm_XY``, then PTX
    ``compute_XY``), the PTX ISA version of its PTX (``ptx_isa``) and the targets only single-GPU kernels
    carry (``isolated``), from its fatbin headers: the matrix row's keys, ready to paste,
  * the Python tag of the wheel file name.

A Windows or Linux aarch64 wheel (``--platform``) gives only its architectures, as the row's
``platform_archs`` entry.

Only those members are extracted (the CUDA provider alone is ~280 MB), into a temporary directory
that is removed afterwards. With ``--download`` the wheel itself is deleted too: disk space matters
when a whole release history is re-read.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import yaml

# Run from a source checkout without installing ortdoctor.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ortdoctor.formats.elf import ElfError, read_elf
from ortdoctor.formats.fatbin import FatbinError, read_fatbin
from ortdoctor.probes.ort import isolated_targets

# The CUDA/cuDNN sonames worth recording; everything else in DT_NEEDED (libc, libstdc++, ...) is noise.
_CUDA_SONAME = re.compile(r"^lib(cudart|cublasLt|cublas|cufft|curand|nvrtc|cudnn(?:_[a-z_]+)?|nvinfer(?:_plugin)?|"
                          r"nvonnxparser|cupti|nvToolsExt|nvJitLink|cusparse|cusolver)\.so")
_PLATFORMS = {
    "linux_x86_64": ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                     "manylinux2014_x86_64"),
    "win_amd64": ("win_amd64",),
    "linux_aarch64": ("manylinux_2_34_aarch64", "manylinux_2_28_aarch64"),
}


def _member(names: list[str], pattern: str) -> str | None:
    rx = re.compile(pattern)
    hits = sorted(n for n in names if rx.search(n))
    return hits[0] if hits else None


def _build_info(text: str) -> dict[str, str]:
    """The simple ``name = "value"`` assignments of build_and_package_info.py, without executing it."""
    out: dict[str, str] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    out[target.id] = node.value.value
    return out


def _extras(metadata: str) -> dict[str, list[str]]:
    extras: dict[str, list[str]] = {}
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        m = re.match(r"Requires-Dist:\s*(.+?)\s*;\s*extra\s*==\s*['\"]([^'\"]+)['\"]", line)
        if m:
            extras.setdefault(m.group(2), []).append(m.group(1).replace(" ", ""))
    return extras


def _plain_requires(metadata: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in metadata.splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line]


def _metadata_field(metadata: str, name: str) -> str | None:
    """One header field of METADATA (``Requires-Python``); None when absent. The headers end at the first
    blank line, where the description begins."""
    for line in metadata.splitlines():
        if not line.strip():
            break
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return None


def _strings_cuda(path: Path) -> list[str]:
    """CUDA sonames named in the file's bytes: what a library dlopens instead of linking."""
    found: set[str] = set()
    rx = re.compile(rb"lib(?:cudart|cublasLt|cublas|cufft|curand|nvrtc|cudnn)\.so\.[0-9.]+")
    with open(path, "rb") as f:
        tail = b""
        while chunk := f.read(1 << 24):
            buf = tail + chunk
            found.update(m.group().decode().rstrip(".") for m in rx.finditer(buf))
            tail = buf[-64:]
    return sorted(found)


def _elf(zf: zipfile.ZipFile, member: str | None, tmp: Path, strings: bool = False) -> dict[str, Any] | None:
    """DT_NEEDED and RPATH/RUNPATH of one member; with ``strings`` (the CUDA provider), also its fatbin
    architectures and the sonames in its bytes when DT_NEEDED names no CUDA library (1.15 links none
    and dlopens them)."""
    if member is None:
        return None
    target = tmp / Path(member).name
    with zf.open(member) as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    try:
        info = read_elf(target)
        out: dict[str, Any] = {"needed": list(info.needed), "rpath": list(info.rpath),
                               "runpath": list(info.runpath)}
        if strings and not any(_CUDA_SONAME.match(n) for n in info.needed):
            out["strings_cuda"] = _strings_cuda(target)
        if strings:
            out.update(_kernels(target))
        return out
    except ElfError as exc:
        return {"needed": [f"<unreadable: {exc}>"]}
    finally:
        target.unlink()


def _kernels(path: Path) -> dict[str, Any]:
    """``archs``, ``ptx_isa`` and ``isolated`` of a CUDA library, as the matrix writes them."""
    try:
        fatbin = read_fatbin(path)
    except FatbinError as exc:
        return {"archs": [f"<unreadable: {exc}>"]}
    out: dict[str, Any] = {"archs": list(fatbin.archs)}
    if fatbin.ptx_isas:
        major, minor = fatbin.ptx_isas[-1]
        out["ptx_isa"] = f"{major}.{minor}"
    isolated = isolated_targets(fatbin)
    if isolated:
        out["isolated"] = list(isolated)
    return out


def _platform_of(wheel: Path) -> str:
    tag = wheel.name[:-4].split("-")[-1]
    if tag.startswith("win"):
        return "win_amd64"
    return "linux_aarch64" if "aarch64" in tag else "linux_x86_64"


def read_platform_archs(wheel: Path) -> dict[str, Any]:
    """A Windows or Linux aarch64 wheel's CUDA provider architectures, as a row's ``platform_archs`` entry."""
    platform = _platform_of(wheel)
    member_re = (r"^onnxruntime/capi/onnxruntime_providers_cuda\.dll$" if platform.startswith("win")
                 else r"^onnxruntime/capi/libonnxruntime_providers_cuda\.so$")
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory(prefix="ortdoctor-wheel-") as tmpdir:
        member = _member(zf.namelist(), member_re)
        if member is None:
            raise SystemExit(f"{wheel.name} has no CUDA provider ({member_re})")
        target = Path(tmpdir) / Path(member).name
        with zf.open(member) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        entry = {**_kernels(target), "source": wheel.name}
    return {"version": wheel.name.split("-")[1], "platform_archs": {platform: entry}}


def read_wheel(wheel: Path) -> dict[str, Any]:
    """The matrix facts of one wheel file, as plain data."""
    facts: dict[str, Any] = {"wheel": wheel.name}
    tags = wheel.name[:-4].split("-")
    facts["version"] = tags[1]
    facts["python_tag"] = tags[-3]
    facts["platform_tag"] = tags[-1]
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory(prefix="ortdoctor-wheel-") as tmpdir:
        tmp = Path(tmpdir)
        names = zf.namelist()
        # build_and_package_info.py carries cuda_version from 1.21 on; older wheels keep
        # cuda_version / cudnn_version in version_info.py.
        build: dict[str, str] = {}
        for pattern in (r"^onnxruntime/capi/version_info\.py$",
                        r"^onnxruntime/capi/build_and_package_info\.py$"):
            info = _member(names, pattern)
            if info:
                build.update(_build_info(zf.read(info).decode()))
        facts["build_info"] = build
        meta = _member(names, r"\.dist-info/METADATA$")
        text = zf.read(meta).decode() if meta else ""
        facts["requires_python"] = _metadata_field(text, "Requires-Python")
        facts["requires_plain"] = _plain_requires(text)
        facts["extras"] = _extras(text)
        provider = _member(names, r"^onnxruntime/capi/libonnxruntime_providers_cuda\.so$")
        pybind = _member(names, r"^onnxruntime/capi/onnxruntime_pybind11_state[^/]*\.so$")
        trt = _member(names, r"^onnxruntime/capi/libonnxruntime_providers_tensorrt\.so$")
        prov = _elf(zf, provider, tmp, strings=True)
        pyb = _elf(zf, pybind, tmp)
        trt_elf = _elf(zf, trt, tmp)
        provider_needed = prov["needed"] if prov else None
        facts["provider_needed"] = provider_needed
        facts["provider_needed_cuda"] = [n for n in provider_needed or [] if _CUDA_SONAME.match(n)]
        if prov and (prov.get("rpath") or prov.get("runpath")):
            facts["provider_rpath"] = prov.get("rpath") or prov.get("runpath")
        if prov and "strings_cuda" in prov:
            facts["provider_strings_cuda"] = prov["strings_cuda"]
        pybind_needed = pyb["needed"] if pyb else None
        facts["pybind_needed"] = pybind_needed
        facts["pybind_needed_cuda"] = [n for n in pybind_needed or [] if _CUDA_SONAME.match(n)]
        facts["tensorrt_needed_cuda"] = (
            None if trt_elf is None else [n for n in trt_elf["needed"] if _CUDA_SONAME.match(n)])
        facts["tensorrt_needed"] = None if trt_elf is None else trt_elf["needed"]
        for key in ("archs", "ptx_isa", "isolated"):
            if prov and key in prov:
                facts[key] = prov[key]
    return facts


def download(version: str, python_version: str, dest: Path, platform: str = "linux_x86_64") -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", "--no-cache-dir",
           "--disable-pip-version-check", f"onnxruntime-gpu=={version}", "-d", str(dest),
           "--python-version", python_version, "--implementation", "cp"]
    for plat in _PLATFORMS[platform]:
        cmd += ["--platform", plat]
    subprocess.run(cmd, check=True)
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise SystemExit(f"pip download produced no wheel for onnxruntime-gpu=={version}")
    return wheels[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wheel", nargs="?", help="an onnxruntime-gpu .whl file")
    ap.add_argument("--download", metavar="VERSION", help="download onnxruntime-gpu==VERSION, read, delete")
    ap.add_argument("--python-version", default="3.11", help="interpreter the downloaded wheel is for")
    ap.add_argument("--platform", choices=sorted(_PLATFORMS), default="linux_x86_64",
                    help="the wheel to download (win_amd64, linux_aarch64: its platform_archs entry only)")
    args = ap.parse_args(argv)
    if bool(args.wheel) == bool(args.download):
        ap.error("give a wheel file or --download VERSION")

    def facts_of(wheel: Path) -> dict[str, Any]:
        return read_wheel(wheel) if _platform_of(wheel) == "linux_x86_64" else read_platform_archs(wheel)

    if args.wheel:
        facts = facts_of(Path(args.wheel))
    else:
        tmp = Path(tempfile.mkdtemp(prefix="ortdoctor-dl-"))
        try:
            facts = facts_of(download(args.download, args.python_version, tmp, args.platform))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.write(yaml.safe_dump(facts, sort_keys=False, default_flow_style=None, width=200))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
