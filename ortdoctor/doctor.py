"""`ortdoctor check` as a library call: probes -> resolver -> diagnosis -> (smoke) -> :class:`Report`.

Nothing here prints. The main process never imports onnxruntime or torch: the probes read files and
ask NVML, the resolver and the diagnosis are pure, and the smoke session runs in a spawned child.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ortdoctor.facts import Environment, Finding, Plan

if TYPE_CHECKING:
    from ortdoctor.matrix import Matrix

__all__ = ["Report", "SmokeMode", "run_check", "verdict_of"]

Verdict = Literal["ok", "warn", "fail"]
SmokeMode = bool | Literal["auto"]


@dataclass(frozen=True)
class Report:
    """Everything one `check` found; :mod:`ortdoctor.report` turns it into the contract's JSON and
    :mod:`ortdoctor.render_text` into the human report."""

    verdict: Verdict
    findings: tuple[Finding, ...]
    env: Environment
    plan: Plan | None
    matrix_path: str | None
    smoke: Any = None  # ortdoctor.smoke.SmokeResult, or None when it did not run
    smoke_skipped: str | None = None  # why the smoke session did not run
    device_id: int = 0
    directory: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    # What to install on this machine when no GPU build is installed (None when one is).
    recommendation: str | None = None


def verdict_of(findings: Iterable[Finding]) -> Verdict:
    """``fail`` when any finding is an error, ``warn`` when the worst is a warning, else ``ok``."""
    severities = {f.severity for f in findings}
    if "error" in severities:
        return "fail"
    if "warning" in severities:
        return "warn"
    return "ok"


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
) -> Report:
    """Inspect, resolve, diagnose and (when a GPU build is installed) prove the CUDA EP.

    ``smoke``: True always runs the smoke session, False never, ``"auto"`` (default) only when a CUDA
    build of onnxruntime is installed. ``smoke_request`` is a :class:`ortdoctor.smoke.SmokeRequest`
    (default: one built from ``device_id`` and ``directory``). The other arguments are the probes'
    roots (see :func:`ortdoctor.probes.collect_environment`), so tests point them at built trees.

    Raises:
        MatrixError: the matrix file cannot be used.
        DirectoryError: ``directory`` does not exist.
    """
    from ortdoctor.diagnose import diagnose, is_cuda_build
    from ortdoctor.matrix import load_matrix
    from ortdoctor.probes import collect_environment
    from ortdoctor.resolver import resolve

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    if matrix is None:
        matrix = load_matrix(matrix_path)
    timings["matrix"] = _ms(t0)

    t = time.perf_counter()
    env = collect_environment(sys_path=sys_path, site_dirs=site_dirs, environ=environ, nvml=nvml,
                              fs_root=fs_root, ld_cache_path=ld_cache_path, maps_path=maps_path)
    timings["probes"] = _ms(t)

    t = time.perf_counter()
    gpu_build = env.ort.installed and is_cuda_build(env.ort)
    plan = resolve(env, matrix, directory=directory, cwd=cwd if cwd is not None else os.getcwd(),
                   allow_unsafe_dirs=allow_unsafe_dirs) if gpu_build else None
    timings["resolve"] = _ms(t)

    smoke_result = None
    skipped: str | None = None
    if smoke is False:
        skipped = "--no-smoke"
    elif smoke == "auto" and not gpu_build:
        skipped = "no CUDA build of onnxruntime is installed"
    else:
        t = time.perf_counter()
        smoke_result = _run_smoke(smoke_request, device_id=device_id, directory=directory)
        timings["smoke"] = _ms(t)

    t = time.perf_counter()
    findings = diagnose(env, plan, matrix, smoke_result, device_id=device_id)
    recommendation = None
    if not gpu_build:
        from ortdoctor.diagnose import recommended_install

        recommendation = recommended_install(env, matrix)
    timings["diagnose"] = _ms(t)
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
    )


def _run_smoke(request: Any, *, device_id: int, directory: str | None) -> Any:
    """The smoke session in a spawned child (imported only here: `check --no-smoke` never pays for it)."""
    from ortdoctor.smoke import SmokeRequest, run_smoke

    if request is None:
        request = SmokeRequest(device_id=device_id, directory=directory)
    return run_smoke(request)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)
