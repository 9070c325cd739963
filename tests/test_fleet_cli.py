"""`ortdoctor fleet`: usage errors, and what happens where Ray is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Python's own way to make an import fail as if the package were absent: a None entry in sys.modules.
_WITHOUT_RAY = "import sys; sys.modules['ray'] = None; from ortdoctor.cli import main; main(sys.argv[1:])"


def fleet(*args: str, without_ray: bool = False) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", _WITHOUT_RAY, *args] if without_ray else [sys.executable, "-m", "ortdoctor", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_without_ray_it_says_how_to_install_it() -> None:
    proc = fleet("fleet", "--ray", "auto", without_ray=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "ortdoctor fleet --ray needs Ray" in proc.stderr
    assert "pip install 'ortdoctor[fleet]'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_merge_works_without_ray(tmp_path: Path) -> None:
    path = tmp_path / "nothing.json"
    path.write_text("{}\n")
    proc = fleet("fleet", "merge", str(path), without_ray=True)
    assert proc.returncode == 2  # not a report, but merge itself ran without Ray
    assert "not an ortdoctor check report" in proc.stderr


def test_usage_errors(tmp_path: Path) -> None:
    proc = fleet("fleet")
    assert proc.returncode == 2
    assert "ortdoctor fleet --ray auto" in proc.stderr
    assert "ortdoctor fleet merge PATH" in proc.stderr

    proc = fleet("fleet", "--ray", "auto", "merge", str(tmp_path))
    assert proc.returncode == 2
    assert "--ray and `fleet merge` do not go together" in proc.stderr

    proc = fleet("fleet", "--ray", "auto", "--runtime-env", "{pip:", without_ray=True)
    assert proc.returncode == 2
    assert "--runtime-env is not JSON" in proc.stderr

    proc = fleet("fleet", "merge", "--json", "--format", "markdown", str(tmp_path))
    assert proc.returncode == 2
    assert "contradict" in proc.stderr

    proc = fleet("fleet", "merge")
    assert proc.returncode == 2  # click: PATH is required


def test_listed_in_the_help() -> None:
    proc = fleet("--help")
    assert "fleet" in proc.stdout
    assert "Check every node of a cluster (Ray), or merge nodes' reports." in proc.stdout
