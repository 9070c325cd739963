"""Several GPUs: CUDA ordinals against NVML's devices, per-device findings, and one smoke child per device.

The mapping and the findings are pure functions of the driver facts, tested with hand-built facts. The
end-to-end cases run `ortdoctor check` in a subprocess against the fake NVML library (the driver's C API
edge, tests/support/fake_nvml.c) and the real onnxruntime-gpu wheel; the per-device smoke children come
in through the smoke runner's documented test seam (ORTDOCTOR_SMOKE_CHILD_ARGV), a small script that
answers like the real child, for the device it is asked about.
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

from ortdoctor.core.facts import Device, DriverInfo, Finding
from ortdoctor.decide.devices import describe, map_devices
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.diagnose.checklist import diagnose
from ortdoctor.diagnose.driver import visible_devices
from ortdoctor.prove.smoke.devices import default_parallelism, run_device_smokes
from ortdoctor.prove.smoke.runner import SmokeRequest
from tests.support import fake_nvml, testenvs
from tests.support.report_schema import validate

ROOT = Path(__file__).resolve().parents[1]
MATRIX = load_matrix(None)

H200 = Device(0, "NVIDIA H200", uuid="GPU-aaaa0000-1111", compute_capability="9.0", memory_total_mib=143771,
              memory_free_mib=140000, compute_mode="default")
FOUR = (
    H200,
    replace(H200, index=1, uuid="GPU-bbbb0000-2222"),
    replace(H200, index=2, uuid="GPU-bbbb9999-3333"),
    replace(H200, index=3, uuid="GPU-cccc0000-4444"),
)


def drv(devices: tuple[Device, ...] = FOUR, cvd: str | None = None) -> DriverInfo:
    return DriverInfo(available=True, version="580.95.05", cuda_version="13.0", devices=devices,
                      cuda_visible_devices=cvd)


def ordinals(cvd: str | None, devices: tuple[Device, ...] = FOUR) -> list[int | None]:
    return [c.nvml_index for c in map_devices(drv(devices, cvd)).devices]


# --------------------------------------------------------------------------------------------------
# CUDA_VISIBLE_DEVICES -> ordinals
# --------------------------------------------------------------------------------------------------
def test_unset_variable_shows_every_gpu_in_nvml_order() -> None:
    assert ordinals(None) == [0, 1, 2, 3]
    assert map_devices(drv()).visibility_note is None


def test_indices_renumber_from_zero_in_the_listed_order() -> None:
    dmap = map_devices(drv(cvd="3,1"))
    assert [c.nvml_index for c in dmap.devices] == [3, 1]
    assert dmap.get(0) is not None
    assert dmap.get(0).uuid == "GPU-cccc0000-4444"  # type: ignore[union-attr]
    assert dmap.ordinal_of(1) == 1
    assert dmap.ordinal_of(0) is None
    assert [d.index for d in dmap.hidden] == [0, 2]
    assert "leaves 2 of 4" in (dmap.visibility_note or "")


def test_first_invalid_entry_ends_the_list() -> None:
    assert ordinals("0,7,1") == [0]
    dmap = map_devices(drv(cvd="0,7,1"))
    assert dmap.stopped_at == "7"
    assert "no GPU 7" in (dmap.stop_reason or "")
    assert ordinals("2,-1,1") == [2]
    assert ordinals("-1") == []
    assert ordinals("") == []
    assert ordinals("0,,1") == [0]


def test_index_entries_are_read_like_strtoul() -> None:
    assert ordinals(" 1 , 2gpu") == [1, 2]
    assert ordinals("gpu0") == []


def test_uuid_prefixes_must_name_one_gpu() -> None:
    assert ordinals("GPU-cccc,GPU-aaaa0000-1111") == [3, 0]
    assert ordinals("gpu-cccc") == [3]  # as nvidia-smi prints it or not
    # GPU-bbbb matches two GPUs: the list ends there
    dmap = map_devices(drv(cvd="GPU-aaaa,GPU-bbbb,GPU-cccc"))
    assert [c.nvml_index for c in dmap.devices] == [0]
    assert dmap.stopped_at == "GPU-bbbb"
    assert "matches 2 GPUs" in (dmap.stop_reason or "")
    assert ordinals("GPU-ffff") == []


def test_a_device_named_twice_hides_every_device() -> None:
    assert ordinals("0,1,0") == []
    assert ordinals("0,GPU-aaaa") == []
    assert "already listed" in (map_devices(drv(cvd="1,1")).stop_reason or "")


def test_mig_entries() -> None:
    # old form: names its parent GPU
    legacy = map_devices(drv(cvd="MIG-GPU-bbbb9999-3333/1/0"))
    (c,) = legacy.devices
    assert (c.nvml_index, c.mig, c.uuid) == (2, "MIG-GPU-bbbb9999-3333/1/0", "MIG-GPU-bbbb9999-3333/1/0")
    assert "MIG instance" in c.name
    # new form: NVML's device list cannot tie it to a GPU, CUDA still enumerates it
    new = map_devices(drv(cvd="MIG-4f2e8a1c-0000-1111-2222-333344445555"))
    (m,) = new.devices
    assert m.device is None
    assert m.ordinal == 0
    assert visible_devices(drv(cvd="MIG-4f2e8a1c-0000-1111-2222-333344445555"))[0] == []
    assert map_devices(drv(cvd="MIG-GPU-ffff/1/0")).devices == ()


def test_order_note_only_for_different_gpus_without_pci_order() -> None:
    mixed = (H200, Device(1, "NVIDIA A100-SXM4-80GB", uuid="GPU-dddd", compute_capability="8.0"))
    assert map_devices(drv(mixed)).order_note is not None
    assert map_devices(drv(mixed), device_order="PCI_BUS_ID").order_note is None
    assert map_devices(drv(mixed, cvd="GPU-dddd,GPU-aaaa")).order_note is None  # UUIDs do not depend on order
    assert map_devices(drv(FOUR)).order_note is None  # identical GPUs keep the PCI order


def test_describe_names_both_numbers() -> None:
    c = map_devices(drv(cvd="3")).devices[0]
    assert describe(c) == "CUDA device 0 (NVML GPU 3, NVIDIA H200, GPU-cccc0000-4444)"


def test_default_parallelism_is_capped() -> None:
    assert default_parallelism(8, cpus=2) == 2
    assert default_parallelism(16, cpus=128) == 8
    assert default_parallelism(1, cpus=64) == 1
    assert default_parallelism(0, cpus=4) == 1


# --------------------------------------------------------------------------------------------------
# Findings for several GPUs (pure)
# --------------------------------------------------------------------------------------------------
def _env_with(driver: DriverInfo) -> Any:
    from tests.test_diagnose import full_plan, healthy_env

    return healthy_env(driver=driver), full_plan()


def run(driver: DriverInfo, **kw: Any) -> list[Finding]:
    env, plan = _env_with(driver)
    return diagnose(env, plan, MATRIX, **kw)


def one(found: list[Finding], fid: str) -> Finding:
    hits = [f for f in found if f.id == fid]
    assert len(hits) == 1, (fid, [f.id for f in found])
    return hits[0]


MIXED = (
    H200,
    replace(H200, index=1, uuid="GPU-low", memory_free_mib=300),
    replace(H200, index=2, uuid="GPU-volta", name="Tesla V100-SXM2-32GB", compute_capability="7.0"),
    replace(H200, index=3, uuid="GPU-prohib", compute_mode="prohibited"),
    replace(H200, index=4, uuid="GPU-excl", compute_mode="exclusive-process", memory_free_mib=100000),
)


def test_only_the_session_device_is_checked_by_default() -> None:
    found = run(drv(MIXED))
    assert not {"gpu-low-memory", "gpu-arch-unsupported", "gpu-compute-mode-prohibited"} & {f.id for f in found}
    # device 1 is the low-memory one
    assert "gpu-low-memory" in {f.id for f in run(drv(MIXED), device_id=1)}


def test_all_devices_reports_each_problem_naming_the_device() -> None:
    found = run(drv(MIXED), all_devices=True)
    low = one(found, "gpu-low-memory")
    assert "CUDA device 1 (NVML GPU 1, NVIDIA H200, GPU-low)" in low.detail
    assert "300 MiB free" in low.detail
    assert "--device-id 0" in (low.fix or "")
    arch = one(found, "gpu-arch-unsupported")
    assert arch.severity == "error"
    assert "Tesla V100" in arch.detail
    assert "sm_70" in arch.detail
    # among supported GPUs, keeping to those is a fix of its own (UUIDs: they survive renumbering)
    assert "CUDA_VISIBLE_DEVICES=GPU-aaaa0000-1111,GPU-low,GPU-prohib,GPU-excl" in (arch.fix or "")
    prohibited = one(found, "gpu-compute-mode-prohibited")
    assert prohibited.severity == "error"
    assert "CUDA device 3" in prohibited.detail
    assert "sudo nvidia-smi -i 3 -c DEFAULT" in (prohibited.fix or "")
    assert "busy or unavailable" in prohibited.detail
    exclusive = one(found, "gpu-compute-mode-exclusive")
    assert exclusive.severity == "warning"
    assert "43771 MiB in use" in exclusive.detail


def test_busy_smoke_confirms_the_compute_mode_not_a_missing_gpu() -> None:
    from ortdoctor.prove.smoke.child import RESULT_PREFIX
    from ortdoctor.prove.smoke.runner import judge

    error = "RuntimeError: CUDA failure 46: all CUDA-capable devices are busy or unavailable ; GPU=0"
    smoke = judge(stdout=RESULT_PREFIX + json.dumps({"ok": False, "stage": "session", "error": error}) + "\n",
                  stderr="", returncode=1, timed_out=False, request=SmokeRequest())
    found = run(drv((replace(H200, compute_mode="exclusive-process", memory_free_mib=100000),)), smoke=smoke)
    assert "no-gpu-visible" not in [f.id for f in found]
    mode = one(found, "gpu-compute-mode-exclusive")
    assert "Confirmed by the smoke session" in mode.detail
    assert "another process probably holds its one context" in mode.detail


def test_device_findings_follow_the_remapping() -> None:
    # CUDA_VISIBLE_DEVICES=2: CUDA device 0 is the V100
    found = run(drv(MIXED, cvd="2"))
    arch = one(found, "gpu-arch-unsupported")
    assert "CUDA device 0 (NVML GPU 2, Tesla V100-SXM2-32GB, GPU-volta)" in arch.detail


def test_invalid_ordinal_names_the_visible_list_and_the_gpu_meant() -> None:
    f = one(run(drv(FOUR, cvd="1"), device_id=1), "invalid-device-ordinal")
    assert "0 = NVML GPU 1 NVIDIA H200 (GPU-bbbb0000-2222)" in f.detail
    assert "--device-id 0" in (f.fix or "")
    assert "nvidia-smi's GPU 1 (NVIDIA H200) is CUDA device 0 here" in (f.fix or "")
    # the GPU meant is hidden: make it visible
    g = one(run(drv(FOUR, cvd="0"), device_id=2), "invalid-device-ordinal")
    assert "export CUDA_VISIBLE_DEVICES=0,GPU-bbbb9999-3333 and use --device-id 1" in (g.fix or "")


# --------------------------------------------------------------------------------------------------
# One smoke child per device (the runner's seam; real processes)
# --------------------------------------------------------------------------------------------------
FAKE_CHILD = '''
import json, os, sys, time
request = json.load(sys.stdin)
d = int(request["device_id"])
meet = os.environ.get("FAKE_SMOKE_RENDEZVOUS")
if meet:
    # every child waits until all have started: they can only all pass if they run at the same time
    want = int(os.environ["FAKE_SMOKE_EXPECT"])
    open(os.path.join(meet, str(d)), "w").close()
    deadline = time.time() + 60
    while len(os.listdir(meet)) < want and time.time() < deadline:
        time.sleep(0.05)
    if len(os.listdir(meet)) < want:
        print("ORTDOCTOR-SMOKE-RESULT: " + json.dumps({"ok": False, "stage": "run", "error": "alone"}))
        sys.exit(1)
if str(d) in os.environ.get("FAKE_SMOKE_HANG", "").split(","):
    time.sleep(600)
count = int(os.environ.get("FAKE_SMOKE_COUNT", "99"))
if d >= count:
    result = {"ok": False, "stage": "session", "device_id": d, "providers": [],
              "error": "RuntimeError: CUDA failure 101: invalid device ordinal ; GPU=%d" % d}
elif str(d) in os.environ.get("FAKE_SMOKE_BUSY", "").split(","):
    result = {"ok": False, "stage": "session", "device_id": d, "providers": [],
              "error": "RuntimeError: CUDA failure 46: all CUDA-capable devices are busy or unavailable ; GPU=%d" % d}
else:
    result = {"ok": True, "stage": "done", "device_id": d, "ep": "CUDAExecutionProvider",
              "providers": ["CUDAExecutionProvider"], "timings_ms": {"session": 100.0 + d, "run": 0.25},
              "max_abs_error": 0.0}
print("ORTDOCTOR-SMOKE-RESULT: " + json.dumps(result))
'''


@pytest.fixture
def fake_child(tmp_path: Path) -> tuple[str, ...]:
    script = tmp_path / "fake_smoke_child.py"
    script.write_text(FAKE_CHILD)
    return (sys.executable, str(script))


def test_device_smokes_run_in_parallel(fake_child: tuple[str, ...], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    meet = tmp_path / "meet"
    meet.mkdir()
    monkeypatch.setenv("FAKE_SMOKE_RENDEZVOUS", str(meet))
    monkeypatch.setenv("FAKE_SMOKE_EXPECT", "3")
    dmap = map_devices(drv(FOUR, cvd="3,1,0"))
    got = run_device_smokes(SmokeRequest(child_argv=fake_child, timeout=90), [0, 1, 2], device_map=dmap,
                            max_parallel=3)
    assert [d.ordinal for d in got] == [0, 1, 2]
    assert [d.result for d in got] == ["ok", "ok", "ok"], [d.smoke.error for d in got]
    assert [d.cuda.nvml_index for d in got] == [3, 1, 0]  # type: ignore[union-attr]
    assert [d.smoke.device_id for d in got] == [0, 1, 2]
    js = got[0].to_json()
    assert (js["ordinal"], js["nvml_index"], js["uuid"], js["result"]) == (0, 3, "GPU-cccc0000-4444", "ok")
    assert js["timings_ms"] == {"session": 100.0, "run": 0.25}
    assert js["smoke"]["ok"] is True


def test_each_device_has_its_own_timeout(fake_child: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMOKE_HANG", "1")
    got = run_device_smokes(SmokeRequest(child_argv=fake_child, timeout=3), [0, 1, 2], max_parallel=2)
    assert [d.result for d in got] == ["ok", "failed", "ok"]
    assert got[1].smoke.exit_status == "timeout"
    assert got[1].cuda is None  # no map given
    assert got[1].to_json()["nvml_index"] is None


# --------------------------------------------------------------------------------------------------
# `ortdoctor check` end to end: fake NVML, the real onnxruntime-gpu wheel, the fake smoke child
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fake_nvml_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fake-nvml")
    fake_nvml.build(out)
    return out


SERVER = ("driver=580.159.04;cuda=13000;"
          "dev=NVIDIA H200,9.0,143771,140000,GPU-aaaa0000-1111,0;"
          "dev=NVIDIA H200,9.0,143771,300,GPU-bbbb0000-2222,0;"
          "dev=Tesla V100-SXM2-32GB,7.0,32768,32000,GPU-cccc0000-3333,0;"
          "dev=NVIDIA H200,9.0,143771,140000,GPU-dddd0000-4444,2")


def check(fake_nvml_dir: Path, child: tuple[str, ...], *args: str, spec: str = SERVER,
          **env_vars: str) -> tuple[int, dict[str, Any], str]:
    env = dict(os.environ)
    for k in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(testenvs.ensure("ort-gpu")), str(testenvs.ensure("nvidia-cu13"))])
    env.update({"LD_LIBRARY_PATH": str(fake_nvml_dir), "FAKE_NVML": spec,
                "ORTDOCTOR_SMOKE_CHILD_ARGV": json.dumps(list(child)), **env_vars})
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--json", *args], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, validate(json.loads(proc.stdout)), proc.stderr


def ids(report: dict[str, Any]) -> list[str]:
    return [f["id"] for f in report["findings"]]


def finding(report: dict[str, Any], fid: str) -> dict[str, Any]:
    hits: list[dict[str, Any]] = [f for f in report["findings"] if f["id"] == fid]
    assert hits, (fid, ids(report))
    return hits[0]


@pytest.mark.realwheels
def test_all_devices_end_to_end(fake_nvml_dir: Path, fake_child: tuple[str, ...]) -> None:
    code, rep, _ = check(fake_nvml_dir, fake_child, "--all-devices", CUDA_DEVICE_ORDER="PCI_BUS_ID",
                         FAKE_SMOKE_BUSY="3")
    assert code == 1
    devs = rep["smoke_devices"]
    assert [d["ordinal"] for d in devs] == [0, 1, 2, 3]
    assert [d["nvml_index"] for d in devs] == [0, 1, 2, 3]
    assert [d["uuid"] for d in devs] == ["GPU-aaaa0000-1111", "GPU-bbbb0000-2222", "GPU-cccc0000-3333",
                                        "GPU-dddd0000-4444"]
    assert [d["result"] for d in devs] == ["ok", "ok", "ok", "failed"]
    assert devs[2]["compute_capability"] == "7.0"
    assert devs[1]["memory_free_mib"] == 300
    assert devs[3]["compute_mode"] == "prohibited"
    assert devs[0]["timings_ms"]["session"] == 100.0
    # the contract's single block is still device 0's
    assert rep["smoke"]["ok"] is True
    assert rep["smoke"]["device_id"] == 0
    assert "CUDA device 1 (NVML GPU 1" in finding(rep, "gpu-low-memory")["detail"]
    assert "Tesla V100" in finding(rep, "gpu-arch-unsupported")["detail"]
    assert "nvidia-smi -i 3 -c DEFAULT" in finding(rep, "gpu-compute-mode-prohibited")["fix"]
    failed = finding(rep, "smoke-failed")
    assert failed["title"] == "the smoke session failed on CUDA device 3"
    assert "busy or unavailable" in failed["detail"]
    # CUDA's error 46 on a GPU NVML shows as Prohibited: the mode is the cause, not a missing GPU
    assert "Cause (gpu-compute-mode-prohibited)" in failed["detail"]
    assert "no-gpu-visible" not in ids(rep)
    assert "sudo nvidia-smi -i 3 -c DEFAULT" in failed["fix"]
    assert "--device-id 0" in failed["fix"]
    assert [d["ordinal"] for d in rep["driver"]["cuda_devices"]] == [0, 1, 2, 3]


@pytest.mark.realwheels
def test_all_devices_under_cuda_visible_devices_by_uuid(fake_nvml_dir: Path, fake_child: tuple[str, ...]) -> None:
    code, rep, _ = check(fake_nvml_dir, fake_child, "--all-devices", "--device-id", "1",
                         CUDA_VISIBLE_DEVICES="GPU-dddd,GPU-aaaa", FAKE_SMOKE_COUNT="2")
    devs = rep["smoke_devices"]
    assert [(d["ordinal"], d["nvml_index"], d["uuid"]) for d in devs] == [
        (0, 3, "GPU-dddd0000-4444"), (1, 0, "GPU-aaaa0000-1111")]
    assert rep["smoke"]["device_id"] == 1
    assert rep["driver"]["visible_device_indices"] == [3, 0]
    # only visible GPUs are checked: the low-memory and the V100 are hidden
    assert "gpu-low-memory" not in ids(rep)
    assert "gpu-arch-unsupported" not in ids(rep)
    assert "CUDA device 0 (NVML GPU 3" in finding(rep, "gpu-compute-mode-prohibited")["detail"]
    # UUIDs in the variable: no ordering caveat even though the GPUs differ
    assert rep["driver"]["device_order_note"] is None
    assert code == 1


@pytest.mark.realwheels
def test_cuda_visible_devices_by_index_and_the_order_caveat(fake_nvml_dir: Path, fake_child: tuple[str, ...]) -> None:
    _, rep, _ = check(fake_nvml_dir, fake_child, "--all-devices", CUDA_VISIBLE_DEVICES="2,0")
    assert [(d["ordinal"], d["nvml_index"]) for d in rep["smoke_devices"]] == [(0, 2), (1, 0)]
    assert "Tesla V100" in finding(rep, "gpu-arch-unsupported")["detail"]
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in (rep["driver"]["device_order_note"] or "")


@pytest.mark.realwheels
def test_invalid_ordinal_after_cuda_visible_devices(fake_nvml_dir: Path, fake_child: tuple[str, ...]) -> None:
    """The issue's case: `CUDA_VISIBLE_DEVICES=1 ortdoctor check --device-id 1`."""
    code, rep, _ = check(fake_nvml_dir, fake_child, "--device-id", "1", CUDA_VISIBLE_DEVICES="1",
                         FAKE_SMOKE_COUNT="1")
    f = finding(rep, "invalid-device-ordinal")
    assert f["severity"] == "error"
    assert "1 GPU(s) are visible (CUDA_VISIBLE_DEVICES='1')" in f["detail"]
    assert "0 = NVML GPU 1 NVIDIA H200 (GPU-bbbb0000-2222)" in f["detail"]
    assert "--device-id 0" in f["fix"]
    # the smoke session on ordinal 1 failed with CUDA's own error 101, which confirms the finding
    assert "Confirmed by the smoke session" in f["detail"]
    assert rep["smoke"]["ok"] is False
    assert rep["smoke_devices"] is None
    assert code == 1


@pytest.mark.realwheels
def test_all_devices_text_report(fake_nvml_dir: Path, fake_child: tuple[str, ...]) -> None:
    env = dict(os.environ)
    for k in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"):
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(testenvs.ensure("ort-gpu")), str(testenvs.ensure("nvidia-cu13"))])
    env.update({"LD_LIBRARY_PATH": str(fake_nvml_dir), "FAKE_NVML": SERVER, "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                "ORTDOCTOR_SMOKE_CHILD_ARGV": json.dumps(list(fake_child)), "CUDA_VISIBLE_DEVICES": "1,0"})
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--all-devices"], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    out = proc.stdout
    assert "Traceback" not in proc.stderr
    assert "GPU 1: NVIDIA H200" in out
    assert "= CUDA device 0" in out
    assert "hidden by CUDA_VISIBLE_DEVICES" in out
    assert "Devices" in out
    assert "cuda:0 = GPU 1 NVIDIA H200 (sm 9.0, 300 MiB free): ok" in out
    assert "cuda:1 = GPU 0 NVIDIA H200" in out
