"""Write docs/findings.md from ortdoctor/core/catalog.py (the catalog is the single source).

    python scripts/gen_findings_doc.py          # rewrite the file
    python scripts/gen_findings_doc.py --check  # exit 1 when the file is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.core.catalog import render_markdown  # noqa: E402

DOC = ROOT / "docs" / "findings.md"


def main(argv: list[str]) -> int:
    text = render_markdown()
    if "--check" in argv:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is out of date: run python scripts/gen_findings_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
