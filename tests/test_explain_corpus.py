"""The real error-text corpus: its format, and how well the classifier names each text's root cause.

Every entry under ``tests/data/explain_corpus/`` is a text a user pasted in a public thread, with the
cause the thread established (see that folder's README). The accuracy test measures the share of texts
whose first classified id is the expected one and asserts the target; it writes a table of the misses
to the temporary directory for whoever works on it. A right id is not enough: the fix printed with it
must contain the entry's ``fix_terms`` (what the thread's working fix hinged on).
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest
import yaml

from ortdoctor.core.catalog import CATALOG
from ortdoctor.diagnose.classify import classify
from tests.support.explain_corpus import (
    CORPUS_DIR,
    CorpusEntry,
    Split,
    entry_paths,
    first_id_scores,
    load_corpus,
    load_split,
    schema_problems,
    scores_markdown,
)

TARGET_ACCURACY = 0.95  # the working part, which rules are written against
# the held-out part: a regression floor at the score it stands at now, raised as it rises; the goal is 0.90
# and is not reached: 31 fresh threads (entries 184-214) joined the part at 72/94 before any rule changed,
# and general rules brought it to 84/94; with entries 215-221 (scored before any rule changed, 5 of 7
# right) it stood at 89/101, and 90/101 after the single-digit GPU names (T4, P4, L4) were read
# (docs/explain.md). Entries 222-238 and 260-272 (30 threads, scored before any rule changed: 17 of 30 right
# once 233 was labelled by the corpus rule) brought it to 107/131 (81.7 %); general readings written after
# their misses were classified brought it to 118/131 (90.1 %), a figure for rules written with those
# classes in view. Entries 300-314 and 341-354 (29 threads, scored against those rules before any rule
# changed: 18 of 29 right) brought it to 136/160 (85.0 %), the measure of texts no rule was written against;
# round 3's general readings, written after their misses were classified, brought it to 142/160 (88.8 %).
# Entries 380-394 and 410-425 (31 threads, scored against round 3 before any rule changed: 22 of 31 right)
# brought it to 164/191 (85.9 %), and round 4's readings to 166/191 (86.9 %). Entries 440-459 and 470-483
# (34 threads, scored against round 4 before any rule changed: 22 of 34 right) brought it to 188/225
# (83.6 %); round 5's two fixes to 189/225 (84.0 %). Entries 500-514 and 530-543 (29 threads, scored against
# round 5 before any rule changed: 21 of 29 right) brought it to 210/254 (82.7 %); round 6's general readings to
# 214/254. Entries 560-564 and 580-587 (13 threads, not seen by round 6: 6 of 13 right before it and after it)
# brought it to 220/267, the error-35 reading to 221/267, and round 7 (the CUDA a person says is installed) to
# 222/267 (83.1 %). Entries 600-605 and 640-645 (12 threads, scored against round 7 before any rule changed: 4
# of 12 right) brought it to 226/279 (81.0 %); round 8's three readings to 229/279 (82.1 %).
# Entries 660-668 and 680-684 (14 threads, scored against round 8 before any rule changed: 4 of 14 right)
# brought it to 233/293 (79.5 %); round 9 (a machine without an NVIDIA GPU) to 235/293 (80.2 %). The floor follows the measured score,
# it is not a target.
HELDOUT_FLOOR = 0.79
MIN_ENTRIES = 170
DOC = Path(__file__).resolve().parents[1] / "docs" / "explain.md"
MISSES_FILE = Path(tempfile.gettempdir()) / "ortdoctor-explain-corpus-misses.md"

PATHS = entry_paths()


def _new_ids() -> set[str]:
    """Ids the corpus proposes that the catalog does not have yet, as documented in NEW_IDS.md."""
    text = (CORPUS_DIR / "NEW_IDS.md").read_text(encoding="utf-8")
    return set(re.findall(r"^### `([a-z0-9-]+)`", text, flags=re.MULTILINE))


def _first_id(entry: CorpusEntry) -> str | None:
    matches = classify(entry.text)
    return matches[0].finding_id if matches else None


_ENTRIES = load_corpus()


def test_the_corpus_is_big_enough() -> None:
    assert len(PATHS) >= MIN_ENTRIES


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_entry_is_well_formed(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert schema_problems(path, data) == []


def test_entry_numbers_are_unique() -> None:
    numbers = Counter(p.name[:3] for p in PATHS)
    assert [n for n, c in numbers.items() if c > 1] == []


def test_no_entry_is_stored_twice() -> None:
    # The same short message can come from different threads with different
    # causes (entries 144 and 146 both paste the cuDNN 8 "Could not locate"
    # line); only a repeated (thread, text) pair is a duplicate.
    pairs = Counter((e.source, e.text) for e in load_corpus())
    assert [src for (src, _), c in pairs.items() if c > 1] == []


def test_no_thread_contributes_the_same_error_twice() -> None:
    # Two entries may come from one thread only when they quote different
    # failures (a later comment, another user); a shorter or longer cut of
    # the same paste would only weight that thread twice.
    by_source: dict[str, list[str]] = {}
    for e in load_corpus():
        by_source.setdefault(e.source, []).append(e.text.strip(" `\n"))
    overlapping = [
        source
        for source, texts in by_source.items()
        for i, a in enumerate(texts)
        for b in texts[i + 1 :]
        if a in b or b in a or a.splitlines()[-1] == b.splitlines()[-1]
    ]
    assert overlapping == []


def test_every_expected_id_is_in_the_catalog_or_proposed() -> None:
    known = set(CATALOG) | _new_ids()
    unknown = sorted({e.expected_id for e in load_corpus()} - known)
    assert unknown == []


def test_every_proposed_id_is_used_or_listed_as_requested() -> None:
    # NEW_IDS.md may describe a requested id the corpus maps to an existing catalog id instead; it says
    # so in the entry. Every other proposed id must have at least one real text.
    used = {e.expected_id for e in load_corpus()}
    text = (CORPUS_DIR / "NEW_IDS.md").read_text(encoding="utf-8")
    for fid in _new_ids():
        section = text.split(f"### `{fid}`", 1)[1].split("\n### ", 1)[0]
        assert fid in used or "not used" in section.lower(), fid


def _misses_table(rows: list[tuple[CorpusEntry, str | None]], split: Split) -> str:
    lines = ["| entry | part | binding | expected | got |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {e.name} | {split.part(e)} | {e.binding} | {e.expected_id} | {got or '(nothing)'} |"
              for e, got in rows]
    pairs = Counter((e.expected_id, got or "(nothing)") for e, got in rows)
    lines += ["", "| expected -> got | count |", "| --- | --- |"]
    lines += [f"| {exp} -> {got} | {n} |" for (exp, got), n in pairs.most_common()]
    return "\n".join(lines) + "\n"


def test_first_id_accuracy_reaches_the_target() -> None:
    entries = load_corpus()
    split = load_split()
    results = [(e, _first_id(e)) for e in entries]
    misses = [(e, got) for e, got in results if got != e.expected_id]
    got_by_name = {e.name: got for e, got in results}
    scores = first_id_scores(lambda e: got_by_name[e.name])
    summary = ", ".join(f"{part} {scores[part]}" for part in ("working", "heldout", "fresh", "all"))
    print(f"\nexplain corpus, right first cause: {summary}; seed {split.seed}")
    MISSES_FILE.write_text(
        f"# explain corpus: {summary}\n\n" + _misses_table([(e, g) for e, g in misses], split),
        encoding="utf-8",
    )
    assert scores["working"].share >= TARGET_ACCURACY, f"working part {scores['working']}; misses in {MISSES_FILE}"
    assert scores["heldout"].share >= HELDOUT_FLOOR, f"held-out part {scores['heldout']}; misses in {MISSES_FILE}"


def test_the_held_out_part_is_at_least_the_share_it_was_drawn_with() -> None:
    split = load_split()
    sources = {e.source for e in load_corpus()}
    assert split.heldout <= sources, sorted(split.heldout - sources)
    assert len(split.heldout) >= split.share * len(sources) - 1


def test_docs_carry_the_current_scores() -> None:
    # docs/explain.md states both scores; scripts/gen_explain_scores.py rewrites its table
    doc = DOC.read_text(encoding="utf-8")
    table = scores_markdown(first_id_scores(_first_id), load_split())
    assert table in doc, "docs/explain.md is out of date: run python scripts/gen_explain_scores.py"


@pytest.mark.parametrize("entry", _ENTRIES, ids=[e.name for e in _ENTRIES])
def test_a_right_first_id_comes_with_a_fix_that_has_the_fix_terms(entry: CorpusEntry) -> None:
    matches = classify(entry.text)
    if not matches or matches[0].finding_id != entry.expected_id:
        pytest.skip(f"first id is {matches[0].finding_id if matches else None}: counted by the accuracy test")
    printed = matches[0].fix.lower()
    assert [t for t in entry.fix_terms if t not in printed] == [], matches[0].fix
