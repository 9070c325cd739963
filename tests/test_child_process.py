"""The one child spawner behind the smoke run and ``check --model``: real children that misbehave."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from ortdoctor.prove import child_process
from ortdoctor.prove.child_process import Finished, last_json_line


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_answer_line_and_input() -> None:
    code = "import sys; data = sys.stdin.read(); print('noise'); print('MARK ' + data); print('after')"
    done = child_process.run(_py(code), timeout=60, env=os.environ, input=b'{"a": 1}')
    assert (done.returncode, done.timed_out, done.exit_status, done.signal) == (0, False, "0", None)
    assert last_json_line(done.stdout, "MARK ") == {"a": 1}


def test_answer_line_that_is_no_object() -> None:
    assert last_json_line("MARK [1]\n", "MARK ") is None
    assert last_json_line("MARK {broken\n", "MARK ") is None
    assert last_json_line("nothing\n", "MARK ") is None
    assert last_json_line('MARK {"old": 1}\nMARK {"new": 2}\n', "MARK ") == {"new": 2}


def test_signal_is_named() -> None:
    done = child_process.run(_py("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"), timeout=60,
                             env=os.environ)
    assert (done.signal, done.exit_status) == ("SIGSEGV", "SIGSEGV")
    assert Finished("", "", -200, False).signal == "signal 200"


def test_timeout_kills_the_group_and_never_hangs() -> None:
    # The grandchild inherits the pipes: only killing the whole group lets the readers finish.
    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
            " print('started', flush=True); time.sleep(600)")
    t0 = time.perf_counter()
    done = child_process.run(_py(code), timeout=2, env=os.environ)
    assert (done.timed_out, done.returncode, done.exit_status) == (True, None, "timeout")
    assert "started" in done.stdout
    assert time.perf_counter() - t0 < 60


def test_output_is_bounded_unless_widened() -> None:
    code = "import sys; sys.stdout.write('x' * 3_000_000 + '\\nEND\\n')"
    done = child_process.run(_py(code), timeout=60, env=os.environ)
    assert len(done.stdout) < 1_100_000
    assert "bytes of output left out" in done.stdout
    assert done.stdout.endswith("END\n")
    wide = child_process.run(_py(code), timeout=60, env=os.environ, stdout_limits=(1024, 8 * 1024 * 1024))
    assert len(wide.stdout) == 3_000_000 + 5


def test_a_program_that_cannot_start_raises_oserror() -> None:
    with pytest.raises(FileNotFoundError):
        child_process.run(["/nonexistent/python"], timeout=5, env=os.environ)


def test_cwd_and_python_path(tmp_path: Path) -> None:
    env = child_process.add_python_path({"PYTHONPATH": "rel" + os.pathsep + "/abs"})
    parts = env["PYTHONPATH"].split(os.pathsep)
    assert parts == [os.path.abspath("rel"), "/abs", child_process.PACKAGE_ROOT]  # ours last: never shadows
    assert child_process.add_python_path(dict(env)) == env  # not added twice
    argv = child_process.python_argv(sys.executable, "-c", "import os, sys; print(os.getcwd()); print(sys.path[0])")
    done = child_process.run(argv, timeout=60, env=os.environ, cwd=str(tmp_path))
    cwd, first = done.stdout.splitlines()[:2]
    assert cwd == str(tmp_path)
    if sys.version_info >= (3, 11):
        assert first != ""  # -P: the working directory is not first on sys.path
