"""Is this an NVIDIA Jetson? Jetson Linux (L4T) and the device tree say so, where NVML cannot.

A Jetson's GPU is integrated in its Tegra SoC: Jetson Linux ships no NVML, so the driver probe finds no
driver there, and PyPI's aarch64 onnxruntime-gpu wheels carry no kernels for Tegra GPUs. Three sources,
each a small file read and none executed:

* ``/etc/nv_tegra_release``: ``# R36 (release), REVISION: 4.3, ...`` -> L4T 36.4.3;
* ``/proc/device-tree/model`` and ``compatible`` (NUL-separated: ``nvidia,p3701-0005``, ``nvidia,tegra234``):
  the board and the SoC, also visible inside containers that lack the first file;
* the ``nvidia-l4t-core`` package in dpkg's status file (``Version: 36.4.3-20250107174145``), read only
  when the other two said Tegra and gave no L4T release.
"""

from __future__ import annotations

import os

from ortdoctor.core.facts import JetsonInfo

__all__ = ["probe_jetson"]

_SMALL = 4096
_DPKG_STATUS_LIMIT = 16 * 1024 * 1024  # a Jetson's dpkg status is a few MB; never read more than this


def _read(path: str, limit: int = _SMALL) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _l4t_from_release_file(text: str) -> str | None:
    """``# R36 (release), REVISION: 4.3, GCID: ...`` -> ``36.4.3``."""
    head = text.lstrip("# ").split(",")
    major = head[0].split(" ")[0].lstrip("R") if head else ""
    revision = next((part.split(":", 1)[1].strip() for part in head if part.strip().startswith("REVISION:")), "")
    if not major.isdigit():
        return None
    return f"{major}.{revision}" if revision and all(p.isdigit() for p in revision.split(".")) else major


def _l4t_from_dpkg(status: str) -> str | None:
    """The version of the installed ``nvidia-l4t-core`` package, without its build stamp."""
    at = status.find("\nPackage: nvidia-l4t-core\n")
    if at < 0 and not status.startswith("Package: nvidia-l4t-core\n"):
        return None
    stanza = status[at + 1:].split("\n\n", 1)[0]
    for line in stanza.splitlines():
        if line.startswith("Version:"):
            version = line.split(":", 1)[1].strip().split("-", 1)[0]
            return version or None
    return None


def probe_jetson(fs_root: str = "/") -> JetsonInfo | None:
    """The Jetson this runs on, or None when nothing says it is one (every other machine: three failed opens)."""
    evidence: list[str] = []
    l4t = None
    release = _read(os.path.join(fs_root, "etc", "nv_tegra_release"))
    if release is not None:
        l4t = _l4t_from_release_file(release)
        evidence.append("/etc/nv_tegra_release")
    tree = os.path.join(fs_root, "proc", "device-tree")
    model_text = _read(os.path.join(tree, "model"))
    compatible = _read(os.path.join(tree, "compatible"))
    names = [n for n in (compatible or "").split("\0") if n]
    soc = next((n.split(",", 1)[1] for n in names if n.startswith("nvidia,tegra")), None)
    model = model_text.rstrip("\0\n ").strip() if model_text else None
    if soc is not None:
        evidence.append("/proc/device-tree/compatible")
    if model and (soc is not None or release is not None or "jetson" in model.lower()):
        evidence.append("/proc/device-tree/model")
    else:  # another board's device tree (a Raspberry Pi's) is no Jetson
        model = None
    if not evidence:
        return None
    if l4t is None:
        status = _read(os.path.join(fs_root, "var", "lib", "dpkg", "status"), _DPKG_STATUS_LIMIT)
        l4t = _l4t_from_dpkg(status) if status else None
        if l4t is not None:
            evidence.append("/var/lib/dpkg/status (nvidia-l4t-core)")
    return JetsonInfo(l4t=l4t, model=model, soc=soc, evidence=tuple(evidence))
