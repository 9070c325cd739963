"""Where the nodes of the user's model ran, folded from what onnxruntime told the child.

:func:`summarise_placement` is a pure function of the child's answer (:mod:`.child`) and the file
inspection (:mod:`.inspect`); the diagnosis (:mod:`ortdoctor.diagnose.model`) judges the result.

Each node onnxruntime left on the CPU gets a kind: ``quantized`` (a dynamic-quantization op the CUDA EP
has no kernel for), ``shape`` (one of the file's shape-only nodes, :mod:`.shape_subgraph`: on the CPU by
onnxruntime's design), ``data`` (moves values without arithmetic) or ``compute``; its op class and the
weight elements it reads come from :mod:`.op_cost`. Each Memcpy node onnxruntime inserted is traced to
the node it serves, through the tensor its ``transformer_memcpy`` log line names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ortdoctor.core.ep_names import CPU_EP, CUDA_EP
from ortdoctor.core.record import field, record
from ortdoctor.prove.model_check.graph import GraphNode, ModelGraph
from ortdoctor.prove.model_check.inspect import QUANTIZED_OPS, ModelInspection
from ortdoctor.prove.model_check.op_cost import op_class, weight_elements

MEMCPY_OPS = frozenset({"MemcpyToHost", "MemcpyFromHost"})

#: Small int64 shape ops the CUDA EP deliberately leaves on the CPU (used only when a node has no name
#: to match against the model's own shape subgraph).
SHAPE_OPS = frozenset({
    "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Range",
    "ConstantOfShape", "Reshape", "Expand", "NonZero", "Equal", "Where",
})



# --------------------------------------------------------------------------------------------------
@record
class Placement:
    """Where the nodes ran, as onnxruntime reported it."""

    source: tuple[str, ...]  # "verbose-log" (final graph), "ep-graph-assignment-info" (as partitioned)
    nodes_by_provider: dict[str, int] = field(default_factory=dict)  # final graph, Memcpy nodes included
    op_types_by_provider: dict[str, dict[str, int]] = field(default_factory=dict)
    # nodes on the CPU while another EP is under test: {"op_type", "name", "kind": quantized|shape|data|compute,
    # "op_class" (op_cost), "weights": initializer elements read}
    cpu_nodes: tuple[dict[str, Any], ...] = ()
    memcpy_nodes: int = 0
    gpu_share: float | None = None  # nodes on the EP under test / all nodes, Memcpy nodes left out
    op_types_from: str | None = None  # where op types per provider came from
    final_graph_nodes: int | None = None  # nodes after all optimisations, from the verbose log
    ep: str = CUDA_EP  # the execution provider under test
    # what each inserted Memcpy node serves: "shape" (a shape-only CPU node), "compute" (another CPU
    # node), "unknown" (its tensor is not in the file: onnxruntime renamed or created it)
    memcpy_causes: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.nodes_by_provider.values())


def summarise_placement(child: Mapping[str, Any], inspection: ModelInspection | None) -> Placement | None:
    """Fold the child's raw sources into one :class:`Placement`; ``None`` when no session was created."""
    if "providers" not in child:
        return None
    under_test = str(child.get("ep") or CUDA_EP)
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
        return Placement(source=sources, ep=under_test)

    by_op: dict[str, Counter[str]] = {}
    for n in nodes:
        by_op.setdefault(n["provider"], Counter())[n["op_type"]] += 1
    if op_types_from == "model-file" and inspection is not None and log and log.get("all_on"):
        by_op = {log["all_on"]: Counter(inspection.op_types)}
    memcpy = sum(1 for n in nodes if n["op_type"] in MEMCPY_OPS)
    memcpy = max(memcpy, len(child.get("memcpy_added") or ()))
    shape_names = set(inspection.shape_nodes) if inspection is not None else set()
    graph = inspection.graph if inspection is not None else None
    by_name = {n.name: n for n in graph.nodes if n.name} if graph is not None else {}
    # Nodes ORT's optimizer created ("Gather", "Gather_token_1" in every BERT and GPT-2 export on 1.31.1)
    # are not in the file, so the shape analysis cannot see them; when ORT's own heuristic put them on
    # the CPU as shape work (GetCpuPreferredNodes), they are shape work.
    shape_names |= {n for n in child.get("cpu_preferred") or () if n not in by_name}
    cpu_nodes = tuple(_cpu_node(n, shape_names, graph, by_name) for n in nodes
                      if n["provider"] == CPU_EP and under_test != CPU_EP and n["op_type"] not in MEMCPY_OPS)
    real_total = counts.total() - memcpy
    on_ep = counts.get(under_test, 0) - sum(1 for n in nodes
                                           if n["provider"] == under_test and n["op_type"] in MEMCPY_OPS)
    share = round(on_ep / real_total, 4) if real_total > 0 else None
    causes = memcpy_causes(child.get("memcpy_added") or (), graph, shape_names,
                           {n["name"] for n in cpu_nodes if n["name"]})
    return Placement(
        source=sources,
        nodes_by_provider=dict(counts),
        op_types_by_provider={ep: dict(sorted(c.items())) for ep, c in by_op.items()},
        cpu_nodes=cpu_nodes,
        memcpy_nodes=memcpy,
        gpu_share=share,
        op_types_from=op_types_from,
        final_graph_nodes=final_nodes,
        ep=under_test,
        memcpy_causes=causes,
    )


def _cpu_node(node: Mapping[str, str], shape_names: set[str], graph: ModelGraph | None,
              by_name: Mapping[str, GraphNode]) -> dict[str, Any]:
    op = node["op_type"]
    name = node.get("name") or ""
    cls = op_class(op)
    file_node = by_name.get(name) if name else None
    weights = weight_elements(file_node, graph) if file_node is not None and graph is not None else 0
    return {"op_type": op, "name": name, "kind": _kind(op, name, shape_names, cls), "op_class": cls,
            "weights": weights}


def _kind(op: str, name: str, shape_names: set[str], cls: str) -> str:
    if op in QUANTIZED_OPS:
        return "quantized"
    if name and name in shape_names:
        return "shape"
    if not name and op in SHAPE_OPS:  # nothing to match in the file: judged by its op type
        return "shape"
    return "data" if cls == "data" else "compute"


def memcpy_causes(added: Sequence[Mapping[str, str]], graph: ModelGraph | None, shape_names: set[str],
                  cpu_names: set[str]) -> dict[str, int]:
    """What each Memcpy node onnxruntime inserted serves, from its ``transformer_memcpy`` log line.

    ``MemcpyFromHost after T``: T was made on the CPU and a node of the EP reads it, so the node that
    made T is the cause. ``MemcpyToHost before T``: the EP made T and CPU nodes read it, so those
    readers are the cause. A shape-only cause means the copy carries a few shape values by design.
    """
    if not added:
        return {}
    producer = {o: n.name for n in graph.nodes for o in n.outputs if o} if graph is not None else {}
    readers: dict[str, list[str]] = {}
    for n in graph.nodes if graph is not None else ():
        for i in n.inputs:
            if i:
                readers.setdefault(i, []).append(n.name)
    causes: Counter[str] = Counter()
    for copy in added:
        tensor = copy.get("tensor", "")
        if copy.get("op_type") == "MemcpyFromHost":
            made_by = producer.get(tensor)
            causes[_cause([made_by] if made_by is not None else [], shape_names)] += 1
        else:
            on_cpu = [r for r in readers.get(tensor, ()) if r in cpu_names or r in shape_names]
            causes[_cause(on_cpu, shape_names)] += 1
    return dict(causes)


def _cause(names: Sequence[str], shape_names: set[str]) -> str:
    if not names:
        return "unknown"
    return "shape" if all(n in shape_names for n in names) else "compute"
