"""`ortdoctor check` as a library call: probes -> resolver -> diagnosis -> (smoke) -> :class:`Report`.

Nothing here prints. The main process never imports onnxruntime or torch: the probes read files and
ask NVML, the resolver and the diagnosis are pure, and the smoke session runs in a spawned child.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from ortdoctor.core.facts import Finding
from ortdoctor.report.model import Report, verdict_of

if TYPE_CHECKING:
    from ortdoctor.decide.matrix.model import Matrix
    from ortdoctor.probes.host import HostInfo

__all__ = ["SmokeMode", "run_check"]

SmokeMode = bool | Literal["auto"]


def run_check(
    *,
    site_dirs: Iterable[str] | None = None,
    sys_path: Iterable[str] | None = None,
    environ: Mapping[str, str] | None = None,
    matrix_path: str | os.PathLike[str] | None = None,
    matrix: Matrix | None = None,
    smoke: SmokeMode = "auto",
    smoke_request: Any = None,
    directory: str | None = None,
    device_id: int = 0,
    nvml: Any = None,
    fs_root: str = "/",
    ld_cache_path: str | None = None,
    maps_path: str = "/proc/self/maps",
    cwd: str | None = None,
    allow_unsafe_dirs: bool = False,
    all_devices: bool = False,
    max_parallel: int | None = None,
    model: str | os.PathLike[str] | None = None,
    input_shapes: Mapping[str, Iterable[int]] | Iterable[str] | None = None,
    model_cuda_graph: bool = False,
    model_timeout: float = 120.0,
    model_provider_options: Mapping[str, str] | None = None,
) -> Report:
    """Inspect, resolve, diagnose and (when a GPU build is installed) prove the CUDA EP.

    ``smoke``: True always runs the smoke session, False never, ``"auto"`` (default) only when a CUDA
    build of onnxruntime is installed. ``smoke_request`` is a :class:`ortdoctor.prove.smoke.SmokeRequest`
    (default: one built from ``device_id`` and ``directory``). ``all_devices`` checks every GPU CUDA
    can see and runs the smoke session once per device, ``max_parallel`` children at a time (default:
    :func:`ortdoctor.prove.smoke.devices.default_parallelism`); ``device_id`` still picks the result reported as
    the main smoke session. ``model`` (with ``input_shapes``, ``model_cuda_graph``, ``model_timeout``,
    ``model_provider_options``) also checks where the user's model runs
    (:func:`ortdoctor.prove.model_check.check_model`), after the environment. The other arguments are the
    probes' roots (see :func:`ortdoctor.probes.environment.collect_environment`), so tests point them at built trees.

    Raises:
        MatrixError: the matrix file cannot be used.
        DirectoryError: ``directory`` does not exist.
        ValueError: an ``input_shapes`` entry is malformed (checked before anything runs).
    """
    from ortdoctor.probes.environment import collect_environment

    shapes: dict[str, tuple[int, ...]] = {}
    if model is not None:  # a malformed --input-shape is a usage error before anything runs
        from ortdoctor.prove.model_check.inspect import normalise_input_shapes

        shapes = normalise_input_shapes(input_shapes)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    # The smoke child needs nothing from this process (it applies its own preload), so it starts as
    # soon as the onnxruntime probe has found a CUDA provider library, and runs while the rest of the
    # environment is inspected, the matrix loaded and everything resolved and diagnosed (the modules
    # for that are imported after the start, too). --all-devices needs the driver's device list first,
    # and starts its children once resolution (the only step that may still refuse the arguments) is
    # done.
    device_order = (os.environ if environ is None else environ).get("CUDA_DEVICE_ORDER")
    # The children that prove the environment inspect the same one: its variables and import path.
    import_path = tuple(site_dirs) if site_dirs is not None else (tuple(sys_path) if sys_path is not None else None)

    def request() -> Any:
        return _smoke_request(smoke_request, device_id=device_id, directory=directory, matrix=matrix_path,
                              environ=environ, import_path=import_path)
    early: dict[str, Any] = {}

    def on_probe(name: str, value: Any) -> None:
        # A provider library is necessary for a CUDA build; whether the build really is one (a CPU
        # wheel installed over a GPU one leaves the provider behind) is decided below, and a child
        # started for a CPU build is cancelled then.
        if name == "ort" and smoke is not False and not all_devices and (smoke is True or value.is_gpu_build):
            early["run"] = _start_smoke(request())

    t = t0
    device_thread: _DeviceSmokes | None = None
    try:
        env = collect_environment(sys_path=sys_path, site_dirs=site_dirs, environ=environ, nvml=nvml,
                                  fs_root=fs_root, ld_cache_path=ld_cache_path, maps_path=maps_path,
                                  on_probe=on_probe)
        timings["probes"] = _ms(t)

        from ortdoctor.decide.build import is_cuda_build
        from ortdoctor.decide.devices import map_devices
        from ortdoctor.decide.matrix.load import load_matrix
        from ortdoctor.decide.resolve import resolve
        from ortdoctor.diagnose.checklist import diagnose
        from ortdoctor.diagnose.smoke import classify_smoke

        t = time.perf_counter()
        if matrix is None:
            matrix = load_matrix(matrix_path)
        timings["matrix"] = _ms(t)

        t = time.perf_counter()
        gpu_build = env.ort.installed and is_cuda_build(env.ort)
        plan = resolve(env, matrix, directory=directory, cwd=cwd if cwd is not None else os.getcwd(),
                       allow_unsafe_dirs=allow_unsafe_dirs) if gpu_build else None
        timings["resolve"] = _ms(t)

        device_map = map_devices(env.driver, device_order=device_order)
        skipped: str | None = None
        if smoke is False:
            skipped = "--no-smoke"
        elif smoke == "auto" and not gpu_build:
            skipped = "no CUDA build of onnxruntime is installed"
            if "run" in early:
                early.pop("run").cancel()
        elif all_devices and device_map.devices:
            device_thread = _DeviceSmokes(request(), device_map, device_id=device_id, max_parallel=max_parallel)
        elif "run" not in early:
            # --all-devices with no GPU CUDA could enumerate: one session, whose error says why.
            early["run"] = _start_smoke(request())

        recommendation = None
        if not gpu_build:
            from ortdoctor.diagnose.package import recommended_install

            recommendation = recommended_install(env, matrix)
    except BaseException:
        if "run" in early:
            early["run"].cancel()  # nobody will read its result: do not leave it running
        raise

    # The diagnosis needs the smoke result (it merges the child's evidence into the findings it
    # confirms), so it runs once the child is collected; it is pure and takes a few milliseconds.
    smoke_result = None
    device_smokes: tuple[Any, ...] = ()
    if "run" in early or device_thread is not None:
        t = time.perf_counter()
        if device_thread is not None:
            device_smokes = tuple(dataclasses.replace(d, smoke=classify_smoke(d.smoke))
                                  for d in device_thread.result())
            smoke_result = next((d.smoke for d in device_smokes if d.ordinal == device_id), None)
            started = device_thread.started
        else:
            try:
                smoke_result = classify_smoke(early["run"].result())
            except BaseException:  # Ctrl-C while waiting: the child runs in its own process group
                early["run"].cancel()
                raise
            started = early["run"].started
        timings["smoke_wait"] = _ms(t)  # what the child cost beyond the parent's own work
        timings["smoke"] = _ms(started)  # the child's whole run, from its start

    t = time.perf_counter()
    findings = diagnose(env, plan, matrix, smoke_result, device_id=device_id, all_devices=all_devices,
                        device_order=device_order, device_smokes=device_smokes)
    timings["diagnose"] = _ms(t)

    model_report = None
    if model is not None:
        from ortdoctor.doctor.model import check_model

        t = time.perf_counter()
        model_report = check_model(os.fspath(model), input_shapes=shapes, device_id=device_id, cuda_graph=model_cuda_graph,
                                   timeout=model_timeout, env=None if environ is None else dict(environ), import_path=import_path,
                                   driver=env.driver, provider_options=model_provider_options)
        findings = sorted([*findings, *model_report.findings], key=_severity_rank)
        timings["model"] = _ms(t)
    timings["total"] = _ms(t0)
    return Report(
        verdict=verdict_of(findings),
        findings=tuple(findings),
        env=env,
        plan=plan,
        matrix_path=str(getattr(matrix, "path", matrix_path) or "") or None,
        smoke=smoke_result,
        smoke_skipped=skipped,
        device_id=device_id,
        directory=directory,
        timings_ms=timings,
        recommendation=recommendation,
        device_map=device_map,
        all_devices=all_devices,
        device_smokes=device_smokes,
        model=model_report,
        host=_probe_host(environ),
    )


def _probe_host(environ: Mapping[str, str] | None) -> HostInfo:
    from ortdoctor.probes.host import probe_host

    return probe_host(os.environ if environ is None else environ)


def _smoke_request(request: Any, *, device_id: int, directory: str | None, matrix: Any,
                   environ: Mapping[str, str] | None, import_path: tuple[str, ...] | None) -> Any:
    """The request every smoke child starts from (imported only here: `check --no-smoke` never pays for
    it): the caller's, else one for ``device_id`` and ``directory``. ``matrix`` (`check --matrix FILE`)
    reaches the child's preload, so both sides decide from the same file; ``environ`` and
    ``import_path`` make the child prove the environment that was inspected."""
    from ortdoctor.prove.smoke.runner import SmokeRequest

    if request is not None:
        return request
    return SmokeRequest(device_id=device_id, directory=directory, matrix=str(matrix) if matrix is not None else None,
                        environ=None if environ is None else dict(environ), import_path=import_path)


def _start_smoke(request: Any) -> Any:
    """Spawn the smoke session's child and return its :class:`~ortdoctor.prove.smoke.runner.SmokeRun` at once."""
    from ortdoctor.prove.smoke.runner import start_smoke

    return start_smoke(request)


class _DeviceSmokes:
    """The smoke session on every visible ordinal (plus ``device_id`` when CUDA has no such device, so
    its failure is shown too), in parallel children, run from a thread while the diagnosis goes on."""

    def __init__(self, request: Any, device_map: Any, *, device_id: int, max_parallel: int | None) -> None:
        import threading

        from ortdoctor.prove.smoke.devices import run_device_smokes

        ordinals = [c.ordinal for c in device_map.devices]
        if device_id not in ordinals:
            ordinals.append(device_id)
        self.started = time.perf_counter()
        self._results: tuple[Any, ...] = ()

        def work() -> None:
            self._results = run_device_smokes(request, ordinals, device_map=device_map,
                                              max_parallel=max_parallel)

        self._thread = threading.Thread(target=work, name="ortdoctor-device-smokes", daemon=True)
        self._thread.start()

    def result(self) -> tuple[Any, ...]:
        self._thread.join()
        return self._results


_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}


def _severity_rank(f: Finding) -> int:
    return _SEVERITY_RANK.get(f.severity, 3)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)
