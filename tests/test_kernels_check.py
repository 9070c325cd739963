"""Kernels for the GPUs in `ortdoctor check`: the installed provider's fatbin against each GPU, before any session.

Three layers: the diagnosis on hand-built facts (every GPU of the issue, one or several per host, the
matrix's facts where the provider cannot be read); the probe on the real onnxruntime-gpu 1.31.1 CUDA
provider; and `ortdoctor check --no-smoke` in a subprocess on the real wheel with the fake NVML
library (tests/support/fake_nvml.c) reporting each GPU's compute capability.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.core.facts import Device, Environment, Finding, ProviderKernels
from ortdoctor.diagnose.checklist import diagnose
from ortdoctor.formats.fatbin import FatbinInfo, KernelImage
from ortdoctor.probes.environment import collect_environment
from ortdoctor.probes.ort import isolated_targets, probe_ort, read_kernels
from tests.support import fake_nvml, testenvs
from tests.support.releases import as_of, newest_version, offered_for
from tests.support.report_schema import validate
from tests.test_diagnose import driver_ok, full_plan, healthy_env, ort_gpu, python_info

ROOT = Path(__file__).resolve().parents[1]
MATRIX = as_of("1.31")  # the diagnoses below reason about the releases up to 1.31; the CLI runs read the data
B200_WHEEL = newest_version(13, carrying="sm_100a")  # the newest CUDA 13 wheel with native code for a B200
PROVIDER = "/site/onnxruntime/capi/libonnxruntime_providers_cuda.so"
# what the real 1.31.1 provider carries (read from the wheel: tests below check it)
KERNELS_1_31 = ProviderKernels(PROVIDER, ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"), None, 609)

GPUS = {  # name, compute capability, memory (MiB)
    "B200": ("NVIDIA B200", "10.0", 183359),
    "V100": ("Tesla V100-SXM2-32GB", "7.0", 32768),
    "H200": ("NVIDIA H200", "9.0", 143771),
    "RTX5090": ("NVIDIA GeForce RTX 5090", "12.0", 32607),
    "GB10": ("NVIDIA GB10", "12.1", 122502),
    "Orin": ("Orin", "8.7", 62841),
}


def gpu(key: str, index: int = 0) -> Device:
    name, cc, mem = GPUS[key]
    return Device(index, name, uuid=f"GPU-{key.lower()}-{index}", compute_capability=cc, memory_total_mib=mem,
                  memory_free_mib=mem - 1000, compute_mode="default")


def env_with(*devices: Device, kernels: ProviderKernels | None = KERNELS_1_31, version: str = "1.31.1",
             cuda: str = "13.0", driver_cuda: str = "13.0", platform: str = "linux-x86_64") -> Environment:
    ort = ort_gpu(kernels=kernels, version=version, cuda_version=cuda)
    machine = platform.split("-")[1]
    return healthy_env(ort=ort, driver=driver_ok(devices=devices, cuda_version=driver_cuda),
                       python=python_info(platform=platform, machine=machine))


def findings(env: Environment, **kw: Any) -> list[Finding]:
    return diagnose(env, full_plan(), MATRIX, **kw)


def get(found: list[Finding], fid: str) -> Finding | None:
    hits = [f for f in found if f.id == fid]
    assert len(hits) <= 1, hits
    return hits[0] if hits else None


def arch(found: list[Finding]) -> Finding:
    f = get(found, "gpu-arch-unsupported")
    assert f is not None, [x.id for x in found]
    return f


# --------------------------------------------------------------------------------------------------
# The diagnosis: onnxruntime-gpu 1.31.1 on the GPUs
# --------------------------------------------------------------------------------------------------
def test_b200_has_no_kernels_in_1_31_1() -> None:
    f = arch(findings(env_with(gpu("B200"))))
    assert f.severity == "error"
    assert "NVIDIA B200" in f.detail
    assert "compute capability 10.0 (sm_100): no kernel image" in f.detail
    assert "carries SASS sm_75, sm_80, sm_86, sm_89, sm_90a, sm_120a; no PTX" in f.detail
    assert f"read from {PROVIDER}" in f.detail
    assert "sm_90a only on exactly 9.0, sm_120a only on exactly 12.0" in f.detail
    assert "cudaErrorNoKernelImageForDevice" in f.detail
    fix = f.fix or ""
    # the newest release with native code for sm_100 on the same CUDA major (1.27.0 is known bad)
    assert "/venv/bin/python -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.28.0'  (1.28.0: native code sm_100a" in fix
    assert "CMAKE_CUDA_ARCHITECTURES=100" in fix
    # the same as package steps, with the inspected interpreter
    assert [(s.verb, s.args) for s in f.steps] == [("install", ("onnxruntime-gpu[cuda,cudnn]==1.28.0",))]


def test_v100_has_no_kernels_in_1_31_1() -> None:
    f = arch(findings(env_with(gpu("V100"))))
    assert "compute capability 7.0 (sm_70)" in f.detail
    assert "CUDA 13 dropped Maxwell, Pascal and Volta" in f.detail
    # no CUDA 13 release has sm_70: the newest CUDA 12 one that does
    assert "pip install 'onnxruntime-gpu[cuda,cudnn]==1.26.0'  (1.26.0: native code sm_70; built for CUDA 12.8)" \
        in (f.fix or "")
    assert "CMAKE_CUDA_ARCHITECTURES=70" in (f.fix or "")


@pytest.mark.parametrize("key", ["H200", "RTX5090"])
def test_h200_and_rtx_5090_run_1_31_1_natively(key: str) -> None:
    found = findings(env_with(gpu(key)))
    assert get(found, "gpu-arch-unsupported") is None
    assert get(found, "gpu-arch-ptx-jit") is None


def test_gb10_runs_the_aarch64_wheel_but_not_the_x86_64_one() -> None:
    # DGX Spark is aarch64: its wheel carries sm_121a (the matrix's facts, the provider unread here)
    spark = env_with(gpu("GB10"), kernels=None, platform="linux-aarch64")
    assert get(findings(spark), "gpu-arch-unsupported") is None
    # the x86_64 wheel's sm_120a is for 12.0 only; 1.28's compute_120 PTX would be JIT-compiled
    f = arch(findings(env_with(gpu("GB10"))))
    assert "compute capability 12.1 (sm_121)" in f.detail
    assert "==1.28.0'  (1.28.0: PTX compute_120 only, JIT-compiled at first use" in (f.fix or "")


def test_jetson_orin_sass_of_other_minors_does_not_run() -> None:
    # the aarch64 wheels carry sm_89 at best; Tegra GPUs run only their own SASS, and there is no PTX
    f = arch(findings(env_with(gpu("Orin"), kernels=None, platform="linux-aarch64")))
    assert "compute capability 8.7 (sm_87)" in f.detail
    assert "on Jetson (Tegra) GPUs only on exactly their own compute capability" in f.detail
    assert "No onnxruntime-gpu release in the matrix carries kernels for sm_87 (linux_aarch64 wheels)" in (f.fix or "")
    assert "CMAKE_CUDA_ARCHITECTURES=87" in (f.fix or "")


def test_the_matrix_answers_when_the_provider_cannot_be_read() -> None:
    unreadable = ProviderKernels(PROVIDER, error="no fatbin header at 0x10 (magic 0x0)")
    f = arch(findings(env_with(gpu("B200"), kernels=unreadable)))
    assert "the matrix's facts for the 1.31 linux_x86_64 wheel" in f.detail
    assert "could not be read: no fatbin header" in f.detail
    assert get(findings(env_with(gpu("H200"), kernels=unreadable)), "gpu-arch-unsupported") is None


def test_a_local_build_is_judged_by_its_own_provider_only() -> None:
    # a source build for sm_100: its fatbin is the truth, whatever the matrix says of the PyPI wheel
    local = ProviderKernels(PROVIDER, ("sm_100", "compute_100"), "9.0", 12)
    assert get(findings(env_with(gpu("B200"), kernels=local, version="1.31.1+sm100")), "gpu-arch-unsupported") is None
    # unread and local: the PyPI wheel's facts do not describe it, so no arch finding at all
    assert get(findings(env_with(gpu("B200"), kernels=None, version="1.31.1+local")), "gpu-arch-unsupported") is None


def test_old_releases_ptx_is_reported_as_jit_coverage() -> None:
    # 1.20.2 (from the matrix: SASS up to sm_80, PTX compute_52..compute_80, ISA 8.2)
    for key in ("H200", "B200", "RTX5090"):
        found = findings(env_with(gpu(key), kernels=None, version="1.20.2", cuda="12.2"))
        assert get(found, "gpu-arch-unsupported") is None
        note = get(found, "gpu-arch-ptx-jit")
        assert note is not None
        assert note.severity == "info"
        assert "no native code; the driver JIT-compiles the PTX (compute_52, compute_60, compute_61, compute_70, " \
               "compute_75, compute_80, ISA 8.2, needs a driver for CUDA >= 12.2)" in note.detail
        assert "CUDA_CACHE_MAXSIZE" in note.detail
    h200 = get(findings(env_with(gpu("H200"), kernels=None, version="1.20.2", cuda="12.2")), "gpu-arch-ptx-jit")
    assert h200 is not None
    # native code for sm_90 exists from 1.21 on; the newest CUDA 13 release is what this CUDA 13 driver runs
    assert ("For native code on sm_90: /venv/bin/python -m pip install "
            f"'onnxruntime-gpu[cuda,cudnn]=={newest_version(13, carrying='sm_90a', matrix=MATRIX)}'") in (h200.fix or "")
    # V100 has native code in 1.20.2
    assert get(findings(env_with(gpu("V100"), kernels=None, version="1.20.2", cuda="12.2")), "gpu-arch-ptx-jit") is None


def test_ptx_a_driver_cannot_jit_is_an_error() -> None:
    # 1.26.0: compute_90 PTX of ISA 8.7 (CUDA 12.8); an RTX 5090 with a CUDA 12.4 driver cannot JIT it
    env = env_with(gpu("RTX5090"), kernels=None, version="1.26.0", cuda="12.8", driver_cuda="12.4")
    f = arch(diagnose(env, full_plan(), MATRIX))
    assert "its PTX (compute_90, ISA 8.7) needs a driver for CUDA >= 12.8 to JIT-compile" in f.detail
    assert "Upgrade the driver to one for CUDA >= 12.8" in (f.fix or "")
    ok = env_with(gpu("RTX5090"), kernels=None, version="1.26.0", cuda="12.8", driver_cuda="12.8")
    found = diagnose(ok, full_plan(), MATRIX)
    assert get(found, "gpu-arch-unsupported") is None
    assert get(found, "gpu-arch-ptx-jit") is not None


def test_h200_on_the_windows_wheel_gets_a_warning_not_a_pass() -> None:
    # onnxruntime-gpu 1.31.1 for Windows: sm_90a only in the Hopper-only kernels (the matrix's facts)
    env = env_with(gpu("H200"), kernels=None, platform="win-amd64")
    env = replace(env, python=replace(env.python, os="windows"))
    f = arch(diagnose(env, full_plan(), MATRIX, os_name="windows"))
    assert f.severity == "warning"
    assert "its only image, sm_90a, is in kernels built for 9.0 alone" in f.detail
    assert "==1.28.0" in (f.fix or "")


def test_isolated_targets_from_the_fatbin_layout() -> None:
    info = FatbinInfo(PROVIDER, "pe", 1, 599, target_sets=(
        (("sm_90a",), 290), (("sm_75", "sm_80", "sm_86", "sm_89", "sm_120a"), 179), (("sm_120a",), 9)),
        images=tuple(KernelImage("sass", a, n, True) for a, n in ((75, "sm_75"), (90, "sm_90a"), (120, "sm_120a"))))
    assert isolated_targets(info) == ("sm_90a",)
    linux = replace(info, target_sets=(
        (("sm_90a",), 292), (("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"), 217), (("sm_120a",), 9)))
    assert isolated_targets(linux) == ()
    only_specific = replace(info, target_sets=((("sm_90a", "compute_90a"), 3), (("sm_120a",), 2)))
    assert isolated_targets(only_specific) == ()


# --------------------------------------------------------------------------------------------------
# Several GPUs
# --------------------------------------------------------------------------------------------------
MIXED = (gpu("H200", 0), gpu("B200", 1), gpu("V100", 2), gpu("RTX5090", 3))


def test_only_the_session_device_is_checked_by_default() -> None:
    assert get(findings(env_with(*MIXED)), "gpu-arch-unsupported") is None
    f = arch(findings(env_with(*MIXED), device_id=1))
    assert "CUDA device 1 (NVML GPU 1, NVIDIA B200, GPU-b200-1)" in f.detail
    assert "V100" not in f.detail


def test_all_devices_names_each_gpu_without_kernels_and_the_ones_that_work() -> None:
    f = arch(findings(env_with(*MIXED), all_devices=True))
    assert "CUDA device 1 (NVML GPU 1, NVIDIA B200, GPU-b200-1): compute capability 10.0 (sm_100)" in f.detail
    assert "CUDA device 2 (NVML GPU 2, Tesla V100-SXM2-32GB, GPU-v100-2): compute capability 7.0 (sm_70)" in f.detail
    assert "H200" not in f.detail
    assert "RTX 5090" not in f.detail
    fix = f.fix or ""
    assert "==1.28.0" in fix
    assert "==1.26.0" in fix
    assert "CMAKE_CUDA_ARCHITECTURES=100;70" in fix
    assert "export CUDA_VISIBLE_DEVICES=GPU-h200-0,GPU-rtx5090-3" in fix


def test_all_devices_under_cuda_visible_devices() -> None:
    env = env_with(*MIXED)
    env = replace(env, driver=replace(env.driver, cuda_visible_devices="0,3"))
    assert get(findings(env, all_devices=True), "gpu-arch-unsupported") is None


# --------------------------------------------------------------------------------------------------
# The probe on the real CUDA provider of onnxruntime-gpu 1.31.1
# --------------------------------------------------------------------------------------------------
REAL_SITE = testenvs.BASE / "ort-gpu"
REAL_PROVIDER = REAL_SITE / "onnxruntime" / "capi" / "libonnxruntime_providers_cuda.so"


def _real() -> None:
    if not REAL_PROVIDER.is_file():
        pytest.skip(f"not provisioned: {REAL_PROVIDER}")


@pytest.mark.realwheels
def test_the_probe_reads_the_real_provider_as_the_matrix_records_it() -> None:
    _real()
    kernels = read_kernels(str(REAL_PROVIDER))
    row = MATRIX.release_for("1.31.1")
    assert row is not None
    assert kernels.error is None
    assert kernels.archs == row.release.archs == ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a")
    assert kernels.ptx_isa is None
    assert row.release.ptx_isa is None
    assert kernels.containers == 609
    # most kernels exist for some architectures only: 292 containers carry sm_90a alone
    assert kernels.uneven == {"sm_120a": 317, "sm_75": 217, "sm_80": 308, "sm_86": 308, "sm_89": 308, "sm_90a": 600}
    assert kernels.isolated == ()
    ort = probe_ort([str(REAL_SITE)])
    assert ort.kernels == kernels
    assert probe_ort([str(REAL_SITE)], kernels=False).kernels is None


@pytest.mark.realwheels
def test_the_preload_path_does_not_read_the_fatbin() -> None:
    _real()
    env = collect_environment(site_dirs=[str(REAL_SITE)], query_driver=False)
    assert env.ort.is_gpu_build
    assert env.ort.kernels is None


def test_an_unreadable_provider_says_why(tmp_path: Path) -> None:
    fake = tmp_path / "libonnxruntime_providers_cuda.so"
    fake.write_bytes(b"not a library")
    kernels = read_kernels(str(fake))
    assert kernels.archs == ()
    assert "neither an ELF nor a PE file" in (kernels.error or "")


# --------------------------------------------------------------------------------------------------
# `ortdoctor check --no-smoke`: the real wheel, the fake NVML
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nvml_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_nvml.build(tmp_path_factory.mktemp("fake-nvml")).parent


def check(nvml_dir: Path, *devices: Device, args: tuple[str, ...] = ()) -> tuple[int, dict[str, Any]]:
    spec = "driver=580.159.04;cuda=13000;" + ";".join(
        f"dev={d.name},{d.compute_capability},{d.memory_total_mib},{d.memory_free_mib},{d.uuid},0" for d in devices)
    env = dict(os.environ)
    for k in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ORTDOCTOR_MATRIX"):
        env.pop(k, None)
    env.update({"PYTHONPATH": os.pathsep.join([str(ROOT), str(REAL_SITE)]), "LD_LIBRARY_PATH": str(nvml_dir),
                "FAKE_NVML": spec})
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--json", "--no-smoke", *args], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, validate(json.loads(proc.stdout))


def ids(report: dict[str, Any]) -> list[str]:
    return [f["id"] for f in report["findings"]]


def finding(report: dict[str, Any], fid: str) -> dict[str, Any]:
    hits: list[dict[str, Any]] = [f for f in report["findings"] if f["id"] == fid]
    assert hits, (fid, ids(report))
    return hits[0]


@pytest.mark.realwheels
# GB10 and Orin: no release has native code for them on Linux x86_64; the newest whose PTX the CUDA 13 driver JITs
@pytest.mark.parametrize(("key", "sm", "fix"), [
    ("B200", "sm_100", f"=={B200_WHEEL}"), ("V100", "sm_70", "==1.26.0"),
    ("GB10", "sm_121", f"=={offered_for((12, 1), 13, driver_cuda='13.0')}"),
    ("Orin", "sm_87", f"=={offered_for((8, 7), 13, driver_cuda='13.0')}")])
def test_check_reports_gpus_without_kernels_before_any_session(nvml_dir: Path, key: str, sm: str, fix: str) -> None:
    _real()
    code, rep = check(nvml_dir, gpu(key))
    f = finding(rep, "gpu-arch-unsupported")
    assert f["severity"] == "error"
    assert GPUS[key][0] in f["detail"]
    assert f"({sm})" in f["detail"]
    assert f"read from {REAL_PROVIDER}" in f["detail"]
    assert fix in f["fix"]
    assert rep["verdict"] == "fail"
    assert code == 1
    assert rep["smoke"] is None or not rep["smoke"].get("ok")
    assert rep["ort"]["kernels"]["archs"] == ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"]


@pytest.mark.realwheels
@pytest.mark.parametrize("key", ["H200", "RTX5090"])
def test_check_passes_gpus_with_native_kernels(nvml_dir: Path, key: str) -> None:
    _real()
    _, rep = check(nvml_dir, gpu(key))
    assert "gpu-arch-unsupported" not in ids(rep)
    assert "gpu-arch-ptx-jit" not in ids(rep)


@pytest.mark.realwheels
def test_check_reads_no_fatbin_without_gpus(nvml_dir: Path) -> None:
    _real()
    _, rep = check(nvml_dir)
    assert rep["ort"]["kernels"] is None
    assert "gpu-arch-unsupported" not in ids(rep)


@pytest.mark.realwheels
def test_check_all_devices_on_a_mixed_host(nvml_dir: Path) -> None:
    _real()
    _, default = check(nvml_dir, *MIXED)
    assert "gpu-arch-unsupported" not in ids(default)  # device 0 is the H200
    code, rep = check(nvml_dir, *MIXED, args=("--all-devices",))
    f = finding(rep, "gpu-arch-unsupported")
    assert "NVIDIA B200" in f["detail"]
    assert "Tesla V100" in f["detail"]
    assert "H200" not in f["detail"]
    assert "export CUDA_VISIBLE_DEVICES=GPU-h200-0,GPU-rtx5090-3" in f["fix"]
    assert code == 1


# --------------------------------------------------------------------------------------------------
# `ortdoctor matrix --cuda ... --gpu ...`: never a wheel without kernels for the GPU
# --------------------------------------------------------------------------------------------------
def matrix_cli(*args: str, nvml: Path | None = None, spec: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    for k in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "ORTDOCTOR_MATRIX"):
        env.pop(k, None)
    env["PYTHONPATH"] = str(ROOT)
    if nvml is not None:
        env.update({"LD_LIBRARY_PATH": str(nvml), "FAKE_NVML": spec})
    return subprocess.run([sys.executable, "-m", "ortdoctor", "matrix", *args], env=env, capture_output=True,
                          text=True, timeout=60, cwd=ROOT)


def test_matrix_recommends_a_wheel_with_kernels_for_the_gpu_given() -> None:
    proc = matrix_cli("--cuda", "13", "--gpu", "sm_100", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["query"]["gpus"] == ["10.0"]
    rec = data["recommendation"]
    assert rec["version"] == B200_WHEEL
    assert rec["command"] == f"pip install 'onnxruntime-gpu[cuda,cudnn]=={B200_WHEEL}'"
    assert rec["kernels"]["verdict"] == "sass"
    assert rec["kernels"]["sass"] == ["sm_100a"]
    text = matrix_cli("--cuda", "13", "--gpu", "10.0")
    assert f"For CUDA 13, GPU sm_100 (--gpu): onnxruntime-gpu {B200_WHEEL}" in text.stdout
    assert "carries native code for sm_100 (sm_100a)" in text.stdout
    # the Windows wheels of 1.29-1.31 carry sm_90a only in Hopper-only kernels: never recommended for an H100
    win = json.loads(matrix_cli("--cuda", "13", "--gpu", "9.0", "--platform", "win_amd64", "--json").stdout)
    assert win["recommendation"]["version"] == newest_version(13, carrying="sm_90a", platform="win_amd64")
    upto_1_31 = as_of("1.31").recommend("13", None, gpu=(9, 0), platform="win_amd64")
    assert upto_1_31 is not None
    assert upto_1_31.version == "1.28.0"
    assert json.loads(matrix_cli("--cuda", "13", "--gpu", "9.0", "--json").stdout)["recommendation"]["version"] \
        == newest_version(13, carrying="sm_90a")


def test_matrix_ort_lists_the_architectures_read_from_the_wheels() -> None:
    proc = matrix_cli("--ort", "1.31.1", "--json")
    assert proc.returncode == 0, proc.stderr
    release = json.loads(proc.stdout)["release"]
    assert release["archs"] == ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"]
    assert release["ptx_isa"] is None
    assert release["kernels"]["linux_x86_64"] == {
        "archs": release["archs"], "ptx_isa": None, "isolated": [],
        "source": "onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl"}
    assert release["kernels"]["linux_aarch64"]["archs"] == ["sm_89", "sm_90a", "sm_120a", "sm_121a"]
    assert release["kernels"]["win_amd64"]["isolated"] == ["sm_90a"]
    text = matrix_cli("--ort", "1.20.2").stdout
    assert "kernels (linux_x86_64): SASS sm_52, sm_60, sm_61, sm_70, sm_75, sm_80; PTX compute_52, compute_60, " \
           "compute_61, compute_70, compute_75, compute_80 (ISA 8.2, CUDA 12.2)" in text


def test_matrix_says_when_no_wheel_has_kernels_for_the_gpu() -> None:
    proc = matrix_cli("--cuda", "13", "--gpu", "7.0")
    assert proc.returncode == 1
    assert "kernels for sm_70 (--gpu)" in proc.stderr
    assert "no release with those CUDA and cuDNN majors has kernels for it" in proc.stderr
    bad = matrix_cli("--cuda", "13", "--gpu", "volta")
    assert bad.returncode == 2
    assert "--gpu 'volta' is not a compute capability" in bad.stderr


def test_matrix_uses_the_detected_gpus(nvml_dir: Path) -> None:
    b200 = "driver=580.159.04;cuda=13000;dev=NVIDIA B200,10.0,183359,180000,GPU-b200-0,0"
    rec = json.loads(matrix_cli("--cuda", "13", "--json", nvml=nvml_dir, spec=b200).stdout)
    assert rec["query"]["gpus"] == ["10.0"]
    assert rec["recommendation"]["version"] == B200_WHEEL
    text = matrix_cli("--cuda", "13", nvml=nvml_dir, spec=b200).stdout
    assert "GPU sm_100 (detected)" in text
    # a B200 and an H200 on one host: the wheel must serve both
    both = b200 + ";dev=NVIDIA H200,9.0,143771,140000,GPU-h200-1,0"
    assert json.loads(matrix_cli("--cuda", "13", "--json", nvml=nvml_dir, spec=both).stdout)[
        "recommendation"]["version"] == B200_WHEEL
    # --gpu none: the GPU is not asked about
    plain = json.loads(matrix_cli("--cuda", "13", "--gpu", "none", "--json", nvml=nvml_dir, spec=b200).stdout)
    assert plain["recommendation"]["version"] == newest_version(13)
    assert "gpus" not in plain["query"]


def test_the_install_command_for_a_cpu_build_has_kernels_for_the_gpu() -> None:
    from tests.test_diagnose import ort_cpu

    for key, version in (("B200", "1.28.0"), ("H200", None)):
        env = replace(env_with(gpu(key)), ort=ort_cpu())
        f = get(findings(env), "ort-cpu-only")
        assert f is not None
        if version:
            assert f"onnxruntime-gpu[cuda,cudnn]=={version}'" in (f.fix or "")
        else:
            assert f"'onnxruntime-gpu[cuda,cudnn]=={newest_version(13, carrying='sm_90a', matrix=MATRIX)}'" in (f.fix or "")
