"""Real ``ortdoctor check --json`` reports from differently broken "nodes", for the fleet tests.

Each node is this machine with another environment: real onnxruntime and NVIDIA wheels composed on
PYTHONPATH (tests/support/testenvs.py), a driver answered by the fake NVML library where the node needs
one (tests/support/fake_nvml.py; none at all for a node whose container lost its GPUs), and the
variables Kubernetes' downward API or Slurm set. The reports are the real command's stdout.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from tests.support import fake_nvml, testenvs

ROOT = Path(__file__).resolve().parents[2]
H200 = "dev=NVIDIA H200,9.0,143771,140000,GPU-{name}-0,0"


@dataclass(frozen=True)
class Node:
    name: str
    envs: tuple[str, ...]  # tests/support/testenvs.py names, in PYTHONPATH order
    driver: str | None  # "580.159.04;cuda=13000", or None for no driver at all
    env: dict[str, str] = field(default_factory=dict)


# The cluster of docs/fleet.md's example: one node as it should be, and the ways nodes drift apart.
NODES = (
    Node("gpu-a", ("ort-gpu", "nvidia-cu13"), "580.159.04;cuda=13000"),
    Node("gpu-b", ("ort-gpu", "nvidia-cu13"), "535.183.01;cuda=12020"),  # an older driver
    Node("gpu-c", ("ort-cpu",), "580.159.04;cuda=13000"),  # an image built with the CPU package
    Node("gpu-d", ("ort-both",), "580.159.04;cuda=13000"),  # both packages in one image
    Node("gpu-e", ("ort-gpu", "nvidia-cu12-runtime"), "580.159.04;cuda=13000"),  # a CUDA 12 runtime wheel
    Node("gpu-f", ("ort-gpu", "nvidia-cu13"), None),  # the container lost --gpus: no driver library
)


def node_environ(node: Node, *, nvml_dir: Path, extra: dict[str, str] | None = None,
                 with_root: bool = True) -> dict[str, str]:
    """The environment of ``node``'s check (the caller's, minus what would leak in from this machine)."""
    env = dict(os.environ)
    for var in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "FAKE_NVML", "NODE_NAME", "POD_NAME",
                "KUBERNETES_SERVICE_HOST", "SLURM_JOB_ID", "SLURMD_NODENAME", "SLURM_PROCID"):
        env.pop(var, None)
    paths = [str(testenvs.ensure(e)) for e in node.envs]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths] if with_root else paths)
    if node.driver is not None:
        env["LD_LIBRARY_PATH"] = str(nvml_dir)
        env["FAKE_NVML"] = f"driver={node.driver};{H200.format(name=node.name)}"
    env.update(node.env)
    env.update(extra or {})
    return env


@cache
def nvml_dir() -> Path:
    out = Path(tempfile.mkdtemp(prefix="ortdoctor-fleet-nvml-"))
    atexit.register(shutil.rmtree, out, True)
    fake_nvml.build(out)
    return out


def run_check(node: Node, extra: dict[str, str] | None = None,
              args: tuple[str, ...] = ("--json", "--no-smoke")) -> str:
    """The real stdout of ``ortdoctor check`` on ``node``."""
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "check", *args],
                          env=node_environ(node, nvml_dir=nvml_dir(), extra=extra),
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


@cache
def k8s_reports() -> dict[str, str]:
    """Each node's report as a DaemonSet pod on it writes it (NODE_NAME, POD_NAME from the downward API)."""
    return {n.name: run_check(n, {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "NODE_NAME": n.name,
                                  "POD_NAME": f"ortdoctor-{n.name[-1]}x7k2"})
            for n in NODES}
