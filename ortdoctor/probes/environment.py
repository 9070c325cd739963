"""Probes: inspect the environment without importing onnxruntime or torch.

Each probe returns the plain data of :mod:`ortdoctor.core.facts` and never prints. They read files
(dist-info, ELF/PE headers, the ld.so cache, /proc) and ask NVML; nothing here loads a CUDA library
or creates a CUDA context. :func:`collect_environment` runs them all over one shared scan of the
installed distributions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping

from ortdoctor.core.facts import DriverInfo, Environment, PluginEpInfo
from ortdoctor.core.record import replace
from ortdoctor.formats.distinfo import DistIndex
from ortdoctor.formats.procmaps import mapped_paths
from ortdoctor.probes.driver import probe_driver
from ortdoctor.probes.interpreter import Interpreter
from ortdoctor.probes.jetson import probe_jetson
from ortdoctor.probes.nvidia_wheels import probe_nvidia_wheels
from ortdoctor.probes.ort import add_kernels, probe_ort
from ortdoctor.probes.platform import probe_python
from ortdoctor.probes.plugin_eps import probe_plugin_eps
from ortdoctor.probes.system import probe_system
from ortdoctor.probes.tensorrt import probe_tensorrt
from ortdoctor.probes.torch import probe_torch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["collect_environment", "unreadable_dirs"]

# the directories inside a site directory whose contents decide the diagnosis
_INNER = ("onnxruntime", os.path.join("onnxruntime", "capi"), "nvidia")


def unreadable_dirs(path: Iterable[str]) -> tuple[str, ...]:
    """The directories of the import path, and ``onnxruntime/``, ``onnxruntime/capi/`` and ``nvidia/``
    inside them, that exist but this user cannot list or enter: what they hold is unknown, so nothing
    found missing there may be called not installed. One ``access`` call per existing directory."""
    out: list[str] = []
    for entry in dict.fromkeys(os.path.abspath(p) for p in path if p):
        if not os.path.isdir(entry):
            continue  # absent, or a zip file: nothing to read as a directory
        if not os.access(entry, os.R_OK | os.X_OK):
            out.append(entry)
            continue
        for inner in _INNER:
            d = os.path.join(entry, inner)
            # isdir is False for capi/ inside an onnxruntime/ that cannot be entered: named once
            if os.path.isdir(d) and not os.access(d, os.R_OK | os.X_OK):
                out.append(d)
        out.extend(_unreadable_wheel_dirs(os.path.join(entry, "nvidia")))
    return tuple(out)


def _unreadable_wheel_dirs(nvidia: str) -> list[str]:
    """The NVIDIA wheels' library directories (``nvidia/<component>/lib``) that cannot be read."""
    try:
        with os.scandir(nvidia) as it:
            subdirs = [e.path for e in it if e.is_dir()]
    except OSError:
        return []  # absent, or itself unreadable (named by the caller)
    return [lib for d in sorted(subdirs) if os.path.isdir(lib := os.path.join(d, "lib"))
            and not os.access(lib, os.R_OK | os.X_OK)]


def _mapped(maps_path: str) -> tuple[str, ...]:
    """The shared objects mapped in the process, less what ortdoctor's own hook preloaded into this one
    (with the hook installed, ortdoctor's CLI is itself preloaded at start-up; the user's program is the
    subject, and its own hook does the same there)."""
    paths = mapped_paths(maps_path)
    hook = sys.modules.get("ortdoctor.hook")
    result = getattr(hook, "result", None) if hook is not None and maps_path == "/proc/self/maps" else None
    ours = {x.mapped for x in getattr(result, "loaded", ()) if getattr(x, "source", "") != "loaded"}
    return tuple(p for p in paths if p not in ours) if ours else paths


def collect_environment(
    *,
    sys_path: Iterable[str] | None = None,
    site_dirs: Iterable[str] | None = None,
    environ: Mapping[str, str] | None = None,
    nvml: Any = None,
    fs_root: str = "/",
    ld_cache_path: str | None = None,
    maps_path: str = "/proc/self/maps",
    query_driver: bool = True,
    on_probe: Callable[[str, Any], None] | None = None,
    interpreter: Interpreter | None = None,
    plugins: bool = True,
) -> Environment:
    """Run every probe and return the whole :class:`~ortdoctor.core.facts.Environment`.

    Args:
        sys_path: the import path to inspect (default ``sys.path``); decides which ``onnxruntime/``
            an import would get, and, unless ``site_dirs`` is given, where distributions are found.
        site_dirs: the directories to scan for ``*.dist-info`` (default: those on ``sys_path``).
        environ: environment variables (default ``os.environ``).
        nvml: an NVML module for the driver probe (default: the driver library bound with
            :mod:`ortdoctor.probes.nvml`; pynvml where that binding cannot be set up).
        fs_root: root for /proc, /dev, /etc and the default library directories (tests).
        ld_cache_path: the ld.so cache (default ``<fs_root>/etc/ld.so.cache``).
        maps_path: the maps file for already-mapped libraries.
        query_driver: False skips NVML (the driver is reported as not queried). The CUDA provider's
            kernel architectures are read only when NVML lists GPUs.
        on_probe: called as ``on_probe("ort", OrtInfo)`` as soon as the onnxruntime probe (the first,
            and a cheap one) is done: ``check`` starts its smoke child there, so the child runs while the
            other probes do.
        interpreter: the interpreter to inspect (``--python``; default: this one); its ``sys.path`` is the
            default ``sys_path``.
        plugins: False skips the plugin-EP probe and the build-info read (the preload does not need them).
    """
    if sys_path is None:
        sys_path = interpreter.path if interpreter is not None else sys.path
    path = list(sys_path)
    env = os.environ if environ is None else environ
    python = probe_python(sys_path=path, environ=env, fs_root=fs_root, interpreter=interpreter)
    sites = python.site_dirs if site_dirs is None else tuple(os.path.abspath(d) for d in site_dirs)
    if site_dirs is not None:
        python = replace(python, site_dirs=sites)
    blocked = unreadable_dirs(path)
    if blocked:
        python = replace(python, unreadable=blocked)
    index = DistIndex(sites)
    ort = probe_ort(import_path=[p for p in path if p] if site_dirs is None else sites, index=index, kernels=False)
    if on_probe is not None:
        on_probe("ort", ort)

    cache_path = ld_cache_path if ld_cache_path is not None else os.path.join(fs_root, "etc", "ld.so.cache")
    system = probe_system(env, ld_cache_path=cache_path)
    if query_driver:
        driver = probe_driver(nvml, env, ld_cache=system.ldconfig, fs_root=fs_root)
    else:
        driver = DriverInfo(available=False, error="not queried", cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
                            nvidia_visible_devices=env.get("NVIDIA_VISIBLE_DEVICES"))
    jetson = probe_jetson(fs_root) if python.os == "linux" else None
    if driver.devices or jetson is not None:
        # The kernel architectures matter only against GPUs: read once NVML has listed some (after the
        # smoke child started), or on a Jetson, whose integrated GPU NVML does not list; the preload path (no
        # driver query) and GPU-less hosts never pay for them.
        ort = add_kernels(ort)
    return Environment(
        python=python,
        ort=ort,
        torch=probe_torch(index=index),
        nvidia_wheels=probe_nvidia_wheels(index=index),
        system=system,
        driver=driver,
        mapped=_mapped(maps_path),
        tensorrt=probe_tensorrt(index=index, system=system, fs_root=fs_root, os_name=python.os),
        plugins=probe_plugin_eps(index=index, ort=ort) if plugins else PluginEpInfo(),
        jetson=jetson,
    )
