"""`explain -` on input that is not a log: random bytes end fast (the rest of the text is not scanned once
its start shows it is binary), while logs that look odd (UTF-16 shown as 8-bit, GBK text read as UTF-8,
colour codes and progress bars) are still read to the end."""

from __future__ import annotations

import random

from ortdoctor.diagnose import classify
from ortdoctor.diagnose.text_observe import Scanner

ERROR = "libcudnn.so.9: cannot open shared object file: No such file or directory"


def _lines(text: str) -> list[str]:
    return text.split("\n")


def test_random_bytes_are_not_scanned_past_the_sniff() -> None:
    noise = random.Random(0).randbytes(256 * 1024).decode("utf-8", "replace")
    scanner = Scanner()
    for line in _lines(noise + "\n" + ERROR + "\n"):
        scanner.feed(line)
    assert scanner.binary
    assert not scanner.hits


def test_logs_that_look_odd_are_read_to_the_end() -> None:
    filler = "2026-12-03 10:00:00 INFO step done\n" * 3000  # past the sniff
    cases = {
        "utf-16 shown as 8-bit": ("\0".join(filler) + "\n" + "\0".join(ERROR)),
        "gbk read as utf-8": ("找不到指定的模块。 加载失败\n".encode("gbk") * 4000).decode("utf-8", "replace") + ERROR,
        "colour and progress bars": ("\x1b[0;93m50%|#####     |\r\b\b" * 3000) + "\n\x1b[1;31m" + ERROR + "\x1b[m",
    }
    for name, text in cases.items():
        scanner = Scanner()
        for line in _lines(text):
            scanner.feed(line)
        assert not scanner.binary, name
        assert scanner.hits, name  # the error line at the end was read
        assert classify.finding_ids(text), name
