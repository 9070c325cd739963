"""Loader for the real error-text corpus in ``tests/data/explain_corpus/``.

Each entry is one YAML file holding a text a user pasted in a public thread, the thread's URL, and the
cause and fix the thread established. The loader only parses and checks the format; what the
classifier makes of each text is measured by ``tests/test_explain_corpus.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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


SPLIT_FILE = CORPUS_DIR / "split.yml"
#: The last entry of the corpus when it was split: every rule then had been written with entries up to
#: here in view, so only the held-out entries after it ("fresh") were never seen by any rule.
SPLIT_AFTER = 170


@dataclass(frozen=True)
class Split:
    """The corpus split by thread (``split.yml``): the seed it was drawn with and the held-out threads."""

    seed: int
    share: float
    heldout: frozenset[str]

    def part(self, entry: CorpusEntry) -> str:
        return "heldout" if entry.source in self.heldout else "working"


def load_split() -> Split:
    data = yaml.safe_load(SPLIT_FILE.read_text(encoding="utf-8"))
    return Split(seed=int(data["seed"]), share=float(data["share"]), heldout=frozenset(data["heldout"]))


@dataclass(frozen=True)
class Score:
    right: int
    total: int

    @property
    def share(self) -> float:
        return self.right / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.right}/{self.total} ({self.share:.1%})"


def first_id_scores(first_id: Callable[[CorpusEntry], str | None]) -> dict[str, Score]:
    """Right first cause per part ("working", "heldout") and for the whole corpus ("all")."""
    split = load_split()
    counts = {"working": [0, 0], "heldout": [0, 0], "fresh": [0, 0]}
    for entry in load_corpus():
        right = first_id(entry) == entry.expected_id
        part = split.part(entry)
        parts = [part] + (["fresh"] if part == "heldout" and int(entry.name[:3]) > SPLIT_AFTER else [])
        for part in parts:
            counts[part][1] += 1
            counts[part][0] += right
    scores = {part: Score(r, t) for part, (r, t) in counts.items()}
    scores["all"] = Score(scores["working"].right + scores["heldout"].right,
                          scores["working"].total + scores["heldout"].total)
    return scores


def scores_markdown(scores: dict[str, Score], split: Split) -> str:
    """The score table docs/explain.md carries (scripts/gen_explain_scores.py writes it)."""
    return (
        "| part | threads | texts | right first cause |\n| --- | --- | --- | --- |\n"
        + "".join(f"| {part} | {_threads(part, split)} | {scores[part].total} | {scores[part]} |\n"
                  for part in ("working", "heldout", "fresh", "all"))
        + f"\nHeld-out threads drawn with seed {split.seed} ({split.share:.0%} of the threads), listed in "
        "`tests/data/explain_corpus/split.yml`.\n"
    )


def _threads(part: str, split: Split) -> int:
    sources = {e.source for e in load_corpus()}
    if part == "fresh":
        return len({e.source for e in load_corpus() if int(e.name[:3]) > SPLIT_AFTER and e.source in split.heldout})
    if part == "all":
        return len(sources)
    held = sources & split.heldout
    return len(held) if part == "heldout" else len(sources - held)
