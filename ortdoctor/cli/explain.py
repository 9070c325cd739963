"""`ortdoctor explain`: a finding id, or an ONNX Runtime / CUDA error text, turned into cause and fix.

    ortdoctor explain driver-missing             the documentation of one finding id
    ortdoctor explain --list                     every finding id with its title
    ortdoctor explain "CUDA failure 100: ..."    what an error text means
    python app.py 2>&1 | ortdoctor explain -     the same for a whole log on stdin (every line is read)

By default it also inspects this environment (no onnxruntime import, no smoke session) and says,
for each recognised problem, whether this environment has it now (``--no-here`` skips that).

Exit codes: 0 the id is known or the text matched at least one known failure; 1 nothing in the text
was recognised; 2 usage or input error (no argument, an unknown id, empty or unreadable stdin).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import click

from ortdoctor.core import exitcodes
from ortdoctor.core.terminal import terminal_safe

_RUNTIME_ONLY = ("explain", "smoke")  # catalog ids that only a running program can show
_ID_SHAPE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)+$")  # kebab-case with at least one dash: meant as an id
_WHAT_TO_PASTE = (
    "Paste the whole output of the failing run, from the first onnxruntime line to the traceback "
    "(python app.py 2>&1 | ortdoctor explain -), or run `ortdoctor check` to inspect this environment."
)


def _catalog() -> dict[str, Any]:
    from ortdoctor.core.catalog import CATALOG

    return dict(CATALOG)


def _doc_for_id(finding_id: str) -> str | None:
    if finding_id in _catalog():
        from ortdoctor.core.catalog import explain_text

        return explain_text(finding_id)
    from ortdoctor.diagnose.classify import LOCAL_DOCS

    if finding_id in LOCAL_DOCS:
        title, cause, fix = LOCAL_DOCS[finding_id]
        return f"{finding_id}: {title}\n\nCause:\n  {cause}\n\nFix:\n  {fix}\n"
    return None


def _known_ids() -> list[str]:
    from ortdoctor.diagnose.classify import LOCAL_DOCS

    return sorted(set(_catalog()) | set(LOCAL_DOCS))


def unknown_id_message(word: str) -> str:
    """What `explain` says for an id it does not know: the nearest known ids and where the list is."""
    near = difflib.get_close_matches(word, _known_ids(), n=3, cutoff=0.5)
    lines = [f"ortdoctor: error: '{word}' is not a known finding id."]
    if near:
        lines.append("Did you mean: " + ", ".join(near) + "?")
    lines.append("`ortdoctor explain --list` lists every id with its title.")
    return "\n".join(lines)


def list_text() -> str:
    """Every finding id with its title, one per line, ids aligned."""
    catalog = _catalog()
    ids = _known_ids()
    width = max(len(i) for i in ids)
    rows = []
    for fid in ids:
        title = catalog[fid].title if fid in catalog else _local_title(fid)
        rows.append(f"{fid:<{width}}  {title}")
    return "\n".join(rows) + "\n"


def _local_title(fid: str) -> str:
    from ortdoctor.diagnose.classify import LOCAL_DOCS

    return LOCAL_DOCS[fid][0]


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
            # details and fixes name this machine's paths: shown, not obeyed
            detail = terminal_safe(f.detail.strip(), multiline=True).splitlines()
            lines.append(f"  [{fid}] YES: {f.title}")
            lines += [f"      {d}" for d in detail[:6]]
            if f.fix:
                lines.append(f"      fix: {terminal_safe(f.fix, multiline=True)}")
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


class _Seen:
    """Passes lines through and remembers whether any of them had something other than white space."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = lines
        self.any_text = False

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            if not self.any_text and line.strip():
                self.any_text = True
            yield line


def _stdin_lines() -> Iterable[str]:
    from ortdoctor.diagnose.textlines import iter_stream

    stream = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin
    return iter_stream(stream)


def _stack_line(stack: Any) -> str | None:
    parts = []
    names = {"python": "Python", "java": "Java (ai.onnxruntime)", "csharp": "C# (Microsoft.ML.OnnxRuntime)",
             "rust": "Rust (ort crate)", "node": "Node (onnxruntime-node)", "cpp": "C/C++"}
    if stack.binding in names:
        parts.append(names[stack.binding] + (f" {stack.python_version}" if stack.python and stack.python_version
                                             else ""))
    if stack.os != "unknown":
        parts.append({"wsl": "WSL", "macos": "macOS"}.get(stack.os, stack.os.capitalize()))
    if stack.ort_version:
        parts.append(f"onnxruntime {stack.ort_version}")
    return ("Read as: " + ", ".join(parts) + " (the fixes below are for this stack).") if parts else None


@click.command("explain")
@click.argument("what", required=False)
@click.option("--here/--no-here", default=True, show_default=True,
              help="Also say whether this environment has the problem now (inspection only, no session).")
@click.option("--json", "as_json", is_flag=True, help="Print the matches as JSON on stdout.")
@click.option("--list", "list_ids", is_flag=True, help="List every finding id with its title.")
@click.option("--file", "-f", "log_file", type=click.Path(dir_okay=False, allow_dash=False),
              help="Read the text from this log file (every line is read, as with stdin).")
def command(what: str | None, here: bool, as_json: bool, list_ids: bool, log_file: str | None) -> None:
    """Explain a finding ID, an error TEXT, a log FILE (--file), or a log on stdin ('-').

    \b
      ortdoctor explain driver-missing
      ortdoctor explain --list
      ortdoctor explain "Failed to load library ... libcudnn.so.9: cannot open shared object file"
      ortdoctor explain --file app.log
      python app.py 2>&1 | ortdoctor explain -

    Exit status: 0 explained, 1 nothing recognised, 2 usage or input error.
    """
    if list_ids:
        if as_json:
            catalog = _catalog()
            click.echo(json.dumps([{"id": i, "title": catalog[i].title if i in catalog else _local_title(i)}
                                   for i in _known_ids()], indent=2))
        else:
            click.echo(list_text(), nl=False)
        sys.exit(exitcodes.OK)
    if log_file is not None:
        if what is not None:
            click.echo("ortdoctor: error: give either --file or a text/id, not both", err=True)
            sys.exit(exitcodes.USAGE)
        _explain_text(None, _file_lines(log_file), here, as_json, origin=log_file)
    if what is None:
        click.echo("ortdoctor: error: give a finding id, an error text, --file LOG, or - to read a log on stdin "
                   "(`ortdoctor explain --list` lists the ids)", err=True)
        sys.exit(exitcodes.USAGE)

    stripped = what.strip()
    if what != "-":
        if not stripped:
            click.echo("ortdoctor: error: the text is empty. " + _WHAT_TO_PASTE, err=True)
            sys.exit(exitcodes.USAGE)
        doc = _doc_for_id(stripped) if " " not in stripped and "\n" not in stripped else None
        if doc is not None:
            _print_id(stripped, doc, here, as_json)
        if _ID_SHAPE.match(stripped):
            click.echo(unknown_id_message(stripped), err=True)
            sys.exit(exitcodes.USAGE)

    from ortdoctor.diagnose.textlines import iter_lines

    _explain_text(what, _stdin_lines() if what == "-" else iter_lines(what), here, as_json,
                  origin="stdin" if what == "-" else None)


def _file_lines(path: str) -> Iterator[str]:
    """The lines of a log file, streamed like stdin (bytes decoded as the text reader decodes them)."""
    from ortdoctor.diagnose.textlines import iter_stream

    with open(path, "rb") as f:
        yield from iter_stream(f)


def _explain_text(what: str | None, lines: Iterable[str], here: bool, as_json: bool, *, origin: str | None) -> None:
    """Classify the text's lines, print the matches (text or JSON) and exit with the code for them."""
    from ortdoctor.diagnose.classify import classify_with_stack

    report, problem = _inspect_here() if here else (None, None)
    ort = getattr(getattr(report, "env", None), "ort", None)
    source = _Seen(lines)
    used: dict[str, list[Any]] = {}
    evidence: list[Any] = []
    try:
        matches, stack = classify_with_stack(
            source,
            cuda_major=_int_major(getattr(ort, "cuda_version", None)),
            cudnn_major=getattr(ort, "cudnn_major", None),
            ort_version=getattr(ort, "version", None),
            from_environment=True,
            used=used,
            evidence=evidence,
        )
    except OSError as exc:
        click.echo(f"ortdoctor: error: cannot read {terminal_safe(origin or 'the text')}: {exc.strerror or exc}",
                   err=True)
        sys.exit(exitcodes.USAGE)
    if not source.any_text:
        click.echo(f"ortdoctor: error: {terminal_safe(origin or 'the text')} was empty. " + _WHAT_TO_PASTE, err=True)
        sys.exit(exitcodes.USAGE)

    ids: list[str] = []
    for m in matches:
        if m.finding_id not in ids:
            ids.append(m.finding_id)
    here_lines, here_data = _here_lines(ids, report, problem) if (here and ids) else ([], {})

    if as_json:
        click.echo(json.dumps({"input": "text", "stack": {"binding": stack.binding, "os": stack.os,
                                                          "ort_version": stack.ort_version,
                                                          "python_version": stack.python_version},
                               "evidence": [e.to_json() for e in evidence],
                               "matches": [_match_json(m, used) for m in matches], "here": here_data or None},
                              indent=2))
    elif not matches:
        hint = ""
        word = what.strip() if what is not None else ""
        if word and "\n" not in word and len(word) < 4096 and os.path.isfile(word):
            from ortdoctor.core.shell import posix_join, powershell_join

            argv = ["ortdoctor", "explain", "--file", word]
            again = powershell_join(argv) if os.name == "nt" else posix_join(argv)
            hint = f"That is the name of a file; to read the file: {terminal_safe(again)}\n"
        click.echo("ortdoctor: nothing in this text was recognised as a known ONNX Runtime / CUDA failure.\n"
                   + hint + _WHAT_TO_PASTE, err=True)
    else:
        from ortdoctor.report.smoke import render_matches

        out = ""
        read_as = _stack_line(stack)
        if read_as:
            out += read_as + "\n\n"
        out += render_matches(matches)
        out += "\nMore about each: " + ", ".join(f"ortdoctor explain {i}" for i in ids) + "\n"
        if here_lines:
            out += "\n" + "\n".join(here_lines) + "\n"
        click.echo(out, nl=False)
    sys.exit(exitcodes.OK if matches else exitcodes.FAIL)


def _match_json(match: Any, used: dict[str, list[Any]]) -> dict[str, Any]:
    """A finding as JSON, with the evidence it was decided on: the facts its rule used (fact, value, the line
    each came from), and always the line the finding itself was read from."""
    data: dict[str, Any] = match.to_json()
    data["evidence_used"] = [e.to_json() for e in used.get(match.finding_id, [])] + [
        {"fact": "text.line", "value": match.finding_id, "line": match.evidence}]
    return data


def _print_id(finding_id: str, doc: str, here: bool, as_json: bool) -> None:
    report, problem = _inspect_here() if here else (None, None)
    here_lines, here_data = _here_lines([finding_id], report, problem) if here else ([], {})
    if as_json:
        click.echo(json.dumps({"input": "id", "id": finding_id, "text": doc, "here": here_data or None}, indent=2))
    else:
        click.echo(doc + ("\n" + "\n".join(here_lines) if here_lines else ""))
    sys.exit(exitcodes.OK)


def _int_major(version: str | None) -> int | None:
    if not version:
        return None
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None
