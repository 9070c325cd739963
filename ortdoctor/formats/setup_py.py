"""A setuptools ``setup.py`` or ``setup.cfg`` read without running it: ``python_requires``,
``install_requires`` and ``extras_require``, each requirement with its line.

``setup.py`` is parsed with :mod:`ast` and never executed (running a project's build script to lint it
would run its code). Only what is written literally counts: a string, a list or tuple of strings, a
dict of them, or a name the module binds once, at its top level, to one of those
(``REQUIRES = [...]`` then ``install_requires=REQUIRES``). A value computed by a call
(``install_requires=read_requirements()``) says nothing; a file that is not Python says nothing either.

``setup.cfg`` is read line by line (``configparser`` forgets lines): ``[options]`` ``python_requires`` and
``install_requires``, ``[options.extras_require]``; a multi-line value is the indented lines after its key.
"""

from __future__ import annotations

import ast
import re
import warnings

from ortdoctor.core.record import record

__all__ = ["SetupRequirement", "SetupSpec", "read_setup_cfg", "read_setup_py"]


@record
class SetupRequirement:
    line: int
    text: str  # "onnxruntime-gpu>=1.20.0", ">=3.8" for python_requires


@record
class SetupSpec:
    python_requires: SetupRequirement | None
    install_requires: tuple[SetupRequirement, ...]
    extras_require: tuple[tuple[str, tuple[SetupRequirement, ...]], ...]  # (extra, its requirements)


_EMPTY = SetupSpec(None, (), ())


def read_setup_py(text: str) -> SetupSpec:
    try:
        with warnings.catch_warnings():
            # a real script's "\d" in a plain string is a SyntaxWarning, not ours to report
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # not Python (or a Python this interpreter cannot parse), or nested past the parser's limits
        return _EMPTY
    call = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_setup(n.func)), None)
    if call is None:
        return _EMPTY
    names = _top_level_names(tree)
    keywords = {k.arg: _resolve(k.value, names) for k in call.keywords if k.arg}
    python = keywords.get("python_requires")
    extras: list[tuple[str, tuple[SetupRequirement, ...]]] = []
    table = keywords.get("extras_require")
    if isinstance(table, ast.Dict):
        for key, value in zip(table.keys, table.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                extras.append((key.value, _strings(_resolve(value, names))))
    return SetupSpec(_string(python) if python is not None else None,
                     _strings(keywords.get("install_requires")), tuple(extras))


def _is_setup(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "setup") or (
        isinstance(func, ast.Attribute) and func.attr == "setup")


def _top_level_names(tree: ast.Module) -> dict[str, ast.expr]:
    """Names bound exactly once at the module's top level (a name bound twice could be either)."""
    bound: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bound.setdefault(node.target.id, []).append(node.value)
    return {name: values[0] for name, values in bound.items() if len(values) == 1}


def _resolve(node: ast.expr, names: dict[str, ast.expr]) -> ast.expr:
    return names.get(node.id, node) if isinstance(node, ast.Name) else node


def _string(node: ast.expr) -> SetupRequirement | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return SetupRequirement(node.lineno, node.value.strip())
    return None


def _strings(node: ast.expr | None) -> tuple[SetupRequirement, ...]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        # setuptools takes one string of requirement lines too; a triple-quoted one spans the file's lines
        spans = (node.end_lineno or node.lineno) > node.lineno
        return tuple(SetupRequirement(node.lineno + (i if spans else 0), line.strip())
                     for i, line in enumerate(node.value.splitlines())
                     if line.strip() and not line.strip().startswith("#"))
    if isinstance(node, ast.List | ast.Tuple):
        return tuple(s for e in node.elts for s in [_string(e)] if s is not None and s.text)
    return ()


_SECTION = re.compile(r"^\[\s*([^\]]+?)\s*\]")
_KEY = re.compile(r"^([A-Za-z0-9_.-]+)\s*[=:]\s*(.*)$")


def read_setup_cfg(text: str) -> SetupSpec:
    python: SetupRequirement | None = None
    install: list[SetupRequirement] = []
    extras: dict[str, list[SetupRequirement]] = {}
    section = ""
    target: list[SetupRequirement] | None = None  # the list a continuation line adds to
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if line[:1] in (" ", "\t"):
            if target is not None and stripped and not stripped.startswith(";"):
                target.append(SetupRequirement(number, stripped))
            continue
        target = None
        if not stripped or stripped.startswith(";"):
            continue
        m = _SECTION.match(stripped)
        if m:
            section = m.group(1).strip()
            continue
        m = _KEY.match(stripped)
        if m is None:
            continue
        key, value = m.group(1).replace("-", "_"), m.group(2).strip()
        if section == "options" and key == "python_requires" and value:
            python = SetupRequirement(number, value)
        elif section == "options" and key == "install_requires":
            target = install
        elif section == "options.extras_require":
            target = extras.setdefault(m.group(1), [])
        else:
            continue
        if value and target is not None:  # a requirement on the key's own line
            target.append(SetupRequirement(number, value))
    return SetupSpec(python, tuple(install), tuple((k, tuple(v)) for k, v in extras.items()))
