"""The report as the JSON of the contract (docs/report-contract.md, ``schema_version`` 2).

The contract's fields come first and keep their names; extra fields (the full environment facts,
each library's loader visibility, timings) are additions, never renames. The result contains only
JSON types, so ``json.dumps(to_json(report))`` always works.
"""

from __future__ import annotations

import json

from ortdoctor._version import __version__
from ortdoctor.core.facts import Candidate, Environment, Finding, to_jsonable
from ortdoctor.decide.devices import DeviceMap
from ortdoctor.decide.loader_view import LibraryRow
from ortdoctor.report.fix_block import first_fix
from ortdoctor.report.model import Report

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SCHEMA_VERSION", "dumps", "to_json"]

SCHEMA_VERSION = 2  # 2: the "host" object


def dumps(report: Report, *, taken_at: str | None = None) -> str:
    # ASCII with \u escapes: valid JSON on any console encoding (cp1252, latin-1), decoded by every parser
    return json.dumps(to_json(report, taken_at=taken_at), indent=2)


def utc_now() -> str:
    """Now, as ``taken_at`` says it: UTC, ISO 8601 to the millisecond (``2026-12-03T17:59:01.123Z``)."""
    import time  # not datetime: a plain check imports neither it nor what it pulls in

    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def to_json(report: Report, *, taken_at: str | None = None) -> dict[str, Any]:
    """The contract's JSON of ``report``; ``taken_at`` (default: now, as the report is written right
    after the check) tells a node's runs apart when reports of many nodes are merged."""
    env = report.env
    return {
        "schema_version": SCHEMA_VERSION,
        "ortdoctor_version": __version__,
        "verdict": report.verdict,
        "outcome": report.outcome,
        "findings": [finding_json(f, windows=report.env.python.os == "windows") for f in report.findings],
        # every package finding's steps merged as `ortdoctor fix` runs them: the first block to paste
        "fix": first_fix(report).to_json(),
        "python": _python(env),
        "ort": _ort(env, report.recommendation),
        "torch": _torch(env),
        "driver": _driver(env, report.devices),
        "libraries": _libraries(report),
        "smoke": _smoke(report),
        "host": _host(report),
        "taken_at": taken_at or utc_now(),
        # additions beyond the contract's minimum
        # `check --all-devices`: one entry per CUDA ordinal (null when only one device was checked)
        "smoke_devices": [d.to_json() for d in report.device_smokes] if report.all_devices else None,
        "model": report.model.to_json() if report.model is not None else None,
        "cuda_major": report.plan.cuda_major if report.plan else None,
        "cudnn_major": report.plan.cudnn_major if report.plan else None,
        "directory": report.directory,
        "nvidia_wheels": [to_jsonable(w) for w in env.nvidia_wheels],
        "tensorrt": to_jsonable(env.tensorrt),
        "plugin_eps": to_jsonable(env.plugins),
        "system": _system(env),
        "matrix": report.matrix_path,
        "timings_ms": dict(report.timings_ms),
    }


def _host(report: Report) -> dict[str, Any] | None:
    from ortdoctor.probes.host import host_json

    return host_json(report.host, (d.uuid for d in report.env.driver.devices)) if report.host else None


# The ld.so cache lists every library of the system (hundreds, ~36 KB); the report keeps the ones a GPU
# session can load: CUDA, cuDNN, TensorRT, the driver's and onnxruntime's own.
_GPU_SONAME_PREFIXES = ("libcuda", "libcublas", "libcudnn", "libcufft", "libcufile", "libcurand", "libcusparse",
                        "libcusolver", "libcupti", "libcutensor", "libnv", "libnccl", "libonnxruntime", "libtorch",
                        "libc10")


def _system(env: Environment) -> dict[str, Any]:
    data: dict[str, Any] = to_jsonable(env.system)
    cache = data.get("ldconfig")
    if isinstance(cache, dict):
        data["ldconfig"] = {k: v for k, v in cache.items() if k.lower().startswith(_GPU_SONAME_PREFIXES)}
        data["ldconfig_entries"] = len(cache)
    data["jetson"] = to_jsonable(env.jetson)  # L4T release, board, SoC; null off a Jetson
    return data


def finding_json(f: Finding, *, windows: bool = False) -> dict[str, Any]:
    return {"id": f.id, "severity": f.severity, "title": f.title, "detail": f.detail, "fix": f.fix,
            "steps": [{"verb": s.verb, "args": list(s.args), **({"python": s.python} if s.python else {})}
                      for s in f.steps],
            "commands": [c.to_json(windows=windows) for c in f.commands]}


def _python(env: Environment) -> dict[str, Any]:
    py = env.python
    return {
        "version": py.version,
        "executable": py.executable,
        "platform": py.platform,
        "libc": py.libc,
        "implementation": py.implementation,
        "machine": py.machine,
        "os": py.os,
        "venv": py.venv,
        "conda_prefix": py.conda_prefix,
        "container": list(py.container),
        "wsl": py.wsl,
        "site_dirs": list(py.site_dirs),
        "multiprocessing_start_method": py.multiprocessing_start_method,
    }


def _ort(env: Environment, recommendation: str | None) -> dict[str, Any]:
    ort = env.ort
    return {
        "installed": ort.installed,
        "distributions": [
            {
                "name": d.name,
                "version": d.version,
                "location": d.location,
                "dist_info": d.dist_info,
                "owns_files_on_disk": d.owns_files_on_disk,
                "installer": d.installer,
                "index_url": d.index_url,
            }
            for d in ort.distributions
        ],
        "active": ort.active,
        "version": ort.version,
        "cuda_version": ort.cuda_version,
        "cudnn_major": ort.cudnn_major,
        "package_dir": ort.package_dir,
        "package_name": ort.package_name,
        "is_gpu_build": ort.is_gpu_build,
        "cuda_provider": to_jsonable(ort.cuda_provider),
        "kernels": to_jsonable(ort.kernels),
        "tensorrt_provider": to_jsonable(ort.tensorrt_provider),
        "pybind": to_jsonable(ort.pybind),
        "other_cuda_libraries": [to_jsonable(x) for x in ort.other_cuda_libraries],
        "problems": list(ort.problems),
        "recommended_install": recommendation,
    }


def _torch(env: Environment) -> dict[str, Any] | None:
    t = env.torch
    if t is None:
        return None
    return {"version": t.version, "cuda": t.cuda, "cudnn": t.cudnn, "lib_dir": t.lib_dir, "location": t.location}


def _driver(env: Environment, dmap: DeviceMap) -> dict[str, Any]:
    d = env.driver
    visible = [c.device for c in dmap.devices if c.device is not None]
    why = dmap.visibility_note
    return {
        "available": d.available,
        "version": d.version,
        "cuda_version": d.cuda_version,
        "error": d.error,
        "error_kind": d.error_kind.value if d.error_kind is not None else None,
        "devices": [
            {
                "index": dev.index,
                "name": dev.name,
                "compute_capability": dev.compute_capability,
                "memory_total_mib": dev.memory_total_mib,
                "memory_free_mib": dev.memory_free_mib,
                "uuid": dev.uuid,
            }
            for dev in d.devices
        ],
        "visible_device_indices": [dev.index for dev in visible],
        "visibility_note": why,
        # additions: CUDA's ordinals (what device_id means) with the NVML device behind each
        "cuda_devices": [c.to_json() for c in dmap.devices],
        "cuda_visible_devices_stopped_at": dmap.stopped_at,
        "cuda_visible_devices_stop_reason": dmap.stop_reason,
        "cuda_device_order": dmap.device_order,
        "device_order_note": dmap.order_note,
        "cuda_visible_devices": d.cuda_visible_devices,
        "nvidia_visible_devices": d.nvidia_visible_devices,
        "libcuda": list(d.libcuda),
        "dev_nodes": list(d.dev_nodes),
        "kernel_module_version": d.kernel_module_version,
    }


def _candidate(c: Candidate) -> dict[str, Any]:
    return {"path": c.path, "source": c.source, "version": c.version, "rejected": c.rejected}


def _library(row: LibraryRow) -> dict[str, Any]:
    lp = row.plan
    chosen = lp.chosen
    return {
        "name": lp.name,
        "soname": lp.soname,
        "required": lp.required,
        "path": chosen.path if chosen else None,
        "source": chosen.source if chosen else None,
        "version": chosen.version if chosen else None,
        "candidates": [_candidate(c) for c in lp.candidates],
        # additions: files present only for another major, why it is skipped, and whether the loader
        # finds the chosen file on its own (False: it loads only when preloaded)
        "other_major": [_candidate(c) for c in lp.other_major],
        "skipped": lp.skipped,
        "loader_visible": row.loader_visible,
    }


def _libraries(report: Report) -> list[dict[str, Any]]:
    return [_library(row) for row in report.libraries]


def _smoke(report: Report) -> dict[str, Any]:
    if report.smoke is None:
        return {"ran": False, "ok": None, "providers": [], "device_id": report.device_id, "error": None,
                "timings_ms": {}, "skipped": report.smoke_skipped}
    to_json_method = getattr(report.smoke, "to_json", None)
    data = to_json_method() if callable(to_json_method) else to_jsonable(report.smoke)
    data = dict(data)
    data.setdefault("skipped", None)
    return data
