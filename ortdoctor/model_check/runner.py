"""Spawn the model-check child with a timeout; a crash, hang or garbage becomes data, never an exception.

This is a thin spawner of its own rather than the smoke runner's: the model child speaks a different
protocol (request on stdin, one marked JSON line on stdout) and needs the user's model path, not the
built-in smoke model.

Safety: the child starts in an empty temporary directory (``python -m`` puts the working directory first
on ``sys.path``, and onnxruntime writes profiles there), with ``-P`` where Python has it. ortdoctor's own
location is APPENDED to ``PYTHONPATH``: the child must import the same onnxruntime the user's program
would, so nothing ortdoctor adds may shadow the user's own path entries.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHILD_MODULE = "ortdoctor.model_check.child"
_TAIL = 4000
# The same marker as ortdoctor.model_check.child.RESULT_MARKER (a test keeps them equal). Importing the
# child module here would make ``python -m`` warn that it was imported before it ran.
RESULT_MARKER = "ORTDOCTOR-MODEL-CHECK-RESULT "


@dataclass(frozen=True)
class ChildOutcome:
    result: dict[str, Any] | None  # the child's JSON answer, None when it gave none
    returncode: int | None  # None when it was killed for the timeout
    timed_out: bool
    signal: str | None  # "SIGSEGV" when the child died of a signal
    stdout_tail: str
    stderr_tail: str


def child_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    child_env = dict(os.environ if env is None else env)
    ours = str(Path(__file__).resolve().parents[2])
    # The child runs in an empty directory; a relative entry means what it means to the user's program
    # started here, so it is made absolute against this process's working directory.
    parts = [os.path.abspath(p) for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if ours not in parts:
        parts.append(ours)
    child_env["PYTHONPATH"] = os.pathsep.join(parts)
    child_env.setdefault("PYTHONIOENCODING", "utf-8")
    return child_env


def run_child(request: Mapping[str, Any], *, timeout: float, env: Mapping[str, str] | None = None,
              python: str | None = None) -> ChildOutcome:
    """Run the child on ``request``; ``python`` is the interpreter (default: this one)."""
    interpreter = python or sys.executable
    argv = [interpreter, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", CHILD_MODULE]
    with tempfile.TemporaryDirectory(prefix="ortdoctor-model-") as workdir:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=workdir, env=child_environment(env),
                                    start_new_session=True)
        except OSError as exc:
            return ChildOutcome(None, None, False, None, "", f"could not start {interpreter}: {exc}")
        try:
            out, err = proc.communicate(json.dumps(dict(request)).encode(), timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            timed_out = True
    stdout = out.decode("utf-8", errors="replace")
    stderr = err.decode("utf-8", errors="replace")
    code = None if timed_out else proc.returncode
    sig = None
    if code is not None and code < 0:
        try:
            sig = signal.Signals(-code).name
        except ValueError:
            sig = f"signal {-code}"
    return ChildOutcome(parse_result(stdout), code, timed_out, sig, stdout[-_TAIL:], stderr[-_TAIL:])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # The child may have started threads or helpers of its own; its session is ours to end.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            try:
                value = json.loads(line[len(RESULT_MARKER):])
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


__all__ = ["CHILD_MODULE", "ChildOutcome", "child_environment", "parse_result", "run_child"]
