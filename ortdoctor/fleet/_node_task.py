"""What runs on each Ray node: ``python -m ortdoctor check --json`` in a child, within a time limit.

Standard library only, and shipped to the workers by value (see :mod:`ortdoctor.fleet.ray_runner`): the
Ray worker itself needs no ortdoctor, only the Python that runs the check does (``--python``), which
may be another environment than the worker's. ``ray`` is imported here only inside the task, and only
to undo what Ray does to ``CUDA_VISIBLE_DEVICES`` in tasks that asked for no GPU.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

STDERR_TAIL = 4000  # characters of the check's stderr kept when it fails
# `python -m ortdoctor`, without the working directory on sys.path (what -P does, for any Python 3): the
# check must see the environment the console script `ortdoctor` sees, not a checkout the worker runs in
_RUN_ORTDOCTOR = ("import sys, runpy\n"
                  "if sys.path and sys.path[0] == '': del sys.path[0]\n"
                  "runpy.run_module('ortdoctor', run_name='__main__', alter_sys=True)")


def node_facts() -> dict[str, Any]:
    """The answer of the first, tiny task on a node: proof that the node runs tasks at all."""
    return {"hostname": socket.gethostname(), "python": sys.executable, "pid": os.getpid()}


def _node_visible_devices(env: dict[str, str]) -> bool:
    """Put back the node's own CUDA_VISIBLE_DEVICES where Ray emptied it for this task.

    Ray releases before the change of ray-project/ray#54868 set ``CUDA_VISIBLE_DEVICES=""`` in every
    task that asked for no GPU, so a check there would see no GPU at all. The worker remembers the
    value it started with; restore that (only when the task's value is the empty one Ray sets).
    """
    if env.get("CUDA_VISIBLE_DEVICES") != "":
        return False
    try:
        import ray

        worker = ray._private.worker.global_worker
        if hasattr(worker, "original_visible_accelerator_ids"):  # recent Rays
            original = worker.original_visible_accelerator_ids.get("GPU")
        elif hasattr(worker, "original_gpu_ids"):  # older ones
            original = worker.original_gpu_ids
        else:
            return False
    except Exception:  # another Ray, or no Ray: leave the environment as it is
        return False
    if original is None:
        env.pop("CUDA_VISIBLE_DEVICES", None)
    elif original:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(x) for x in original)
    else:
        return False  # the node itself was started with CUDA_VISIBLE_DEVICES="": keep it
    return True


def run_check(python: str | None, args: list[str], timeout: float, node_id: str,
              node_id_env: str = "ORTDOCTOR_RAY_NODE_ID") -> dict[str, Any]:
    """Run the check; never raises for the check's own failures (they are the answer)."""
    exe = python or sys.executable
    env = dict(os.environ)
    env[node_id_env] = node_id
    restored = _node_visible_devices(env)
    argv = [exe, "-c", _RUN_ORTDOCTOR, "check", "--json", *args]
    facts = {**node_facts(), "python": exe, "argv": argv, "restored_cuda_visible_devices": restored}
    started = time.monotonic()
    try:
        # a session of its own, so the whole group (the check and its smoke child) is killed at the limit
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, start_new_session=True)
    except OSError as exc:
        return {**facts, "outcome": "error", "reason": f"cannot start {exe}: {exc.strerror or exc}"}
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return {**facts, "outcome": "timeout", "seconds": round(time.monotonic() - started, 3),
                "reason": f"the check did not finish within {timeout:g} s (killed)"}
    except BaseException:  # cancelled (ray.cancel raises KeyboardInterrupt here): take the child along
        _kill(proc)
        raise
    return {
        **facts,
        "outcome": "done",
        "returncode": proc.returncode,
        "stdout": _compact(out.decode("utf-8", "replace")),
        "stderr_tail": err.decode("utf-8", "replace")[-STDERR_TAIL:],
        "seconds": round(time.monotonic() - started, 3),
    }


def _compact(text: str) -> str:
    """The report without its indentation: about a third less to send back to the driver."""
    try:
        return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return text  # not JSON: the driver says so, with this text


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass
