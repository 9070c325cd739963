"""The host section: which machine, pod, Slurm task and Ray node a report comes from."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from ortdoctor.probes.host import RAY_NODE_ID_ENV, host_json, probe_host

ROOT = Path(__file__).resolve().parents[1]


def _root(tmp_path: Path, machine_id: str | None = "3d1219c7c4c5404aaa1f6d2a48adfda4\n",
          boot_id: str | None = "9975a131-b566-421d-ba0c-056cf6cc2c7d\n") -> str:
    if machine_id is not None:
        (tmp_path / "etc").mkdir(parents=True, exist_ok=True)
        (tmp_path / "etc" / "machine-id").write_text(machine_id)
    if boot_id is not None:
        (tmp_path / "proc/sys/kernel/random").mkdir(parents=True, exist_ok=True)
        (tmp_path / "proc/sys/kernel/random/boot_id").write_text(boot_id)
    return str(tmp_path)


def test_a_kubernetes_pod_with_the_downward_api(tmp_path: Path) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "NODE_NAME": "gpu-node-17", "POD_NAME": "ortdoctor-x7k2p",
           "POD_NAMESPACE": "ml-serving", "HOSTNAME": "ortdoctor-x7k2p"}
    host = probe_host(env, fs_root=_root(tmp_path), hostname="ortdoctor-x7k2p")
    assert host.kubernetes is True
    assert (host.k8s_node_name, host.k8s_pod_name, host.k8s_namespace) == ("gpu-node-17", "ortdoctor-x7k2p",
                                                                           "ml-serving")
    assert host.name == "gpu-node-17"  # the node, not the pod: a fleet is a list of machines
    assert host.machine_id == "3d1219c7c4c5404aaa1f6d2a48adfda4"
    assert host.boot_id == "9975a131-b566-421d-ba0c-056cf6cc2c7d"


def test_the_kubernetes_documentation_names_and_hostname_as_pod_name(tmp_path: Path) -> None:
    # kubernetes.io's downward-API example uses MY_NODE_NAME / MY_POD_NAME; without a pod name variable a
    # pod's HOSTNAME is its name
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "MY_NODE_NAME": "gpu-node-3", "HOSTNAME": "ortdoctor-abcde"}
    host = probe_host(env, fs_root=_root(tmp_path, machine_id=None), hostname="ortdoctor-abcde")
    assert (host.k8s_node_name, host.k8s_pod_name) == ("gpu-node-3", "ortdoctor-abcde")
    assert host.machine_id is None  # containers often have none


def test_hostname_is_not_a_pod_name_outside_kubernetes(tmp_path: Path) -> None:
    host = probe_host({"HOSTNAME": "workstation"}, fs_root=_root(tmp_path), hostname="workstation")
    assert (host.kubernetes, host.k8s_pod_name, host.name) == (False, None, "workstation")


def test_slurm(tmp_path: Path) -> None:
    env = {"SLURM_JOB_ID": "918273", "SLURMD_NODENAME": "gpu-a017", "SLURM_PROCID": "5"}
    host = probe_host(env, fs_root=_root(tmp_path), hostname="gpu-a017.cluster")
    assert (host.slurm_job_id, host.slurm_node_name, host.slurm_procid) == ("918273", "gpu-a017", 5)
    assert host.name == "gpu-a017"
    assert probe_host({"SLURM_JOBID": "7", "SLURM_PROCID": "x"}, fs_root=_root(tmp_path)).slurm_procid is None


def test_ray_node_id_from_the_caller_or_the_environment(tmp_path: Path) -> None:
    root = _root(tmp_path)
    assert probe_host({}, fs_root=root, ray_node_id="4f2a").ray_node_id == "4f2a"
    assert probe_host({RAY_NODE_ID_ENV: "9c1b"}, fs_root=root).ray_node_id == "9c1b"
    assert probe_host({}, fs_root=root).ray_node_id is None


def test_unreadable_or_unset_ids(tmp_path: Path) -> None:
    # systemd images ship an empty machine-id (filled at first boot), some write "uninitialized"
    assert probe_host({}, fs_root=_root(tmp_path, machine_id="\n")).machine_id is None
    assert probe_host({}, fs_root=_root(tmp_path, machine_id="uninitialized\n")).machine_id is None
    (tmp_path / "var/lib/dbus").mkdir(parents=True)
    (tmp_path / "var/lib/dbus/machine-id").write_text("dbusid\n")
    assert probe_host({}, fs_root=str(tmp_path)).machine_id == "dbusid"
    fifo_root = tmp_path / "fifo"
    (fifo_root / "etc").mkdir(parents=True)
    os.mkfifo(fifo_root / "etc" / "machine-id")  # never blocks, never read
    assert probe_host({}, fs_root=str(fifo_root)).machine_id is None


def test_this_machine() -> None:
    host = probe_host({})
    assert host.hostname == socket.gethostname()
    assert host_json(host, ["GPU-1", None])["gpu_uuids"] == ["GPU-1"]
    assert set(host_json(host)) == {"name", "hostname", "machine_id", "boot_id", "kubernetes", "k8s_node_name",
                                    "k8s_pod_name", "k8s_namespace", "slurm_job_id", "slurm_node_name",
                                    "slurm_procid", "ray_node_id", "gpu_uuids"}


def test_check_json_has_the_host_section() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBERNETES_SERVICE_HOST", "SLURM_JOB_ID")}
    env.update({"NODE_NAME": "gpu-node-9", RAY_NODE_ID_ENV: "abc123", "PYTHONPATH": str(ROOT)})
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", "--json", "--no-smoke"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    report = json.loads(proc.stdout)
    assert report["schema_version"] == 2
    assert report["host"]["name"] == "gpu-node-9"
    assert report["host"]["ray_node_id"] == "abc123"
    assert report["host"]["hostname"] == socket.gethostname()
    assert report["host"]["gpu_uuids"] == [d["uuid"] for d in report["driver"]["devices"] if d["uuid"]]
