"""CUDA device ordinals and the NVML devices behind them.

NVML numbers the GPUs in PCI order and ignores CUDA_VISIBLE_DEVICES; CUDA applies the variable and
numbers what it leaves visible from 0. A ``device_id`` (``--device-id``, the CUDA EP's option) is a
CUDA ordinal, so every per-device fact and finding has to go through this mapping.

The rules for CUDA_VISIBLE_DEVICES (those the CUDA documentation states, plus the ones PyTorch's
parser reproduces from the CUDA runtime's behaviour):

* the list is read left to right; the first entry that names no device ends it (``0,7,1`` on two GPUs
  leaves only 0 visible; ``-1`` leaves none);
* an index entry is read like ``strtoul``: leading digits count, so ``1gpu`` is ``1``;
* a ``GPU-`` entry may be any prefix of a device's UUID that matches exactly one device;
* a ``MIG-`` entry names a MIG instance: ``MIG-GPU-<uuid>/<gi>/<ci>`` (the old form) names its parent
  GPU, ``MIG-<uuid>`` cannot be tied to a GPU from NVML's device list and is kept as unverified;
* naming one device twice hides every device (CUDA gives an empty set);
* an empty variable hides every device; an unset one shows them all.

Without ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` CUDA numbers the fastest GPU first: on a machine with
different GPUs an index (in the variable, or an ordinal) may then not be NVML's index. The map says so
rather than guessing CUDA's heuristic.

Pure: the smoke session once per device lives in :mod:`ortdoctor.prove.smoke.devices`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ortdoctor.core.facts import Device
from ortdoctor.core.patterns import lazy
from ortdoctor.core.record import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CudaDevice", "DeviceMap", "describe", "map_devices", "parse_visible_devices"]

_MIG_LEGACY = lazy(r"^MIG-(GPU-[0-9A-Fa-f-]+)/\d+/\d+$")


@record
class CudaDevice:
    """One device CUDA enumerates in this environment, and the NVML device behind it."""

    ordinal: int  # what device_id means: CUDA's number for it after CUDA_VISIBLE_DEVICES
    device: Device | None  # NVML's device (the parent GPU for a MIG instance); None when not known
    entry: str | None = None  # the CUDA_VISIBLE_DEVICES entry that made it visible (None: unset)
    mig: str | None = None  # the MIG instance's id when the entry names one

    @property
    def nvml_index(self) -> int | None:
        return self.device.index if self.device is not None else None

    @property
    def uuid(self) -> str | None:
        return self.mig or (self.device.uuid if self.device is not None else None)

    @property
    def name(self) -> str:
        if self.device is None:
            return "MIG instance" if self.mig else f"CUDA device {self.ordinal}"
        return self.device.name + (" (MIG instance)" if self.mig else "")

    def to_json(self) -> dict[str, Any]:
        d = self.device
        return {
            "ordinal": self.ordinal,
            "nvml_index": self.nvml_index,
            "uuid": self.uuid,
            "gpu_uuid": d.uuid if d is not None else None,
            "name": self.name,
            "compute_capability": d.compute_capability if d is not None else None,
            "memory_total_mib": d.memory_total_mib if d is not None else None,
            "memory_free_mib": d.memory_free_mib if d is not None else None,
            "compute_mode": d.compute_mode if d is not None else None,
            "entry": self.entry,
            "mig": self.mig,
        }


@record
class DeviceMap:
    """CUDA's view of the GPUs: ordinal -> NVML device, what is hidden, and why."""

    devices: tuple[CudaDevice, ...]
    nvml_devices: tuple[Device, ...]
    cuda_visible_devices: str | None = None  # the raw variable, None when unset
    stopped_at: str | None = None  # the entry where CUDA stops reading the list
    stop_reason: str | None = None  # why that entry ends it
    device_order: str | None = None  # CUDA_DEVICE_ORDER as set (None: CUDA's default, FASTEST_FIRST)
    order_note: str | None = None  # why ordinals may not follow NVML's order

    def get(self, ordinal: int) -> CudaDevice | None:
        return self.devices[ordinal] if 0 <= ordinal < len(self.devices) else None

    def ordinal_of(self, nvml_index: int) -> int | None:
        return next((c.ordinal for c in self.devices if c.nvml_index == nvml_index and not c.mig), None)

    @property
    def hidden(self) -> tuple[Device, ...]:
        shown = {c.nvml_index for c in self.devices}
        return tuple(d for d in self.nvml_devices if d.index not in shown)

    @property
    def visibility_note(self) -> str | None:
        """Why CUDA sees fewer GPUs than NVML (None when it sees them all)."""
        raw = self.cuda_visible_devices
        if raw is None:
            return None
        if not self.stopped_at and not self.hidden and len(self.devices) == len(self.nvml_devices):
            return None
        text = (f"CUDA_VISIBLE_DEVICES={raw!r} leaves {len(self.devices)} of {len(self.nvml_devices)} "
                "GPU(s) visible")
        if self.stopped_at is not None:
            text += f" (CUDA stops reading the list at {self.stopped_at!r}: {self.stop_reason})"
        return text

    def listing(self) -> str:
        """``0 = GPU 1 NVIDIA H200 (GPU-…)`` for every visible ordinal, for details and fixes."""
        return "; ".join(describe(c, short=True) for c in self.devices) or "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "devices": [c.to_json() for c in self.devices],
            "hidden_nvml_indices": [d.index for d in self.hidden],
            "stopped_at": self.stopped_at,
            "stop_reason": self.stop_reason,
            "device_order": self.device_order,
            "order_note": self.order_note,
        }


def describe(c: CudaDevice, *, short: bool = False) -> str:
    """``CUDA device 0 (NVML GPU 1, NVIDIA H200, GPU-…)``: both numbers, so nobody mixes them up."""
    where = f"NVML GPU {c.nvml_index}" if c.nvml_index is not None else "GPU not in NVML's list"
    uuid = c.uuid or "no UUID"
    if short:
        return f"{c.ordinal} = {where} {c.name} ({uuid})"
    return f"CUDA device {c.ordinal} ({where}, {c.name}, {uuid})"


# --------------------------------------------------------------------------------------------------
# Parsing CUDA_VISIBLE_DEVICES
# --------------------------------------------------------------------------------------------------
def _strtoul(text: str) -> int:
    """What CUDA makes of an index entry: leading digits (an optional sign first); -1 when none."""
    m = re.match(r"[+-]?\d+", text)
    return int(m.group(0)) if m else -1


def parse_visible_devices(raw: str | None) -> list[str] | None:
    """The entries of CUDA_VISIBLE_DEVICES, whitespace removed (None when the variable is unset)."""
    if raw is None:
        return None
    return [e.strip() for e in raw.split(",")] if raw.strip() else []


def _by_uuid_prefix(entry: str, devices: Sequence[Device]) -> tuple[Device | None, str]:
    hits = [d for d in devices if d.uuid and d.uuid.upper().startswith(entry.upper())]
    if len(hits) == 1:
        return hits[0], ""
    if not hits:
        return None, "no GPU has a UUID starting with it"
    return None, f"the prefix matches {len(hits)} GPUs ({', '.join(str(d.index) for d in hits)}), not one"


def map_devices(driver: Any, *, device_order: str | None = None) -> DeviceMap:
    """CUDA's ordinals for ``driver`` (a :class:`~ortdoctor.core.facts.DriverInfo`) under its CUDA_VISIBLE_DEVICES.

    ``device_order`` is CUDA_DEVICE_ORDER (``PCI_BUS_ID`` or ``FASTEST_FIRST``; None means CUDA's
    default, ``FASTEST_FIRST``).
    """
    nvml = tuple(driver.devices)
    raw = driver.cuda_visible_devices
    entries = parse_visible_devices(raw)
    order = (device_order or "").strip().upper() or None
    if entries is None:
        chosen = [CudaDevice(i, d) for i, d in enumerate(nvml)]
        return DeviceMap(tuple(chosen), nvml, None, None, None, order, _order_note(nvml, chosen, order, raw))

    chosen_devices: list[tuple[Device | None, str, str | None]] = []  # (device, entry, mig id)
    stopped_at: str | None = None
    reason: str | None = None
    for entry in entries:
        dev: Device | None = None
        mig: str | None = None
        why = ""
        upper = entry.upper()
        if upper.startswith("GPU-"):
            dev, why = _by_uuid_prefix(entry, nvml)
        elif upper.startswith("MIG-"):
            mig = entry
            legacy = _MIG_LEGACY.match(entry)
            if legacy:
                dev, why = _by_uuid_prefix(legacy.group(1), nvml)
                if dev is None:
                    why = f"its parent {legacy.group(1)}: {why}"
        else:
            idx = _strtoul(entry)
            if idx < 0:
                why = "a negative number ends the list" if entry.startswith("-") else "not an index or UUID"
            elif idx >= len(nvml):
                why = f"there is no GPU {idx} (NVML counts {len(nvml)})"
            else:
                dev = nvml[idx]
        if dev is None and (mig is None or why):
            stopped_at, reason = entry, why
            break
        same = [c for c in chosen_devices if (mig is not None and c[2] == mig)
                or (mig is None and c[2] is None and dev is not None and c[0] == dev)]
        if same:
            # CUDA's answer to a device named twice is no device at all.
            return DeviceMap((), nvml, raw, entry, f"{entry!r} names a device already listed: CUDA then "
                             "shows no device at all", order, None)
        chosen_devices.append((dev, entry, mig))
    chosen = [CudaDevice(i, dev, entry, mig) for i, (dev, entry, mig) in enumerate(chosen_devices)]
    return DeviceMap(tuple(chosen), nvml, raw, stopped_at, reason, order, _order_note(nvml, chosen, order, raw))


def _order_note(nvml: Sequence[Device], chosen: Sequence[CudaDevice], order: str | None, raw: str | None) -> str | None:
    """Index entries and ordinals follow NVML's (PCI) order only with CUDA_DEVICE_ORDER=PCI_BUS_ID,
    or when every GPU is the same model (CUDA's fastest-first order then keeps the PCI order)."""
    if order == "PCI_BUS_ID" or len(nvml) < 2:
        return None
    kinds = {(d.name, d.compute_capability) for d in nvml}
    if len(kinds) < 2:
        return None
    by_index = raw is None or any(c.mig is None and not (c.entry or "").upper().startswith("GPU-") for c in chosen)
    if not by_index:
        return None
    return ("the GPUs differ and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA numbers the fastest GPU first, so "
            "index entries and ordinals may not be nvidia-smi's (NVML's) numbers; export "
            "CUDA_DEVICE_ORDER=PCI_BUS_ID, or name GPUs by UUID in CUDA_VISIBLE_DEVICES")
