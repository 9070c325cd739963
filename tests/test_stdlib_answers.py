"""``ortdoctor.probes.stdlib_answers`` gives what ``platform``, ``sysconfig``, ``shutil.which`` and
``glob`` give, on this machine and for the cases each shortcut handles."""

from __future__ import annotations

import glob
import os
import platform
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest

from ortdoctor.probes import stdlib_answers


def test_interpreter_answers_match_the_stdlib() -> None:
    assert stdlib_answers.machine() == platform.machine()
    assert stdlib_answers.python_version() == platform.python_version()
    assert stdlib_answers.python_implementation() == platform.python_implementation()
    assert stdlib_answers.platform_tag() == sysconfig.get_platform()
    value = sysconfig.get_config_var("MULTIARCH")
    assert stdlib_answers.multiarch() == (value if isinstance(value, str) and value else None)


def test_platform_tag_honours_the_cross_build_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_PYTHON_HOST_PLATFORM", "linux-aarch64")
    assert stdlib_answers.platform_tag() == sysconfig.get_platform()


def _exe(path: Path, mode: int = 0o755) -> Path:
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


@pytest.mark.skipif(os.name != "posix", reason="the shortcut is POSIX's; elsewhere shutil answers")
def test_which_matches_shutil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = (tmp_path / n for n in ("a", "b", "c"))
    for d in (a, b, c):
        d.mkdir()
    _exe(a / "pip", 0o644)  # not executable: skipped
    (b / "pip").mkdir()  # a directory: skipped
    _exe(c / "pip")
    _exe(c / "uv")
    monkeypatch.chdir(a)
    _exe(a / "here")
    for path in (os.pathsep.join(map(str, (a, b, c))), str(c), "", os.pathsep.join(["", str(c)]),
                 os.pathsep.join([str(tmp_path / "missing"), str(c)])):
        for name in ("pip", "uv", "here", "nothing"):
            assert stdlib_answers.which(name, path) == shutil.which(name, path=path), (name, path)
    assert stdlib_answers.which(str(c / "uv"), "") == shutil.which(str(c / "uv"), path="")


def test_directory_entries_match_glob(tmp_path: Path) -> None:
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm", ".nvidia-hidden", "other", "nvidia"):
        (tmp_path / name).touch()
    (tmp_path / "ld-musl-x86_64.so.1").touch()
    (tmp_path / "ld-musl-.so.1.bak").touch()
    assert stdlib_answers.directory_entries(str(tmp_path), "nvidia") == sorted(
        glob.glob(os.path.join(tmp_path, "nvidia*")))
    assert stdlib_answers.directory_entries(str(tmp_path), "ld-musl-", ".so.1") == sorted(
        glob.glob(os.path.join(tmp_path, "ld-musl-*.so.1")))
    assert stdlib_answers.directory_entries(str(tmp_path / "missing"), "x") == []


def test_nothing_heavy_is_imported_for_the_answers() -> None:
    """The point of the module: asking costs no import (checked in a fresh interpreter)."""
    import subprocess

    code = ("import sys\n"
            "from ortdoctor.probes import stdlib_answers as s\n"
            "s.machine(); s.python_version(); s.python_implementation(); s.platform_tag(); s.multiarch()\n"
            "s.which('pip', '/usr/bin'); s.directory_entries('/dev', 'nvidia')\n"
            "print(sorted({'platform', 'sysconfig', 'shutil', 'glob'} & set(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    if sys.platform.startswith("linux"):
        assert out.stdout.strip() == "[]"

