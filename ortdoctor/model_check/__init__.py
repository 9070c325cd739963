"""``ortdoctor check --model PATH``: where each node of the user's model runs, and why not on the GPU.

Two halves. The parent reads the file's header with a small protobuf reader (:mod:`.inspect`): opsets,
inputs and their dynamic dimensions, op types (subgraphs included), weights and external data. If the
file is usable, a spawned child (:mod:`.child`, through :mod:`.runner`) loads it on the CUDA EP with the
CPU EP beside it and reads the per-node placement from onnxruntime itself. :mod:`.findings` turns both
into findings; :mod:`.render` into text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ortdoctor.exitcodes import FAIL, OK, USAGE
from ortdoctor.facts import DriverInfo, Finding, to_jsonable
from ortdoctor.model_check import findings as mf
from ortdoctor.model_check.inspect import ModelInspection, inspect_model, parse_input_shape
from ortdoctor.model_check.runner import ChildOutcome, run_child


@dataclass(frozen=True)
class ModelReport:
    path: str
    inspection: ModelInspection
    findings: tuple[Finding, ...] = ()
    ran: bool = False  # whether the child was started
    ort_version: str | None = None
    providers: tuple[str, ...] = ()  # the model session's providers, as get_providers() said
    cuda_ep_active: bool = False
    placement: mf.Placement | None = None
    run: dict[str, Any] | None = None  # timings of the random-data run, CUDA and CPU side by side
    cuda_graph: dict[str, Any] | None = None
    preload: dict[str, Any] | None = None
    error: str | None = None  # onnxruntime's error text when the session could not be created
    child_failure: str | None = None  # the child crashed / hung / gave no answer
    log_lines: tuple[str, ...] = ()  # ORT's warnings and errors while creating the session
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def input_error(self) -> bool:
        """The model itself cannot be used as given (unreadable, invalid, truncated, ...)."""
        return any(f.id in mf.INPUT_ERROR_IDS for f in self.findings)

    @property
    def exit_code(self) -> int:
        """2 for an unusable input model, 1 when any finding is an error, else 0."""
        if self.input_error:
            return USAGE
        return FAIL if any(f.severity == "error" for f in self.findings) else OK

    def to_json(self) -> dict[str, Any]:
        """The ``model`` block of ``ortdoctor check --json``."""
        ins = self.inspection
        p = self.placement
        return {
            "path": self.path,
            "ok": not any(f.severity == "error" for f in self.findings),
            "file": {
                "bytes": ins.file_bytes,
                "total_bytes": ins.total_bytes,
                "problem": ins.problem,
                "ir_version": ins.ir_version,
                "producer": ins.producer,
                "opsets": {(d or "ai.onnx"): v for d, v in ins.opsets.items()},
                "inputs": [{"name": i.name, "dtype": i.dtype, "shape": list(i.shape) if i.shape is not None else None,
                            "dynamic": i.is_dynamic} for i in ins.inputs],
                "nodes": ins.node_count,
                "nodes_with_subgraphs": ins.node_count_all,
                "op_types": ins.op_types,
                "control_flow": list(ins.control_flow_nodes),
                "initializers": ins.initializer_count,
                "initializer_bytes": ins.initializer_bytes,
                "external_data": [to_jsonable(r) for r in ins.external_refs],
            },
            "ran": self.ran,
            "ort_version": self.ort_version,
            "providers": list(self.providers),
            "cuda_ep_active": self.cuda_ep_active,
            "placement": None if p is None else {
                "source": list(p.source),
                "nodes_total": p.total,
                "final_graph_nodes": p.final_graph_nodes,
                "nodes_by_provider": p.nodes_by_provider,
                "op_types_by_provider": p.op_types_by_provider,
                "op_types_from": p.op_types_from,
                "cpu_nodes": list(p.cpu_nodes),
                "memcpy_nodes": p.memcpy_nodes,
                "gpu_share": p.gpu_share,
            },
            "run": self.run,
            "cuda_graph": self.cuda_graph,
            "preload": self.preload,
            "error": self.error,
            "child_failure": self.child_failure,
            "findings": [to_jsonable(f) for f in self.findings],
        }


def parse_input_shapes(values: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """The repeated ``--input-shape name=1x3x224x224`` option -> ``{name: shape}``; ``ValueError`` if bad."""
    shapes: dict[str, tuple[int, ...]] = {}
    for text in values:
        name, shape = parse_input_shape(text)
        shapes[name] = shape
    return shapes


def check_model(
    path: str | Path,
    *,
    input_shapes: Mapping[str, Iterable[int]] | Iterable[str] | None = None,
    device_id: int = 0,
    cuda_graph: bool = False,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
    driver: DriverInfo | None = None,
    provider_options: Mapping[str, str] | None = None,
    python: str | None = None,
) -> ModelReport:
    """Inspect ``path`` and, when it is usable, place it on the CUDA EP in a child; never raises for a bad model.

    ``input_shapes`` is ``{name: (1, 3, 224, 224)}`` or the raw ``name=1x3x224x224`` strings (a bad one
    raises ``ValueError``: a usage error, exit code 2). ``env`` is the child's environment (default: this
    process's), ``driver`` the NVML facts used for the memory check, ``python`` the child's interpreter.
    """
    shapes = normalise_input_shapes(input_shapes)
    abspath = str(Path(path).expanduser().absolute())
    ins = inspect_model(abspath)
    found: list[Finding] = mf.inspection_findings(ins)
    if found:  # the file is unusable: no session can tell more
        return ModelReport(path=abspath, inspection=ins, findings=tuple(found))
    found += mf.structure_findings(ins, cuda_graph=cuda_graph)
    found += mf.memory_findings(ins, driver, device_id)

    request = {"model": abspath, "device_id": device_id, "cuda_graph": cuda_graph,
               "input_shapes": {k: list(v) for k, v in shapes.items()},
               "provider_options": {str(k): str(v) for k, v in (provider_options or {}).items()}}
    outcome = run_child(request, timeout=timeout, env=env, python=python)
    child = outcome.result
    if child is None or child.get("stage") == "child":
        failure = _describe_failure(outcome, timeout)
        found.append(mf.make_finding("model-check-failed", failure))
        return ModelReport(path=abspath, inspection=ins, findings=tuple(found), ran=True, child_failure=failure)

    base = {
        "path": abspath, "inspection": ins, "ran": True, "ort_version": child.get("ort_version"),
        "preload": child.get("preload"), "log_lines": tuple(child.get("log_lines") or ()),
    }
    if child.get("stage") == "import":
        failure = f"the child could not import onnxruntime: {child.get('error')}"
        found.append(mf.make_finding("model-check-failed", failure,
                           fix="Install onnxruntime-gpu in this Python (ortdoctor check shows what is there)."))
        return ModelReport(**base, findings=tuple(found), child_failure=failure, error=child.get("error"))
    if "providers" not in child:
        error = str(child.get("error") or "unknown error")
        found = mf.session_error_findings(error, ins, child.get("ort_version")) + found
        return ModelReport(**base, findings=tuple(found), error=error)

    placement = mf.summarise_placement(child, ins)
    if placement is not None:
        found = mf.placement_findings(placement, child, ins, cuda_graph=cuda_graph) + found
    found += mf.run_findings(child.get("run"))
    return ModelReport(
        **base,
        findings=tuple(_ordered(found)),
        providers=tuple(child.get("providers") or ()),
        cuda_ep_active=bool(child.get("cuda_ep_active")),
        placement=placement,
        run=child.get("run"),
        cuda_graph=child.get("cuda_graph"),
    )


def normalise_input_shapes(value: Mapping[str, Iterable[int]] | Iterable[str] | None) -> dict[str, tuple[int, ...]]:
    """``{"X": (2, 64)}`` from a mapping or from ``--input-shape`` strings (``"X=2x64"``).

    Raises:
        ValueError: a malformed ``--input-shape`` value.
    """
    if not value:
        return {}
    if isinstance(value, Mapping):
        return {str(k): tuple(int(d) for d in v) for k, v in value.items()}
    return parse_input_shapes(value)


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


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _ordered(found: list[Finding]) -> list[Finding]:
    return sorted(found, key=lambda f: _SEVERITY_ORDER.get(f.severity, 3))


__all__ = ["ModelReport", "check_model", "normalise_input_shapes", "parse_input_shapes"]
