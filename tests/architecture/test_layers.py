"""The package tree is the pipeline: imports only go down it, and no module imports itself back.

Stages, bottom to top: ``core`` (facts, the finding catalog), ``formats`` (file readers) and ``native``
(the one gate of every native load), then
``probes`` (inspect) -> ``decide`` -> ``preloading`` -> ``prove`` -> ``diagnose`` -> ``report`` ->
``doctor`` (the use cases) -> ``fleet`` -> ``cli``; the entry points at the package root (``hook``,
``pytest_plugin``, ``__init__``, ``__main__``) sit on top. Every import counts, also those inside
functions and under ``TYPE_CHECKING``: an import that climbs back up is a cycle waiting to happen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ortdoctor"

STAGES = ("core", "formats", "native", "probes", "decide", "preloading", "prove", "diagnose", "report", "doctor",
          "fleet", "cli")
ENTRY_POINTS = ("__init__", "__main__", "hook", "pytest_plugin")
LEAVES = ("_version",)  # imports nothing: every stage may read the version


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(path: Path, module: str) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield target
            for alias in node.names:  # `from ortdoctor.prove import child_process` names a module
                yield f"{target}.{alias.name}"


def _stage(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LEAVES:
        return -1
    if len(parts) == 1 or parts[1] in ENTRY_POINTS:
        return len(STAGES)
    return STAGES.index(parts[1])


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        graph[name] = {t for t in _imports(path, name) if t in mods and t != name}
    return graph


def test_every_module_belongs_to_a_stage_or_is_an_entry_point() -> None:
    for name in _modules():
        parts = name.split(".")
        assert len(parts) == 1 or parts[1] in (*STAGES, *ENTRY_POINTS, *LEAVES), (
            f"{name}: the package root holds only the entry points {ENTRY_POINTS}; put it in a stage {STAGES}")


def test_imports_only_go_down_the_pipeline() -> None:
    climbing = [f"{a} -> {b}" for a, targets in _graph().items() for b in targets
                if b.split(".")[:2] != a.split(".")[:2] and _stage(b) > _stage(a)]
    assert climbing == []


def test_no_import_cycles() -> None:
    graph = _graph()
    # A package's __init__ is imported with each of its modules; it is empty by convention (checked
    # below), so edges into it carry no code and are left out here.
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_stage_packages_hold_no_code_in_their_init() -> None:
    for name, path in _modules().items():
        if path.name == "__init__.py" and name != "ortdoctor":
            tree = ast.parse(path.read_text(encoding="utf-8"))
            body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            assert body == [], f"{path}: keep __init__.py to a docstring (imports there tax every user)"
