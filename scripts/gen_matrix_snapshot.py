"""Write ortdoctor/decide/matrix/matrix_snapshot.json from compat_matrix.yaml (the YAML is the single source).

    python scripts/gen_matrix_snapshot.py          # rewrite the snapshot
    python scripts/gen_matrix_snapshot.py --check  # exit 1 when the snapshot is out of date

The snapshot is the YAML's validated model plus the YAML's size and CRC-32: ``load_matrix()`` rebuilds the
model from it instead of parsing and validating the YAML whenever the YAML's bytes still match, and
parses the YAML otherwise. A stale snapshot is therefore never used, only slower; the tests run
``--check`` (tests/test_matrix_snapshot.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.decide.matrix.load import snapshot_document, snapshot_path  # noqa: E402
from ortdoctor.decide.matrix.model import MatrixError  # noqa: E402

YAML = ROOT / "compat_matrix.yaml"


def render(yaml_path: Path = YAML) -> str:
    """The snapshot file's text for ``yaml_path``."""
    # One line per nested value keeps a matrix change a readable diff of the snapshot too.
    return json.dumps(snapshot_document(yaml_path), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    try:
        text = render()
    except MatrixError as exc:
        print(f"not writing a snapshot of an invalid matrix: {exc}", file=sys.stderr)
        return 2
    out = Path(snapshot_path())
    if "--check" in argv:
        current = out.read_text(encoding="utf-8") if out.exists() else ""
        if current != text:
            print(f"{out} is out of date: run python scripts/gen_matrix_snapshot.py", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
