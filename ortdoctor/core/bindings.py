"""The language bindings ONNX Runtime ships packages for, by the names ortdoctor uses for them.

A pasted text's binding (:mod:`ortdoctor.diagnose.stack`) and the packages a matrix feed build ships
(``bindings`` of a release's feed) are spelled with these names, so the two can be compared.
"""

from __future__ import annotations

__all__ = ["BINDINGS"]

BINDINGS: tuple[str, ...] = ("python", "java", "csharp", "rust", "node", "cpp")
