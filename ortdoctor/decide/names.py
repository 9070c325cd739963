"""Library file names: sonames, DLL names, the component and major they stand for, versions in names.

``libcudart.so.13`` and ``cudart64_13.dll`` are the same component (``cudart``) of CUDA 13; the file
``libcudnn.so.9.19.0`` says which cuDNN it is. Every stage reads names through these functions.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable

from ortdoctor.core.patterns import digits_end, lazy
from ortdoctor.decide.matrix.model import LibSpec

__all__ = ["canonical", "component_stems", "major_of", "matches_loaded", "same_component", "split_soname",
           "stem_major", "version_from_filename"]

# The rules, as regular expressions. Names are read on every check, and compiling a pattern costs more
# than all the matching a check does, so the functions below read ASCII names by hand and hand anything
# else to these (Unicode digits, case folding); tests/test_hand_matchers.py holds the two to one answer.
_MAJOR_RE = lazy(r"\s*(\d+)")
_SONAME_RE = lazy(r"^(?P<stem>.+?\.so)\.(?P<ver>\d+(?:\.\d+)*)$")
_DLL_RE = lazy(r"^(?P<stem>[A-Za-z_]+?)(?:64)?_(?P<ver>\d+)(?:_0)?\.dll$", re.IGNORECASE)


def major_of(version: str | None) -> int | None:
    """The leading number of a version string (``"13.0"`` -> 13, ``"9.19.0"`` -> 9); None when there is none."""
    text = version or ""
    if not text.isascii():
        m = _MAJOR_RE.match(text)
        return int(m.group(1)) if m else None
    start = len(text) - len(text.lstrip())
    end = digits_end(text, start)
    return int(text[start:end]) if end > start else None


def split_soname(name: str) -> tuple[str, str] | None:
    """``libcudnn.so.9.19.0`` -> ("libcudnn.so", "9.19.0"): the stem and the version after ``.so.``;
    None for a name that is not ``<stem>.so.<digits>[.<digits>...]``."""
    if not name.isascii():
        m = _SONAME_RE.match(name)
        return (m.group("stem"), m.group("ver")) if m else None
    core = name[:-1] if name.endswith("\n") else name  # "$" also matches before a final newline
    at = core.find(".so.", 1)  # the stem is at least one character and ".so"
    while at != -1:
        stem = core[:at + 3]
        if "\n" in stem:  # "." never matches a newline: no later split can match either
            return None
        ver = core[at + 4:]
        # digits, single dots between them (ASCII: isdigit() is [0-9]+, and "" is not)
        if ver[-1:].isdigit() and ver[:1].isdigit() and ".." not in ver and ver.replace(".", "").isdigit():
            return stem, ver
        at = core.find(".so.", at + 1)
    return None


def component_stems(specs: Iterable[LibSpec]) -> frozenset[str]:
    """``libcudart.so.13`` -> ``libcudart.so``: the names that identify each component, any major."""
    out = set()
    for s in specs:
        sm = stem_major(s.soname)
        if sm is not None:
            out.add(sm[0])
    return frozenset(out)


@functools.lru_cache(maxsize=4096)
def stem_major(name: str) -> tuple[str, int] | None:
    parts = split_soname(name)
    if parts is not None:
        return parts[0], int(parts[1].split(".")[0])
    # A DLL name ends in ".dll" (any case): only such a name is worth compiling the pattern for.
    m = _DLL_RE.match(name) if ".dll" in name.lower() else None
    if m:
        ver = m.group("ver")
        return m.group("stem").lower(), int(ver[:-1] if len(ver) == 3 else ver)  # nvrtc64_130_0 -> 13
    return None


def same_component(name: str, soname: str) -> bool:
    a, b = stem_major(name), stem_major(soname)
    return a is not None and b is not None and a[0] == b[0]


def version_from_filename(path: str, soname: str) -> str | None:
    """``libcudnn.so.9.14.0`` -> ``"9.14.0"``: the file name (of the symlink's target) says more than
    the soname. None when it says nothing beyond the soname's major."""
    m = split_soname(os.path.basename(path))
    s = split_soname(soname)
    if not m or not s or m[0] != s[0]:
        return None
    ver = m[1]
    return ver if ver.count(".") >= 1 and ver != s[1] else None


def matches_loaded(path: str, soname: str) -> bool:
    base = os.path.basename(path)
    return base == soname or base.startswith(soname + ".")


def canonical(name: str) -> str:
    """Count ``libcudart.so.12`` and ``libcudart.so.12.9.79`` once: only the soname-like name."""
    m = split_soname(name)
    if m and "." in m[1]:
        return ""
    return name
