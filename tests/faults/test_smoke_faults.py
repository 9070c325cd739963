"""A smoke child that segfaults, hangs, floods its output, exits without a result or cannot start: the
parent always reports it with the reason (smoke-failed; a crash while creating the CUDA session on a
machine without a driver confirms driver-missing), exits 1, and never hangs (the documented test seam
ORTDOCTOR_SMOKE_CHILD_ARGV replaces the child's command line)."""

from __future__ import annotations

import json
import sys

import pytest

from ortdoctor.prove.smoke.child import RESULT_PREFIX, STAGE_PREFIX
from tests.faults.conftest import Case
from tests.faults.helpers import Result

CHILDREN = {
    "segfault": ("import ctypes, sys\nprint(%r, flush=True)\nctypes.string_at(0)\n" % (STAGE_PREFIX + "session"),
                 "SIGSEGV"),
    "abort": ("import os\nos.abort()\n", "SIGABRT"),
    "hang": ("import time\nprint(%r, flush=True)\ntime.sleep(600)\n" % (STAGE_PREFIX + "import"),
             "did not finish within 2 s"),
    "hang-with-grandchild": ("import subprocess, sys, time\n"
                             "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                             "time.sleep(600)\n", "did not finish within 2 s"),
    "megabytes": ("import sys\nline = 'x' * 1023 + '\\n'\n"
                  "for _ in range(12 * 1024):\n    sys.stdout.write(line)\n    sys.stderr.write(line)\n",
                  "without a result"),
    "exit-0-no-result": ("print('hello from a child that reports nothing')\n", "without a result"),
    "exit-7-no-result": ("import sys\nsys.stderr.write('[E:onnxruntime:Default, provider_bridge_ort.cc:2281] "
                         "Failed to load library libonnxruntime_providers_cuda.so with error: "
                         "libcudnn.so.9: cannot open shared object file: No such file or directory\\n')\n"
                         "sys.exit(7)\n", "status 7"),
    "garbage-result": ("print(%r)\n" % (RESULT_PREFIX + "{not json at all"), "without a result"),
    "result-not-an-object": ("print(%r)\n" % (RESULT_PREFIX + "[1, 2, 3]"), "without a result"),
}


def _smoke(case: Case, argv: list[str] | str) -> Result:
    case.gpu_site()
    seam = argv if isinstance(argv, str) else json.dumps(argv)
    res = case.run("check", "--json", "--timeout", "2", env={"ORTDOCTOR_SMOKE_CHILD_ARGV": seam}, timeout=60)
    assert res.returncode == 1, res.text
    return res


@pytest.mark.parametrize("name", list(CHILDREN))
def test_smoke_child_misbehaves(case: Case, name: str) -> None:
    code, words = CHILDREN[name]
    script = case.base / "children" / f"{name}.py"
    script.parent.mkdir()
    script.write_text(code)
    res = _smoke(case, [sys.executable, str(script)])
    smoke = res.data["smoke"]
    assert smoke["ran"] is True
    assert smoke["ok"] is False
    assert words in smoke["error"], smoke["error"]
    if name == "exit-7-no-result":
        assert "libcudnn.so.9" in json.dumps(smoke)  # ORT's own message is classified and quoted
        # ... and confirms the cause, which carries it: no second error saying only "the smoke failed"
        assert any("libcudnn.so.9" in f["detail"] for f in res.data["findings"] if f["severity"] == "error")
        assert "smoke-failed" not in res.finding_ids()
        return
    if name == "segfault" and "driver-missing" in res.finding_ids():
        # it died while creating the CUDA session on a machine with no driver: that is the cause, and the
        # crash is its confirmation, not a second error (1.18 and 1.22 crash so without a driver)
        assert "smoke-failed" not in res.finding_ids()
        assert "SIGSEGV" in res.finding("driver-missing")["detail"]
        assert smoke["causes"][0]["id"] == "driver-missing"
        return
    f = res.finding("smoke-failed")
    assert f["severity"] == "error"
    if name == "megabytes":
        assert len(res.stdout) < 4 * 1024 * 1024  # the report quotes a bounded tail, not the flood


@pytest.mark.parametrize("seam", ['["/nonexistent/ortdoctor-fault/python"]', "not json", '"a string"', "[1, 2]"],
                         ids=["missing-executable", "not-json", "not-a-list", "not-strings"])
def test_smoke_child_cannot_start(case: Case, seam: str) -> None:
    res = _smoke(case, seam)
    smoke = res.data["smoke"]
    assert smoke["ok"] is False
    assert smoke["error"]
    assert "smoke-failed" in res.finding_ids()


