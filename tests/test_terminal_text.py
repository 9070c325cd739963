"""Text from elsewhere printed on a terminal: every control character shown, never obeyed.

The sequences are those a hostile log line or node report would carry: OSC 52 (write the clipboard) and
OSC 0 (window title) ended by BEL or by ST, OSC 8 hyperlinks, DCS, APC, PM, SOS, CSI (cursor moves,
erasing), their 8-bit C1 forms, the two-character escapes (ESC c resets the terminal), a carriage return
that overwrites the line, DEL, and the bidi overrides that reorder what is shown.
"""

from __future__ import annotations

import re

import pytest

from ortdoctor.core.terminal import ESCAPE_SEQUENCE, strip_escapes, terminal_safe
from ortdoctor.formats.ortlog import ort_log_lines, strip_ansi

SEQUENCES = {
    "osc52-bel": "\x1b]52;c;ZWNobyBoaQ==\x07",
    "osc0-st": "\x1b]0;pwned\x1b\\",
    "osc8-link": "\x1b]8;;https://example.invalid/\x1b\\",
    "dcs": "\x1bP1$r0m\x1b\\",
    "apc": "\x1b_Gf=100;AAAA\x1b\\",
    "pm": "\x1b^private\x07",
    "sos": "\x1bXstring\x1b\\",
    "csi-clear": "\x1b[2J\x1b[H",
    "csi-colour": "\x1b[1;31m",
    "c1-csi": "\x9b31m",
    "c1-osc": "\x9d0;title\x9c",
    "c1-dcs": "\x90q#0\x9c",
    "reset": "\x1bc",
    "charset": "\x1b(0",
}
# what must never reach a terminal: C0 but tab and newline, DEL, C1, bidi embeddings/overrides/isolates
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_each_sequence_is_shown_not_obeyed(name: str) -> None:
    text = f"libcudnn.so.9: cannot open {SEQUENCES[name]}shared object file"
    safe = terminal_safe(text)
    assert UNSAFE.search(safe) is None, repr(safe)
    assert "\n" not in safe
    assert safe.startswith("libcudnn.so.9: cannot open ")
    assert safe.endswith("shared object file")
    # the reader sees what was there: ESC as \x1b, C1 as \x9b ...
    assert "\\x1b" in safe or "\\x9" in safe


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_each_sequence_is_stripped_whole(name: str) -> None:
    text = f"before {SEQUENCES[name]}after"
    assert strip_escapes(text) == "before after"
    assert strip_ansi(text) == "before after"  # onnxruntime log text: every kind, not only CSI


def test_every_control_character_and_bidi_override() -> None:
    controls = "".join(map(chr, [*range(0x00, 0x20), *range(0x7f, 0xa0), *range(0x202a, 0x202f),
                                 *range(0x2066, 0x206a)]))
    safe = terminal_safe(controls)
    assert UNSAFE.search(safe) is None
    assert "\n" not in safe
    assert "\r" not in safe
    assert "\t" in safe  # a tab moves the cursor right, nothing else
    assert "\\u202e" in safe
    assert "\\x0d" in safe
    assert "\\x7f" in safe
    multi = terminal_safe("line 1\r\nline 2\u202e", multiline=True)
    assert multi == "line 1\\x0d\nline 2\\u202e"


def test_ordinary_text_is_returned_as_it_is() -> None:
    text = "onnxruntime-gpu 1.31.1 · driver 580.159.04 — GPU ✔ /home/ana/.venv/lib/python3.12 (שלום, 名前)"
    assert terminal_safe(text) is text
    assert strip_escapes(text) is text
    assert terminal_safe(None) == "None"
    assert terminal_safe(3) == "3"


def test_an_unended_string_sequence_stops_at_its_line() -> None:
    log = "\x1b]0;no end here\n[E:onnxruntime:Default, x.cc:1 f] Failed to load library\n"
    assert ort_log_lines(log) == ["[E:onnxruntime:Default, x.cc:1 f] Failed to load library"]
    assert ESCAPE_SEQUENCE.sub("", "a\x1b]0;title") == "a"
