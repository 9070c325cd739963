"""``ortdoctor check --model PATH``: where each node of the user's model runs, and why not on the GPU.

The parent reads the file with a small protobuf reader (:mod:`ortdoctor.prove.model_check.inspect`):
opsets, inputs and their dynamic dimensions, op types, weights and external data. If the file is usable,
a spawned child (:mod:`ortdoctor.prove.model_check.child`) loads it on the CUDA EP with the CPU EP
beside it and reads the per-node placement from onnxruntime itself. :mod:`ortdoctor.diagnose.model`
turns both into findings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ortdoctor.core.facts import DriverInfo, Finding
from ortdoctor.diagnose import model as mf
from ortdoctor.prove.model_check.inspect import inspect_model, normalise_input_shapes
from ortdoctor.prove.model_check.placement import summarise_placement
from ortdoctor.prove.model_check.runner import ChildOutcome, run_child
from ortdoctor.report.model import ModelReport

__all__ = ["check_model"]


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
    import_path: Sequence[str] | None = None,
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
    outcome = run_child(request, timeout=timeout, env=env, python=python, import_path=import_path)
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

    placement = summarise_placement(child, ins)
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
