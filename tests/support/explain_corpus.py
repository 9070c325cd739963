"""Loader for the real error-text corpus in ``tests/data/explain_corpus/``.

Each entry is one YAML file holding a text a user pasted in a public thread, the thread's URL, and the
cause and fix the thread established. The loader only parses and checks the format; what the
classifier makes of each text is measured by ``tests/test_explain_corpus.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

CORPUS_DIR = Path(__file__).resolve().parents[1] / "data" / "explain_corpus"

BINDINGS = frozenset({"python", "java", "csharp", "c", "cpp", "rust", "node", "unknown"})
SYSTEMS = frozenset({"linux", "windows", "macos", "wsl", "unknown"})
KEYS = (
    "source",
    "repository",
    "binding",
    "os",
    "ort_version",
    "cause",
    "expected_id",
    "fix_that_worked",
    "fix_terms",
    "text",
)
_NAME = re.compile(r"^\d{3}-[a-z0-9][a-z0-9-]*\.yaml$")
_URL = re.compile(r"^https://[A-Za-z0-9.-]+\.[a-z]{2,}/\S+$")
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class CorpusEntry:
    name: str
    source: str
    repository: str
    binding: str
    os: str
    ort_version: str | None
    cause: str
    expected_id: str
    fix_that_worked: str
    fix_terms: tuple[str, ...]
    text: str


def entry_paths() -> list[Path]:
    return sorted(CORPUS_DIR.glob("*.yaml"))


def schema_problems(path: Path, data: object) -> list[str]:
    """Everything wrong with one entry's format (empty when it is well formed)."""
    problems: list[str] = []
    if not _NAME.match(path.name):
        problems.append(f"file name {path.name!r} is not NNN-short-slug.yaml")
    if not isinstance(data, dict):
        return [*problems, "not a YAML mapping"]
    missing = [k for k in KEYS if k not in data]
    extra = sorted(set(data) - set(KEYS))
    if missing:
        problems.append(f"missing keys {missing}")
    if extra:
        problems.append(f"unknown keys {extra}")
    for key in ("source", "repository", "cause", "expected_id", "fix_that_worked", "text"):
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{key} must be a non-empty string")
    source = data.get("source")
    if isinstance(source, str) and not _URL.match(source):
        problems.append(f"source {source!r} is not an https URL")
    if data.get("binding") not in BINDINGS:
        problems.append(f"binding {data.get('binding')!r} not in {sorted(BINDINGS)}")
    if data.get("os") not in SYSTEMS:
        problems.append(f"os {data.get('os')!r} not in {sorted(SYSTEMS)}")
    version = data.get("ort_version")
    if version is not None and not (isinstance(version, str) and version.strip()):
        problems.append("ort_version must be null or a non-empty string")
    expected = data.get("expected_id")
    if isinstance(expected, str) and not _ID.match(expected):
        problems.append(f"expected_id {expected!r} is not a kebab-case id")
    terms = data.get("fix_terms")
    if not isinstance(terms, list) or not terms:
        problems.append("fix_terms must be a non-empty list")
    elif not all(isinstance(t, str) and t.strip() and t == t.lower() for t in terms):
        problems.append("fix_terms must be non-empty lower-case strings")
    return problems


def load_entry(path: Path) -> CorpusEntry:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    problems = schema_problems(path, data)
    if problems:
        raise ValueError(f"{path.name}: " + "; ".join(problems))
    return CorpusEntry(
        name=path.stem,
        source=data["source"],
        repository=data["repository"],
        binding=data["binding"],
        os=data["os"],
        ort_version=data["ort_version"],
        cause=data["cause"],
        expected_id=data["expected_id"],
        fix_that_worked=data["fix_that_worked"],
        fix_terms=tuple(data["fix_terms"]),
        text=data["text"],
    )


def load_corpus() -> list[CorpusEntry]:
    return [load_entry(p) for p in entry_paths()]
