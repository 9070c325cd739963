"""Which TensorRT each onnxruntime release's TensorRT execution provider was built with.

A TensorRT engine (a ``.engine``/``.trt`` file, the TensorRT EP's engine cache, an ``_ctx.onnx``
embed) only deserialises with the TensorRT version that built it, and the TensorRT EP only loads with
the TensorRT its release was built against. The table is the "Requirements" table of
https://onnxruntime.ai/docs/execution-providers/TensorRT-ExecutionProvider.html#requirements (the
stored copy lists releases up to 1.22; newer lines are read from the matrix's
``Release.tensorrt_needed`` sonames, which give the major only).
"""

from __future__ import annotations

__all__ = ["SOURCE", "TENSORRT_BY_ORT", "table_text", "tensorrt_for"]

SOURCE = "https://onnxruntime.ai/docs/execution-providers/TensorRT-ExecutionProvider.html#requirements"

#: (first line, last line, TensorRT version), newest first
TENSORRT_BY_ORT: tuple[tuple[str, str, str], ...] = (
    ("1.22", "1.22", "10.9"),
    ("1.21", "1.21", "10.8"),
    ("1.20", "1.20", "10.4"),
    ("1.19", "1.19", "10.2"),
    ("1.18", "1.18", "10.0"),
    ("1.15", "1.17", "8.6"),
    ("1.14", "1.14", "8.5"),
    ("1.12", "1.13", "8.4"),
    ("1.11", "1.11", "8.2"),
    ("1.9", "1.10", "8.0"),
    ("1.7", "1.8", "7.2"),
    ("1.5", "1.6", "7.1"),
)


def _key(line: str) -> tuple[int, int]:
    major, _, minor = line.partition(".")
    return int(major), int(minor or 0)


def tensorrt_for(ort_version: str | None) -> str | None:
    """The TensorRT version the TensorRT EP of that onnxruntime release needs: the documented major.minor
    (the matrix's ``tensorrt.builds``, else this table), else ``"10.x"`` from the major the release's wheel
    links (``tensorrt_needed``); None when nothing says."""
    if not ort_version:
        return None
    parts = ort_version.strip().split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    key = (int(parts[0]), int(parts[1]))
    from_matrix = _from_matrix(f"{key[0]}.{key[1]}")
    if from_matrix is not None and "x" not in from_matrix:
        return from_matrix
    for first, last, trt in TENSORRT_BY_ORT:
        if _key(first) <= key <= _key(last):
            return trt
    return from_matrix


def _from_matrix(line: str) -> str | None:
    from ortdoctor.decide.matrix.load import load_matrix
    from ortdoctor.decide.matrix.model import MatrixError

    try:
        matrix = load_matrix()
    except MatrixError:
        return None
    facts = matrix.tensorrt
    build = facts.build_for(line) if facts is not None else None
    if build is not None:
        return build.tensorrt
    release = next((r for r in matrix.releases if r.line == line), None)
    for soname in release.tensorrt_needed if release is not None else ():
        if soname.startswith("libnvinfer.so."):
            return f"{soname.rsplit('.', 1)[-1]}.x"
    return None


def table_text() -> str:
    """``onnxruntime 1.22: TensorRT 10.9; ...; 1.5-1.6: TensorRT 7.1`` for a fix that cannot name one."""
    parts = [f"{first if first == last else f'{first}-{last}'}: TensorRT {trt}" for first, last, trt in TENSORRT_BY_ORT]
    return "onnxruntime " + "; ".join(parts)
