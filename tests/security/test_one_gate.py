"""Every native load goes through one gate (``ortdoctor/native/gate.py``): no other module of the package
may call ``dlopen`` in any of its Python spellings. A new ``ctypes.CDLL(path)`` elsewhere would load a
path nobody judged, so this scan fails on it, whatever the import style."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ortdoctor"
GATE = PACKAGE / "native" / "gate.py"

# Calls that map a library (or find one by name for someone to map): ctypes' loaders and their
# LibraryLoader attributes, the Windows API, the loader itself, and find_library.
LOADERS = frozenset({"CDLL", "PyDLL", "WinDLL", "OleDLL", "LibraryLoader", "LoadLibrary", "LoadLibraryA",
                     "LoadLibraryW", "LoadLibraryExA", "LoadLibraryExW", "dlopen", "find_library"})
LOADER_ATTRIBUTES = frozenset({"cdll", "pydll", "windll", "oledll", "LoadLibrary"})


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    out: list[str] = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Call) and _called_name(node) in LOADERS:
            out.append(f"{where}: calls {_called_name(node)}")
        elif isinstance(node, ast.Attribute) and node.attr in LOADER_ATTRIBUTES and isinstance(node.ctx, ast.Load):
            out.append(f"{where}: uses .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module in ("ctypes", "ctypes.util", "_ctypes"):
            names = {a.name for a in node.names}
            if names & (LOADERS | LOADER_ATTRIBUTES | {"dlopen", "*"}):
                out.append(f"{where}: imports {sorted(names & (LOADERS | LOADER_ATTRIBUTES | {'dlopen', '*'}))} "
                           f"from {node.module}")
        elif isinstance(node, ast.Import) and any(a.name in ("ctypes.util", "_ctypes") for a in node.names):
            out.append(f"{where}: imports ctypes.util/_ctypes")
    return out


def test_no_native_load_outside_the_gate() -> None:
    found = [v for path in sorted(PACKAGE.rglob("*.py")) if path != GATE for v in _violations(path)]
    assert found == [], "load native code through ortdoctor/native/gate.py only:\n" + "\n".join(found)


def test_the_scan_sees_every_spelling(tmp_path: Path) -> None:
    """The scan itself: each way of loading a library is caught (a scan that sees nothing proves nothing)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import ctypes, ctypes.util\n"
        "from ctypes import CDLL\n"
        "ctypes.CDLL('/x')\n"
        "CDLL('/x')\n"
        "ctypes.cdll.LoadLibrary('libm.so.6')\n"
        "ctypes.windll.kernel32\n"
        "ctypes.WinDLL('x.dll')\n"
        "ctypes.util.find_library('m')\n"
        "lib = ctypes.PyDLL(None)\n")
    global PACKAGE
    saved = PACKAGE
    PACKAGE = tmp_path  # relative_to() in the messages
    try:
        found = _violations(sample)
    finally:
        PACKAGE = saved
    kinds = "\n".join(found)
    for spelling in ("calls CDLL", "uses .cdll", "calls LoadLibrary", "uses .windll", "calls WinDLL",
                     "calls find_library", "calls PyDLL", "imports ['CDLL'] from ctypes", "imports ctypes.util"):
        assert spelling in kinds, (spelling, kinds)


def test_the_gate_is_the_one_module_that_loads() -> None:
    assert _violations(GATE), "the gate itself must hold the dlopen the scan looks for"
