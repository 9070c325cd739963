"""``FindingId`` (ortdoctor/core/finding_ids.py) is generated from the catalog and kept current; mypy
rejects an id the catalog does not have."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from ortdoctor.core.catalog import CATALOG

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gen_finding_ids.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_finding_ids", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_type_names_every_catalogued_id() -> None:
    text = (ROOT / "ortdoctor" / "core" / "finding_ids.py").read_text(encoding="utf-8")
    assert text == _generator().render(), "run: python scripts/gen_finding_ids.py"
    for fid in CATALOG:
        assert f'        "{fid}",\n' in text


def test_check_mode_passes_on_the_tree_and_fails_on_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    gen = _generator()
    stale = tmp_path / "finding_ids.py"
    stale.write_text(gen.render().replace('        "smoke-failed",\n', ""), encoding="utf-8")
    monkeypatch.setattr(gen, "MODULE", stale)
    assert gen.main(["--check"]) == 1


@pytest.mark.slow
def test_mypy_rejects_a_misspelt_id(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent("""\
        from ortdoctor.core.catalog import make

        make("smoke-failed", "a catalogued id")
        make("smoke-faild", "a misspelt one")
    """), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent",
                           "--config-file=", str(probe)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          check=False)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, proc.stdout + proc.stderr
    assert "probe.py:4:" in errors[0]
    assert "[arg-type]" in errors[0]
