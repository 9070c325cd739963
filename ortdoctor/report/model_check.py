"""The human report's "Model" section: strings only, no printing, no colour (the caller adds it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ortdoctor.core.ep_names import CPU_EP, CUDA_EP
from ortdoctor.prove.model_check.placement import MEMCPY_OPS, Placement
from ortdoctor.report.model import ModelReport

_MARK = {"error": "✘", "warning": "⚠", "info": "·"}


def render_model(report: ModelReport) -> str:
    """A few lines a person reads first: the file, where the nodes ran, the proof run, the client's and
    TensorRT's options, the findings."""
    ins = report.inspection
    lines = [f"Model  {report.path}"]
    if ins.ok:
        opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in ins.opsets.items())
        shapes = len(ins.shape_nodes)
        lines.append(_row("file", f"{_size(ins.total_bytes)}, IR {ins.ir_version}, opset {opsets}, "
                          f"{ins.node_count} node{'s' * (ins.node_count != 1)}"
                          + (f", {ins.node_count_all} counting subgraphs" if ins.node_count_all != ins.node_count else "")
                          + (f"; {shapes} only compute shapes" if shapes else "")))
        if ins.inputs:
            shown = ", ".join(
                f"{i.name} {i.dtype or '?'}[{', '.join(str(d) if d is not None else '?' for d in i.shape or ())}]"
                for i in ins.inputs[:6]
            )
            lines.append(_row("inputs", f"{shown}{' ...' if len(ins.inputs) > 6 else ''}"))
    p = report.placement
    if report.ran and report.providers:
        under_test = "" if report.ep == CUDA_EP else f" (under test: the {_short(report.ep)} EP)"
        lines.append(_row("session", f"onnxruntime {report.ort_version or '?'} on {', '.join(report.providers)}"
                          + under_test))
    ep_active = report.ep in report.providers
    if p is not None and p.nodes_by_provider:
        lines.append(_row("placement", _placement_line(p)
                          + ("" if ep_active else f" — the {_short(report.ep)} EP was not created: all on the CPU")))
        cpu_ops = p.op_types_by_provider.get(CPU_EP)
        if cpu_ops and ep_active and report.ep != CPU_EP:
            ops = ", ".join(f"{op} x{n}" for op, n in sorted(cpu_ops.items(), key=lambda kv: -kv[1]))
            lines.append(_row("on the CPU", ops))
    if report.test_inputs and report.test_inputs.get("inputs"):
        lines.append(_row("test inputs", "; ".join(_input_text(i) for i in report.test_inputs["inputs"])))
    if report.run:
        lines += _run_lines(report.run, report.ep)
        if report.comparison and not report.run.get("problems"):
            lines.append(_row("compared", str(report.comparison.get("why"))))
    if report.client:
        lines.append(_row("client", _client_text(report.client)))
    if report.trt is not None:
        lines += _trt_lines(report)
    for f in report.findings:
        lines.append(f"  {_MARK.get(f.severity, '?')} {f.id}: {f.title}")
        lines.append(f"      {f.detail}")
        if f.fix:
            lines.append(f"      fix: {f.fix}")
    verdict = _verdict(report, ep_active)
    if verdict:
        lines.append(f"  ✔ {verdict}")
    return "\n".join(lines)


def _row(label: str, value: str) -> str:
    return f"  {label:<11} {value}"


def _placement_line(p: Placement) -> str:
    """The share and the counts from the same numbers: compute nodes per provider, the Memcpy nodes
    onnxruntime inserted counted apart (they are neither the model's work nor a sign of it)."""
    compute: dict[str, int] = {}
    for ep, n in p.nodes_by_provider.items():
        memcpy = sum(k for op, k in p.op_types_by_provider.get(ep, {}).items() if op in MEMCPY_OPS)
        compute[ep] = max(n - memcpy, 0)
    total = sum(compute.values())
    on_ep = compute.get(p.ep, 0)
    share = f"{on_ep / total:.0%}" if total else "?"
    counts = ", ".join(f"{_short(ep)} {n}" for ep, n in sorted(compute.items()))
    inserted = (f"; plus {p.memcpy_nodes} Memcpy node{'s' * (p.memcpy_nodes != 1)} onnxruntime inserted"
              if p.memcpy_nodes else "; no Memcpy nodes")
    return (f"{share} of nodes on the {_short(p.ep)} EP ({total} compute node{'s' * (total != 1)}: "
            f"{counts}{inserted})")


def _input_text(item: Mapping[str, Any]) -> str:
    shape = "x".join(str(d) for d in item.get("shape") or ()) or "scalar"
    head = f"{item['name']} {item.get('dtype')}[{shape}]"
    if item.get("source", "synthetic") != "synthetic":
        return f"{head} from {item['source']}"
    values = item.get("values")
    if values == "fill":
        what = "ones" if item.get("fill") == 1 else f"all {item.get('fill'):g}"
    elif values == "randint":
        what = f"random in [{item.get('low'):g}, {item.get('high'):g})"
    elif values == "arange":
        what = f"positions from {item.get('low') or 0:g}"
    elif values == "uniform":
        what = f"uniform in [{item.get('low'):g}, {item.get('high'):g})"
    else:
        what = "standard normal"
    note = item.get("note") or ""
    if what in note:
        return f"{head} {note}"
    return f"{head} {what}" + (f" ({note})" if note else "")


def _run_lines(run: Mapping[str, Any], ep: str) -> list[str]:
    if run.get("problems"):
        return [_row("run", "not run: " + "; ".join(run["problems"]))]
    device, cpu = run.get("ep") or {}, run.get("cpu") or {}
    label = f"{_short(ep)} EP" + (" with IO binding" if (run.get("iobinding") or {}).get("used") else "")
    reference = "CPU EP (reference)" if ep == CPU_EP else "CPU EP"
    part = run.get("part")
    if part:  # the whole model ran on the EP under test; both EPs ran the part that is compared
        parts = [f"{label} {_timing(device)} (the whole model)",
                 f"on the compared part: {label} {_timing(part.get('ep') or {'skipped': True})}, {reference} {_timing(cpu)}"]
    else:
        parts = [f"{label} {_timing(device)}", f"{reference} {_timing(cpu)}"]
    if run.get("speedup"):
        parts.append(f"speed-up {run['speedup']:.2f}x")
    lines = [_row("run", "  |  ".join(parts))]
    upcast = cpu.get("upcast")
    if upcast:
        lines.append(_row("", f"the CPU EP's reference ran a {upcast.get('to')} copy of the model ({upcast.get('tensors')} "
                          f"{upcast.get('from')} tensors cast exactly): the CPU EP refused the {upcast.get('from')} "
                          f"model ({upcast.get('why')})"))
    if run.get("inputs_valid") is False:
        lines.append(_row("", "the CPU EP rejected the inputs: the run on the EP proves nothing (not run)"))
    for i, out in enumerate(run.get("outputs") or ()):
        lines.append(_row("outputs" if i == 0 else "", _output_text(out)))
    return lines


def _timing(side: Mapping[str, Any]) -> str:
    if side.get("ok"):
        if not side.get("runs"):
            return f"{side['first_ms']:.3g} ms (one run)"
        return f"{side['steady_ms']:.3g} ms (first {side['first_ms']:.3g} ms, median of {side['runs']})"
    if side.get("skipped"):
        return "— (not run)"
    return "— (failed)"


def _output_text(out: Mapping[str, Any]) -> str:
    name = out.get("output")
    if not out.get("compared"):
        return f"· {name}: not compared ({out.get('reason')})"
    mark = "✔" if out.get("agree") else "✘"
    shape = "x".join(str(d) for d in out.get("shape") or ()) or "scalar"
    head = f"{mark} {name} {out.get('dtype')}[{shape}]"
    tol = out.get("tolerance") or {}
    if out.get("reason"):
        return f"{head}: {out['reason']}"
    if tol.get("bound") == 0.0:
        return f"{head}: {out.get('mismatched', 0)} of {out.get('elements', 0)} elements differ (exact)"
    return (f"{head}: largest error {out.get('max_abs_error', 0):.3g} = {out.get('relative_error', 0):.2g} of its "
            f"largest value (bound {tol.get('bound'):g}: {tol.get('basis')})")


def _client_text(client: Mapping[str, Any]) -> str:
    names = ", ".join(i["name"] for i in client.get("inputs_on_device") or ())
    device = client.get("device", "cuda:0")
    checked = " (this run bound them so)" if client.get("iobinding_checked") else " (check it with --iobinding)"
    example = _CLIENT_EXAMPLES.get(str(client.get("input_kind")), _CLIENT_EXAMPLES["tensor"]).format(device=device)
    return (f"with IO binding (Optimum's ORTModel binds inputs so on CUDA by default) {names} must be CUDA "
            f"tensors on {device}, e.g. {example}; a host tensor bound as CUDA memory fails with "
            f"cudaErrorIllegalAddress{checked}")


#: How a client puts its inputs on the device, by what the model takes (doctor.model.input_kind).
_CLIENT_EXAMPLES = {
    "text": "tokenizer(..., return_tensors='pt').to('{device}')",
    "image": "image_processor(images, return_tensors='pt').to('{device}')",
    "audio": "feature_extractor(audio, return_tensors='pt').to('{device}')",
    "tensor": "torch.from_numpy(array).to('{device}')",
}


def _trt_lines(report: ModelReport) -> list[str]:
    trt = report.trt
    assert trt is not None
    options = trt.provider_options()
    width = max(len(k) for k in options)
    lines = [_row("TensorRT" if i == 0 else "", f"{key:<{width}}  {value}") for i, (key, value) in enumerate(options.items())]
    lines += [_row("", f"note: {note}") for note in trt.notes]
    return lines


def _verdict(report: ModelReport, ep_active: bool) -> str | None:
    if not report.ran or not ep_active or any(f.severity in ("error", "warning") for f in report.findings):
        return None
    where = f"all compute runs on the {_short(report.ep)} EP"
    run = report.run or {}
    if run.get("agree"):
        return where + ", and its outputs agree with the CPU EP's"
    return where


def _short(ep: str) -> str:
    return ep.removesuffix("ExecutionProvider")


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


__all__ = ["render_model"]
