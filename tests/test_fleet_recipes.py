"""docs/fleet.md, run as far as a machine without a cluster allows.

Each block marked ``# ortdoctor-recipe: NAME`` is extracted. The Job manifest is parsed, checked and
validated against the Kubernetes API schema (``kubernetes-validate``, where installed); its container's
command is run here once per "node" (real onnxruntime wheels on PYTHONPATH, the fake NVML library as
the driver, the downward-API variables the manifest asks for), the pods' output is put together as
``kubectl logs --prefix`` prints it (``[pod/NAME/CONTAINER] `` before each line, pod after pod), and
the collect script runs as printed with a ``kubectl`` that answers from that. The Slurm script's
``srun`` step is run once per task with the variables Slurm sets, its output labelled and interleaved
as ``srun --label`` writes it, and the rest of the script is run on that; the Slurm health check runs
with ``scontrol`` recorded; the node-problem-detector plugin runs on nodes that pass, fail and cannot
run the check, and its monitor configuration is held to what NPD validates. Every script is parsed by
bash, and by shellcheck where installed.
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
    assert set(recipes()) == {"job", "job-collect", "npd-plugin", "slurm", "slurm-healthcheck"}


@pytest.mark.parametrize("name", ["slurm", "slurm-healthcheck", "job-collect", "npd-plugin"])
def test_each_script_runs_as_printed(name: str, tmp_path: Path) -> None:
    # sbatch and slurmd run a script only when its first line is its "#!" (sbatch: "This does not look
    # like a batch script"); bash must parse it; shellcheck, where installed, must find nothing
    script = recipes()[name]
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
def job() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(recipes()["job"])
    return doc


def test_the_job_manifest() -> None:
    j = job()
    assert (j["apiVersion"], j["kind"]) == ("batch/v1", "Job")
    spec = j["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"]
    labels = spec["template"]["metadata"]["labels"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["runtimeClassName"] == "nvidia"
    # one pod per node: required anti-affinity on the host name, against the pods' own label
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= labels.items()
    (container,) = pod["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"NODE_NAME": "spec.nodeName", "POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}
    assert "ortdoctor check --json" in " ".join(container["args"])
    assert "sleep" not in " ".join(container["args"])  # it ends: no GPU held while idle


def test_the_job_manifest_against_the_kubernetes_api_schema() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for version in ("1.33.0", "1.37.0"):  # backoffLimitPerIndex is GA from 1.33
        kubernetes_validate.validate(job(), version, strict=True)


def _downward_api(container: dict[str, Any], node: str, pod: str) -> dict[str, str]:
    fields = {"spec.nodeName": node, "metadata.name": pod, "metadata.namespace": "ml-serving"}
    env = {e["name"]: fields[e["valueFrom"]["fieldRef"]["fieldPath"]] for e in container["env"]}
    # kubelet sets these in every container
    return {**env, "HOSTNAME": pod, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


_FAKE_KUBECTL = """#!/bin/sh
# kubectl as the collect step uses it, on a cluster of {nodes} GPU nodes whose pods already ran
case "$1 $2" in
  "get nodes") i=0; while [ $i -lt {nodes} ]; do echo "gpu-$i   Ready    <none>   9d   v1.33.1"; i=$((i+1)); done ;;
  "delete job") echo "job.batch \"ortdoctor\" deleted" ;;
  "apply -f") cat > {applied}; echo "job.batch/ortdoctor created" ;;
  "wait --for=condition=complete") echo "job.batch/ortdoctor condition met" ;;
  "logs -l") [ "$*" = "logs -l app=ortdoctor --prefix --tail=-1" ] || exit 9; cat {log} ;;
  *) echo "unexpected: kubectl $*" >&2; exit 9 ;;
esac
"""


def test_the_job_run_on_each_node_and_collected_as_printed(bin_dir: Path, tmp_path: Path) -> None:
    j = job()
    (container,) = j["spec"]["template"]["spec"]["containers"]
    argv = [*container["command"], *container["args"]]
    log = []
    for node in NODES:
        pod = f"ortdoctor-{NODES.index(node)}-q9zt{node.name[-1]}"
        proc = subprocess.run(argv, env=node_env(bin_dir, node, _downward_api(container, node.name, pod)),
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr  # the pod completes, whatever the verdict
        assert len(proc.stdout.splitlines()) == 1  # one report, one line
        # kubectl logs without -f reads the pods one after another; kubelet logs stdout and stderr
        log += [f"[pod/{pod}/{container['name']}] {line}" for line in (proc.stdout + proc.stderr).splitlines()]
    # a node whose image lacks ortdoctor: its pod printed the shell's error instead of a report
    log.append(f"[pod/ortdoctor-6-q9ztx/{container['name']}] /bin/sh: 1: ortdoctor: not found")
    (tmp_path / "pods.log").write_text("\n".join(log) + "\n")

    # the collect step, as printed, with the manifest saved where it reads it and a kubectl that answers
    (tmp_path / "ortdoctor-job.yaml").write_text(recipes()["job"])
    fake = tmp_path / "kbin"
    fake.mkdir()
    applied = tmp_path / "applied.yaml"
    (fake / "kubectl").write_text(_FAKE_KUBECTL.format(nodes=len(NODES) + 1, applied=shlex.quote(str(applied)),
                                                       log=shlex.quote(str(tmp_path / "pods.log"))))
    (fake / "kubectl").chmod(0o755)
    (tmp_path / "collect.sh").write_text(recipes()["job-collect"])
    env = node_env(bin_dir, NODES[0], {})
    env["PATH"] = f"{fake}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(["bash", str(tmp_path / "collect.sh")], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # nodes fail

    # as many pods as GPU nodes, and still the manifest the API accepts
    sent = yaml.safe_load(applied.read_text())
    assert (sent["spec"]["completions"], sent["spec"]["parallelism"]) == (len(NODES) + 1, len(NODES) + 1)
    assert {k: v for k, v in sent["spec"].items() if k not in ("completions", "parallelism")} == {
        k: v for k, v in j["spec"].items() if k not in ("completions", "parallelism")}

    out = proc.stdout[proc.stdout.find("ortdoctor fleet: "):]  # after kubectl's own lines
    # the container runs the whole check: the smoke session fails on every node here (no GPU)
    assert out.startswith("ortdoctor fleet: 7 nodes: 6 fail, 1 error\n"), proc.stdout
    assert "  gpu-a              FAIL        onnxruntime-gpu 1.31.1 · driver 580.159.04 · 1 x NVIDIA H200 · smoke failed" in out
    assert "ortdoctor-6-q9ztx  ERROR       no report: its output was '/bin/sh: 1: ortdoctor: not found'" in out
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


# --------------------------------------------------------------------------------------------------
# node-problem-detector
# --------------------------------------------------------------------------------------------------
def npd_config() -> dict[str, Any]:
    (body,) = [b for b in re.findall(r"^```json\n(.*?)^```$", DOC.read_text(), re.MULTILINE | re.DOTALL)
               if "ortdoctor-recipe: npd-config" in b]
    config: dict[str, Any] = json.loads(body)
    return config


def _seconds(duration: str) -> float:
    m = re.fullmatch(r"(\d+)(s|m|h)", duration)
    assert m, duration
    return int(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]


def test_the_npd_monitor_config_is_what_npd_accepts() -> None:
    # what NPD's CustomPluginConfig.Validate() and ApplyConfiguration() ask of it
    c = npd_config()
    assert c["plugin"] == "custom"
    glob = c["pluginConfig"]
    rule, = c["rules"]
    assert _seconds(rule["timeout"]) <= _seconds(glob["timeout"])  # a rule's limit within the global one
    assert rule["type"] == "permanent"
    assert rule["condition"] in {cond["type"] for cond in c["conditions"]}  # a permanent one has a default
    assert rule["path"].endswith("/ortdoctor-npd.sh")
    assert glob["max_output_length"] == 80  # what the plugin cuts its line to
    assert re.fullmatch(r"[A-Z][A-Za-z]+", rule["reason"])  # CamelCase, as condition reasons are


def test_the_npd_plugin_answers_as_npd_expects(bin_dir: Path, tmp_path: Path) -> None:
    """Exit 0 OK, 1 NonOK, 2 Unknown; one line of at most 80 characters on stdout."""
    script = tmp_path / "ortdoctor-npd.sh"
    script.write_text(recipes()["npd-plugin"])
    script.chmod(0o755)

    def run(node_name: str, path_first: Path | None = None) -> tuple[int, str]:
        node = next(n for n in NODES if n.name == node_name)
        env = node_env(bin_dir, node, {"NODE_NAME": node_name})
        if path_first is not None:
            env["PATH"] = f"{path_first}{os.pathsep}{env['PATH']}"
        proc = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.stdout.endswith("\n")
        assert proc.stdout.count("\n") == 1, proc.stdout
        assert len(proc.stdout) - 1 <= 80, proc.stdout
        return proc.returncode, proc.stdout.strip()

    assert run("gpu-a") == (0, "onnxruntime can use the GPU")  # warnings only
    why = json.loads(fleet_reports.run_check(next(n for n in NODES if n.name == "gpu-b")))
    first = next(f["id"] for f in why["findings"] if f["severity"] == "error")
    assert run("gpu-b") == (1, f"ortdoctor: {first} (ortdoctor explain {first})")
    # an ortdoctor that cannot run (an internal error, exit 3): Unknown, never NonOK
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "ortdoctor").write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\nexit 3\n")
    (broken / "ortdoctor").chmod(0o755)
    assert run("gpu-a", broken) == (2, "ortdoctor: the check did not run (exit status 3)")
    # and none at all (exit 127): Unknown
    (broken / "ortdoctor").unlink()
    node = next(n for n in NODES if n.name == "gpu-a")
    env = node_env(bin_dir, node, {})
    env["PATH"] = "/nonexistent"
    proc = subprocess.run(["/bin/bash", str(script)], env=env, capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "ortdoctor: the check did not run (exit status 127)\n")
