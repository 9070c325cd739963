"""The report's TensorRT and plugin-EP lines: what is installed, and what the smoke child saw.

Plain strings with a mark name (``ok``, ``warn``, ``fail``, ``info`` or ``""``); :mod:`ortdoctor.report.text`
puts them into its rows. The marks follow the findings, so the rows and the problems never disagree.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ortdoctor.core.execution_providers import smoke_provider
from ortdoctor.core.facts import ElfInfo, Finding, PluginEpPackage, TensorrtInstall
from ortdoctor.core.finding_ids import FindingId
from ortdoctor.report.model import Report

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["plugin_rows", "smoke_lines", "tensorrt_rows"]

_TRT_IDS: tuple[FindingId, ...] = ("tensorrt-unavailable", "tensorrt-major-mismatch", "tensorrt-cuda-major-mismatch", "tensorrt-incomplete",
            "tensorrt-not-on-loader-path", "tensorrt-older-than-build")
_PLUGIN_IDS: tuple[FindingId, ...] = ("plugin-ep-cuda-major-mismatch", "plugin-ep-bundled-cuda-library", "cuda-plugin-ep-build")


def _mark(findings: Iterable[Finding], ids: tuple[FindingId, ...]) -> str:
    severities = {f.severity for f in findings if f.id in ids}
    if "error" in severities:
        return "fail"
    if "warning" in severities:
        return "warn"
    return "ok"


def _install(i: TensorrtInstall) -> str:
    parts = [f"TensorRT {i.version or i.major}"]
    owner = i.distribution or i.origin
    cuda = f", CUDA {i.cuda_major}" if i.cuda_major else ""
    parts.append(f"({owner}{cuda})")
    parts.append(i.directory)
    return " ".join(parts)


def tensorrt_rows(report: Report) -> list[tuple[str, str, str]]:
    """(label, mark, text) rows: empty when there is no TensorRT provider, or TensorRT is neither installed
    nor asked for (the tensorrt-unavailable note says so)."""
    env = report.env
    provider = env.ort.tensorrt_provider
    row = smoke_provider(report.smoke)
    asked = row is not None and "tensorrt" in row.families
    if provider is None or not (env.tensorrt.installs or env.tensorrt.distributions or asked):
        return []
    needed = [n for n in (provider.needed if isinstance(provider, ElfInfo) else ()) if n.startswith("libnv")]
    head = f"the TensorRT EP links {', '.join(needed)}" if needed else "the TensorRT EP"
    mark = _mark(report.findings, _TRT_IDS)
    if not env.tensorrt.installs:
        return [("TensorRT", "fail" if asked else "info", f"not installed; {head}")]
    rows = [("TensorRT", mark, f"{_install(env.tensorrt.installs[0])}; {head}")]
    rows += [("", "", _install(i)) for i in env.tensorrt.installs[1:]]
    return rows


def _package(pkg: PluginEpPackage) -> str:
    names = ", ".join(pkg.ep_names) or "no EP name found"
    cuda = [os.path.basename(lib.path) for lib in pkg.libraries
            if isinstance(lib, ElfInfo) and (lib.soname or "").startswith(("libcudart.", "libcublas"))]
    extra = f" (bundles {', '.join(cuda)})" if cuda else ""
    if not pkg.libraries:
        return f"{pkg.name} {pkg.version}: no shared libraries"
    return f"{pkg.name} {pkg.version}: {names}{extra}"


def plugin_rows(report: Report) -> list[tuple[str, str, str]]:
    plugins = report.env.plugins
    rows: list[tuple[str, str, str]] = []
    mark = _mark(report.findings, _PLUGIN_IDS)
    for i, pkg in enumerate(plugins.packages):
        rows.append(("Plugin EPs" if i == 0 else "", mark if i == 0 else "", _package(pkg)))
    if plugins.cuda_plugin_ep:
        rows.append(("Plugin EPs" if not rows else "", "info" if not rows else "",
                     "onnxruntime's CUDA EP is a plugin build (cuda-plugin-ep=1 in its build info)"))
    return rows


def _sum(timings: dict[str, float], *keys: str) -> float | None:
    values = [timings[k] for k in keys if k in timings]
    return round(sum(values), 1) if values else None


def smoke_lines(report: Report) -> list[str]:
    """Lines under the smoke row: the TensorRT engine build against the cached engine, the plugin EP
    registrations, and onnxruntime.get_ep_devices() beside NVML's GPUs."""
    sm: Any = report.smoke
    if sm is None:
        return []
    out: list[str] = []
    timings = dict(getattr(sm, "timings_ms", {}) or {})
    if "session_cached" in timings:
        built = _sum(timings, "session", "first_run")
        cached = _sum(timings, "session_cached", "first_run_cached")
        files = (getattr(sm, "checks", {}) or {}).get("engine_cache_files")
        out.append(f"TensorRT engine: built in {built} ms (session + first run), from the engine cache in {cached} ms"
                   + (f" ({files} cache files)" if files is not None else ""))
    registered: list[dict[str, Any]] = list(getattr(sm, "plugin_eps", ()) or ())
    for p in registered:
        state = "registered" if p.get("registered") else f"not registered: {p.get('error')}"
        out.append(f"plugin {p.get('ep_name') or '?'} ({p.get('package')} {p.get('version')}): {state}")
    devices: list[dict[str, Any]] = list(getattr(sm, "ep_devices", ()) or ())
    if devices and (registered or any(d.get("type") != "CPU" for d in devices)):
        listed = "; ".join(f"{d.get('ep_name')} {d.get('type')} ({d.get('vendor')}"
                           + (f", {d.get('vendor_id'):#06x}:{d.get('device_id'):#06x}"
                              if isinstance(d.get("vendor_id"), int) and isinstance(d.get("device_id"), int) else "")
                           + ")" for d in devices)
        out.append(f"ORT devices (get_ep_devices): {listed}")
        gpus = report.env.driver.devices
        out.append("NVML: " + ("; ".join(f"GPU {g.index} {g.name}" for g in gpus) if gpus else
                               f"no GPU ({report.env.driver.error or 'driver not available'})"))
    return out
