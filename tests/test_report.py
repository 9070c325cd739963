"""The JSON report (docs/report-contract.md), the verdict, and the findings catalog and its document."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.core.catalog import CATALOG, CONTRACT_IDS, explain_text, render_markdown
from ortdoctor.core.facts import Finding, OrtInfo, SystemInfo
from ortdoctor.report.json_report import dumps, to_json
from ortdoctor.report.model import Report, verdict_of
from tests.test_diagnose import MATRIX, driver_none, full_plan, healthy_env, run

ROOT = Path(__file__).resolve().parents[1]


def make_report(env=None, plan=None, **kw) -> Report:  # type: ignore[no-untyped-def]
    env = env or healthy_env()
    findings = run(env, plan)
    return Report(verdict=verdict_of(findings), findings=tuple(findings), env=env, plan=plan,
                  matrix_path="<test>", smoke_skipped="--no-smoke", **kw)


def test_verdict_of() -> None:
    def f(sev: str) -> Finding:
        return Finding("x", sev, "t", "d", None)  # type: ignore[arg-type]

    assert verdict_of([]) == "ok"
    assert verdict_of([f("info")]) == "ok"
    assert verdict_of([f("info"), f("warning")]) == "warn"
    assert verdict_of([f("warning"), f("error")]) == "fail"


def test_json_has_the_contract_fields() -> None:
    rep = make_report(healthy_env(driver=driver_none(), system=SystemInfo()), full_plan())
    data = json.loads(dumps(rep))
    assert data["schema_version"] == 2
    assert data["verdict"] == "fail"
    assert data["findings"][0]["id"] == "driver-missing"
    assert set(data["findings"][0]) == {"id", "severity", "title", "detail", "fix", "steps", "commands"}
    assert data["ort"]["active"] == "onnxruntime-gpu"
    assert data["ort"]["distributions"][0] == {**data["ort"]["distributions"][0], "name": "onnxruntime-gpu",
                                              "version": "1.31.1"}
    assert data["torch"] is None
    assert data["driver"]["available"] is False
    lib = next(x for x in data["libraries"] if x["name"] == "cudart")
    assert lib["soname"] == "libcudart.so.13"
    assert lib["source"] == "nvidia-wheel"
    assert lib["path"].endswith("nvidia/cu13/lib/libcudart.so.13")
    assert lib["loader_visible"] is False
    assert lib["candidates"][0]["rejected"] is None
    assert data["smoke"] == {"ran": False, "ok": None, "providers": [], "device_id": 0, "error": None,
                             "timings_ms": {}, "skipped": "--no-smoke"}


def test_json_without_onnxruntime() -> None:
    data = to_json(make_report(healthy_env(ort=OrtInfo(installed=False))))
    assert data["ort"]["installed"] is False
    assert data["libraries"] == []
    assert data["findings"][0]["id"] == "ort-not-installed"


def test_every_contract_id_is_catalogued() -> None:
    assert set(CONTRACT_IDS) <= set(CATALOG)


def test_explain_text_has_cause_evidence_and_fix() -> None:
    text = explain_text("cuda-major-mismatch")
    assert text.startswith("cuda-major-mismatch: ")
    for part in ("Cause:", "Evidence:", "Fix:", "failure mode: 3"):
        assert part in text


def test_findings_doc_is_up_to_date() -> None:
    doc = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    assert doc == render_markdown(), "run: python scripts/gen_findings_doc.py"
    for fid in CATALOG:
        assert f"## {fid}" in doc


def test_gen_findings_doc_check_mode() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_findings_doc.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_matrix_used_by_the_tests_is_real() -> None:
    assert MATRIX.release_for("1.31.1") is not None


def test_json_says_when_the_report_was_taken() -> None:
    import re
    from datetime import datetime, timedelta, timezone

    from tests.support.report_schema import validate

    before = datetime.now(timezone.utc)
    data = validate(json.loads(dumps(make_report(healthy_env(), full_plan()))))
    taken = data["taken_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", taken), taken
    at = datetime.fromisoformat(taken.replace("Z", "+00:00"))
    assert before - timedelta(seconds=1) <= at <= datetime.now(timezone.utc)
    assert to_json(make_report(), taken_at="2026-12-01T10:00:00.000Z")["taken_at"] == "2026-12-01T10:00:00.000Z"
    # an invalid value is not a date-time the schema accepts
    bad = {**data, "taken_at": "yesterday"}
    with pytest.raises(AssertionError, match="taken_at"):
        validate(bad)
