"""docs/fleet.md, run as far as a machine without a cluster allows.

Each block marked ``# ortdoctor-recipe: NAME`` is extracted. The DaemonSet manifest is parsed and
checked; its container's command is run here once per "node" (real onnxruntime wheels on PYTHONPATH,
the fake NVML library as the driver, the downward-API variables the manifest asks for), and the pods'
output is put together as ``kubectl logs --prefix`` prints it (``[pod/NAME/CONTAINER] `` before each
line, pod after pod) and fed to the collect step's merge command. The Slurm script's ``srun`` step is
run once per task with the variables Slurm sets, its output labelled and interleaved as ``srun
--label`` writes it, and the rest of the script is run on that.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import fleet_reports
from tests.support.fleet_reports import NODES

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "fleet.md"
pytestmark = pytest.mark.realwheels


def recipes() -> dict[str, str]:
    out: dict[str, str] = {}
    for body in re.findall(r"^```[\w-]*\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL):
        m = re.search(r"^# ortdoctor-recipe: ([\w-]+)$", body, re.MULTILINE)
        if m:
            assert m.group(1) not in out, f"two recipes named {m.group(1)}"
            out[m.group(1)] = body
    return out


def test_every_recipe_is_found() -> None:
    assert set(recipes()) == {"daemonset", "daemonset-collect", "slurm", "slurm-healthcheck"}


@pytest.mark.parametrize("name", ["slurm", "slurm-healthcheck", "daemonset-collect"])
def test_each_script_runs_as_printed(name: str, tmp_path: Path) -> None:
    # sbatch and slurmd run a script only when its first line is its "#!" (sbatch: "This does not look
    # like a batch script"); bash must parse it; shellcheck, where installed, must find nothing
    script = recipes()[name]
    if name != "daemonset-collect":
        assert script.startswith("#!/bin/bash\n"), script.splitlines()[0]
    path = tmp_path / f"{name}.sh"
    path.write_text(script)
    proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    shellcheck = shutil.which("shellcheck") or shutil.which("shellcheck", path=str(Path(sys.executable).parent))
    if shellcheck is not None:
        proc = subprocess.run([shellcheck, "--shell=bash", str(path)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``ortdoctor`` (the installed console script, or ``python -m ortdoctor``) and a ``sleep`` that
    returns at once, so a pod's ``exec sleep infinity`` ends here."""
    d = tmp_path_factory.mktemp("bin")
    script = Path(sys.executable).parent / "ortdoctor"
    if script.exists():
        (d / "ortdoctor").symlink_to(script)
    else:
        (d / "ortdoctor").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m ortdoctor \"$@\"\n")
        (d / "ortdoctor").chmod(0o755)
    (d / "sleep").write_text("#!/bin/sh\nexit 0\n")
    (d / "sleep").chmod(0o755)
    return d


def node_env(bin_dir: Path, node: Any, extra: dict[str, str]) -> dict[str, str]:
    env = fleet_reports.node_environ(node, nvml_dir=fleet_reports.nvml_dir(), extra=extra)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


# --------------------------------------------------------------------------------------------------
# Kubernetes
# --------------------------------------------------------------------------------------------------
def daemonset() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(recipes()["daemonset"])
    return doc


def test_the_daemonset_manifest() -> None:
    ds = daemonset()
    assert (ds["apiVersion"], ds["kind"]) == ("apps/v1", "DaemonSet")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()  # the API server requires it
    pod = ds["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["runtimeClassName"] == "nvidia"
    (container,) = pod["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"NODE_NAME": "spec.nodeName", "POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    assert "ortdoctor check --json" in " ".join(container["args"])

    # the collect step selects these pods, with every line (not the last 10) and a prefix per pod
    collect = next(line for line in recipes()["daemonset-collect"].splitlines() if line.startswith("kubectl logs"))
    left = shlex.split(collect.split("|")[0])
    assert left[left.index("-l") + 1] == "app=" + labels["app"]
    assert "--prefix" in left
    assert "--tail=-1" in left
    rollout = next(line for line in recipes()["daemonset-collect"].splitlines() if "rollout status" in line)
    assert f"daemonset/{ds['metadata']['name']}" in rollout


def _downward_api(container: dict[str, Any], node: str, pod: str) -> dict[str, str]:
    fields = {"spec.nodeName": node, "metadata.name": pod, "metadata.namespace": "ml-serving"}
    env = {e["name"]: fields[e["valueFrom"]["fieldRef"]["fieldPath"]] for e in container["env"]}
    # kubelet sets these in every container
    return {**env, "HOSTNAME": pod, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def test_the_daemonset_pods_output_merged_as_the_recipe_says(bin_dir: Path, tmp_path: Path) -> None:
    ds = daemonset()
    (container,) = ds["spec"]["template"]["spec"]["containers"]
    argv = [*container["command"], *container["args"]]
    log = []
    for node in NODES:
        pod = f"ortdoctor-{node.name[-1]}q9zt"
        proc = subprocess.run(argv, env=node_env(bin_dir, node, _downward_api(container, node.name, pod)),
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr  # `exec sleep` ran: the pod stays up
        assert len(proc.stdout.splitlines()) == 1  # one report, one line
        # kubectl logs without -f reads the pods one after another; kubelet logs stdout and stderr
        log += [f"[pod/{pod}/{container['name']}] {line}" for line in (proc.stdout + proc.stderr).splitlines()]

    collect = next(line for line in recipes()["daemonset-collect"].splitlines() if line.startswith("kubectl logs"))
    merge_cmd = collect.split("|", 1)[1].strip()
    proc = subprocess.run(["bash", "-e", "-c", merge_cmd], input="\n".join(log) + "\n",
                          env=node_env(bin_dir, NODES[0], {}), capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # nodes fail
    out = proc.stdout
    # the container runs the whole check: the smoke session fails on every node here (no GPU)
    assert out.startswith("ortdoctor fleet: 6 nodes: 6 fail\n"), out
    assert "  gpu-a  FAIL        onnxruntime-gpu 1.31.1 · driver 580.159.04 · 1 x NVIDIA H200 · smoke failed" in out
    assert "driver-too-old  (1 node: gpu-b)" in out
    assert "ort-cpu-only  (1 node: gpu-c)" in out
    assert "cuda-major-mismatch  (1 node: gpu-e)" in out
    # the smoke session fails on the nodes with a driver too (the fake libcuda.so.1 has no functions); where
    # it names a cause (a missing library on gpu-e, no driver on gpu-f), that cause alone is reported
    assert "smoke-fell-back-to-cpu  (2 nodes: gpu-a, gpu-b)" in out
    assert "driver-missing  (1 node: gpu-f)" in out
    assert "1 node on driver 535.x while onnxruntime-gpu 1.31.1 (CUDA 13.0) needs >= 580: gpu-b" in out


# --------------------------------------------------------------------------------------------------
# Slurm
# --------------------------------------------------------------------------------------------------
def test_the_slurm_script_run_as_srun_would(bin_dir: Path, tmp_path: Path) -> None:
    script = recipes()["slurm"]
    sbatch = dict(re.findall(r"^#SBATCH (--[\w-]+)=(\S+)$", script, re.MULTILINE))
    assert sbatch["--ntasks-per-node"] == "1"
    assert "--gpus-per-node" in sbatch
    srun_line = next(line for line in script.splitlines() if line.startswith("srun "))
    tokens = shlex.split(srun_line)
    assert "--label" in tokens
    assert tokens[-4:] == [">", "reports.jsonl", "||", "true"]  # a failing node must not stop the merge
    start = tokens.index("ortdoctor")
    task_argv = tokens[start:tokens.index(">")]
    assert task_argv == ["ortdoctor", "check", "--json"]

    # srun: one task per node, each with the variables Slurm sets; --label puts "TASK: " before each
    # line, and the tasks' lines arrive interleaved
    streams = []
    for procid, node in enumerate(NODES):
        extra = {"SLURM_JOB_ID": "918273", "SLURMD_NODENAME": node.name, "SLURM_PROCID": str(procid),
                 "SLURM_NNODES": str(len(NODES))}
        proc = subprocess.run(task_argv, env=node_env(bin_dir, node, extra), capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert proc.returncode in (0, 1), proc.stderr
        streams.append([f"{procid}: {line}" for line in proc.stdout.splitlines()])
    lines = [s[j] for j in range(max(map(len, streams))) for s in streams if j < len(s)]
    (tmp_path / "reports.jsonl").write_text("\n".join(lines) + "\n")

    rest = script.split(srun_line, 1)[1]  # what the batch script does after srun
    proc = subprocess.run(["bash", "-c", rest], env=node_env(bin_dir, NODES[0], {}), capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("ortdoctor fleet: 6 nodes: 6 fail\n"), proc.stdout
    assert "driver-too-old  (1 node: gpu-b)" in proc.stdout
    assert "ort-multiple-packages  (1 node: gpu-d)" in proc.stdout
    assert "1 node on driver 535.x while onnxruntime-gpu 1.31.1 (CUDA 13.0) needs >= 580: gpu-b" in proc.stdout
    nodes = proc.stdout.split("\nNodes\n", 1)[1]
    assert [line.split()[0] for line in nodes.splitlines() if line.startswith("  ")] == [n.name for n in NODES]


def test_the_slurm_health_check_drains_a_failing_node_with_a_short_reason(bin_dir: Path, tmp_path: Path) -> None:
    # slurmd runs it as HealthCheckProgram; `scontrol` here records what it was asked to do
    script = tmp_path / "ortdoctor-health.sh"
    script.write_text(recipes()["slurm-healthcheck"])
    script.chmod(0o755)
    fake = tmp_path / "sbin"
    fake.mkdir()
    calls = tmp_path / "scontrol.calls"
    (fake / "scontrol").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(calls))}\n')
    (fake / "scontrol").chmod(0o755)

    def run(node_name: str) -> list[str]:
        node = next(n for n in NODES if n.name == node_name)
        env = node_env(bin_dir, node, {"NODE_NAME": node_name})
        env["PATH"] = f"{fake}{os.pathsep}{env['PATH']}"
        calls.unlink(missing_ok=True)
        proc = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr  # a health check that fails itself would drain every node
        return calls.read_text().splitlines() if calls.exists() else []

    assert run("gpu-a") == []  # warnings only: the node stays in service
    (call,) = run("gpu-b")
    why = json.loads(fleet_reports.run_check(next(n for n in NODES if n.name == "gpu-b")))
    first = next(f["id"] for f in why["findings"] if f["severity"] == "error")
    assert call == f"update NodeName=gpu-b State=DRAIN Reason=ortdoctor: {first}"
