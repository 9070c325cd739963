"""Every finding id the code can emit is documented: in the catalog, in docs/findings.md and by `explain ID`.

The ids are collected from the source, not from a list kept by hand: the first argument of every
``make(...)`` / ``make_finding(...)`` call, every ``Match(...)`` the classifier builds, every
``finding_id=`` keyword, and the ``ortdoctor [id]`` markers of the hook's warnings. A call whose id
cannot be read statically must be listed in PASS_THROUGH with the reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from ortdoctor.core.catalog import CATALOG

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ortdoctor"
ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)+$")
MARKER = re.compile(r"ortdoctor \[([a-z0-9]+(?:-[a-z0-9]+)+)\]")
BUILDERS = {"make", "make_finding"}

# (module, variable) whose value is an id produced elsewhere and checked there.
PASS_THROUGH = {
    ("ortdoctor/diagnose/merge.py", "cid"): "a cause the classifier found; its Match(...) ids are collected",
    ("ortdoctor/diagnose/merge.py", "fid"): "the smoke result's finding_id; collected at its finding_id= keywords",
    ("ortdoctor/diagnose/model.py", "id_"): "make_finding's own parameter; its callers are collected",
}


def _literals(node: ast.AST | None, scope: ast.AST, module: ast.Module) -> set[str] | None:
    """The string values ``node`` can take, or None when they cannot be read statically."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Constant) and node.value is None:
        return set()
    if isinstance(node, ast.IfExp):
        a, b = _literals(node.body, scope, module), _literals(node.orelse, scope, module)
        return None if a is None or b is None else a | b
    if isinstance(node, ast.Name):
        found: set[str] = set()
        for holder in (scope, module):
            for sub in ast.walk(holder):
                values: set[str] | None = set()
                if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id
                                                       for t in sub.targets):
                    values = _literals(sub.value, scope, module)
                elif (isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name)
                      and sub.target.id == node.id and sub.value is not None):
                    values = _literals(sub.value, scope, module)
                elif isinstance(sub, ast.For):
                    values = _loop_values(sub, node.id, scope, module)
                if values is None:
                    return None
                found |= values
            if found:
                return found
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "known_id":
        # known_id(an id read back, default): the id read back was produced, and collected, elsewhere
        return _literals(node.args[1], scope, module) if len(node.args) == 2 else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return _literals(node.func.value, scope, module)  # MAPPING.get(key): every value of the mapping
    if isinstance(node, ast.Subscript):
        return _literals(node.value, scope, module)
    if isinstance(node, ast.Dict):
        vals = [_literals(v, scope, module) for v in node.values]
        return None if any(v is None for v in vals) else set().union(*vals)  # type: ignore[arg-type]
    return None


def _loop_values(loop: ast.For, name: str, scope: ast.AST, module: ast.Module) -> set[str] | None:
    """``for name in ("a", "b")`` or ``for x, name in ((.., "a"), (.., "b"))``: the constants ``name`` takes."""
    if not isinstance(loop.iter, (ast.Tuple, ast.List)):
        return set()
    if isinstance(loop.target, ast.Name) and loop.target.id == name:
        vals = [_literals(e, scope, module) for e in loop.iter.elts]
        return None if any(v is None for v in vals) else set().union(*vals)  # type: ignore[arg-type]
    if isinstance(loop.target, ast.Tuple):
        pos = [i for i, e in enumerate(loop.target.elts) if isinstance(e, ast.Name) and e.id == name]
        if pos:
            out: set[str] = set()
            for e in loop.iter.elts:
                if not isinstance(e, ast.Tuple):
                    return None
                v = _literals(e.elts[pos[0]], scope, module)
                if v is None:
                    return None
                out |= v
            return out
    return set()


def _scopes(tree: ast.Module) -> Iterator[tuple[ast.AST, ast.Call]]:
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            for node in ast.walk(scope):
                if isinstance(node, ast.Call):
                    yield scope, node


def emitted_ids() -> tuple[set[str], list[str]]:
    ids: set[str] = set()
    unreadable: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "ortdoctor/core/catalog.py":
            continue
        source = path.read_text(encoding="utf-8")
        ids |= set(MARKER.findall(source))
        tree = ast.parse(source)
        for scope, call in _scopes(tree):
            name = call.func.id if isinstance(call.func, ast.Name) else (
                call.func.attr if isinstance(call.func, ast.Attribute) else "")
            args: list[ast.AST] = []
            if name in BUILDERS or name == "Match":
                args.append(call.args[0] if call.args else next(
                    (k.value for k in call.keywords if k.arg in ("finding_id", "id_")), ast.Constant(None)))
            args += [k.value for k in call.keywords if k.arg == "finding_id"]
            for arg in args:
                if isinstance(arg, ast.Constant) and arg.value is None:
                    continue
                values = _literals(arg, scope, tree)
                if values is None:
                    key = (rel, arg.id if isinstance(arg, ast.Name) else ast.unparse(arg))
                    if key not in PASS_THROUGH:
                        unreadable.append(f"{rel}:{call.lineno}: {ast.unparse(arg)}")
                    continue
                ids |= {v for v in values if v is not None and ID.match(v)}
    return ids, unreadable


def test_every_id_can_be_read_from_the_source() -> None:
    ids, unreadable = emitted_ids()
    assert unreadable == []
    assert len(ids) > 50  # the scan really found the producers


def test_every_emitted_id_is_in_the_catalog() -> None:
    ids, _ = emitted_ids()
    assert sorted(ids - set(CATALOG)) == []


def test_every_emitted_id_is_documented_and_explained() -> None:
    from ortdoctor.core.catalog import explain_text

    doc = (ROOT / "docs" / "findings.md").read_text(encoding="utf-8")
    ids, _ = emitted_ids()
    for fid in sorted(ids):
        assert f"## {fid}\n" in doc, fid
        assert explain_text(fid).startswith(f"{fid}: "), fid
