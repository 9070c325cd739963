"""Which machine a report comes from: host name, machine and boot ids, Kubernetes, Slurm and Ray names.

A fleet of reports is only useful when each one says where it was made. Nothing here is secret or
slow: the host name comes from ``gethostname()`` (no DNS lookup), the ids from two small files, the rest
from environment variables that schedulers set (Slurm) or that people pass in through Kubernetes'
downward API (``NODE_NAME`` from ``spec.nodeName``, ``POD_NAME`` from ``metadata.name``). The GPUs'
UUIDs are not probed here: the driver probe already has them, and :func:`host_json` copies them in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from ortdoctor.core.record import record
from ortdoctor.formats.regular_file import NotRegularFile, open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RAY_NODE_ID_ENV", "HostInfo", "host_json", "probe_host"]

# Set by `ortdoctor fleet --ray` for the check it starts on each node, so the report names its Ray node.
RAY_NODE_ID_ENV = "ORTDOCTOR_RAY_NODE_ID"

# The downward-API names people use: the Kubernetes documentation's examples say MY_NODE_NAME/MY_POD_NAME,
# most charts NODE_NAME/POD_NAME. First one set wins.
_K8S_NODE_VARS = ("NODE_NAME", "MY_NODE_NAME", "KUBE_NODE_NAME", "K8S_NODE_NAME")
_K8S_POD_VARS = ("POD_NAME", "MY_POD_NAME", "K8S_POD_NAME")
_K8S_NAMESPACE_VARS = ("POD_NAMESPACE", "MY_POD_NAMESPACE", "K8S_POD_NAMESPACE")


@record
class HostInfo:
    """Where one report was made. Every field may be None: a laptop has no Slurm job."""

    hostname: str | None
    # /etc/machine-id: stable across reboots. A container sees its image's copy (often absent, and the
    # same in every container of one image), so it identifies a machine only outside containers.
    machine_id: str | None
    # the kernel's boot id: the same for every container on one host, different between hosts.
    boot_id: str | None
    kubernetes: bool  # KUBERNETES_SERVICE_HOST is set: this runs in a Kubernetes pod
    k8s_node_name: str | None
    k8s_pod_name: str | None
    k8s_namespace: str | None
    slurm_job_id: str | None
    slurm_node_name: str | None
    slurm_procid: int | None
    ray_node_id: str | None

    @property
    def name(self) -> str | None:
        """The machine's name as a fleet shows it: the Kubernetes node, the Slurm node, the host name."""
        return self.k8s_node_name or self.slurm_node_name or self.hostname

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "hostname": self.hostname,
            "machine_id": self.machine_id,
            "boot_id": self.boot_id,
            "kubernetes": self.kubernetes,
            "k8s_node_name": self.k8s_node_name,
            "k8s_pod_name": self.k8s_pod_name,
            "k8s_namespace": self.k8s_namespace,
            "slurm_job_id": self.slurm_job_id,
            "slurm_node_name": self.slurm_node_name,
            "slurm_procid": self.slurm_procid,
            "ray_node_id": self.ray_node_id,
        }


def probe_host(
    environ: Mapping[str, str] = os.environ,
    *,
    ray_node_id: str | None = None,
    fs_root: str = "/",
    hostname: str | None = None,
) -> HostInfo:
    """Describe this machine. ``ray_node_id`` (default: ``$ORTDOCTOR_RAY_NODE_ID``) is given by a caller
    that knows it; ``fs_root`` and ``hostname`` are for tests. Never raises."""
    in_k8s = bool(environ.get("KUBERNETES_SERVICE_HOST"))
    pod = _first(environ, _K8S_POD_VARS)
    if pod is None and in_k8s:
        pod = _clean(environ.get("HOSTNAME"))  # a pod's HOSTNAME is its name unless spec.hostname says else
    return HostInfo(
        hostname=_clean(hostname) if hostname is not None else _hostname(),
        machine_id=_read_id(fs_root, ("etc/machine-id", "var/lib/dbus/machine-id")),
        boot_id=_read_id(fs_root, ("proc/sys/kernel/random/boot_id",)),
        kubernetes=in_k8s,
        k8s_node_name=_first(environ, _K8S_NODE_VARS),
        k8s_pod_name=pod,
        k8s_namespace=_first(environ, _K8S_NAMESPACE_VARS),
        slurm_job_id=_clean(environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID")),
        slurm_node_name=_clean(environ.get("SLURMD_NODENAME")),
        slurm_procid=_int(environ.get("SLURM_PROCID")),
        ray_node_id=_clean(ray_node_id) if ray_node_id is not None else _clean(environ.get(RAY_NODE_ID_ENV)),
    )


def host_json(host: HostInfo, gpu_uuids: Iterable[str | None] = ()) -> dict[str, Any]:
    """The report's ``host`` object: the host facts plus the UUIDs of the GPUs the driver listed."""
    return {**host.to_json(), "gpu_uuids": [u for u in gpu_uuids if u]}


def _hostname() -> str | None:
    # uname's nodename is what gethostname() returns on POSIX; the socket module (~3 ms to import) only
    # where there is no uname (Windows)
    try:
        if hasattr(os, "uname"):
            return _clean(os.uname().nodename)
        import socket

        return _clean(socket.gethostname())
    except OSError:
        return None


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = _clean(environ.get(name))
        if value:
            return value
    return None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value or None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _read_id(fs_root: str, candidates: tuple[str, ...]) -> str | None:
    for rel in candidates:
        try:
            with open_regular(os.path.join(fs_root, rel)) as f:
                text = f.read(256).decode("ascii", "replace").strip()
        except (OSError, NotRegularFile):
            continue
        # an empty machine-id (images ship one, filled on first boot) or "uninitialized" names nothing
        if text and text != "uninitialized":
            return text
    return None
