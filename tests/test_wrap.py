"""``ortdoctor.report.wrap`` wraps as ``textwrap`` does with the text report's settings."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from ortdoctor.report.wrap import fill, wrap

_TEXT = st.lists(st.sampled_from([*"ab-c.\u00a0/", " ", "  ", "\t", "\n", "\r", "\x0b", "x" * 30]),
                 max_size=120).map("".join)


def _theirs(text: str, width: int, first: str, rest: str, long: bool = False) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest, break_long_words=long,
                         break_on_hyphens=False)


@settings(max_examples=600)
@given(_TEXT, st.integers(min_value=1, max_value=40), st.sampled_from(["", "  ", "    "]),
       st.sampled_from(["", " ", "      "]), st.booleans())
def test_wrap_matches_textwrap(text: str, width: int, first: str, rest: str, long: bool) -> None:
    # textwrap itself loops forever breaking a word when an indent leaves no room (CPython's, not ours):
    # the report breaks long words only in a 100-column line with a 2-column indent
    long = long and width > 8
    assert wrap(text, width, first, rest, long) == _theirs(text, width, first, rest, long)
    assert fill(text, width, first, rest, long) == "\n".join(_theirs(text, width, first, rest, long))


def test_real_report_lines() -> None:
    line = ("CUDA 13 libraries (cudart): NVIDIA wheel 13.0.96 in /work/main/.testenvs/nvidia-cu13/nvidia/cu13/lib "
            "(chosen) · system in /usr/local/cuda-13.0/lib (version unknown)")
    for width in (20, 60, 100):
        assert wrap(line, width, "    ", "      ") == _theirs(line, width, "    ", "      ")
