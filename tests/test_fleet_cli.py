"""`ortdoctor fleet`: usage errors, and what happens where Ray is not installed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Python's own way to make an import fail as if the package were absent: a None entry in sys.modules.
_WITHOUT_RAY = "import sys; sys.modules['ray'] = None; from ortdoctor.cli.main import main; main(sys.argv[1:])"


def fleet(*args: str, without_ray: bool = False) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", _WITHOUT_RAY, *args] if without_ray else [sys.executable, "-m", "ortdoctor", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_without_ray_it_says_how_to_install_it() -> None:
    proc = fleet("fleet", "--ray", "auto", without_ray=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "ortdoctor fleet --ray needs Ray" in proc.stderr
    assert "pip install 'ray[default]==<the cluster's Ray version>'" in proc.stderr  # ortdoctor is there
    assert "Traceback" not in proc.stderr


def test_merge_works_without_ray(tmp_path: Path) -> None:
    path = tmp_path / "nothing.json"
    path.write_text("{}\n")
    proc = fleet("fleet", "merge", str(path), without_ray=True)
    assert proc.returncode == 2  # not a report, but merge itself ran without Ray
    assert "not an ortdoctor check report" in proc.stderr


def test_usage_errors(tmp_path: Path) -> None:
    proc = fleet("fleet")
    assert proc.returncode == 2
    assert "ortdoctor fleet --ray auto" in proc.stderr
    assert "ortdoctor fleet merge PATH" in proc.stderr

    proc = fleet("fleet", "--ray", "auto", "merge", str(tmp_path))
    assert proc.returncode == 2
    assert "--ray and `fleet merge` do not go together" in proc.stderr

    proc = fleet("fleet", "--ray", "auto", "--runtime-env", "{pip:", without_ray=True)
    assert proc.returncode == 2
    assert "--runtime-env is not JSON" in proc.stderr

    proc = fleet("fleet", "merge", "--json", "--format", "markdown", str(tmp_path))
    assert proc.returncode == 2
    assert "contradict" in proc.stderr

    proc = fleet("fleet", "merge")
    assert proc.returncode == 2  # click: PATH is required


def test_listed_in_the_help() -> None:
    proc = fleet("--help")
    assert "fleet" in proc.stdout
    assert "Check every node of a cluster (Ray), or merge nodes' reports." in proc.stdout


def _ray_node(node_id: str, alive: bool, reason: int = 0, message: str = "", gpus: float = 0,
              head: bool = False) -> dict[str, object]:
    """An entry of ray.nodes() as Ray 2.60.0 returns it (the fields ortdoctor reads)."""
    resources: dict[str, float] = {"CPU": 1.0, "node:192.0.2.2": 1.0}
    if gpus:
        resources["GPU"] = gpus
    if head:
        resources["node:__internal_head__"] = 1.0
    return {"NodeID": node_id, "Alive": alive, "NodeManagerAddress": "192.0.2.2", "NodeManagerHostname": "vm",
            "Resources": resources, "DeathReason": reason, "DeathReasonMessage": message, "alive": alive}


def test_which_ray_nodes_are_checked() -> None:
    from ortdoctor.fleet.ray_runner import _targets

    nodes = [
        _ray_node("a" * 56, True, gpus=8),
        _ray_node("b" * 56, True, head=True),  # a CPU-only head
        _ray_node("c" * 56, False, 1, "received SIGTERM"),  # stopped on purpose
        _ray_node("d" * 56, False, 2, "health check failed due to missing too many heartbeats"),
        _ray_node("e" * 56, False, 3, "preempted"),
    ]
    targets, notes, dead = _targets(nodes, gpu_nodes_only=False)
    assert [t["NodeID"][0] for t in targets] == ["a", "b"]
    assert [(d.status, d.reason) for d in dead] == [
        ("unreachable", "dead: health check failed due to missing too many heartbeats")]
    assert dead[0].host["ray_node_id"] == "d" * 56
    assert notes == ["left out 2 nodes that Ray lists as stopped on purpose, drained or preempted"]

    # --gpu-nodes-only leaves out dead nodes without GPUs too (they are not asked for), each named with its id
    targets, notes, dead = _targets(nodes, gpu_nodes_only=True)
    assert [t["NodeID"][0] for t in targets] == ["a"]
    assert dead == []
    assert notes[0].startswith("--gpu-nodes-only: left out 2 nodes where Ray counts no GPU "
                               "(vm (bbbbbbbb), vm (dddddddd, dead))")


def test_a_runtime_env_that_cannot_be_set_up_keeps_pip_s_reason() -> None:
    # the node answers: it is in error (not unreachable), with pip's own words, in the form Ray raises them
    ray_exceptions = pytest.importorskip("ray.exceptions")
    from ortdoctor.fleet.ray_runner import _task_failed

    exc = ray_exceptions.RuntimeEnvSetupError(error_message=(
        "Failed to install pip requirements:\nLooking in indexes: https://pypi.org/simple\nERROR: Could not find a "
        "version that satisfies the requirement ortdoctor (from versions: none)\nERROR: No matching distribution "
        "found for ortdoctor"))
    node = _task_failed(_ray_node("f" * 56, True), "ping", exc)
    assert node.status == "error"
    assert node.reason == ("the first task could not start: the --runtime-env could not be set up on the node: "
                           "ERROR: Could not find a version that satisfies the requirement ortdoctor (from versions: "
                           "none) ERROR: No matching distribution found for ortdoctor")


def test_saved_records_of_nodes_without_a_report_merge_back(tmp_path: Path) -> None:
    # `fleet --ray --save-reports`: a node that gave no report gets a record, so a later merge has every node
    from ortdoctor.fleet.merge import merge
    from ortdoctor.fleet.model import node_without_report
    from ortdoctor.fleet.ray_runner import _ray_host, _ray_info, _save_no_report

    info = _ray_node("d" * 56, False, 2, "health check failed due to missing too many heartbeats")
    node = node_without_report("ray:dddddddddddd", "unreachable", "dead: health check failed", host=_ray_host(info),
                               ray=_ray_info(info))
    _save_no_report(str(tmp_path), node)
    (saved,) = tmp_path.iterdir()
    assert saved.name == "vm-dddddddd.json"
    fleet = merge([str(tmp_path)])
    assert [(n.label, n.status, n.reason) for n in fleet.nodes] == [
        ("vm", "unreachable", "dead: health check failed")]
    assert fleet.nodes[0].ray is not None
    assert fleet.nodes[0].ray["node_id"] == "d" * 56


# --------------------------------------------------------------------------------------------------
# --ray ADDRESS that cannot be used: a clear error within the connect limit, nothing on stdout
# (ray is installed in the test environment; every address is on loopback)
# --------------------------------------------------------------------------------------------------
def _fleet_ray(*args: str) -> subprocess.CompletedProcess[str]:
    # the timeout only guards the test run: before the connect limit, Ray retried such addresses for ever
    return subprocess.run([sys.executable, "-m", "ortdoctor", "fleet", "--json", *args], capture_output=True,
                          text=True, timeout=90, cwd=ROOT)


def test_a_refused_address_is_named_with_the_cause() -> None:
    pytest.importorskip("ray")
    proc = _fleet_ray("--ray", "127.0.0.1:1")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "cannot connect to the Ray cluster at '127.0.0.1:1': connection refused" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ship_stages_the_package_privately_and_leaves_nothing_behind(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "ortdoctor", "fleet", "--json", "--ray", "127.0.0.1:1", "--ship"],
                          capture_output=True, text=True, timeout=90, cwd=ROOT, env=env)
    assert proc.returncode == 2
    assert "connection refused" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.glob("ortdoctor-ship-*"))  # the staged copy went with the run

    from ortdoctor.fleet.ray_runner import _staged_package

    with _staged_package() as package:
        staged = Path(package)
        assert staged.name == "ortdoctor"
        assert (staged / "compat_matrix.yaml").is_file()  # as a wheel installs it
        assert (staged / "fleet" / "_node_task.py").is_file()
        assert not list(staged.rglob("__pycache__"))
        assert staged.parent.stat().st_mode & 0o077 == 0  # nobody else can change what is shipped
    assert not staged.exists()


def test_an_unresolvable_host_is_named_with_the_cause() -> None:
    pytest.importorskip("ray")
    proc = _fleet_ray("--ray", "nosuchhost.invalid:6379")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "cannot connect to the Ray cluster at 'nosuchhost.invalid:6379': the host name does not resolve" in proc.stderr


def test_an_address_that_accepts_but_never_answers_ends_at_the_limit() -> None:
    # a listener on loopback that takes the connection and says nothing, as a wrong service would
    pytest.importorskip("ray")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        port = listener.getsockname()[1]
        held: list[socket.socket] = []
        stop = threading.Event()

        def accept() -> None:
            listener.settimeout(0.2)
            while not stop.is_set():
                try:
                    held.append(listener.accept()[0])
                except OSError:
                    pass

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            proc = _fleet_ray("--ray", f"127.0.0.1:{port}", "--connect-timeout", "3")
        finally:
            stop.set()
            thread.join()
            for conn in held:
                conn.close()
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert f"cannot connect to the Ray cluster at '127.0.0.1:{port}' within 3 s" in proc.stderr
    assert "--connect-timeout sets the limit" in proc.stderr


def test_what_ray_prints_never_reaches_stdout() -> None:
    # Ray's threads print with print() and its processes write to the inherited descriptor 1 (the raylet's
    # state dump when a node dies): while the run lasts, both go to stderr
    code = ("import os, sys\n"
            "from ortdoctor.fleet.ray_runner import _stdout_to_stderr\n"
            "with _stdout_to_stderr():\n"
            "    print('(raylet) state dump')\n"
            "    os.write(1, b'[state-dump] from a child\\n')\n"
            "print('{\"the\": \"report\"}')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '{"the": "report"}\n'
    assert "(raylet) state dump" in proc.stderr
    assert "[state-dump] from a child" in proc.stderr


def test_an_input_error_shows_a_file_name_not_obeys_it(tmp_path: Path) -> None:
    # a directory holding a file whose name carries an escape sequence, and no report
    (tmp_path / "notes\x1b]0;pwned\x07.txt").write_text("node-1 looks fine\n")
    proc = fleet("fleet", "merge", str(tmp_path / "notes\x1b]0;pwned\x07.txt"))
    assert proc.returncode == 2
    assert "notes\\x1b]0;pwned\\x07.txt: no ortdoctor report found" in proc.stderr
    assert "\x1b" not in proc.stderr
