"""Decode thousands of reports that are mostly the same text, each distinct part once.

The nodes of a fleet run the same image: their reports differ in a few top-level fields (``host``,
``taken_at``, ``timings_ms``) and agree, byte for byte, in everything else (the findings, the
libraries, the wheels, the system). :class:`ReportDecoder` cuts a report's text at those few fields,
decodes each of them, and decodes the text between them only the first time it is seen: a later node
with the same text gets the same (shared, never modified) objects. The result equals ``json.loads`` of
the whole text; where the cuts do not fall between top-level fields (another producer's layout, a
field of that name nested deeper) the whole text is decoded as usual.

Why not decode less: the merge needs most of a report, and JSON's own decoder is the fastest reader
the standard library has. What it can skip is decoding the same bytes again.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ReportDecoder", "loads"]

# the top-level fields that differ from node to node of one image (the rest is the image's)
_VOLATILE = ("host", "taken_at", "timings_ms")
_WHITESPACE = " \t\n\r"
_CACHE_CHARS = 8 * 1024 * 1024  # text kept as cache keys at most: memory stays bounded for any fleet

_decoder = json.JSONDecoder()


def loads(text: str) -> Any:
    """``json.loads``, with every way decoding can fail raised as ValueError: JSON nested deeper than
    Python's recursion limit raises RecursionError, and that must cost one report, not the run."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except MemoryError:
        raise ValueError("too large to decode") from None


class ReportDecoder:
    """``json.loads`` for one report's text, sharing what earlier reports already decoded."""

    def __init__(self) -> None:
        self._segments: dict[str, dict[str, Any]] = {}  # the text between cuts -> its fields
        self._chars = 0

    def __call__(self, text: str) -> Any:
        """The decoded ``text`` (a JSON document), as ``json.loads`` gives it.

        Raises:
            ValueError: it is not JSON.
        """
        try:
            data = self._cut(text)
        except (ValueError, RecursionError, MemoryError):
            data = None
        return data if data is not None else loads(text)

    def _cut(self, text: str) -> dict[str, Any] | None:
        """The object decoded field group by field group, or None where the text does not cut cleanly."""
        begin = text.find("{")
        if begin < 0 or text[:begin].strip(_WHITESPACE):
            return None
        cuts = []
        for key in _VOLATILE:
            # the last one: in ortdoctor's reports the nested fields of these names come earlier
            at = text.rfind(f'"{key}":')
            if at > begin:
                cuts.append((at, key))
        if not cuts:
            return None
        cuts.sort()
        out: dict[str, Any] = {}
        pos = begin + 1
        for at, key in cuts:
            # the fields before a cut end with the comma before it ("" right after "{" or a comma)
            if at < pos or not self._fields(text[pos:at], out, ","):
                return None
            value, end = _decoder.raw_decode(text, _skip(text, at + len(key) + 3))
            out[key] = value
            pos = _skip(text, end)
            if text[pos:pos + 1] == ",":
                pos += 1
            elif text[pos:pos + 1] == "}":
                if text[pos + 1:].strip(_WHITESPACE):
                    return None
                return out
            else:
                return None
        # after the last cut's value and its comma: at least one field, and no comma before the "}"
        tail = text.rstrip(_WHITESPACE)
        if not tail.endswith("}") or not self._fields(tail[pos:-1], out, ""):
            return None
        return out

    def _fields(self, segment: str, into: dict[str, Any], last: str) -> bool:
        """Add the fields of ``segment`` (``"a": 1, "b": 2,`` — a part of an object's text) to ``into``;
        False when it is not such a part. ``last``: how it must end, "," (or be empty) before a cut,
        "" (and hold a field) before the object's "}"."""
        body = segment.strip(_WHITESPACE)
        if last == ",":
            if body and body[-1:] != ",":
                return False
            body = body[:-1]
            if segment and not body.strip(_WHITESPACE) and "," in segment:  # "{," or ",,": no field
                return False
        elif not body or body[-1:] == ",":
            return False
        fields = self._segments.get(segment)
        if fields is None:
            if not body:
                fields = {}
            elif body[0] != '"':
                return False
            else:
                try:
                    fields = json.loads("{" + body + "}")
                except (ValueError, RecursionError):
                    return False
                if not isinstance(fields, dict):
                    return False
            if self._chars + len(segment) <= _CACHE_CHARS:
                self._segments[segment] = fields
                self._chars += len(segment)
        into.update(fields)
        return True


def _skip(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not JSON whitespace."""
    while text[pos:pos + 1] in (" ", "\n", "\t", "\r"):
        pos += 1
    return pos
