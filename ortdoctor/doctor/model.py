"""``ortdoctor check --model PATH``: where each node of the user's model runs, why not on the GPU, and
proof that it runs there.

The parent reads the file with a small protobuf reader (:mod:`ortdoctor.prove.model_check.inspect`):
opsets, inputs and their dynamic dimensions, op types, weights, external data and the shape-only
nodes. From the graph it proposes valid inputs (:func:`~ortdoctor.prove.model_check.shape_subgraph.propose_inputs`,
or the user's ``--input`` files), TensorRT profiles (:mod:`~ortdoctor.prove.model_check.trt_profile`) and
what an IO-binding client must place on the device. If the file is usable, a spawned child
(:mod:`ortdoctor.prove.model_check.child`) loads it on the CUDA EP with the CPU EP beside it, reads the
per-node placement from onnxruntime itself, and runs the inputs on the CPU EP and then the CUDA EP,
comparing every output (:mod:`~ortdoctor.prove.model_check.proof`). :mod:`ortdoctor.diagnose.model`
turns all of it into findings.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ortdoctor.core.ep_names import CPU_EP, CUDA_EP
from ortdoctor.core.facts import DriverInfo, Finding
from ortdoctor.core.severity import severity_rank
from ortdoctor.diagnose import model as mf
from ortdoctor.prove.model_check.budget import BOUNDED_SEQUENCE, available_host_memory, plan_comparison
from ortdoctor.prove.model_check.compare import QUANTIZED, output_op_classes
from ortdoctor.prove.model_check.given_inputs import headers, parse_input_files
from ortdoctor.prove.model_check.inspect import ModelInspection, inspect_model, normalise_input_shapes
from ortdoctor.prove.model_check.model_part import PrefixCut
from ortdoctor.prove.model_check.placement import summarise_placement
from ortdoctor.prove.model_check.runner import ChildOutcome, run_child
from ortdoctor.prove.model_check.shape_limits import position_limits, shape_problems
from ortdoctor.prove.model_check.shape_subgraph import Defaults, SyntheticPlan, propose_inputs
from ortdoctor.prove.model_check.trt_profile import advise
from ortdoctor.report.model import ModelReport

__all__ = ["check_model"]


def check_model(
    path: str | os.PathLike[str],
    *,
    input_shapes: Mapping[str, Iterable[int]] | Iterable[str] | None = None,
    input_files: Mapping[str, str] | Iterable[str] | None = None,
    device_id: int = 0,
    cuda_graph: bool = False,
    iobinding: bool = False,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
    driver: DriverInfo | None = None,
    provider_options: Mapping[str, str] | None = None,
    python: str | None = None,
    import_path: Sequence[str] | None = None,
    ep: str = CUDA_EP,
    environment_errors: Sequence[str] = (),
    compare_limit: int | None = None,
    host_memory: int | None = None,
    concurrent_reference: bool | None = None,
) -> ModelReport:
    """Inspect ``path`` and, when it is usable, place and run it on the CUDA EP in a child; never raises for
    a bad model.

    ``input_shapes`` is ``{name: (1, 3, 224, 224)}`` or the raw ``name=1x3x224x224`` strings, ``input_files``
    ``{name: "ids.npy"}`` or ``name=ids.npy`` strings (a bad one of either raises ``ValueError``: a usage
    error, exit code 2); every other input gets valid synthetic values. ``iobinding`` runs the model the
    way Optimum and other clients do on CUDA (inputs bound as device OrtValues). ``env`` is the child's
    environment (default: this process's), ``driver`` the NVML facts used for the memory check,
    ``python`` the child's interpreter. ``ep`` is the execution provider under test:
    ``CPUExecutionProvider`` runs the whole check, proof included, without a GPU. ``environment_errors``
    are the ids of the environment's error findings: when the CUDA EP is missing for their reason, the model
    part says so once, as a note, instead of repeating the cause as another error.

    ``compare_limit`` (bytes) is the model size above which the comparison is bounded to the model's first
    blocks, or where it has none to cut, to a one-token run (default: a quarter of the free host memory,
    ``host_memory`` or ``/proc/meminfo``'s, at most 2 GiB; :mod:`~ortdoctor.prove.model_check.budget`).
    ``concurrent_reference`` forces whether the CPU reference loads beside the session under test (None:
    where host memory holds both and the EP under test is a device's).

    A shape set the model cannot run (``--input-shape input_ids=2x128`` against a 64-row position table)
    is refused before anything starts: the report's ``refused`` names the limit, its exit code is 2.
    """
    shapes = normalise_input_shapes(input_shapes)
    files = parse_input_files(input_files)
    abspath = str(Path(path).expanduser().absolute())
    ins = inspect_model(abspath)
    found: list[Finding] = mf.inspection_findings(ins)
    if found:  # the file is unusable: no session can tell more
        return ModelReport(path=abspath, inspection=ins, findings=tuple(found), ep=ep)
    found += mf.structure_findings(ins, cuda_graph=cuda_graph)
    found += mf.memory_findings(ins, driver, device_id)

    compare = plan_comparison(ins.total_bytes, available_host_memory() if host_memory is None else host_memory,
                              limit=compare_limit, shapes_given=bool(shapes or files), on_device=ep != CPU_EP,
                              concurrent=concurrent_reference, graph=ins.graph)
    one_token = compare.bounded and compare.part is None  # no part to cut: the run is bounded to one token
    plan, problems, refused = _plan(ins, shapes, files, bounded=one_token)
    # the TensorRT profile is advised around the usual shapes, not the one-token run of a bounded check
    served = _plan(ins, shapes, files)[0] if one_token else plan
    not_run = {"problems": problems} if problems else None  # stays the run's record whatever the child does
    static: dict[str, Any] = {
        "ep": ep, "test_inputs": _test_inputs(plan, files),
        # advice only for shapes that can run (every shape set is checked against the model's limits)
        "trt": advise(ins.graph, served, abspath, env) if ins.graph is not None and served and not problems else None,
        "client": _client(ins, plan, device_id, iobinding) if ep != CPU_EP else None,
        "comparison": compare.to_json()}
    if refused:  # an --input-shape / --input the model cannot run: a usage error, nothing is started
        found.append(mf.refused_shapes_finding(refused, shapes, files))
        return ModelReport(path=abspath, inspection=ins, findings=tuple(_ordered(found)), run=not_run,
                           refused=tuple(refused), **{**static, "client": None})
    request = {"model": abspath, "device_id": device_id, "cuda_graph": cuda_graph, "ep": ep,
               "provider_options": {str(k): str(v) for k, v in (provider_options or {}).items()},
               "run": not problems, "plan": plan.to_json() if plan is not None else None,
               "input_files": files, "iobinding": iobinding, "compute_types": _compute_types(ins),
               "concurrent_reference": compare.concurrent,
               "part": {"nodes": compare.part.nodes, "outputs": list(compare.part.outputs)}
               if compare.part is not None else None,
               "op_classes": _op_classes(ins, compare.part)}
    outcome = run_child(request, timeout=timeout, env=env, python=python, import_path=import_path)
    child = outcome.result
    if child is None or child.get("stage") == "child":
        failure = _describe_failure(outcome, timeout)
        found.append(mf.make_finding("model-check-failed", failure))
        found += mf.run_findings(not_run)
        return ModelReport(path=abspath, inspection=ins, findings=tuple(found), ran=True, child_failure=failure,
                           run=not_run, **static)

    base: dict[str, Any] = {
        "path": abspath, "inspection": ins, "ran": True, "ort_version": child.get("ort_version"),
        "preload": child.get("preload"), "log_lines": tuple(child.get("log_lines") or ()), **static,
    }
    if child.get("stage") == "import":
        failure = f"the child could not import onnxruntime: {child.get('error')}"
        found.append(mf.make_finding("model-check-failed", failure,
                           fix="Install onnxruntime-gpu in this Python (ortdoctor check shows what is there)."))
        return ModelReport(**base, findings=tuple(found + mf.run_findings(not_run)), child_failure=failure,
                           error=child.get("error"), run=not_run)
    if "providers" not in child:
        error = str(child.get("error") or "unknown error")
        found = mf.session_error_findings(error, ins, child.get("ort_version")) + found
        return ModelReport(**base, findings=tuple(found), error=error, run=not_run)

    placement = summarise_placement(child, ins)
    if placement is not None:
        found = mf.placement_findings(placement, child, ins, cuda_graph=cuda_graph,
                                      environment_errors=environment_errors) + found
    if ep != CPU_EP and not child.get("cuda_ep_active"):
        base["client"] = None  # how to bind inputs on a device no session got says nothing
    run = not_run or child.get("run")
    incomplete = _incomplete(outcome, timeout) if child.get("partial") else None
    found += mf.run_findings(run, ep=ep, given=files, incomplete=incomplete, stage=outcome.stage)
    return ModelReport(
        **base,
        findings=tuple(_ordered(found)),
        providers=tuple(child.get("providers") or ()),
        cuda_ep_active=bool(child.get("cuda_ep_active")),
        placement=placement,
        run=run,
        cuda_graph=child.get("cuda_graph"),
        ep_options=dict(child.get("ep_options") or {}),
    )


def _plan(ins: ModelInspection, shapes: Mapping[str, tuple[int, ...]], files: Mapping[str, str], *,
          bounded: bool = False) -> tuple[SyntheticPlan | None, list[str], list[str]]:
    """The inputs to run with: the files' shapes and the given shapes bind the model's symbols. Returns
    the plan, why it cannot run, and, of those reasons, the ones the given shapes cause (a usage error)."""
    if ins.graph is None:
        return None, ["the model's graph could not be read"], []
    names = {i.name for i in ins.graph.inputs}
    inputs = ", ".join(i.name for i in ins.graph.inputs) or "none"
    problems = [f"--input-shape names {n!r}, which is not an input of the model (its inputs: {inputs})"
                for n in sorted(set(shapes) - names)]
    problems += [f"--input names {n!r}, which is not an input of the model (its inputs: {inputs})"
                 for n in sorted(set(files) - names)]
    given = {**shapes, **{n: h.shape for n, h in headers(files).items() if n in names}}
    defaults = Defaults(sequence=BOUNDED_SEQUENCE) if bounded and not given else Defaults()
    plan = propose_inputs(ins.graph, shapes=given, defaults=defaults)
    problems += list(plan.problems)
    limits = position_limits(ins.graph)
    impossible = shape_problems(ins.graph, {i.name: i.shape for i in plan.inputs}, limits)
    if impossible and not given:  # the default sequence is longer than the model's position table
        fitting = min(lim.rows for lim in limits) // 2 if limits else 0
        if fitting >= 1:
            plan = propose_inputs(ins.graph, defaults=Defaults(sequence=min(defaults.sequence, fitting)))
            impossible = shape_problems(ins.graph, {i.name: i.shape for i in plan.inputs}, limits)
    return plan, problems + impossible, impossible if given else []


def _test_inputs(plan: SyntheticPlan | None, files: Mapping[str, str]) -> dict[str, Any] | None:
    if plan is None:
        return None
    items = []
    for item in plan.inputs:
        record = item.to_json()
        record["source"] = files.get(item.name, "synthetic")
        items.append(record)
    return {"inputs": items, "dims": dict(plan.dims), "problems": list(plan.problems)}


def _op_classes(ins: ModelInspection, part: PrefixCut | None) -> dict[str, dict[str, Any]]:
    """What each compared output is computed through (the tolerance's op class)."""
    if ins.graph is None:
        return {}
    if part is not None:
        return output_op_classes(ins.graph, part.outputs, part.nodes)
    return output_op_classes(ins.graph, [o.name for o in ins.graph.outputs])


def _compute_types(ins: ModelInspection) -> list[str]:
    """The arithmetic the model computes in, for the comparison's bounds: its float inputs' and
    initializers' types (a float16 model's float32 output still carries float16 error), and ``int8``
    when it quantizes."""
    graph = ins.graph
    if graph is None:
        return []
    types = {i.dtype for i in graph.inputs} | {t.dtype for t in graph.initializers.values()}
    out = sorted(t for t in types if t in ("float16", "bfloat16", "float32", "float64"))
    if ins.quantized_ops or "QuantizeLinear" in ins.op_types:
        out.append(QUANTIZED)
    return out


def _client(ins: ModelInspection, plan: SyntheticPlan | None, device_id: int, iobinding: bool) -> dict[str, Any]:
    """What a client that binds with IO binding (Optimum's ORTModel on CUDA does by default) must do."""
    return {
        "device": f"cuda:{device_id}",
        "iobinding_checked": iobinding,
        "input_kind": input_kind(plan),
        "inputs_on_device": [{"name": i.name, "dtype": i.dtype,
                              "shape": list(i.shape) if i.shape is not None else None} for i in ins.inputs],
    }


def _describe_failure(outcome: ChildOutcome, timeout: float) -> str:
    tail = (outcome.stderr_tail or outcome.stdout_tail).strip().splitlines()[-5:]
    last = (" Last output: " + " | ".join(tail)) if tail else ""
    if outcome.timed_out:
        return f"Loading the model did not finish within {timeout:g} s; the child was stopped.{last}"
    if outcome.signal:
        return f"The child loading the model died of {outcome.signal}.{last}"
    if outcome.result is not None:  # the child caught an error of its own
        return f"The child failed: {outcome.result.get('error')}"
    return f"The child exited with code {outcome.returncode} and gave no answer.{last}"


def _incomplete(outcome: ChildOutcome, timeout: float) -> str:
    """Why a child that had placed the model gave no final answer (its test run hung or crashed)."""
    tail = (outcome.stderr_tail or "").strip().splitlines()[-5:]
    last = (" Last output: " + " | ".join(tail)) if tail else ""
    if outcome.timed_out:
        return f"it took longer than the {timeout:g} s timeout and was stopped (give more with --timeout).{last}"
    if outcome.signal:
        return f"the process died of {outcome.signal}.{last}"
    return f"the process exited with code {outcome.returncode}.{last}"


_TEXT_KINDS = frozenset({"token_ids", "token_type_ids", "position_ids", "attention_mask", "past_key_values"})


def input_kind(plan: SyntheticPlan | None) -> str:
    """What feeds the model, from its inputs' names, types and ranks (:func:`propose_inputs` decided each
    input's kind): ``text`` (token ids), ``image`` (a float input of rank 4), ``audio`` or ``tensor``."""
    kinds = {i.kind for i in plan.inputs} if plan is not None else set()
    if "token_ids" in kinds:
        return "text"
    for kind in ("image", "audio"):
        if kind in kinds:
            return kind
    return "text" if kinds and kinds <= _TEXT_KINDS else "tensor"


def _ordered(found: list[Finding]) -> list[Finding]:
    return sorted(found, key=lambda f: severity_rank(f.severity))
