"""Where onnxruntime placed each node of a session, read from onnxruntime itself.

Shared by the two children that create sessions (the smoke run and ``check --model``); never a hand-kept
list of kernels. Two sources, best first:

* ``InferenceSession.get_provider_graph_assignment_info()`` (onnxruntime 1.24+), recorded when the
  session config ``session.record_ep_graph_assignment_info=1`` is set: every node with its provider, as
  partitioned. :func:`can_record`, :func:`enable_recording` and :func:`assignment` run in the child,
  on the onnxruntime module and session it already has;
* the verbose session log (``log_severity_level=0``), which ends with ``VerifyEachNodeIsAssignedToAnEp``
  listing the final graph per provider (after fusions, with the Memcpy nodes ORT inserted) and, when one
  provider takes everything, only ``All nodes placed on [EP]. Number of nodes: N``. Older releases only
  have this source. :func:`parse_placements` is pure text parsing, so a parent can run it on the log a
  child wrote.

This module imports nothing but :mod:`re` (and the log helpers): it is loaded inside children whose start-up is measured.
"""

from __future__ import annotations

import re

from ortdoctor.formats.ortlog import ANSI

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ASSIGNMENT_CONFIG_KEY = "session.record_ep_graph_assignment_info"
SOURCE_API = "ep-graph-assignment-info"
SOURCE_LOG = "verbose-log"

_PLACED = re.compile(r"(Node\(s\)|All nodes) placed on \[(\w+)\]\. Number of nodes: (\d+)")
# A node line of the placement block: "  MatMulInteger (mmi)". Some releases emit each node as its own log
# record (with the usual "[V:onnxruntime:, ...VerifyEachNodeIsAssignedToAnEp]" prefix), others as bare
# continuation lines of one record.
_NODE_LINE = re.compile(r"^(?:.*VerifyEachNodeIsAssignedToAnEp\])?\s{2,}([A-Za-z_][\w.]*) \((.*)\)\s*$")


# --------------------------------------------------------------------------------------------------
# In the child: onnxruntime's own record
# --------------------------------------------------------------------------------------------------
def can_record(ort: Any) -> bool:
    """Whether this onnxruntime can report the assignment itself (1.24+)."""
    return hasattr(getattr(ort, "InferenceSession", None), "get_provider_graph_assignment_info")


def enable_recording(session_options: Any) -> None:
    """Ask ORT to keep the per-node assignment; set before the session is created."""
    session_options.add_session_config_entry(ASSIGNMENT_CONFIG_KEY, "1")


def assignment(session: Any) -> list[dict[str, str]] | None:
    """``[{"provider", "op_type", "name", "domain"}, ...]`` as ORT partitioned the graph; None when this
    session cannot say (an older release, or recording was not enabled)."""
    if not hasattr(session, "get_provider_graph_assignment_info"):
        return None
    try:
        subgraphs = session.get_provider_graph_assignment_info()
    except Exception:
        return None
    nodes = []
    for sg in subgraphs:
        for node in sg.get_nodes():
            nodes.append({"provider": sg.ep_name, "op_type": node.op_type, "name": node.name,
                          "domain": node.domain})
    return nodes


# --------------------------------------------------------------------------------------------------
# Anywhere: the verbose log (pure)
# --------------------------------------------------------------------------------------------------
def parse_placements(log: str) -> dict[str, Any] | None:
    """The ``VerifyEachNodeIsAssignedToAnEp`` block -> ``{"providers": {ep: {"count": n, "nodes": [...]}}}``.

    ``nodes`` lists ``{"op_type", "name"}`` when ORT printed them (several providers) and is empty when it
    printed only ``All nodes placed on [EP]``; ``all_on`` names that provider. ``None`` when the log has no
    placement block (a release or build that does not print it, or a session that failed earlier).
    """
    providers: dict[str, dict[str, Any]] = {}
    all_on: str | None = None
    current: str | None = None
    for raw in log.splitlines():
        line = ANSI.sub("", raw)
        header = _PLACED.search(line)
        if header:
            kind, ep, count = header.group(1), header.group(2), int(header.group(3))
            providers[ep] = {"count": count, "nodes": []}
            if kind == "All nodes":
                all_on, current = ep, None
            else:
                current = ep
            continue
        if current is not None:
            node = _NODE_LINE.match(line)
            if node and len(providers[current]["nodes"]) < providers[current]["count"]:
                providers[current]["nodes"].append({"op_type": node.group(1), "name": node.group(2)})
            else:
                current = None
    if not providers:
        return None
    return {"providers": providers, "all_on": all_on}


# --------------------------------------------------------------------------------------------------
# One short form for reports: provider -> ["OpType (name)", ...]
# --------------------------------------------------------------------------------------------------
def nodes_by_provider(nodes: list[dict[str, str]]) -> dict[str, list[str]]:
    """:func:`assignment`'s list grouped per provider, in ORT's order, as ``"OpType (name)"``."""
    out: dict[str, list[str]] = {}
    for node in nodes:
        out.setdefault(str(node.get("provider")), []).append(f"{node.get('op_type')} ({node.get('name')})")
    return out


def log_nodes_by_provider(parsed: dict[str, Any] | None) -> dict[str, list[str]]:
    """:func:`parse_placements`'s answer in the same form; a provider ORT named no nodes for (it took
    everything) gets ``["N nodes"]``."""
    out: dict[str, list[str]] = {}
    for ep, entry in ((parsed or {}).get("providers") or {}).items():
        nodes = [f"{n['op_type']} ({n['name']})" for n in entry.get("nodes") or ()]
        out[ep] = nodes or [f"{entry.get('count')} nodes"]
    return out


__all__ = [
    "ASSIGNMENT_CONFIG_KEY",
    "SOURCE_API",
    "SOURCE_LOG",
    "assignment",
    "can_record",
    "enable_recording",
    "log_nodes_by_provider",
    "nodes_by_provider",
    "parse_placements",
]
