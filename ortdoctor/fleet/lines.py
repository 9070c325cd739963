"""Put ortdoctor reports back together from the lines of a log, stream by stream.

A line may carry the prefixes tools put before it: kubectl's ``--prefix`` (``[pod/NAME/CONTAINER] ``)
and ``--timestamps``, the container runtime's CRI format (``TIMESTAMP STREAM P|F ``, a long line split
into ``P`` parts), Docker's json-file records, ``srun --label`` (``TASK: ``), or a constant prefix nobody
announced (``docker compose logs``). Each stream (a pod, a Slurm task, a prefix) collects its own
report, so lines of many streams interleaved still give whole reports. A report is one compact line,
or pretty-printed lines up to a ``}`` in column 0. What is not a report is counted; a report cut off or
not valid JSON is handed to ``on_broken``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ortdoctor.fleet.decode import loads
from ortdoctor.fleet.model import NotAReport

__all__ = ["MAX_REPORT_BYTES", "LineReader", "loads", "pod_name", "read_stream"]

MAX_REPORT_BYTES = 64 * 1024 * 1024  # one report larger than this is not one (a runaway stream)

# One regular expression for every known line prefix, each part optional, in the order tools stack
# them: kubectl's --prefix, srun's --label, a timestamp (kubectl --timestamps, CRI), CRI's stream and
# partial-line tag.
_PREFIX = re.compile(
    r"(?:\[(?P<pod>[^\]\s]+)\] )?"
    r"(?: *(?P<task>\d+): )?"
    r"(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? )?"
    r"(?:(?P<stream>stdout|stderr) (?P<tag>[FP]) )?"
)
_CRI_TAG = re.compile(r"(stdout|stderr) ([FP]) ")
_DOCKER_JSON_START = '{"log":'


@dataclass
class _Open:
    """A report being put together from the lines of one stream."""

    start: int  # line number of its first line
    prefix: str  # an unknown constant prefix to strip from its lines ("" when none)
    parts: list[str] = field(default_factory=list)
    size: int = 0
    confirmed: bool = False  # its second line is a report's first field, not some other JSON or code
    invalid: str | None = None  # why the text up to its last "}" in column 0 is not JSON (then it is not cut off)


class LineReader:
    """Turns the lines of one input into reports (and broken reports), stream by stream."""

    def __init__(self, name: str, on_report: Callable[[Any, str, str | None], None],
                 on_broken: Callable[[str, str, str | None], None], decode: Callable[[str], Any] = loads) -> None:
        self.name = name
        self.decode = decode  # a report's text -> its JSON (ValueError when it is not JSON)
        self.on_report = on_report
        self.on_broken = on_broken
        self.open: dict[str, dict[str, _Open]] = {}  # stream key -> unknown prefix -> report in progress
        self.partial: dict[str, str] = {}  # stream key -> CRI "P" parts waiting for their "F"
        self.reports = 0
        self.broken = 0
        self.other = 0  # lines that are neither reports nor parts of one
        self.not_reports = 0  # JSON objects that are something else (structured log lines)
        self.first_other: str | None = None
        self.why_not: str | None = None  # why the first JSON object that is not a report is not one
        self.stopped_at: int | None = None  # the line of compressed input where reading stopped (too long)
        # streams that name a node (a pod, a Slurm task): the first line each printed, and those that
        # gave a report (or a broken one); one that printed only other lines is a node without a report
        self.said: dict[str, tuple[int, str]] = {}
        self.answered: set[str] = set()

    # -- one line ------------------------------------------------------------------------------
    def line(self, lineno: int, raw: str) -> None:
        line = raw.rstrip("\r\n")
        if line[:5] == "[pod/":
            # kubectl --prefix (and --timestamps): by far the commonest prefixed line, taken apart without
            # the regular expression, and a line inside an open report appended straight away
            close = line.find("] ", 5)
            if close > 0:
                key, text = line[1:close], line[close + 2:]
                if text[:2].isdigit() and text[4:5] == "-" and text[10:11] == "T":
                    space = text.find(" ")
                    text = text[space + 1:] if space > 0 else ""
                rep = self.open[key].get("") if key in self.open else None
                first = text[:1]
                if rep is not None and rep.confirmed and first != "{" and first != "}" and key not in self.partial:
                    rep.parts.append(text)
                    rep.size += len(text) + 1
                    if rep.size <= MAX_REPORT_BYTES:
                        return
                    rep.parts.pop()
                    rep.size -= len(text) + 1
                if _CRI_TAG.match(text):
                    self._cri(lineno, key, text)
                else:
                    self.content(lineno, key, text, partial=False)
                return
        if line.startswith(_DOCKER_JSON_START):
            decoded = self._docker_json(line)
            if decoded is not None:
                stream, text = decoded
                # json-file splits long lines as CRI does: a part without the final newline is partial
                self.content(lineno, f"docker:{stream}", text.rstrip("\n"), partial=not text.endswith("\n"))
                return
        m = _PREFIX.match(line)
        end = m.end() if m is not None else 0
        if end == 0:
            self.content(lineno, "", line, partial=False)
            return
        pod, task, stream, tag = m.groups()  # type: ignore[union-attr]
        key = pod or ""
        if task is not None:
            key += f"task {task}"
        if stream:
            key += f":{stream}"
        self.content(lineno, key, line[end:], partial=tag == "P")

    def _cri(self, lineno: int, key: str, text: str) -> None:
        m = _CRI_TAG.match(text)
        assert m is not None
        self.content(lineno, f"{key}:{m.group(1)}", text[m.end():], partial=m.group(2) == "P")

    @staticmethod
    def _docker_json(line: str) -> tuple[str, str] | None:
        try:
            rec = loads(line)
        except ValueError:
            return None
        if isinstance(rec, dict) and isinstance(rec.get("log"), str) and "schema_version" not in rec:
            return str(rec.get("stream") or "stdout"), rec["log"]
        return None

    def content(self, lineno: int, key: str, text: str, *, partial: bool) -> None:
        """One line of stream ``key``, its prefixes taken off (``partial``: a CRI "P" part)."""
        if partial:
            joined = self.partial.get(key, "") + text
            if len(joined) > MAX_REPORT_BYTES:  # "P" parts that never end: a runaway line, not a report
                del self.partial[key]
                self.too_long(lineno, joined[:_HEAD], key)
                return
            self.partial[key] = joined
            return
        if key in self.partial:
            text = self.partial.pop(key) + text
        # a report in progress on this stream takes the line (stripping its own constant prefix)
        reps = self.open.get(key)
        if reps:
            for prefix, rep in reps.items():
                if not prefix or text.startswith(prefix):
                    self._add(lineno, key, rep, text[len(prefix):])
                    return
        stripped = text.strip()
        if stripped == "{":
            self._begin(lineno, key, "")
            return
        if stripped.startswith("{"):
            self.one_line(lineno, key, stripped)
            return
        # a report after a prefix nobody announced: "svc-1  | {" or "... {"schema_version": 2, ...}"
        at = text.find('{"schema_version"')
        if at > 0 and text.rstrip().endswith("}"):
            self.one_line(lineno, key, text[at:].rstrip())
            return
        if text.endswith("{") and text.strip() != "{":
            self._begin(lineno, key, text[:-1])
            return
        self._other(text, lineno, key)

    def too_long(self, lineno: int, head: str, key: str | None = None) -> None:
        """A line longer than :data:`MAX_REPORT_BYTES` (``head``: its start): a report it belongs to, or
        starts, is broken; anything else is one more other line."""
        if key is None:
            key = self._key(head)
        self.partial.pop(key, None)
        why = f"larger than {MAX_REPORT_BYTES // (1024 * 1024)} MiB: not a report"
        reps = self.open.pop(key, None)
        if reps:
            for rep in reps.values():
                if rep.confirmed:
                    self._broken(key, rep, why)
                else:
                    self._other(rep.prefix + "{")
        elif "{" in head:
            self._broken_at(lineno, key, why)
        else:
            self._other(head, lineno, key)

    @staticmethod
    def _key(line: str) -> str:
        """The stream a line belongs to, from its prefixes (as :meth:`line` reads them)."""
        if line[:5] == "[pod/":
            close = line.find("] ", 5)
            if close > 0:
                return line[1:close]
        m = _PREFIX.match(line)
        if m is None or m.end() == 0:
            return ""
        pod, task, stream, _tag = m.groups()
        return (pod or "") + (f"task {task}" if task is not None else "") + (f":{stream}" if stream else "")

    def _other(self, text: str, lineno: int = 0, key: str = "") -> None:
        if text.strip():
            self.other += 1
            if self.first_other is None:
                self.first_other = text.strip()[:120]
            if key:
                self._said(key, lineno, text.strip()[:200])

    def _said(self, key: str, lineno: int, what: str) -> None:
        """Remember the first thing a named stream (a pod, a task) printed that is not a report."""
        node = _node_stream(key)
        if node not in self.said and _stream_name(node) is not None:
            self.said[node] = (lineno, what)

    def _begin(self, lineno: int, key: str, prefix: str) -> None:
        self.open.setdefault(key, {})[prefix] = _Open(start=lineno, prefix=prefix, parts=["{"], size=1)

    def _close(self, key: str, rep: _Open) -> None:
        reps = self.open[key]
        del reps[rep.prefix]
        if not reps:
            del self.open[key]

    def _add(self, lineno: int, key: str, rep: _Open, text: str) -> None:
        if not rep.confirmed:
            # ortdoctor's report opens with "schema_version"; other pretty JSON is read to its end and
            # then set aside, a stray "{" after an unknown prefix (code in a log) is dropped at once
            if '"schema_version"' in text or (not rep.prefix and text[:1].isspace() and '"' in text):
                rep.confirmed = True
            else:
                self._close(key, rep)
                self._other(rep.prefix + "{")
                self.content(lineno, key, rep.prefix + text if rep.prefix else text, partial=False)
                return
        elif text[:1] == "{" and text.rstrip() == "{":
            # a new report began where the last one was still open: that one was cut off (or invalid)
            self._close(key, rep)
            self._broken(key, rep, _invalid(rep) or
                         f"cut off after line {lineno - 1} (a new report starts at line {lineno})")
            self._begin(lineno, key, rep.prefix)
            return
        rep.parts.append(text)
        rep.size += len(text) + 1
        if rep.size > MAX_REPORT_BYTES:
            self._close(key, rep)
            self._broken(key, rep, f"larger than {MAX_REPORT_BYTES // (1024 * 1024)} MiB: not a report")
            return
        # json.dumps(indent=...) and jq close the top-level object with "}" alone in column 0
        if text[:1] == "}" and text.rstrip() == "}":
            try:
                data = self.decode("\n".join(rep.parts))
            except ValueError as exc:
                # not the end after all, or not JSON: keep collecting; at the end of the input it is named
                # invalid (with this error) rather than cut off
                rep.invalid = str(exc)
                return
            self._close(key, rep)
            self.report(rep.start, key, data)

    def one_line(self, lineno: int, key: str, text: str) -> None:
        try:
            data = self.decode(text)
        except ValueError as exc:
            if '"schema_version"' in text[:64]:
                self._broken_at(lineno, key, f"not valid JSON ({exc})")
            else:
                self._other(text, lineno, key)
            return
        self.report(lineno, key, data)

    def report(self, lineno: int, key: str, data: Any) -> None:
        where = f"{self.name}:{lineno}" + (f" [{key}]" if key else "")
        try:
            self.on_report(data, where, pod_name(key))
        except NotAReport as exc:
            self.not_reports += 1
            if self.why_not is None:
                self.why_not = f"line {lineno}: {exc}"
            self._said(key, lineno, f"JSON that is not a report ({exc})")
            return
        self.answered.add(_node_stream(key))
        self.reports += 1

    def _broken(self, key: str, rep: _Open, why: str) -> None:
        self._broken_at(rep.start, key, why)

    def _broken_at(self, lineno: int, key: str, why: str) -> None:
        self.answered.add(_node_stream(key))
        where = f"{self.name}:{lineno}" + (f" [{key}]" if key else "")
        self.broken += 1
        self.on_broken(where, f"the report starting at line {lineno} is {why}", pod_name(key))

    def finish(self, last_line: int) -> None:
        for key, rest in list(self.partial.items()):  # a CRI "P" part never completed
            del self.partial[key]
            self.content(last_line, key, rest, partial=False)
        for key, reps in list(self.open.items()):
            for rep in list(reps.values()):
                if rep.confirmed:
                    self._broken(key, rep, _invalid(rep) or f"cut off at the end of the input (line {last_line})")
                else:
                    self._other(rep.prefix + "{")
        self.open.clear()
        for key, (lineno, text) in self.said.items():
            if key not in self.answered:
                self.broken += 1
                self.on_broken(f"{self.name}:{lineno} [{key}]", f"no report: its output was {text!r}",
                               _stream_name(key))


def _invalid(rep: _Open) -> str | None:
    return f"not valid JSON ({rep.invalid})" if rep.invalid is not None else None


def _node_stream(key: str) -> str:
    """The node's stream of a line's stream: a pod's or a task's stdout and stderr are one."""
    return key.removesuffix(":stdout").removesuffix(":stderr")


def _stream_name(key: str) -> str | None:
    """What names the node of a stream: the pod of a kubectl prefix, the task of ``srun --label``."""
    if key.startswith("pod/"):
        return pod_name(key)
    at = key.find("task ")
    return key[at:] if at >= 0 else None


def pod_name(key: str) -> str | None:
    """A name for a node whose report has no host section: the pod of a kubectl prefix."""
    if key.startswith("pod/"):
        parts = key.split("/")
        return parts[1] if len(parts) > 1 else None
    return None


_BLOCK = 1 << 20  # characters read at a time: lines are split out of blocks, never read whole first
_HEAD = 4096  # what is kept of a line longer than MAX_REPORT_BYTES, to say what it was


class _TooLong(str):
    """The head of a line longer than :data:`MAX_REPORT_BYTES`; the rest was read past, never held."""


def _lines(stream: IO[str], first: str = "") -> Iterator[list[str]]:
    """The lines of ``stream`` (without their newline), a block at a time, in memory bounded by
    :data:`MAX_REPORT_BYTES` however long a line is (a 1 GB line, or 1 MB of gzip that unpacks to one):
    a longer line comes as a :class:`_TooLong` with its head, alone in its list, and the rest of it is
    skipped block by block."""
    pending: list[str] = []  # the unfinished last line, in pieces
    size = 0
    skipping = False  # inside a line already reported too long: drop up to its newline
    while True:
        block, first = first or stream.read(_BLOCK), ""
        if not block:
            break
        if skipping:
            end = block.find("\n")
            if end < 0:
                continue
            block, skipping = block[end + 1:], False
        parts = block.split("\n")
        if len(parts) == 1:  # no line ends in this block
            pending.append(block)
            size += len(block)
            if size > MAX_REPORT_BYTES:
                yield [_head(pending)]
                pending, size, skipping = [], 0, True
            continue
        if pending:
            pending.append(parts[0])
            if size + len(parts[0]) <= MAX_REPORT_BYTES:
                parts[0] = "".join(pending)
            else:
                yield [_head(pending)]  # alone in its list: a list of more lines never holds one
                del parts[0]
        last = parts.pop()
        pending, size = ([last], len(last)) if last else ([], 0)
        yield parts
    if pending:
        yield ["".join(pending)]


def _head(pieces: list[str]) -> _TooLong:
    """The start of a line given in pieces, without joining the whole of it."""
    head = ""
    for piece in pieces:
        head += piece[:_HEAD - len(head)]
        if len(head) >= _HEAD:
            break
    return _TooLong(head)


def read_stream(name: str, stream: IO[str], *, on_report: Callable[[Any, str, str | None], None],
                on_broken: Callable[[str, str, str | None], None], compressed: bool = False,
                decode: Callable[[str], Any] = loads) -> LineReader:
    """Feed the lines of one input through the reader; returns it, with its counts. Nothing is held
    beyond :data:`MAX_REPORT_BYTES` per report being put together (a line longer than that, or a report
    without its end, is a broken report). In ``compressed`` input such a line ends the reading
    (``reader.stopped_at``): skipping it would mean unpacking all of it, and 1 MB of gzip holds 1 GB."""
    reader = LineReader(name, on_report, on_broken, decode)
    first = stream.read(_BLOCK)
    if len(first) < _BLOCK and first[:2] == "{\n" and first[-3:] == "\n}\n":
        # the whole input is one pretty report, the commonest file of all (`check --json > node.json`):
        # decoded without taking it apart into lines. Where the whole decodes, the line-by-line path
        # gives this same one report (an earlier "}" line can only be a nested object's end then)
        try:
            data = decode(first)
        except ValueError:
            pass  # read line by line below, to say what is wrong with it
        else:
            reader.report(1, "", data)
            return reader
    lineno = 0  # the lines before this block
    # a pretty report without prefixes being collected (a file of its own, or `srun` output): its
    # first line's number, its lines, their size with newlines
    start, parts, size = 0, list[str](), 0
    for block in _lines(stream, first):
        if len(block) == 1 and type(block[0]) is _TooLong:
            if parts:  # the report being collected ends in a line too long: replayed line by line
                _replay(reader, start, parts)
                parts, size = [], 0
            lineno += 1
            reader.too_long(lineno, block[0])
            if compressed:
                reader.stopped_at = lineno
                break
            continue
        i, n = 0, len(block)
        while i < n:
            if not parts:
                line = block[i]
                if line[:2] == '{"' and not reader.open and not reader.partial \
                        and not line.startswith(_DOCKER_JSON_START):
                    # a compact report (JSON lines), the line path's own way without its detours
                    reader.one_line(lineno + i + 1, "", line.strip())
                    i += 1
                    continue
                if line != "{" or "" in reader.open:
                    reader.line(lineno + i + 1, line)
                    i += 1
                    continue
                start = lineno + i + 1
            # A pretty report's lines are taken as they are up to the closing "}" in column 0 (found
            # without a look at every line), and parsed at once. Anything odd (cut off, not JSON, too
            # large) is replayed through the line-by-line path, which knows what to make of it.
            try:
                end = block.index("}", i + 1 if not parts else i) + 1
            except ValueError:
                end = n
            taken = block[i:end]
            parts += taken
            size += sum(map(len, taken)) + len(taken)
            i = end
            if size > MAX_REPORT_BYTES:
                _replay(reader, start, parts)
                parts, size = [], 0
            elif parts[-1] == "}" and len(parts) > 1:
                text = "\n".join(parts)
                try:
                    data = decode(text)
                except ValueError:
                    _replay(reader, start, parts)
                else:
                    reader.report(start, "", data)
                parts, size = [], 0
        lineno += n
    if parts:  # the input ended inside the report
        _replay(reader, start, parts)
    reader.finish(lineno)
    return reader


def _replay(reader: LineReader, start: int, parts: list[str]) -> None:
    """Lines taken for a pretty report that is not whole, given to the line-by-line path."""
    for k, part in enumerate(parts):
        reader.line(start + k, part)
