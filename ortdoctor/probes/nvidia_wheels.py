"""NVIDIA's CUDA and cuDNN wheels (``nvidia-*`` distributions) in every site directory.

Two layouts exist: CUDA 12 puts one component per directory (``nvidia/cublas/lib``, Windows
``nvidia/cublas/bin``) and names the wheels ``nvidia-*-cu12``; CUDA 13 consolidates the toolkit into
``nvidia/cu13/lib`` (Windows ``nvidia/cu13/bin/x86_64``) with unsuffixed names, while cuDNN keeps
``nvidia-cudnn-cu13`` and ``nvidia/cudnn/lib``. The library directories are taken from RECORD, so
both layouts (and any future one) are found without a list of paths.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable

from ortdoctor.core.facts import NvidiaWheel
from ortdoctor.core.patterns import digits_end, lazy
from ortdoctor.formats.distinfo import DistIndex, Distribution
from ortdoctor.probes.platform import find_site_dirs

__all__ = ["cuda_major_of", "probe_nvidia_wheels", "shared_library_files"]

# The rules; the functions below read them by hand (see core/patterns.py)
_SUFFIX_RE = lazy(r"-cu(\d+)$")
_LAYOUT_RE = lazy(r"(?:^|/)nvidia/cu(\d+)/")
_SHARED_RE = lazy(r"(\.so(\.[0-9][0-9A-Za-z.]*)?|\.dll)$", re.I)
_SHARED_TAIL = "0123456789abcdefghijklmnopqrstuvwxyz."  # [0-9A-Za-z.] of a lower-cased name
# Unsuffixed wheels whose version's major is the CUDA major (nvidia-cufft 12.x and nvidia-curand 10.x
# are CUDA 13 packages, so the version alone says nothing for them).
_VERSION_IS_CUDA = {"nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cuda-nvrtc", "nvidia-nvjitlink",
                    "nvidia-cuda-cupti", "nvidia-cuda-nvcc", "nvidia-cuda-cccl", "nvidia-nvtx"}


def shared_library_files(dist: Distribution) -> list[str]:
    """RECORD paths (relative) of the shared libraries a distribution ships."""
    return [p for p in dist.files() if _is_shared_library(p.rsplit("/", 1)[-1]) and "/include/" not in p]


def _is_shared_library(name: str) -> bool:
    """``_SHARED_RE.search(name)``: ``.so``, ``.so.<digit>...`` or ``.dll`` at the end, any case."""
    if not name.isascii():
        return _SHARED_RE.search(name) is not None
    core = (name[:-1] if name.endswith("\n") else name).lower()  # "$" also matches before a final newline
    if core.endswith((".so", ".dll")):
        return True
    at = core.find(".so.")
    while at != -1:
        tail = core[at + 4:]
        if tail[:1].isdigit() and not tail.strip(_SHARED_TAIL):
            return True
        at = core.find(".so.", at + 1)
    return False


def _suffix_cuda(name: str) -> int | None:
    """``_SUFFIX_RE.search(name)``'s number: 13 for ``nvidia-cudnn-cu13``."""
    if not name.isascii():
        m = _SUFFIX_RE.search(name)
        return int(m.group(1)) if m else None
    core = name[:-1] if name.endswith("\n") else name
    at = core.rfind("-cu")  # only the last "-cu" can have nothing but digits after it
    digits = core[at + 3:]
    return int(digits) if at != -1 and digits.isdigit() else None


def _layout_cuda(rel: str) -> int | None:
    """``_LAYOUT_RE.search(rel)``'s number: 13 for ``nvidia/cu13/lib/libcublas.so.13``."""
    if not rel.isascii():
        m = _LAYOUT_RE.search(rel)
        return int(m.group(1)) if m else None
    at = rel.find("nvidia/cu")
    while at != -1:
        if at == 0 or rel[at - 1] == "/":
            end = digits_end(rel, at + 9)
            if end > at + 9 and rel[end:end + 1] == "/":
                return int(rel[at + 9:end])
        at = rel.find("nvidia/cu", at + 1)
    return None


def cuda_major_of(name: str, version: str, library_files: Iterable[str]) -> int | None:
    """The CUDA major a wheel belongs to: ``-cuNN`` suffix, else ``nvidia/cuNN/`` layout, else version."""
    suffix = _suffix_cuda(name)
    if suffix is not None:
        return suffix
    for rel in library_files:
        layout = _layout_cuda(rel)
        if layout is not None:
            return layout
    if name in _VERSION_IS_CUDA:
        head = version.split(".", 1)[0]
        if head.isdigit():
            return int(head)
    return None


def probe_nvidia_wheels(
    site_dirs: Iterable[str] | None = None, *, index: DistIndex | None = None
) -> tuple[NvidiaWheel, ...]:
    if index is None:
        index = DistIndex(find_site_dirs(sys.path) if site_dirs is None else site_dirs)
    wheels: list[NvidiaWheel] = []
    for ref in index.starting_with("nvidia-"):
        dist = index.load(ref)
        files = shared_library_files(dist)
        shared = set(files)
        lib_dirs = dict.fromkeys(os.path.dirname(dist.abspath(rel)) for rel in files)
        sonames = dict.fromkeys(rel.rsplit("/", 1)[-1] for rel in files)
        wheels.append(NvidiaWheel(
            name=ref.name,
            version=dist.version,
            location=dist.location,
            lib_dirs=tuple(lib_dirs),
            sonames=tuple(sonames),
            cuda_major=cuda_major_of(ref.name, dist.version, files),
            sizes=tuple((dist.abspath(e.path), e.size) for e in dist.record or ()
                        if e.size is not None and e.path in shared),
        ))
    return tuple(wheels)
