"""The structure of a model's top-level graph, as the file states it: the types every static analysis reads.

:mod:`.inspect` fills them from the protobuf; :mod:`.shape_subgraph`, :mod:`.op_cost` and
:mod:`.trt_profile` read them. They live apart from the reader so that the reader can run the analyses
without an import cycle.
"""

from __future__ import annotations

from ortdoctor.core.record import field, record


@record
class InputInfo:
    name: str
    dtype: str | None  # "float32"; None for non-tensor inputs
    shape: tuple[int | str | None, ...] | None  # ints for fixed dims, the symbol or None for dynamic ones
    dynamic_dims: tuple[int, ...] = ()  # positions of the dynamic dimensions

    @property
    def is_dynamic(self) -> bool:
        return self.shape is None or bool(self.dynamic_dims)


@record
class TensorInfo:
    """An initializer, or the value of a Constant node: its element type and dimensions (no data)."""

    dtype: str | None
    dims: tuple[int, ...] | None  # None when a Constant node's value is not a tensor we read

    @property
    def elements(self) -> int | None:
        if self.dims is None:
            return None
        count = 1
        for d in self.dims:
            count *= d
        return count


@record
class GraphNode:
    """One node of the top-level graph, as written in the file (before any onnxruntime optimisation)."""

    index: int  # position in the graph's node list
    name: str
    op_type: str
    domain: str  # "" for ai.onnx
    inputs: tuple[str, ...]  # "" marks an omitted optional input
    outputs: tuple[str, ...]
    int_attributes: dict[str, int] = field(default_factory=dict)  # e.g. Gather's axis
    constant: TensorInfo | None = None  # a Constant node's value


@record
class ModelGraph:
    """The top-level graph's structure: what static analyses (shape subgraphs, embedding tables) need."""

    nodes: tuple[GraphNode, ...]
    initializers: dict[str, TensorInfo]
    inputs: tuple[InputInfo, ...]  # graph inputs that are not initializers
    outputs: tuple[InputInfo, ...]



__all__ = ["GraphNode", "InputInfo", "ModelGraph", "TensorInfo"]
