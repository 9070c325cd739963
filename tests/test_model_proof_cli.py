"""``ortdoctor check --model`` from the command line: the proof with no flags, ``--input``, ``--iobinding``.

Real subprocesses and the real onnxruntime CPU wheel: the CUDA EP cannot exist here, so the inputs are
validated on the CPU EP and the report says there was no GPU run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support import testenvs
from tests.support.report_schema import validate

ROOT = Path(__file__).resolve().parents[1]
BERT = ROOT / "tests" / "data" / "models" / "bert_optimum.onnx"


def check(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(testenvs.ensure("ort-cpu"))])
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--no-smoke", *args], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.mark.realwheels
def test_no_flags_json(tmp_path: Path) -> None:
    proc = check("--json", "--model", str(BERT))
    model = validate(json.loads(proc.stdout))["model"]
    assert "/bert/encoder/layer.0/attention/self/Sqrt" in model["shape_only_nodes"]
    assert model["run"]["inputs_valid"] is True
    assert model["run"]["iobinding"]["used"] is False
    assert model["tensorrt"]["provider_options"]["trt_engine_cache_enable"] == "True"
    assert [i["source"] for i in model["test_inputs"]["inputs"]] == ["synthetic"] * 3


@pytest.mark.realwheels
def test_input_file_and_iobinding(tmp_path: Path) -> None:
    ids = tmp_path / "ids.npy"
    np.save(ids, np.ones((2, 8), dtype=np.int64))
    proc = check("--json", "--model", str(BERT), "--input", f"input_ids={ids}", "--iobinding")
    model = json.loads(proc.stdout)["model"]
    run = model["run"]
    assert run["inputs"]["input_ids"]["source"] == str(ids)
    assert run["inputs"]["token_type_ids"]["shape"] == [2, 8]
    assert run["iobinding"] == {"used": True, "device": "cuda:0"}
    assert model["client"] is None  # no CUDA EP here: no advice on binding inputs to its device


def test_input_option_misused(tmp_path: Path) -> None:
    res = check("--input", "x=a.npy")
    assert res.returncode == 2
    assert "--input needs --model" in res.stderr
    for value, message in (("x", "expected NAME=FILE.npy"), (f"x={tmp_path / 'missing.npy'}", "No such file")):
        res = check("--model", str(BERT), "--input", value)
        assert res.returncode == 2, res.stderr
        assert message in res.stderr
