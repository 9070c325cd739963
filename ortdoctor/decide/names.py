"""Library file names: sonames, DLL names, the component and major they stand for, versions in names.

``libcudart.so.13`` and ``cudart64_13.dll`` are the same component (``cudart``) of CUDA 13; the file
``libcudnn.so.9.19.0`` says which cuDNN it is. Every stage reads names through these functions.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable

from ortdoctor.decide.matrix.model import LibSpec

__all__ = ["canonical", "component_stems", "major_of", "matches_loaded", "same_component", "stem_major",
           "version_from_filename"]


def major_of(version: str | None) -> int | None:
    """The leading number of a version string (``"13.0"`` -> 13, ``"9.19.0"`` -> 9); None when there is none."""
    m = re.match(r"\s*(\d+)", version or "")
    return int(m.group(1)) if m else None


_SONAME_RE = re.compile(r"^(?P<stem>.+?\.so)\.(?P<ver>\d+(?:\.\d+)*)$")
_DLL_RE = re.compile(r"^(?P<stem>[A-Za-z_]+?)(?:64)?_(?P<ver>\d+)(?:_0)?\.dll$", re.IGNORECASE)


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
    m = _SONAME_RE.match(name)
    if m:
        return m.group("stem"), int(m.group("ver").split(".")[0])
    m = _DLL_RE.match(name)
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
    base = os.path.basename(path)
    m = _SONAME_RE.match(base)
    s = _SONAME_RE.match(soname)
    if not m or not s or m.group("stem") != s.group("stem"):
        return None
    ver = m.group("ver")
    return ver if ver.count(".") >= 1 and ver != s.group("ver") else None


def matches_loaded(path: str, soname: str) -> bool:
    base = os.path.basename(path)
    return base == soname or base.startswith(soname + ".")


def canonical(name: str) -> str:
    """Count ``libcudart.so.12`` and ``libcudart.so.12.9.79`` once: only the soname-like name."""
    m = _SONAME_RE.match(name)
    if m and "." in m.group("ver"):
        return ""
    return name
