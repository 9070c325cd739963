"""A pod's report gives driver-missing the Kubernetes fix (device plugin, nvidia.com/gpu, runtimeClassName),
and the fleet shows it for that node: `docker run --gpus all` means nothing to a pod.

The reports are the real output of `ortdoctor check --json --no-smoke` (tests/support/fleet_reports.py):
gpu-f is an image whose container lost its GPUs (no driver library at all), checked once as a
Kubernetes pod and once as a plain container.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ortdoctor.fleet.merge import merge
from tests.support import fleet_reports
from tests.support.fleet_reports import NODES

pytestmark = pytest.mark.realwheels


def _fix(report: str) -> str:
    data = json.loads(report)
    (finding,) = [f for f in data["findings"] if f["id"] == "driver-missing"]
    return str(finding["fix"])


def test_a_pod_gets_the_kubernetes_fix(tmp_path: Path) -> None:
    pod = fleet_reports.k8s_reports()["gpu-f"]  # KUBERNETES_SERVICE_HOST set, as in every pod
    fix = _fix(pod)
    assert "docker run" not in fix
    for words in ("device plugin", "nvidia.com/gpu", "runtimeClassName: nvidia"):
        assert words in fix, fix
    # and the fleet shows that node's own fix
    (tmp_path / "gpu-f.json").write_text(pod)
    (group,) = [g for g in merge([str(tmp_path)]).findings if g.id == "driver-missing"]
    assert [nf.fix for nf in group.node_fixes] == [fix]


def _in_a_pod() -> bool:
    try:
        cgroup = Path("/proc/1/cgroup").read_text()
    except OSError:
        cgroup = ""
    return "KUBERNETES_SERVICE_HOST" in os.environ or "kubepods" in cgroup


@pytest.mark.skipif(_in_a_pod(), reason="this machine is itself a Kubernetes pod: every check here is a pod's")
def test_a_plain_container_keeps_dockers_fix() -> None:
    node = next(n for n in NODES if n.name == "gpu-f")
    report = fleet_reports.run_check(node, {"container": "docker"})  # what podman and nspawn set; no pod
    fix = _fix(report)
    assert "docker run --gpus all" in fix, fix
    assert "nvidia.com/gpu" not in fix
