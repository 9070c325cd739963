"""An onnxruntime-gpu release newer than the matrix, installed by a user: `check` answers from the wheel's own
files (build info, Requires-Dist, DT_NEEDED, fatbin) and says plainly that its line is not in the matrix yet.
The installed release is the line after the matrix's newest, so the test holds after every release."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.core.facts import ElfInfo
from ortdoctor.decide.matrix.model import TensorrtBuild
from ortdoctor.decide.tensorrt import tensorrt_need
from tests.faults import helpers
from tests.support import fake_nvml
from tests.support.fake_site import install_dist
from tests.support.release_wheels import CUDA_NEEDED, _fatbin_source
from tests.support.releases import NEWEST, SHIPPED, next_line
from tests.support.sharedlibs import build_so
from tests.test_diagnose import healthy_env, ort_gpu

VERSION = f"{next_line()}.0"
B200 = "driver=580.159.04;cuda=13000;dev=NVIDIA B200,10.0,183359,180000,GPU-b200-0,0"


@pytest.fixture(scope="module")
def newer_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A venv-like site with the CUDA 13 wheels and onnxruntime-gpu VERSION, whose CUDA provider has a real
    fatbin (sm_75, sm_86, PTX compute_86); and the fake NVML's directory."""
    base = tmp_path_factory.mktemp("newer")
    libs = helpers.build_libraries(base / "libs")
    libs["provider"] = build_so(base / "libs" / "newer", "libonnxruntime_providers_cuda.so",
                                source=_fatbin_source("sass_ptx_zstd"), needed=tuple(libs[s] for s in CUDA_NEEDED))
    site = helpers.install_gpu_site(base / "site", libs)
    shutil.rmtree(site / helpers.ORT_DIST_INFO)  # the template's 1.31.1, replaced by the newer release
    install_dist(site, "onnxruntime-gpu", VERSION, {
        "onnxruntime/__init__.py": b"raise ImportError('this test onnxruntime is never to be imported')\n",
        helpers.BUILD_INFO: f"package_name = 'onnxruntime-gpu'\n__version__ = '{VERSION}'\ncuda_version = '13.0'\n"
                            .encode(),
        helpers.PROVIDER: libs["provider"],
        helpers.PYBIND: libs["pybind"],
    }, requires=("nvidia-cudnn-cu13~=9.0; extra == 'cudnn'",))
    return site, fake_nvml.build(base / "nvml").parent


def _check(site: Path, nvml: Path, tmp_path: Path, *args: str) -> helpers.Result:
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    return helpers.run_cli(["check", "--no-smoke", *args], sites=[site], cwd=cwd,
                           env={"LD_LIBRARY_PATH": str(nvml), "FAKE_NVML": B200})


def test_check_answers_from_the_wheel_and_says_the_line_is_not_in_the_matrix(
        newer_site: tuple[Path, Path], tmp_path: Path) -> None:
    site, nvml = newer_site
    result = _check(site, nvml, tmp_path, "--json")
    data: dict[str, Any] = json.loads(result.stdout)
    ort = data["ort"]
    # every fact the wheel carries is read from it
    assert (ort["version"], ort["cuda_version"], ort["cudnn_major"]) == (VERSION, "13.0", 9)
    assert (data["cuda_major"], data["cudnn_major"]) == (13, 9)
    assert tuple(n for n in ort["cuda_provider"]["needed"] if n.startswith("libcu")) == CUDA_NEEDED
    assert ort["kernels"]["archs"] == ["sm_75", "sm_86", "compute_86"]
    provider = f"{site}/{helpers.PROVIDER}"
    jit = next(f for f in data["findings"] if f["id"] == "gpu-arch-ptx-jit")  # a B200 JITs the PTX
    assert f"(read from {provider})" in " ".join(jit["detail"].split())
    # and the report says plainly which line is missing and what stands in
    note = next(f for f in data["findings"] if f["id"] == "ort-version-unverified")
    assert f"the {next_line()} line is not in the matrix yet" in note["detail"]
    assert f"stands in from the newest line, {NEWEST.line}" in note["detail"]
    assert "build info, DT_NEEDED, kernels" in note["detail"]

    text = _check(site, nvml, tmp_path).stdout
    assert f"onnxruntime-gpu {VERSION} (CUDA 13.0, cuDNN 9)" in text
    assert "unknown" not in text.split("Libraries")[0]  # the header facts all come from the wheel


def test_the_tensorrt_build_of_another_line_is_not_claimed_for_a_newer_release() -> None:
    # a matrix whose newest line has a documented TensorRT build: a newer installed release is not that build
    older = tuple(r for r in SHIPPED.releases if SHIPPED.tensorrt and SHIPPED.tensorrt.build_for(r.line))
    newest_built = older[0]
    matrix = replace(SHIPPED, releases=tuple(r for r in SHIPPED.releases
                                             if tuple(map(int, r.line.split("."))) <=
                                             tuple(map(int, newest_built.line.split(".")))))
    major, minor = (int(x) for x in newest_built.line.split("."))
    newer = f"{major}.{minor + 1}.0"
    trt = ElfInfo("/site/onnxruntime/capi/libonnxruntime_providers_tensorrt.so", "x86_64", 64,
                  needed=("libnvinfer.so.10", "libnvonnxparser.so.10"))
    env = healthy_env(ort=replace(ort_gpu(version=newer, cuda_version="12.8"), tensorrt_provider=trt))
    match = matrix.release_for(newer)
    assert match is not None
    assert match.unverified
    need = tensorrt_need(env, matrix, match, 12)
    assert need is not None
    assert (need.major, need.built_with) == (10, None)  # its own DT_NEEDED, no other line's build
    known = tensorrt_need(replace(env, ort=replace(env.ort, version=newest_built.versions[-1])), matrix,
                          matrix.release_for(newest_built.versions[-1]), 12)
    assert known is not None
    assert isinstance(known.built_with, TensorrtBuild)
