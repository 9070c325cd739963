"""The smoke child on its own: what it imports, which library rows it preloads with, and the per-node
placement it reads from the real onnxruntime (CPU build 1.31.1, on the CPU EP seam: no GPU here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.prove.smoke import child
from ortdoctor.prove.smoke.runner import SmokeRequest, judge, run_smoke
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]


def test_the_child_does_not_import_the_parents_machinery() -> None:
    code = ("import sys; import ortdoctor.prove.smoke.child; "
            "print([m for m in ('ortdoctor.prove.smoke.runner', 'subprocess', 'threading', 'dataclasses', 'traceback') "
            "if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_named_matrix_reaches_the_child_as_an_absolute_path() -> None:
    assert SmokeRequest(matrix="rel.yaml").to_child()["matrix"] == os.path.abspath("rel.yaml")


def _child(request: dict[str, object]) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(testenvs.ensure("ort-cpu"))}
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from ortdoctor.prove.smoke.child import main; sys.exit(main())"
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(request)], capture_output=True, text=True,
                          env=env, timeout=120, cwd=str(ROOT))
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith(child.RESULT_PREFIX), proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(line[len(child.RESULT_PREFIX):])  # type: ignore[no-any-return]


@pytest.mark.realwheels
def test_verbose_placement_comes_from_onnxruntime_itself() -> None:
    result = _child({"ep": "CPUExecutionProvider", "verbose": True, "preload": False, "runs": 1})
    assert result["ok"] is True
    assert result["placement_source"] == "ep-graph-assignment-info"
    placement = result["node_placement"]
    assert isinstance(placement, dict)
    assert sorted(placement["CPUExecutionProvider"]) == ["Gemm (smoke_matmul/MatMulAddFusion)", "Relu (smoke_relu)"]
    quiet = _child({"ep": "CPUExecutionProvider", "preload": False, "runs": 1})
    assert "node_placement" not in quiet  # only asked for with --placement


@pytest.mark.realwheels
def test_verbose_placement_through_the_runner_and_both_renderers() -> None:
    from ortdoctor.report.model import Report
    from ortdoctor.report.smoke import render_smoke
    from ortdoctor.report.text import render
    from tests.test_diagnose import full_plan, healthy_env

    r = run_smoke(SmokeRequest(env={"PYTHONPATH": str(testenvs.ensure("ort-cpu"))}, timeout=120, verbose=True,
                               ep="CPUExecutionProvider", preload=False))
    assert r.ok, r.error
    assert set(r.node_placement) == {"CPUExecutionProvider"}
    assert "Relu (smoke_relu)" in r.node_placement["CPUExecutionProvider"]
    assert r.to_json()["node_placement"]["CPUExecutionProvider"] == list(r.node_placement["CPUExecutionProvider"])
    assert "    CPUExecutionProvider: " in render_smoke(r, verbose=True)
    text = render(Report(verdict="ok", findings=(), env=healthy_env(), plan=full_plan(), matrix_path="<test>",
                         smoke=r))
    line = next(ln for ln in text.splitlines() if "nodes on CPUExecutionProvider:" in ln)
    assert "Relu (smoke_relu)" in line
    assert line.startswith(" " * 13)


def test_the_childs_own_placement_wins_over_the_log() -> None:
    stderr = ("2026 [V:onnxruntime:, session_state.cc:1580 VerifyEachNodeIsAssignedToAnEp]  All nodes placed on "
              "[CUDAExecutionProvider]. Number of nodes: 3\n")
    data = {"ran": True, "ok": True, "stage": "done", "providers": ["CUDAExecutionProvider"],
            "node_placement": {"CUDAExecutionProvider": ["MatMul (m)", "Add (a)", "Relu (r)"]}}
    stdout = child.RESULT_PREFIX + json.dumps(data) + "\n"
    r = judge(stdout=stdout, stderr=stderr, returncode=0, timed_out=False, request=SmokeRequest(verbose=True))
    assert r.node_placement == {"CUDAExecutionProvider": ("MatMul (m)", "Add (a)", "Relu (r)")}
    # an older onnxruntime: the child has no placement of its own, the verbose log is read instead
    del data["node_placement"]
    stdout = child.RESULT_PREFIX + json.dumps(data) + "\n"
    r = judge(stdout=stdout, stderr=stderr, returncode=0, timed_out=False, request=SmokeRequest(verbose=True))
    assert r.node_placement == {"CUDAExecutionProvider": ("3 nodes",)}
    r = judge(stdout=stdout, stderr=stderr, returncode=0, timed_out=False, request=SmokeRequest())
    assert r.node_placement == {}


def test_allow_unsafe_dirs_reaches_the_childs_preload(monkeypatch: pytest.MonkeyPatch) -> None:
    # `check --allow-unsafe-dirs` resolves from a world-writable directory; the smoke child's preload must
    # be allowed the same, or the session proves another set of libraries than the check reported
    from ortdoctor.doctor.check import CheckOptions
    from ortdoctor.preloading import preloader
    from ortdoctor.prove.smoke import child as smoke_child

    request = CheckOptions(allow_unsafe_dirs=True).smoke_request_for().to_child()
    assert request["allow_unsafe_dirs"] is True
    assert CheckOptions().smoke_request_for().to_child()["allow_unsafe_dirs"] is False
    seen: dict[str, object] = {}

    def fake_preload(**kwargs: object) -> object:
        seen.update(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setattr(preloader, "preload", fake_preload)
    answer = smoke_child._preload(request)
    assert seen["allow_unsafe_dirs"] is True
    assert answer["ok"] is False
