"""The matrix ships inside the wheel and a plain (non-editable) install finds it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(REPO)],
                   check=True, timeout=600, capture_output=True)
    wheels = list(out.glob("ortdoctor-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.mark.slow
def test_wheel_contains_the_matrix(built_wheel: Path) -> None:
    with zipfile.ZipFile(built_wheel) as zf:
        names = zf.namelist()
        assert "ortdoctor/compat_matrix.yaml" in names
        shipped = zf.read("ortdoctor/compat_matrix.yaml")
    assert shipped == (REPO / "compat_matrix.yaml").read_bytes()


@pytest.mark.slow
def test_installed_copy_loads_its_own_matrix(built_wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target),
                    str(built_wheel)], check=True, timeout=300, capture_output=True)
    code = ("from ortdoctor.decide.matrix.load import load_matrix, default_matrix_path\n"
            "m = load_matrix()\n"
            "print(default_matrix_path())\n"
            "print(m.release_for('1.31.1').release.cuda)\n")
    env = {k: v for k, v in os.environ.items() if k != "ORTDOCTOR_MATRIX"}
    env["PYTHONPATH"] = str(target)
    # run outside the repository so nothing can fall back to the checkout's compat_matrix.yaml
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    path, cuda = proc.stdout.split()
    assert Path(path) == (target / "ortdoctor" / "compat_matrix.yaml").resolve()
    assert cuda == "13.0"


@pytest.mark.slow
def test_wheel_ships_the_snapshot_of_its_matrix(built_wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(built_wheel) as zf:
        assert "ortdoctor/decide/matrix/matrix_snapshot.marshal" in zf.namelist()
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target),
                    str(built_wheel)], check=True, timeout=300, capture_output=True)
    # The installed YAML matches the installed snapshot: the matrix loads without importing PyYAML.
    code = ("import sys\nfrom ortdoctor.decide.matrix.load import load_matrix\nload_matrix()\n"
            "print('yaml' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != "ORTDOCTOR_MATRIX"}
    env["PYTHONPATH"] = str(target)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_wheel_ships_the_report_schema(built_wheel: Path) -> None:
    with zipfile.ZipFile(built_wheel) as zf:
        shipped = zf.read("ortdoctor/report/check.schema.json")
    assert shipped == (REPO / "ortdoctor" / "report" / "check.schema.json").read_bytes()
