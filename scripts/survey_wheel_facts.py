#!/usr/bin/env python3
"""Record the binary facts of onnxruntime-gpu wheels in scripts/data/wheel_facts.json.

Usage:
    python scripts/survey_wheel_facts.py                  # every release below, Linux and Windows
    python scripts/survey_wheel_facts.py 1.20.2 1.31.1    # just these
    python scripts/survey_wheel_facts.py --platform win_amd64 1.20.2

For each wheel, one at a time: ``pip download`` it, hash it, read METADATA and the build-info files out
of the zip, extract only the CUDA and TensorRT provider libraries to a temporary directory, read their
fatbin headers (:mod:`ortdoctor.formats.fatbin`), DT_NEEDED (:mod:`ortdoctor.formats.elf`) or PE imports
(:mod:`ortdoctor.formats.pe`), then delete everything. A wheel is ~150-300 MB and its CUDA provider up to 750 MB
unpacked, so nothing is kept. Results already in the JSON file are kept; a wheel is read again only when
named on the command line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

# Run from a source checkout without installing ortdoctor.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from read_wheel import _build_info, _extras, _member, _plain_requires

from ortdoctor.formats.elf import ElfError, read_elf
from ortdoctor.formats.fatbin import FatbinError, read_fatbin
from ortdoctor.formats.pe import PeError, read_pe

OUT = Path(__file__).resolve().parent / "data" / "wheel_facts.json"

# The newest patch of every minor line PyPI still has (1.11 on; older files were removed), plus 1.18.0,
# 1.20.2 and 1.23.0 (named in issue reports; 1.23.0's PTX is compute_90a, 1.23.2's compute_90).
RELEASES = ("1.11.1", "1.12.1", "1.13.1", "1.14.1", "1.15.1", "1.16.3", "1.17.1", "1.18.0", "1.18.1", "1.19.2", "1.20.2", "1.21.1", "1.22.0",
            "1.23.0", "1.23.2", "1.24.4", "1.25.1", "1.26.0", "1.27.0", "1.28.0", "1.29.0", "1.30.0", "1.31.1")
# cp311 wheels exist for every one of them from 1.15 on, for both platforms; older lines stop at cp310
# (1.12-1.14) or cp39 (1.11).
PYTHON = "3.11"
OLDER_PYTHON = {"1.11": "3.9", "1.12": "3.10", "1.13": "3.10", "1.14": "3.10"}


def python_for(version: str) -> str:
    """The Python version whose wheel is read for ``version``."""
    return OLDER_PYTHON.get(".".join(version.split(".")[:2]), PYTHON)
PLATFORMS = {
    "linux_x86_64": ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                     "manylinux2014_x86_64"],
    "win_amd64": ["win_amd64"],
    "linux_aarch64": ["manylinux_2_34_aarch64", "manylinux_2_28_aarch64"],
}

# PTX ISA version -> the first CUDA toolkit that writes it: NVIDIA's table
# https://docs.nvidia.com/cuda/parallel-thread-execution/#release-notes-ptx-release-history (as copied in
# cuda-python's cuda/bindings/utils/_ptx_utils.py). nvcc writes its own toolkit's newest ISA, so the ISA
# of a wheel's PTX names the toolkit it was built with; CUDA 12.6 still writes 8.5, like 12.5.
PTX_ISA_CUDA = {
    "7.0": "11.0", "7.1": "11.1", "7.2": "11.2", "7.3": "11.3", "7.4": "11.4", "7.5": "11.5", "7.6": "11.6",
    "7.7": "11.7", "7.8": "11.8", "8.0": "12.0", "8.1": "12.1", "8.2": "12.2", "8.3": "12.3", "8.4": "12.4",
    "8.5": "12.5 or 12.6", "8.6": "12.7", "8.7": "12.8", "8.8": "12.9", "9.0": "13.0", "9.1": "13.1",
}

PROVIDERS = {
    "linux": {"cuda": "onnxruntime/capi/libonnxruntime_providers_cuda.so",
              "tensorrt": "onnxruntime/capi/libonnxruntime_providers_tensorrt.so"},
    "win": {"cuda": "onnxruntime/capi/onnxruntime_providers_cuda.dll",
            "tensorrt": "onnxruntime/capi/onnxruntime_providers_tensorrt.dll"},
}


def _pip_download(version: str, platform: str, dest: Path) -> tuple[Path, list[str]]:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--no-cache-dir", "--disable-pip-version-check", "--python-version", python_for(version), "--implementation", "cp",
           f"onnxruntime-gpu=={version}", "-d", str(dest)]
    for tag in PLATFORMS[platform]:
        cmd += ["--platform", tag]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"pip download gave {len(wheels)} wheels for {version} {platform}")
    return wheels[0], pip_command(version, platform)


def pip_command(version: str, platform: str) -> list[str]:
    """The ``pip download`` command that fetches the wheel read for ``version`` and ``platform``, as a record's
    ``source`` shows it."""
    return ["pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", python_for(version),
            *(x for tag in PLATFORMS[platform] for x in ("--platform", tag)), f"onnxruntime-gpu=={version}"]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _fatbin(path: Path) -> dict[str, Any]:
    try:
        info = read_fatbin(path)
    except FatbinError as exc:
        return {"error": str(exc)}
    isas = [f"{a}.{b}" for a, b in info.ptx_isas]
    return {
        "sass": list(info.sass_archs),
        "ptx": list(info.ptx_archs),
        "ptx_isa": isas,
        "ptx_isa_cuda": [PTX_ISA_CUDA.get(i, "unknown") for i in isas],
        "containers": info.containers,
        "other_entries": info.other_entries,
        "target_sets": [{"targets": list(targets), "containers": n} for targets, n in info.target_sets],
        "images": [{"kind": i.kind, "name": i.name, "compressed": i.compressed, "count": i.count,
                    **({"ptx_isa": f"{i.ptx_isa[0]}.{i.ptx_isa[1]}"} if i.ptx_isa else {})}
                   for i in info.images],
    }


def _library(zf: zipfile.ZipFile, member: str, tmp: Path, fatbin: bool) -> dict[str, Any] | None:
    if member not in zf.namelist():
        return None
    target = tmp / Path(member).name
    with zf.open(member) as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    out: dict[str, Any] = {"member": member, "size": target.stat().st_size}
    try:
        if member.endswith(".so"):
            try:
                elf = read_elf(target)
                out["needed"] = list(elf.needed)
                if elf.runpath or elf.rpath:
                    out["runpath" if elf.runpath else "rpath"] = list(elf.runpath or elf.rpath)
            except ElfError as exc:
                out["needed_error"] = str(exc)
        else:
            try:
                out["imports"] = list(read_pe(target).imports)
            except PeError as exc:
                out["imports_error"] = str(exc)
        if fatbin:
            out["fatbin"] = _fatbin(target)
    finally:
        target.unlink()
    return out


def read(wheel: Path, platform: str, command: list[str]) -> dict[str, Any]:
    facts: dict[str, Any] = {"version": wheel.name.split("-")[1], "platform": platform, "wheel": wheel.name,
                             "size": wheel.stat().st_size, "sha256": _sha256(wheel),
                             "source": " ".join(command)}
    kind = "win" if platform.startswith("win") else "linux"
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory(prefix="ortdoctor-survey-") as tmpdir:
        names = zf.namelist()
        for key, member in (("build_and_package_info", "onnxruntime/capi/build_and_package_info.py"),
                            ("version_info", "onnxruntime/capi/version_info.py")):
            if member in names:
                text = zf.read(member).decode("utf-8", "replace")
                facts[key] = {"exists": True, "values": _build_info(text), "text": text}
            else:
                facts[key] = {"exists": False}
        meta = _member(names, r"\.dist-info/METADATA$")
        text = zf.read(meta).decode("utf-8", "replace") if meta else ""
        facts["requires_dist"] = _plain_requires(text)
        facts["extras"] = _extras(text)
        for name, member in PROVIDERS[kind].items():
            facts[f"{name}_provider"] = _library(zf, member, Path(tmpdir), fatbin=name == "cuda")
    return facts


def merge(done: list[dict[str, Any]], facts: dict[str, Any]) -> list[dict[str, Any]]:
    """``done`` with ``facts`` in place of any earlier entry for the same version and platform, sorted."""
    key = (facts["version"], facts["platform"])
    out = [d for d in done if (d["version"], d["platform"]) != key] + [facts]
    out.sort(key=lambda d: (tuple(int(x) for x in d["version"].split(".")), d["platform"]))
    return out


def load(path: Path = OUT) -> list[dict[str, Any]]:
    """The recorded facts (none when the file does not exist yet)."""
    done: list[dict[str, Any]] = json.loads(path.read_text()) if path.exists() else []
    return done


def write(done: list[dict[str, Any]], path: Path = OUT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(done, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("versions", nargs="*", help=f"releases to (re)read; default: {' '.join(RELEASES)}")
    ap.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                    help="default: linux_x86_64 and win_amd64")
    args = ap.parse_args(argv)
    versions = args.versions or list(RELEASES)
    platforms = args.platform or ["linux_x86_64", "win_amd64"]
    done = load()
    for version in versions:
        for platform in platforms:
            key = (version, platform)
            if not args.versions and any((d["version"], d["platform"]) == key for d in done):
                continue
            tmp = Path(tempfile.mkdtemp(prefix="ortdoctor-dl-"))
            try:
                wheel, command = _pip_download(version, platform, tmp)
                facts = read(wheel, platform, command)
            except (subprocess.CalledProcessError, RuntimeError, OSError, zipfile.BadZipFile) as exc:
                facts = {"version": version, "platform": platform, "error": f"{type(exc).__name__}: {exc}"}
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            done = merge(done, facts)
            write(done)
            fb = (facts.get("cuda_provider") or {}).get("fatbin", {})
            print(version, platform, facts.get("error") or f"sass={fb.get('sass')} ptx={fb.get('ptx')} "
                  f"isa={fb.get('ptx_isa')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
