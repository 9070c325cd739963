"""Shell completion (click's mechanism, scripts printed by `ortdoctor completion SHELL`) and the short help.

The bash test sources the printed script into a real bash and calls its completion function the way
bash does on TAB, so it proves the whole round trip: script -> ortdoctor -> COMPREPLY.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """PATH with an ``ortdoctor`` command (the installed console script, else ``python -m ortdoctor``)."""
    d = tmp_path_factory.mktemp("bin")
    script = Path(sys.executable).parent / "ortdoctor"
    if script.exists():
        (d / "ortdoctor").symlink_to(script)
    else:
        (d / "ortdoctor").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m ortdoctor \"$@\"\n")
        (d / "ortdoctor").chmod(0o755)
    out = dict(os.environ)
    out["PATH"] = os.pathsep.join([str(d), out.get("PATH", "")])
    out["PYTHONPATH"] = str(ROOT)
    for key in list(out):
        if key.startswith("_ORTDOCTOR_COMPLETE"):
            del out[key]
    return out


def ortdoctor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ortdoctor", *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_is_printed_by_ortdoctor(env: dict[str, str], shell: str) -> None:
    proc = ortdoctor(env, "completion", shell)
    assert proc.returncode == 0, proc.stderr
    assert "_ORTDOCTOR_COMPLETE" in proc.stdout
    assert f"{shell}_complete" in proc.stdout  # the mode the script asks ortdoctor for


def test_bash_script_is_valid_bash(env: dict[str, str]) -> None:
    script = ortdoctor(env, "completion", "bash").stdout
    proc = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


def test_unknown_shell_is_a_usage_error(env: dict[str, str]) -> None:
    proc = ortdoctor(env, "completion", "tcsh")
    assert proc.returncode == 2
    assert "tcsh" in proc.stderr


def complete_in_bash(env: dict[str, str], *words: str) -> list[str]:
    """Source `ortdoctor completion bash` into bash and run its function as TAB would, after ``words``
    (the last word is the one being completed)."""
    program = (
        'eval "$(ortdoctor completion bash)"\n'
        f"COMP_WORDS=(ortdoctor {' '.join(shlex.quote(w) for w in words)})\n"
        f"COMP_CWORD={len(words)}\n"
        "_ortdoctor_completion ortdoctor\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line]


def test_bash_completes_subcommands(env: dict[str, str]) -> None:
    words = complete_in_bash(env, "")
    assert {"check", "preload", "explain", "matrix", "hook", "completion"} <= set(words)
    assert complete_in_bash(env, "pre") == ["preload"]


def test_bash_completes_options_and_choices(env: dict[str, str]) -> None:
    assert "--format" in complete_in_bash(env, "check", "--fo")
    assert complete_in_bash(env, "check", "--format", "") == ["text", "json", "markdown"]
    assert complete_in_bash(env, "completion", "") == ["bash", "zsh", "fish"]


def test_the_raw_completion_protocol(env: dict[str, str]) -> None:
    """What the script asks ortdoctor: `type,value` lines on stdout."""
    proc = subprocess.run(["ortdoctor"], env={**env, "COMP_WORDS": "ortdoctor ", "COMP_CWORD": "1",
                                              "_ORTDOCTOR_COMPLETE": "bash_complete"},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "plain,check" in proc.stdout.splitlines()
    assert "plain,preload" in proc.stdout.splitlines()


def test_help_shows_the_three_common_uses_first(env: dict[str, str]) -> None:
    proc = ortdoctor(env, "--help")
    assert proc.returncode == 0
    lines = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    assert lines[0].startswith("Usage: ortdoctor")
    uses = lines.index("Common uses:")
    assert uses < lines.index("Options:") < lines.index("Commands:")
    assert lines[uses + 1].startswith("ortdoctor check ")
    assert lines[uses + 2].startswith("ortdoctor preload ")
    assert lines[uses + 3].startswith("ortdoctor explain ")
    assert "import ortdoctor.hook" in proc.stdout
