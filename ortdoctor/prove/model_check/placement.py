"""Where the nodes of the user's model ran, folded from what onnxruntime told the child.

:func:`summarise_placement` is a pure function of the child's answer (:mod:`.child`) and the file
inspection (:mod:`.inspect`); the diagnosis (:mod:`ortdoctor.diagnose.model`) judges the result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ortdoctor.prove.model_check.inspect import QUANTIZED_OPS, ModelInspection

CUDA_EP = "CUDAExecutionProvider"
CPU_EP = "CPUExecutionProvider"
MEMCPY_OPS = frozenset({"MemcpyToHost", "MemcpyFromHost"})

#: Small int64 shape ops the CUDA EP deliberately leaves on the CPU (used only when a node has no name
#: to match against the model's own shape subgraph).
SHAPE_OPS = frozenset({
    "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Range",
    "ConstantOfShape", "Reshape", "Expand", "NonZero", "Equal", "Where",
})



# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Placement:
    """Where the nodes ran, as onnxruntime reported it."""

    source: tuple[str, ...]  # "verbose-log" (final graph), "ep-graph-assignment-info" (as partitioned)
    nodes_by_provider: dict[str, int] = field(default_factory=dict)  # final graph, Memcpy nodes included
    op_types_by_provider: dict[str, dict[str, int]] = field(default_factory=dict)
    cpu_nodes: tuple[dict[str, str], ...] = ()  # {"op_type", "name", "kind": quantized|shape|compute}
    memcpy_nodes: int = 0
    gpu_share: float | None = None  # CUDA EP nodes / all nodes, Memcpy nodes left out
    op_types_from: str | None = None  # where op types per provider came from
    final_graph_nodes: int | None = None  # nodes after all optimisations, from the verbose log

    @property
    def total(self) -> int:
        return sum(self.nodes_by_provider.values())


def summarise_placement(child: Mapping[str, Any], inspection: ModelInspection | None) -> Placement | None:
    """Fold the child's raw sources into one :class:`Placement`; ``None`` when no session was created."""
    if "providers" not in child:
        return None
    log = child.get("placements") or None
    assignment = child.get("assignment") or None
    sources = tuple(child.get("assignment_source") or ())
    nodes: list[dict[str, str]] = []  # {"provider", "op_type", "name"} where individual nodes are known
    counts: Counter[str] = Counter()
    op_types_from = None
    final_nodes: int | None = None
    if log:
        for ep, block in log["providers"].items():
            counts[ep] += int(block["count"])
            nodes.extend({"provider": ep, **n} for n in block["nodes"])
        final_nodes = counts.total()
        listed = sum(len(b["nodes"]) for b in log["providers"].values())
        op_types_from = "verbose-log"
        if listed < counts.total():
            # "All nodes placed on [EP]" gives only a count: take the op types from ORT's assignment record
            # (as partitioned, before EP-specific fusions) when it agrees on the provider.
            only = log.get("all_on")
            if assignment and only and all(a["provider"] == only for a in assignment):
                # count what the op types describe, so the numbers add up (the final graph may be
                # smaller after fusions; it stays in final_graph_nodes)
                nodes = [dict(a) for a in assignment]
                counts = Counter(a["provider"] for a in assignment)
                op_types_from = "ep-graph-assignment-info"
            elif only and inspection is not None and inspection.ok:
                nodes = []
                op_types_from = "model-file"
    elif assignment:
        nodes = [dict(a) for a in assignment]
        counts.update(a["provider"] for a in assignment)
        op_types_from = "ep-graph-assignment-info"
    else:
        return Placement(source=sources)

    by_op: dict[str, Counter[str]] = {}
    for n in nodes:
        by_op.setdefault(n["provider"], Counter())[n["op_type"]] += 1
    if op_types_from == "model-file" and inspection is not None and log and log.get("all_on"):
        by_op = {log["all_on"]: Counter(inspection.op_types)}
    memcpy = sum(1 for n in nodes if n["op_type"] in MEMCPY_OPS)
    memcpy = max(memcpy, len(child.get("memcpy_added") or ()))
    shape_names = set(inspection.shape_nodes) if inspection is not None else set()
    cpu_nodes = tuple(
        {"op_type": n["op_type"], "name": n.get("name", ""), "kind": _kind(n, shape_names)}
        for n in nodes if n["provider"] == CPU_EP
    )
    real_total = counts.total() - memcpy
    gpu = counts.get(CUDA_EP, 0) - sum(1 for n in nodes if n["provider"] == CUDA_EP and n["op_type"] in MEMCPY_OPS)
    share = round(gpu / real_total, 4) if real_total > 0 else None
    return Placement(
        source=sources,
        nodes_by_provider=dict(counts),
        op_types_by_provider={ep: dict(sorted(c.items())) for ep, c in by_op.items()},
        cpu_nodes=cpu_nodes,
        memcpy_nodes=memcpy,
        gpu_share=share,
        op_types_from=op_types_from,
        final_graph_nodes=final_nodes,
    )


def _kind(node: Mapping[str, str], shape_names: set[str]) -> str:
    op = node["op_type"]
    if op in QUANTIZED_OPS:
        return "quantized"
    name = node.get("name") or ""
    if name and name in shape_names:
        return "shape"
    if not name and op in SHAPE_OPS:
        return "shape"
    return "compute"
