"""`ortdoctor explain`: a finding id, or an ONNX Runtime / CUDA error text, turned into cause and fix.

    ortdoctor explain driver-missing             the documentation of one finding id
    ortdoctor explain "CUDA failure 100: ..."    what an error text means
    python app.py 2>&1 | ortdoctor explain -     the same for a whole log on stdin

By default it also inspects this environment (no onnxruntime import, no smoke session) and says,
for each recognised problem, whether this environment has it now (``--no-here`` skips that).

Exit codes: 0 the id is known or the text matched at least one known failure; 1 nothing in the text
was recognised; 2 usage error (no argument, unreadable input).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ortdoctor.core import exitcodes

_MAX_STDIN = 16 * 1024 * 1024  # a log larger than this is read up to here (its start holds ORT's error)
_RUNTIME_ONLY = ("explain", "smoke")  # catalog ids that only a running program can show


def _catalog() -> dict[str, Any]:
    try:
        from ortdoctor.core.catalog import CATALOG
    except ImportError:  # pragma: no cover - the catalog ships with ortdoctor
        return {}
    return dict(CATALOG)


def _doc_for_id(finding_id: str) -> str | None:
    catalog = _catalog()
    if finding_id in catalog:
        from ortdoctor.core.catalog import explain_text

        return explain_text(finding_id)
    from ortdoctor.diagnose.classify import LOCAL_DOCS

    if finding_id in LOCAL_DOCS:
        title, cause, fix = LOCAL_DOCS[finding_id]
        return f"{finding_id}: {title}\n\nCause:\n  {cause}\n\nFix:\n  {fix}\n"
    return None


def _inspect_here() -> tuple[Any, str | None]:
    """`ortdoctor check --no-smoke` as a library call; (report, None) or (None, why it failed)."""
    try:
        from ortdoctor.doctor.check import run_check

        return run_check(smoke=False), None
    except Exception as exc:  # inspection is a bonus here: say why it is missing, explain anyway
        return None, f"{type(exc).__name__}: {exc}"


def _here_lines(ids: list[str], report: Any, problem: str | None) -> tuple[list[str], dict[str, Any]]:
    if report is None:
        return [f"This environment: could not be inspected ({problem})."], {"error": problem}
    catalog = _catalog()
    by_id = {f.id: f for f in report.findings}
    lines = ["This environment, now:"]
    data: dict[str, Any] = {}
    for fid in ids:
        if fid in by_id:
            f = by_id[fid]
            detail = f.detail.strip().splitlines()
            lines.append(f"  [{fid}] YES: {f.title}")
            lines += [f"      {d}" for d in detail[:6]]
            if f.fix:
                lines.append(f"      fix: {f.fix}")
            data[fid] = {"present": True, "title": f.title, "detail": f.detail, "fix": f.fix}
        elif fid not in catalog or catalog[fid].produced_by in _RUNTIME_ONLY:
            lines.append(
                f"  [{fid}] cannot be told by inspection: it shows when a program runs "
                "(`ortdoctor check` runs a real CUDA session)."
            )
            data[fid] = {"present": None}
        else:
            lines.append(f"  [{fid}] not seen: `ortdoctor check` finds no such problem here now.")
            data[fid] = {"present": False}
    others = [f for f in report.findings if f.id not in ids and f.severity == "error"]
    if others:
        lines.append("  Other errors here now: " + ", ".join(sorted({f.id for f in others})))
        data["_other_errors"] = sorted({f.id for f in others})
    return lines, data


@click.command("explain")
@click.argument("what", required=False)
@click.option("--here/--no-here", default=True, show_default=True,
              help="Also say whether this environment has the problem now (inspection only, no session).")
@click.option("--json", "as_json", is_flag=True, help="Print the matches as JSON on stdout.")
def command(what: str | None, here: bool, as_json: bool) -> None:
    """Explain a finding ID, an error TEXT, or a log on stdin ('-').

    \b
      ortdoctor explain driver-missing
      ortdoctor explain "Failed to load library ... libcudnn.so.9: cannot open shared object file"
      python app.py 2>&1 | ortdoctor explain -

    Exit status: 0 explained, 1 nothing recognised, 2 usage error.
    """
    if what is None:
        click.echo("ortdoctor: error: give a finding id, an error text, or - to read a log on stdin", err=True)
        sys.exit(exitcodes.USAGE)
    if what == "-":
        try:
            raw = sys.stdin.buffer.read(_MAX_STDIN) if hasattr(sys.stdin, "buffer") else sys.stdin.read(_MAX_STDIN)
        except OSError as exc:
            click.echo(f"ortdoctor: error: cannot read stdin: {exc}", err=True)
            sys.exit(exitcodes.USAGE)
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    else:
        text = what

    stripped = text.strip()
    doc = _doc_for_id(stripped) if stripped and "\n" not in stripped and " " not in stripped else None
    report, problem = _inspect_here() if here else (None, None)

    if doc is not None:
        ids = [stripped]
        here_lines, here_data = _here_lines(ids, report, problem) if here else ([], {})
        if as_json:
            click.echo(json.dumps({"input": "id", "id": stripped, "text": doc, "here": here_data or None}, indent=2))
        else:
            click.echo(doc + ("\n" + "\n".join(here_lines) if here_lines else ""))
        sys.exit(exitcodes.OK)

    from ortdoctor.diagnose.classify import classify
    from ortdoctor.report.smoke import render_matches

    ort = getattr(getattr(report, "env", None), "ort", None)
    cuda_major = _int_major(getattr(ort, "cuda_version", None))
    matches = classify(
        text,
        cuda_major=cuda_major,
        cudnn_major=getattr(ort, "cudnn_major", None),
        ort_version=getattr(ort, "version", None),
    )
    ids: list[str] = []
    for m in matches:
        if m.finding_id not in ids:
            ids.append(m.finding_id)
    here_lines, here_data = _here_lines(ids, report, problem) if (here and ids) else ([], {})

    if as_json:
        click.echo(json.dumps({"input": "text", "matches": [m.to_json() for m in matches],
                               "here": here_data or None}, indent=2))
    elif not matches:
        click.echo(
            "ortdoctor: no known ONNX Runtime / CUDA failure was recognised in this text.\n"
            "Give the whole log (… 2>&1 | ortdoctor explain -), or run `ortdoctor check` to inspect this "
            "environment.",
            err=True,
        )
    else:
        out = render_matches(matches)
        out += "\nMore about each: " + ", ".join(f"ortdoctor explain {i}" for i in ids) + "\n"
        if here_lines:
            out += "\n" + "\n".join(here_lines) + "\n"
        click.echo(out, nl=False)
    sys.exit(exitcodes.OK if matches else exitcodes.FAIL)


def _int_major(version: str | None) -> int | None:
    if not version:
        return None
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None
