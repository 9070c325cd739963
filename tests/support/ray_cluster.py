"""A Ray cluster on loopback whose raylets are started by ``ray start``, each from its own virtual environment.

What an operator runs: ``ray start --head`` on one machine, ``ray start --address=HEAD`` on the others,
each node's Ray from the Python of that node's image. Here every node is a venv of its own (its own
interpreter, ``sys.prefix`` and site-packages), made in seconds without an index: the venv's
site-packages holds a ``.pth`` naming Ray's installation (the one running the tests, so every node has
the same Ray, as a cluster must), this ortdoctor, and the node's own onnxruntime/NVIDIA wheels
(tests/support/testenvs.py). A raylet started from that venv runs its workers with that venv's Python.

Every ``ray start --block`` runs in a session of its own: the raylet, its workers and (on the head) the
GCS are in that process group, so a node is killed, stopped and cleaned up by its own group id, never
by name (``ray stop`` would end every Ray process on the machine).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OBJECT_STORE = 80 * 1024 * 1024
_RAY_CLI = "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; sys.exit(main())"


def make_venv(where: Path, paths: list[str]) -> Path:
    """A venv at ``where`` whose site-packages also reaches ``paths`` and Ray; its Python."""
    import ray

    venv.create(where, with_pip=False, symlinks=True)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    ray_site = str(Path(ray.__file__).resolve().parents[1])
    # the node's own wheels first, as a venv's own site-packages come before anything a .pth adds
    Path(purelib, "ortdoctor-node.pth").write_text("\n".join([*paths, str(ROOT), ray_site]) + "\n")
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RayNode:
    name: str
    python: Path
    proc: subprocess.Popen[bytes]
    node_manager_port: int
    log: Path

    def raylet_pid(self) -> int:
        """The raylet of this node: the process of its group started with its node manager port."""
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) != self.proc.pid:
                    continue
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except (OSError, ProcessLookupError):
                continue
            if argv and argv[0].endswith(b"/raylet") and \
                    f"--node_manager_port={self.node_manager_port}".encode() in argv:
                return int(entry.name)
        raise LookupError(f"no raylet for {self.name}: see {self.log}")

    def signal(self, sig: int) -> None:
        os.killpg(self.proc.pid, sig)


@dataclass
class RayCluster:
    """``ray start`` nodes on 127.0.0.1; :meth:`add` the head first."""

    temp: Path  # Ray's session directory (short: unix socket paths are limited to 107 bytes)
    logs: Path  # each `ray start`'s output
    address: str = ""
    nodes: list[RayNode] = field(default_factory=list)

    def add(self, name: str, python: Path, env: dict[str, str], *, resources: str = "{}",
            extra_args: list[str] | None = None) -> RayNode:
        head = not self.nodes
        ports = {"--node-manager-port": free_port(), "--object-manager-port": free_port(),
                 "--runtime-env-agent-port": free_port(), "--dashboard-agent-grpc-port": free_port(),
                 "--dashboard-agent-listen-port": free_port(), "--metrics-export-port": free_port()}
        args = [str(python), "-c", _RAY_CLI, "start", "--block", "--node-ip-address=127.0.0.1", "--num-cpus=1",
                f"--resources={resources}", f"--object-store-memory={OBJECT_STORE}", "--disable-usage-stats",
                "--min-worker-port=0", "--max-worker-port=0",  # ports the system picks: raylets share this host
                *(f"{k}={v}" for k, v in ports.items()), *(extra_args or [])]
        if head:
            port = free_port()
            self.address = f"127.0.0.1:{port}"
            args += ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={self.temp}"]
        else:
            args += [f"--address={self.address}"]
        for attempt in range(1, 4):
            log = self.logs / f"ray-start-{name}-{attempt}.log"
            with open(log, "wb") as out:
                proc = subprocess.Popen(args, env={**env, "RAY_USAGE_STATS_ENABLED": "0"}, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True, cwd=self.temp.parent)
            node = RayNode(name, python, proc, ports["--node-manager-port"], log)
            if self._started(node):
                self.nodes.append(node)
                return node
        raise RuntimeError(f"ray start for {name} failed 3 times: {log.read_text()[-3000:]}")

    @staticmethod
    def _started(node: RayNode, timeout: float = 180) -> bool:
        """Whether ``ray start`` says the node is up; a start that gave up is cleaned up (its group killed).
        Ray gives a raylet 30 s to register, fixed: on two loaded cores it sometimes takes longer."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if b"Ray runtime started" in node.log.read_bytes():
                return True
            if node.proc.poll() is not None:
                break
            time.sleep(0.2)
        try:
            os.killpg(node.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.proc.wait(timeout=30)
        return False

    def wait(self, alive: int, timeout: float = 180) -> None:
        """Until Ray lists ``alive`` nodes alive (asked from a child, so this process never joins Ray)."""
        ask = ("import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
               "print(sum(n['Alive'] for n in ray.nodes()))")
        deadline = time.monotonic() + timeout
        while True:
            for node in self.nodes:
                if node.proc.poll() is not None:
                    raise RuntimeError(f"ray start for {node.name} ended: {node.log.read_text()[-3000:]}")
            try:
                proc = subprocess.run([sys.executable, "-c", ask, self.address], capture_output=True, text=True,
                                      timeout=60)
            except subprocess.TimeoutExpired as exc:
                said = f"{exc.stderr!r}"[-2000:]
            else:
                if proc.returncode == 0 and proc.stdout.strip().splitlines()[-1:] == [str(alive)]:
                    return
                said = f"{proc.stdout[-500:]} {proc.stderr[-2000:]}"
            if time.monotonic() > deadline:
                raise TimeoutError(f"{alive} nodes never alive: {said}")
            time.sleep(1)

    def node_ids(self) -> dict[str, str]:
        """Each node's Ray node id, by name (from its node manager port, as Ray lists it)."""
        ask = ("import json, ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR'); "
               "print(json.dumps({n['NodeManagerPort']: n['NodeID'] for n in ray.nodes()}))")
        proc = subprocess.run([sys.executable, "-c", ask, self.address], capture_output=True, text=True,
                              timeout=120, check=True)
        ports = json.loads(proc.stdout.strip().splitlines()[-1])
        return {node.name: ports[str(node.node_manager_port)] for node in self.nodes}

    def shutdown(self) -> None:
        """Every node's process group, workers first (the head last)."""
        for node in reversed(self.nodes):
            try:
                os.killpg(node.proc.pid, signal.SIGCONT)
                node.proc.send_signal(signal.SIGTERM)  # ray start --block stops its processes
                node.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
            try:
                os.killpg(node.proc.pid, signal.SIGKILL)  # whatever is left of its group
            except ProcessLookupError:
                pass
            if node.proc.poll() is None:
                node.proc.wait(timeout=30)
