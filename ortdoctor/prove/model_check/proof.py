"""The child's proof that the model runs on the execution provider under test: valid inputs, the CPU EP's
outputs as the reference, the EP's outputs compared with them, both timed.

The order is what makes a run evidence:

1. **The inputs.** Synthetic ones from the parent's plan (:func:`~.shape_subgraph.propose_inputs`,
   made here by :func:`~.synthetic_feeds.materialise`), or the user's ``.npy`` files.
2. **The CPU EP first.** Its session loads beside the session under test when the parent allows it
   (host memory for both: :func:`start_reference`), and the EP under test runs only after it. It checks
   what the CUDA EP does not: an index outside an embedding table makes
   the CPU EP fail ("indices element out of data bounds") while CUDA kernels read past the table and
   return something. So when the CPU EP rejects the inputs, the EP under test is not run at all and
   nothing counts as a success.
3. **The EP under test**, the way a client runs it: ``session.run`` with numpy arrays, or with IO binding
   (inputs placed on the device as ``OrtValue``s and bound with ``bind_ortvalue_input``, outputs bound on
   the device), as Optimum's ORTModel and other onnxruntime clients do on CUDA.
4. **The comparison** of every output (:mod:`.compare`) and the speed-up of steady runs.

Above the parent's size limit the request carries a ``part`` (:mod:`.model_part`): the model's first
blocks. The CPU EP's reference is then that part only, the whole model still runs (timed) on the EP under
test, and a session of the EP under test on the same part gives the outputs that are compared.

Runs in the child only (numpy and onnxruntime are imported by the caller and passed in).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ortdoctor.core.ep_names import CPU_EP, CUDA_EP
from ortdoctor.prove.model_check.compare import compare_outputs, summarise
from ortdoctor.prove.model_check.model_part import EXTERNAL_FOLDER_KEY, prefix_model_bytes
from ortdoctor.prove.model_check.synthetic_feeds import materialise
from ortdoctor.prove.model_check.upcast import upcast_bfloat16

#: onnxruntime type strings -> numpy dtype names
NUMPY_TYPES = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
    "tensor(uint64)": "uint64", "tensor(uint32)": "uint32", "tensor(uint16)": "uint16",
    "tensor(uint8)": "uint8", "tensor(bool)": "bool",
}

#: Steady runs: at most this many, within this many seconds (the first run is timed apart), and within
#: STEADY_FACTOR times the first run (at least STEADY_FLOOR_S): a speed-up figure needs a few runs, not
#: seconds of a large model's CPU time.
MAX_RUNS = 10
TIME_BUDGET_S = 2.0
STEADY_FACTOR = 3.0
STEADY_FLOOR_S = 0.2


@contextlib.contextmanager
def _quiet_fd2() -> Iterator[None]:
    """Keep onnxruntime's own warnings of a second session out of the child's stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def build_feeds(session: Any, plan: Mapping[str, Any] | None, files: Mapping[str, str],
                seed: int = 0) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """``(feeds, described, problems)``: the arrays to run with, what each is, and what went wrong."""
    import numpy as np

    problems: list[str] = []
    wanted = {i.name: i for i in session.get_inputs()}
    planned = [dict(i) for i in (plan or {}).get("inputs", ()) if i["name"] not in files]
    try:
        feeds = materialise({"inputs": planned}, seed=seed)
    except ValueError as exc:
        return {}, {}, [str(exc)]
    described = {name: {"shape": list(a.shape), "dtype": str(a.dtype), "source": "synthetic"}
                 for name, a in feeds.items()}
    for name, path in files.items():
        try:
            array = np.load(path, allow_pickle=False)
        except Exception as exc:
            problems.append(f"--input {name}={path}: {_error_text(exc)}")
            continue
        want = NUMPY_TYPES.get(wanted[name].type) if name in wanted else None
        if want is not None and str(array.dtype) != want:
            problems.append(f"--input {name}={path}: the file holds {array.dtype}, the model's input is {want} "
                            f"(convert it with array.astype('{want}'))")
            continue
        feeds[name] = array
        described[name] = {"shape": list(array.shape), "dtype": str(array.dtype), "source": path}
    missing = [n for n in wanted if n not in feeds]
    if missing and not problems:
        problems.append("no value for input(s) " + ", ".join(missing))
    return feeds, described, problems


def timed(run: Callable[[], Any]) -> dict[str, Any]:
    """Run once (timed apart: it includes kernel selection and allocations), then steady runs: up to
    :data:`MAX_RUNS` within :data:`TIME_BUDGET_S` and within :data:`STEADY_FACTOR` times the first run
    (a fast model gets its ten runs, a slow one two or three), none when the first run alone took longer
    than the budget (a large model on the CPU), and then the first run's time stands for the steady one
    (``runs`` 0)."""
    try:
        t0 = time.perf_counter()
        outputs = run()
        first = time.perf_counter() - t0
        steady: list[float] = []
        budget = min(TIME_BUDGET_S, max(STEADY_FACTOR * first, STEADY_FLOOR_S))
        start = time.perf_counter()
        while len(steady) < MAX_RUNS and first < TIME_BUDGET_S and time.perf_counter() - start < budget:
            t = time.perf_counter()
            run()
            steady.append(time.perf_counter() - t)
    except Exception as exc:
        return {"ok": False, "error": _error_text(exc)}
    typical = statistics.median(steady) if steady else first
    return {"ok": True, "first_ms": round(first * 1000, 3), "steady_ms": round(typical * 1000, 4),
            "runs": len(steady), "outputs": outputs}


def _plain(session: Any, feeds: Mapping[str, Any], run_options: Any) -> Callable[[], Any]:
    return lambda: session.run(None, dict(feeds), run_options)


class _Bound:
    """IO binding the way clients do it: inputs copied to the device once, outputs left there."""

    def __init__(self, ort: Any, session: Any, feeds: Mapping[str, Any], device: str, device_id: int,
                 run_options: Any) -> None:
        self.session = session
        self.run_options = run_options
        self.binding = session.io_binding()
        # the OrtValues must outlive the binding: it keeps only their addresses
        self.values = {name: ort.OrtValue.ortvalue_from_numpy(array, device, device_id) for name, array in feeds.items()}
        for name, value in self.values.items():
            self.binding.bind_ortvalue_input(name, value)
        for out in session.get_outputs():
            self.binding.bind_output(out.name, device, device_id)

    def __call__(self) -> None:
        self.session.run_with_iobinding(self.binding, self.run_options)

    def outputs(self) -> list[Any]:
        return list(self.binding.copy_outputs_to_cpu())


def reference_run(ort: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    """The CPU EP's side of the proof, on its own session: the feeds (built from the reference session's
    inputs) and the CPU EP's timed run. Needs nothing from the session under test, so the child can run it
    in a thread while that session is being created (:func:`start_reference`)."""
    files = {str(k): str(v) for k, v in (request.get("input_files") or {}).items()}
    out: dict[str, Any] = {"cpu": {"provider": CPU_EP}}
    part = request.get("part")
    t0 = time.perf_counter()
    try:
        if part:
            out["part_model"] = prefix_model_bytes(request["model"], int(part["nodes"]), list(part["outputs"]))
            reference = part_session(ort, out["part_model"], request["model"], [CPU_EP])
        else:
            reference = ort.InferenceSession(request["model"], _quiet_options(ort), providers=[CPU_EP])
    except Exception as exc:
        reference = _upcast_reference(ort, request, out, exc)
        if reference is None:
            out["cpu"].update(ok=False, error=_error_text(exc), session_failed=True)
            if part:
                out["cpu"]["part_failed"] = True
            return out
    out["cpu"]["session_ms"] = round((time.perf_counter() - t0) * 1000, 3)
    feeds, described, problems = build_feeds(reference, request.get("plan"), files)
    out.update(feeds=feeds, inputs=described, problems=problems)
    if problems:
        return out
    ref = timed(_plain(reference, _for(reference, feeds), None))
    out["want"] = ref.pop("outputs", None)
    out["cpu"].update(ref)
    return out


def _upcast_reference(ort: Any, request: Mapping[str, Any], out: dict[str, Any], exc: BaseException) -> Any:
    """The CPU EP's session on a float32 copy of a bfloat16 model (or part) that the CPU EP refused
    (:mod:`.upcast`), with the reason recorded in ``out["cpu"]["upcast"]``; None when the model computes in
    no bfloat16 or the copy fails too."""
    if "bfloat16" not in (request.get("compute_types") or ()):
        return None
    try:
        data = out.get("part_model")
        if data is None:
            with open(request["model"], "rb") as fh:
                data = fh.read()
        copy, tensors = upcast_bfloat16(data)
        if not tensors:
            return None
        session = part_session(ort, copy, request["model"], [CPU_EP])
    except Exception:
        return None
    out["cpu"]["upcast"] = {"from": "bfloat16", "to": "float32", "tensors": tensors,
                            "why": _error_text(exc).splitlines()[0][:300]}
    return session


def part_session(ort: Any, model: bytes, path: str, providers: list[Any]) -> Any:
    """A session on the part's bytes; its external data is read from the model's own directory."""
    options = _quiet_options(ort)
    options.add_session_config_entry(EXTERNAL_FOLDER_KEY, os.path.dirname(os.path.abspath(path)))
    return ort.InferenceSession(model, options, providers=providers)


def _for(session: Any, feeds: Mapping[str, Any]) -> dict[str, Any]:
    """The feeds a session takes (a part of the model reads only some of the model's inputs)."""
    names = {i.name for i in session.get_inputs()}
    return {k: v for k, v in feeds.items() if k in names}


def start_reference(ort: Any, request: Mapping[str, Any]) -> Callable[[], dict[str, Any]]:
    """Start :func:`reference_run` in a thread; the returned function waits for its record. onnxruntime
    releases the GIL while it loads and runs a session, so the CPU reference and the session under test
    load at the same time (the parent asks for it only where host memory holds both)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["record"] = reference_run(ort, request)
        except BaseException as exc:  # the proof reports it; the thread must not die silently
            box["record"] = {"cpu": {"provider": CPU_EP, "ok": False, "error": _error_text(exc),
                                     "session_failed": True}}

    thread = threading.Thread(target=work, name="ortdoctor-cpu-reference", daemon=True)
    thread.start()

    def wait() -> dict[str, Any]:
        thread.join()
        return dict(box["record"])

    return wait


def run_proof(ort: Any, session: Any, request: Mapping[str, Any], *, ep: str, ep_active: bool,
              tf32: bool | None, progress: Callable[[str], None] = lambda stage: None,
              reference: Callable[[], dict[str, Any]] | None = None,
              providers: list[Any] | None = None) -> dict[str, Any]:
    """The proof's record (see the module docstring); never raises for onnxruntime's errors. ``reference``
    waits for the CPU EP's record when it was started beside the session (:func:`start_reference`);
    without it the CPU EP runs here, first. ``providers`` are the session under test's, for its session on
    the request's ``part``."""
    files = {str(k): str(v) for k, v in (request.get("input_files") or {}).items()}
    iobinding = bool(request.get("iobinding"))
    device_id = int(request.get("device_id", 0))
    device = "cuda" if ep == CUDA_EP else "cpu"
    result: dict[str, Any] = {"ep": {"provider": ep}, "cpu": {"provider": CPU_EP}, "inputs_valid": None,
                              "agree": None, "speedup": None, "outputs": [],
                              "iobinding": {"used": iobinding, "device": f"{device}:{device_id}"},
                              "reference_concurrent": reference is not None}
    progress("cpu")
    if reference is not None:
        ref = reference()
    else:
        with _quiet_fd2():
            ref = reference_run(ort, request)
    result["cpu"] = ref["cpu"]
    part = request.get("part")
    if part:
        result["part"] = {"nodes": part["nodes"], "outputs": list(part["outputs"])}
    if "feeds" in ref:
        feeds, described, problems = ref["feeds"], ref["inputs"], ref["problems"]
    else:  # no CPU EP session: the inputs are made from the session under test's
        feeds, described, problems = build_feeds(session, request.get("plan"), files)
    result["inputs"] = described
    result["problems"] = problems
    if problems:
        return result
    want = ref.get("want")
    if not ref["cpu"].get("session_failed"):
        if not ref["cpu"].get("ok"):
            # the CPU EP checks indices and shapes; what it rejects proves nothing on any EP
            result["inputs_valid"] = False
            result["ep"].update(ok=False, skipped="the CPU EP rejected these inputs, so a run on the EP under "
                                "test would prove nothing")
            return result
        result["inputs_valid"] = True
    if not ep_active:
        result["ep"].update(ok=False, skipped=f"the {ep} was not created, so there is no run on it")
        return result
    run_options = ort.RunOptions()
    run_options.log_severity_level = 3  # the session under test logs VERBOSE; its runs need not

    progress("ep")
    try:
        bound = _Bound(ort, session, feeds, device, device_id, run_options) if iobinding else None
    except Exception as exc:
        result["ep"].update(ok=False, error=f"binding the inputs on {device}:{device_id} failed: {_error_text(exc)}")
        return result
    got_run = timed(bound if bound is not None else _plain(session, feeds, run_options))
    got = got_run.pop("outputs", None)
    result["ep"].update(got_run)
    if not got_run["ok"]:
        return result
    if bound is not None:
        try:
            got = bound.outputs()
        except Exception as exc:
            result["ep"].update(ok=False, error=f"copying the outputs back failed: {_error_text(exc)}")
            return result
    compared_on = session
    if want is not None and part:
        # the whole model ran on the EP under test; the comparison is on the part both EPs run
        progress("ep-part")
        try:
            compared_on = part_session(ort, ref["part_model"], request["model"], providers or [ep])
        except Exception as exc:
            result["part"].update(ok=False, error=f"the part's session on the {ep} failed: {_error_text(exc)}")
            return result
        part_run = timed(_plain(compared_on, _for(compared_on, feeds), run_options))
        got = part_run.pop("outputs", None)
        result["part"]["ep"] = part_run
        if not part_run["ok"]:
            return result
    if want is not None:
        names = [o.name for o in compared_on.get_outputs()]
        result["outputs"] = compare_outputs(names, list(got), list(want), ep=ep, tf32=tf32,
                                            compute_types=request.get("compute_types") or (),
                                            got_types=[o.type for o in compared_on.get_outputs()],
                                            upcast=bool(result["cpu"].get("upcast")),
                                            op_classes=request.get("op_classes"))
        result["agree"] = summarise(result["outputs"])
        timing = result["part"]["ep"] if part else result["ep"]  # the speed-up of the same graph
        ep_ms, cpu_ms = timing.get("steady_ms"), result["cpu"].get("steady_ms")
        if ep_ms and cpu_ms:
            result["speedup"] = round(cpu_ms / ep_ms, 3)
    return result


def _quiet_options(ort: Any) -> Any:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return so


__all__ = ["MAX_RUNS", "NUMPY_TYPES", "TIME_BUDGET_S", "build_feeds", "part_session", "reference_run", "run_proof",
           "start_reference", "timed"]
