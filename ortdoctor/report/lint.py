"""``ortdoctor lint``'s output: text, JSON, GitHub workflow annotations and SARIF 2.1.0 (strings only).

Every renderer takes the :class:`~ortdoctor.doctor.lint.LintReport`'s parts (files, findings, errors) and
returns text; nothing here reads a file or prints.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ortdoctor._version import __version__
from ortdoctor.core.catalog import CATALOG
from ortdoctor.core.exitcodes import BUG_REPORT_URL
from ortdoctor.core.facts import Severity
from ortdoctor.diagnose.lint_rules import LintFinding, Suppressed

__all__ = ["FORMATS", "render", "to_github", "to_json", "to_sarif", "to_text", "verdict"]

FORMATS = ("text", "json", "github", "sarif")
_MARK = {"error": "✘", "warning": "⚠", "info": "ℹ"}
_GITHUB = {"error": "error", "warning": "warning", "info": "notice"}
_SARIF = {"error": "error", "warning": "warning", "info": "note"}


def verdict(findings: Sequence[LintFinding]) -> str:
    """``fail`` with an error, ``warn`` with a warning, else ``ok`` (as ``check``)."""
    severities = {f.finding.severity for f in findings}
    return "fail" if "error" in severities else "warn" if "warning" in severities else "ok"


def _place(f: LintFinding) -> str:
    return f"{f.where.file}:{f.where.line}" if f.where.line else f.where.file


def to_text(files: Sequence[str], findings: Sequence[LintFinding], errors: Sequence[str] = (),
            suppressed: Sequence[Suppressed] = ()) -> str:
    lines: list[str] = []
    for f in findings:
        x = f.finding
        lines.append(f"{_place(f)}: {_MARK.get(x.severity, '?')} {x.id}: {x.title}")
        lines.append(f"    {x.detail}")
        if f.replacement == "":
            lines.append("    fix: delete this line")
        elif f.replacement is not None:
            # a replacement of two lines (a pin added below a requirement) keeps its second line aligned
            shown = "\n          ".join(part.strip() for part in f.replacement.strip().split("\n"))
            lines.append(f"    fix: replace the line with: {shown}")
        elif x.fix:
            lines.append(f"    fix: {x.fix}")
    for q in suppressed:
        lines.append(f"{_place(q.finding)}: suppressed {q.finding.finding.id}: {q.finding.finding.title}")
        lines.append(f"    by {q.by.file}:{q.by.line}: {q.by.text.strip()}")
    for e in errors:
        lines.append(f"✘ cannot read {e}")
    counts = {s: sum(1 for f in findings if f.finding.severity == s) for s in ("error", "warning", "info")}
    summary = f"{len(files)} file(s) read: {counts['error']} error(s), {counts['warning']} warning(s)"
    if counts["info"]:
        summary += f", {counts['info']} note(s)"
    if suppressed:
        summary += f", {len(suppressed)} suppressed"
    lines.append(("" if not lines else "\n") + summary)
    return "\n".join(lines) + "\n"


def _finding_json(f: LintFinding) -> dict[str, Any]:
    return {
        "id": f.finding.id,
        "severity": f.finding.severity,
        "title": f.finding.title,
        "detail": f.finding.detail,
        "fix": f.finding.fix,
        "file": f.where.file,
        "line": f.where.line,
        "replacement": f.replacement,
        "related": [{"file": r.file, "line": r.line} for r in f.related],
        "environment": f.stack,
    }


def to_json(files: Sequence[str], findings: Sequence[LintFinding], errors: Sequence[str] = (),
            suppressed: Sequence[Suppressed] = ()) -> str:
    doc: dict[str, Any] = {
        "tool": "ortdoctor lint",
        "version": __version__,
        "verdict": verdict(findings),
        "files": list(files),
        "findings": [_finding_json(f) for f in findings],
        "errors": list(errors),
    }
    if suppressed:
        doc["suppressed"] = [{**_finding_json(q.finding), "suppressed_by": {"kind": q.kind, "file": q.by.file,
                                                                           "line": q.by.line}} for q in suppressed]
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(files: Sequence[str], findings: Sequence[LintFinding], errors: Sequence[str] = (),
              suppressed: Sequence[Suppressed] = ()) -> str:
    """One workflow command per finding (``::error file=...,line=...,title=...::message``); none for a
    suppressed one (an annotation cannot be marked so)."""
    out: list[str] = []
    for f in findings:
        x = f.finding
        props = [f"file={_escape_property(f.where.file)}"]
        if f.where.line:
            props.append(f"line={f.where.line}")
        props.append(f"title={_escape_property(f'{x.id}: {x.title}')}")
        fix = (f"replace the line with: {f.replacement.strip()}" if f.replacement
               else "delete this line" if f.replacement == "" else x.fix or "")
        message = x.detail + (f"\nfix: {fix}" if fix else "")
        out.append(f"::{_GITHUB.get(x.severity, 'warning')} {','.join(props)}::{_escape_data(message)}")
    for e in errors:
        out.append(f"::error title=ortdoctor lint::{_escape_data('cannot read ' + e)}")
    return "\n".join(out) + ("\n" if out else "")


def to_sarif(files: Sequence[str], findings: Sequence[LintFinding], errors: Sequence[str] = (),
             suppressed: Sequence[Suppressed] = ()) -> str:
    """A SARIF 2.1.0 log with one run: the catalog's lint rules and one result per finding; a suppressed
    finding is a result with ``suppressions`` (code scanning shows it closed)."""
    silenced = {id(q.finding): q for q in suppressed}
    findings = sorted([*findings, *(q.finding for q in suppressed)],
                      key=lambda f: (f.where.file, f.where.line, f.finding.id))
    ids = sorted({f.finding.id for f in findings})
    rules = []
    for rid in ids:
        e = CATALOG[rid]
        rules.append({
            "id": rid,
            "name": rid,
            "shortDescription": {"text": e.title},
            "fullDescription": {"text": e.cause},
            "help": {"text": f"{e.evidence}\n\nFix: {e.fix}"},
            "defaultConfiguration": {"level": _SARIF[_sev(e.severity)]},
            **({"helpUri": e.docs[0]} if e.docs else {}),
        })
    results = []
    for f in findings:
        region: dict[str, Any] = {"startLine": max(f.where.line, 1)}
        result: dict[str, Any] = {
            "ruleId": f.finding.id,
            "ruleIndex": ids.index(f.finding.id),
            "level": _SARIF[_sev(f.finding.severity)],
            "message": {"text": f"{f.finding.title}: {f.finding.detail}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(f.where.file)},
                                                "region": region}}],
        }
        if f.related:
            result["relatedLocations"] = [
                {"id": i, "physicalLocation": {"artifactLocation": {"uri": _uri(r.file)},
                                               "region": {"startLine": max(r.line, 1)}}}
                for i, r in enumerate(f.related) if r.line]
        if f.replacement is not None and f.where.line:
            result["fixes"] = [{
                "description": {"text": f.finding.fix or ""},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(f.where.file)},
                    "replacements": [{
                        "deletedRegion": {"startLine": f.where.line, "endLine": f.where.line},
                        **({"insertedContent": {"text": f.replacement + "\n"}} if f.replacement else {}),
                    }],
                }],
            }]
        q = silenced.get(id(f))
        if q is not None:
            result["suppressions"] = [{
                "kind": q.kind, "status": "accepted",
                "justification": f"{q.by.file}:{q.by.line}: {q.by.text.strip()}" if q.kind == "inSource"
                else f"[tool.ortdoctor] ignore ({q.by.file}:{q.by.line})"}]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "ortdoctor", "version": __version__, "informationUri": BUG_REPORT_URL
                                .rsplit("/issues", 1)[0], "rules": rules}},
            "results": results,
            "invocations": [{"executionSuccessful": not errors,
                             "toolExecutionNotifications": [{"level": "error", "message": {"text": e}}
                                                            for e in errors]}],
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _sev(s: Severity | str) -> str:
    return s if s in _SARIF else "warning"


def _uri(path: str) -> str:
    return path.replace("\\", "/").lstrip("./") if path.startswith("./") else path.replace("\\", "/")


def render(fmt: str, files: Sequence[str], findings: Sequence[LintFinding], errors: Sequence[str] = (),
           suppressed: Sequence[Suppressed] = ()) -> str:
    """``suppressed``: the findings the files silence, listed apart (text, JSON) or marked (SARIF)."""
    renderer = {"text": to_text, "json": to_json, "github": to_github, "sarif": to_sarif}[fmt]
    return renderer(files, findings, errors, suppressed)
