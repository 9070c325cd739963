"""Run the smoke child (:mod:`ortdoctor.prove.smoke.child`) in a spawned process and judge what came back.

Whatever the child does (crash with a signal, hang, print megabytes, exit without a result, fail to
import onnxruntime) the parent gets a :class:`SmokeResult` and never an exception: the child runs in a
process group of its own, is killed as a group on timeout, and its output is kept within a fixed budget
(the start and the end of each stream; ORT's loader error comes early, the result line comes last).
The spawning is :mod:`ortdoctor.prove.child_process`, shared with ``check --model``.

Test seam: ``SmokeRequest.child_argv`` (or the environment variable ``ORTDOCTOR_SMOKE_CHILD_ARGV``, a
JSON list) replaces the child's command line, so tests can run a child that segfaults, hangs or floods
its output. It is meant for tests and for debugging ortdoctor itself.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from ortdoctor.core.ep_names import CUDA_EP
from ortdoctor.core.execution_providers import provider_for, provider_named
from ortdoctor.core.facts import Match
from ortdoctor.core.finding_ids import FindingId
from ortdoctor.core.record import field, record
from ortdoctor.formats.ortlog import ort_log_lines, strip_ansi
from ortdoctor.prove import child_process
from ortdoctor.prove.smoke.child import RESULT_PREFIX, STAGE_PREFIX

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHILD_ARGV_ENV = "ORTDOCTOR_SMOKE_CHILD_ARGV"
DEFAULT_TIMEOUT = 60.0
TAIL_LINES = 40  # lines of output quoted in the result when something went wrong

STAGE_WORDS = {
    "start": "before doing anything",
    "preload": "while preloading the CUDA libraries",
    "import": "while importing onnxruntime",
    "session": "while creating the CUDA session",
    "run": "while running the model",
    "done": "after the run",
    "plugins": "while registering the plugin EP libraries",
}


@record
class SmokeRequest:
    device_id: int = 0
    provider_options: dict[str, str] = field(default_factory=dict)  # passed to the CUDA EP as-is
    iobinding: bool = False
    cuda_graph: bool = False  # implies IOBinding
    verbose: bool = False  # ORT's per-node placement (from ORT itself; its verbose log as the fallback)
    timeout: float = DEFAULT_TIMEOUT
    directory: str | None = None  # preload directory, with onnxruntime.preload_dlls() semantics
    # A matrix file for the child's preload (`check --matrix`); None: $ORTDOCTOR_MATRIX if set, else the
    # built-in library rows, which the shipped matrix agrees with (a test keeps them equal).
    matrix: str | None = None
    preload: bool = True
    env: dict[str, str | None] = field(default_factory=dict)  # overrides; None removes a variable
    # The environment the check inspects (default: this process's) and its site directories, which
    # become the child's PYTHONPATH (default: the child's own sys.path), so the child proves the
    # environment that was inspected.
    environ: dict[str, str] | None = None
    import_path: tuple[str, ...] | None = None
    python: str = sys.executable
    n: int = 256  # the model's matrix size
    runs: int = 10  # steady-state runs whose median is reported
    # Test seam: the child's whole command line instead of `python -c <bootstrap>` (see module doc).
    child_argv: tuple[str, ...] | None = None
    # For tests and benchmarks on machines without a GPU: run the same child on another provider
    # ("CPUExecutionProvider"). A smoke result from it proves nothing about the GPU.
    ep: str = CUDA_EP
    # Preload TensorRT too (`check --provider tensorrt` sets it with ep="TensorrtExecutionProvider").
    tensorrt: bool = False
    # The `--provider` choice (a row of core/execution_providers.py) whose session options, engine cache and
    # plugin registration the child applies; None: the row of `ep` (none for the CPU EP).
    provider: str | None = None
    # Register the installed plugin EP libraries and list onnxruntime.get_ep_devices() after the session.
    plugins: bool = True
    # `check --allow-unsafe-dirs`: the child's preload may take libraries from world-writable directories,
    # so that the session proves what the check resolved
    allow_unsafe_dirs: bool = False

    def to_child(self) -> dict[str, Any]:
        return {
            "device_id": self.device_id,
            "provider_options": dict(self.provider_options),
            "iobinding": self.iobinding,
            "cuda_graph": self.cuda_graph,
            "verbose": self.verbose,
            "directory": self.directory,
            "matrix": os.path.abspath(self.matrix) if self.matrix else None,
            "preload": self.preload,
            "n": self.n,
            "runs": self.runs,
            "ep": self.ep,
            "tensorrt": self.tensorrt,
            **self.provider_request(),
            "plugins": self.plugins,
            "allow_unsafe_dirs": self.allow_unsafe_dirs,
        }

    def provider_request(self) -> dict[str, Any]:
        """What the child needs to know of the provider, from its row: the child itself knows no table."""
        row = provider_for(self.provider) if self.provider else provider_named(self.ep)
        if row is None:  # the CPU EP (tests and benchmarks without a GPU): no device, no fallback guard
            return {"provider": None, "gpu": False}
        return {
            "provider": row.choice,
            "gpu": True,
            "smoke_options": dict(row.smoke_options),
            "device_option": row.device_option,
            "cuda_graph_option": row.cuda_graph_option,
            "engine_cache_option": row.engine_cache_option,
            "plugin": row.plugin,
            "plugin_library": row.library_for(os.name == "nt"),
        }


@record
class SmokeResult:
    ran: bool
    ok: bool
    providers: tuple[str, ...] = ()
    device_id: int | None = None
    error: str | None = None
    finding_id: FindingId | None = None  # None when ok; else "smoke-fell-back-to-cpu" or "smoke-failed"
    # what ORT's messages say went wrong, filled by the diagnosis (ortdoctor.diagnose.smoke.classify_smoke)
    causes: tuple[Match, ...] = ()
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
    ep: str = CUDA_EP  # the provider the session was asked to run on
    provider: str | None = None  # its `--provider` choice (core/execution_providers.py); None: the CPU EP
    # plugin EP libraries the child registered (name, library, ok, error) and onnxruntime.get_ep_devices()
    plugin_eps: tuple[dict[str, Any], ...] = ()
    ep_devices: tuple[dict[str, Any], ...] = ()
    # the text the diagnosis classifies into causes (ORT's messages); not part of the JSON
    message_text: str = field(default="", repr=False, compare=False)

    @property
    def cause_ids(self) -> tuple[FindingId, ...]:
        out: list[FindingId] = []
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
            "ep": self.ep,
            "provider": self.provider,
            "plugin_eps": [dict(p) for p in self.plugin_eps],
            "ep_devices": [dict(d) for d in self.ep_devices],
        }


def not_run(reason: str) -> SmokeResult:
    """The result for a smoke run that was skipped (``--no-smoke``, no GPU build installed)."""
    return SmokeResult(ran=False, ok=False, error=reason)


# --------------------------------------------------------------------------------------------------
# Spawning
# --------------------------------------------------------------------------------------------------
def _bootstrap() -> str:
    # `python -m` and `-c` put the current directory first on sys.path, where a stray numpy.py or
    # onnxruntime/ would shadow the real one: drop it, and make this ortdoctor importable by path.
    return (
        "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
        f"sys.path.insert(0, {child_process.PACKAGE_ROOT!r}); "
        "from ortdoctor.prove.smoke.child import main; sys.exit(main())"
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
    env = child_process.child_environment(request.environ, request.import_path, request.env)
    env.pop(CHILD_ARGV_ENV, None)
    return env


class SmokeRun:
    """A smoke child that was started and not collected yet (see :func:`start_smoke`).

    The caller does other work while the child runs, then calls :meth:`result`; the timeout counts
    from the start, not from the call to :meth:`result`.
    """

    def __init__(self, request: SmokeRequest) -> None:
        self.request = request
        self.started = time.perf_counter()
        self._deadline = self.started + max(0.1, float(request.timeout))
        self._child: child_process.Child | None = None
        self._result: SmokeResult | None = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        request = self.request
        try:
            argv = child_command(request)
        except ValueError as exc:
            self._result = SmokeResult(ran=False, ok=False, error=str(exc), finding_id="smoke-failed")
            return
        try:
            self._child = child_process.start(argv, env=_child_env(request),
                                              input=json.dumps(request.to_child()).encode())
        except OSError as exc:
            self._result = SmokeResult(
                ran=False,
                ok=False,
                error=f"could not start the smoke child ({argv[0]}): {exc}",
                finding_id="smoke-failed",
                exit_status="not-started",
            )

    def result(self) -> SmokeResult:
        """Wait for the child (until the deadline set at the start), judge it and return the result.
        Never raises; a second call returns the same result."""
        with self._lock:
            if self._result is None:
                self._result = self._collect()
            return self._result

    def _collect(self) -> SmokeResult:
        child = self._child
        assert child is not None  # _start set it whenever it did not decide the result itself
        done = child.wait(self._deadline)
        duration = round((time.perf_counter() - self.started) * 1000.0, 1)
        return judge(
            stdout=done.stdout,
            stderr=done.stderr,
            returncode=done.returncode,
            timed_out=done.timed_out,
            request=self.request,
            duration_ms=duration,
        )

    def cancel(self) -> None:
        """Kill the child and reap it (when the caller no longer needs its result, e.g. on an error)."""
        with self._lock:
            if self._child is None or self._result is not None:
                return
            self._child.cancel()
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
def _last_stage(stdout: str) -> str | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(STAGE_PREFIX):
            return line[len(STAGE_PREFIX) :].strip()
    return None


def parse_node_placement(stderr: str) -> dict[str, tuple[str, ...]]:
    """Per-provider node lists from ORT's verbose ``VerifyEachNodeIsAssignedToAnEp`` lines: the fallback
    for releases without ``get_provider_graph_assignment_info()`` (the child reports that one itself).

    With a single provider ORT names no nodes, so the list holds ``"<N> nodes"``.
    """
    from ortdoctor.prove import ort_placement

    parsed = ort_placement.parse_placements(stderr)
    return {k: tuple(v) for k, v in ort_placement.log_nodes_by_provider(parsed).items()}


def _placement(data: dict[str, Any] | None, stderr: str, request: SmokeRequest) -> dict[str, tuple[str, ...]]:
    """``--verbose``: what the child read from ORT itself, else ORT's verbose log."""
    if not request.verbose:
        return {}
    recorded = (data or {}).get("node_placement")
    if isinstance(recorded, dict) and recorded:
        return {str(k): tuple(str(n) for n in v) for k, v in recorded.items() if isinstance(v, list)}
    return parse_node_placement(stderr)


def _tail(stdout: str, stderr: str) -> str:
    out_lines = [ln for ln in stdout.splitlines() if not ln.startswith((RESULT_PREFIX, STAGE_PREFIX)) and ln.strip()]
    err_lines = [ln for ln in strip_ansi(stderr).splitlines() if ln.strip()]
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
    """Turn the child's output and exit into a :class:`SmokeResult` (pure; tested without a child).

    What ORT's messages mean is left to the diagnosis: ``message_text`` keeps them for it.
    """
    data = child_process.last_json_line(stdout, RESULT_PREFIX)
    stage = (data or {}).get("stage") or _last_stage(stdout)
    exit_status = child_process.Finished("", "", returncode, timed_out).exit_status
    placement = _placement(data, stderr, request)
    log_lines = ort_log_lines(stderr)

    if data is None:
        where = STAGE_WORDS.get(stage or "", f"at stage {stage}") if stage else "before it reported anything"
        if timed_out:
            error = f"the smoke child did not finish within {request.timeout:g} s ({where}) and was killed"
        elif returncode is not None and returncode < 0:
            error = f"the smoke child was killed by {exit_status} {where}"
        else:
            error = f"the smoke child exited with status {exit_status} without a result {where}"
        return SmokeResult(
            ran=True,
            ok=False,
            ep=request.ep,
            provider=request.provider_request()["provider"],
            device_id=request.device_id,
            error=error,
            finding_id="smoke-failed",
            evidence=tuple(_evidence(log_lines)),
            node_placement=placement,
            exit_status=exit_status,
            stage=stage,
            output_tail=_tail(stdout, stderr),
            duration_ms=duration_ms,
            message_text=stderr + "\n" + stdout,
        )

    ok = bool(data.get("ok"))
    providers = tuple(str(p) for p in data.get("providers") or ())
    message: str | None = str(data["error"]) if data.get("error") is not None else None
    ort_version = data.get("ort_version")
    text = "\n".join([stderr, message or "", *[str(w) for w in data.get("warnings") or ()]])
    finding: FindingId | None
    if ok:
        finding = None
    elif _fell_back(data, providers):
        finding = "smoke-fell-back-to-cpu"
    else:
        finding = "smoke-failed"
    if not ok and data.get("stage") == "import":
        message = f"onnxruntime could not be imported in the smoke child: {_import_error(message, stderr)}"
    return SmokeResult(
        ran=True,
        ok=ok,
        providers=providers,
        device_id=data.get("device_id", request.device_id),
        error=message,
        finding_id=finding,
        evidence=tuple(_evidence(log_lines)) if not ok else tuple(log_lines[:20]),
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
        message_text="" if ok else text,
        ep=str(data.get("ep") or request.ep),
        provider=request.provider_request()["provider"],
        plugin_eps=tuple(p for p in data.get("plugin_eps") or () if isinstance(p, dict)),
        ep_devices=tuple(d for d in data.get("ep_devices") or () if isinstance(d, dict)),
    )


def _import_error(message: str | None, stderr: str) -> str:
    """The import error as the user needs it: an exception whose own text is empty (NumPy 2's ABI
    failure raises a bare ``ImportError:`` after printing its explanation) gets the lines it printed."""
    text = (message or "").strip()
    _kind, sep, said = text.partition(":")
    if len((said if sep else text).strip()) >= 8:
        return text
    # the first paragraph printed before the traceback is the explanation
    paragraphs = [p.strip() for p in strip_ansi(stderr).split("\n\n") if p.strip()]
    prose = [" ".join(p.split()) for p in paragraphs if "Traceback (most recent call last)" not in p][:2]
    if not prose:
        return text or "no message"
    return (text + " " if text else "") + " ".join(prose)


def _fell_back(data: dict[str, Any], providers: tuple[str, ...]) -> bool:
    """The session ran (or would have run) without the requested EP, rather than failing on it."""
    if providers and providers[0] != (data.get("ep") or CUDA_EP):
        return True
    error = str(data.get("error") or "")
    return data.get("stage") == "session" and "fallback to CPU EP has been explicitly disabled" in error


def _evidence(log_lines: list[str]) -> list[str]:
    out: list[str] = []
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
    "parse_node_placement",
    "run_smoke",
    "start_smoke",
]
