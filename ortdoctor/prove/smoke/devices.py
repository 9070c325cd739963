"""The smoke session once per CUDA device, each in its own child, several at a time (``--all-devices``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ortdoctor.core.record import record, replace
from ortdoctor.decide.devices import CudaDevice, DeviceMap
from ortdoctor.prove.smoke.runner import SmokeRequest, SmokeResult, run_smoke

__all__ = ["DEFAULT_MAX_PARALLEL", "DeviceSmoke", "default_parallelism", "run_device_smokes"]

#: Smoke children started at once at most (each imports onnxruntime and creates a CUDA context).
DEFAULT_MAX_PARALLEL = 8


@record
class DeviceSmoke:
    """The smoke session on one CUDA ordinal (``cuda`` is None for an ordinal CUDA does not have)."""

    ordinal: int
    cuda: CudaDevice | None
    smoke: Any  # ortdoctor.prove.smoke.SmokeResult

    @property
    def result(self) -> str:
        """``ok``, ``fell-back`` (ran, not on the CUDA EP), ``failed`` or ``not-run``."""
        s = self.smoke
        if s is None or not getattr(s, "ran", False):
            return "not-run"
        if getattr(s, "ok", False):
            return "ok"
        return "fell-back" if getattr(s, "finding_id", None) == "smoke-fell-back-to-cpu" else "failed"

    def to_json(self) -> dict[str, Any]:
        base: dict[str, Any] = ({**self.cuda.to_json()} if self.cuda is not None
                                else {**_no_device_json(), "ordinal": self.ordinal})
        s = self.smoke
        base["result"] = self.result
        base["timings_ms"] = dict(getattr(s, "timings_ms", {}) or {})
        base["duration_ms"] = getattr(s, "duration_ms", None)
        to_json = getattr(s, "to_json", None)
        base["smoke"] = to_json() if callable(to_json) else None
        return base


def _no_device_json() -> dict[str, Any]:
    return dict.fromkeys(CudaDevice(0, None).to_json())


def default_parallelism(n: int, *, cpus: int | None = None, cap: int = DEFAULT_MAX_PARALLEL) -> int:
    """Children to run at once: one per device, at most ``cap`` and at most one per CPU (each child
    spends its first second importing onnxruntime and numpy)."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    return max(1, min(n, cpus, cap))


def run_device_smokes(
    request: Any,
    ordinals: Iterable[int],
    *,
    device_map: DeviceMap | None = None,
    max_parallel: int | None = None,
) -> tuple[DeviceSmoke, ...]:
    """The smoke session once per CUDA ordinal, each in its own child with its own timeout.

    ``request`` is the :class:`~ortdoctor.prove.smoke.SmokeRequest` every child starts from (its
    ``device_id`` is replaced). A child's timeout counts from its own start, so children waiting for a
    free slot do not lose time. Never raises; results come back in ordinal order.
    """
    from concurrent.futures import ThreadPoolExecutor  # only --all-devices needs it: `check` skips ~4 ms

    base = request if request is not None else SmokeRequest()
    wanted = list(dict.fromkeys(int(o) for o in ordinals))
    if not wanted:
        return ()
    workers = max_parallel if max_parallel is not None else default_parallelism(len(wanted))
    workers = max(1, min(workers, len(wanted)))

    def one(ordinal: int) -> Any:
        try:
            return run_smoke(replace(base, device_id=ordinal))
        except Exception as exc:  # run_smoke never raises; a bug here must not lose the other devices
            return SmokeResult(ran=False, ok=False, device_id=ordinal, error=f"{type(exc).__name__}: {exc}",
                               finding_id="smoke-failed")

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ortdoctor-smoke") as pool:
        results = list(pool.map(one, wanted))
    return tuple(DeviceSmoke(o, device_map.get(o) if device_map is not None else None, r)
                 for o, r in zip(wanted, results, strict=True))
