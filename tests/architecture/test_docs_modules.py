"""docs/architecture.md names every module of the package, and only files that exist.

A module is named by its path relative to ``ortdoctor/`` (``decide/resolve.py``; ``ortdoctor/decide/resolve.py``
counts too), as a whole path: ``cli/hook.py`` does not name ``hook.py``. The package's data files
(JSON, YAML) are held to the same rule, so a new snapshot or schema gets its line in the table.

Every ``.py`` path the page writes must exist, under ``ortdoctor/`` or from the repository root
(``scripts/...``, ``tests/...``). A path that starts with another package's directory names a file of that
package (``onnxruntime/capi/build_and_package_info.py``), not one of ours; a bare file name must be one
of ours, so the page never says ``model.py`` where four modules have that name.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ortdoctor"
DOC = ROOT / "docs" / "architecture.md"

#: Top directories of other packages whose files the page may name (they are not in this repository).
FOREIGN = ("onnxruntime",)
DATA_SUFFIXES = (".json", ".yaml", ".yml")
#: Data outside the package that the page must also name.
OTHER_DATA = ("compat_matrix.yaml",)

# A path: word characters, dots and dashes, separated by "/", not glued to a longer token on either side.
_PATH = r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+{suffix})(?![\w/-])"
PY_PATH = re.compile(_PATH.format(suffix=r"\.py"))
DATA_PATH = re.compile(_PATH.format(suffix=r"\.(?:json|ya?ml)"))


def _normalise(path: str) -> str:
    return path.removeprefix("ortdoctor/")


def _named(pattern: re.Pattern[str]) -> set[str]:
    return {_normalise(m.group(1)) for m in pattern.finditer(DOC.read_text(encoding="utf-8"))}


def _modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
            if p.name != "__init__.py" and "__pycache__" not in p.parts}


def _data_files() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*")
            if p.is_file() and p.suffix in DATA_SUFFIXES and "__pycache__" not in p.parts}


def test_every_module_is_named() -> None:
    missing = sorted(_modules() - _named(PY_PATH))
    assert missing == [], f"docs/architecture.md does not name these modules (by their path under ortdoctor/): {missing}"


def test_every_data_file_is_named() -> None:
    missing = sorted((_data_files() | set(OTHER_DATA)) - _named(DATA_PATH))
    assert missing == [], f"docs/architecture.md does not name these data files: {missing}"


def test_every_named_python_file_exists() -> None:
    stale = sorted(
        path for path in _named(PY_PATH)
        if path.split("/", 1)[0] not in FOREIGN and not (PACKAGE / path).is_file() and not (ROOT / path).is_file()
    )
    assert stale == [], f"docs/architecture.md names .py files that do not exist: {stale}"


def test_the_patterns_read_paths_whole() -> None:
    text = "`cli/hook.py` and `ortdoctor/decide/resolve.py: resolve`, not hook.pyc or tests/x.py/y"
    assert {m.group(1) for m in PY_PATH.finditer(text)} == {"cli/hook.py", "ortdoctor/decide/resolve.py"}
