"""Which TensorRT each onnxruntime release's TensorRT execution provider was built with, for ``explain``.

A TensorRT engine (a ``.engine``/``.trt`` file, the TensorRT EP's engine cache, an ``_ctx.onnx``
embed) only deserialises with the TensorRT version that built it, and the TensorRT EP only loads with
the TensorRT its release was built against. The facts are the matrix's (``compat_matrix.yaml``,
``tensorrt.builds``: the "Requirements" table of the TensorRT EP page and release notes, each row with
its source); where no row names a release line, the major its wheel links (``tensorrt_needed``) gives
``"10.x"``.
"""

from __future__ import annotations

from ortdoctor.decide.matrix.model import Matrix

__all__ = ["table_text", "tensorrt_for"]


def _matrix() -> Matrix | None:
    from ortdoctor.decide.matrix.load import load_matrix
    from ortdoctor.decide.matrix.model import MatrixError

    try:
        return load_matrix()
    except MatrixError:
        return None


def tensorrt_for(ort_version: str | None, matrix: Matrix | None = None) -> str | None:
    """The TensorRT version the TensorRT EP of that onnxruntime release needs: the documented major.minor,
    else ``"10.x"`` from the major the release's wheel links; None when nothing says."""
    if not ort_version:
        return None
    parts = ort_version.strip().split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    line = f"{int(parts[0])}.{int(parts[1])}"
    matrix = matrix or _matrix()
    if matrix is None:
        return None
    build = matrix.tensorrt.build_for(line) if matrix.tensorrt is not None else None
    if build is not None:
        return build.tensorrt
    release = next((r for r in matrix.releases if r.line == line), None)
    for soname in release.tensorrt_needed if release is not None else ():
        if soname.startswith("libnvinfer.so."):
            return f"{soname.rsplit('.', 1)[-1]}.x"
    return None


def table_text(matrix: Matrix | None = None) -> str:
    """``onnxruntime 1.24: TensorRT 10.14; 1.22: TensorRT 10.9; ...`` for a fix that cannot name one."""
    matrix = matrix or _matrix()
    builds = matrix.tensorrt.builds if matrix is not None and matrix.tensorrt is not None else ()
    parts = [f"{b.lines[0] if len(b.lines) == 1 else f'{b.lines[0]}-{b.lines[-1]}'}: TensorRT {b.tensorrt}"
             for b in builds]
    return "onnxruntime " + "; ".join(parts) if parts else ""
