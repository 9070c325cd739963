"""Findings about the user's own model: what was seen, why it keeps work off the GPU, and the fix.

Everything here is a pure function of the file inspection (:mod:`ortdoctor.prove.model_check.inspect`), the
child's answer (:mod:`ortdoctor.prove.model_check.child`, already summarised into a :class:`Placement`) and the
driver facts. Each id is documented once, in :mod:`ortdoctor.core.catalog` (:data:`CATALOG` here is
the list of this module's entries there).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ortdoctor.core.catalog import CATALOG as _CATALOG
from ortdoctor.core.catalog import CatalogEntry, make
from ortdoctor.core.ep_names import CPU_EP, CUDA_EP
from ortdoctor.core.facts import DriverInfo, Finding, Severity
from ortdoctor.core.finding_ids import FindingId
from ortdoctor.prove.model_check.inspect import ModelInspection
from ortdoctor.prove.model_check.op_cost import LABEL, RANKING_RULE, Cost, costs
from ortdoctor.prove.model_check.placement import Placement

#: Every id this module emits. Their documentation (title, severity, cause, evidence, fix) lives in
#: :mod:`ortdoctor.core.catalog`, the single source for ``docs/findings.md`` and ``ortdoctor explain``.
MODEL_IDS: tuple[FindingId, ...] = (
    "model-invalid", "model-truncated", "model-external-data-missing", "model-opset-unsupported",
    "model-load-failed", "model-check-failed", "model-not-on-gpu", "model-quantized-ops-on-cpu",
    "model-cpu-compute-ops", "model-shape-ops-on-cpu", "model-memcpy-nodes", "model-control-flow-blocks-cuda-graph",
    "model-dynamic-shapes-block-cuda-graph", "model-cuda-graph-refused", "model-too-large-for-device",
    "model-run-failed", "model-inputs-invalid", "model-outputs-differ",
)
#: The catalog entries of those ids, in that order.
CATALOG: tuple[CatalogEntry, ...] = tuple(_CATALOG[i] for i in MODEL_IDS)

#: Finding ids that mean "the input model cannot be used as given": the check command exits with 2.
INPUT_ERROR_IDS: frozenset[FindingId] = frozenset({"model-invalid", "model-truncated", "model-external-data-missing",
                             "model-opset-unsupported"})


def make_finding(id_: FindingId, detail: str, fix: str | None = None, severity: Severity | None = None,
                 title: str | None = None) -> Finding:
    if id_ not in MODEL_IDS:  # a typo here would otherwise pass as a valid catalog id of another area
        raise KeyError(id_)
    return make(id_, detail, fix, severity=severity, title=title)


# --------------------------------------------------------------------------------------------------
# Findings
# --------------------------------------------------------------------------------------------------
def inspection_findings(ins: ModelInspection) -> list[Finding]:
    """What the file alone proves wrong (before any session)."""
    if ins.problem == "truncated":
        return [make_finding("model-truncated", f"{ins.path}: {ins.problem_detail} (file size {ins.file_bytes} bytes).")]
    if ins.problem is not None:
        return [make_finding("model-invalid", f"{ins.path}: {ins.problem_detail}.")]
    missing = ins.missing_external
    if missing:
        listed = "; ".join(
            f"tensor {r.tensor!r} -> {r.path}" + (f" ({r.problem})" if r.problem else " (file not found)")
            for r in missing[:5]
        )
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        locations = sorted({r.location for r in missing})
        return [make_finding("model-external-data-missing",
                   f"{ins.path} keeps {len(ins.external_refs)} initializer(s) in external files; "
                   f"missing or unusable: {listed}{more}.",
                   fix=f"Place {', '.join(locations)} in {_dirname(ins.path)} (the path is relative to the "
                   "model file), e.g. copy the whole export directory, not only the .onnx file.")]
    return []


def _dirname(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


_OPSET_MAX = re.compile(r"Current official support for domain (\S+) is till opset (\d+)")
_OPSET_UNDER_DEV = re.compile(r"Opset (\d+) is under development")
_IR_VERSION = re.compile(r"Unsupported model IR version: (\d+), max supported IR version: (\d+)")
_NO_KERNEL = re.compile(r"Could not find an implementation for (\S+)")


def session_error_findings(error: str, ins: ModelInspection | None, ort_version: str | None) -> list[Finding]:
    """Classify onnxruntime's own error text from creating the session."""
    where = f"onnxruntime {ort_version}" if ort_version else "onnxruntime"
    quoted = error.strip()
    if len(quoted) > 1200:
        quoted = quoted[:1200] + " ..."
    opset_max = _OPSET_MAX.search(error)
    ir = _IR_VERSION.search(error)
    if opset_max or _OPSET_UNDER_DEV.search(error) or ir or ("opset" in error.lower() and "not supported" in error):
        model_opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in (ins.opsets.items() if ins else ()))
        if ir:
            seen = f"The model has IR version {ir.group(1)}; {where} supports up to {ir.group(2)}."
        elif opset_max:
            seen = (f"The model imports {model_opsets or 'an opset'}; {where} officially supports domain "
                    f"{opset_max.group(1)} up to opset {opset_max.group(2)}.")
        else:
            seen = f"The model imports {model_opsets or 'an opset'}, newer than {where} supports."
        fix = ("Upgrade onnxruntime-gpu to a newer release, one built for the same CUDA major (`ortdoctor matrix "
               "--cuda MAJOR` names it with its pip command), or export the model again with a lower opset, e.g. "
               "torch.onnx.export(..., opset_version=17)")
        if opset_max:
            fix += f" (at most {opset_max.group(2)} for this onnxruntime)"
        return [make_finding("model-opset-unsupported", f"{seen} onnxruntime said: {quoted}", fix=fix)]
    if "External data path" in error or "external data" in error.lower():
        return [make_finding("model-external-data-missing", f"{where} could not read the model's external data: {quoted}")]
    if "INVALID_PROTOBUF" in error or "Protobuf parsing failed" in error:
        return [make_finding("model-invalid", f"{where} could not parse the model: {quoted}")]
    if "NO_SUCHFILE" in error or "File doesn't exist" in error:
        return [make_finding("model-invalid", f"{where} could not open the model: {quoted}")]
    kernel = _NO_KERNEL.search(error)
    if kernel:
        return [make_finding("model-load-failed", f"{where} has no kernel for {kernel.group(1)}: {quoted}",
                   fix="Export the node with types/opset this onnxruntime implements, or upgrade onnxruntime; "
                   "a custom-op model needs its custom-op library registered (SessionOptions.register_custom_ops_library).")]
    return [make_finding("model-load-failed", f"{where} could not create a session: {quoted}")]


def placement_findings(p: Placement, child: Mapping[str, Any], ins: ModelInspection | None, *,
                       cuda_graph: bool, environment_errors: Sequence[str] = ()) -> list[Finding]:
    """``environment_errors``: the ids of the environment's error findings in the same report. When the
    CUDA EP is missing and they already say why, ``model-not-on-gpu`` is a note pointing at them (one
    headline cause), not a second error with the same cause."""
    out: list[Finding] = []
    providers = list(child.get("providers") or ())
    if p.ep == CPU_EP:  # the CPU EP under test (no GPU here): nothing can fall back from it
        return out
    if not child.get("ep_active", child.get("cuda_ep_active")):
        # ORT's own reason: the provider library's load error and the "Failed to create" warning
        evidence = [ln for ln in child.get("log_lines") or ()
                    if "Failed to" in ln or "CUDA failure" in ln or "cudaError" in ln]
        why = (" onnxruntime said: " + " | ".join(_strip_log_prefix(x) for x in evidence[-3:])) if evidence else ""
        available = child.get("available_providers") or []
        if CUDA_EP not in available:
            why = (f" This onnxruntime {child.get('ort_version') or ''} has no CUDA EP at all "
                   f"(available: {', '.join(available)}).")
        detail = (f"The session for {child.get('model')} runs on {providers or 'no provider'}; all "
                  f"{p.total} node(s) are on the CPU, so nothing here says which nodes the GPU would take.{why}")
        if environment_errors:
            causes = ", ".join(dict.fromkeys(environment_errors))
            out.append(make_finding("model-not-on-gpu", detail + f" The cause is the environment's ({causes}).",
                                    severity="info",
                                    title="the model ran on the CPU because of the environment's error",
                                    fix=f"Fix the environment first ({causes} in this report); then the model "
                                    "check shows the GPU placement."))
        else:
            out.append(make_finding("model-not-on-gpu", detail,
                                    fix="Make the CUDA EP load first (onnxruntime's reason is quoted here; the "
                                    "environment part of `ortdoctor check` lists the libraries it needs)."))
        if ins is not None and ins.quantized_ops:
            ops = ", ".join(f"{op} x{n}" for op, n in ins.quantized_ops.items())
            out.append(make_finding("model-quantized-ops-on-cpu", severity="info",
                          title="the model is quantized for the CPU (placement on the GPU not verified here)",
                          detail=f"The model contains {ops}. The CUDA EP runs few of these; with a working "
                          "CUDA EP onnxruntime would place them on the CPU. Not verified: the CUDA EP was "
                          "not created in this environment."))
        return out
    quantized = Counter(n["op_type"] for n in p.cpu_nodes if n["kind"] == "quantized")
    shape = [n for n in p.cpu_nodes if n["kind"] == "shape"]
    share = f"{p.gpu_share:.0%}" if p.gpu_share is not None else "unknown"
    if quantized:
        out.append(make_finding("model-quantized-ops-on-cpu",
                      f"onnxruntime placed {_ops(quantized)} on the CPU ({share} of the graph on the CUDA "
                      f"EP; {p.memcpy_nodes} Memcpy node(s) inserted). These come from dynamic "
                      "quantization (onnxruntime.quantization.quantize_dynamic), which targets CPUs."))
    out += _compute_findings(p, ins, share)
    if shape:
        ops = _ops(Counter(n["op_type"] for n in shape))
        out.append(make_finding("model-shape-ops-on-cpu",
                      f"onnxruntime keeps {len(shape)} node(s) of the model's shape subgraphs on the CPU "
                      f"({ops}): they only compute tensor shapes from Shape outputs and small constants, "
                      "which the CUDA EP leaves on the CPU by design.", fix=""))
    if p.memcpy_nodes:
        out.append(_memcpy_finding(p))
    if cuda_graph:
        cg = child.get("cuda_graph") or {}
        if cg.get("tried") and not cg.get("ok"):
            error = str(cg.get("error") or "")
            # ORT names the reason: control flow needs a different fix than nodes left on the CPU.
            fix = ("Export the model without control flow (unroll loops, fix the branch), or run without "
                   "enable_cuda_graph." if "control flow" in error.lower() else None)
            out.append(make_finding("model-cuda-graph-refused",
                          f"Creating the session with enable_cuda_graph=1 failed: {error}", fix))
    return out


def structure_findings(ins: ModelInspection, *, cuda_graph: bool) -> list[Finding]:
    """CUDA-graph constraints that the file alone shows (control flow, dynamic input shapes)."""
    out: list[Finding] = []
    if ins.control_flow_nodes:
        out.append(make_finding("model-control-flow-blocks-cuda-graph",
                      severity="warning" if cuda_graph else "info",
                      detail=f"The model has {len(ins.control_flow_nodes)} control-flow node(s): "
                      f"{_clip(', '.join(ins.control_flow_nodes))}. enable_cuda_graph cannot be used with it"
                      + ("." if cuda_graph else " (only matters if you enable CUDA graphs).")))
    if cuda_graph and ins.dynamic_inputs:
        dyn = "; ".join(f"{i.name} {list(i.shape) if i.shape is not None else '(no shape)'}"
                        for i in ins.dynamic_inputs)
        out.append(make_finding("model-dynamic-shapes-block-cuda-graph",
                      f"Inputs with dynamic dimensions: {_clip(dyn)}. A captured CUDA graph is only valid "
                      "for the shapes it was captured with."))
    return out


def memory_findings(ins: ModelInspection, driver: DriverInfo | None, device_id: int) -> list[Finding]:
    """``device_id`` is a CUDA ordinal: mapped to NVML's device through CUDA_VISIBLE_DEVICES first."""
    if driver is None or not driver.available:
        return []
    from ortdoctor.decide.devices import describe, map_devices

    cuda = map_devices(driver).get(device_id)
    device = cuda.device if cuda is not None else None
    if cuda is None or device is None or cuda.mig:  # a MIG slice has less memory than NVML's GPU shows
        return []
    free_mib = device.memory_free_mib if device.memory_free_mib is not None else device.memory_total_mib
    if free_mib is None:
        return []
    need = ins.total_bytes
    if need <= free_mib * 1024 * 1024:
        return []
    kind = "free" if device.memory_free_mib is not None else "total"
    return [make_finding("model-too-large-for-device",
               f"The model's weights take {_mib(need)} MiB ({ins.path} plus external data); "
               f"{describe(cuda)} has {free_mib} MiB {kind}.")]


def _compute_findings(p: Placement, ins: ModelInspection | None, share: str) -> list[Finding]:
    """CPU nodes that are neither shape computations nor quantized ops, most expensive first."""
    nodes = [n for n in p.cpu_nodes if n["kind"] in ("compute", "data")]
    if not nodes:
        return []
    ranked = costs(nodes, ins.graph if ins is not None else None)
    # data movement without weights (a Transpose, a Cast of a mask) costs a copy, not compute: a note
    heavy = any(c.arithmetic or c.weight_elements for c in ranked)
    listed = "; ".join(_cost_text(c) for c in ranked[:12])
    more = f"; and {len(ranked) - 12} more" if len(ranked) > 12 else ""
    detail = (f"onnxruntime placed {len(ranked)} node(s) outside the model's shape subgraphs on the CPU "
              f"({share} of the graph on the {_short(p.ep)} EP), {RANKING_RULE}: {listed}{more}.")
    if heavy:
        return [make_finding("model-cpu-compute-ops", detail)]
    return [make_finding("model-cpu-compute-ops", detail, severity="info",
                         title="nodes that only move data run on the CPU")]


def _cost_text(c: Cost) -> str:
    weights = f", reads {_count(c.weight_elements)} weights" if c.weight_elements else ""
    return f"{c.op_type} {c.name or '(unnamed)'} ({LABEL[c.op_class]}{weights})"


def _count(n: int) -> str:
    for unit, size in (("G", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return str(n)


def _memcpy_finding(p: Placement) -> Finding:
    causes = dict(p.memcpy_causes)
    traced = sum(causes.values())
    if p.memcpy_nodes > traced:
        causes["unknown"] = causes.get("unknown", 0) + p.memcpy_nodes - traced
    parts = []
    if causes.get("shape"):
        parts.append(f"{causes['shape']} carry the result of a shape computation (a few int64 values: by design)")
    if causes.get("compute"):
        parts.append(f"{causes['compute']} move activations to or from CPU compute nodes")
    if causes.get("unknown"):
        parts.append(f"{causes['unknown']} serve tensors onnxruntime created or renamed (not traced)")
    detail = (f"{p.memcpy_nodes} MemcpyToHost/MemcpyFromHost node(s) move tensors between the GPU and the CPU "
              f"on every run: {'; '.join(parts)}.")
    if causes.get("shape") == p.memcpy_nodes:
        return make_finding("model-memcpy-nodes", detail, fix="",
                            title="onnxruntime inserted host/device copies for shape values (by design)")
    return make_finding("model-memcpy-nodes", detail)


def _short(ep: str) -> str:
    return ep.removesuffix("ExecutionProvider")


# onnxruntime's messages for inputs that do not suit the model (the CPU EP checks them)
_INPUT_ERRORS = ("out of data bounds", "out of bounds", "Got invalid dimensions", "Invalid rank",
                 "Unexpected input data type", "invalid input", "index out of range")


def run_findings(run: Mapping[str, Any] | None, *, ep: str = CUDA_EP, given: Mapping[str, str] | None = None,
                 incomplete: str | None = None, stage: str | None = None) -> list[Finding]:
    """What the test run proved. ``given`` maps the inputs the user supplied to their files;
    ``incomplete`` says why the child gave no final answer and ``stage`` the step it had reached."""
    if incomplete is not None:
        on_ep = stage == "ep"
        where = f"on the {_short(ep)} EP" if on_ep else "on the CPU EP (the reference)" if stage == "cpu" else ""
        return [make_finding("model-run-failed", f"The test run {where} did not finish: {incomplete}".replace("  ", " "),
                             severity="error" if on_ep and ep != CPU_EP else None)]
    if not run:
        return []
    if run.get("problems"):
        # nothing ran, so there is no onnxruntime message to read: the fix is the inputs'
        return [make_finding("model-run-failed", "Not run: " + "; ".join(run["problems"]) + ".",
                             fix="Give the input's shape with --input-shape NAME=D1xD2 or its values with "
                             "--input NAME=file.npy.")]
    cpu, device = run.get("cpu") or {}, run.get("ep") or {}
    out: list[Finding] = []
    if run.get("inputs_valid") is False:
        inputs = run.get("inputs") or {}
        given_names = [n for n, d in inputs.items() if d.get("source") != "synthetic"]
        synthetic = [n for n, d in inputs.items() if d.get("source") == "synthetic"]
        parts = ([f"the given inputs ({', '.join(given_names)})"] if given_names else []) + (
            [f"ortdoctor's synthetic values for {', '.join(synthetic)}"] if synthetic else [])
        whose = " and ".join(parts) or "the inputs"
        kind = "out of range or of the wrong shape" if any(e in str(cpu.get("error")) for e in _INPUT_ERRORS) \
            else "not accepted"
        out.append(make_finding("model-inputs-invalid",
                                f"The CPU EP failed on {whose} ({kind}): {cpu.get('error')}. The {_short(ep)} EP was "
                                "not run: its result on such inputs would prove nothing."))
        return out
    part = run.get("part") or {}
    what = f"the compared part of the model (its first {part.get('nodes')} nodes)" if part else "the model"
    if cpu.get("session_failed"):
        out.append(make_finding("model-run-failed", severity="info",
                                title="no CPU EP reference: the outputs were not compared",
                                detail=f"The CPU EP could not load {what} ({cpu.get('error')}), so the inputs "
                                "were not validated and the outputs not compared.", fix=""))
    part_run = part.get("ep") or {}
    if part_run.get("error"):
        out.append(make_finding("model-run-failed", severity="error" if ep != CPU_EP else "warning",
                                detail=f"The compared part of the model (its first {part.get('nodes')} nodes) failed "
                                f"on the {_short(ep)} EP on inputs the CPU EP accepted: {part_run.get('error')}"))
    if part.get("error"):
        out.append(make_finding("model-run-failed", severity="info",
                                title="the compared part did not load on the EP under test: outputs not compared",
                                detail=f"The whole model ran on the {_short(ep)} EP; {part['error']}.", fix=""))
    if device.get("error"):
        out.append(make_finding("model-run-failed", severity="error" if ep != CPU_EP else "warning",
                                detail=f"The run on the {_short(ep)} EP failed"
                                + (" with IO binding" if (run.get("iobinding") or {}).get("used") else "")
                                + f" on inputs the CPU EP accepted: {device.get('error')}"))
    differ = [o for o in run.get("outputs") or () if o.get("compared") and not o.get("agree")]
    if differ:
        out.append(make_finding("model-outputs-differ",
                                f"{len(differ)} of {len(run.get('outputs') or ())} output(s) differ beyond the "
                                f"tolerance between the {_short(ep)} EP and the CPU EP: "
                                + "; ".join(_difference(o) for o in differ[:6]) + "."))
    return out


def refused_shapes_finding(refused: Sequence[str], shapes: Mapping[str, Sequence[int]],
                           files: Mapping[str, str]) -> Finding:
    """The given ``--input-shape`` / ``--input`` make a shape set the model cannot run (its own limits:
    a position table, a static dimension, a shared symbol); nothing was run."""
    given = [f"--input-shape {n}={'x'.join(str(d) for d in v)}" for n, v in shapes.items()]
    given += [f"--input {n}={path}" for n, path in files.items()]
    return make_finding("model-inputs-invalid", severity="error",
                        title="the given input shapes cannot run on this model",
                        detail=f"{', '.join(given) or 'The given inputs'}: " + "; ".join(refused) + ". Nothing "
                        "was run, and no TensorRT profile is advised for these shapes.",
                        fix="Give shapes inside the model's limits named above (e.g. a shorter sequence), or "
                        "real inputs of such shapes with --input NAME=file.npy.")


def _difference(o: Mapping[str, Any]) -> str:
    tol = o.get("tolerance") or {}
    if o.get("reason"):
        return f"{o['output']}: {o['reason']}"
    if tol.get("bound") == 0.0:
        return f"{o['output']} ({o.get('dtype')}): {o.get('mismatched')} of {o.get('elements')} elements differ"
    nonfinite = f", {o['nonfinite_mismatches']} NaN/inf on one side only" if o.get("nonfinite_mismatches") else ""
    return (f"{o['output']} ({o.get('dtype')}): largest error {o.get('max_abs_error'):.3g} = "
            f"{o.get('relative_error'):.3g} of its largest value {o.get('reference_max_abs'):.3g}, bound "
            f"{tol.get('bound'):g} ({tol.get('basis')}){nonfinite}")


def _ops(c: Counter[str]) -> str:
    return ", ".join(f"{op} x{n}" for op, n in c.most_common())


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."


def _mib(n: int) -> int:
    return -(-n // (1024 * 1024))


def _strip_log_prefix(line: str) -> str:
    """Drop the timestamp/source prefix of an ORT log record: the text is what classifies it."""
    return re.sub(r"^.*?\] ", "", line, count=1) if "onnxruntime" in line[:80] else line


__all__ = [
    "CATALOG",
    "INPUT_ERROR_IDS",
    "MODEL_IDS",
    "CatalogEntry",
    "Placement",
    "inspection_findings",
    "make_finding",
    "memory_findings",
    "placement_findings",
    "refused_shapes_finding",
    "run_findings",
    "session_error_findings",
    "structure_findings",
]
