"""The cost of ``check --model``'s proof: the CPU reference beside the session under test where host memory
holds both, a bounded comparison above the size limit, the model file read once by the parent and its
external data never.

The real exported fixtures (tests/data/models) run in the child on the real onnxruntime 1.31.1 CPU wheel
with the CPU EP under test (this machine has no GPU): the concurrent and the sequential reference must give
the same proof. Free host memory is given to ``check_model`` (``host_memory``) so that both rules are
exercised whatever this machine has.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.doctor.model import check_model
from ortdoctor.prove.model_check.budget import MARGIN_BYTES, available_host_memory, plan_comparison
from ortdoctor.report.model_check import render_model
from tests.support import models, testenvs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "models"
CPU = "CPUExecutionProvider"
GIB = 1024 ** 3


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(testenvs.ensure("ort-cpu"))}


def test_concurrent_only_where_both_sessions_fit() -> None:
    fits = plan_comparison(1 * GIB, 2 * GIB + MARGIN_BYTES, limit=4 * GIB)
    assert fits.concurrent
    assert not fits.bounded
    assert "beside the session under test" in fits.why
    tight = plan_comparison(1 * GIB, 2 * GIB + MARGIN_BYTES - 1, limit=4 * GIB)
    assert not tight.concurrent
    assert "host memory does not hold both" in tight.why
    unknown = plan_comparison(1 * GIB, None)
    assert (unknown.concurrent, unknown.bounded, unknown.limit) == (False, False, None)


def test_bounded_above_the_limit_unless_shapes_were_given() -> None:
    big = plan_comparison(12 * GIB, 16 * GIB)  # default limit: a quarter of the free memory, at most 2 GiB
    assert big.limit == 2 * GIB
    assert plan_comparison(1 * GIB, 6 * GIB).limit == int(1.5 * GIB)
    assert big.bounded
    assert "sequence length 1" in big.why
    given = plan_comparison(12 * GIB, 16 * GIB, shapes_given=True)
    assert not given.bounded
    assert "the shapes were given" in given.why
    assert not plan_comparison(1 * GIB, 16 * GIB, limit=2 * GIB).bounded
    assert plan_comparison(3 * GIB, 16 * GIB, limit=2 * GIB).to_json()["sequence"] == 1


def test_available_host_memory_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:    8000000 kB\n")
    assert available_host_memory(str(meminfo)) == 8000000 * 1024
    assert available_host_memory(str(tmp_path / "missing")) is None
    if os.path.exists("/proc/meminfo"):
        assert (available_host_memory() or 0) > 0


def test_no_concurrency_with_the_cpu_ep_under_test() -> None:
    cpu = plan_comparison(1 * GIB, 64 * GIB, on_device=False)
    assert not cpu.concurrent
    assert "they would share its cores" in cpu.why
    assert plan_comparison(1 * GIB, 64 * GIB, on_device=False, concurrent=True).concurrent


@pytest.mark.realwheels
@pytest.mark.parametrize("memory", [10 ** 12, 1], ids=["concurrent", "sequential"])
def test_concurrent_and_sequential_reference_prove_the_same(memory: int) -> None:
    # the CPU EP stands in for the device here: concurrency is forced where memory allows
    report = check_model(DATA / "gpt2_with_past.onnx", env=_env(), ep=CPU, host_memory=memory,
                         compare_limit=10 ** 12, concurrent_reference=True if memory > 1 else None)
    run = report.run
    assert run is not None
    assert run["reference_concurrent"] is (memory == 10 ** 12)
    assert run["inputs_valid"] is True
    assert run["agree"] is True
    assert len(run["outputs"]) == 5
    assert run["cpu"]["session_ms"] > 0
    assert report.comparison is not None
    assert report.comparison["concurrent_reference"] is (memory == 10 ** 12)
    assert "compared    the whole model at the tested shapes" in render_model(report)


@pytest.mark.realwheels
def test_above_the_limit_the_comparison_is_bounded_and_said() -> None:
    report = check_model(DATA / "gpt2_with_past.onnx", env=_env(), ep=CPU, host_memory=10 ** 12, compare_limit=1)
    run = report.run
    assert run is not None
    assert run["inputs"]["input_ids"]["shape"] == [1, 1]
    assert run["inputs"]["attention_mask"]["shape"] == [1, 1]
    assert run["agree"] is True
    assert report.comparison is not None
    assert report.comparison["bounded"] is True
    text = render_model(report)
    assert "the test run is made at sequence length 1" in text
    assert report.trt is not None  # the TensorRT profile stays around the usual 16 tokens
    assert "input_ids:1x16" in report.trt.provider_options()["trt_profile_opt_shapes"]
    # a given shape is kept: the user asked for it
    given = check_model(DATA / "bert_optimum.onnx", env=_env(), ep=CPU, host_memory=10 ** 12, compare_limit=1,
                        input_shapes=["input_ids=1x8"])
    assert given.run is not None
    assert given.run["inputs"]["input_ids"]["shape"] == [1, 8]


@pytest.fixture
def opened() -> Iterator[list[str]]:
    """Every path this process opens while the fixture is active (the interpreter's audit events)."""
    seen: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if active[0] and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            seen.append(os.fsdecode(args[0]))

    sys.addaudithook(hook)  # audit hooks cannot be removed: this one goes quiet after the test
    try:
        yield seen
    finally:
        active[0] = False


def test_parent_reads_the_model_once_and_never_its_external_data(tmp_path: Path, opened: list[str]) -> None:
    path = models.build_external_ok(tmp_path / "ext")
    data = path.parent / "model.onnx.data"
    assert data.stat().st_size > 0
    opened.clear()
    report = check_model(path, python=str(tmp_path / "no-python"))  # the parent's side only
    assert report.inspection.external_bytes == data.stat().st_size
    assert str(data) not in opened
    assert opened.count(str(path)) == 1


@pytest.mark.realwheels
def test_compare_limit_from_the_command_line() -> None:
    env = {**_env(), "PYTHONPATH": os.pathsep.join([str(ROOT), str(testenvs.ensure("ort-cpu"))])}
    base = [sys.executable, "-m", "ortdoctor", "check", "--no-smoke"]
    proc = subprocess.run([*base, "--json", "--model", str(DATA / "gpt2_with_past.onnx"), "--compare-limit", "0.0001"],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    model = json.loads(proc.stdout)["model"]
    assert model["comparison"]["bounded"] is True
    assert model["comparison"]["limit_bytes"] == int(0.0001 * GIB)
    assert model["run"]["inputs"]["input_ids"]["shape"] == [1, 1]
    alone = subprocess.run([*base, "--compare-limit", "1"], capture_output=True, text=True, env=env, timeout=300,
                           check=False)
    assert alone.returncode == 2
    assert "--compare-limit needs --model" in alone.stderr
