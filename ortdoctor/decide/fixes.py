"""Package fixes that work when pasted: the right interpreter, pinned versions, names that exist.

Every package command of a finding's fix is built here (``check``, ``preload``, the hook, ``fix``); the
``matrix`` command's recommendation and ``explain``'s sentences (which do not know the interpreter, so
they say ``python -m pip``) take their specs from the same package table. A command:

* it names the interpreter it fixes (``/venv/bin/python -m pip ...``), because the ``pip`` a shell
  finds first often belongs to another Python (a system pip beside a venv, an unactivated venv, a venv
  created without pip); where that interpreter has no pip, ``uv pip install --python ...`` or
  ``ensurepip`` first;
* it pins what must not drift: a reinstall keeps the installed onnxruntime-gpu version (an unpinned one
  silently moves to the newest build, which may be for another CUDA major), NVIDIA wheels keep the
  build's CUDA and cuDNN majors;
* it names only packages and versions that exist: versions are chosen from the matrix's package table
  (``compat_matrix.yaml`` ``packages:``, read from PyPI), and a test lists every spec any fix can print.

* it is built as an argument vector and only turned into text by :mod:`ortdoctor.core.shell`, so a path
  or version that holds spaces, quotes, ``$(...)`` or ``!`` is printed as one word that means itself.

The functions are pure; :class:`Installer` is built from the inspected facts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from ortdoctor.core.facts import Environment, Finding, LibraryPlan, NvidiaWheel, PackageStep, Plan, PythonInfo
from ortdoctor.core.package_names import ORT_GPU
from ortdoctor.core.record import record, replace
from ortdoctor.core.shell import (
    BACKUP_DIR,
    Command,
    compose,
    posix_quote,
    powershell_quote,
    render,
    render_all,
)
from ortdoctor.decide.matrix.model import LibSpec, Matrix, Release
from ortdoctor.formats.distinfo import normalize

__all__ = [
    "GPU_PACKAGE",
    "DriverGate",
    "Installer",
    "check_again",
    "driver_floor",
    "driver_gate",
    "gpu_install",
    "library_fix",
    "library_specs",
    "move_aside",
    "newest_cuda",
    "ort_gpu_spec",
    "ortdoctor_command",
    "other_cuda_cudnn_wheels",
    "pin_series",
    "quote",
    "search_path",
    "spec_cuda_major",
    "step",
    "wrong_cuda_cudnn",
]

GPU_PACKAGE = ORT_GPU


def quote(arg: str, *, windows: bool = False) -> str:
    """One shell word for ``arg`` (:mod:`ortdoctor.core.shell`: POSIX, or PowerShell with ``windows``)."""
    return powershell_quote(arg) if windows else posix_quote(arg)


def step(verb: str, *args: str, python: str | None = None) -> PackageStep:
    """A package step (``verb`` is ``install`` or ``uninstall``); ``python``: run by that interpreter's pip
    instead of the inspected one's (the base interpreter of a venv, for a ``--user`` copy)."""
    if verb not in ("install", "uninstall"):
        raise ValueError(verb)
    return PackageStep(verb, tuple(args), python)  # type: ignore[arg-type]


@record
class Installer:
    """How to run pip for the inspected interpreter."""

    python: str
    has_pip: bool | None = None  # None: not known (assume pip, the normal case)
    uv: str | None = None
    windows: bool = False
    manager: str | None = None  # "pixi" or "poetry": its project owns the package list (a note names its command)

    @classmethod
    def of(cls, python: PythonInfo) -> Installer:
        manager = python.env_manager if python.env_manager in ("pixi", "poetry") else None
        return cls(python.executable, python.has_pip, python.uv_on_path, python.os == "windows", manager)

    def manager_note(self, steps: Sequence[PackageStep]) -> str:
        """For a pixi or poetry environment: the same change as its project's command, which keeps it (the
        next ``pixi install`` / ``poetry sync`` puts the environment back to the lock file)."""
        if self.manager is None:
            return ""
        tool = ["pixi", "add", "--pypi"] if self.manager == "pixi" else ["poetry", "add"]
        drop = ["pixi", "remove", "--pypi"] if self.manager == "pixi" else ["poetry", "remove"]
        names = [a for s in steps if s.verb == "uninstall" for a in s.args if not a.startswith("-")]
        specs = [a for s in steps if s.verb == "install" for a in s.args if not a.startswith("-")]
        parts = [render(Command((*drop, *names)), windows=self.windows)] if names else []
        parts += [render(Command((*tool, *specs)), windows=self.windows)] if specs else []
        if not parts:
            return ""
        sync = "pixi install" if self.manager == "pixi" else "poetry sync"
        return (f"this environment belongs to a {self.manager} project: to keep the change there, run in the project "
                f"{' && '.join(parts)} instead (the next `{sync}` puts back what the lock file says)")

    def argv(self, s: PackageStep) -> list[str]:
        """The step as the argument vector ``ortdoctor fix --yes`` runs (no shell in between)."""
        if s.python is not None and s.python != self.python:
            # another interpreter's pip (pip refuses to remove a user-site copy from inside a venv)
            return [s.python, "-m", "pip", s.verb, *s.args]
        if self.has_pip is False and self.uv:
            # uv pip: --python selects the environment; uninstall takes no -y
            return [self.uv, "pip", s.verb, "--python", self.python, *(a for a in s.args if a != "-y")]
        return [self.python, "-m", "pip", s.verb, *s.args]

    def argvs(self, steps: Sequence[PackageStep]) -> list[list[str]]:
        """The steps' argument vectors, an ``ensurepip`` first where the interpreter has no pip."""
        out = [self.argv(s) for s in steps]
        if self.has_pip is False and not self.uv and any(s.python in (None, self.python) for s in steps):
            out.insert(0, [self.python, "-m", "ensurepip", "--upgrade"])
        return out

    def lines(self, steps: Sequence[PackageStep]) -> tuple[Command, ...]:
        """The steps as the command lines a fix prints, one per command (:func:`ortdoctor.core.shell.compose`)."""
        return tuple(Command(tuple(argv)) for argv in self.argvs(steps))

    def command(self, s: PackageStep) -> str:
        return render(Command(tuple(self.argv(s))), windows=self.windows)

    def commands(self, steps: Sequence[PackageStep]) -> str:
        """The steps as one line, joined with ``&&`` (for a sentence that names the commands)."""
        return " && ".join(render_all(self.lines(steps), windows=self.windows))

    def complete(self, f: Finding) -> Finding:
        """``f`` with its command lines as data: a fix written as this installer's ``&&`` line of its steps
        (then a ``  # why`` and lines of prose) becomes one command a line, then the prose as comments.
        A fix that already carries its commands, or that does not start with its steps, is left as it is."""
        if f.commands or not f.steps or not f.fix:
            return f
        lines = self.lines(f.steps)
        if f.fix.splitlines()[:len(lines)] == render_all(lines, windows=self.windows):
            return replace(f, commands=lines)  # composed already (compose()), only the data was not passed
        joined = self.commands(f.steps)
        first, _, rest = f.fix.partition("\n")
        if not first.startswith(joined):
            return f
        tail = first[len(joined):].strip()
        prose = "\n".join(x for x in (tail.removeprefix("#").strip(), rest) if x)
        fix, commands = self.fix(f.steps, prose)
        return replace(f, fix=fix, commands=commands)

    def fix(self, steps: Sequence[PackageStep], prose: str | None = None,
            extra: Sequence[Command] = ()) -> tuple[str, tuple[Command, ...]]:
        """A finding's fix text and its commands: the steps' lines, then ``extra``, then ``prose`` as comments."""
        commands = (*self.lines(steps), *extra)
        note = self.manager_note(steps)
        prose = "\n".join(x for x in (prose, note) if x)
        return compose(commands, prose, windows=self.windows), commands


def move_aside(paths: Sequence[str], location: str) -> Command:
    """Move ``paths`` (directories pip does not manage, e.g. in a ``pip install --target`` directory) into a
    backup folder inside ``location``: nothing is deleted, and the folder's name is not importable."""
    sep = "\\" if "\\" in location and "/" not in location else "/"  # a Windows path read on any OS
    return Command((*paths, location.rstrip(sep) + sep + BACKUP_DIR), "move")


def search_path(variable: str, dirs: Sequence[str], *, keep: bool = True) -> Command:
    """Put ``dirs`` first on a search-path variable (``keep``: its current value after them)."""
    return Command((variable, *dirs), "path", keep)


def ortdoctor_command(ortdoctor_python: str | None, *args: str) -> Command:
    """``ortdoctor ARGS`` as the line to paste: run by ``ortdoctor_python -m ortdoctor``, the interpreter of
    the ortdoctor that wrote the report (a bare ``ortdoctor`` runs whichever is first on PATH: an activated
    venv's copy, or none). ``None``: not known, the bare name."""
    program = (ortdoctor_python, "-m", "ortdoctor") if ortdoctor_python else ("ortdoctor",)
    return Command((*program, *args))


def check_again(python: str | None, ortdoctor_python: str | None = None) -> Command:
    """``ortdoctor check`` for another interpreter, run by ``ortdoctor_python`` (:func:`ortdoctor_command`)."""
    return ortdoctor_command(ortdoctor_python, "check", *(("--python", python) if python else ()))


# --------------------------------------------------------------------------------------------------
# Requirement specs chosen from the matrix
# --------------------------------------------------------------------------------------------------
def _release(matrix: Matrix, version: str | None) -> Release | None:
    match = matrix.release_for(version) if version else None
    return match.release if match is not None and match.exact else None


def _extras_work(matrix: Matrix, release: Release | None, version: str) -> bool:
    """The release declares the cuda and cudnn extras, and what they pull in exists (1.27.0's `[cuda]`
    names `-cu13` stubs that pip cannot install)."""
    if release is None or not ("cuda" in release.extras and "cudnn" in release.extras):
        return False
    for extra in ("cuda", "cudnn"):
        for req in release.extras[extra]:
            name = re.split(r"[\s;\[<>=!~]", req, maxsplit=1)[0]
            row = matrix.packages.get(normalize(name))
            if row is not None and not row.versions:
                return False
    return True


def ort_gpu_spec(matrix: Matrix, version: str | None, *, extras: bool = True) -> str:
    """``onnxruntime-gpu[cuda,cudnn]==X`` where the extras work, else ``onnxruntime-gpu==X`` (X pinned
    whenever known, so a reinstall never changes the build's CUDA major)."""
    if not version:
        return f"{GPU_PACKAGE}[cuda,cudnn]" if extras else GPU_PACKAGE
    if extras and _extras_work(matrix, _release(matrix, version), version):
        return f"{GPU_PACKAGE}[cuda,cudnn]=={version}"
    return f"{GPU_PACKAGE}=={version}"


def library_specs(matrix: Matrix, libs: Iterable[LibSpec], *, cudnn_major: int | None = None) -> list[str]:
    """The NVIDIA wheels that ship ``libs``, pinned to the series the build needs; a library whose wheel
    does not exist (CUDA 10, or a cuDNN major without a wheel for that CUDA) gives nothing."""
    out: list[str] = []
    for lib in libs:
        name = lib.package
        if not name:
            continue
        row = matrix.packages.get(name)
        if row is None or not row.versions:
            continue
        if lib.name == "cudnn" or lib.sublibrary_of or name.startswith("nvidia-cudnn"):
            if cudnn_major is None:
                spec = name
            elif any(v.split(".")[0] == str(cudnn_major) for v in row.versions):
                spec = f"{name}=={cudnn_major}.*"
            else:
                continue  # e.g. no nvidia-cudnn-cu13 8.x: the caller says what to do instead
        elif row.cuda is not None and not re.search(r"-cu\d+$", name):
            # unsuffixed names carry the library's own version (cufft 12.x for CUDA 13): keep the series
            head = max(row.versions, key=lambda v: tuple(int(p) for p in re.findall(r"\d+", v))).split(".")[0]
            spec = f"{name}=={head}.*"
        else:
            spec = name
        if spec not in out:
            out.append(spec)
    return out


def pin_series(matrix: Matrix, name: str) -> str:
    """``name==M.*`` for the newest major series PyPI has of ``name`` (the unsuffixed CUDA 13 wheels carry
    their library's own version: nvidia-cufft 12.x); the bare name when the table does not know it."""
    versions = matrix.versions_of(name)
    if not versions:
        return name
    head = max(versions, key=lambda v: tuple(int(p) for p in re.findall(r"\d+", v))).split(".")[0]
    return f"{name}=={head}.*"


def gpu_install(matrix: Matrix, version: str | None = None) -> PackageStep:
    """Install the GPU build (pinned to ``version`` when given) with its CUDA and cuDNN wheels."""
    return step("install", ort_gpu_spec(matrix, version))


def wrong_cuda_cudnn(env: Environment, cuda_major: int | None, libs: Sequence[LibraryPlan]) -> list[NvidiaWheel]:
    """cuDNN wheels built for another CUDA major whose files the plan would load (``nvidia-cudnn-cu12``
    beside a CUDA 13 build: the sonames match, but its engines dlopen ``libcublasLt.so.12``)."""
    if cuda_major is None:
        return []
    chosen = {os.path.normpath(os.path.dirname(lp.chosen.path)) for lp in libs
              if lp.chosen is not None and lp.name.lower().startswith("cudnn")}
    return [w for w in env.nvidia_wheels if w.cuda_major is not None and w.cuda_major != cuda_major
            and normalize(w.name).startswith("nvidia-cudnn-")
            and any(os.path.normpath(d) in chosen for d in w.lib_dirs)]


def _is_cudnn_wheel(name: str) -> bool:
    return normalize(name).startswith("nvidia-cudnn-")


def other_cuda_cudnn_wheels(env: Environment, cuda_major: int) -> list[NvidiaWheel]:
    """Every cuDNN wheel built for another CUDA major (``nvidia-cudnn-cu11`` beside a CUDA 12 build)."""
    return [w for w in env.nvidia_wheels if _is_cudnn_wheel(w.name) and w.cuda_major is not None
            and w.cuda_major != cuda_major]


def library_fix(matrix: Matrix, env: Environment, plan: Plan, wanted: Iterable[LibraryPlan]) -> tuple[PackageStep, ...]:
    """One command that installs every library the build lacks, for its CUDA and cuDNN majors.

    The release's own ``[cuda,cudnn]`` extras pinned to the installed version where they work (they cover
    the whole set, so a second round is never needed); else the NVIDIA wheels of every wanted library,
    pinned to the build's majors. A cuDNN wheel of another CUDA major is removed first: every flavour
    installs into ``nvidia/cudnn/lib`` and the later one overwrites the other's files. That holds for one
    whose files the plan would load, and for any other one when the fix brings a cuDNN: else the next
    check finds the two flavours in one directory (a second round).
    """
    if plan.cuda_major is None:
        return ()
    ort = env.ort
    spec = ort_gpu_spec(matrix, ort.version) if ort.version else ""
    remove = [w.name for w in wrong_cuda_cudnn(env, plan.cuda_major, plan.libraries)]
    install: list[str] = []
    if spec.startswith(f"{GPU_PACKAGE}[cuda,cudnn]=="):
        install = [spec]
    else:
        rows = {s.name: s for s in matrix.libraries_for(plan.cuda_major, plan.cudnn_major)}
        libs = [rows[lp.name] for lp in wanted if lp.name in rows]
        if remove and "cudnn" in rows and rows["cudnn"] not in libs:
            libs.append(rows["cudnn"])
        install = library_specs(matrix, libs, cudnn_major=plan.cudnn_major)
    if not install:
        return ()
    if install == [spec] or any(_is_cudnn_wheel(s) for s in install):
        remove += [w.name for w in other_cuda_cudnn_wheels(env, plan.cuda_major) if w.name not in remove]
    return ((step("uninstall", "-y", *remove),) if remove else ()) + (step("install", *install),)


# --------------------------------------------------------------------------------------------------
# The driver a fix's CUDA major needs
# --------------------------------------------------------------------------------------------------
def _driver_key(version: str) -> tuple[int, ...] | None:
    parts = version.strip().split(".")
    return tuple(int(p) for p in parts) if parts and all(p.isdigit() for p in parts) else None


def driver_floor(matrix: Matrix, cuda_major: int, os_name: str) -> str | None:
    """The oldest driver that runs builds of ``cuda_major`` on ``os_name`` (``"linux"``, ``"windows"``; WSL runs
    the Windows driver), from the matrix's ``cuda_majors[N].min_driver``; None when the matrix does not know."""
    return matrix.min_driver(str(cuda_major), "windows" if os_name in ("windows", "wsl") else "linux")


def spec_cuda_major(matrix: Matrix, spec: str) -> int | None:
    """The CUDA major a requirement spec installs builds of: an ``onnxruntime-gpu`` pin by its release line (the
    unpinned name by the newest line, what pip picks), an NVIDIA wheel by the package table's ``cuda``
    (``nvidia-cublas-cu12``, ``nvidia-cuda-runtime~=13.0``). None for a package not tied to a CUDA major."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:(==|~=|>=)\s*([\w.*]+))?", spec)
    if m is None:
        return None
    name, version = normalize(m.group(1)), m.group(3)
    if name == GPU_PACKAGE:
        if not matrix.releases:
            return None
        found = matrix.release_for(version.rstrip(".*")) if version else None
        release = found.release if found is not None else matrix.releases[0] if not version else None
        return release.cuda_major if release is not None else None
    row = matrix.packages.get(name)
    return row.cuda if row is not None else None


@record
class DriverGate:
    """A driver the evidence shows, against the CUDA majors a fix would install."""

    driver: str  # the driver version shown ("419.67")
    os_name: str  # "linux", "windows" (whose floors were used)
    floors: tuple[tuple[int, str], ...]  # (CUDA major, its oldest driver) for every major the fix names
    runs: tuple[int, ...]  # the majors this driver runs
    newest: str | None = None  # the newest CUDA major.minor the matrix says this driver runs ("10.1")

    @property
    def blocked(self) -> tuple[int, ...]:
        return tuple(m for m, _ in self.floors if m not in self.runs)

    @property
    def none_runs(self) -> bool:
        """The driver is too old for every CUDA major the fix names: updating it comes first."""
        return bool(self.floors) and not self.runs

    def floor(self, cuda_major: int) -> str | None:
        return next((f for m, f in self.floors if m == cuda_major), None)


def driver_gate(matrix: Matrix, driver: str | None, os_name: str | None,
                cuda_majors: Iterable[int]) -> DriverGate | None:
    """Which of ``cuda_majors`` (those a fix installs, in its order of preference) ``driver`` runs on
    ``os_name``, each checked against its ``min_driver`` floor. None when the driver, the OS or every floor is
    unknown, or when the driver runs them all (nothing to say). An unknown OS is checked against the lower of
    the Linux and Windows floors: a driver below both runs the major nowhere."""
    key = _driver_key(driver) if driver else None
    if key is None or not driver:
        return None
    os_key = _os_key(os_name)
    floors: list[tuple[int, str]] = []
    runs: list[int] = []
    for major in dict.fromkeys(cuda_majors):
        floor = _floor_on(matrix, major, os_key)
        need = _driver_key(floor) if floor else None
        if floor is None or need is None:
            continue
        floors.append((major, floor))
        if key >= need:
            runs.append(major)
    if not floors or len(runs) == len(floors):
        return None
    return DriverGate(driver, os_key or "unknown", tuple(floors), tuple(runs), newest_cuda(matrix, driver, os_key))


def driver_runs(matrix: Matrix, driver: str, os_name: str | None, cuda_major: int) -> bool | None:
    """Whether ``driver`` meets CUDA ``cuda_major``'s floor on ``os_name`` (an unknown OS: the lower of the Linux
    and Windows floors, as :func:`driver_gate`); None when the driver or the floor is unknown."""
    key = _driver_key(driver)
    floor = _floor_on(matrix, cuda_major, _os_key(os_name))
    need = _driver_key(floor) if floor else None
    return None if key is None or need is None else key >= need


def _os_key(os_name: str | None) -> str | None:
    """The driver family an OS runs: WSL runs the Windows driver; None when the OS is unknown."""
    return "windows" if os_name in ("windows", "wsl") else "linux" if os_name == "linux" else None


def _floor_on(matrix: Matrix, cuda_major: int, os_key: str | None) -> str | None:
    """CUDA ``cuda_major``'s oldest driver on ``os_key``; on an unknown OS the lower of the Linux and Windows
    floors (a driver below both runs the major nowhere)."""
    if os_key is not None:
        return driver_floor(matrix, cuda_major, os_key)
    known = [f for f in (driver_floor(matrix, cuda_major, o) for o in ("linux", "windows")) if f]
    return min(known, key=lambda f: _driver_key(f) or (0,)) if known else None


def newest_cuda(matrix: Matrix, driver: str, os_name: str | None) -> str | None:
    """The newest CUDA ``major.minor`` whose floor (``min_driver``, raised per minor by ``min_driver_by_minor``)
    ``driver`` meets on ``os_name`` (``"12.x"``: every minor of a major with minor version compatibility);
    None when the OS is unknown or the driver meets none."""
    key = _driver_key(driver)
    if key is None or os_name not in ("linux", "windows", "wsl"):
        return None
    windows = os_name in ("windows", "wsl")
    best: tuple[int, int] | None = None
    for major, row in matrix.cuda_majors.items():
        base = row.min_driver_windows if windows else row.min_driver_linux
        by_minor = row.min_driver_by_minor_windows if windows else row.min_driver_by_minor_linux
        found = [(major, 0)] if (_driver_key(base) or (999,)) <= key else []
        for version, floor in by_minor.items():
            head, _, minor = version.partition(".")
            if head.isdigit() and minor.isdigit() and (_driver_key(floor) or (999,)) <= key:
                found.append((int(head), int(minor)))
        for cand in found:
            best = cand if best is None or cand > best else best
    if best is None:
        return None
    # from CUDA 11 on, a driver that meets a major's floor runs its later minors too (minor version
    # compatibility), unless the matrix raises the floor for a minor
    by_minor = matrix.cuda_majors[best[0]].min_driver_by_minor_windows if windows else \
        matrix.cuda_majors[best[0]].min_driver_by_minor_linux
    return f"{best[0]}.x" if best[0] >= 11 and not by_minor else f"{best[0]}.{best[1]}"
