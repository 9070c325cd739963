"""Spawning the children that load native code (the smoke run, ``check --model``); one way for both.

Whatever a child does (crash with a signal, hang, print megabytes, leave a grandchild behind) the parent
gets a :class:`Finished` and never an exception and never a hang:

* the child runs in a process group (a session) of its own, and the whole group is killed on timeout
  and once the child has exited (a grandchild it left behind would hold the pipes open);
* each output stream is read by a thread that keeps only the first ``head`` and the last ``tail`` bytes
  (a loader error comes early, a result line comes last);
* :func:`python_argv` starts Python with ``-P`` where it has it, so the working directory is not put
  first on ``sys.path``; :func:`add_python_path` APPENDS ortdoctor's own location to ``PYTHONPATH``, so
  the child imports the same onnxruntime the user's program would;
* the answer is one line that starts with a marker (:func:`last_json_line`), so whatever native code
  prints around it cannot corrupt it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence

from ortdoctor.core.record import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

HEAD_BYTES = 256 * 1024  # kept from the start of each stream
TAIL_BYTES = 768 * 1024  # kept from the end of each stream
# The directory that holds the `ortdoctor` package (this file is ortdoctor/prove/child_process.py).
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


# --------------------------------------------------------------------------------------------------
# Command line and environment
# --------------------------------------------------------------------------------------------------
def python_argv(python: str, *args: str) -> list[str]:
    """``python [-P] args...``: ``-P`` (3.11+) keeps the working directory off ``sys.path``."""
    return [python, *(["-P"] if sys.version_info >= (3, 11) else []), *args]


def child_environment(environ: Mapping[str, str] | None = None, import_path: Sequence[str] | None = None,
                      overrides: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The environment of a child that imports onnxruntime for an inspection.

    ``environ`` is the environment the check was asked about (default: this process's); ``import_path``
    the site directories it inspected, which become the child's ``PYTHONPATH`` so that it imports the
    same onnxruntime; ``overrides`` set (or, with None, remove) single variables. ortdoctor itself is
    appended, so the child can run its own code whatever the inspected environment holds.
    """
    env = dict(os.environ if environ is None else environ)
    if import_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(import_path)
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return add_python_path(env)


def add_python_path(env: dict[str, str], entry: str = PACKAGE_ROOT) -> dict[str, str]:
    """Append ``entry`` to ``env["PYTHONPATH"]`` (in place; returned for convenience).

    Relative entries are made absolute against this process's working directory: they mean what they
    mean to the user's program started here, and the child may run elsewhere.
    """
    parts = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if entry not in parts:
        parts.append(entry)
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


# --------------------------------------------------------------------------------------------------
# Bounded capture of one stream
# --------------------------------------------------------------------------------------------------
class Capture:
    """Reads a pipe to EOF in a thread, keeping the first ``head`` and the last ``tail`` bytes only."""

    def __init__(self, stream: IO[bytes], head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self._stream = stream
        self._head_max = head
        self._tail_max = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(65536) if hasattr(self._stream, "read1") else self._stream.read(65536)
                if not chunk:
                    return
                room = self._head_max - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail += chunk
                    excess = len(self.tail) - self._tail_max
                    if excess > 0:
                        del self.tail[:excess]
                        self.dropped += excess
        except (OSError, ValueError):
            return
        finally:
            try:
                self._stream.close()
            except OSError:
                pass

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes of output left out ...]\n{tail}"
        return head + tail


# --------------------------------------------------------------------------------------------------
# Signals and exit status
# --------------------------------------------------------------------------------------------------
def signal_name(returncode: int) -> str:
    """``-11`` -> ``"SIGSEGV"``."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's whole process group (it may have started helpers of its own)."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


@record
class Finished:
    """A child that exited, died or was killed, with its (bounded) output."""

    stdout: str
    stderr: str
    returncode: int | None  # None when it was killed for the timeout
    timed_out: bool

    @property
    def signal(self) -> str | None:
        """``"SIGSEGV"`` when the child died of a signal."""
        code = self.returncode
        return signal_name(code) if code is not None and code < 0 else None

    @property
    def exit_status(self) -> str | None:
        """``"0"``, ``"1"``, ``"SIGSEGV"``, ``"timeout"``."""
        if self.timed_out:
            return "timeout"
        if self.returncode is None:
            return None
        return self.signal or str(self.returncode)


# --------------------------------------------------------------------------------------------------
# Spawning
# --------------------------------------------------------------------------------------------------
class Child:
    """A started child; :meth:`wait` collects it. Start it with :func:`start`."""

    def __init__(self, proc: subprocess.Popen[bytes], out: Capture, err: Capture) -> None:
        self.proc = proc
        self.out = out
        self.err = err

    def wait(self, deadline: float) -> Finished:
        """Wait until ``deadline`` (a :func:`time.perf_counter` value), killing the group past it."""
        proc = self.proc
        timed_out = False
        try:
            proc.wait(timeout=max(0.0, deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill()
        if os.name == "posix" and not timed_out:
            kill_group(proc)  # grandchildren it left behind would hold our pipes open
        self._join()
        return Finished(stdout=self.out.text(), stderr=self.err.text(),
                        returncode=None if timed_out else proc.returncode, timed_out=timed_out)

    def kill(self) -> None:
        """Kill the group and reap the child."""
        kill_group(self.proc)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot stop
            pass

    def _join(self) -> None:
        self.out.thread.join(timeout=5)
        self.err.thread.join(timeout=5)

    def cancel(self) -> None:
        """Kill the child when its result is no longer wanted, and stop reading its output."""
        self.kill()
        self._join()


def start(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    input: bytes | None = None,
    cwd: str | None = None,
    stdout_limits: tuple[int, int] = (HEAD_BYTES, TAIL_BYTES),
) -> Child:
    """Start ``argv`` in a process group of its own, feed it ``input`` on stdin and close that.

    ``stdout_limits`` (head, tail) widens the stdout budget for a child whose answer line is large.

    Raises:
        OSError: the program could not be started.
    """
    kwargs: dict[str, Any] = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True  # its own process group: killed as one on timeout
    else:
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(env), cwd=cwd, close_fds=True, **kwargs)
    out = Capture(proc.stdout, *stdout_limits)  # type: ignore[arg-type]
    err = Capture(proc.stderr)  # type: ignore[arg-type]
    try:
        assert proc.stdin is not None
        if input:
            proc.stdin.write(input)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child died or ignores stdin: its exit status tells
    return Child(proc, out, err)


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str],
    input: bytes | None = None,
    cwd: str | None = None,
    stdout_limits: tuple[int, int] = (HEAD_BYTES, TAIL_BYTES),
) -> Finished:
    """:func:`start` and wait at most ``timeout`` seconds.

    Raises:
        OSError: the program could not be started.
    """
    deadline = time.perf_counter() + max(0.0, timeout)
    return start(argv, env=env, input=input, cwd=cwd, stdout_limits=stdout_limits).wait(deadline)


# --------------------------------------------------------------------------------------------------
# The answer
# --------------------------------------------------------------------------------------------------
def last_json_line(stdout: str, marker: str) -> dict[str, Any] | None:
    """The JSON object on the last line that starts with ``marker``; None when there is none, or it is
    not valid JSON, or not an object."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(marker):
            try:
                value = json.loads(line[len(marker):])
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


__all__ = [
    "HEAD_BYTES",
    "PACKAGE_ROOT",
    "TAIL_BYTES",
    "Capture",
    "Child",
    "Finished",
    "add_python_path",
    "kill_group",
    "last_json_line",
    "python_argv",
    "run",
    "signal_name",
    "start",
]
