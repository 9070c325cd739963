"""A fleet report as text, JSON, markdown or Prometheus' text format; each renderer returns a string.

Everything a node's report supplies (names, titles, fixes, versions, paths, reasons) is another machine's
text: the text and markdown views show its control characters and escape sequences as visible escapes
(:func:`ortdoctor.core.terminal.terminal_safe`), the JSON keeps it as it was (JSON escapes it).

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
from ortdoctor.core.terminal import terminal_safe
from ortdoctor.fleet.model import FindingGroup, FleetReport, NodeResult

__all__ = ["FLEET_SCHEMA_VERSION", "dumps", "render_markdown", "render_prometheus", "render_text", "to_json"]

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
                      "fix_variants": f.fix_variants,
                      "fixes": [{"fix": v.fix, "nodes": list(v.nodes)} for v in f.node_fixes],
                      "detail": f.detail, "nodes": list(f.nodes)}
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
        "taken_at": n.taken_at,
        "smoke": n.smoke,
        "versions": dict(n.versions.items()),
        "findings": [{"id": f.id, "severity": f.severity, "detail": f.detail} for f in n.findings],
    }


def dumps(fleet: FleetReport) -> str:
    # ASCII with \u escapes, as `check --json`: a node's C1 controls and bidi overrides (which JSON lets
    # through raw) never reach a terminal, and the text is valid on any console encoding
    return json.dumps(to_json(fleet), indent=2)


# --------------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------------
def _names(nodes: Sequence[str], limit: int = NAMES_SHOWN) -> str:
    shown = ", ".join(_safe(n) for n in nodes[:limit])
    more = len(nodes) - limit
    return shown + (f" and {more} more" if more > 0 else "")


def _count(n: int, word: str = "node") -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _headline(fleet: FleetReport) -> str:
    counts = fleet.counts()
    parts = [f"{counts[s]} {_STATUS_WORD[s].lower()}" for s in counts if counts[s]]
    return f"ortdoctor fleet: {_count(len(fleet.nodes))}: " + ", ".join(parts)


def _safe(text: object) -> str:
    """One line of another machine's text, its control characters shown, not obeyed."""
    return terminal_safe(text)


def _node_line(n: NodeResult) -> str:
    """What to say about a node (its versions are its report's text: the caller makes it safe)."""
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
            what = _safe(", ".join(g.problem_ids) or (g.reason if g.reason else "no problems"))
            out.append(f"  {_STATUS_WORD[g.status]:<11} {_count(len(g.nodes)):>9}  {what}")
            out.append(f"  {'':<11} {'':>9}  {_names(g.nodes)}")
        out.append("")
    problems = [f for f in fleet.findings if f.severity in ("error", "warning")]
    infos = [f for f in fleet.findings if f.severity not in ("error", "warning")]
    if problems:
        out.append("Problems, each once, with the nodes that have it")
        for f in problems:
            out.append(f"  {_safe(f.severity):<8} {_safe(f.id)}  ({_count(len(f.nodes))}: {_names(f.nodes)})")
            out.append(f"           {_safe(f.title)}")
            out += _fix_lines(f)
        out.append("")
    if infos:
        out.append("Notes from the nodes")
        for f in infos:
            out.append(f"  {_safe(f.id)}  ({_count(len(f.nodes))}): {_safe(f.title)}")
        out.append("")
    if fleet.drift:
        out.append("What differs between nodes")
        for d in fleet.drift:
            out.append(f"  {d.label}:")
            for v in d.values:
                flag = "  <- only on failing nodes" if v.value in d.only_on_failing else ""
                out.append(f"    {_safe(v.value)}: {_count(len(v.nodes))} ({_names(v.nodes)}){flag}")
            if d.note:
                out.append(f"    => {_safe(d.note)}")
        out.append("")
    listed = list(fleet.nodes) if len(fleet.nodes) <= NODES_LISTED else [n for n in fleet.nodes if n.status != "ok"]
    if listed:
        out.append("Nodes" if len(listed) == len(fleet.nodes) else "Nodes that need a look")
        width = min(max(len(_safe(n.label)) for n in listed[:NODES_LISTED]), 40)
        for n in listed[:NODES_LISTED]:
            out.append(f"  {_safe(n.label):<{width}}  {_STATUS_WORD[n.status]:<11} {_safe(_node_line(n))}")
        if len(listed) > NODES_LISTED:
            out.append(f"  ... and {len(listed) - NODES_LISTED} more (--json lists every node)")
        out.append("")
    if fleet.notes:
        out.append("About this run")
        out.extend(f"  - {_safe(note)}" for note in fleet.notes)  # they name files and quote lines
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


FIXES_SHOWN = 3  # different fix texts of one finding shown, each with its nodes


def _fix_lines(f: FindingGroup) -> list[str]:
    """The fix under a problem: the text every node with it gave, else each text with the nodes that gave
    it (never one node's text for all), else the catalog's."""
    pad = " " * 11
    variants = f.node_fixes
    if len(variants) == 1 and len(variants[0].nodes) == len(f.nodes):
        return [_indent("fix: " + terminal_safe(variants[0].fix, multiline=True), pad)]
    if not variants:
        return [_indent("fix: " + terminal_safe(f.fix, multiline=True), pad)] if f.fix else []
    out = [pad + "fix, as each node gave it:"]
    for v in variants[:FIXES_SHOWN]:
        out.append(_indent(f"on {_names(v.nodes, 4)}: " + terminal_safe(v.fix, multiline=True), pad + "  "))
    if len(variants) > FIXES_SHOWN:
        out.append(f"{pad}  ({len(variants) - FIXES_SHOWN} more; --json has each with its nodes)")
    return out


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------
def _cell(value: Any) -> str:
    # another machine's text: control characters shown (a markdown report is read in terminals too)
    text = html.escape(terminal_safe(value, multiline=True), quote=False).replace("|", "\\|")
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
            fix = _markdown_fix(f)
            out.append(f"| {_cell(f.severity)} | {_code(f.id)} | {len(f.nodes)}: {_cell(_names(f.nodes, 5))} | "
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


def _markdown_fix(f: FindingGroup) -> str:
    variants = f.node_fixes
    if len(variants) == 1 and len(variants[0].nodes) == len(f.nodes):
        return _cell(variants[0].fix)
    if not variants:
        return _cell(f.fix or "")
    shown = [f"on {_cell(_names(v.nodes, 3))}: {_cell(v.fix)}" for v in variants[:FIXES_SHOWN]]
    if len(variants) > FIXES_SHOWN:
        shown.append(f"({len(variants) - FIXES_SHOWN} more)")
    return "<br>".join(shown)


# --------------------------------------------------------------------------------------------------
# Prometheus
# --------------------------------------------------------------------------------------------------
_STATUS_CODE = {"ok": 0, "warn": 1, "fail": 2, "error": 3, "timeout": 4, "unreachable": 5}


def _label(value: object) -> str:
    """A label value in Prometheus' text format: backslash, double quote and newline escaped (the only
    three it knows); other control characters shown, as everywhere else a node's text is printed."""
    text = terminal_safe(value, multiline=True)
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_prometheus(fleet: FleetReport) -> str:
    """Prometheus' text exposition format (for the node exporter's textfile collector or a push gateway):
    one ``ortdoctor_fleet_node_status`` gauge per node (0 ok, 1 warn, 2 fail, 3 error, 4 timeout,
    5 unreachable, the status also as a label), one ``ortdoctor_fleet_node_finding`` per node and
    error or warning id, and the counts per status."""
    out = [
        "# HELP ortdoctor_fleet_node_status A node's outcome: 0 ok, 1 warn, 2 fail, 3 error (no report), "
        "4 timeout, 5 unreachable.",
        "# TYPE ortdoctor_fleet_node_status gauge",
    ]
    for n in fleet.nodes:
        out.append(f'ortdoctor_fleet_node_status{{node="{_label(n.label)}",status="{n.status}"}} '
                   f"{_STATUS_CODE[n.status]}")
    out += ["# HELP ortdoctor_fleet_node_finding 1 for each error or warning a node reported, by finding id.",
            "# TYPE ortdoctor_fleet_node_finding gauge"]
    for n in fleet.nodes:
        seen: set[str] = set()
        for f in n.findings:
            if f.severity in ("error", "warning") and f.id not in seen:
                seen.add(f.id)
                out.append(f'ortdoctor_fleet_node_finding{{node="{_label(n.label)}",id="{_label(f.id)}",'
                           f'severity="{f.severity}"}} 1')
    out += ["# HELP ortdoctor_fleet_nodes Nodes of the fleet by outcome.", "# TYPE ortdoctor_fleet_nodes gauge"]
    out += [f'ortdoctor_fleet_nodes{{status="{status}"}} {count}' for status, count in fleet.counts().items()]
    return "\n".join(out) + "\n"
