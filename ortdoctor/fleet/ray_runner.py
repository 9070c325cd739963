"""``ortdoctor check`` on every node of a Ray cluster; the only module of ortdoctor that imports ``ray``.

For each alive node, pinned there with ``NodeAffinitySchedulingStrategy(node_id, soft=False)`` and
asking for no CPU and no GPU (so a node whose resources all belong to Serve replicas still runs it):

1. a tiny task that only answers, within ``start_timeout``: a node that cannot even run that is
   *unreachable* (its raylet is gone, or no worker can start there);
2. then the check itself: ``python -m ortdoctor check --json`` in a child of the worker, with the
   node's serving Python (default the worker's ``sys.executable``, or ``python``), killed past
   ``timeout`` (*timeout*); the driver cancels the task too (``ray.cancel``) if no answer comes back.

Nodes that Ray lists as dead are reported as *unreachable* with the reason Ray gives. The Ray node
id goes into each report's host section. The task's code is shipped by value, so the workers need no
ortdoctor of their own, only the Python that runs the check does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ortdoctor.core.record import replace
from ortdoctor.fleet.decode import loads
from ortdoctor.fleet.model import NodeResult, NotAReport, Status, node_from_report, node_without_report

__all__ = ["CONNECT_TIMEOUT_S", "INSTALL_HINT", "ConnectTimeout", "FleetRunError", "RayNotInstalled", "RunResult",
           "run_on_ray"]

# ortdoctor is there already (it prints this): only Ray is missing, in the version the cluster runs
INSTALL_HINT = "pip install 'ray[default]==<the cluster's Ray version>'  ('ray[client]' for ray:// addresses)"
DRIVER_GRACE_S = 30.0  # beyond the check's own limit, before the driver gives up on a task and cancels it
CONNECT_TIMEOUT_S = 30.0  # for Ray to connect to a cluster (it retries an address that never answers for ever)

Progress = Callable[[int, int, NodeResult], None]


class RayNotInstalled(ImportError):
    """``ray`` cannot be imported here."""


class FleetRunError(RuntimeError):
    """The cluster cannot be reached or used at all (not one node's problem)."""


@dataclass
class RunResult:
    nodes: list[NodeResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _import_ray() -> Any:
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: F401
    except ImportError as exc:
        raise RayNotInstalled(f"ortdoctor fleet --ray needs Ray ({exc}). Install it with: {INSTALL_HINT}") from None
    return ray


class ConnectTimeout(FleetRunError):
    """Ray did not connect within the limit. Its connecting thread cannot be stopped and still runs: a
    command ends the process (``os._exit``) after saying so, rather than wait for it."""


def _bootstrap_address(address: str) -> str | None:
    """The ``host:port`` that ``ray.init(address)`` will dial, where it can be told without Ray: the
    address itself, ``ray://`` stripped, or for ``auto`` ``$RAY_ADDRESS`` or the address the last
    ``ray start`` on this machine left in /tmp/ray (often stale: that cluster is gone)."""
    if address == "local":
        return None
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "")
        if not address or address == "auto":
            try:
                with open("/tmp/ray/ray_current_cluster", encoding="utf-8") as f:
                    address = f.read(256).strip()
            except OSError:
                return None
    address = address.removeprefix("ray://")
    return address if re.fullmatch(r"[^\s/:]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5}", address) else None


def _reach(address: str, limit: float) -> None:
    """Fail at once, with the cause, where nothing can answer at ``address`` (``host:port``): a name
    that does not resolve, a refused or unanswered connection. Ray itself retries those for minutes.

    Raises:
        FleetRunError: the address cannot be reached.
    """
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise FleetRunError(f"cannot connect to the Ray cluster at {address!r}: the host name does not resolve "
                            f"({getattr(exc, 'strerror', None) or exc})") from None
    family, kind, proto, _, sockaddr = infos[0]
    try:
        with socket.socket(family, kind, proto) as sock:
            sock.settimeout(limit)
            sock.connect(sockaddr)
    except ConnectionRefusedError:
        raise FleetRunError(f"cannot connect to the Ray cluster at {address!r}: connection refused (nothing listens "
                            "there: is the head node running, and is this its GCS port, 6379 by default?)") from None
    except TimeoutError:
        raise FleetRunError(f"cannot connect to the Ray cluster at {address!r}: no answer within {limit:g} s "
                            "(a firewall, or the wrong host)") from None
    except OSError as exc:
        raise FleetRunError(f"cannot connect to the Ray cluster at {address!r}: {exc.strerror or exc}") from None


# Ray's own lines that say why it cannot connect (it logs them and keeps retrying): "Failed to get cluster ID
# from GCS server: TimedOut ...", "InvalidAuthToken", "Failed to connect to GCS at address ...".
_RAY_CAUSE = re.compile(r"(?:InvalidAuthToken|[Aa]uth(?:entication)? token|UNAUTHENTICATED|Failed to get cluster ID"
                        r"|Failed to connect to GCS|[Vv]ersion mismatch|Unable to connect)[^\n]*")


def _connect(ray: Any, address: str, limit: float, job_env: Mapping[str, Any] | None = None) -> bool:
    """Connect (or start, for ``local``) within ``limit`` seconds; True when this call did, so it also
    disconnects. ``job_env``: the job's runtime_env (what ``--ship`` sends along).

    Raises:
        FleetRunError: the address cannot be reached, or Ray refused (its cause in the message).
        ConnectTimeout: Ray did not connect within ``limit`` (its last word on why in the message).
    """
    if ray.is_initialized():
        if job_env is not None:
            raise FleetRunError("--ship sends ortdoctor along with the job ortdoctor starts: call it before "
                                "ray.init() in this process, or without --ship")
        return False
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if job_env is not None:
        kwargs["runtime_env"] = dict(job_env)
    if address == "local":
        kwargs["include_dashboard"] = False
    target = _bootstrap_address(address)
    if target is not None:
        _reach(target, min(limit, 10.0))
    outcome: dict[str, BaseException | None] = {}

    def init() -> None:
        try:
            ray.init(address=address, **kwargs)
            outcome["error"] = None
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    with _ray_log_copy() as log:
        thread = threading.Thread(target=init, name="ortdoctor-ray-init", daemon=True)
        thread.start()
        thread.join(None if address == "local" else limit)  # starting a cluster here is bounded by Ray itself
    if "error" not in outcome:
        cause = _cause(log.text)
        raise ConnectTimeout(f"cannot connect to the Ray cluster at {address!r} within {limit:g} s"
                             + (f": Ray says: {cause}" if cause else "") + " (--connect-timeout sets the limit)")
    exc = outcome["error"]
    if exc is not None:
        cause = _cause(log.text)
        raise FleetRunError(f"cannot connect to the Ray cluster at {address!r}: {type(exc).__name__}: "
                            f"{_first_line(exc)}" + (f" Ray says: {cause}" if cause and cause not in str(exc) else "")
                            ) from None
    return True


def _cause(text: str) -> str | None:
    """Ray's last line that says why it cannot connect, without its log prefix."""
    found = _RAY_CAUSE.findall(text)
    return found[-1].strip()[:300] if found else None


class _LogCopy:
    text = ""  # what Ray wrote on stderr while connecting, once the copy is closed


@contextlib.contextmanager
def _ray_log_copy() -> Iterator[_LogCopy]:
    """While connecting, what Ray's C++ core writes on stderr (its reasons: a refused token, a GCS that
    does not answer) goes to a private file; afterwards it is shown on stderr as it was, and kept in
    ``text`` so the error can quote it."""
    copy = _LogCopy()
    try:
        sys.stderr.flush()
        fd, path = tempfile.mkstemp(prefix="ortdoctor-ray-", suffix=".log")
    except OSError:  # no temporary file: connect without the copy
        yield copy
        return
    saved = os.dup(2)
    os.dup2(fd, 2)
    try:
        yield copy
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        try:
            os.lseek(fd, max(0, os.fstat(fd).st_size - (1 << 20)), os.SEEK_SET)  # its last MiB at most
            copy.text = os.read(fd, 1 << 20).decode("utf-8", "replace")
        except OSError:
            pass
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        if copy.text:
            sys.stderr.write(copy.text if copy.text.endswith("\n") else copy.text + "\n")
            sys.stderr.flush()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return _RAY_IDS.sub("", line).rstrip(" ,.") + "."  # Ray's internal ids say nothing to a reader


def run_on_ray(
    address: str = "auto",
    *,
    timeout: float = 120.0,
    all_devices: bool = False,
    no_smoke: bool = False,
    python: str | None = None,
    gpu_nodes_only: bool = False,
    runtime_env: Mapping[str, Any] | None = None,
    start_timeout: float = 60.0,
    progress: Progress | None = None,
    reports_dir: str | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    ship: bool = False,
) -> RunResult:
    """Check every node of the Ray cluster at ``address`` (``auto``, ``local``, ``ray://host:10001``).

    ``reports_dir``: also write each node's full report there (``<host>-<node id>.json``), for a later
    ``ortdoctor fleet merge``. ``connect_timeout``: seconds Ray has to connect to the cluster. Nothing
    Ray prints reaches standard output (a raylet's state dump when a node dies, its workers' lines): the
    caller's stdout holds the report alone. ``ship``: send this ortdoctor along to the nodes (Ray's
    ``runtime_env`` ``py_modules``, added to ``runtime_env``), so the check runs where no ortdoctor is
    installed; it needs only what a Ray worker's Python has.

    Raises:
        RayNotInstalled: ``ray`` cannot be imported.
        FleetRunError: the cluster cannot be reached, or has no node to check.
        ConnectTimeout: Ray did not connect within ``connect_timeout``.
    """
    ray = _import_ray()
    with _stdout_to_stderr(), (_staged_package() if ship else contextlib.nullcontext(None)) as package:
        job_env: dict[str, Any] | None = None
        if package is not None:
            # Ray uploads a local directory only for the job's runtime_env (a task's takes URIs): the
            # whole runtime_env goes there, so a task's py_modules cannot replace this one
            job_env = dict(runtime_env or {})
            job_env["py_modules"] = [*(job_env.get("py_modules") or []), package]
            runtime_env = None
        return _run(ray, address, timeout=timeout, all_devices=all_devices, no_smoke=no_smoke, python=python,
                    gpu_nodes_only=gpu_nodes_only, runtime_env=runtime_env, start_timeout=start_timeout,
                    progress=progress, reports_dir=reports_dir, connect_timeout=connect_timeout, job_env=job_env)


@contextlib.contextmanager
def _staged_package() -> Iterator[str]:
    """A copy of the running ortdoctor package, as a wheel would install it (the compatibility matrix
    inside, no bytecode), in a private temporary directory for Ray to upload: its ``py_modules`` puts it
    on the workers' PYTHONPATH, which the check's child inherits."""
    import shutil

    from ortdoctor.decide.matrix.load import default_matrix_path

    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package this module is in
    with tempfile.TemporaryDirectory(prefix="ortdoctor-ship-") as tmp:  # mode 0700: nobody else writes there
        target = os.path.join(tmp, "ortdoctor")
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        matrix = os.path.join(target, "compat_matrix.yaml")
        if not os.path.exists(matrix):
            shutil.copyfile(default_matrix_path(), matrix)
        yield target


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 points at stderr meanwhile: Ray's threads and processes print there (the raylet's
    dump when a node dies, ``(raylet)`` lines), and a ``--json`` report must stay JSON."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no descriptors to spare, or no stdout at all: nothing to protect
        yield
        return
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _run(ray: Any, address: str, *, timeout: float, all_devices: bool, no_smoke: bool, python: str | None,
         gpu_nodes_only: bool, runtime_env: Mapping[str, Any] | None, start_timeout: float,
         progress: Progress | None, reports_dir: str | None, connect_timeout: float,
         job_env: Mapping[str, Any] | None = None) -> RunResult:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ortdoctor.fleet import _node_task
    from ortdoctor.probes.host import RAY_NODE_ID_ENV

    t0 = time.monotonic()
    started = _connect(ray, address, connect_timeout, job_env)
    try:
        _ship_by_value(ray, _node_task)
        result = RunResult()
        targets, result.notes, dead = _targets(ray.nodes(), gpu_nodes_only=gpu_nodes_only)
        if not targets and not dead:
            raise FleetRunError(f"the Ray cluster at {address!r} has no alive node to check")
        total = len(targets) + len(dead)
        check_args = [*(["--all-devices"] if all_devices else []), *(["--no-smoke"] if no_smoke else [])]
        opts: dict[str, Any] = {"num_cpus": 0, "num_gpus": 0, "max_retries": 0}
        if runtime_env:
            opts["runtime_env"] = dict(runtime_env)
        ping = ray.remote(**opts)(_node_task.node_facts)
        check = ray.remote(**opts)(_node_task.run_check)

        def done(node: NodeResult) -> None:
            result.nodes.append(node)
            if reports_dir is not None and node.reason is not None:
                _save_no_report(reports_dir, node)  # so a later `fleet merge` of the directory has every node
            if progress is not None:
                progress(len(result.nodes), total, node)

        for node in dead:
            done(node)
        pending: dict[Any, tuple[str, dict[str, Any], float]] = {}  # ref -> (phase, node, deadline)
        for info in targets:
            strategy = NodeAffinitySchedulingStrategy(node_id=info["NodeID"], soft=False)
            ref = ping.options(scheduling_strategy=strategy).remote()
            pending[ref] = ("ping", info, time.monotonic() + start_timeout)
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.5)
                for ref in ready:
                    phase, info, _deadline = pending.pop(ref)
                    try:
                        answer = ray.get(ref)
                    except Exception as exc:
                        done(_task_failed(info, phase, exc))
                        continue
                    if phase == "ping":
                        strategy = NodeAffinitySchedulingStrategy(node_id=info["NodeID"], soft=False)
                        ref2 = check.options(scheduling_strategy=strategy).remote(
                            python, check_args, timeout, info["NodeID"], RAY_NODE_ID_ENV)
                        pending[ref2] = ("check", {**info, "_facts": answer},
                                         time.monotonic() + timeout + DRIVER_GRACE_S)
                    else:
                        done(_checked(info, answer, reports_dir))
                now = time.monotonic()
                for ref, (phase, info, deadline) in list(pending.items()):
                    if now > deadline:
                        del pending[ref]
                        ray.cancel(ref, force=phase == "ping")
                        done(_late(info, phase, start_timeout if phase == "ping" else timeout))
        except BaseException:
            for ref in pending:  # Ctrl-C: do not leave checks running on the nodes
                try:
                    ray.cancel(ref)
                except Exception:
                    pass
            raise
        result.nodes.sort(key=lambda n: (str(n.host.get("name") or ""), str(n.host.get("ray_node_id") or "")))
        result.seconds = round(time.monotonic() - t0, 3)
        return result
    finally:
        if started:
            ray.shutdown()


def _ship_by_value(ray: Any, module: Any) -> None:
    """Pickle the task's module by value, so workers without ortdoctor can run it."""
    try:
        ray.cloudpickle.register_pickle_by_value(module)
    except Exception:  # an old cloudpickle: workers then import it, which works where ortdoctor is installed
        pass


# --------------------------------------------------------------------------------------------------
# Nodes
# --------------------------------------------------------------------------------------------------
# Node death reasons (NodeDeathInfo.Reason in Ray's common.proto: 0 unspecified, 1 expected termination,
# 2 unexpected termination, 3 preempted, 4 drained idle) of nodes that are meant to be gone: not a fault of
# a node that still serves.
_EXPECTED_DEATHS = {1, 3, 4, "EXPECTED_TERMINATION", "AUTOSCALER_DRAIN_PREEMPTED", "AUTOSCALER_DRAIN_IDLE"}


def _targets(nodes: Sequence[Mapping[str, Any]], *, gpu_nodes_only: bool
             ) -> tuple[list[dict[str, Any]], list[str], list[NodeResult]]:
    """(alive nodes to check, notes, dead nodes as results)."""
    targets: list[dict[str, Any]] = []
    notes: list[str] = []
    dead: list[NodeResult] = []
    no_gpu: list[str] = []
    scaled_down = 0
    for n in nodes:
        info = dict(n)
        if gpu_nodes_only and not (info.get("Resources") or {}).get("GPU"):  # dead or alive: not asked for
            if not info.get("Alive") and info.get("DeathReason") in _EXPECTED_DEATHS:
                scaled_down += 1
            else:
                no_gpu.append(f"{info.get('NodeManagerHostname') or '?'} ({str(info.get('NodeID', '?'))[:8]}"
                              + ("" if info.get("Alive") else ", dead") + ")")
            continue
        if not info.get("Alive"):
            reason = info.get("DeathReason")
            if reason in _EXPECTED_DEATHS:
                scaled_down += 1
                continue
            why = info.get("DeathReasonMessage") or "Ray lists the node as dead"
            dead.append(node_without_report(f"ray:{info.get('NodeID', '?')[:12]}", "unreachable",
                                            f"dead: {why}", host=_ray_host(info), ray=_ray_info(info)))
            continue
        targets.append(info)
    if no_gpu:
        notes.append(f"--gpu-nodes-only: left out {len(no_gpu)} node{'s' if len(no_gpu) != 1 else ''} where Ray "
                     f"counts no GPU ({', '.join(no_gpu[:8])}{' ...' if len(no_gpu) > 8 else ''}); a node that "
                     "lost its GPUs is among them")
    if scaled_down:
        notes.append(f"left out {scaled_down} node{'s' if scaled_down != 1 else ''} that Ray lists as stopped on "
                     "purpose, drained or preempted")
    return targets, notes, dead


def _ray_info(info: Mapping[str, Any]) -> dict[str, Any]:
    resources = info.get("Resources") or {}
    return {
        "node_id": info.get("NodeID"),
        "address": info.get("NodeManagerAddress"),
        "hostname": info.get("NodeManagerHostname"),
        "gpus": resources.get("GPU", 0),
        "head": "node:__internal_head__" in resources,
    }


def _ray_host(info: Mapping[str, Any], facts: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A host section for a node without a report: what Ray and the first task know about it."""
    hostname = (facts or {}).get("hostname") or info.get("NodeManagerHostname")
    return {"name": hostname, "hostname": hostname, "ray_node_id": info.get("NodeID")}


def _source(info: Mapping[str, Any]) -> str:
    return f"ray:{str(info.get('NodeID', '?'))[:12]}"


_NODE_GONE = {"NodeDiedError", "TaskUnschedulableError", "LocalRayletDiedError"}


def _task_failed(info: Mapping[str, Any], phase: str, exc: BaseException) -> NodeResult:
    kind = type(exc).__name__
    status: Status = "unreachable" if phase == "ping" or kind in _NODE_GONE else "error"
    what = "the first task" if phase == "ping" else "the check task"
    if kind == "TaskUnschedulableError":  # soft=False on a node Ray no longer has
        why = f"{what} cannot be placed on the node: Ray no longer has it ({kind})"
    elif kind == "RuntimeEnvSetupError":  # the node answers; the environment asked for cannot be built there
        status = "error"
        why = f"{what} could not start: the --runtime-env could not be set up on the node: {_setup_cause(exc)}"
    else:
        why = f"{what} failed: {kind}: {_first_line(exc)}"
    return node_without_report(_source(info), status, why,
                               host=_ray_host(info, info.get("_facts")), ray=_ray_info(info))


def _setup_cause(exc: BaseException) -> str:
    """Why a runtime_env could not be set up, from Ray's message: pip's (or conda's) own ERROR lines,
    else its last line. Ray's first line says only "Failed to set up runtime environment."."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    lines = [ln for ln in lines if ln != "Failed to set up runtime environment."]
    errors = [ln for ln in lines if ln.startswith("ERROR:") or "Error:" in ln]
    chosen = errors[-2:] if errors else lines[-1:]
    return " ".join(chosen)[:600] if chosen else f"{type(exc).__name__} (Ray gave no reason)"


def _late(info: Mapping[str, Any], phase: str, limit: float) -> NodeResult:
    if phase == "ping":
        return node_without_report(_source(info), "unreachable",
                                   f"no answer to a no-op task within {limit:g} s (node unreachable, or no "
                                   "worker could start there)", host=_ray_host(info), ray=_ray_info(info))
    return node_without_report(_source(info), "timeout",
                               f"the check task did not come back within {limit + DRIVER_GRACE_S:g} s (cancelled)",
                               host=_ray_host(info, info.get("_facts")), ray=_ray_info(info))


_RAY_IDS = re.compile(r",?\s*\b(?:lease_id|task_id|name)=[^,\s]*")
_NO_MODULE = re.compile(r"No module named '?ortdoctor'?")


def _checked(info: Mapping[str, Any], answer: Mapping[str, Any], reports_dir: str | None) -> NodeResult:
    host = _ray_host(info, answer)
    ray_info = {**_ray_info(info), "python": answer.get("python"), "seconds": answer.get("seconds"),
                "restored_cuda_visible_devices": answer.get("restored_cuda_visible_devices")}
    source = _source(info)
    if answer.get("outcome") == "timeout":
        return node_without_report(source, "timeout", str(answer.get("reason")), host=host, ray=ray_info)
    if answer.get("outcome") != "done":
        return node_without_report(source, "error", str(answer.get("reason") or "the check did not run"),
                                   host=host, ray=ray_info)
    rc = answer.get("returncode")
    stdout = str(answer.get("stdout") or "")
    try:
        data = loads(stdout)
        if rc not in (0, 1):
            raise ValueError(f"exit status {rc}")
        node = node_from_report(data, source)
    except (ValueError, NotAReport) as exc:
        return node_without_report(source, "error", _why_no_report(answer, rc, exc), host=host, ray=ray_info)
    node_host = dict(node.host)
    node_host["ray_node_id"] = info.get("NodeID")  # also when the node's ortdoctor is older than the field
    for key, value in host.items():
        node_host.setdefault(key, value)
    if reports_dir is not None and node.reason is None:  # an invalid report gets the record of its reason
        data["host"] = {**(data.get("host") if isinstance(data.get("host"), dict) else {}), **node_host}
        _save(reports_dir, node_host, data)
    # an invalid report is a node in error: its reason stays
    return replace(node, host=node_host, ray=ray_info)


def _why_no_report(answer: Mapping[str, Any], rc: Any, exc: BaseException) -> str:
    err = str(answer.get("stderr_tail") or "").strip()
    python = answer.get("python")
    if _NO_MODULE.search(err):
        return (f"ortdoctor is not installed in {python} (the Python the check ran with): install it there, "
                "pass --python with the serving environment's interpreter, or --ship to send this ortdoctor along")
    last = err.splitlines()[-1] if err else "no output on stderr"
    return f"no report from `{python} -m ortdoctor check --json` (exit status {rc}; {exc}): {last}"


def _save_no_report(directory: str, node: NodeResult) -> None:
    """A record for a node without a report, which `fleet merge` reads back as that node with its reason."""
    from ortdoctor.fleet.model import NO_REPORT_KEY
    from ortdoctor.report.json_report import SCHEMA_VERSION, utc_now

    _save(directory, node.host, {"schema_version": SCHEMA_VERSION,
                                 NO_REPORT_KEY: {"status": node.status, "reason": node.reason},
                                 "host": dict(node.host), "ray": dict(node.ray or {}), "taken_at": utc_now()})


def _save(directory: str, host: Mapping[str, Any], data: Any) -> None:
    os.makedirs(directory, exist_ok=True)
    name = str(host.get("name") or host.get("hostname") or "node")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80]
    node = re.sub(r"[^A-Za-z0-9]+", "", str(host.get("ray_node_id") or ""))[:8]
    path = os.path.join(directory, f"{safe}-{node}.json" if node else f"{safe}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
