"""The human report's "Model" section: strings only, no printing, no colour (the caller adds it)."""

from __future__ import annotations

from typing import Any

from ortdoctor.prove.model_check.placement import CUDA_EP, MEMCPY_OPS, Placement
from ortdoctor.report.model import ModelReport

_MARK = {"error": "✘", "warning": "⚠", "info": "·"}


def render_model(report: ModelReport) -> str:
    """A few lines a person reads first: the file, where the nodes ran, the run times, the findings."""
    ins = report.inspection
    lines = [f"Model  {report.path}"]
    if ins.ok:
        opsets = ", ".join(f"{d or 'ai.onnx'} {v}" for d, v in ins.opsets.items())
        lines.append(f"  file       {_size(ins.total_bytes)}, IR {ins.ir_version}, opset {opsets}, "
                     f"{ins.node_count} node{'s' * (ins.node_count != 1)}"
                     + (f", {ins.node_count_all} counting subgraphs" if ins.node_count_all != ins.node_count else ""))
        if ins.inputs:
            shown = ", ".join(
                f"{i.name} {i.dtype or '?'}[{', '.join(str(d) if d is not None else '?' for d in i.shape or ())}]"
                for i in ins.inputs[:6]
            )
            lines.append(f"  inputs     {shown}{' ...' if len(ins.inputs) > 6 else ''}")
    p = report.placement
    if report.ran and report.providers:
        lines.append(f"  session    onnxruntime {report.ort_version or '?'} on {', '.join(report.providers)}")
    if p is not None and p.nodes_by_provider:
        lines.append("  placement  " + _placement_line(p)
                     + ("" if report.cuda_ep_active else " — the CUDA EP was not created: all on the CPU"))
        cpu_ops = p.op_types_by_provider.get("CPUExecutionProvider")
        if cpu_ops and report.cuda_ep_active:
            ops = ", ".join(f"{op} x{n}" for op, n in sorted(cpu_ops.items(), key=lambda kv: -kv[1]))
            lines.append(f"  on the CPU {ops}")
    if report.run:
        lines.append("  run        " + _run_line(report.run))
    for f in report.findings:
        lines.append(f"  {_MARK.get(f.severity, '?')} {f.id}: {f.title}")
        lines.append(f"      {f.detail}")
        if f.fix:
            lines.append(f"      fix: {f.fix}")
    if not report.findings:
        lines.append("  ✔ every node runs on the CUDA EP")
    return "\n".join(lines)


def _placement_line(p: Placement) -> str:
    """The share and the counts from the same numbers: compute nodes per provider, the Memcpy nodes
    onnxruntime inserted counted apart (they are neither the model's work nor a sign of it)."""
    compute: dict[str, int] = {}
    for ep, n in p.nodes_by_provider.items():
        memcpy = sum(k for op, k in p.op_types_by_provider.get(ep, {}).items() if op in MEMCPY_OPS)
        compute[ep] = max(n - memcpy, 0)
    total = sum(compute.values())
    cuda = compute.get(CUDA_EP, 0)
    share = f"{cuda / total:.0%}" if total else "?"
    counts = ", ".join(f"{_short(ep)} {n}" for ep, n in sorted(compute.items()))
    copies = (f"; plus {p.memcpy_nodes} Memcpy node{'s' * (p.memcpy_nodes != 1)} onnxruntime inserted"
              if p.memcpy_nodes else "; no Memcpy nodes")
    return f"{share} of nodes on the CUDA EP ({total} compute node{'s' * (total != 1)}: {counts}{copies})"


def _run_line(run: dict[str, Any]) -> str:
    if run.get("problems"):
        return "not run: " + "; ".join(run["problems"])
    parts = []
    for side, label in (("cuda", "CUDA EP"), ("cpu", "CPU EP")):
        r = run.get(side) or {}
        if r.get("ok"):
            parts.append(f"{label} {r['steady_ms']:.2f} ms (first {r['first_ms']:.2f} ms)")
        else:
            parts.append(f"{label} —")
    return "  |  ".join(parts)


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
