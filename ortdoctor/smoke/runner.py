"""Run the smoke child (:mod:`ortdoctor.smoke.child`) in a spawned process and judge what came back.

Whatever the child does (crash with a signal, hang, print megabytes, exit without a result, fail to
import onnxruntime) the parent gets a :class:`SmokeResult` and never an exception: the child runs in a
process group of its own, is killed as a group on timeout, and its output is kept within a fixed budget
(the start and the end of each stream; ORT's loader error comes early, the result line comes last).

Test seam: ``SmokeRequest.child_argv`` (or the environment variable ``ORTDOCTOR_SMOKE_CHILD_ARGV``, a
JSON list) replaces the child's command line, so tests can run a child that segfaults, hangs or floods
its output. It is meant for tests and for debugging ortdoctor itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ortdoctor.smoke.child import RESULT_PREFIX, STAGE_PREFIX

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ortdoctor import classify

# The classifier (and the findings catalog it reads) is imported where the output is judged, in the
# parent: the smoke child imports this package too, and must not pay for it before its own work.

CHILD_ARGV_ENV = "ORTDOCTOR_SMOKE_CHILD_ARGV"
DEFAULT_TIMEOUT = 60.0
HEAD_BYTES = 256 * 1024  # kept from the start of each stream
TAIL_BYTES = 768 * 1024  # kept from the end of each stream
TAIL_LINES = 40  # lines of output quoted in the result when something went wrong
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])

STAGE_WORDS = {
    "start": "before doing anything",
    "preload": "while preloading the CUDA libraries",
    "import": "while importing onnxruntime",
    "session": "while creating the CUDA session",
    "run": "while running the model",
    "done": "after the run",
}


@dataclass(frozen=True)
class SmokeRequest:
    device_id: int = 0
    provider_options: dict[str, str] = field(default_factory=dict)  # passed to the CUDA EP as-is
    iobinding: bool = False
    cuda_graph: bool = False  # implies IOBinding
    verbose: bool = False  # log_severity_level=0: ORT's per-node placement
    timeout: float = DEFAULT_TIMEOUT
    directory: str | None = None  # preload directory, with onnxruntime.preload_dlls() semantics
    preload: bool = True
    env: dict[str, str | None] = field(default_factory=dict)  # overrides; None removes a variable
    python: str = sys.executable
    n: int = 256  # the model's matrix size
    runs: int = 10  # steady-state runs whose median is reported
    # Test seam: the child's whole command line instead of `python -c <bootstrap>` (see module doc).
    child_argv: tuple[str, ...] | None = None
    # For tests and benchmarks on machines without a GPU: run the same child on another provider
    # ("CPUExecutionProvider"). A smoke result from it proves nothing about the GPU.
    ep: str = "CUDAExecutionProvider"

    def to_child(self) -> dict[str, Any]:
        return {
            "device_id": self.device_id,
            "provider_options": dict(self.provider_options),
            "iobinding": self.iobinding,
            "cuda_graph": self.cuda_graph,
            "verbose": self.verbose,
            "directory": self.directory,
            "preload": self.preload,
            "n": self.n,
            "runs": self.runs,
            "ep": self.ep,
        }


@dataclass(frozen=True)
class SmokeResult:
    ran: bool
    ok: bool
    providers: tuple[str, ...] = ()
    device_id: int | None = None
    error: str | None = None
    finding_id: str | None = None  # None when ok; else "smoke-fell-back-to-cpu" or "smoke-failed"
    causes: tuple[classify.Match, ...] = ()  # what ORT's messages say went wrong (classified)
    evidence: tuple[str, ...] = ()  # ORT's own log lines (warnings and errors) and the matched lines
    timings_ms: dict[str, float] = field(default_factory=dict)  # import, preload, session, first_run, run
    max_abs_error: float | None = None
    node_placement: dict[str, tuple[str, ...]] = field(default_factory=dict)  # provider -> nodes (--verbose)
    preload: dict[str, Any] | None = None
    exit_status: str | None = None  # "0", "1", "SIGSEGV", "timeout"
    stage: str | None = None  # the last stage the child reached
    ort_version: str | None = None
    available_providers: tuple[str, ...] = ()
    provider_options: dict[str, str] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)  # iobinding, cuda_graph_replay, ...
    output_tail: str = ""  # the child's last lines (stderr, then stdout) when something went wrong
    duration_ms: float | None = None

    @property
    def cause_ids(self) -> tuple[str, ...]:
        out: list[str] = []
        for m in self.causes:
            if not m.consequence and m.finding_id not in out:
                out.append(m.finding_id)
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        """The ``smoke`` block of the report contract, plus ortdoctor's extra detail."""
        return {
            "ran": self.ran,
            "ok": self.ok,
            "providers": list(self.providers),
            "device_id": self.device_id,
            "error": self.error,
            "timings_ms": dict(self.timings_ms),
            "finding_id": self.finding_id,
            "causes": [m.to_json() for m in self.causes],
            "evidence": list(self.evidence),
            "max_abs_error": self.max_abs_error,
            "node_placement": {k: list(v) for k, v in self.node_placement.items()},
            "preload": self.preload,
            "exit_status": self.exit_status,
            "stage": self.stage,
            "ort_version": self.ort_version,
            "available_providers": list(self.available_providers),
            "provider_options": dict(self.provider_options),
            "checks": dict(self.checks),
            "output_tail": self.output_tail or None,
            "duration_ms": self.duration_ms,
        }


def not_run(reason: str) -> SmokeResult:
    """The result for a smoke run that was skipped (``--no-smoke``, no GPU build installed)."""
    return SmokeResult(ran=False, ok=False, error=reason)


# --------------------------------------------------------------------------------------------------
# Bounded capture of one stream
# --------------------------------------------------------------------------------------------------
class _Capture:
    """Reads a pipe to EOF in a thread, keeping the first HEAD and the last TAIL bytes only."""

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
# Spawning
# --------------------------------------------------------------------------------------------------
def _bootstrap() -> str:
    # `python -m` and `-c` put the current directory first on sys.path, where a stray numpy.py or
    # onnxruntime/ would shadow the real one: drop it, and make this ortdoctor importable by path.
    return (
        "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
        f"sys.path.insert(0, {_PACKAGE_ROOT!r}); "
        "from ortdoctor.smoke.child import main; sys.exit(main())"
    )


def child_command(request: SmokeRequest) -> list[str]:
    if request.child_argv is not None:
        return list(request.child_argv)
    seam = os.environ.get(CHILD_ARGV_ENV)
    if seam:
        argv = json.loads(seam)
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            raise ValueError(f"{CHILD_ARGV_ENV} must be a JSON list of strings")
        return argv
    return [request.python, "-c", _bootstrap()]


def _child_env(request: SmokeRequest) -> dict[str, str]:
    env = dict(os.environ)
    env.pop(CHILD_ARGV_ENV, None)
    for key, value in request.env.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return env


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class SmokeRun:
    """A smoke child that was started and not collected yet (see :func:`start_smoke`).

    The caller does other work while the child runs, then calls :meth:`result`; the timeout counts
    from the start, not from the call to :meth:`result`.
    """

    def __init__(self, request: SmokeRequest) -> None:
        self.request = request
        self.started = time.perf_counter()
        self._deadline = self.started + max(0.1, float(request.timeout))
        self._proc: subprocess.Popen[bytes] | None = None
        self._out: _Capture | None = None
        self._err: _Capture | None = None
        self._result: SmokeResult | None = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        request = self.request
        try:
            argv = child_command(request)
        except ValueError as exc:
            self._result = SmokeResult(ran=False, ok=False, error=str(exc), finding_id="smoke-failed")
            return
        popen_kwargs: dict[str, Any] = {}
        if os.name == "posix":
            popen_kwargs["start_new_session"] = True  # its own process group: killed as one on timeout
        else:
            popen_kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_child_env(request),
                close_fds=True,
                **popen_kwargs,
            )
        except OSError as exc:
            self._result = SmokeResult(
                ran=False,
                ok=False,
                error=f"could not start the smoke child ({argv[0]}): {exc}",
                finding_id="smoke-failed",
                exit_status="not-started",
            )
            return
        self._proc = proc
        self._out = _Capture(proc.stdout)  # type: ignore[arg-type]
        self._err = _Capture(proc.stderr)  # type: ignore[arg-type]
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(request.to_child()).encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the child died or ignores stdin: its exit status tells

    def result(self) -> SmokeResult:
        """Wait for the child (until the deadline set at the start), judge it and return the result.
        Never raises; a second call returns the same result."""
        with self._lock:
            if self._result is None:
                self._result = self._collect()
            return self._result

    def _collect(self) -> SmokeResult:
        proc, out, err = self._proc, self._out, self._err
        # _start set all three whenever it did not decide the result itself
        assert proc is not None
        assert out is not None
        assert err is not None
        timed_out = False
        try:
            proc.wait(timeout=max(0.0, self._deadline - time.perf_counter()))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot stop
                pass
        if os.name == "posix" and not timed_out:
            _kill_group(proc)  # grandchildren it left behind would hold our pipes open
        out.thread.join(timeout=5)
        err.thread.join(timeout=5)
        duration = round((time.perf_counter() - self.started) * 1000.0, 1)
        return judge(
            stdout=out.text(),
            stderr=err.text(),
            returncode=None if timed_out else proc.returncode,
            timed_out=timed_out,
            request=self.request,
            duration_ms=duration,
        )

    def cancel(self) -> None:
        """Kill the child and reap it (when the caller no longer needs its result, e.g. on an error)."""
        with self._lock:
            proc = self._proc
            if proc is None or self._result is not None:
                return
            _kill_group(proc)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a process SIGKILL cannot stop
                pass
            for capture in (self._out, self._err):
                if capture is not None:
                    capture.thread.join(timeout=5)
            self._result = SmokeResult(ran=False, ok=False, error="cancelled", finding_id="smoke-failed",
                                       exit_status="cancelled")


def start_smoke(request: SmokeRequest | None = None) -> SmokeRun:
    """Spawn the smoke child and return at once; :meth:`SmokeRun.result` collects it. Never raises."""
    run = SmokeRun(request or SmokeRequest())
    run._start()
    return run


def run_smoke(request: SmokeRequest | None = None) -> SmokeResult:
    """Run the smoke session in a child process and return what it proved. Never raises."""
    return start_smoke(request).result()


# --------------------------------------------------------------------------------------------------
# Judging the child's output
# --------------------------------------------------------------------------------------------------
def _last_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                data = json.loads(line[len(RESULT_PREFIX) :])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _last_stage(stdout: str) -> str | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(STAGE_PREFIX):
            return line[len(STAGE_PREFIX) :].strip()
    return None


def ort_log_lines(stderr: str, *, include_info: bool = False) -> list[str]:
    """ORT's own log lines (``[E:onnxruntime:...]``, ``[W:...]``), colour codes removed."""
    from ortdoctor import classify

    keep = ("[E:onnxruntime", "[W:onnxruntime", "[F:onnxruntime")
    if include_info:
        keep += ("[I:onnxruntime", "[V:onnxruntime")
    lines = []
    for line in classify.strip_ansi(stderr).splitlines():
        if any(k in line for k in keep):
            lines.append(line.strip())
    return lines


def parse_node_placement(stderr: str) -> dict[str, tuple[str, ...]]:
    """Per-provider node lists from ORT's verbose ``VerifyEachNodeIsAssignedToAnEp`` lines.

    ORT prints ``Node placements``, then either `` All nodes placed on [EP]. Number of nodes: N`` or, per
    provider, `` Node(s) placed on [EP]. Number of nodes: N`` followed by ``  OpType (name)`` lines.
    With a single provider ORT names no nodes, so the list holds ``"<N> nodes"``.
    """
    from ortdoctor import classify

    placement: dict[str, list[str]] = {}
    current: str | None = None
    in_block = False
    for raw in classify.strip_ansi(stderr).splitlines():
        if "VerifyEachNodeIsAssignedToAnEp]" not in raw:
            if in_block:
                in_block = False
                current = None
            continue
        msg = raw.split("VerifyEachNodeIsAssignedToAnEp]", 1)[1]
        stripped = msg.strip()
        if stripped == "Node placements":
            placement = {}
            in_block = True
            current = None
            continue
        if not in_block:
            continue
        for marker in ("All nodes placed on [", "Node(s) placed on ["):
            if stripped.startswith(marker):
                rest = stripped[len(marker) :]
                provider, _, count = rest.partition("]")
                current = provider
                placement.setdefault(provider, [])
                if marker.startswith("All"):
                    number = count.rsplit(":", 1)[-1].strip()
                    placement[provider].append(f"{number} nodes")
                    current = None
                break
        else:
            if current is not None and stripped:
                placement[current].append(stripped)
    return {k: tuple(v) for k, v in placement.items()}


def _tail(stdout: str, stderr: str) -> str:
    from ortdoctor import classify

    out_lines = [ln for ln in stdout.splitlines() if not ln.startswith((RESULT_PREFIX, STAGE_PREFIX)) and ln.strip()]
    err_lines = [ln for ln in classify.strip_ansi(stderr).splitlines() if ln.strip()]
    lines = err_lines[-TAIL_LINES:] + out_lines[-(TAIL_LINES // 2) :]
    return "\n".join(ln if len(ln) <= 2000 else ln[:2000] + "..." for ln in lines)


def judge(
    *,
    stdout: str,
    stderr: str,
    returncode: int | None,
    timed_out: bool,
    request: SmokeRequest,
    duration_ms: float | None = None,
) -> SmokeResult:
    """Turn the child's output and exit into a :class:`SmokeResult` (pure; tested without a child)."""
    from ortdoctor import classify

    data = _last_result(stdout)
    stage = (data or {}).get("stage") or _last_stage(stdout)
    if timed_out:
        exit_status = "timeout"
    elif returncode is None:
        exit_status = None
    elif returncode < 0:
        exit_status = _signal_name(returncode)
    else:
        exit_status = str(returncode)
    placement = parse_node_placement(stderr) if request.verbose else {}
    log_lines = ort_log_lines(stderr)

    if data is None:
        where = STAGE_WORDS.get(stage or "", f"at stage {stage}") if stage else "before it reported anything"
        if timed_out:
            error = f"the smoke child did not finish within {request.timeout:g} s ({where}) and was killed"
        elif returncode is not None and returncode < 0:
            error = f"the smoke child was killed by {exit_status} {where}"
        else:
            error = f"the smoke child exited with status {exit_status} without a result {where}"
        causes = tuple(classify.classify(stderr + "\n" + stdout))
        return SmokeResult(
            ran=True,
            ok=False,
            device_id=request.device_id,
            error=error,
            finding_id="smoke-failed",
            causes=causes,
            evidence=tuple(_evidence(log_lines, causes)),
            node_placement=placement,
            exit_status=exit_status,
            stage=stage,
            output_tail=_tail(stdout, stderr),
            duration_ms=duration_ms,
        )

    ok = bool(data.get("ok"))
    providers = tuple(str(p) for p in data.get("providers") or ())
    error = data.get("error")
    ort_version = data.get("ort_version")
    text = "\n".join([stderr, error or "", *[str(w) for w in data.get("warnings") or ()]])
    causes = tuple(classify.classify(text, ort_version=ort_version)) if not ok else ()
    if ok:
        finding = None
    elif _fell_back(data, providers):
        finding = "smoke-fell-back-to-cpu"
    else:
        finding = "smoke-failed"
    if not ok and data.get("stage") == "import":
        error = f"onnxruntime could not be imported in the smoke child: {error}"
    return SmokeResult(
        ran=True,
        ok=ok,
        providers=providers,
        device_id=data.get("device_id", request.device_id),
        error=error,
        finding_id=finding,
        causes=causes,
        evidence=tuple(_evidence(log_lines, causes)) if not ok else tuple(log_lines[:20]),
        timings_ms={k: float(v) for k, v in (data.get("timings_ms") or {}).items()},
        max_abs_error=data.get("max_abs_error"),
        node_placement=placement,
        preload=data.get("preload"),
        exit_status=exit_status,
        stage=data.get("stage"),
        ort_version=ort_version,
        available_providers=tuple(data.get("available_providers") or ()),
        provider_options=dict(data.get("provider_options") or {}),
        checks=dict(data.get("checks") or {}),
        output_tail="" if ok else _tail(stdout, stderr),
        duration_ms=duration_ms,
    )


def _fell_back(data: dict[str, Any], providers: tuple[str, ...]) -> bool:
    """The session ran (or would have run) without the requested EP, rather than failing on it."""
    if providers and providers[0] != (data.get("ep") or "CUDAExecutionProvider"):
        return True
    error = str(data.get("error") or "")
    return data.get("stage") == "session" and "fallback to CPU EP has been explicitly disabled" in error


def _evidence(log_lines: list[str], causes: tuple[classify.Match, ...]) -> list[str]:
    out: list[str] = []
    for m in causes:
        if m.evidence not in out:
            out.append(m.evidence)
    for line in log_lines:
        if line not in out and len(out) < 30:
            out.append(line if len(line) <= 2000 else line[:2000] + "...")
    return out


__all__ = [
    "CHILD_ARGV_ENV",
    "SmokeRequest",
    "SmokeResult",
    "SmokeRun",
    "child_command",
    "judge",
    "not_run",
    "ort_log_lines",
    "parse_node_placement",
    "run_smoke",
    "start_smoke",
]
