"""`ortdoctor check --model`: the model check inside the environment check (CLI and Python API).

Real subprocesses, real ONNX models built in the tests, and the real onnxruntime (CPU build) wheel in
the model-check child: this machine has no GPU, so the model is reported on the CPU, with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.doctor.check import run_check
from tests.support import models, testenvs
from tests.support.report_schema import validate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return models.build_good(tmp_path_factory.mktemp("good"))


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return models.build_bad(tmp_path_factory.mktemp("bad"))


def check(*args: str, envs: tuple[str, ...] = ("ort-cpu",)) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *(str(testenvs.ensure(e)) for e in envs)])
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--no-smoke", *args], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout
    return proc


def as_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = validate(json.loads(proc.stdout))
    return data


@pytest.mark.realwheels
def test_float_model_json(good: dict[str, Path]) -> None:
    proc = check("--json", "--model", str(good["float"]), "--input-shape", "X=2x64")
    rep = as_json(proc)
    model = rep["model"]
    assert model["path"] == str(good["float"])
    assert model["ran"] is True
    assert model["providers"] == ["CPUExecutionProvider"]
    assert model["placement"]["gpu_share"] == 0.0
    assert model["run"]["cpu"]["ok"] is True
    ids = [f["id"] for f in rep["findings"]]
    # the model's findings are merged into the report's, beside the environment's
    assert "model-not-on-gpu" in ids
    assert "ort-cpu-only" in ids
    assert rep["verdict"] == "fail"
    assert proc.returncode == 1
    assert rep["schema_version"] == 2  # the contract's blocks are all still there
    assert rep["smoke"]["ran"] is False


@pytest.mark.realwheels
def test_float_model_text_has_a_model_section(good: dict[str, Path]) -> None:
    proc = check("--model", str(good["float"]))
    out = proc.stdout
    assert f"Model  {good['float']}" in out
    assert "0% of nodes on the CUDA EP" in out
    assert "model-not-on-gpu" in out
    # listed once, in the Model section, not again under Problems
    assert out.count("[model-not-on-gpu]") == 0
    assert proc.returncode == 1


@pytest.mark.realwheels
@pytest.mark.parametrize(("case", "fid"), [("not_onnx", "model-invalid"), ("truncated", "model-truncated"),
                                           ("external_missing", "model-external-data-missing")])
def test_bad_model_is_an_input_error(bad: dict[str, Path], case: str, fid: str) -> None:
    proc = check("--json", "--model", str(bad[case]))
    rep = as_json(proc)
    assert proc.returncode == 2
    assert rep["model"]["findings"][0]["id"] == fid
    assert fid in [f["id"] for f in rep["findings"]]
    assert rep["model"]["ran"] is False


def test_missing_model_file_is_an_input_error(tmp_path: Path) -> None:
    # refused before anything runs: no environment report in front of the one line that matters
    proc = check("--model", str(tmp_path / "nope.onnx"), envs=())
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "does not exist" in proc.stderr


def test_malformed_input_shape_is_a_usage_error(good: dict[str, Path]) -> None:
    proc = check("--model", str(good["float"]), "--input-shape", "X=2xbanana", envs=())
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "ortdoctor: error:" in proc.stderr
    assert "X=2xbanana" in proc.stderr


def test_input_shape_needs_a_model() -> None:
    proc = check("--input-shape", "X=1x3", envs=())
    assert proc.returncode == 2
    assert "--input-shape needs --model" in proc.stderr


def test_no_model_key_is_null() -> None:
    assert as_json(check("--json", envs=()))["model"] is None


@pytest.mark.realwheels
def test_python_api(good: dict[str, Path], bad: dict[str, Path]) -> None:
    environ = {**os.environ, "PYTHONPATH": str(testenvs.ensure("ort-cpu"))}
    report = run_check(smoke=False, model=good["loop"], environ=environ)
    assert report.model is not None
    assert report.model.ran
    assert "model-not-on-gpu" in {f.id for f in report.findings}
    assert "model" in report.timings_ms
    broken = run_check(smoke=False, model=bad["truncated"])
    assert broken.model is not None
    assert broken.model.input_error
    with pytest.raises(ValueError, match="dimensions"):
        run_check(smoke=False, model=good["float"], input_shapes=["X=1xq"])
