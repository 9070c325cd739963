"""The smoke result and classifier matches as text (renderers return strings; commands print them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ortdoctor.core.terminal import terminal_safe

if TYPE_CHECKING:
    from ortdoctor.diagnose.classify import Match
    from ortdoctor.prove.smoke.runner import SmokeResult

_TIMING_ORDER = ("preload", "import", "session", "first_run", "run")


def render_smoke(result: SmokeResult, *, verbose: bool = False) -> str:
    """A few lines: the verdict, timings, the classified cause(s), ORT's own lines, the child's tail."""
    if not result.ran:
        return f"Smoke session: not run ({terminal_safe(result.error or 'skipped')})\n"
    lines: list[str] = []
    if result.ok:
        lines.append(
            f"Smoke session: OK on {result.providers[0] if result.providers else '?'} "
            f"(device {result.device_id}), max abs error {_num(result.max_abs_error)}"
        )
    else:
        lines.append(f"Smoke session: FAILED ({result.finding_id or 'smoke-failed'})")
        if result.error:
            lines.append(f"  error: {terminal_safe(result.error, multiline=True)}")
        if result.exit_status and result.exit_status not in ("0", "1"):
            lines.append(f"  child: {result.exit_status}")
    if result.timings_ms:
        parts = [f"{k} {result.timings_ms[k]:.1f} ms" for k in _TIMING_ORDER if k in result.timings_ms]
        lines.append("  timings: " + ", ".join(parts))
    if result.checks:
        checks = ", ".join(f"{k}={v}" for k, v in result.checks.items())
        lines.append(f"  checks: {checks}")
    if result.node_placement:
        lines.append("  node placement:")
        for provider, nodes in result.node_placement.items():
            lines.append(f"    {provider}: {', '.join(nodes)}")
    if not result.ok:
        if result.causes:
            lines.append("  cause (from ORT's messages):")
            lines += _indent(render_matches(result.causes, evidence=True), "    ")
        elif result.evidence:
            lines.append("  ORT said:")
            lines += ["    " + terminal_safe(e) for e in result.evidence[:10]]
        if verbose and result.output_tail:
            lines.append("  last output of the child:")
            lines += ["    " + terminal_safe(ln) for ln in result.output_tail.splitlines()[-30:]]
    return "\n".join(lines) + "\n"


def render_matches(matches: Iterable[Match], *, evidence: bool = True) -> str:
    """Each match as: id and what happened, why, the fix, and the line it was recognised in. A consequence
    (the EP was not used, a fallback banner) is called one only when a cause is listed above it."""
    blocks: list[str] = []
    cause_above = False
    for m in matches:
        # what, why and fix name what the log named (a library, a path): shown, never obeyed
        block = [f"[{terminal_safe(m.finding_id)}] {terminal_safe(m.what, multiline=True)}"]
        if m.consequence and cause_above:
            block[0] += " (a consequence of the cause above)"
        cause_above = cause_above or not m.consequence
        block.append(f"  Why: {terminal_safe(m.why, multiline=True)}")
        block.append(f"  Fix: {terminal_safe(m.fix, multiline=True)}")
        if evidence and m.evidence:
            block.append(f"  Seen: {terminal_safe(m.evidence)}")  # a line of the user's log, as it came
        blocks.append("\n".join(block))
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + ln if ln else ln for ln in text.rstrip("\n").splitlines()]


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"
