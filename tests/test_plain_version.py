"""``parse_version`` reads plain versions without packaging; what it gives must be what packaging gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import InvalidVersion, Version

from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import PlainVersion, parse_version

ROOT = Path(__file__).resolve().parents[1]


def _same(text: str) -> None:
    ours = parse_version(text)
    try:
        theirs: Version | None = Version(text.strip())
    except InvalidVersion:
        theirs = None
    if theirs is None:
        assert ours is None, text
        return
    assert ours is not None, text
    assert ours.release == theirs.release, text
    assert ours.local == theirs.local, text
    assert ours.is_prerelease == theirs.is_prerelease, text
    assert ours.is_devrelease == theirs.is_devrelease, text
    assert ours.base_version == theirs.base_version, text


SAMPLES = ["1.31.1", "2.11.0+cu130", "9.19.0.56", "13.0.96", "1.20", "0", "0.0.1", "v1.2", " 1.2 ", "1.2+cpu",
           "2.4.1+rocm6.1", "1.2+ubuntu.1", "1.2+CU121", "1.2+a-b", "1.2+a_b", "01.2", "1.02", "1.2.post1", "1.2rc1",
           "1.2.dev0", "1!2.0", "1.2+01", "1.2+0", "1.2+1a", "1.2+", "", "x", "1..2", "1.2.", "V1.2", "1.2+cu.01"]


@pytest.mark.parametrize("text", SAMPLES)
def test_samples_read_as_packaging_reads_them(text: str) -> None:
    _same(text)


def test_plain_ones_take_the_fast_path() -> None:
    for text in ("1.31.1", "2.11.0+cu130", "9.19.0.56", "v1.2", "1.2+ubuntu.1"):
        assert isinstance(parse_version(text), PlainVersion), text
    for text in ("1.2rc1", "1.02", "1.2+CU121", "1!2.0"):
        assert not isinstance(parse_version(text), PlainVersion), text


def test_every_version_the_matrix_holds() -> None:
    m = load_matrix()
    texts = {v for r in m.releases for v in (r.line, *r.versions)}
    texts |= {t.version for t in m.torch}
    texts |= {v for row in m.packages.values() for v in row.versions}
    assert len(texts) > 100
    for text in sorted(texts):
        _same(text)


@given(st.from_regex(r"\A(v?[0-9]{1,3}(\.[0-9]{1,3}){0,4}(\+[a-zA-Z0-9._-]{1,8})?)\Z", fullmatch=True))
def test_generated_versions(text: str) -> None:
    _same(text)


def test_check_does_not_import_packaging() -> None:
    """Where every installed version is plain, as in the environment the tests run in, a check never
    imports packaging (its import, with typing's, is ~7% of a check)."""
    code = ("import sys\n"
            "from ortdoctor.doctor.check import run_check\n"
            "from ortdoctor.report.json_report import dumps\n"
            "dumps(run_check(smoke=False))\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('packaging'))))\n")
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
