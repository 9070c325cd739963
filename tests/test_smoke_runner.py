"""The smoke runner: real children that crash, hang, flood or lie, and the real onnxruntime wheels.

The misbehaving children come in through the runner's documented test seam (``SmokeRequest.child_argv``
and the ``ORTDOCTOR_SMOKE_CHILD_ARGV`` variable); the real ones run ortdoctor's own child.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from ortdoctor.diagnose.smoke import classify_smoke
from ortdoctor.prove.smoke.child import RESULT_PREFIX
from ortdoctor.prove.smoke.runner import CHILD_ARGV_ENV, SmokeRequest, judge, parse_node_placement, run_smoke
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]


def _py(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def test_segfaulting_child_is_smoke_failed_with_the_signal() -> None:
    code = "import os, signal, sys; print('ORTDOCTOR-SMOKE-STAGE: session', flush=True); os.kill(os.getpid(), signal.SIGSEGV)"
    r = run_smoke(SmokeRequest(child_argv=_py(code), timeout=30))
    assert (r.ran, r.ok, r.finding_id) == (True, False, "smoke-failed")
    assert r.exit_status == "SIGSEGV"
    assert "SIGSEGV" in (r.error or "")
    assert "creating the CUDA session" in (r.error or "")


def test_hanging_child_is_killed_at_the_timeout() -> None:
    code = "import time; print('still here', flush=True); time.sleep(600)"
    r = run_smoke(SmokeRequest(child_argv=_py(code), timeout=2))
    assert (r.ran, r.ok, r.finding_id, r.exit_status) == (True, False, "smoke-failed", "timeout")
    assert "within 2 s" in (r.error or "")
    assert "still here" in r.output_tail
    assert r.duration_ms is not None
    assert r.duration_ms < 30_000


def test_hanging_grandchild_does_not_hold_the_parent() -> None:
    # The child starts a sleeper that inherits its pipes; the whole process group is killed.
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
            " time.sleep(600)")
    r = run_smoke(SmokeRequest(child_argv=_py(code), timeout=2))
    assert r.exit_status == "timeout"
    assert r.duration_ms is not None
    assert r.duration_ms < 30_000


def test_flooding_child_is_captured_within_the_budget() -> None:
    code = ("import sys; chunk = 'x' * 1023 + '\\n'\n"
            "for _ in range(50 * 1024): sys.stdout.write(chunk); sys.stderr.write(chunk)\n"
            f"print({RESULT_PREFIX!r} + '{{\"ran\": true, \"ok\": false, \"stage\": \"run\", \"error\": \"boom\"}}')")
    r = run_smoke(SmokeRequest(child_argv=_py(code), timeout=60))
    assert (r.ran, r.ok, r.finding_id, r.error) == (True, False, "smoke-failed", "boom")
    assert len(r.output_tail) < 200_000


def test_child_exiting_zero_without_a_result() -> None:
    r = run_smoke(SmokeRequest(child_argv=_py("print('hello')"), timeout=30))
    assert (r.ran, r.ok, r.finding_id, r.exit_status) == (True, False, "smoke-failed", "0")
    assert "without a result" in (r.error or "")
    assert "hello" in r.output_tail


def test_child_that_cannot_start() -> None:
    r = run_smoke(SmokeRequest(child_argv=("/nonexistent/python",), timeout=5))
    assert (r.ran, r.ok, r.finding_id) == (False, False, "smoke-failed")
    assert "could not start" in (r.error or "")


def test_seam_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHILD_ARGV_ENV, json.dumps(list(_py("import sys; sys.exit(7)"))))
    r = run_smoke(SmokeRequest(timeout=30))
    assert (r.finding_id, r.exit_status) == ("smoke-failed", "7")


def test_bad_seam_value_is_a_result_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHILD_ARGV_ENV, "not json")
    r = run_smoke(SmokeRequest(timeout=5))
    assert (r.ran, r.ok, r.finding_id) == (False, False, "smoke-failed")


def test_child_without_onnxruntime_is_smoke_failed(tmp_path: Path) -> None:
    # An interpreter that cannot import onnxruntime: -S drops site-packages, an empty PYTHONPATH entry.
    code = ("import sys; sys.path[:] = [p for p in sys.path if 'site-packages' not in p]; "
            f"sys.path.insert(0, {str(ROOT)!r}); sys.modules['onnxruntime'] = None; "
            "from ortdoctor.prove.smoke.child import main; sys.exit(main())")
    r = run_smoke(SmokeRequest(child_argv=(sys.executable, "-c", code), timeout=60, preload=False))
    assert (r.ran, r.ok, r.finding_id, r.stage) == (True, False, "smoke-failed", "import")
    assert "could not be imported" in (r.error or "")


def test_judge_parses_a_mixed_node_placement() -> None:
    stderr = "\n".join([
        "2026-12-02 [V:onnxruntime:, session_state.cc:1578 VerifyEachNodeIsAssignedToAnEp] Node placements",
        "2026-12-02 [V:onnxruntime:, session_state.cc:1581 VerifyEachNodeIsAssignedToAnEp]  Node(s) placed on "
        "[CUDAExecutionProvider]. Number of nodes: 2",
        "2026-12-02 [V:onnxruntime:, session_state.cc:1583 VerifyEachNodeIsAssignedToAnEp]   MatMul (smoke_matmul)",
        "2026-12-02 [V:onnxruntime:, session_state.cc:1583 VerifyEachNodeIsAssignedToAnEp]   Relu (smoke_relu)",
        "2026-12-02 [V:onnxruntime:, session_state.cc:1581 VerifyEachNodeIsAssignedToAnEp]  Node(s) placed on "
        "[CPUExecutionProvider]. Number of nodes: 1",
        "2026-12-02 [V:onnxruntime:, session_state.cc:1583 VerifyEachNodeIsAssignedToAnEp]   Shape (s)",
        "2026-12-02 [V:onnxruntime:, session_state.cc:193 CreateGraphInfo] SaveMLValueNameIndexMapping",
    ])
    assert parse_node_placement(stderr) == {
        "CUDAExecutionProvider": ("MatMul (smoke_matmul)", "Relu (smoke_relu)"),
        "CPUExecutionProvider": ("Shape (s)",),
    }


def test_judge_reports_a_session_on_the_cpu_as_fallback() -> None:
    result = {"ran": True, "ok": False, "stage": "session", "providers": ["CPUExecutionProvider"],
              "error": "the session runs on ['CPUExecutionProvider']", "timings_ms": {"import": 1.5}}
    r = judge(stdout=RESULT_PREFIX + json.dumps(result) + "\n", stderr="", returncode=1, timed_out=False,
              request=SmokeRequest())
    assert r.finding_id == "smoke-fell-back-to-cpu"
    assert r.to_json()["timings_ms"] == {"import": 1.5}


# --------------------------------------------------------------------------------------------------
# The real wheels (this machine has no NVIDIA driver and no GPU)
# --------------------------------------------------------------------------------------------------
def _env(*names: str) -> dict[str, str | None]:
    return {"PYTHONPATH": os.pathsep.join(str(testenvs.ensure(n)) for n in names)}


@pytest.mark.realwheels
def test_real_gpu_wheel_without_a_driver_is_driver_missing() -> None:
    r = classify_smoke(run_smoke(SmokeRequest(env=_env("ort-gpu", "nvidia-cu13"), timeout=120)))
    assert (r.ran, r.ok, r.finding_id) == (True, False, "smoke-fell-back-to-cpu")
    assert r.ort_version == testenvs.ORT_GPU_VERSION
    assert r.cause_ids[0] == "driver-missing"
    cause = r.causes[0]
    assert "libcuda.so.1: cannot open shared object file" in cause.evidence
    assert any("libcuda.so.1" in line for line in r.evidence)
    block = r.to_json()
    assert block["ran"] is True
    assert block["ok"] is False
    assert set(block["timings_ms"]) >= {"import", "session"}


@pytest.mark.realwheels
def test_real_gpu_wheel_without_cuda_libraries_names_the_missing_library() -> None:
    r = classify_smoke(run_smoke(SmokeRequest(env=_env("ort-gpu"), timeout=120, preload=False)))
    assert r.finding_id == "smoke-fell-back-to-cpu"
    assert r.cause_ids[0] == "cuda-lib-missing"
    assert r.causes[0].details["soname"].startswith("libcublas")


@pytest.mark.realwheels
def test_real_cpu_wheel_is_ort_cpu_only() -> None:
    r = classify_smoke(run_smoke(SmokeRequest(env=_env("ort-cpu"), timeout=120)))
    assert r.finding_id == "smoke-fell-back-to-cpu"
    assert r.cause_ids == ("ort-cpu-only",)
    assert "CUDAExecutionProvider" not in r.available_providers


@pytest.mark.realwheels
@pytest.mark.parametrize("iobinding", [False, True])
def test_the_whole_success_path_on_the_cpu_provider(iobinding: bool) -> None:
    # The CUDA path cannot succeed here; the same child on the CPU EP proves timings, numbers and the
    # --placement node placement as the real onnxruntime reports it.
    r = run_smoke(SmokeRequest(env=_env("ort-cpu"), timeout=120, verbose=True, iobinding=iobinding,
                               ep="CPUExecutionProvider"))
    assert (r.ok, r.finding_id, r.error) == (True, None, None)
    assert r.providers[0] == "CPUExecutionProvider"
    assert set(r.timings_ms) >= {"import", "session", "first_run", "run"}
    assert r.max_abs_error is not None
    assert r.max_abs_error < 1e-3
    assert "CPUExecutionProvider" in r.node_placement
    assert r.checks.get("iobinding", False) is iobinding


def test_numpy_abi_failure_says_what_numpy_printed_and_the_fix_names_the_interpreter() -> None:
    # onnxruntime 1.18.0 was built against NumPy 1.x; with NumPy 2 its import raises a bare "ImportError"
    # after printing the explanation (the real wheel, the test venv's NumPy 2)
    import numpy

    from ortdoctor.core.facts import Finding
    from ortdoctor.decide.fixes import Installer
    from ortdoctor.diagnose.merge import merge_smoke
    from ortdoctor.diagnose.smoke import classify_smoke
    from ortdoctor.prove.smoke.runner import SmokeRequest, run_smoke
    from tests.support import testenvs

    if int(numpy.__version__.split(".")[0]) < 2:
        pytest.skip("needs NumPy 2 in the test environment")
    site = testenvs.ensure("ort-1.18-cpu")
    result = classify_smoke(run_smoke(SmokeRequest(ep="CPUExecutionProvider", import_path=(str(site),))))
    assert not result.ok
    assert result.error is not None
    assert "compiled using NumPy 1.x cannot be run in NumPy 2" in result.error
    assert [c.finding_id for c in result.causes][:1] == ["numpy-abi-mismatch"]
    found: list[Finding] = merge_smoke([], result, Installer("/venv/bin/python"))
    fix = next(f for f in found if f.id == "numpy-abi-mismatch").fix or ""
    assert fix.splitlines()[0] == "/venv/bin/python -m pip install 'numpy<2'"


def test_a_device_id_out_of_range_is_reported_once_by_its_cause() -> None:
    # onnxruntime-gpu 1.31.1 on an H200 with one GPU visible, `check --device-id 1`: the check finds
    # invalid-device-ordinal before the session; the smoke child's real error then confirms it instead
    # of adding a second error (tests/data/errors/mode09_invalid_device_id_ort_1_31.txt)
    from ortdoctor.core.catalog import make
    from ortdoctor.diagnose.merge import merge_smoke
    from ortdoctor.prove.smoke.runner import SmokeResult

    text = (Path(__file__).parent / "data" / "errors" / "mode09_invalid_device_id_ort_1_31.txt").read_text()
    error = next(line for line in text.splitlines() if line.startswith("RuntimeError"))
    result = classify_smoke(SmokeResult(ran=True, ok=False, device_id=1, error=error, finding_id="smoke-failed",
                                        exit_status="1", ort_version="1.31.1", message_text=error))
    assert [c.finding_id for c in result.causes] == ["invalid-device-ordinal"]
    before = [make("invalid-device-ordinal", "device_id 1 requested, but 1 GPU(s) are visible", "--device-id 0")]
    found = merge_smoke(before, result)
    assert [f.id for f in found] == ["invalid-device-ordinal"]
    assert "Invalid device ID: 1" in found[0].detail
