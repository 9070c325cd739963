"""The child side of ``ortdoctor check --model``: load the user's model on the CUDA EP, ask ORT where it
ran, and prove it runs (:mod:`.proof`: valid inputs, the CPU EP's outputs as the reference).

Run as ``python -m ortdoctor.prove.model_check.child`` in a spawned process (the parent never imports
onnxruntime). The request is one JSON object on stdin; the answer is one line on stdout that starts with
:data:`RESULT_MARKER`, so whatever native code prints around it cannot corrupt it. Before the test run
the child writes the answer so far (``"partial": true``) and then one :data:`STAGE_MARKER` line per step:
if the run hangs or crashes the process, the parent still has the placement and knows which step died.

The request's ``ep`` is the execution provider under test (default the CUDA EP); with
``CPUExecutionProvider`` the same code runs end to end on a machine without a GPU (the tests do that).

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
from collections.abc import Callable, Iterator
from typing import Any

from ortdoctor.core.ep_names import CPU_EP, CUDA_EP
from ortdoctor.formats.ortlog import ANSI as _ANSI
from ortdoctor.prove.model_check.proof import run_proof, start_reference
from ortdoctor.prove.ort_placement import (
    SOURCE_API,
    SOURCE_LOG,
    assignment,
    can_record,
    enable_recording,
    parse_placements,
)

RESULT_MARKER = "ORTDOCTOR-MODEL-CHECK-RESULT "
STAGE_MARKER = "ORTDOCTOR-MODEL-CHECK-STAGE "

_MEMCPY_ADDED = re.compile(r"Add (Memcpy(?:To|From)Host) (before|after) (.+?) for (\w+)")
_SEVERITY = re.compile(r"\[([EWF]):onnxruntime")
# fallback_cpu_capability.cc (GetCpuPreferredNodes), INFO: the small computations feeding the CPU-side
# inputs of the EP's kernels (shapes, axes) that ORT keeps on the CPU on purpose
_CPU_PREFERRED = re.compile(r"Force fallback to CPU execution for node: (.+?) because the CPU execution path is deemed faster")

# --------------------------------------------------------------------------------------------------
# Log parsing (pure: the tests feed it real captured logs)
# --------------------------------------------------------------------------------------------------
def parse_memcpy_added(log: str) -> list[dict[str, str]]:
    """``transformer_memcpy`` INFO lines: which copies ORT inserted, next to which tensor, for which EP."""
    out = []
    for m in _MEMCPY_ADDED.finditer(_ANSI.sub("", log)):
        out.append({"op_type": m.group(1), "where": m.group(2), "tensor": m.group(3), "provider": m.group(4)})
    return out


def parse_cpu_preferred(log: str) -> list[str]:
    """The nodes ORT's own heuristic keeps on the CPU (``GetCpuPreferredNodes``), in log order."""
    return list(dict.fromkeys(m.group(1) for m in _CPU_PREFERRED.finditer(_ANSI.sub("", log))))


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


# --------------------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------------------
def _emit(answer: dict[str, Any]) -> None:
    sys.stdout.write(RESULT_MARKER + json.dumps(answer) + "\n")
    sys.stdout.flush()


def _stage(stage: str) -> None:
    sys.stdout.write(STAGE_MARKER + stage + "\n")
    sys.stdout.flush()


def check(request: dict[str, Any], emit: Callable[[dict[str, Any]], None] | None = None,
          stage: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """The whole check; ``emit`` receives the answer so far before the test run, ``stage`` each step of it."""
    model = request["model"]
    ep = str(request.get("ep") or CUDA_EP)
    device_id = int(request.get("device_id", 0))
    ep_options: dict[str, str] = dict(request.get("provider_options", {}))
    if ep == CUDA_EP:
        ep_options = {"device_id": str(device_id), **ep_options}
    out: dict[str, Any] = {"model": model, "stage": "preload", "ep": ep}
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

    # The CPU reference needs nothing from the session under test: where the parent found host memory
    # for both, it loads and runs in a thread while that session is created (onnxruntime frees the GIL).
    reference = start_reference(ort, request) if request.get("run", True) and request.get("concurrent_reference") \
        else None
    out["stage"] = "session"
    record = can_record(ort)
    providers: list[Any] = [(ep, ep_options), CPU_EP] if ep != CPU_EP else [(CPU_EP, ep_options)]
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
        if reference is not None:
            reference()  # let the thread finish: the process must not exit under a loading session
        return out

    out["providers"] = list(session.get_providers())
    out["ep_active"] = ep in out["providers"]
    out["cuda_ep_active"] = CUDA_EP in out["providers"]
    out["ep_options"] = _provider_options(session, ep)
    out["assignment_source"] = [SOURCE_API] if record else []
    out["assignment"] = assignment(session) if record else None
    out["placements"] = parse_placements(log)
    if out["placements"] is not None:
        out["assignment_source"].append(SOURCE_LOG)
    out["memcpy_added"] = parse_memcpy_added(log)
    out["cpu_preferred"] = parse_cpu_preferred(log)

    if request.get("cuda_graph") and out["cuda_ep_active"]:
        out["stage"] = "cuda-graph"
        out["cuda_graph"] = _try_cuda_graph(ort, model, ep_options)

    if request.get("run", True):
        out["stage"] = "run"
        if emit is not None:
            emit({**out, "partial": True})
        tf32 = _tf32(out["ep_options"]) if ep == CUDA_EP else False
        out["run"] = run_proof(ort, session, request, ep=ep, ep_active=out["ep_active"], tf32=tf32,
                               progress=stage, reference=reference, providers=providers)
    out["stage"] = "done"
    return out


def _provider_options(session: Any, ep: str) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in (session.get_provider_options().get(ep) or {}).items()}
    except Exception:  # older releases without get_provider_options
        return {}


def _tf32(options: dict[str, str]) -> bool | None:
    value = options.get("use_tf32")
    return None if value is None else value not in ("0", "false", "False")


def _try_cuda_graph(ort: Any, model: str, cuda_options: dict[str, Any]) -> dict[str, Any]:
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


def main() -> int:
    try:
        request = json.loads(sys.stdin.read() or "{}")
        result = check(request, emit=_emit, stage=_stage)
    except BaseException as exc:  # the parent must always get an answer it can read
        result = {"error": _error_text(exc), "stage": "child", "traceback": traceback.format_exc()[-4000:]}
    _emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
