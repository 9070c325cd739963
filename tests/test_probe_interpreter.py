"""``--python PATH``: the interpreter asked for its ``sys.path``; anything else is a clear usage error."""

from __future__ import annotations

import shutil
import sys

import pytest

from ortdoctor.probes.interpreter import InterpreterError, describe


def test_a_python_answers() -> None:
    got = describe(sys.executable)
    assert got.version == ".".join(map(str, sys.version_info[:3]))
    assert got.path


def test_a_program_that_echoes_the_probe_script_is_not_quoted_back() -> None:
    """`ls -c SCRIPT` answers "cannot access '<the whole script, shell-quoted>'": the error says it is not
    Python, without the script."""
    ls = shutil.which("ls")
    if ls is None:
        pytest.skip("no ls here")
    with pytest.raises(InterpreterError) as exc:
        describe(ls)
    message = str(exc.value)
    assert message.startswith(f"--python {ls}: not a Python interpreter that answers")
    assert "import json" not in message
    assert "sys.executable" not in message
