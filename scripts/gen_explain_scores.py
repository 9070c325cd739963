"""Rewrite the score table of docs/explain.md: right first cause on the corpus's working and held-out parts.

    python scripts/gen_explain_scores.py          # rewrite the table
    python scripts/gen_explain_scores.py --check  # exit 1 when the table is out of date
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.diagnose.classify import classify  # noqa: E402
from tests.support.explain_corpus import CorpusEntry, first_id_scores, load_split, scores_markdown  # noqa: E402

DOC = ROOT / "docs" / "explain.md"
_TABLE = re.compile(r"(<!-- scores -->\n).*?(<!-- /scores -->)", re.DOTALL)


def _first_id(entry: CorpusEntry) -> str | None:
    matches = classify(entry.text)
    return matches[0].finding_id if matches else None


def main(argv: list[str]) -> int:
    table = scores_markdown(first_id_scores(_first_id), load_split())
    current = DOC.read_text(encoding="utf-8")
    text = _TABLE.sub(lambda m: m.group(1) + table + m.group(2), current)
    if "--check" in argv:
        if text != current:
            print(f"{DOC} is out of date: run python scripts/gen_explain_scores.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
