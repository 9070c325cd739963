"""``ortdoctor.preload()``: load the CUDA and cuDNN libraries the installed onnxruntime-gpu needs.

A drop-in for ``onnxruntime.preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None)`` with the
same arguments and ``directory`` semantics, that also searches every site directory (not only the one
holding onnxruntime), never loads from the current directory, loads by absolute path in dependency
order, verifies in ``/proc/self/maps`` which file is really mapped, and returns what it did instead of
printing.

It imports neither onnxruntime nor torch: the facts it needs (the build's CUDA version, the CUDA
provider's ``DT_NEEDED``, the NVIDIA wheels in each site directory) are read from files, quickly, so
``import ortdoctor.hook`` costs little more than the dlopens themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ortdoctor.core.catalog import make
from ortdoctor.core.execution_providers import provider_for
from ortdoctor.core.facts import (
    Candidate,
    Environment,
    Finding,
    LibraryPlan,
    PackageStep,
    Plan,
    Severity,
    Source,
    to_jsonable,
)
from ortdoctor.core.package_names import ORT_CPU
from ortdoctor.core.record import record
from ortdoctor.decide.build import is_cuda_build
from ortdoctor.decide.fixes import Installer, gpu_install, library_fix, step
from ortdoctor.decide.integrity import Damage, damage_of
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import LibSpec, Matrix
from ortdoctor.decide.resolve import DRIVER_SONAMES, resolve
from ortdoctor.decide.search import DirectoryError, resolve_directory
from ortdoctor.decide.torch import torch_copies, torch_other_copy_finding
from ortdoctor.formats.elf import ElfError, read_elf
from ortdoctor.native.gate import Judge, Refused, allowance
from ortdoctor.preloading import loader
from ortdoctor.probes.environment import collect_environment

if TYPE_CHECKING:
    from ortdoctor.native.gate import Allowance

__all__ = ["DirectoryError", "FailedLib", "LoadedLib", "PreloadError", "PreloadResult", "SkippedLib",
           "preload", "result_from_json"]

SCHEMA_VERSION = 1


class PreloadError(RuntimeError):
    """``strict=True`` and at least one library failed; ``.result`` holds the whole :class:`PreloadResult`."""

    def __init__(self, result: PreloadResult) -> None:
        names = ", ".join(f.name for f in result.failed)
        serious = [f for f in result.findings if f.severity == "error"] or [
            f for f in result.findings if f.severity == "warning"]
        if names:
            message = f"ortdoctor could not load: {names}"
        elif serious:
            message = f"ortdoctor [{serious[0].id}]: {serious[0].title}"
        else:
            message = "ortdoctor: preloading did not succeed"
        first = serious[0] if serious else None
        if first is not None and first.fix:
            message += f". Fix: {first.fix.splitlines()[0]}"
        if len(serious) > 1:
            message += f" ({len(serious) - 1} more: run `ortdoctor preload`)"
        super().__init__(message)
        self.result = result


@record
class LoadedLib:
    name: str
    soname: str
    path: str  # the absolute path loaded (or already mapped)
    source: Source  # "directory", "torch", "nvidia-wheel", "conda", "cuda-home", "system" or "loaded"
    version: str | None
    already_loaded_from: str | None = None  # set when the soname was in the process before preload
    mapped: str | None = None  # realpath that /proc/self/maps shows for it: the proof (None: dry run)
    inode: int | None = None
    required: bool = True
    # what the library's own version function answered (the proof); ``version`` is the more precise
    # wheel / file-name version when the two agree on major.minor
    function_version: str | None = None
    # set when another library mapped this one as a side effect (cuDNN maps its sub-libraries itself)
    loaded_by: str | None = None


@record
class SkippedLib:
    name: str
    reason: str


@record
class FailedLib:
    name: str
    soname: str
    error: str
    searched: tuple[str, ...] = ()
    required: bool = True


@dataclass
class PreloadResult:
    directory: str | None
    dry_run: bool
    loaded: list[LoadedLib] = field(default_factory=list)
    skipped: list[SkippedLib] = field(default_factory=list)
    failed: list[FailedLib] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    plan: Plan | None = None
    cuda_major: int | None = None
    cudnn_major: int | None = None
    searched: tuple[str, ...] = ()  # every directory of the search order, in order

    @property
    def ok(self) -> bool:
        """Nothing failed and no finding is an error."""
        return not self.failed and not any(f.severity == "error" for f in self.findings)

    def chosen_dirs(self) -> list[str]:
        """Directories of the loaded files, each once, in load order (for ``LD_LIBRARY_PATH``)."""
        return list(dict.fromkeys(os.path.dirname(x.path) for x in self.loaded if os.path.isabs(x.path)))

    def to_json(self) -> dict[str, Any]:
        """The ``ortdoctor preload --json`` object of the report contract."""
        return {
            "schema_version": SCHEMA_VERSION,
            "directory": self.directory,
            "dry_run": self.dry_run,
            "cuda_major": self.cuda_major,
            "cudnn_major": self.cudnn_major,
            "loaded": [asdict(x) for x in self.loaded],
            "skipped": [asdict(x) for x in self.skipped],
            "failed": [{**asdict(x), "searched": list(x.searched)} for x in self.failed],
            "findings": [to_jsonable(f) for f in self.findings],
            "searched": list(self.searched),
        }


def result_from_json(data: Mapping[str, Any]) -> PreloadResult:
    """Rebuild a :class:`PreloadResult` from :meth:`PreloadResult.to_json` (without the plan)."""
    return PreloadResult(
        directory=data["directory"], dry_run=data["dry_run"],
        loaded=[LoadedLib(**x) for x in data["loaded"]],
        skipped=[SkippedLib(**x) for x in data["skipped"]],
        failed=[FailedLib(**{**x, "searched": tuple(x["searched"])}) for x in data["failed"]],
        findings=[Finding(**f) for f in data["findings"]],
        cuda_major=data.get("cuda_major"), cudnn_major=data.get("cudnn_major"),
        searched=tuple(data.get("searched", ())),
    )


# --------------------------------------------------------------------------------------------------
# preload
# --------------------------------------------------------------------------------------------------
def _best_version(measured: str | None, planned: str | None) -> str | None:
    if measured and planned and ".".join(planned.split(".")[:2]) == ".".join(measured.split(".")[:2]):
        return planned if len(planned) > len(measured) else measured
    return measured or planned


def _dependency_order(libs: list[LibraryPlan]) -> list[LibraryPlan]:
    """Plan order, except that a library whose file NEEDS another planned soname comes after it.

    Loading dependencies first means the loader never has to search for them, so an empty
    LD_LIBRARY_PATH entry (the current directory) is never consulted for them.
    """
    by_soname = {lp.soname: lp for lp in libs}
    needs: dict[str, set[str]] = {}
    for lp in libs:
        deps: set[str] = set()
        if lp.chosen is not None and lp.chosen.source != "loaded":
            try:
                deps = {n for n in read_elf(lp.chosen.path).needed if n in by_soname and n != lp.soname}
            except ElfError:
                deps = set()
        needs[lp.soname] = deps
    out: list[LibraryPlan] = []
    done: set[str] = set()

    def visit(lp: LibraryPlan, stack: tuple[str, ...]) -> None:
        if lp.soname in done or lp.soname in stack:
            return
        for d in sorted(needs[lp.soname], key=lambda s: libs.index(by_soname[s])):
            visit(by_soname[d], (*stack, lp.soname))
        done.add(lp.soname)
        out.append(lp)

    for lp in libs:
        visit(lp, ())
    return out


def _missing_finding(run: _Run, lp: LibraryPlan) -> Finding:
    """A library that cannot be loaded; the fix installs every missing one at once (one round)."""
    severity: Severity = "error" if lp.required or lp.name == "cudnn" else "warning"
    wanted = [x for x in run.plan.libraries if x.chosen is None and x.skipped is None]
    steps = library_fix(run.matrix, run.env, run.plan, wanted)
    prose = "" if steps else (f"install the CUDA {run.plan.cuda_major} and cuDNN {run.plan.cudnn_major} libraries "
                              "(no pip wheels exist for them)")
    if lp.other_major:
        others = ", ".join(o.path for o in lp.other_major[:3])
        fix, commands = run.installer.fix(steps, prose)
        return make("cudnn-major-mismatch" if lp.name.startswith("cudnn") else "cuda-major-mismatch",
                    f"Found {others} ({lp.other_major[0].rejected}).", fix, severity=severity,
                    title=f"{lp.soname} is missing; only another major is installed", steps=steps, commands=commands)
    fix, commands = run.installer.fix(steps, "\n".join(
        x for x in (prose, f"or point --directory at the directory that holds {lp.soname}") if x))
    return make("cuda-lib-missing",
                f"onnxruntime's CUDA provider {'needs' if lp.required else 'loads on demand'} {lp.soname}; "
                "no candidate was found (see 'searched').", fix,
                severity="error" if lp.required else "warning",
                title=f"{lp.soname} was not found in any search location", steps=steps, commands=commands)


@dataclass
class _Run:
    """One preload: the plan, the request and what has happened so far."""

    result: PreloadResult
    plan: Plan
    specs: dict[str, LibSpec]
    windows: bool
    global_: bool
    env: Environment
    matrix: Matrix
    allow_unsafe: Allowance = False  # --allow-unsafe-dirs (True) or the --allow-unsafe-dir directories
    named: tuple[str, ...] = ()  # the directory the user named (--directory), absolute
    judge: Judge = field(default_factory=Judge)  # the gate's verdicts, shared by this run's loads
    # the files mapped as the last load's proof read them: "already loaded?" for the next library without
    # another read of /proc/self/maps; None when a load may have changed them since
    mapped_now: list[str] | None = None

    @property
    def installer(self) -> Installer:
        return Installer.of(self.env.python)


def preload(
    directory: str | None = None,
    cuda: bool = True,
    cudnn: bool = True,
    msvc: bool = True,
    strict: bool = False,
    *,
    dry_run: bool = False,
    allow_unsafe_dirs: bool | Sequence[str] = False,
    env: Environment | None = None,
    matrix: Matrix | None = None,
    global_: bool = False,
    sublibraries: bool = False,
    tensorrt: bool = False,
    provider: str | None = None,
) -> PreloadResult:
    """Load what the installed onnxruntime-gpu needs, by absolute path; never prints.

    Arguments as ``onnxruntime.preload_dlls``. ``dry_run`` decides without loading; ``global_`` loads
    with ``RTLD_GLOBAL``; ``sublibraries`` also preloads the cuDNN sub-libraries (normally the main
    cuDNN library loads them from its own directory when needed, as onnxruntime and PyTorch expect).
    ``tensorrt`` also loads the TensorRT libraries the TensorRT EP links, after the CUDA set (Linux).
    ``provider`` (a ``check --provider`` choice) loads what its row of the execution-provider table names:
    TensorRT too when the row's preload families include it.
    ``env`` (default: this process's, read by the same probes as ``ortdoctor check``) and ``matrix``
    (default: the shipped one, or ``$ORTDOCTOR_MATRIX``) are the facts and rows to decide from.
    ``allow_unsafe_dirs`` lifts the refusal of directories and files others can write or own: ``True``
    for every library (``--allow-unsafe-dirs``), a list of absolute directories for the libraries under
    them only (``--allow-unsafe-dir DIR``). What it lets through is reported (``unsafe-dir-allowed``).

    Raises:
        DirectoryError: ``directory`` does not exist.
        MatrixError: ``$ORTDOCTOR_MATRIX`` names a file that cannot be used.
        PreloadError: ``strict=True`` and something failed.
        ValueError: a directory of ``allow_unsafe_dirs`` is not absolute.
    """
    if provider is not None:
        tensorrt = tensorrt or "tensorrt" in provider_for(provider).preload
    allow = allowance(allow_unsafe_dirs)
    environment = env if env is not None else collect_environment(query_driver=False, plugins=False)
    if directory:  # a missing directory is a usage error, whatever else is installed
        explicit = resolve_directory(directory, environment)
        if not os.path.isdir(explicit):
            raise DirectoryError(f"directory {directory!r} does not exist (looked for {explicit})")
    mat = matrix if matrix is not None else load_matrix()
    result = PreloadResult(directory=directory, dry_run=dry_run)
    windows = environment.python.os == "windows"
    if not windows:
        result.skipped.append(SkippedLib("msvc-runtime", "--no-msvc" if not msvc else "not Windows"))
    ort = environment.ort
    if not ort.installed:
        result.findings.append(make("ort-not-installed", "No onnxruntime package on sys.path; nothing to preload."))
        return _finish(result, strict)
    if not is_cuda_build(ort):
        # `ortdoctor check` says which build fits this machine; here the fix keeps to what is known
        steps = (step("uninstall", "-y", ort.active or ORT_CPU), gpu_install(mat, None))
        fix, commands = Installer.of(environment.python).fix(
            steps, "`ortdoctor check` names the build for this machine's CUDA")
        result.findings.append(make(
            "ort-cpu-only", f"{ort.package_dir} has no CUDA provider library: there is nothing to preload.",
            fix, steps=steps, commands=commands))
        return _finish(result, strict)

    plan = resolve(environment, mat, directory=directory, cuda=cuda, cudnn=cudnn, cwd=os.getcwd(),
                   allow_unsafe_dirs=allow, mapped=() if windows else loader.mapped_paths())
    result.plan = plan
    result.cuda_major, result.cudnn_major = plan.cuda_major, plan.cudnn_major
    result.findings.extend(plan.findings)
    result.searched = plan.searched
    specs = {s.name: s for s in mat.libraries_for(plan.cuda_major, plan.cudnn_major)} if plan.cuda_major else {}
    named = (resolve_directory(directory, environment),) if directory else ()
    run = _Run(result, plan, specs, windows, global_, environment, mat, allow, named)
    if windows and msvc:
        _check_msvc(result)
    to_load = _split_sublibraries(run, sublibraries)
    if windows:
        loader.add_dll_directories(dict.fromkeys(os.path.dirname(lp.chosen.path) for lp in to_load if lp.chosen))
    for lp in _dependency_order(to_load):
        _load_one(run, lp, dry_run)
    if not dry_run and not windows:
        _note_sublibraries(result, plan)
    if tensorrt:
        _preload_tensorrt(run, environment, mat, dry_run)
    _note_torch(result, environment, plan, directory)
    return _finish(result, strict)


def _preload_tensorrt(run: _Run, env: Environment, matrix: Matrix, dry_run: bool) -> None:
    result = run.result
    if run.windows:
        result.skipped.append(SkippedLib("tensorrt", "TensorRT is preloaded on Linux only"))
        return
    from ortdoctor.preloading.tensorrt import load_tensorrt

    def record(name: str, soname: str, path: str, source: Source, version: str | None, mapped: str | None,
               inode: int | None, required: bool, measured: str | None) -> None:
        result.loaded.append(LoadedLib(name, soname, path, source, version, path if source == "loaded" else None,
                                       mapped, inode, required, measured))

    load_tensorrt(result, env, matrix, run.plan.cuda_major, dry_run=dry_run, global_=run.global_, record=record,
                  allow_unsafe=run.allow_unsafe, named=run.named, judge=run.judge,
                  failed=lambda name, soname, error, required: result.failed.append(
                      FailedLib(name, soname, error, result.searched, required)),
                  skipped=lambda name, reason: result.skipped.append(SkippedLib(name, reason)))


def _check_msvc(result: PreloadResult) -> None:
    missing = loader.check_msvc_runtime()
    if missing:
        result.findings.append(make("msvc-runtime-missing", f"Cannot load {', '.join(missing)}."))


def _split_sublibraries(run: _Run, sublibraries: bool) -> list[LibraryPlan]:
    """The libraries to load; the cuDNN sub-libraries are left to cuDNN (it loads them from its own
    directory on first use) unless asked for, or unless the plan marks one required: a CUDA provider that
    lists it in DT_NEEDED (1.20's) cannot be loaded before it is."""
    to_load: list[LibraryPlan] = []
    main_cudnn_dir: str | None = None
    for lp in run.plan.libraries:
        spec = run.specs.get(lp.name)
        if lp.skipped:
            run.result.skipped.append(SkippedLib(lp.name, lp.skipped))
        elif spec is not None and spec.sublibrary_of and not sublibraries and not lp.required:
            where = os.path.dirname(lp.chosen.path) if lp.chosen else None
            if lp.chosen is not None and main_cudnn_dir and where != main_cudnn_dir:
                steps = _reinstall_owner(run, os.path.join(main_cudnn_dir, "libcudnn.so"))
                fix, commands = run.installer.fix(
                    steps, ("reinstalls" if steps else "Reinstall") + " cuDNN so all its libraries sit in one directory")
                run.result.findings.append(make(
                    "lib-sources-mixed", f"cuDNN would come from {main_cudnn_dir} but {lp.soname} from {where}.",
                    fix, title=f"{lp.soname} is not beside the cuDNN library", steps=steps, commands=commands))
            run.result.skipped.append(SkippedLib(
                lp.name, f"cuDNN sub-library: {spec.sublibrary_of} loads it on first use from {where}" if where
                else f"cuDNN sub-library: not in this cuDNN (its release has none, or {spec.sublibrary_of} "
                "loads it only when present)"))
        else:
            if lp.name == "cudnn" and lp.chosen is not None:
                main_cudnn_dir = os.path.dirname(lp.chosen.path)
            to_load.append(lp)
    return to_load


def _load_one(run: _Run, lp: LibraryPlan, dry_run: bool) -> None:
    result = run.result
    spec = run.specs.get(lp.name)
    vfun = spec.version_function if spec else None
    if lp.chosen is None:
        result.failed.append(FailedLib(lp.name, lp.soname, "not found" + (
            f"; only other majors: {', '.join(o.path for o in lp.other_major[:3])}" if lp.other_major else ""),
            result.searched, lp.required))
        result.findings.append(_missing_finding(run, lp))
        return
    before = None if dry_run else loader.already_loaded(lp.soname, run.mapped_now)
    if lp.chosen.source == "loaded" or before is not None:
        _note_already_loaded(run, lp, before or lp.chosen.path, vfun, dry_run)
        return
    if dry_run:
        result.loaded.append(LoadedLib(lp.name, lp.soname, lp.chosen.path, lp.chosen.source,
                                       lp.chosen.version, None, None, None, lp.required))
        return
    # the chosen file, then the acceptable alternatives in search order (a corrupt wheel file must not
    # leave the library unloaded when a good copy exists)
    alternatives = [lp.chosen] + [c for c in lp.candidates if c.rejected is None and c.source != "loaded"
                                  and c.path != lp.chosen.path]
    errors: list[str] = []
    damaged: list[Damage] = []
    truncated: list[str] = []
    for cand in alternatives:
        if (damage := damage_of(run.env, cand.path)) is not None:
            # never map it: a read past the end of a truncated mapping kills the whole process (SIGBUS)
            damaged.append(damage)
            errors.append(f"{damage.describe()}; not loaded")
            continue
        run.mapped_now = None  # whatever happens below may map or unmap files
        try:
            got = loader.load(cand.path, global_=run.global_, allow_unsafe=run.allow_unsafe, named=run.named,
                              judge=run.judge, prove_now=False)
        except Refused as exc:
            # the gate's refusal: nothing of the file was mapped
            if exc.kind == "truncated":
                truncated.append(str(exc))
            errors.append(f"{cand.path}: not loaded: {exc}")
            continue
        except loader.LoadError as exc:
            errors.append(f"{cand.path}: {exc}")
            continue
        measured = loader.library_version(got.handle, vfun)
        # proved after the version function (cuDNN maps a sub-library when asked): the same read of the
        # maps then answers the next library's "already loaded?"
        loader.prove(got)
        run.mapped_now = got.mapped_now
        result.loaded.append(LoadedLib(
            lp.name, lp.soname, cand.path, cand.source, _best_version(measured, cand.version), None,
            got.mapped.path if got.mapped else None, got.mapped.inode if got.mapped else None, lp.required,
            measured))
        if not run.windows and got.mapped is None:
            result.findings.append(make(
                "lib-not-mapped", "dlopen succeeded, yet no mapping of the file ortdoctor checked (its device and "
                "inode) was found: another copy with the same soname was returned, or the file was replaced "
                "between the check and the load.",
                title=f"{cand.path} loaded but is not in /proc/self/maps"))
        if damaged:
            result.findings.append(_damaged_finding(run, damaged, severity="warning"))
        if truncated:
            result.findings.append(_truncated_finding(run, lp, truncated, severity="warning"))
        return
    result.failed.append(FailedLib(lp.name, lp.soname, "; ".join(errors), result.searched, lp.required))
    if damaged or truncated:
        severity: Severity = "error" if lp.required else "warning"
        if damaged:
            result.findings.append(_damaged_finding(run, damaged, severity=severity))
        if truncated:
            result.findings.append(_truncated_finding(run, lp, truncated, severity=severity))
        return
    driver = [n for n in DRIVER_SONAMES if any(f"{n}: cannot open" in e for e in errors)]
    if driver:
        # the file is whole; it links the driver's own library, absent here: a reinstall changes nothing
        result.findings.append(make(
            "driver-missing", f"{lp.soname} links {driver[0]}, the NVIDIA driver's library, which this machine "
            f"does not have: {'; '.join(errors)}", severity="error" if lp.required else "warning",
            title=f"{lp.soname} cannot load without the NVIDIA driver"))
        return
    steps = _reinstall_owner(run, lp.chosen.path)
    fix, commands = run.installer.fix(steps, "reinstalls the wheel that ships it" if steps else
                                      f"Replace {lp.chosen.path} with a good copy (reinstall what installed it)")
    result.findings.append(make(
        "lib-load-failed", "; ".join(errors), fix, severity="error" if lp.required else "warning",
        title=f"{lp.soname} exists but does not load", steps=steps, commands=commands))


def _truncated_finding(run: _Run, lp: LibraryPlan, reasons: list[str], *, severity: Severity) -> Finding:
    """A file shorter than its own loadable segments, from any source (a wheel's RECORD covers its own)."""
    assert lp.chosen is not None
    steps = _reinstall_owner(run, lp.chosen.path)
    fix = (run.installer.commands(steps) if steps else
           f"Replace {lp.chosen.path} with a good copy (reinstall what installed it)")
    return make("lib-file-damaged", "\n".join(reasons) + "\nortdoctor did not load it: mapping a truncated "
                "library kills the process.", fix, severity=severity, steps=steps,
                title=f"{lp.soname} is shorter than its own loadable segments")


def _damaged_finding(run: _Run, damaged: list[Damage], *, severity: Severity) -> Finding:
    wheels = list(dict.fromkeys(f"{d.wheel.name}=={d.wheel.version}" for d in damaged))
    steps = (step("install", "--force-reinstall", "--no-deps", *wheels),)
    fix, commands = run.installer.fix(steps)
    return make("lib-file-damaged", "\n".join(d.describe() for d in damaged) + "\nortdoctor did not load "
                "it: mapping a truncated library kills the process.", fix,
                severity=severity, steps=steps, commands=commands)


def _reinstall_owner(run: _Run, path: str) -> tuple[PackageStep, ...]:
    """Reinstall, pinned to its installed version, the NVIDIA wheel whose library directory holds ``path``."""
    where = os.path.normpath(os.path.dirname(path))
    for w in run.env.nvidia_wheels:
        if any(os.path.normpath(d) == where for d in w.lib_dirs):
            return (step("install", "--force-reinstall", "--no-deps", f"{w.name}=={w.version}"),)
    return ()


def _note_already_loaded(run: _Run, lp: LibraryPlan, where: str, vfun: str | None, dry_run: bool) -> None:
    assert lp.chosen is not None
    measured = None
    proof = None if run.windows else loader.mapped_file(where)
    if not dry_run:
        try:
            measured = loader.library_version(
                loader.load(where, allow_unsafe=run.allow_unsafe, named=run.named, judge=run.judge).handle, vfun)
        except loader.LoadError:
            measured = None
    planned = lp.chosen.version if os.path.realpath(lp.chosen.path) == os.path.realpath(where) else None
    run.result.loaded.append(LoadedLib(lp.name, lp.soname, where, "loaded", _best_version(measured, planned), where,
                                       proof.path if proof else None, proof.inode if proof else None, lp.required,
                                       measured))
    if lp.chosen.source != "loaded" and os.path.realpath(lp.chosen.path) != os.path.realpath(where):
        run.result.findings.append(make(
            "lib-multiple-copies",
            f"{lp.soname} is mapped from {where}; the planned {lp.chosen.path} cannot replace it in this process.",
            "Preload before importing anything that loads CUDA (put `import ortdoctor.hook` first), "
            "or remove the other copy from the search path.",
            title=f"{lp.soname} was already loaded from elsewhere"))


def _note_torch(result: PreloadResult, env: Environment, plan: Plan, directory: str | None) -> None:
    """When torch is installed: a warning if the loaded set is not the files torch loads (a process holds
    one library per soname, so whichever comes first decides for both)."""
    t = env.torch
    if t is None or not t.cuda:
        return
    copies = torch_copies(env, plan)
    pairs = []
    for x in result.loaded:
        theirs = copies.get(x.name)
        if theirs is None or x.loaded_by is not None:
            continue
        ours = x.mapped or os.path.realpath(x.path)
        if ours != os.path.realpath(theirs.path):
            pairs.append((x.soname, Candidate(x.path, x.source, x.version), theirs))
    if pairs:
        what = "What ortdoctor preload loaded" + (f" (--directory {directory!r})" if directory is not None else "")
        result.findings.append(torch_other_copy_finding(t.version, pairs, what, directory))


def _note_sublibraries(result: PreloadResult, plan: Plan) -> None:
    """cuDNN maps some of its sub-libraries while it loads: list them as loaded, with the proof."""
    skipped = {s.name for s in result.skipped}
    main = next((x for x in result.loaded if x.name == "cudnn"), None)
    if main is None:
        return
    maps = loader.mapped_objects()
    for lp in plan.libraries:
        if lp.name not in skipped or lp.skipped:
            continue
        hit = next((m for m in maps if os.path.basename(m.path) == lp.soname
                    or os.path.basename(m.path).startswith(lp.soname + ".")), None)
        if hit is None:
            continue
        same = lp.chosen is not None and os.path.realpath(lp.chosen.path) == hit.path
        result.skipped = [s for s in result.skipped if s.name != lp.name]
        result.loaded.append(LoadedLib(
            lp.name, lp.soname, lp.chosen.path if same and lp.chosen else hit.path,
            lp.chosen.source if same and lp.chosen else "loaded",
            lp.chosen.version if same and lp.chosen else None, None, hit.path, hit.inode, lp.required,
            None, main.soname))


def _finish(result: PreloadResult, strict: bool) -> PreloadResult:
    if strict and not result.ok:
        raise PreloadError(result)
    return result
