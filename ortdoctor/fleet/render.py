"""A fleet report as text, JSON or markdown; each renderer returns a string.

The text and markdown views answer, in this order: how many nodes are fine, which nodes failed the
same way, each problem once with its fix and its nodes, what differs between nodes, and each node that
needs a look. Lists of node names are cut short (the JSON has them all), so a thousand nodes read as
easily as three.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from ortdoctor._version import __version__
from ortdoctor.fleet.model import FleetReport, NodeResult

__all__ = ["FLEET_SCHEMA_VERSION", "dumps", "render_markdown", "render_text", "to_json"]

FLEET_SCHEMA_VERSION = 1
NAMES_SHOWN = 8  # node names listed in one line before "and N more"
NODES_LISTED = 50  # nodes listed one per line at most (all of them when the fleet is this small)

_STATUS_WORD = {"ok": "ok", "warn": "warn", "fail": "FAIL", "unreachable": "UNREACHABLE", "timeout": "TIMEOUT",
                "error": "ERROR"}


# --------------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------------
def to_json(fleet: FleetReport) -> dict[str, Any]:
    """The whole fleet report as JSON data (docs/fleet.md describes it)."""
    return {
        "fleet_schema_version": FLEET_SCHEMA_VERSION,
        "ortdoctor_version": __version__,
        "status": fleet.status,
        "counts": {"nodes": len(fleet.nodes), **fleet.counts()},
        "groups": [{"status": g.status, "problem_ids": list(g.problem_ids), "nodes": list(g.nodes),
                    "reason": g.reason} for g in fleet.groups],
        "findings": [{"id": f.id, "severity": f.severity, "title": f.title, "fix": f.fix,
                      "fix_variants": f.fix_variants, "detail": f.detail, "nodes": list(f.nodes)}
                     for f in fleet.findings],
        "drift": [{"id": d.id, "field": d.field, "label": d.label, "note": d.note,
                   "only_on_failing": list(d.only_on_failing),
                   "values": [{"value": v.value, "nodes": list(v.nodes), "failing": v.failing} for v in d.values]}
                  for d in fleet.drift],
        "nodes": [_node_json(n) for n in fleet.nodes],
        "notes": list(fleet.notes),
    }


def _node_json(n: NodeResult) -> dict[str, Any]:
    return {
        "label": n.label,
        "status": n.status,
        "reason": n.reason,
        "source": n.source,
        "host": dict(n.host),
        "ray": dict(n.ray) if n.ray is not None else None,
        "schema_version": n.schema_version,
        "smoke": n.smoke,
        "versions": dict(n.versions.items()),
        "findings": [{"id": f.id, "severity": f.severity, "detail": f.detail} for f in n.findings],
    }


def dumps(fleet: FleetReport) -> str:
    return json.dumps(to_json(fleet), indent=2, ensure_ascii=False)


# --------------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------------
def _names(nodes: Sequence[str], limit: int = NAMES_SHOWN) -> str:
    shown = ", ".join(nodes[:limit])
    more = len(nodes) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _count(n: int, word: str = "node") -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _headline(fleet: FleetReport) -> str:
    counts = fleet.counts()
    parts = [f"{counts[s]} {_STATUS_WORD[s].lower()}" for s in counts if counts[s]]
    return f"ortdoctor fleet: {_count(len(fleet.nodes))}: " + ", ".join(parts)


def _node_line(n: NodeResult) -> str:
    if n.reason is not None:
        return n.reason
    v = n.versions
    facts = [v.onnxruntime if v.onnxruntime and v.onnxruntime != "not installed" else
             f"onnxruntime {v.onnxruntime or '?'}"]
    if v.driver:
        facts.append(f"driver {v.driver}")
    if v.gpus and v.gpus != "none":
        facts.append(v.gpus)
    if n.smoke:
        facts.append(f"smoke {n.smoke}")
    ids = n.problem_ids
    return " · ".join(facts) + (f" — {', '.join(ids)}" if ids else "")


def _indent(text: str, pad: str) -> str:
    return "\n".join(pad + line if line else line for line in text.splitlines())


def render_text(fleet: FleetReport) -> str:
    out = [_headline(fleet), ""]
    if len(fleet.groups) > 1 or any(g.status != "ok" for g in fleet.groups):
        out.append("Outcomes (nodes that ended the same way)")
        for g in fleet.groups:
            what = ", ".join(g.problem_ids) or (g.reason if g.reason else "no problems")
            out.append(f"  {_STATUS_WORD[g.status]:<11} {_count(len(g.nodes)):>9}  {what}")
            out.append(f"  {'':<11} {'':>9}  {_names(g.nodes)}")
        out.append("")
    problems = [f for f in fleet.findings if f.severity in ("error", "warning")]
    infos = [f for f in fleet.findings if f.severity not in ("error", "warning")]
    if problems:
        out.append("Problems, each once, with the nodes that have it")
        for f in problems:
            out.append(f"  {f.severity:<8} {f.id}  ({_count(len(f.nodes))}: {_names(f.nodes)})")
            out.append(f"           {f.title}")
            if f.fix:
                out.append(_indent("fix: " + f.fix, " " * 11))
                if f.fix_variants > 1:
                    out.append(f"           ({f.fix_variants} different fixes across these nodes; this one is the "
                               "most common, --json has each node's detail)")
        out.append("")
    if infos:
        out.append("Notes from the nodes")
        for f in infos:
            out.append(f"  {f.id}  ({_count(len(f.nodes))}): {f.title}")
        out.append("")
    if fleet.drift:
        out.append("What differs between nodes")
        for d in fleet.drift:
            out.append(f"  {d.label}:")
            for v in d.values:
                flag = "  <- only on failing nodes" if v.value in d.only_on_failing else ""
                out.append(f"    {v.value}: {_count(len(v.nodes))} ({_names(v.nodes)}){flag}")
            if d.note:
                out.append(f"    => {d.note}")
        out.append("")
    listed = list(fleet.nodes) if len(fleet.nodes) <= NODES_LISTED else [n for n in fleet.nodes if n.status != "ok"]
    if listed:
        out.append("Nodes" if len(listed) == len(fleet.nodes) else "Nodes that need a look")
        width = min(max(len(n.label) for n in listed[:NODES_LISTED]), 40)
        for n in listed[:NODES_LISTED]:
            out.append(f"  {n.label:<{width}}  {_STATUS_WORD[n.status]:<11} {_node_line(n)}")
        if len(listed) > NODES_LISTED:
            out.append(f"  ... and {len(listed) - NODES_LISTED} more (--json lists every node)")
        out.append("")
    if fleet.notes:
        out.append("About this run")
        out.extend(f"  - {note}" for note in fleet.notes)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------
def _cell(value: Any) -> str:
    text = html.escape(str(value), quote=False).replace("|", "\\|").replace("\r", "")
    return text.replace("\n", "<br>")


def _code(value: str) -> str:
    return f"<code>{_cell(value)}</code>"


def render_markdown(fleet: FleetReport) -> str:
    out = [f"### {_cell(_headline(fleet))}", ""]
    if fleet.groups:
        out += ["| outcome | nodes | problems | which |", "|---|---:|---|---|"]
        for g in fleet.groups:
            what = ", ".join(_code(i) for i in g.problem_ids) or _cell(g.reason or "none")
            out.append(f"| {_STATUS_WORD[g.status]} | {len(g.nodes)} | {what} | {_cell(_names(g.nodes))} |")
        out.append("")
    problems = [f for f in fleet.findings if f.severity in ("error", "warning")]
    if problems:
        out += ["#### Problems", "", "| severity | id | nodes | what | fix |", "|---|---|---:|---|---|"]
        for f in problems:
            fix = _cell(f.fix or "") + (f" ({f.fix_variants} variants)" if f.fix_variants > 1 else "")
            out.append(f"| {f.severity} | {_code(f.id)} | {len(f.nodes)}: {_cell(_names(f.nodes, 5))} | "
                       f"{_cell(f.title)} | {fix} |")
        out.append("")
    if fleet.drift:
        out += ["#### What differs between nodes", "", "| fact | value | nodes |", "|---|---|---|"]
        for d in fleet.drift:
            for i, v in enumerate(d.values):
                flag = " **only on failing nodes**" if v.value in d.only_on_failing else ""
                out.append(f"| {_cell(d.label) if i == 0 else ''} | {_code(v.value)}{flag} | "
                           f"{len(v.nodes)}: {_cell(_names(v.nodes, 5))} |")
        out.append("")
        out.extend(f"- {_cell(d.label)}: {_cell(d.note)}" for d in fleet.drift if d.note)
        if any(d.note for d in fleet.drift):
            out.append("")
    bad = [n for n in fleet.nodes if n.status != "ok"]
    if bad:
        out += ["<details><summary>Nodes that need a look</summary>", "", "| node | status | what |",
                "|---|---|---|"]
        out.extend(f"| {_cell(n.label)} | {_STATUS_WORD[n.status]} | {_cell(_node_line(n))} |"
                   for n in bad[:NODES_LISTED])
        if len(bad) > NODES_LISTED:
            out.append(f"| ... | | {len(bad) - NODES_LISTED} more |")
        out += ["", "</details>", ""]
    if fleet.notes:
        out.extend(f"- {_cell(note)}" for note in fleet.notes)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
