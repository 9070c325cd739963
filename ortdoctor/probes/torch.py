"""PyTorch, inspected on disk without importing it: version, the CUDA and cuDNN it ships, its lib dir.

torch matters to a diagnosis because it brings its own CUDA and cuDNN (as ``nvidia-*`` wheels or
bundled in ``torch/lib``), which may be a different major than onnxruntime needs, and because
``import torch`` first loads those copies into the process.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable

from ortdoctor.core.facts import TorchInfo
from ortdoctor.core.patterns import lazy
from ortdoctor.formats.distinfo import DistIndex, normalize, open_regular
from ortdoctor.probes.ort import parse_literal_assignments
from ortdoctor.probes.platform import find_site_dirs

__all__ = ["cuda_from_local_tag", "probe_torch"]

_LOCAL_CUDA_RE = lazy(r"\+cu(\d+)(\d)\b")
_CUDNN_REQ_RE = lazy(r"^\s*(nvidia[-_.]cudnn[-_.]cu\d+)", re.I)
_MAX_VERSION_PY = 64 * 1024


def cuda_from_local_tag(version: str) -> str | None:
    """``2.11.0+cu130`` -> ``13.0``; ``2.4.1+cu118`` -> ``11.8``; no ``+cuXXX`` -> None."""
    m = _LOCAL_CUDA_RE.search(version)
    return f"{int(m.group(1))}.{m.group(2)}" if m else None


def _version_py(path: str) -> dict[str, object] | None:
    try:
        with open_regular(path) as f:  # never blocks on a FIFO; ValueError when not a regular file
            raw = f.read(_MAX_VERSION_PY + 1)
        if len(raw) > _MAX_VERSION_PY:
            return None
        return parse_literal_assignments(raw.decode("utf-8", "replace"))
    except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _short_version(version: str) -> str:
    return ".".join(version.split(".")[:3])


def probe_torch(site_dirs: Iterable[str] | None = None, *, index: DistIndex | None = None) -> TorchInfo | None:
    """The first ``torch`` distribution in site-directory order, or None when there is none."""
    if index is None:
        index = DistIndex(find_site_dirs(sys.path) if site_dirs is None else site_dirs)
    refs = index.find("torch")
    if not refs:
        return None
    dist = index.load(refs[0])
    package = os.path.join(dist.location, "torch")

    cuda: str | None
    values = _version_py(os.path.join(package, "version.py"))
    if values is not None and "cuda" in values:
        raw = values["cuda"]
        cuda = raw if isinstance(raw, str) and raw else None  # `cuda = None` is a CPU build
    else:
        cuda = cuda_from_local_tag(dist.version)

    cudnn: str | None = None
    for req in dist.requires:
        m = _CUDNN_REQ_RE.match(req)
        if not m:
            continue
        wanted = normalize(m.group(1))
        found = [r for r in index.refs if r.name == wanted]
        if found:
            cudnn = _short_version(index.load(found[0]).version)
            break

    lib_dir = os.path.join(package, "lib")
    return TorchInfo(
        version=dist.version,
        cuda=cuda,
        cudnn=cudnn,
        lib_dir=lib_dir if os.path.isdir(lib_dir) else None,
        location=dist.location,
        requires=dist.requires,
    )
