"""Broken venvs from the real wheels, the printed fix pasted as it stands, then the check again.

One scenario, as a user lives it:

1. ``python3 -m venv`` (``--without-pip`` where the scenario says so), the broken packages installed
   with that venv's pip in the scenario's order (or with another pip's ``--python`` where the venv has
   none), then ortdoctor itself, as the README says (``pip install .``: the wheel built from this
   checkout, so the code under test is what runs);
2. ``<venv>/bin/ortdoctor check --json --no-smoke``, the venv not activated (where a scenario activates
   another venv, with that one's ``VIRTUAL_ENV`` and ``bin/`` in the shell);
3. the **primary fix**, defined as: the first fix block the report prints for the first finding, in the
   report's order, whose severity is ``error`` and which is not one this machine causes (no GPU here:
   ``driver-missing`` and ``smoke-*``; see :data:`EXCUSED`): the merged block (the JSON's top-level
   ``fix``, what ``ortdoctor fix`` runs) where it covers that finding, else the finding's whole ``fix``
   (its command lines, then its prose as ``# `` comments). That text is pasted into ``bash`` exactly as
   printed, with history expansion on as in an interactive shell, with a **decoy** ``pip``/``pip3``/``python``/``python3`` first on ``PATH``: they belong to
   another Python (a venv of the system interpreter), log every call and then do what the real ones
   would, i.e. install into the wrong place. A fix that says bare ``pip`` (or ``python -m pip``) is
   caught twice: the decoy log is not empty, and the venv is still broken;
4. the check again: **converged** when it has no ``error`` and no ``warning`` apart from :data:`EXCUSED`
   (notes, severity ``info``, are allowed), and the decoy was never called.

A fix that installs the NVIDIA wheels leaves libraries pip put where the loader does not look: its
prose says "afterwards: ``import ortdoctor.hook``". The findings that say only that
(:data:`PRELOAD_ADVICE`) are allowed after the fix when ``ortdoctor preload`` in the venv then loads every
library the build needs: "works with the preload" is proven, not assumed.

Wheels are fetched once with ``pip download`` into a cache directory (``.testenvs/convergence-wheels/``
by default, ``$ORTDOCTOR_CONVERGENCE_WHEELS`` elsewhere) and installed from it with ``--no-index``, so the
broken environment is the same every time. The pasted fix runs with PyPI as usual plus the cache as a
local PEP 503 index listed last (pip takes the last of equal candidates, so a file the cache holds is
not downloaded again), so a fix that asks for something the cache lacks still gets it from PyPI, as it
would for a user.

Only the standard library is used: the harness runs ortdoctor as a program, never imports it.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TESTENVS = Path(os.environ.get("ORTDOCTOR_TESTENVS", ROOT / ".testenvs"))
WHEELS = Path(os.environ.get("ORTDOCTOR_CONVERGENCE_WHEELS", TESTENVS / "convergence-wheels"))

#: Findings this machine causes and a fix of the environment cannot remove: there is no GPU and no
#: driver here, and ``--no-smoke`` runs no smoke session.
EXCUSED_IDS = frozenset({"driver-missing"})
EXCUSED_PREFIXES = ("smoke-",)
#: Findings whose whole remedy is the preload a package fix's second line prescribes.
PRELOAD_ADVICE = frozenset({"cuda-lib-not-loadable", "default-loader-picks-other-copy"})

PIP_QUIET = ("--disable-pip-version-check", "--no-input", "--progress-bar", "off")


def excused(finding_id: str, *, smoke: bool = False) -> bool:
    """A finding this machine causes. With the smoke session run (``smoke``), only ``driver-missing``: a
    session that cannot run without a driver must say so through it, not through an error of its own."""
    if smoke:
        return finding_id in EXCUSED_IDS
    return finding_id in EXCUSED_IDS or finding_id.startswith(EXCUSED_PREFIXES)


@dataclass(frozen=True)
class Scenario:
    """One broken environment.

    ``installs``: pip install argument lists, run in order into the venv (each as one ``pip install``).
    ``truncate``: a path relative to site-packages cut to 4096 bytes after the installs (a download or
    copy that stopped half-way; a mapped file that ends early kills the process with SIGBUS).
    ``expect``: finding ids the first check must raise (the diagnosis is right before the fix is tried).
    ``fix_needs``: requirement sets a right fix installs, fetched into the cache ahead of time so a
    rerun downloads nothing (a speed-up only: what the fix really asks for is fetched either way).
    ``smoke``: the check after the fix runs the smoke session too (no driver here: it must end in
    ``driver-missing`` alone, whatever the release does on the GPU without one).
    ``unreadable``: a path relative to site-packages made unreadable (``chmod 000``) after the installs;
    then every check runs as ``nobody`` with ortdoctor installed apart (``--target``) and ``--python``
    naming the venv, as the README says for an existing environment, and the venv is made from the
    system's interpreter, which ``nobody`` can run. The pasted fix runs as the owner (here root).
    """

    name: str
    what: str
    installs: tuple[tuple[str, ...], ...]
    expect: tuple[str, ...]
    without_pip: bool = False
    truncate: str | None = None
    fix_needs: tuple[tuple[str, ...], ...] = ()
    ci: bool = False
    # -- layouts beyond packages in one venv (fixes built for each installer)
    # the venv sees the base interpreter's site-packages and the user site
    system_site_packages: bool = False
    # ``pip install --user`` by the interpreter the venv is made from, PYTHONUSERBASE in the workspace
    user_installs: tuple[str, ...] = ()
    # ``pip install --target`` into ``target_dir`` (relative to the workspace; spaces, quotes and ``$(...)``
    # welcome), which is then on PYTHONPATH for the check and the paste
    target_installs: tuple[str, ...] = ()
    target_dir: str = "target"
    # the venv made by ``uv venv`` (no pip), every install by ``uv pip --python``; uv is where its installer
    # puts it ($HOME/.local/bin), not on PATH, and reads only the wheel cache (UV_NO_INDEX)
    uv_venv: bool = False
    # another venv activated in the shell that checks and pastes (``VIRTUAL_ENV`` set, its ``bin/`` first
    # on PATH, before the decoy), ortdoctor installed there too. "python": the checks run that venv's
    # ortdoctor with ``--python`` naming the broken venv; "self": they run the broken venv's own ortdoctor,
    # which then inspects a venv that is not the activated one. Either way the paste must leave the
    # activated venv's site-packages as it was (:meth:`Workspace.damage`). "tool": the broken venv is the
    # activated one, and the checks run an ortdoctor installed in a venv of its own (as pipx does), which
    # inspects that venv; the paste must leave ortdoctor's own venv as it was.
    activated: str | None = None
    # a poetry project (``package-mode = false``) whose in-project ``.venv`` (beside ``poetry.lock``) is the
    # broken venv: ``installs`` are its dependencies, locked and installed by poetry, which reads only the
    # wheel cache (served over HTTP on 127.0.0.1 while the project is built: poetry reads no file:// index)
    poetry: bool = False
    smoke: bool = False
    unreadable: str | None = None


@dataclass
class Round:
    rc: int
    verdict: str | None
    findings: list[dict[str, Any]]
    problems: list[str]  # "id (severity)" of every error/warning that is neither excused nor preload advice
    preload_advice: list[str]  # ids of PRELOAD_ADVICE findings present (warnings)
    report: dict[str, Any] = field(default_factory=dict)  # the whole check --json


@dataclass
class Outcome:
    scenario: str
    first: Round | None = None
    primary_id: str | None = None
    fix: str | None = None  # the whole fix text of the primary finding
    pasted: str | None = None  # the first block the report prints for it, pasted into bash
    fix_rc: int | None = None
    fix_stdout: str = ""  # what the fix printed, whole: a check reads all of it, never a tail
    fix_stderr: str = ""
    decoy_calls: list[str] = field(default_factory=list)
    after: Round | None = None
    printed: bool | None = None  # the pasted line is a whole line of the human report too
    preload_failed: list[str] | None = None  # after the fix, where preload advice remains: what did not load
    # where the first round did not converge and more were allowed: (further rounds pasted, clean after them)
    later_rounds: tuple[int, bool] | None = None
    later_fixes: list[str] = field(default_factory=list)  # the block pasted in each further round
    missing_expected: list[str] = field(default_factory=list)
    damage: list[str] = field(default_factory=list)  # what the paste did beside its job (files made or lost)
    error: str | None = None  # the harness itself could not build the scenario
    seconds: float = 0.0

    @property
    def fix_output(self) -> str:
        """stdout then stderr of the fix, whole (pip writes a line per wheel: a tail of a few thousand
        characters lost what ``ortdoctor fix`` printed before pip ran)."""
        return self.fix_stdout + self.fix_stderr

    @property
    def converged(self) -> bool:
        return (self.error is None and self.fix_rc == 0 and not self.decoy_calls and self.printed is not False
                and not self.damage and self.after is not None
                and not self.after.problems and not self.preload_failed)

    @property
    def needs_preload(self) -> bool:
        return self.after is not None and bool(self.after.preload_advice)

    @property
    def rounds(self) -> str:
        """Fix rounds pasted: "1" when the first left the environment clean; where it did not and more
        rounds were allowed, the rounds the later fixes needed ("3" clean after three, ">3" never)."""
        if self.pasted is None:
            return "0"
        if self.converged:
            return "1"
        if self.later_rounds is None:
            return "1 (not clean)"
        return str(1 + self.later_rounds[0]) if self.later_rounds[1] else f">{1 + self.later_rounds[0]}"

    def summary(self) -> str:
        if self.error:
            return f"harness error: {self.error}"
        if self.missing_expected:
            diag = f"diagnosis lacks {', '.join(self.missing_expected)}; "
        else:
            diag = ""
        if self.pasted is None:
            return diag + "no primary fix printed"
        if self.converged:
            return diag + "converged in one round" + (" (works with the preload: proven)" if self.needs_preload else "")
        parts = []
        if self.printed is False:
            parts.append("the human report does not print the pasted line whole")
        if self.fix_rc:
            parts.append(f"fix exited {self.fix_rc}")
        if self.decoy_calls:
            parts.append("the decoy ran: " + "; ".join(self.decoy_calls))
        if self.damage:
            parts.append("the paste did more than its job: " + "; ".join(self.damage))
        if self.after is not None and self.after.problems:
            parts.append("left: " + ", ".join(self.after.problems))
        if self.preload_failed:
            parts.append("the preload fails: " + "; ".join(self.preload_failed))
        if self.later_rounds is not None:
            n, clean = self.later_rounds
            parts.append(f"clean after {1 + n} rounds" if clean else f"still not clean after {1 + n} rounds")
        return diag + "NOT converged: " + "; ".join(parts)


# --------------------------------------------------------------------------------------------------
# Network and the wheel cache
# --------------------------------------------------------------------------------------------------
def pypi_reachable(timeout: float = 10.0) -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=timeout) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _pip_env(*, local_index: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_REQUIRE_VIRTUALENV", "PIP_USER")}
    if local_index:  # the cache as the last index: pip takes the last of equal candidates
        extra = [u for u in env.get("PIP_EXTRA_INDEX_URL", "").split() if u]
        env["PIP_EXTRA_INDEX_URL"] = " ".join([*extra, (WHEELS / "simple").as_uri()])
    # No HTTP cache: the wheel cache is the one copy.
    env["PIP_NO_CACHE_DIR"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), env=dict(env) if env is not None else None, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False)


def _checked(cmd: Sequence[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = _run(cmd, **kw)
    if proc.returncode != 0:
        raise HarnessError(f"{' '.join(cmd)} exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


class HarnessError(RuntimeError):
    """The scenario could not be built (a download failed, a wheel does not install)."""


def fetch(requirements: Sequence[str], *, python: str = sys.executable) -> None:
    """``pip download`` one requirement set (with its dependencies) into the cache, once."""
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:16]
    mark = WHEELS / ".sets" / key
    if mark.exists():
        return
    WHEELS.mkdir(parents=True, exist_ok=True)
    _checked([python, "-m", "pip", "download", *PIP_QUIET, "--only-binary=:all:", "-d", str(WHEELS),
              *(r for r in requirements if r != "--no-deps"), *(["--no-deps"] if "--no-deps" in requirements else [])],
             env=_pip_env())
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text("\n".join(requirements) + "\n")
    _write_simple_index()


def _write_simple_index() -> None:
    """``<cache>/simple/<project>/index.html``: the cache as a PEP 503 index pip can list last."""
    by_project: dict[str, list[Path]] = {}
    for wheel in sorted(WHEELS.glob("*.whl")):
        project = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
        by_project.setdefault(project, []).append(wheel)
    root = WHEELS / "simple"
    for project, wheels in by_project.items():
        (root / project).mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="{w.as_uri()}">{w.name}</a><br>' for w in wheels)
        (root / project / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>\n")


def fetch_scenario(s: Scenario) -> None:
    for reqs in (*s.installs, *s.fix_needs):
        fetch(reqs)


def build_ortdoctor_wheel(out: Path, *, python: str = sys.executable) -> Path:
    """The wheel of this checkout (what ``pip install .`` installs), and its dependencies in the cache."""
    out.mkdir(parents=True, exist_ok=True)
    _checked([python, "-m", "pip", "wheel", *PIP_QUIET, "--no-deps", "-w", str(out), str(ROOT)], env=_pip_env())
    wheel = next(out.glob("ortdoctor-*.whl"))
    WHEELS.mkdir(parents=True, exist_ok=True)
    _checked([python, "-m", "pip", "download", *PIP_QUIET, "--only-binary=:all:", "-d", str(WHEELS), str(wheel)],
             env=_pip_env())
    for stale in WHEELS.glob("ortdoctor-*.whl"):  # the code under test is never served from the cache
        stale.unlink()
    _write_simple_index()
    return wheel


# --------------------------------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------------------------------
class Workspace:
    """A scratch directory holding the venv, the decoy and the log; removed afterwards."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ortdoctor-converge-"))
        self.venv = self.root / "venv"
        self.decoy = self.root / "decoy-venv"
        self.decoy_bin = self.root / "decoy-bin"
        self.decoy_log = self.root / "decoy.log"
        self.cwd = self.root / "cwd"
        self.cwd.mkdir()
        self.userbase = self.root / "userbase"  # PYTHONUSERBASE: a --user install stays in the workspace
        self.target: Path | None = None  # a --target directory on PYTHONPATH
        self.sentinel = self.root / "proj" / "my" / "keep.txt"  # beside a target dir named "my dir ..."
        self.home: Path | None = None  # $HOME for a uv scenario (uv in ~/.local/bin)
        self.tool: Path | None = None  # ortdoctor installed apart, for checks as another user
        self.as_user: tuple[int, int] | None = None  # (uid, gid) the checks run as
        self.activated: Path | None = None  # a venv activated in the user's shell, not the broken one
        self.kept: Path | None = None  # a venv the paste must leave as it was (see damage)
        self.kept_name = "the activated venv"
        self.kept_files: dict[str, int] = {}  # its site-packages after the build: path -> size
        self.checker_python = True  # the checker is given --python naming the broken venv
        self.checker: Path | None = None  # an ortdoctor outside the broken venv, run with --python naming it

    def ortdoctor(self, *args: str) -> list[str]:
        """The command line of ``ortdoctor ARGS`` for this workspace's checks."""
        if self.checker is not None:
            return [str(self.checker), *args, *(["--python", self.python] if self.checker_python else [])]
        if self.tool is None:
            return [str(self.venv / "bin" / "ortdoctor"), *args]
        return [SYSTEM_PYTHON, "-m", "ortdoctor", *args, "--python", self.python]

    def run_check(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        env = self.user_env()
        if self.tool is not None:
            env["PYTHONPATH"] = str(self.tool)
        ids = self.as_user
        if ids is None:
            return _run(argv, env=env, cwd=self.cwd, timeout=300)

        def drop() -> None:
            os.setgroups([])
            os.setgid(ids[1])
            os.setuid(ids[0])

        env["HOME"] = "/nonexistent"
        return subprocess.run(list(argv), env=env, cwd=self.cwd, capture_output=True, text=True, timeout=300,
                              check=False, preexec_fn=drop)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def make_decoy(self) -> None:
        """pip, pip3, python and python3 of another Python, first on PATH: each logs its call, then runs."""
        system = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
        _checked([system, "-m", "venv", str(self.decoy)])
        self.decoy_bin.mkdir()
        log = str(self.decoy_log)
        for name in ("pip", "pip3"):
            script = self.decoy_bin / name
            script.write_text(
                f"#!{self.decoy / 'bin' / 'python'}\n"
                "# A pip of another Python, first on PATH: a fix that says bare `pip` runs this one.\n"
                "import sys\n"
                f"with open({log!r}, 'a') as f:\n"
                "    f.write(' '.join(sys.argv) + '\\n')\n"
                "from pip._internal.cli.main import main\n"
                "sys.exit(main())\n")
            script.chmod(0o755)
        for name in ("python", "python3"):
            script = self.decoy_bin / name
            script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {log}\nexec {self.decoy / 'bin' / 'python3'} \"$@\"\n")
            script.chmod(0o755)

    def user_env(self) -> dict[str, str]:
        """The shell the user pastes into: the decoy first on PATH, no venv activated (or, where the
        scenario activates one, as ``source <venv>/bin/activate`` leaves it: its ``bin/`` before the decoy)."""
        env = _pip_env(local_index=True)
        env["PATH"] = f"{self.decoy_bin}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        if self.activated is not None:
            env["VIRTUAL_ENV"] = str(self.activated)
            env["PATH"] = f"{self.activated / 'bin'}{os.pathsep}{env['PATH']}"
        env["NO_COLOR"] = "1"
        env["PYTHONUSERBASE"] = str(self.userbase)
        if self.target is not None:
            env["PYTHONPATH"] = str(self.target)
        if self.home is not None:
            env.update(HOME=str(self.home), UV_NO_INDEX="1", UV_FIND_LINKS=str(WHEELS),
                       UV_CACHE_DIR=str(self.root / "uv-cache"), UV_PYTHON_DOWNLOADS="never", UV_LINK_MODE="copy")
        return env

    def damage(self) -> list[str]:
        """Files a pasted fix must never touch: the sentinel beside a target dir, no file made by a
        command substitution in a path, the site-packages of the venv the scenario keeps (the activated
        one, or ortdoctor's own: a fix that installs or removes anything there changed the wrong one)."""
        out = [f"{p} was created" for p in self.root.rglob("INJECTED*")]
        if self.target is not None and not self.sentinel.exists():
            out.append(f"{self.sentinel} is gone")
        if self.kept is not None:
            now = _files(self.kept)
            changed = sorted(set(now) ^ set(self.kept_files)) + sorted(
                p for p in set(now) & set(self.kept_files) if now[p] != self.kept_files[p])
            if changed:
                out.append(f"{self.kept_name}'s site-packages changed ({len(changed)} files, e.g. "
                           + ", ".join(changed[:3]) + ")")
        return out

    def decoy_calls(self) -> list[str]:
        if not self.decoy_log.exists():
            return []
        return [line for line in self.decoy_log.read_text().splitlines() if line.strip()]


def _site_packages(ws: Workspace) -> Path:
    return next((ws.venv / "lib").glob("python3*/site-packages"))


def _files(venv: Path) -> dict[str, int]:
    """A venv's site-packages as relative path -> size (bytecode left out: running ortdoctor from the
    venv may compile some, which installs nothing)."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    return {str(p.relative_to(site)): p.stat().st_size for p in site.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def _activate_other(s: Scenario, ws: Workspace, ortdoctor_wheel: Path, offline: Sequence[str],
                    env: Mapping[str, str]) -> None:
    """The venv the user's shell has activated and the one kept: another venv with ortdoctor in it
    (installed from the same wheel), its files recorded; with ``activated="python"`` its ortdoctor is the
    one that checks, through ``--python``. With ``activated="tool"`` the broken venv is the activated one
    and the other venv is ortdoctor's own, whose ortdoctor checks without ``--python``."""
    other = ws.root / ("ortdoctor-venv" if s.activated == "tool" else "activated-venv")
    _checked([sys.executable, "-m", "venv", str(other)])
    _checked([str(other / "bin" / "python"), "-m", "pip", "install", *PIP_QUIET, *offline,
              str(ortdoctor_wheel)], env=env)
    ws.kept, ws.kept_files = other, _files(other)
    ws.activated = ws.venv if s.activated == "tool" else other
    if s.activated == "tool":
        ws.kept_name = "ortdoctor's own venv"
        ws.checker, ws.checker_python = other / "bin" / "ortdoctor", False
    elif s.activated == "python":
        ws.checker = other / "bin" / "ortdoctor"


def _base_python() -> str:
    """The interpreter a venv made by this one is made from (what owns the user site)."""
    return str(getattr(sys, "_base_executable", None) or sys.executable)


UV = ("uv==0.13.9",)


def _build_uv(s: Scenario, ws: Workspace, ortdoctor_wheel: Path) -> None:
    """A venv made by ``uv venv``, the packages installed with ``uv pip``, uv in ``$HOME/.local/bin``."""
    fetch(UV)
    ws.home = ws.root / "home"
    tool = ws.root / "uv-tool"
    _checked([sys.executable, "-m", "pip", "install", *PIP_QUIET, "--no-index", "--find-links", str(WHEELS),
              "--target", str(tool), *UV], env=_pip_env())
    uv = ws.home / ".local" / "bin" / "uv"
    uv.parent.mkdir(parents=True)
    uv.symlink_to(tool / "bin" / "uv")
    env = ws.user_env()
    _checked([str(uv), "venv", "--quiet", "--python", _base_python(), str(ws.venv)], env=env)
    for reqs in (*s.installs, (str(ortdoctor_wheel),)):
        _checked([str(uv), "pip", "install", "--quiet", "--python", ws.python, *reqs], env=env)


POETRY = ("poetry==2.5.1",)


def _index_for_http(root: Path) -> Path:
    """``root/simple/<project>/index.html`` linking ``root/files/<wheel>`` relatively, ``files`` a link to the
    cache: the wheel cache as a PEP 503 index an HTTP server rooted at ``root`` serves."""
    (root / "simple").mkdir(parents=True)
    (root / "files").symlink_to(WHEELS)
    by_project: dict[str, list[str]] = {}
    for wheel in sorted(WHEELS.glob("*.whl")):
        by_project.setdefault(re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower(), []).append(wheel.name)
    for project, names in by_project.items():
        (root / "simple" / project).mkdir()
        links = "".join(f'<a href="../../files/{n}">{n}</a><br>' for n in names)
        (root / "simple" / project / "index.html").write_text(f"<!DOCTYPE html><html><body>{links}</body></html>\n")
    return root


def _build_poetry(s: Scenario, ws: Workspace, ortdoctor_wheel: Path) -> None:
    """A poetry project whose dependencies are ``s.installs``, ``poetry lock`` and ``poetry install`` into its
    in-project ``.venv`` (poetry installed in a venv of its own, as pipx would), then ortdoctor with the
    venv's pip."""
    fetch(POETRY)
    tool = ws.root / "poetry-tool"
    _checked([sys.executable, "-m", "venv", str(tool)])
    offline = ["--no-index", "--find-links", str(WHEELS), "--only-binary=:all:"]
    _checked([str(tool / "bin" / "python"), "-m", "pip", "install", *PIP_QUIET, *offline, *POETRY], env=_pip_env())
    index = _index_for_http(ws.root / "index")
    handler = functools.partial(_QuietHandler, directory=str(index))
    server = _QuietServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        project = ws.root / "proj"
        project.mkdir()
        deps = ", ".join(json.dumps(r) for reqs in s.installs for r in reqs)
        (project / "pyproject.toml").write_text(
            '[project]\nname = "app"\nversion = "0.1.0"\n'
            f'requires-python = "=={sys.version_info[0]}.{sys.version_info[1]}.*"\ndependencies = [{deps}]\n\n'
            '[tool.poetry]\npackage-mode = false\n\n'
            '[[tool.poetry.source]]\nname = "wheels"\n'
            f'url = "http://127.0.0.1:{server.server_address[1]}/simple/"\npriority = "primary"\n')
        env = {**_pip_env(), "POETRY_VIRTUALENVS_IN_PROJECT": "true", "POETRY_INSTALLER_PARALLEL": "false",
               "POETRY_CACHE_DIR": str(ws.root / "poetry-cache"), "POETRY_CONFIG_DIR": str(ws.root / "poetry-config"),
               "POETRY_DATA_DIR": str(ws.root / "poetry-data"), "POETRY_NO_INTERACTION": "1"}
        poetry = str(tool / "bin" / "poetry")
        for args in (["env", "use", _base_python()], ["lock"], ["install"]):
            _checked([poetry, *args], env=env, cwd=project)
    finally:
        server.shutdown()
        server.server_close()
    ws.venv = project / ".venv"
    _checked([ws.python, "-m", "pip", "install", *PIP_QUIET, *offline, str(ortdoctor_wheel)], env=_pip_env())


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No line per request on stderr."""


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """No traceback when poetry closes a connection before a wheel is sent whole (it reads the
        metadata it needs and hangs up); a wheel it lacks fails its own command."""


#: An interpreter every user can run (a venv of it, too): the system's.
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def _nobody() -> tuple[int, int] | None:
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return None
    return (entry.pw_uid, entry.pw_gid) if os.getuid() == 0 else None


def build(s: Scenario, ws: Workspace, ortdoctor_wheel: Path) -> None:
    """The broken venv, with ortdoctor installed into it."""
    if s.uv_venv or s.poetry:
        (_build_uv if s.uv_venv else _build_poetry)(s, ws, ortdoctor_wheel)
        ws.make_decoy()
        return
    base = SYSTEM_PYTHON if s.unreadable else sys.executable
    _checked([base, "-m", "venv", *(["--without-pip"] if s.without_pip else []),
              *(["--system-site-packages"] if s.system_site_packages else []), str(ws.venv)])
    env = _pip_env()
    env.pop("PIP_FIND_LINKS", None)
    offline = ["--no-index", "--find-links", str(WHEELS), "--only-binary=:all:"]
    if s.without_pip:
        pip = [sys.executable, "-m", "pip", "--python", ws.python, "install", *PIP_QUIET]
    else:
        pip = [ws.python, "-m", "pip", "install", *PIP_QUIET]
    for reqs in s.installs:
        _checked([*pip, *offline, *reqs], env=env)
    _checked([*pip, *offline, str(ortdoctor_wheel)], env=env)
    if s.user_installs:
        _checked([_base_python(), "-m", "pip", "install", *PIP_QUIET, "--user", *offline, *s.user_installs],
                 env={**env, "PYTHONUSERBASE": str(ws.userbase)})
    if s.target_installs:
        ws.sentinel.parent.mkdir(parents=True)
        ws.sentinel.write_text("must survive the fix\n")
        ws.target = ws.root / s.target_dir
        _checked([*pip, *offline, "--target", str(ws.target), *s.target_installs], env=env)
    if s.activated:
        _activate_other(s, ws, ortdoctor_wheel, offline, env)
    if s.truncate:
        target = _site_packages(ws) / s.truncate
        data = target.read_bytes()
        target.write_bytes(data[:4096])
    if s.unreadable:
        ids = _nobody()
        if ids is None:
            raise HarnessError("an unreadable directory needs root and a `nobody` user to check as")
        ws.tool = ws.root / "tool"
        _checked([sys.executable, "-m", "pip", "install", *PIP_QUIET, *offline, "--target", str(ws.tool),
                  str(ortdoctor_wheel)], env=env)
        ws.root.chmod(0o755)  # mkdtemp's 0700 would hide everything from nobody
        (_site_packages(ws) / s.unreadable).chmod(0)
        ws.as_user = ids
    ws.make_decoy()


def check(ws: Workspace, *, smoke: bool = False) -> Round:
    proc = ws.run_check(ws.ortdoctor("check", "--json", *([] if smoke else ["--no-smoke"])))
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise HarnessError(f"check --json gave no JSON (rc {proc.returncode}): {e}\n{proc.stderr[-3000:]}") from e
    findings = list(report.get("findings", []))
    serious = [f for f in findings if f["severity"] in ("error", "warning") and not excused(f["id"], smoke=smoke)]
    advice = [f["id"] for f in serious if f["id"] in PRELOAD_ADVICE and f["severity"] == "warning"]
    problems = [f"{f['id']} ({f['severity']})" for f in serious if f["id"] not in advice]
    return Round(proc.returncode, report.get("verdict"), findings, problems, advice, report)


def printed_in_text(ws: Workspace, pasted: str) -> bool:
    """The human report (``check --no-smoke``, what a user copies from) shows each command line of
    ``pasted`` unbroken, on a line of its own."""
    proc = ws.run_check(ws.ortdoctor("check", "--no-smoke"))
    shown = [text.strip() for text in proc.stdout.splitlines()]
    return all(line in shown for line in pasted.splitlines() if line.strip() and not line.startswith("#"))


def first_block(report: Mapping[str, Any], finding: Mapping[str, Any]) -> str:
    """What a user pastes for ``finding``: the report's merged block where it covers the finding (the text
    report prints it first), else the finding's whole fix."""
    merged = report.get("fix") or {}
    if finding["id"] in (merged.get("findings") or []) and merged.get("text") and len(merged["findings"]) > 1:
        return str(merged["text"])
    return str(finding["fix"])


def paste(ws: Workspace, text: str) -> list[str]:
    """``bash`` reading ``text`` line by line as an interactive shell would (history expansion on, which
    ``bash -c`` does not do): a ``!`` outside single quotes fails there as it would for the user."""
    script = ws.root / "paste.sh"
    script.write_text("set -o history -o histexpand\n" + text + "\n")
    return ["bash", "--norc", "--noprofile", str(script)]


def preload_failures(ws: Workspace) -> list[str]:
    """``ortdoctor preload --json`` in the venv: what did not load (empty when everything did)."""
    proc = _run([str(ws.venv / "bin" / "ortdoctor"), "preload", "--json"], env=ws.user_env(), cwd=ws.cwd, timeout=300)
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return [f"preload --json exited {proc.returncode} without JSON: {(proc.stdout + proc.stderr)[-500:]}"]
    # a library that links the driver's libcuda.so.1 (cuDNN 9's runtime-compiled engines do) cannot load
    # on this machine, which has no driver: that failure is the machine's, like driver-missing
    machine = {f.get("soname") for f in result.get("failed", []) if NO_DRIVER in str(f.get("error"))}
    failed = [f"{f.get('soname') or f.get('name')}: {f.get('error')}" for f in result.get("failed", [])
              if f.get("soname") not in machine]
    if not result.get("loaded"):
        failed.append(f"nothing loaded (exit {proc.returncode})")
    return failed + [line for line in provider_needs_unloaded(ws) if line.split(":")[0] not in machine]


#: How a library that needs the absent driver fails to load here.
NO_DRIVER = "libcuda.so.1: cannot open shared object file"


# In the venv's Python: preload, then ask the loader (RTLD_NOLOAD: nothing new is mapped, the provider
# itself is never loaded) for each library the CUDA provider lists in DT_NEEDED; print those it lacks.
_NEEDS_PROBE = """
import ctypes, os, sys, importlib.util
import ortdoctor
from ortdoctor.formats.elf import read_elf
ortdoctor.preload()
spec = importlib.util.find_spec("onnxruntime")
prov = os.path.join(os.path.dirname(spec.origin), "capi", "libonnxruntime_providers_cuda.so")
lacking = []
for name in read_elf(prov).needed if os.path.exists(prov) else ():
    if name == "libcuda.so.1":
        continue  # the driver's: absent on this machine, never preloaded
    try:
        ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        lacking.append(name)
print(" ".join(lacking))
"""


def provider_needs_unloaded(ws: Workspace) -> list[str]:
    """After ``ortdoctor.preload()`` in the venv: each library the CUDA provider lists in ``DT_NEEDED``
    that is not in the process (the provider would fail to load on it). Loading the provider itself is
    left out on purpose: without a driver some releases crash in its initialisers."""
    proc = _run([ws.python, "-c", _NEEDS_PROBE], env=ws.user_env(), cwd=ws.cwd, timeout=300)
    if proc.returncode != 0:
        return [f"the provider's DT_NEEDED could not be checked (exit {proc.returncode}): {proc.stderr[-500:]}"]
    return [f"{name}: not in the process after the preload (the CUDA provider needs it)"
            for name in proc.stdout.split()]


def primary(findings: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first error finding, in the report's order, that this machine does not cause."""
    return next((f for f in findings if f["severity"] == "error" and not excused(f["id"])), None)


def next_fix(findings: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """In a later round: the primary finding, else the first warning that has a fix and is neither
    excused nor preload advice (what a user would do next)."""
    p = primary(findings)
    if p is not None:
        return p
    return next((f for f in findings if f["severity"] == "warning" and f.get("fix") and not excused(f["id"])
                 and f["id"] not in PRELOAD_ADVICE), None)


def _later_rounds(ws: Workspace, out: Outcome, limit: int) -> None:
    """Paste the next fix while problems remain, up to ``limit`` further rounds (reporting only)."""
    after = out.after
    done = 0
    while after is not None and after.problems and done < limit:
        f = next_fix(after.findings)
        if f is None:
            break
        assert after is not None
        text = first_block(after.report, f)
        out.later_fixes.append(f"{f['id']}: {text}")
        _run(paste(ws, text), env=ws.user_env(), cwd=ws.cwd, timeout=1800)
        done += 1
        after = check(ws)
    clean = after is not None and not after.problems
    out.later_rounds = (done, clean)


def _in_workspace(s: Scenario, keep: bool, body: Callable[[Workspace, Outcome], None]) -> Outcome:
    """Run ``body`` in a fresh workspace; a harness failure is the outcome's error, not an exception."""
    started = time.monotonic()
    out = Outcome(s.name)
    ws = Workspace()
    try:
        body(ws, out)
    except (HarnessError, subprocess.TimeoutExpired, OSError, StopIteration) as e:
        out.error = f"{type(e).__name__}: {e}"
    finally:
        out.seconds = time.monotonic() - started
        if keep:
            print(f"kept: {ws.root}", file=sys.stderr)
        else:
            ws.close()
    return out


def _first_check(s: Scenario, ws: Workspace, ortdoctor_wheel: Path, out: Outcome) -> Mapping[str, Any] | None:
    """Build the broken venv and check it: the primary finding (None when there is none)."""
    build(s, ws, ortdoctor_wheel)
    out.first = check(ws)
    ids = {f["id"] for f in out.first.findings}
    out.missing_expected = [i for i in s.expect if i not in ids]
    p = primary(out.first.findings)
    out.primary_id = p["id"] if p is not None else None
    return p


def record_fix(out: Outcome, proc: subprocess.CompletedProcess[str]) -> None:
    """What the fix did: its exit status and its whole output, each stream apart."""
    out.fix_rc = proc.returncode
    out.fix_stdout, out.fix_stderr = proc.stdout, proc.stderr


def _fix_and_check(ws: Workspace, out: Outcome, argv: Sequence[str], *, smoke: bool = False) -> None:
    """Run the fix as the user would (the decoy first on PATH), then check again (with the smoke
    session where the scenario asks for it)."""
    record_fix(out, _run(argv, env=ws.user_env(), cwd=ws.cwd, timeout=1800))
    out.decoy_calls = ws.decoy_calls()
    out.damage = ws.damage()
    out.after = check(ws, smoke=smoke)
    if out.after.preload_advice:
        out.preload_failed = preload_failures(ws)


def run_scenario(s: Scenario, ortdoctor_wheel: Path, *, keep: bool = False, extra_rounds: int = 0) -> Outcome:
    """Build the scenario, paste its primary fix, check again. ``extra_rounds``: where one round did not
    converge, go on pasting the next fix that many times more to say how many rounds it takes (the
    verdict stays "not converged")."""
    def body(ws: Workspace, out: Outcome) -> None:
        p = _first_check(s, ws, ortdoctor_wheel, out)
        if p is None or not p.get("fix"):
            return
        assert out.first is not None
        out.fix = str(p["fix"])
        out.pasted = first_block(out.first.report, p)
        out.printed = printed_in_text(ws, out.pasted)
        _fix_and_check(ws, out, paste(ws, out.pasted), smoke=s.smoke)
        if not out.converged and extra_rounds:
            _later_rounds(ws, out, extra_rounds)

    return _in_workspace(s, keep, body)


def run_fix_command(s: Scenario, ortdoctor_wheel: Path, *, keep: bool = False) -> Outcome:
    """The same scenario, fixed by ``ortdoctor fix --yes --no-smoke`` run from the venv (not activated, the
    decoy first on PATH) instead of a pasted line; then the check again."""
    def body(ws: Workspace, out: Outcome) -> None:
        _first_check(s, ws, ortdoctor_wheel, out)
        command = [str(ws.venv / "bin" / "ortdoctor"), "fix", "--yes", "--no-smoke"]
        out.fix = out.pasted = " ".join(command)
        _fix_and_check(ws, out, command, smoke=s.smoke)

    return _in_workspace(s, keep, body)
