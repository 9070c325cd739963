"""The child side of ``ortdoctor check --model``: load the user's model on the CUDA EP and ask ORT where it ran.

Run as ``python -m ortdoctor.prove.model_check.child`` in a spawned process (the parent never imports
onnxruntime). The request is one JSON object on stdin; the answer is one line on stdout that starts with
:data:`RESULT_MARKER`, so whatever native code prints around it cannot corrupt it.

Where each node runs is read from onnxruntime itself (:mod:`ortdoctor.prove.ort_placement`, shared with the
smoke child): ``get_provider_graph_assignment_info()`` where this release has it, and the verbose session
log's ``VerifyEachNodeIsAssignedToAnEp`` block, which also names the Memcpy nodes ORT inserted. ORT writes
the log to file descriptor 2, so it is captured there, around session creation only.

Everything that can fail is caught and reported as data: the parent turns it into findings.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from typing import Any

from ortdoctor.formats.ortlog import ANSI as _ANSI
from ortdoctor.prove.ort_placement import (
    SOURCE_API,
    SOURCE_LOG,
    assignment,
    can_record,
    enable_recording,
    parse_placements,
)

RESULT_MARKER = "ORTDOCTOR-MODEL-CHECK-RESULT "
CUDA_EP = "CUDAExecutionProvider"
CPU_EP = "CPUExecutionProvider"

_MEMCPY_ADDED = re.compile(r"Add (Memcpy(?:To|From)Host) (before|after) (.+?) for (\w+)")
_SEVERITY = re.compile(r"\[([EWF]):onnxruntime")

# onnxruntime type strings -> numpy dtype names used for the random inputs
_NUMPY_TYPES = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
    "tensor(uint64)": "uint64", "tensor(uint32)": "uint32", "tensor(uint16)": "uint16",
    "tensor(uint8)": "uint8", "tensor(bool)": "bool",
}


# --------------------------------------------------------------------------------------------------
# Log parsing (pure: the tests feed it real captured logs)
# --------------------------------------------------------------------------------------------------
def parse_memcpy_added(log: str) -> list[dict[str, str]]:
    """``transformer_memcpy`` INFO lines: which copies ORT inserted, next to which tensor, for which EP."""
    out = []
    for m in _MEMCPY_ADDED.finditer(_ANSI.sub("", log)):
        out.append({"op_type": m.group(1), "where": m.group(2), "tensor": m.group(3), "provider": m.group(4)})
    return out


def important_lines(log: str, limit: int = 40) -> list[str]:
    """Errors and warnings ORT printed (provider creation failures, fallback warnings), de-duplicated."""
    seen: list[str] = []
    for raw in log.splitlines():
        line = _ANSI.sub("", raw).strip()
        if (_SEVERITY.search(line) or "Warning" in line or "Failed to" in line) and line not in seen:
            seen.append(line)
    return seen[-limit:]


# --------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def capture_fd2() -> Iterator[list[str]]:
    """Send file descriptor 2 (where ORT's default logger writes) to a temp file; yield its text after."""
    box: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield box
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box.append(tmp.read().decode("utf-8", errors="replace"))


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def _preload(matrix_path: str | None) -> dict[str, Any]:
    """ortdoctor's own preload (the same one the smoke run applies), when this install has it."""
    try:
        from ortdoctor.preloading import preloader
    except ImportError as exc:
        return {"attempted": False, "ok": None, "error": f"ortdoctor.preloading.preloader not importable: {exc}"}
    try:
        from ortdoctor.decide.matrix.load import load_matrix

        result = preloader.preload(matrix=load_matrix(matrix_path))
    except Exception as exc:
        return {"attempted": True, "ok": False, "error": _error_text(exc)}
    failed = list(getattr(result, "failed", ()) or ())
    return {"attempted": True, "ok": bool(getattr(result, "ok", not failed)), "error": None,
            "loaded": [getattr(x, "soname", str(x)) for x in getattr(result, "loaded", ()) or ()],
            "failed": [getattr(x, "soname", str(x)) for x in failed]}


def _session_options(ort: Any, *, verbose: bool, record: bool) -> Any:
    so = ort.SessionOptions()
    so.log_severity_level = 0 if verbose else 3
    so.log_verbosity_level = 0
    if record:
        enable_recording(so)
    return so


def _random_inputs(session: Any, shapes: dict[str, list[int]]) -> tuple[dict[str, Any], list[str]]:
    import numpy as np

    rng = np.random.default_rng(0)
    feeds: dict[str, Any] = {}
    problems: list[str] = []
    for inp in session.get_inputs():
        dtype = _NUMPY_TYPES.get(inp.type)
        if dtype is None:
            problems.append(f"input {inp.name!r} has type {inp.type}, which ortdoctor cannot fill with random data")
            continue
        shape = shapes.get(inp.name)
        if shape is None:
            if all(isinstance(d, int) and d >= 0 for d in inp.shape):
                shape = list(inp.shape)
            else:
                problems.append(f"input {inp.name!r} has dynamic shape {inp.shape}: "
                                f"pass --input-shape {inp.name}=" + "x".join(
                                    str(d) if isinstance(d, int) else "N" for d in inp.shape))
                continue
        if dtype.startswith("float"):
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == "bool":
            feeds[inp.name] = rng.integers(0, 2, size=shape).astype(bool)
        else:  # small non-negative integers: safe as token ids, indices and lengths
            feeds[inp.name] = rng.integers(0, 4, size=shape).astype(dtype)
    unknown = sorted(set(shapes) - {i.name for i in session.get_inputs()})
    problems.extend(f"--input-shape names {n!r}, which is not an input of the model" for n in unknown)
    return feeds, problems


def _timed_runs(session: Any, feeds: dict[str, Any]) -> dict[str, Any]:
    try:
        t0 = time.perf_counter()
        session.run(None, feeds)
        t1 = time.perf_counter()
        session.run(None, feeds)
        t2 = time.perf_counter()
    except Exception as exc:
        return {"ok": False, "error": _error_text(exc)}
    return {"ok": True, "first_ms": round((t1 - t0) * 1000, 3), "steady_ms": round((t2 - t1) * 1000, 3),
            "providers": session.get_providers()}


# --------------------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------------------
def check(request: dict[str, Any]) -> dict[str, Any]:
    model = request["model"]
    device_id = int(request.get("device_id", 0))
    cuda_options: dict[str, str] = {"device_id": str(device_id), **request.get("provider_options", {})}
    out: dict[str, Any] = {"model": model, "stage": "preload"}
    skipped = {"attempted": False, "ok": None}
    out["preload"] = _preload(request.get("matrix")) if request.get("preload", True) else skipped

    out["stage"] = "import"
    t0 = time.perf_counter()
    try:
        import onnxruntime as ort
    except BaseException as exc:
        out["error"] = _error_text(exc)
        return out
    out["ort_version"] = getattr(ort, "__version__", None)
    out["ort_file"] = getattr(ort, "__file__", None)
    out["available_providers"] = list(ort.get_available_providers())
    out["import_ms"] = round((time.perf_counter() - t0) * 1000, 3)

    out["stage"] = "session"
    record = can_record(ort)
    providers = [(CUDA_EP, cuda_options), CPU_EP]
    session = None
    t0 = time.perf_counter()
    with capture_fd2() as log_box:
        try:
            session = ort.InferenceSession(model, _session_options(ort, verbose=True, record=record),
                                           providers=providers)
        except BaseException as exc:
            out["error"] = _error_text(exc)
    log = log_box[0] if log_box else ""
    out["session_ms"] = round((time.perf_counter() - t0) * 1000, 3)
    out["log_lines"] = important_lines(log)
    # the last records that are not VERBOSE chatter (graph transformers): where a failure shows
    out["log_tail"] = [_ANSI.sub("", x) for x in log.splitlines() if "[V:onnxruntime" not in x][-12:]
    if session is None:
        return out

    out["providers"] = list(session.get_providers())
    out["cuda_ep_active"] = CUDA_EP in out["providers"]
    out["assignment_source"] = [SOURCE_API] if record else []
    out["assignment"] = assignment(session) if record else None
    out["placements"] = parse_placements(log)
    if out["placements"] is not None:
        out["assignment_source"].append(SOURCE_LOG)
    out["memcpy_added"] = parse_memcpy_added(log)

    if request.get("cuda_graph") and out["cuda_ep_active"]:
        out["stage"] = "cuda-graph"
        out["cuda_graph"] = _try_cuda_graph(ort, model, cuda_options)

    shapes = request.get("input_shapes") or {}
    if shapes:
        out["stage"] = "run"
        out["run"] = _run_side_by_side(ort, session, model, shapes, out["cuda_ep_active"])
    out["stage"] = "done"
    return out


def _try_cuda_graph(ort: Any, model: str, cuda_options: dict[str, str]) -> dict[str, Any]:
    """Create a session with ``enable_cuda_graph=1``: ORT refuses it at creation when the graph cannot be
    captured (nodes off the CUDA EP, control flow), and its message is the evidence."""
    options = {**cuda_options, "enable_cuda_graph": "1"}
    with capture_fd2():
        try:
            ort.InferenceSession(model, _session_options(ort, verbose=False, record=False),
                                 providers=[(CUDA_EP, options), CPU_EP])
        except Exception as exc:
            return {"tried": True, "ok": False, "error": _error_text(exc)}
    return {"tried": True, "ok": True, "error": None}


def _run_side_by_side(ort: Any, session: Any, model: str, shapes: dict[str, list[int]],
                      cuda_active: bool) -> dict[str, Any]:
    feeds, problems = _random_inputs(session, shapes)
    result: dict[str, Any] = {"problems": problems, "inputs": {k: list(v.shape) for k, v in feeds.items()}}
    if problems:
        return result
    if cuda_active:
        result["cuda"] = _timed_runs(session, feeds)
    else:
        result["cuda"] = {"ok": False, "error": "the CUDA EP was not created, so there is no GPU run"}
    with capture_fd2():
        try:
            cpu = ort.InferenceSession(model, _session_options(ort, verbose=False, record=False),
                                       providers=[CPU_EP])
        except Exception as exc:
            result["cpu"] = {"ok": False, "error": _error_text(exc)}
            return result
    result["cpu"] = _timed_runs(cpu, feeds)
    return result


def main() -> int:
    try:
        request = json.loads(sys.stdin.read() or "{}")
        result = check(request)
    except BaseException as exc:  # the parent must always get an answer it can read
        result = {"error": _error_text(exc), "stage": "child", "traceback": traceback.format_exc()[-4000:]}
    sys.stdout.write(RESULT_MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
