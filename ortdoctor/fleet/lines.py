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
from itertools import repeat, takewhile
from operator import itemgetter
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
# a line that might be taken for a timestamped one (digits at 0 and 1, "-" at 4, "T" at 10)
_STAMP_LINE = re.compile(r"\n[^\n]{4}-[^\n]{5}T")
_MAX_PODS = 256  # pods coming round in turn that pod_lines follows (kubectl's --max-log-requests is 5 by default)
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
        # inside pod_lines: what the lines trigger, held to be replayed in line order (see _hold)
        self._held: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] | None = None
        self._now = 0  # the line pod_lines is reading
        # the line each stream's entry in open and in partial was made at: finish() takes them in that
        # order, the order lines read one by one make them in (pod_lines takes a pod's lines together)
        self.since: dict[str, int] = {}
        self.since_partial: dict[str, int] = {}

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
                self._pod_text(lineno, key, text)
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

    def _pod_text(self, lineno: int, key: str, text: str) -> None:
        """One line of pod ``key``, kubectl's prefix and timestamp taken off."""
        reps = self.open.get(key)
        rep = reps.get("") if reps else None
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

    # -- kubectl --prefix lines, many at a time ---------------------------------------------------
    def pod_lines(self, block: list[str], i: int, lineno: int) -> int:
        """Take lines of ``block`` from ``i`` on (``lineno``: the number of lines before the block) that
        carry kubectl's ``--prefix``; returns the index of the first line not taken (more than ``i``).

        ``kubectl logs -f`` of many pods interleaves their lines as they arrive: in runs of one pod, or
        round the pods in turn. Where the pods come round in the same order (a run is one pod coming
        round alone), each pod's lines of the stretch are taken together: their prefixes checked and
        stripped by C-level string calls and the lines inside an open report appended as one piece.
        A per-line Python loop costs more than decoding the reports (a pretty report is some 800
        lines). The result is what :meth:`line` gives for each line in turn: what a line triggers (a
        report, a broken one, an other line) is held and replayed in line order after the stretch."""
        n = len(block)
        keys: list[str] = []
        checks: list[str] = []  # what each pod's lines start with: its prefix, and its timestamp's date
        stamped: list[bool] = []
        j = i
        while j < n and j - i < _MAX_PODS:
            line = block[j]
            close = line.find("] ", 5) if line[:5] == "[pod/" else -1
            if close < 0:
                break
            key = line[1:close]
            if key in keys:
                break
            text = line[close + 2:close + 13]
            stamp = text[:2].isdigit() and text[4:5] == "-" and text[10:11] == "T"
            keys.append(key)
            checks.append(line[:close + 2] + (text if stamp else ""))
            stamped.append(stamp)
            j += 1
        pods = len(keys)
        rows = self._rows(block, i, checks) if pods else 0
        if rows < 2:  # no steady order here: the first round line by line
            for k in range(i, max(j, i + 1)):
                self.line(lineno + k + 1, block[k])
            return max(j, i + 1)
        events: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._held = events
        try:
            for s, key in enumerate(keys):
                lines = block[i + s:i + s + rows * pods:pods]
                width = len(checks[s]) - (11 if stamped[s] else 0)  # the prefix
                if stamped[s]:
                    chunk = _unstamped(lines, width)
                else:
                    chunk = ("\n" + "\n".join(lines)).replace("\n" + checks[s], "\n")[1:]
                if "\r" in chunk or (not stamped[s] and _STAMP_LINE.search("\n" + chunk)):
                    # CRLF line ends, or a line the line path would take for a timestamped one
                    for k, raw in enumerate(lines):
                        self._now = lineno + i + s + k * pods + 1
                        self.line(self._now, raw)
                    continue
                self._pod_run(key, lineno + i + s + 1, pods, chunk)
        finally:
            self._held = None
        events.sort(key=lambda e: (e[0], e[1]))
        for _at, _seq, call, args in events:
            call(*args)
        return i + rows * pods

    @staticmethod
    def _rows(block: list[str], i: int, checks: list[str]) -> int:
        """How many rounds from ``i`` on each pod's line starts with its check, the pods in turn."""
        pods = len(checks)
        most = (len(block) - i) // pods
        rows, window = 0, 64
        while rows < most:
            upto = min(rows + window, most)
            good = upto
            for s, check in enumerate(checks):
                lines = block[i + s + rows * pods:i + s + good * pods:pods]  # up to where an earlier pod broke off
                if not all(map(str.startswith, lines, repeat(check))):
                    good = rows + len(list(takewhile(bool, map(str.startswith, lines, repeat(check)))))
            if good < upto:
                return good
            rows, window = upto, window * 2
        return rows

    def _pod_run(self, key: str, first: int, step: int, chunk: str) -> None:
        """The lines of pod ``key`` (prefixes off, joined by newlines), the k-th at line ``first + k*step``:
        those inside its open report appended as one piece, the others through :meth:`_pod_text`."""
        pos, k, end = 0, 0, len(chunk)
        opens = closes = -1  # the starts of the next lines opening with "{", with "}" (found again once passed)
        whole = True  # False once a piece would pass MAX_REPORT_BYTES: the rest line by line, as the line path
        while pos <= end:
            reps = self.open.get(key)
            rep = reps.get("") if reps else None
            if whole and rep is not None and rep.confirmed and key not in self.partial:
                if opens < pos:
                    opens = _next_line(chunk, pos, "{")
                if closes < pos:
                    closes = _next_line(chunk, pos, "}")
                brace = min(opens, closes)
                if brace > pos:
                    piece = chunk[pos:brace - 1] if brace <= end else chunk[pos:]
                    if rep.size + len(piece) + 1 <= MAX_REPORT_BYTES:
                        rep.parts.append(piece)
                        rep.size += len(piece) + 1
                        k += piece.count("\n") + 1
                        pos = brace
                        continue
                    whole = False
            stop = chunk.find("\n", pos)
            if stop < 0:
                stop = end
            self._now = first + k * step
            self._pod_text(self._now, key, chunk[pos:stop])
            k += 1
            pos = stop + 1

    def _hold(self, call: Callable[..., None], *args: Any) -> bool:
        """Inside :meth:`pod_lines`: keep ``call(*args)`` for later, at the line being read."""
        held = self._held
        if held is None:
            return False
        held.append((self._now, len(held), call, args))
        return True

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
            if key not in self.partial:
                self.since_partial[key] = lineno
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
        if self._held is not None and self._hold(self._other, text, lineno, key):
            return
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
        if key not in self.open:
            self.since[key] = lineno
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
        if self._held is not None and self._hold(self.report, lineno, key, data):
            return
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
        if self._held is not None and self._hold(self._broken_at, lineno, key, why):
            return
        self.answered.add(_node_stream(key))
        where = f"{self.name}:{lineno}" + (f" [{key}]" if key else "")
        self.broken += 1
        self.on_broken(where, f"the report starting at line {lineno} is {why}", pod_name(key))

    def finish(self, last_line: int) -> None:
        # a CRI "P" part never completed
        for key, rest in sorted(self.partial.items(), key=lambda kv: self.since_partial.get(kv[0], 0)):
            del self.partial[key]
            self.content(last_line, key, rest, partial=False)
        for key, reps in sorted(self.open.items(), key=lambda kv: self.since.get(kv[0], 0)):
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


def _unstamped(lines: list[str], width: int) -> str:
    """``lines`` (each a prefix of ``width`` characters and a timestamp) without those, up to the first
    space after the prefix as :meth:`LineReader.line` strips them, joined by newlines."""
    # kubectl's timestamps (RFC 3339 with nanoseconds) mostly have one length: where every line's first
    # space is where the first line's is, one slice each
    space = lines[0].find(" ", width)
    if space > 0 and list(map(str.find, lines, repeat(" "), repeat(width), repeat(space + 1))) == [space] * len(lines):
        return "\n".join(map(itemgetter(slice(space + 1, None)), lines))
    # their fraction loses its trailing zeros ("...:00.5Z"): a line without a space keeps nothing
    return "\n".join([t[(t.find(" ", width) + 1) or len(t):] for t in lines])


def _next_line(chunk: str, pos: int, first: str) -> int:
    """The start of the first line at or after ``pos`` (a line start) that opens with ``first``; past the
    end when none does."""
    if chunk.startswith(first, pos):
        return pos
    at = chunk.find("\n" + first, pos)
    return at + 1 if at >= 0 else len(chunk) + 1


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


# characters read at a time: lines are split out of blocks, never read whole first; a quarter of a MiB
# keeps a block's line objects in the CPU cache while pod_lines passes over them several times
_BLOCK = 1 << 18
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
                if line[:5] == "[pod/":
                    i = reader.pod_lines(block, i, lineno)
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
