"""The smoke child's last stage: register each installed plugin EP library, list ORT's own devices.

A plugin EP package's documented use is ``import <package>`` then
``onnxruntime.register_execution_provider_library(get_ep_name(), get_library_path())``. Importing the
package would run its side effects in the user's installation (the TensorRT-RTX plugin writes symlinks
into its own site-packages directory and sets LD_LIBRARY_PATH), so the child does what those imports
are for without them: it loads, by full path, the bundled libraries the provider library links (never a
bundled copy of a CUDA or driver library: the process's own copy is the one to use), then registers the
provider library under the EP name the package spells out. ``onnxruntime.get_ep_devices()`` is listed
afterwards, with or without plugins: it is ORT's view of the devices, which the report shows beside
NVML's.

Runs in the child only, after the smoke session, which has printed its result already: a plugin that
crashes the process costs this stage, not the proof of the CUDA EP.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ep_devices", "register_plugins"]

# Libraries a plugin must take from the process, never from its own bundle: the CUDA runtime and math
# libraries (one copy per process) and the driver's.
_PROCESS_OWNED = re.compile(r"^lib(cudart|cublasLt|cublas|cufft|curand|nvrtc|nvJitLink|cudnn[a-z_]*|cuda|"
                            r"nvidia-ml)\.so(\.\d+)*$")


def _bundled_order(pkg: Any) -> list[Any]:
    """The bundled libraries the provider links (directly or through each other), dependencies first."""
    by_soname = {lib.soname: lib for lib in pkg.libraries if getattr(lib, "soname", None)}
    provider = next((lib for lib in pkg.libraries if lib.path == pkg.provider_library), None)
    if provider is None:
        return []
    order: list[Any] = []

    def visit(lib: Any, stack: tuple[str, ...]) -> None:
        for name in getattr(lib, "needed", ()):
            dep = by_soname.get(name)
            if dep is None or dep in order or name in stack or _PROCESS_OWNED.match(name):
                continue
            visit(dep, (*stack, name))
            order.append(dep)

    visit(provider, ())
    return order


def register_plugins(ort: Any, packages: Any) -> list[dict[str, Any]]:
    """Register every plugin package's provider library; one record per package. Never raises.

    Each bundled library is loaded through the gate (:mod:`ortdoctor.native.gate`), as the CUDA libraries
    are: a plugin's directory that others can write is refused before anything of it runs."""
    from ortdoctor.native import gate

    out: list[dict[str, Any]] = []
    register = getattr(ort, "register_execution_provider_library", None)
    for pkg in packages:
        record: dict[str, Any] = {"package": pkg.name, "version": pkg.version, "library": pkg.provider_library,
                                  "ep_name": pkg.ep_names[0] if pkg.ep_names else None, "preloaded": [],
                                  "registered": False, "error": None}
        out.append(record)
        if pkg.provider_library is None:
            record["error"] = "the package ships no provider library (libonnxruntime_providers_*)"
            continue
        if record["ep_name"] is None:
            record["error"] = "the package's __init__.py names no *ExecutionProvider"
            continue
        if register is None:
            record["error"] = (f"onnxruntime {getattr(ort, '__version__', '?')} has no "
                               "register_execution_provider_library (plugin EPs need 1.22 or later)")
            continue
        try:
            judge = gate.Judge()
            for lib in _bundled_order(pkg):
                gate.load(lib.path, judge=judge)
                record["preloaded"].append(lib.path)
            # onnxruntime dlopens the provider library itself: the gate judges it first, without mapping it
            why = gate.refusal(pkg.provider_library, judge=judge)
            if why is not None:
                raise gate.Refused(pkg.provider_library, "unsafe", why)
            register(record["ep_name"], pkg.provider_library)
            record["registered"] = True
        except Exception as exc:  # the gate's refusal, OSError from a dlopen, ORT's Fail from the registration
            record["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _kv(value: Any) -> dict[str, str]:
    try:
        return {str(k): str(v) for k, v in dict(value).items()}
    except Exception:
        return {}


def ep_devices(ort: Any) -> list[dict[str, Any]]:
    """``onnxruntime.get_ep_devices()`` as plain data ([] on releases without it)."""
    get = getattr(ort, "get_ep_devices", None)
    if get is None:
        return []
    out: list[dict[str, Any]] = []
    for d in get():
        hw = getattr(d, "device", None)
        kind = getattr(hw, "type", None)
        out.append({
            "ep_name": getattr(d, "ep_name", None),
            "ep_vendor": getattr(d, "ep_vendor", None),
            "type": str(kind).rsplit(".", 1)[-1] if kind is not None else None,
            "vendor": getattr(hw, "vendor", None),
            "vendor_id": getattr(hw, "vendor_id", None),
            "device_id": getattr(hw, "device_id", None),
            "metadata": _kv(getattr(hw, "metadata", {})),
            "ep_metadata": _kv(getattr(d, "ep_metadata", {})),
        })
    return out
