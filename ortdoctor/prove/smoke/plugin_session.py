"""The smoke session on a plugin EP: its library registered, the device ORT lists for it.

A plugin EP is not named in ``providers=[...]``: its library is registered with
``onnxruntime.register_execution_provider_library(name, path)``, and the session is put on one of the
devices ``onnxruntime.get_ep_devices()`` lists for it (``SessionOptions.add_provider_for_devices``). A wheel
whose CUDA EP is a plugin build registers it when onnxruntime is imported; then there is nothing to register.
Otherwise the library is registered by full path after the gate judged it (onnxruntime dlopens it itself):
from onnxruntime's own ``capi/`` directory, or, for a provider shipped by an ``onnxruntime-ep-*``
distribution, as the plugin stage registers it (:mod:`ortdoctor.prove.smoke.plugins`).

Runs in the smoke child only; what it did goes into the result's ``checks``.
"""

from __future__ import annotations

import os
from typing import Any

from ortdoctor.core.execution_providers import PLUGIN_IN_PACKAGE

__all__ = ["PluginUnavailable", "plugin_device"]


class PluginUnavailable(RuntimeError):
    """The plugin EP cannot be registered, or ORT lists no device for it."""


def plugin_device(ort: Any, ep: str, request: dict[str, Any], device_id: int, result: dict[str, Any]) -> Any:
    """The ``OrtEpDevice`` the session runs on: the ``device_id``-th device ORT lists for ``ep``."""
    get = getattr(ort, "get_ep_devices", None)
    if get is None or getattr(ort, "register_execution_provider_library", None) is None:
        raise PluginUnavailable(f"onnxruntime {getattr(ort, '__version__', '?')} has no plugin EP API "
                                "(register_execution_provider_library, get_ep_devices: 1.22 or later)")
    checks = result["checks"]
    devices = _devices(get, ep)
    if devices:
        checks["plugin_registered_by"] = "onnxruntime"
    else:
        checks["plugin_library"], checks["plugin_registered_by"] = _register(ort, ep, request)
        devices = _devices(get, ep)
    checks["plugin_devices"] = len(devices)
    if device_id >= len(devices):
        raise PluginUnavailable(f"onnxruntime lists {len(devices)} device(s) for {ep}; device {device_id} is "
                                "not one of them")
    return devices[device_id]


def _devices(get: Any, ep: str) -> list[Any]:
    return [d for d in get() if getattr(d, "ep_name", None) == ep]


def _register(ort: Any, ep: str, request: dict[str, Any]) -> tuple[str, str]:
    """Register the provider's library; (its path, who registered it)."""
    if request.get("plugin") == PLUGIN_IN_PACKAGE:
        from ortdoctor.probes.plugin_eps import probe_plugin_eps
        from ortdoctor.prove.smoke.plugins import register_plugins

        packages = [p for p in probe_plugin_eps().packages if ep in p.ep_names]
        if not packages:
            raise PluginUnavailable(f"no installed onnxruntime-ep-* distribution registers {ep}")
        record = register_plugins(ort, packages[:1])[0]
        if not record["registered"]:
            raise PluginUnavailable(f"{record['package']}: {record['error']}")
        return str(record["library"]), str(record["package"])
    from ortdoctor.native import gate

    library = os.path.join(os.path.dirname(os.path.abspath(ort.__file__)), "capi", str(request["plugin_library"]))
    why = gate.refusal(library, judge=gate.Judge())
    if why is not None:
        raise gate.Refused(library, "unsafe", why)
    ort.register_execution_provider_library(ep, library)
    return library, "ortdoctor"
