"""A GitHub Actions workflow read line by line: what each job says about the machines it runs on.

Standard library only, no YAML loader (it forgets lines). The block subset workflows are written in is
read into dicts and lists of :class:`~ortdoctor.formats.toml_lines.LocatedStr` (each scalar keeps its
line): block mappings and sequences, flow sequences and mappings (``[a, b]``, ``{gpu: t4}``, also over
several lines), quoted and plain scalars, comments; block scalars (``run: |``) are skipped. Anything it
does not understand becomes a plain string or is skipped, never an error.

:func:`read_workflow` returns, per job, the runner labels of ``runs-on`` (``${{ matrix.KEY }}`` replaced
by the matrix's values), the ``strategy.matrix`` values by key (``include`` entries too), the
``with:`` inputs of steps that use the ortdoctor Action, the ``python-version`` of ``actions/setup-python``
steps (matrix references expanded), and the ``pip install``/``pip uninstall`` commands of the ``run:``
scripts (a ``run: |`` block's lines kept for this). What the values mean (a GPU name, a driver) is for the
caller to decide.
"""

from __future__ import annotations

import re
from typing import Any

from ortdoctor.core.record import record
from ortdoctor.formats.dockerfile import PipInstall, pip_commands
from ortdoctor.formats.toml_lines import LocatedStr

__all__ = ["WorkflowJob", "read_workflow", "read_yaml_lines"]

_MAX_DEPTH = 64


@record
class WorkflowJob:
    name: str
    runs_on: tuple[LocatedStr, ...]  # runner labels, matrix references expanded
    matrix: tuple[tuple[str, tuple[LocatedStr, ...]], ...]  # (key, values), `include` entries merged
    ortdoctor_inputs: tuple[tuple[str, LocatedStr], ...]  # (input, value) of `uses: .../ortdoctor@...` steps
    pythons: tuple[LocatedStr, ...] = ()  # actions/setup-python's python-version values, matrix expanded
    # (working directory, command): the pip install/uninstall commands of the run: steps, in order, each with
    # the step's `working-directory` (else the job's `defaults.run.working-directory`; "" for the checkout)
    pip: tuple[tuple[str, PipInstall], ...] = ()


def _strip_comment(line: str) -> str:
    quote = ""
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'" and (i == 0 or line[i - 1] in " \t:[{,-"):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _scalar(text: str, line: int) -> LocatedStr:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        t = t[1:-1]
    return LocatedStr(t, line)


def _split_flow(body: str) -> list[str]:
    """The items of a flow collection's body, split at top-level commas."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for i, c in enumerate(body):
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return [p for p in (x.strip() for x in parts) if p]


def _flow(text: str, line: int, depth: int = 0) -> Any:
    t = text.strip()
    if depth > _MAX_DEPTH:
        return LocatedStr(t, line)
    if t.startswith("[") and t.endswith("]"):
        return [_flow(p, line, depth + 1) for p in _split_flow(t[1:-1])]
    if t.startswith("{") and t.endswith("}"):
        out: dict[str, Any] = {}
        for p in _split_flow(t[1:-1]):
            key, sep, value = p.partition(":")
            if sep:
                out[str(_scalar(key, line))] = _flow(value, line, depth + 1)
        return out
    return _scalar(t, line)


class _Lines:
    def __init__(self, text: str) -> None:
        self.rows: list[tuple[int, int, str]] = []  # (line number, indent, text without the indent)
        # a block scalar's lines by the line of its key: [(line number, text)], for `run: |` scripts
        self.blocks: dict[int, list[tuple[int, str]]] = {}
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            number = i + 1
            raw = _strip_comment(lines[i].replace("\t", "    "))
            i += 1
            if not raw.strip() or raw.strip() in ("---", "..."):
                continue
            indent = len(raw) - len(raw.lstrip(" "))
            body = raw.strip()
            # a flow collection over several lines: joined into one row
            while body.count("[") + body.count("{") > body.count("]") + body.count("}") and i < len(lines):
                body += " " + _strip_comment(lines[i]).strip()
                i += 1
            # a block scalar (`run: |`): its lines are text, not structure
            if re.search(r"(?:^|:\s|-\s)[|>][+-]?\d*$", body):
                block: list[tuple[int, str]] = []
                while i < len(lines) and (not lines[i].strip()
                                          or len(lines[i]) - len(lines[i].lstrip(" ")) > indent):
                    block.append((i + 1, lines[i]))
                    i += 1
                self.blocks[number] = block
                body = re.sub(r"[|>][+-]?\d*$", "", body).rstrip()
                if body.endswith(":"):
                    body += " ''"
            self.rows.append((number, indent, body))
        self.i = 0


def _block(src: _Lines, indent: int, depth: int) -> Any:
    """The block that starts at the current row, whose rows are indented ``indent``."""
    if src.i >= len(src.rows) or depth > _MAX_DEPTH:
        return None
    if src.rows[src.i][2].startswith("- ") or src.rows[src.i][2] == "-":
        return _sequence(src, indent, depth)
    return _mapping(src, indent, depth)


def _value(src: _Lines, number: int, rest: str, indent: int, depth: int) -> Any:
    """The value after `key:`: inline, or the indented block below."""
    if rest:
        return _flow(rest, number, depth)
    if src.i < len(src.rows):
        child = src.rows[src.i][1]
        # a sequence may sit at the key's own indent (`key:\n- a`)
        if child > indent or (child == indent and src.rows[src.i][2].startswith("-")):
            return _block(src, child, depth + 1)
    return LocatedStr("", number)


_KEY = re.compile(r"""^("[^"]*"|'[^']*'|[^\s:"'][^:]*?)\s*:(?:\s+(.*))?$""")


def _mapping(src: _Lines, indent: int, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while src.i < len(src.rows):
        number, ind, body = src.rows[src.i]
        if ind != indent or body.startswith("- "):
            break
        src.i += 1
        m = _KEY.match(body)
        if m is None:
            continue
        out[str(_scalar(m.group(1), number))] = _value(src, number, (m.group(2) or "").strip(), indent, depth)
    return out


def _sequence(src: _Lines, indent: int, depth: int) -> list[Any]:
    out: list[Any] = []
    while src.i < len(src.rows):
        number, ind, body = src.rows[src.i]
        if ind != indent or not (body.startswith("- ") or body == "-"):
            break
        rest = body[1:].strip()
        if not rest:
            src.i += 1
            out.append(_block(src, src.rows[src.i][1], depth + 1) if src.i < len(src.rows)
                       and src.rows[src.i][1] > indent else None)
            continue
        if _KEY.match(rest) and not rest.startswith(("[", "{", "\"", "'")):
            # `- key: value` and the keys under it: a mapping indented to the first key
            src.rows[src.i] = (number, indent + 2 + (len(body[1:]) - len(body[1:].lstrip(" ")) - 1), rest)
            out.append(_mapping(src, src.rows[src.i][1], depth + 1))
            continue
        src.i += 1
        out.append(_flow(rest, number, depth))
    return out


def read_yaml_lines(text: str) -> Any:
    """The block-YAML subset of a workflow as dicts, lists and LocatedStr (each scalar with its line)."""
    return _read(_Lines(text))


def _read(src: _Lines) -> Any:
    if not src.rows:
        return {}
    return _block(src, src.rows[0][1], 0)


def _strings(value: Any) -> list[LocatedStr]:
    if isinstance(value, LocatedStr):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, LocatedStr)]
    return []


_MATRIX_REF = re.compile(r"^\$\{\{\s*matrix\.([\w-]+)\s*\}\}$")


def _script(run: Any, blocks: dict[int, list[tuple[int, str]]]) -> list[PipInstall]:
    """The pip commands of a ``run:`` value: a one-line command, or a block's lines; a line ending in a
    backslash goes on, any other ends the command."""
    if not isinstance(run, LocatedStr):
        return []
    lines = blocks.get(run.line) or [(run.line, str(run))]
    out: list[PipInstall] = []
    command: list[tuple[int, str]] = []
    for number, text in lines:
        text = text.rstrip()
        if text.endswith("\\"):
            command.append((number, text[:-1]))
            continue
        command.append((number, text))
        out += pip_commands(command)
        command = []
    return out + (pip_commands(command) if command else [])


def read_workflow(text: str) -> tuple[WorkflowJob, ...]:
    src = _Lines(text)
    doc = _read(src)
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, dict):
        return ()
    out: list[WorkflowJob] = []
    for name, job in jobs.items():
        if not isinstance(job, dict):
            continue
        strategy = job.get("strategy")
        matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
        values: dict[str, list[LocatedStr]] = {}
        if isinstance(matrix, dict):
            for key, v in matrix.items():
                if key in ("include", "exclude"):
                    continue
                values.setdefault(key, []).extend(_strings(v))
            for entry in matrix.get("include", []) if isinstance(matrix.get("include"), list) else []:
                if isinstance(entry, dict):
                    for key, v in entry.items():
                        values.setdefault(key, []).extend(_strings(v))
        labels: list[LocatedStr] = []
        runs_on = job.get("runs-on")
        if isinstance(runs_on, dict):  # `runs-on: {group: ..., labels: [...]}`
            runs_on = runs_on.get("labels")
        for label in _strings(runs_on):
            ref = _MATRIX_REF.match(label)
            labels += values.get(ref.group(1), []) if ref else [label]
        inputs: list[tuple[str, LocatedStr]] = []
        pythons: list[LocatedStr] = []
        pip: list[tuple[str, PipInstall]] = []
        defaults = job.get("defaults")
        run_defaults = defaults.get("run") if isinstance(defaults, dict) else None
        job_dir = run_defaults.get("working-directory") if isinstance(run_defaults, dict) else None
        for step in job.get("steps", []) if isinstance(job.get("steps"), list) else []:
            if not isinstance(step, dict):
                continue
            where = step.get("working-directory", job_dir)
            pip += [(str(where) if isinstance(where, LocatedStr) else "", c) for c in _script(step.get("run"), src.blocks)]
            if not isinstance(step.get("uses"), str):
                continue
            action = str(step["uses"]).split("@", 1)[0].rstrip("/")
            given: dict[str, Any] = step["with"] if isinstance(step.get("with"), dict) else {}
            if action == "actions/setup-python":
                for version in _strings(given.get("python-version")):
                    ref = _MATRIX_REF.match(version)
                    pythons += values.get(ref.group(1), []) if ref else [version]
            if action.rsplit("/", 1)[-1] != "ortdoctor" or not given:
                continue
            inputs += [(k, v) for k, v in given.items() if isinstance(v, LocatedStr)]
        out.append(WorkflowJob(str(name), tuple(labels), tuple((k, tuple(v)) for k, v in values.items()),
                               tuple(inputs), tuple(pythons), tuple(pip)))
    return tuple(out)
