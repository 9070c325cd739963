"""onnxruntime's CPU-fallback rule for the CUDA EP, restated over a model file's graph, for tests.

``GetCpuPreferredNodes`` (onnxruntime/core/framework/fallback_cpu_capability.cc) moves a node the CUDA EP
claimed to the CPU when it consumes a tensor that lives in host memory and every other input is host
memory too: outputs a CUDA kernel writes to the CPU (``Shape``, ``Size``), outputs of nodes already moved,
small initializers (at most 100 elements) and graph inputs. An input the CUDA kernel itself takes from
host memory (Reshape's shape, Slice's starts ...) does not count as a reason. The walk starts at the
consumers of the host outputs and follows the moved nodes' consumers.

onnxruntime applies it to its optimised graph, after constant folding and fusions; the tests here apply
it to the file's graph, which is what they can see without a GPU. What the CUDA EP really places is
checked on the GPU machine (scripts/model_check_gpu.sh compares onnxruntime's log with the analysis).
"""

from __future__ import annotations

from collections import deque

from ortdoctor.prove.model_check.graph import ModelGraph
from ortdoctor.prove.model_check.shape_subgraph import SHAPE_SLOTS, SMALL_ELEMENTS

#: CUDA kernels whose outputs live in host memory (OrtMemTypeCPUOutput in their kernel definitions)
HOST_OUTPUT_OPS = frozenset({"Shape", "Size"})


def cpu_preferred_nodes(graph: ModelGraph) -> set[int]:
    """Indices of the nodes the rule moves to the CPU."""
    small = {n for n, t in graph.initializers.items() if t.elements is not None and t.elements <= SMALL_ELEMENTS}
    for node in graph.nodes:  # onnxruntime turns Constant nodes into initializers before partitioning
        if node.op_type == "Constant" and node.constant is not None and (node.constant.elements or 0) <= SMALL_ELEMENTS:
            small.update(node.outputs)
    inputs = {i.name for i in graph.inputs}
    consumers: dict[str, list[int]] = {}
    for node in graph.nodes:
        for name in node.inputs:
            if name:
                consumers.setdefault(name, []).append(node.index)
    host: set[str] = set()
    queue: deque[int] = deque()
    for node in graph.nodes:
        if node.op_type in HOST_OUTPUT_OPS:
            for out in node.outputs:
                host.add(out)
                queue.extend(consumers.get(out, ()))
    moved: set[int] = set()
    seen: set[int] = set()
    while queue:
        index = queue.popleft()
        if index in seen:
            continue
        seen.add(index)
        node = graph.nodes[index]
        if node.op_type in HOST_OUTPUT_OPS or node.op_type == "Constant":
            continue
        on_cpu_inputs = SHAPE_SLOTS.get(node.op_type, frozenset())
        ok = True
        for slot, name in enumerate(node.inputs):
            if not name or name in small or name in inputs:
                continue
            if name not in host or slot in on_cpu_inputs:
                ok = False
                break
        if ok:
            moved.add(index)
            for out in node.outputs:
                host.add(out)
                queue.extend(consumers.get(out, ()))
    return moved


__all__ = ["HOST_OUTPUT_OPS", "cpu_preferred_nodes"]
