"""`ortdoctor check` as a library call: probes -> resolver -> diagnosis -> (smoke) -> :class:`Report`.

Nothing here prints. The main process never imports onnxruntime or torch: the probes read files and
ask NVML, the resolver and the diagnosis are pure, and the smoke session runs in a spawned child.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping

from ortdoctor.core.execution_providers import DEFAULT_PROVIDER, provider_for
from ortdoctor.core.facts import Finding
from ortdoctor.core.record import record, replace
from ortdoctor.core.severity import severity_rank
from ortdoctor.formats.realpath import remembered_realpaths
from ortdoctor.report.model import Report, verdict_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

if TYPE_CHECKING:
    from ortdoctor.decide.devices import DeviceMap
    from ortdoctor.decide.matrix.model import Matrix
    from ortdoctor.probes.host import HostInfo
    from ortdoctor.probes.interpreter import Interpreter
    from ortdoctor.prove.smoke.devices import DeviceSmoke
    from ortdoctor.prove.smoke.runner import SmokeRequest, SmokeResult, SmokeRun

__all__ = ["CheckOptions", "SmokeMode", "run_check"]

if TYPE_CHECKING:
    SmokeMode = bool | Literal["auto"]
else:
    SmokeMode = object  # the alias is the type checker's; at run time only its name is imported


@record
class CheckOptions:
    """What one check is asked: which environment (the probes' roots), how to prove it, and the model.

    The roots (``site_dirs``, ``sys_path``, ``environ``, ``python``, ``nvml``, ``fs_root``,
    ``ld_cache_path``, ``maps_path``, ``cwd``) say which environment is inspected; the children that prove
    it (the smoke session, the model check) are given the same environment and interpreter.
    """

    # -- which environment
    site_dirs: Iterable[str] | None = None
    sys_path: Iterable[str] | None = None
    environ: Mapping[str, str] | None = None
    python: Interpreter | None = None  # --python: another interpreter's environment
    nvml: Any = None
    fs_root: str = "/"
    ld_cache_path: str | None = None
    maps_path: str = "/proc/self/maps"
    cwd: str | None = None
    # -- what to decide from
    matrix_path: str | os.PathLike[str] | None = None
    matrix: Matrix | None = None
    directory: str | None = None
    allow_unsafe_dirs: bool = False
    # -- how to prove it
    smoke: SmokeMode = "auto"  # True always, False never, "auto" when a CUDA build is installed
    smoke_request: SmokeRequest | None = None  # default: one built from device_id and directory
    device_id: int = 0
    all_devices: bool = False
    max_parallel: int | None = None
    smoke_provider_options: Mapping[str, str] | None = None  # passed to the EP as they are
    smoke_iobinding: bool = False
    smoke_cuda_graph: bool = False
    smoke_placement: bool = False  # ORT's per-node assignment
    smoke_timeout: float | None = None  # default: the smoke runner's
    # a `--provider` choice: a row of core/execution_providers.py ("tensorrt": the TensorRT EP, TensorRT
    # preloaded after the CUDA set)
    smoke_provider: str = DEFAULT_PROVIDER
    # -- the user's model (check --model)
    model: str | os.PathLike[str] | None = None
    input_shapes: Mapping[str, Iterable[int]] | Iterable[str] | None = None
    model_cuda_graph: bool = False
    model_timeout: float = 120.0
    model_provider_options: Mapping[str, str] | None = None
    model_inputs: Mapping[str, str] | Iterable[str] | None = None  # {name: file.npy}: real data
    model_iobinding: bool = False  # bind device OrtValues, as Optimum and other clients do
    model_compare_limit: int | None = None  # bytes; above it the proof's test run is bounded (budget.py)

    @property
    def import_path(self) -> tuple[str, ...] | None:
        """The import path the children get: the inspected environment's, not ortdoctor's own."""
        if self.site_dirs is not None:
            return tuple(self.site_dirs)
        if self.sys_path is not None:
            return tuple(self.sys_path)
        return self.python.path if self.python is not None else None

    @property
    def interpreter(self) -> str | None:
        """The children's interpreter: the inspected one (None: ortdoctor's own)."""
        return self.python.executable if self.python is not None else None

    def smoke_request_for(self) -> SmokeRequest:
        """The request every smoke child starts from (imported only here: `check --no-smoke` never pays
        for it). ``matrix_path`` (`check --matrix FILE`) reaches the child's preload, so both sides decide
        from the same file."""
        from ortdoctor.prove.smoke.runner import SmokeRequest

        if self.smoke_request is not None:
            return self.smoke_request
        kwargs: dict[str, Any] = {"python": self.interpreter} if self.interpreter else {}
        if self.smoke_timeout is not None:
            kwargs["timeout"] = self.smoke_timeout
        ep = provider_for(self.smoke_provider)
        kwargs.update(provider=ep.choice, ep=ep.name, tensorrt="tensorrt" in ep.preload)
        return SmokeRequest(device_id=self.device_id, directory=self.directory,
                            matrix=os.fspath(self.matrix_path) if self.matrix_path is not None else None,
                            environ=None if self.environ is None else dict(self.environ),
                            import_path=self.import_path, provider_options=dict(self.smoke_provider_options or {}),
                            iobinding=self.smoke_iobinding, cuda_graph=self.smoke_cuda_graph,
                            verbose=self.smoke_placement, allow_unsafe_dirs=self.allow_unsafe_dirs, **kwargs)


def run_check(options: CheckOptions | None = None, /, **fields: Any) -> Report:
    """Inspect, resolve, diagnose and (when a GPU build is installed) prove the CUDA EP.

    Takes a :class:`CheckOptions`, or its fields as keyword arguments. ``all_devices`` checks every GPU
    CUDA can see and runs the smoke session once per device, ``max_parallel`` children at a time (default:
    :func:`ortdoctor.prove.smoke.devices.default_parallelism`); ``device_id`` still picks the result
    reported as the main smoke session. ``model`` also checks where the user's model runs
    (:func:`ortdoctor.doctor.model.check_model`), after the environment.

    Raises:
        MatrixError: the matrix file cannot be used.
        DirectoryError: ``directory`` does not exist.
        ValueError: an ``input_shapes`` or ``model_inputs`` entry is malformed (checked before anything runs).
    """
    opts = replace(options, **fields) if options is not None else CheckOptions(**fields)
    with remembered_realpaths():  # the files are taken to stand still while one check looks at them
        return _Check(opts).run()


class _Check:
    """One run of the pipeline, its stages as methods."""

    def __init__(self, opts: CheckOptions) -> None:
        self.opts = opts
        self.timings: dict[str, float] = {}
        self.early: SmokeRun | None = None  # the smoke child, started as soon as a CUDA build is seen
        self.devices_thread: _DeviceSmokes | None = None
        environ = os.environ if opts.environ is None else opts.environ
        self.device_order = environ.get("CUDA_DEVICE_ORDER")

    def run(self) -> Report:
        opts = self.opts
        shapes: dict[str, tuple[int, ...]] = {}
        files: dict[str, str] = {}
        if opts.model is not None:  # a malformed --input-shape or --input is a usage error before anything runs
            from ortdoctor.prove.model_check.given_inputs import parse_input_files
            from ortdoctor.prove.model_check.inspect import normalise_input_shapes

            shapes = normalise_input_shapes(opts.input_shapes)
            files = parse_input_files(opts.model_inputs)
        t0 = time.perf_counter()
        try:
            env, plan, matrix, device_map, skipped, recommendation = self._inspect_and_decide()
        except BaseException:
            if self.early is not None:
                self.early.cancel()  # nobody will read its result: do not leave it running
            raise
        smoke_result, device_smokes = self._collect_smoke(env)

        from ortdoctor.diagnose.checklist import diagnose

        t = time.perf_counter()
        findings = diagnose(env, plan, matrix, smoke_result, device_id=opts.device_id, all_devices=opts.all_devices,
                            device_order=self.device_order, device_smokes=device_smokes)
        self.timings["diagnose"] = _ms(t)
        model_report = None
        if opts.model is not None:
            from ortdoctor.doctor.model import check_model

            t = time.perf_counter()
            model_report = check_model(
                os.fspath(opts.model), input_shapes=shapes, device_id=opts.device_id, cuda_graph=opts.model_cuda_graph,
                timeout=opts.model_timeout, env=None if opts.environ is None else dict(opts.environ),
                import_path=opts.import_path, python=opts.interpreter, driver=env.driver,
                provider_options=opts.model_provider_options, input_files=files, iobinding=opts.model_iobinding,
                environment_errors=[f.id for f in findings if f.severity == "error"],
                compare_limit=opts.model_compare_limit)
            findings = sorted([*findings, *model_report.findings], key=_severity_rank)
            self.timings["model"] = _ms(t)
        self.timings["total"] = _ms(t0)
        return Report(
            verdict=verdict_of(findings), findings=tuple(findings), env=env, plan=plan,
            matrix_path=str(getattr(matrix, "path", opts.matrix_path) or "") or None,
            smoke=smoke_result, smoke_skipped=skipped, device_id=opts.device_id, directory=opts.directory,
            timings_ms=self.timings, recommendation=recommendation, device_map=device_map,
            all_devices=opts.all_devices, device_smokes=device_smokes, model=model_report,
            host=_probe_host(opts.environ),
        )

    def _on_probe(self, name: str, value: Any) -> None:
        # The smoke child needs nothing from this process (it applies its own preload), so it starts as
        # soon as the onnxruntime probe has found a CUDA provider library, and runs while the rest of the
        # environment is inspected, decided and diagnosed. Whether the build really is a CUDA build (a CPU
        # wheel installed over a GPU one leaves the provider behind) is decided later, and a child started
        # for a CPU build is cancelled then. --all-devices needs the driver's device list first.
        opts = self.opts
        if name == "ort" and opts.smoke is not False and not opts.all_devices and (
                opts.smoke is True or value.is_gpu_build):
            self.early = _start_smoke(opts.smoke_request_for())

    def _inspect_and_decide(self) -> tuple[Any, Any, Matrix, DeviceMap, str | None, str | None]:
        from ortdoctor.probes.environment import collect_environment

        opts = self.opts
        t = time.perf_counter()
        env = collect_environment(sys_path=opts.sys_path, site_dirs=opts.site_dirs, environ=opts.environ,
                                  nvml=opts.nvml, fs_root=opts.fs_root, ld_cache_path=opts.ld_cache_path,
                                  maps_path=opts.maps_path, on_probe=self._on_probe, interpreter=opts.python)
        self.timings["probes"] = _ms(t)

        from ortdoctor.decide.build import is_cuda_build, with_known_cuda
        from ortdoctor.decide.devices import map_devices
        from ortdoctor.decide.matrix.load import load_matrix
        from ortdoctor.decide.resolve import resolve

        t = time.perf_counter()
        matrix = opts.matrix if opts.matrix is not None else load_matrix(opts.matrix_path)
        self.timings["matrix"] = _ms(t)
        t = time.perf_counter()
        gpu_build = env.ort.installed and is_cuda_build(env.ort)
        if gpu_build and not env.ort.cuda_version:  # an old wheel: the CUDA version the matrix knows
            env = replace(env, ort=with_known_cuda(env.ort, matrix))
        plan = resolve(env, matrix, directory=opts.directory,
                       cwd=opts.cwd if opts.cwd is not None else os.getcwd(),
                       allow_unsafe_dirs=opts.allow_unsafe_dirs) if gpu_build else None
        self.timings["resolve"] = _ms(t)

        device_map = map_devices(env.driver, device_order=self.device_order)
        skipped: str | None = None
        if opts.smoke is False:
            skipped = "--no-smoke"
        elif opts.smoke == "auto" and not gpu_build:
            skipped = "no CUDA build of onnxruntime is installed"
            if self.early is not None:
                self.early.cancel()
                self.early = None
        elif opts.all_devices and device_map.devices:
            self.devices_thread = _DeviceSmokes(opts.smoke_request_for(), device_map, device_id=opts.device_id,
                                                max_parallel=opts.max_parallel)
        elif self.early is None:
            # --all-devices with no GPU CUDA could enumerate: one session, whose error says why.
            self.early = _start_smoke(opts.smoke_request_for())
        recommendation = None
        if not gpu_build:
            from ortdoctor.diagnose.package import recommended_install

            recommendation = recommended_install(env, matrix)
        return env, plan, matrix, device_map, skipped, recommendation

    def _collect_smoke(self, env: Any) -> tuple[SmokeResult | None, tuple[DeviceSmoke, ...]]:
        """The diagnosis needs the smoke result (it merges the child's evidence into the findings it
        confirms), so it runs once the child is collected; it is pure and takes a few milliseconds.
        Without a usable driver a failed session is read as failing for that reason (``no_driver``)."""
        from ortdoctor.diagnose.driver import driver_absent
        from ortdoctor.diagnose.smoke import classify_smoke

        no_driver = driver_absent(env)

        if self.early is None and self.devices_thread is None:
            return None, ()
        t = time.perf_counter()
        if self.devices_thread is not None:
            device_smokes = tuple(replace(d, smoke=classify_smoke(d.smoke, no_driver=no_driver))
                                  for d in self.devices_thread.result())
            smoke_result = next((d.smoke for d in device_smokes if d.ordinal == self.opts.device_id), None)
            started = self.devices_thread.started
        else:
            assert self.early is not None
            try:
                smoke_result = classify_smoke(self.early.result(), no_driver=no_driver)
            except BaseException:  # Ctrl-C while waiting: the child runs in its own process group
                self.early.cancel()
                raise
            device_smokes = ()
            started = self.early.started
        self.timings["smoke_wait"] = _ms(t)  # what the child cost beyond the parent's own work
        self.timings["smoke"] = _ms(started)  # the child's whole run, from its start
        return smoke_result, device_smokes


def _probe_host(environ: Mapping[str, str] | None) -> HostInfo:
    from ortdoctor.probes.host import probe_host

    return probe_host(os.environ if environ is None else environ)


def _start_smoke(request: SmokeRequest) -> SmokeRun:
    """Spawn the smoke session's child and return it at once."""
    from ortdoctor.prove.smoke.runner import start_smoke

    return start_smoke(request)


class _DeviceSmokes:
    """The smoke session on every visible ordinal (plus ``device_id`` when CUDA has no such device, so
    its failure is shown too), in parallel children, run from a thread while the diagnosis goes on."""

    def __init__(self, request: SmokeRequest, device_map: DeviceMap, *, device_id: int,
                 max_parallel: int | None) -> None:
        import threading

        from ortdoctor.prove.smoke.devices import run_device_smokes

        ordinals = [c.ordinal for c in device_map.devices]
        if device_id not in ordinals:
            ordinals.append(device_id)
        self.started = time.perf_counter()
        self._results: tuple[DeviceSmoke, ...] = ()

        def work() -> None:
            self._results = run_device_smokes(request, ordinals, device_map=device_map,
                                              max_parallel=max_parallel)

        self._thread = threading.Thread(target=work, name="ortdoctor-device-smokes", daemon=True)
        self._thread.start()

    def result(self) -> tuple[DeviceSmoke, ...]:
        self._thread.join()
        return self._results


def _severity_rank(f: Finding) -> int:
    return severity_rank(f.severity)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)
