"""A library no wheel's RECORD describes, cut short: told from its own ELF program headers.

A truncated copy on LD_LIBRARY_PATH (an interrupted copy, a full disk) is what a program that does not
preload maps, and the first page past the file's end kills it with SIGBUS. ``check`` calls it damaged;
the rule is ``decide/integrity.py: short_elf``, for the loader too.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.decide.integrity import short_elf
from tests.support.sharedlibs import build_so
from tests.test_preload_helpers import ROOT


def _lib(tmp_path: Path) -> Path:
    # a few kB of code and data, so half of it ends inside a PT_LOAD segment
    body = "".join(f"int f{i}(int x) {{ return x * {i} + {i * 7}; }}\n" for i in range(400))
    return build_so(tmp_path / "whole", "libcublasLt.so.13", source=body + "const char table[8192] = {1};\n")


@pytest.mark.parametrize("keep", [0, 40, 4096, "half"])
def test_a_cut_short_library_is_told_by_its_own_headers(tmp_path: Path, keep: int | str) -> None:
    whole = _lib(tmp_path)
    data = whole.read_bytes()
    n = len(data) // 2 if keep == "half" else int(keep)
    cut = tmp_path / "cut" / "libcublasLt.so.13"
    cut.parent.mkdir()
    cut.write_bytes(data[:n])
    got = short_elf(str(cut))
    assert got is not None
    assert got.size == n
    assert got.needed is None or got.needed > n
    assert str(cut) in got.describe()
    assert "cut short" in got.describe()


def test_a_whole_library_a_text_file_and_a_fifo_are_not_short(tmp_path: Path) -> None:
    assert short_elf(str(_lib(tmp_path))) is None
    text = tmp_path / "libfoo.so"
    text.write_text("/* GNU ld script */ GROUP ( libfoo.so.1 )\n")
    assert short_elf(str(text)) is None  # dlopen refuses it cleanly
    fifo = tmp_path / "libfifo.so.1"
    os.mkfifo(fifo)
    assert short_elf(str(fifo)) is None  # never blocks on it
    assert short_elf(str(tmp_path / "absent.so")) is None


@pytest.mark.realwheels
def test_check_calls_a_cut_short_copy_on_ld_library_path_damaged(tmp_path: Path) -> None:
    from tests.support.testenvs import ensure

    nvidia, ort = ensure("nvidia-cu13"), ensure("ort-gpu")
    ldp = tmp_path / "ld path"
    ldp.mkdir()
    real = nvidia / "nvidia/cu13/lib/libcublasLt.so.13"
    with open(real, "rb") as f:
        (ldp / "libcublasLt.so.13").write_bytes(f.read(4096))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORTDOCTOR_") and k != "PYTHONPATH"}
    env.update(PYTHONPATH=os.pathsep.join([str(ort), str(nvidia), str(ROOT)]), LD_LIBRARY_PATH=str(ldp),
               ORTDOCTOR_CACHE="0")
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--json", "--no-smoke"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    data = json.loads(proc.stdout)
    damaged = next(f for f in data["findings"] if f["id"] == "lib-file-damaged")
    assert damaged["severity"] == "error"
    assert f"{ldp / 'libcublasLt.so.13'}: 4096 bytes, but its ELF program headers map" in damaged["detail"]
    assert "(LD_LIBRARY_PATH)" in damaged["detail"]
    # the fix's first line is a command that moves the file aside, its path (with a space) one word
    assert shlex.split(damaged["fix"].splitlines()[0]) == ["mv", "--", str(ldp / "libcublasLt.so.13"),
                                                           str(ldp / "libcublasLt.so.13") + ".cut-short"]
    other = next((f for f in data["findings"] if f["id"] == "default-loader-picks-other-copy"), None)
    if other is not None:
        assert "takes system" not in other["detail"]  # an LD_LIBRARY_PATH directory is not "system"
