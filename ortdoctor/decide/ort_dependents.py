"""Packages whose metadata requires an onnxruntime distribution (``ort_dependents.json``, with sources).

``optimum[onnxruntime]`` or ``faster-whisper`` in a requirements file pulls the CPU ``onnxruntime`` in
beside ``onnxruntime-gpu``: pip installs both into one ``onnxruntime/`` package. ``ortdoctor lint`` reads
no index and installs nothing, so what those packages require is this table, read from the
``Requires-Dist`` lines of their wheels as PyPI served them (each row names the wheel and its sha256).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from ortdoctor.core.package_names import ORT_GPU
from ortdoctor.core.record import record

__all__ = ["Dependent", "dependents", "gpu_spec_of", "ort_package_of"]


@record
class Dependent:
    name: str
    requires: dict[str, str]  # extra ("" for the package itself) -> onnxruntime distribution
    gpu: str | None  # the requirement that pulls onnxruntime-gpu instead, where there is one
    source: str
    version: str  # the release whose metadata was read
    gpu_spec: dict[str, str] | None = None  # extra -> the onnxruntime-gpu specifier it requires


@lru_cache(maxsize=1)
def dependents() -> dict[str, Dependent]:
    data = json.loads((Path(__file__).with_name("ort_dependents.json")).read_text(encoding="utf-8"))
    return {name: Dependent(name, dict(row["requires"]), row.get("gpu"), row["source"], row["version"],
                       row.get("gpu_spec"))
            for name, row in data["packages"].items()}


def ort_package_of(name: str, extras: tuple[str, ...], spec: str = "") -> tuple[str, Dependent] | None:
    """The onnxruntime distribution ``name[extras]spec`` requires (the CPU one first), with its table row;
    None when the table does not know the package or ``spec`` excludes the release it was read from."""
    row = dependents().get(name)
    if row is None:
        return None
    if spec:
        try:
            if not SpecifierSet(spec).contains(row.version, prereleases=True):
                return None
        except InvalidSpecifier:
            return None
    pulled = [row.requires[e] for e in ("", *extras) if e in row.requires]
    if not pulled:
        return None
    cpu = [p for p in pulled if p != ORT_GPU]
    return (cpu[0] if cpu else pulled[0]), row


def gpu_spec_of(name: str, extras: tuple[str, ...], spec: str = "") -> str | None:
    """The onnxruntime-gpu specifier ``name[extras]spec`` requires ("" for any version), None when it
    requires no onnxruntime-gpu or the table cannot say."""
    hit = ort_package_of(name, extras, spec)
    if hit is None:
        return None
    row = hit[1]
    for extra in ("", *extras):
        if row.requires.get(extra) == ORT_GPU and row.gpu_spec is not None and extra in row.gpu_spec:
            return row.gpu_spec[extra]
    return None
