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
from ortdoctor.formats.distinfo import DistIndex, Distribution
from ortdoctor.probes.platform import find_site_dirs

__all__ = ["cuda_major_of", "probe_nvidia_wheels", "shared_library_files"]

_SUFFIX_RE = re.compile(r"-cu(\d+)$")
_LAYOUT_RE = re.compile(r"(?:^|/)nvidia/cu(\d+)/")
_SHARED_RE = re.compile(r"(\.so(\.[0-9][0-9A-Za-z.]*)?|\.dll)$", re.I)
# Unsuffixed wheels whose version's major is the CUDA major (nvidia-cufft 12.x and nvidia-curand 10.x
# are CUDA 13 packages, so the version alone says nothing for them).
_VERSION_IS_CUDA = {"nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cuda-nvrtc", "nvidia-nvjitlink",
                    "nvidia-cuda-cupti", "nvidia-cuda-nvcc", "nvidia-cuda-cccl", "nvidia-nvtx"}


def shared_library_files(dist: Distribution) -> list[str]:
    """RECORD paths (relative) of the shared libraries a distribution ships."""
    return [p for p in dist.files() if _SHARED_RE.search(p.rsplit("/", 1)[-1]) and "/include/" not in p]


def cuda_major_of(name: str, version: str, library_files: Iterable[str]) -> int | None:
    """The CUDA major a wheel belongs to: ``-cuNN`` suffix, else ``nvidia/cuNN/`` layout, else version."""
    m = _SUFFIX_RE.search(name)
    if m:
        return int(m.group(1))
    for rel in library_files:
        lm = _LAYOUT_RE.search(rel)
        if lm:
            return int(lm.group(1))
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
    for ref in index.select(lambda n: n.startswith("nvidia-")):
        dist = index.load(ref)
        files = shared_library_files(dist)
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
                        if e.size is not None and e.path in set(files)),
        ))
    return tuple(wheels)
