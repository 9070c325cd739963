"""Spawn the model-check child with a timeout; a crash, hang or garbage becomes data, never an exception.

The spawning itself (process group killed on timeout, bounded capture, ``-P``, the answer line) is
:mod:`ortdoctor.prove.child_process`, shared with the smoke runner; what is particular here is the protocol
(request on stdin, one marked JSON line on stdout) and the user's model path.

Safety: the child starts in an empty temporary directory (``python -m`` puts the working directory first
on ``sys.path`` where ``-P`` is missing, and onnxruntime writes profiles there). ortdoctor's own location
is APPENDED to ``PYTHONPATH``: the child must import the same onnxruntime the user's program would, so
nothing ortdoctor adds may shadow the user's own path entries.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ortdoctor.prove import child_process

CHILD_MODULE = "ortdoctor.prove.model_check.child"
_TAIL = 4000
# The answer lists every node of the model with its provider: megabytes for a large graph, all on stdout
# (ORT's log goes to stderr), so stdout keeps far more than the default budget.
_STDOUT_LIMITS = (child_process.HEAD_BYTES, 256 * 1024 * 1024)
# The same marker as ortdoctor.prove.model_check.child.RESULT_MARKER (a test keeps them equal). Importing the
# child module here would make ``python -m`` warn that it was imported before it ran.
RESULT_MARKER = "ORTDOCTOR-MODEL-CHECK-RESULT "
STAGE_MARKER = "ORTDOCTOR-MODEL-CHECK-STAGE "


@dataclass(frozen=True)
class ChildOutcome:
    result: dict[str, Any] | None  # the child's JSON answer, None when it gave none
    returncode: int | None  # None when it was killed for the timeout
    timed_out: bool
    signal: str | None  # "SIGSEGV" when the child died of a signal
    stdout_tail: str
    stderr_tail: str
    stage: str | None = None  # the last step of the test run the child started ("cpu", "ep")


def run_child(request: Mapping[str, Any], *, timeout: float, env: Mapping[str, str] | None = None,
              python: str | None = None, import_path: Sequence[str] | None = None) -> ChildOutcome:
    """Run the child on ``request``; ``python`` is the interpreter (default: this one), ``env`` and
    ``import_path`` the environment and site directories to inspect (see
    :func:`ortdoctor.prove.child_process.child_environment`)."""
    interpreter = python or sys.executable
    argv = child_process.python_argv(interpreter, "-m", CHILD_MODULE)
    with tempfile.TemporaryDirectory(prefix="ortdoctor-model-") as workdir:
        try:
            done = child_process.run(argv, timeout=timeout, env=child_process.child_environment(env, import_path), cwd=workdir,
                                     input=json.dumps(dict(request)).encode(), stdout_limits=_STDOUT_LIMITS)
        except OSError as exc:
            return ChildOutcome(None, None, False, None, "", f"could not start {interpreter}: {exc}")
    return ChildOutcome(parse_result(done.stdout), done.returncode, done.timed_out, done.signal,
                        done.stdout[-_TAIL:], done.stderr[-_TAIL:], last_stage(done.stdout))


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The last complete answer: the final one, or the partial one written before the test run when the
    child was killed (a line cut off in the middle is skipped)."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RESULT_MARKER)]
    for line in reversed(lines):
        answer = child_process.last_json_line(line, RESULT_MARKER)
        if answer is not None:
            return answer
    return None


def last_stage(stdout: str) -> str | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(STAGE_MARKER):
            return line[len(STAGE_MARKER):].strip() or None
    return None


__all__ = ["CHILD_MODULE", "ChildOutcome", "last_stage", "parse_result", "run_child"]
