"""Write ortdoctor/decide/matrix/matrix_snapshot.marshal from compat_matrix.yaml (the YAML is the single source).

    python scripts/gen_matrix_snapshot.py          # rewrite the snapshot
    python scripts/gen_matrix_snapshot.py --check  # exit 1 when the snapshot is out of date

The snapshot is the YAML's validated model (marshal, version 2: the same bytes from every Python) under a
header line with the YAML's size and CRC-32: ``load_matrix()`` rebuilds the
model from it instead of parsing and validating the YAML whenever the YAML's bytes still match, and
parses the YAML otherwise. A stale snapshot is therefore never used, only slower; the tests run
``--check`` (tests/test_matrix_snapshot.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.decide.matrix.load import snapshot_bytes, snapshot_path  # noqa: E402
from ortdoctor.decide.matrix.model import MatrixError  # noqa: E402

YAML = ROOT / "compat_matrix.yaml"


def render(yaml_path: Path = YAML) -> bytes:
    """The snapshot file's bytes for ``yaml_path``."""
    return snapshot_bytes(yaml_path)


def main(argv: list[str]) -> int:
    try:
        text = render()
    except MatrixError as exc:
        print(f"not writing a snapshot of an invalid matrix: {exc}", file=sys.stderr)
        return 2
    out = Path(snapshot_path())
    if "--check" in argv:
        current = out.read_bytes() if out.exists() else b""
        if current != text:
            print(f"{out} is out of date: run python scripts/gen_matrix_snapshot.py", file=sys.stderr)
            return 1
        return 0
    out.write_bytes(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
