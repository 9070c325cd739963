"""Read the reports nodes wrote and merge them into one :class:`~ortdoctor.fleet.model.FleetReport`.

Reports arrive however a cluster collects stdout:

* one report per file (``check --json > node-17.json``), or a directory of them;
* many in one file: JSON lines, or pretty-printed reports one after another (``srun ... check --json``);
* logs where the reports' lines carry prefixes and sit among other lines: ``kubectl logs --prefix``
  (``[pod/ortdoctor-x7k2p/ortdoctor] {``), ``--timestamps`` (``2026-12-01T10:00:00.123Z {``), the
  container runtime's own files (CRI: ``2026-12-01T10:00:00Z stdout F {``, long lines split into ``P``
  parts; Docker's json-file: ``{"log":"{\\n","stream":"stdout",...}``), ``srun --label`` (``3: {``) and
  any other constant prefix (``docker compose logs``: ``ortdoctor-1  | {``);
* gzip-compressed files, and standard input (``-``).

The lines of each stream (a pod, a Slurm task) are put back together separately, so logs of many pods
interleaved line by line still give whole reports. Reports are read one at a time and only their
essentials kept, so memory stays small for thousands of nodes. What is not a report is skipped and
counted; what is a broken report (cut off, invalid JSON) becomes a node with status ``error``, because
a node whose report was lost is a node nobody has checked. A named file holding no report at all is an
input error (:class:`InputError`).
"""

from __future__ import annotations

import gzip
import io
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from ortdoctor.fleet import lines
from ortdoctor.fleet.decode import ReportDecoder
from ortdoctor.fleet.lines import LineReader, read_stream
from ortdoctor.fleet.model import FleetReport, Memo, NodeResult, node_from_report, node_without_report

__all__ = ["InputError", "ReadResult", "merge", "read_nodes"]

_SNIFF = 8192


class InputError(Exception):
    """An input cannot be used at all: unreadable, binary, or holding no report. The message says which
    and why."""


@dataclass
class ReadResult:
    nodes: list[NodeResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------------
def _open_text(path: str, stdin: IO[bytes] | None) -> tuple[str, IO[str], IO[bytes] | None]:
    """Open ``path`` (``-``: standard input) as text, undoing gzip; refuse binary input. The third
    item is the file to close (None for standard input)."""
    if path == "-":
        raw: IO[bytes] = stdin if stdin is not None else sys.stdin.buffer
        name = "<stdin>"
    else:
        try:
            raw = open(path, "rb")  # a pipe is fine too: `fleet merge <(kubectl logs ...)`
        except IsADirectoryError:
            raise InputError(f"{path}: is a directory") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None
        name = path
    owned = raw if path != "-" else None
    try:
        buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[type-var]
        try:
            head = buffered.peek(_SNIFF)[:_SNIFF]
        except OSError as exc:
            raise InputError(f"{name}: cannot be read: {exc}") from None
        if head[:2] == b"\x1f\x8b":
            stream: IO[bytes] = gzip.GzipFile(fileobj=buffered)  # type: ignore[assignment]
            try:
                head = stream.peek(_SNIFF)[:_SNIFF]  # type: ignore[attr-defined]
            except (OSError, EOFError) as exc:
                raise InputError(f"{name}: a broken gzip file: {exc}") from None
        else:
            stream = buffered
        # Windows PowerShell's `>` writes UTF-16 with a byte order mark, some editors UTF-8 with one
        if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            encoding = "utf-16"
        elif head[:3] == b"\xef\xbb\xbf":
            encoding = "utf-8-sig"
        else:
            encoding = "utf-8"
            if b"\0" in head:
                raise InputError(f"{name}: a binary file, not ortdoctor reports or a log holding them")
    except BaseException:
        if owned is not None:
            owned.close()
        raise
    return name, io.TextIOWrapper(stream, encoding=encoding, errors="replace"), owned


def _expand(paths: Sequence[str]) -> Iterator[tuple[str, bool]]:
    """(path, named): every path, directories replaced by the regular files under them, sorted."""
    for p in paths:
        if p != "-" and os.path.isdir(p):
            files: list[str] = []
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                files.extend(os.path.join(root, n) for n in names
                             if not n.startswith(".") and os.path.isfile(os.path.join(root, n)))
            if not files:
                raise InputError(f"{p}: an empty directory")
            for f in sorted(files):
                yield f, False
        else:
            yield p, True


def read_nodes(paths: Sequence[str], *, stdin: IO[bytes] | None = None) -> ReadResult:
    """Every node in ``paths`` (files, directories, ``-``), in input order, with notes on what was skipped.

    Raises:
        InputError: a path cannot be read, is binary, or (named, not found in a directory) holds no
            report; or nothing in all of them is a report.
    """
    if not paths:
        raise InputError("no input: name report files, directories or - for standard input")
    result = ReadResult()
    strings: dict[str, str] = {}

    def intern(s: str) -> str:
        return strings.setdefault(s, s)

    decode = ReportDecoder()  # one for all inputs: a directory's files share their images' text too
    memo = Memo()
    seen: set[Any] = set()
    duplicates = 0
    latest: dict[tuple[Any, ...], int] = {}  # a node's identity -> the index of its latest report so far
    older: list[tuple[NodeResult, NodeResult]] = []  # (left out, kept)

    def on_report(data: Any, where: str, hint: str | None) -> None:
        nonlocal duplicates
        node = node_from_report(data, where, intern=intern, hint=hint, memo=memo)
        # an invalid report is shown as it is, never taken for a copy of a valid one (or the other way)
        fingerprint = _fingerprint(data) if node.reason is None else None
        if fingerprint is not None:
            if fingerprint in seen:
                duplicates += 1
                return
            seen.add(fingerprint)
        taken = node.taken_at
        ident = _identity(data) if taken is not None and node.reason is None else None
        if ident is not None and taken is not None:
            at = latest.get(ident)
            if at is not None:  # the same node checked again: keep the report taken last
                kept = result.nodes[at]
                if (kept.taken_at or "") >= taken:
                    older.append((node, kept))
                    return
                older.append((kept, node))
                result.nodes[at] = node
                return
            latest[ident] = len(result.nodes)
        result.nodes.append(node)

    def on_broken(where: str, why: str, hint: str | None) -> None:
        result.nodes.append(node_without_report(where, "error", why, hint=hint))

    skipped_files = []
    for path, named in _expand(paths):
        name, text, owned = _open_text(path, stdin)
        try:
            reader = read_stream(name, text, on_report=on_report, on_broken=on_broken,
                                 compressed=isinstance(getattr(text, "buffer", None), gzip.GzipFile), decode=decode)
        except (OSError, EOFError) as exc:  # EOFError: a gzip file cut short
            raise InputError(f"{name}: cannot be read: {exc}") from None
        finally:
            if owned is not None:
                text.close()
                owned.close()
        if reader.stopped_at is not None:
            result.notes.append(f"{name}: not read past line {reader.stopped_at}, a line longer than "
                                f"{lines.MAX_REPORT_BYTES // (1024 * 1024)} MiB unpacked")
        if reader.reports == 0 and reader.broken == 0:
            why = _why_nothing(reader)
            if named:
                raise InputError(f"{name}: no ortdoctor report found ({why}). Expected the output of "
                                 "`ortdoctor check --json`: one JSON object, JSON lines, or a log holding them.")
            skipped_files.append(f"{name} ({why})")
            continue
        if reader.other or reader.not_reports:
            parts = []
            if reader.other:
                parts.append(f"{reader.other} other line{'s' if reader.other != 1 else ''}")
            if reader.not_reports:
                parts.append(f"{reader.not_reports} JSON object{'s' if reader.not_reports != 1 else ''} "
                             "that are not reports")
            result.notes.append(f"{name}: skipped {' and '.join(parts)}")
    if skipped_files:
        result.notes.append(f"skipped {len(skipped_files)} file{'s' if len(skipped_files) != 1 else ''} "
                            "holding no report: " + "; ".join(skipped_files[:5])
                            + (f" and {len(skipped_files) - 5} more" if len(skipped_files) > 5 else ""))
    if duplicates:
        result.notes.append(f"left out {duplicates} report{'s' if duplicates != 1 else ''} seen twice "
                            "(the same node, the same run)")
    if older:
        result.notes.append(_older_note(older))
    if not result.nodes:
        raise InputError("no ortdoctor report in the input"
                         + (f": {result.notes[-1]}" if result.notes else ""))
    return result


def _why_nothing(reader: LineReader) -> str:
    if reader.why_not:
        return reader.why_not
    if reader.first_other is not None:
        return f"{reader.other} line{'s' if reader.other != 1 else ''} of something else, the first: {reader.first_other!r}"
    return "it is empty"


def _fingerprint(data: Any) -> Any:
    """The same node's same run seen twice (a log collected twice) has the same host and timings."""
    host = data.get("host") if isinstance(data, dict) else None
    timings = data.get("timings_ms")
    if not isinstance(host, dict) or not isinstance(timings, dict) or not timings:
        return None
    ident = tuple(map(host.get, _FINGERPRINT_HOST))  # strings, numbers or None: host_of checked them
    try:
        return ident, frozenset(timings.items())
    except TypeError:  # a timing that is not a number (a broken report): compared as text
        return ident, frozenset((k, str(v)) for k, v in timings.items())


_FINGERPRINT_HOST = ("machine_id", "boot_id", "hostname", "k8s_pod_name", "slurm_job_id", "slurm_procid",
                     "ray_node_id")


# what tells one node's runs from another node: the machine, its boot, its name, and (on one machine)
# the Slurm task, the Ray node and the Python that ran the check
_IDENTITY_HOST = ("machine_id", "boot_id", "hostname", "name", "slurm_procid", "ray_node_id")


def _identity(data: Any) -> tuple[Any, ...] | None:
    """The node a report is of, where the report says (its host section): None when it cannot tell."""
    host = data.get("host") if isinstance(data, dict) else None
    if not isinstance(host, dict) or not (host.get("machine_id") or host.get("boot_id") or host.get("hostname")):
        return None
    python = data.get("python")
    exe = python.get("executable") if isinstance(python, dict) else None
    return (*[v or "" for v in map(host.get, _IDENTITY_HOST)], str(exe or ""))


def _older_note(older: list[tuple[NodeResult, NodeResult]]) -> str:
    def name(n: NodeResult) -> str:
        return str(n.host.get("name") or n.host.get("hostname") or n.source)

    shown = [f"{name(old)} taken {old.taken_at} ({old.source}; kept {new.taken_at})" for old, new in older[:5]]
    more = f" and {len(older) - 5} more" if len(older) > 5 else ""
    return (f"left out {len(older)} older report{'s' if len(older) != 1 else ''} of the same node"
            f"{'s' if len(older) != 1 else ''}, keeping each node's latest: " + "; ".join(shown) + more)


def merge(paths: Sequence[str], *, stdin: IO[bytes] | None = None, min_driver: Any = None) -> FleetReport:
    """Read ``paths`` and summarize them as one fleet (see :func:`ortdoctor.fleet.drift.summarize`).

    Raises:
        InputError: see :func:`read_nodes`.
    """
    from ortdoctor.fleet.drift import summarize

    read = read_nodes(paths, stdin=stdin)
    return summarize(read.nodes, notes=read.notes, min_driver=min_driver)
