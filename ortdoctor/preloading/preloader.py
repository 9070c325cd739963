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
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ortdoctor.core.facts import (
    Candidate,
    DriverInfo,
    ElfInfo,
    Environment,
    Finding,
    LibraryPlan,
    NvidiaWheel,
    OrtInfo,
    PeInfo,
    Plan,
    PythonInfo,
    SearchDir,
    SystemInfo,
    TorchInfo,
    to_jsonable,
)
from ortdoctor.decide.resolver import (
    DirectoryError,
    libraries_for,
    resolve,
    resolve_directory,
    search_dirs,
    tier_dirs,
)
from ortdoctor.decide.torch import torch_copies
from ortdoctor.formats.elf import ElfError, read_elf
from ortdoctor.formats.ldcache import try_read_ld_cache
from ortdoctor.formats.regular_file import open_regular
from ortdoctor.preloading import loader

__all__ = ["DirectoryError", "FailedLib", "LoadedLib", "PreloadError", "PreloadResult", "SkippedLib",
           "preload", "quick_environment", "result_from_json"]

SCHEMA_VERSION = 1


class PreloadError(RuntimeError):
    """``strict=True`` and at least one library failed; ``.result`` holds the whole :class:`PreloadResult`."""

    def __init__(self, result: PreloadResult) -> None:
        names = ", ".join(f.name for f in result.failed) or "(see findings)"
        super().__init__(f"ortdoctor could not load: {names}")
        self.result = result


@dataclass(frozen=True)
class LoadedLib:
    name: str
    soname: str
    path: str  # the absolute path loaded (or already mapped)
    source: str  # "directory", "torch", "nvidia-wheel", "conda", "cuda-home", "system" or "loaded"
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


@dataclass(frozen=True)
class SkippedLib:
    name: str
    reason: str


@dataclass(frozen=True)
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
# Quick facts: only what the resolver needs, read from files
# --------------------------------------------------------------------------------------------------
_CUDA_VERSION_RE = re.compile(r"""^cuda_version\s*=\s*['"]([^'"]*)['"]""", re.MULTILINE)
_DIST_RE = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")


def _site_dirs(path: Sequence[str]) -> tuple[str, ...]:
    # '' and relative entries mean the current directory: never a place to load libraries from.
    return tuple(dict.fromkeys(p for p in path if p and os.path.isabs(p) and os.path.isdir(p)))


def _listdir(d: str) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


def _read_text(path: str, limit: int = 1 << 20) -> str | None:
    """A regular file's text, or None (a FIFO named like METADATA must not block the hook)."""
    try:
        with open_regular(path) as f:
            return f.read(limit).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def _quick_ort(sites: Sequence[str]) -> OrtInfo:
    for site in sites:
        pkg = os.path.join(site, "onnxruntime")
        if not os.path.isfile(os.path.join(pkg, "__init__.py")):
            continue
        info_path = os.path.join(pkg, "capi", "build_and_package_info.py")
        text = _read_text(info_path) or ""
        m = _CUDA_VERSION_RE.search(text)
        cuda_version = m.group(1) if m and m.group(1) else None
        provider: ElfInfo | PeInfo | None = None
        if sys.platform == "win32":  # Windows: the DLL's import table (not run on Windows yet)
            provider_path = os.path.join(pkg, "capi", "onnxruntime_providers_cuda.dll")
            if os.path.isfile(provider_path):
                from ortdoctor.formats.pe import read_pe

                try:
                    provider = read_pe(provider_path)
                except ValueError:
                    provider = None
        else:
            provider_path = os.path.join(pkg, "capi", "libonnxruntime_providers_cuda.so")
            if os.path.isfile(provider_path):
                try:
                    provider = read_elf(provider_path)
                except ElfError:
                    provider = None
        cudnn_major = None
        for name in _listdir(site):
            if name.startswith("onnxruntime_gpu-") and name.endswith(".dist-info"):
                meta = _read_text(os.path.join(site, name, "METADATA")) or ""
                mm = re.search(r"^Requires-Dist:\s*nvidia-cudnn-cu\d+\s*[~=>]=\s*(\d+)", meta, re.MULTILINE)
                if mm:
                    cudnn_major = int(mm.group(1))
        return OrtInfo(installed=True, package_dir=pkg, cuda_version=cuda_version, cudnn_major=cudnn_major,
                       is_gpu_build=provider is not None, cuda_provider=provider,
                       build_info_path=info_path if text else None)
    return OrtInfo(installed=False)


def _quick_torch(sites: Sequence[str]) -> TorchInfo | None:
    for site in sites:
        if not os.path.isdir(os.path.join(site, "torch")):
            continue
        for name in _listdir(site):
            m = _DIST_RE.match(name)
            if not m or m.group("name").lower() != "torch":
                continue
            version = m.group("version")
            cu = re.search(r"\+cu(\d+)(\d)$", version)
            cuda = f"{cu.group(1)}.{cu.group(2)}" if cu else None
            meta = _read_text(os.path.join(site, name, "METADATA")) or ""
            cudnn_m = re.search(r"^Requires-Dist:\s*nvidia-cudnn-cu(\d+)\s*==\s*(\d+\.\d+\.\d+)", meta, re.MULTILINE)
            if cuda is None and cudnn_m:  # PyPI's default torch wheel has no +cu tag: read its deps
                rt = re.search(r"^Requires-Dist:\s*nvidia-cuda-runtime(?:-cu\d+)?\s*==\s*(\d+)\.(\d+)", meta,
                               re.MULTILINE)
                cuda = f"{rt.group(1)}.{rt.group(2)}" if rt else f"{cudnn_m.group(1)}.0"
            return TorchInfo(version=version, cuda=cuda, cudnn=cudnn_m.group(2) if cudnn_m else None,
                             lib_dir=os.path.join(site, "torch", "lib"), location=site)
    return None


def _quick_wheels(sites: Sequence[str]) -> tuple[NvidiaWheel, ...]:
    out = []
    for site in sites:
        for name in _listdir(site):
            m = _DIST_RE.match(name)
            if m and m.group("name").lower().startswith("nvidia_"):
                dist = m.group("name").lower().replace("_", "-")
                cu = re.search(r"-cu(\d+)$", dist)
                out.append(NvidiaWheel(name=dist, version=m.group("version"), location=site,
                                       cuda_major=int(cu.group(1)) if cu else None))
    return tuple(out)


def _search_dir(path: str, origin: str) -> SearchDir:
    return SearchDir(path=path, origin=origin, exists=bool(path) and os.path.isdir(path),
                     relative=not os.path.isabs(path) if path else True,
                     note="empty entry = current directory" if not path else None)


def _default_dirs() -> tuple[SearchDir, ...]:
    multiarch = getattr(sys.implementation, "_multiarch", None)
    dirs = [f"/lib/{multiarch}", f"/usr/lib/{multiarch}"] if multiarch else []
    dirs += ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
    return tuple(_search_dir(d, "default") for d in dirs if os.path.isdir(d))


def quick_environment(
    sys_path: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> Environment:
    """The facts :func:`~ortdoctor.decide.resolver.resolve` needs, read from files in a few milliseconds.

    No NVML, no onnxruntime import: what ``check`` learns with its full probes is not needed to decide
    which files to load.
    """
    env = os.environ if environ is None else environ
    sites = _site_dirs(sys.path if sys_path is None else sys_path)
    win = sys.platform == "win32"
    ld = env.get("LD_LIBRARY_PATH")
    system = SystemInfo(
        conda_prefix=env.get("CONDA_PREFIX") or None,
        cuda_home=env.get("CUDA_HOME") or None,
        cuda_path=env.get("CUDA_PATH") or None,
        cudnn_path=env.get("CUDNN_PATH") or None,
        ld_library_path=tuple(_search_dir(p, "LD_LIBRARY_PATH") for p in ld.split(":")) if ld is not None else (),
        ldconfig={} if win else try_read_ld_cache("/etc/ld.so.cache", os.uname().machine),
        default_dirs=() if win else _default_dirs(),
        windows_path=tuple(_search_dir(p, "PATH") for p in env.get("PATH", "").split(";")) if win else (),
    )
    python = PythonInfo(
        version=".".join(map(str, sys.version_info[:3])), executable=sys.executable,
        implementation=sys.implementation.name, platform=sys.platform,
        machine=os.uname().machine if hasattr(os, "uname") else "AMD64",
        os="windows" if win else ("linux" if sys.platform.startswith("linux") else sys.platform),
        conda_prefix=env.get("CONDA_PREFIX") or None, site_dirs=sites,
    )
    return Environment(python=python, ort=_quick_ort(sites), torch=_quick_torch(sites),
                       nvidia_wheels=_quick_wheels(sites), system=system, driver=DriverInfo(available=False))


def _default_matrix() -> object | None:
    """The matrix when it can be read; None means the resolver's built-in rows (same content)."""
    try:
        from ortdoctor.decide.matrix import load_matrix

        return load_matrix()
    except (NotImplementedError, ImportError, OSError, ValueError, LookupError, TypeError):
        return None
    except Exception as exc:  # MatrixError and YAML errors: the built-in rows still work
        if type(exc).__name__ in ("MatrixError", "YAMLError") or "yaml" in type(exc).__module__:
            return None
        raise


def library_rows(matrix_path: str | None = None) -> object:
    """The library rows a child process preloads with: the matrix file named by ``matrix_path`` or
    ``$ORTDOCTOR_MATRIX``, else the built-in rows (the shipped matrix's, without reading and validating
    YAML in every child; a test keeps them choosing the same files).

    Raises:
        MatrixError: the named matrix file cannot be used.
    """
    path = matrix_path or os.environ.get("ORTDOCTOR_MATRIX", "").strip()
    if path:
        from ortdoctor.decide.matrix import load_matrix

        return load_matrix(path)
    from ortdoctor.decide.resolver import BUILTIN

    return BUILTIN


# --------------------------------------------------------------------------------------------------
# preload
# --------------------------------------------------------------------------------------------------
def _finding(id_: str, severity: str, title: str, detail: str, fix: str | None) -> Finding:
    return Finding(id=id_, severity=severity, title=title, detail=detail, fix=fix)  # type: ignore[arg-type]


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


def _missing_finding(lp: LibraryPlan, plan: Plan) -> Finding:
    others = ", ".join(o.path for o in lp.other_major[:3])
    if lp.other_major:
        is_cudnn = lp.name.startswith("cudnn")
        fid = "cudnn-major-mismatch" if is_cudnn else "cuda-major-mismatch"
        fix = (f"pip install 'nvidia-cudnn-cu{plan.cuda_major}~={plan.cudnn_major}.0'" if is_cudnn
               else "pip install 'onnxruntime-gpu[cuda,cudnn]'  (installs the CUDA "
                    f"{plan.cuda_major} wheels the build needs)")
        return _finding(fid, "error" if lp.required or lp.name == "cudnn" else "warning",
                        f"{lp.soname} is missing; only another major is installed",
                        f"Found {others} ({lp.other_major[0].rejected}).", fix)
    return _finding("cuda-lib-missing", "error" if lp.required else "warning",
                    f"{lp.soname} was not found in any search location",
                    f"onnxruntime's CUDA provider {'needs' if lp.required else 'loads on demand'} {lp.soname}; "
                    "no candidate was found (see 'searched').",
                    "pip install 'onnxruntime-gpu[cuda,cudnn]'  (or point --directory at the directory "
                    f"that holds {lp.soname})")


def preload(
    directory: str | None = None,
    cuda: bool = True,
    cudnn: bool = True,
    msvc: bool = True,
    strict: bool = False,
    *,
    dry_run: bool = False,
    allow_unsafe_dirs: bool = False,
    env: Environment | None = None,
    matrix: object | None = None,
    global_: bool = False,
    sublibraries: bool = False,
) -> PreloadResult:
    """Load what the installed onnxruntime-gpu needs, by absolute path; never prints.

    Arguments as ``onnxruntime.preload_dlls``. ``dry_run`` decides without loading; ``global_`` loads
    with ``RTLD_GLOBAL``; ``sublibraries`` also preloads the cuDNN sub-libraries (normally the main
    cuDNN library loads them from its own directory when needed, as onnxruntime and PyTorch expect).

    Raises:
        DirectoryError: ``directory`` does not exist.
        PreloadError: ``strict=True`` and something failed.
    """
    environment = env if env is not None else quick_environment()
    if directory:  # a missing directory is a usage error, whatever else is installed
        explicit = resolve_directory(directory, environment)
        if not os.path.isdir(explicit):
            raise DirectoryError(f"directory {directory!r} does not exist (looked for {explicit})")
    mat = matrix if matrix is not None else _default_matrix()
    result = PreloadResult(directory=directory, dry_run=dry_run)
    win = environment.python.os == "windows"

    if not win:
        result.skipped.append(SkippedLib("msvc-runtime", "--no-msvc" if not msvc else "not Windows"))
    if not environment.ort.installed:
        result.findings.append(_finding("ort-not-installed", "error", "onnxruntime is not installed",
                                        "No onnxruntime package on sys.path; nothing to preload.",
                                        "pip install 'onnxruntime-gpu[cuda,cudnn]'"))
        return _finish(result, strict)
    if environment.ort.cuda_version is None or (not environment.ort.is_gpu_build and not win):
        result.findings.append(_finding(
            "ort-cpu-only", "error", "The installed onnxruntime is not a CUDA build",
            f"{environment.ort.package_dir} has no CUDA provider library and no cuda_version; there is "
            "nothing to preload.",
            "pip uninstall -y onnxruntime onnxruntime-gpu && pip install 'onnxruntime-gpu[cuda,cudnn]'"))
        return _finish(result, strict)

    mapped_before = () if win else loader.mapped_paths()
    plan = resolve(environment, mat, directory=directory, cuda=cuda, cudnn=cudnn, cwd=os.getcwd(),
                   allow_unsafe_dirs=allow_unsafe_dirs, mapped=mapped_before)
    result.plan = plan
    result.cuda_major, result.cudnn_major = plan.cuda_major, plan.cudnn_major
    result.findings.extend(plan.findings)
    specs = {s.name: s for s in libraries_for(mat, plan.cuda_major or 0, plan.cudnn_major)}
    searched = tuple(tier_dirs(search_dirs(environment, list(specs.values()), directory=directory,
                                           cuda_major=plan.cuda_major, cudnn_major=plan.cudnn_major)))
    result.searched = searched

    if win and msvc:
        missing = loader.check_msvc_runtime()
        if missing:
            result.findings.append(_finding(
                "msvc-runtime-missing", "error", "The Microsoft Visual C++ runtime is missing",
                f"Cannot load {', '.join(missing)}.",
                "Install the latest Microsoft Visual C++ Redistributable (x64): "
                "https://aka.ms/vs/17/release/vc_redist.x64.exe"))

    to_load: list[LibraryPlan] = []
    main_cudnn_dir: str | None = None
    for lp in plan.libraries:
        if lp.skipped:
            result.skipped.append(SkippedLib(lp.name, lp.skipped))
        elif specs.get(lp.name) is not None and specs[lp.name].sublibrary_of and not sublibraries:
            where = os.path.dirname(lp.chosen.path) if lp.chosen else None
            if lp.chosen is not None and main_cudnn_dir and where != main_cudnn_dir:
                result.findings.append(_finding(
                    "lib-sources-mixed", "warning", f"{lp.soname} is not beside the cuDNN library",
                    f"cuDNN would come from {main_cudnn_dir} but {lp.soname} from {where}.",
                    "Reinstall cuDNN so all its libraries sit in one directory: "
                    f"pip install --force-reinstall 'nvidia-cudnn-cu{plan.cuda_major}'"))
            result.skipped.append(SkippedLib(
                lp.name, f"cuDNN sub-library: {specs[lp.name].sublibrary_of} loads it on first use"
                + (f" from {where}" if where else "")))
        else:
            if lp.name == "cudnn" and lp.chosen is not None:
                main_cudnn_dir = os.path.dirname(lp.chosen.path)
            to_load.append(lp)

    if win:
        loader.add_dll_directories(dict.fromkeys(os.path.dirname(lp.chosen.path) for lp in to_load if lp.chosen))

    for lp in _dependency_order(to_load):
        spec = specs.get(lp.name)
        vfun = spec.version_function if spec else None
        if lp.chosen is None:
            result.failed.append(FailedLib(lp.name, lp.soname, "not found" + (
                f"; only other majors: {', '.join(o.path for o in lp.other_major[:3])}" if lp.other_major else ""),
                searched, lp.required))
            result.findings.append(_missing_finding(lp, plan))
            continue
        before = None if dry_run else loader.already_loaded(lp.soname)
        if lp.chosen.source == "loaded" or before is not None:
            where = before or lp.chosen.path
            measured = None
            proof = None if win else loader.mapped_file(where)
            if not dry_run:
                try:
                    measured = loader.library_version(loader.load(where).handle, vfun)
                except loader.LoadError:
                    measured = None
            planned = lp.chosen.version if os.path.realpath(lp.chosen.path) == os.path.realpath(where) else None
            result.loaded.append(LoadedLib(lp.name, lp.soname, where, "loaded", _best_version(measured, planned),
                                           where, proof.path if proof else None, proof.inode if proof else None,
                                           lp.required, measured))
            if lp.chosen.source != "loaded" and os.path.realpath(lp.chosen.path) != os.path.realpath(where):
                result.findings.append(_finding(
                    "lib-multiple-copies", "warning", f"{lp.soname} was already loaded from elsewhere",
                    f"{lp.soname} is mapped from {where}; the planned {lp.chosen.path} cannot replace it in "
                    "this process.",
                    "Preload before importing anything that loads CUDA (put `import ortdoctor.hook` first), "
                    "or remove the other copy from the search path."))
            continue
        if dry_run:
            result.loaded.append(LoadedLib(lp.name, lp.soname, lp.chosen.path, lp.chosen.source,
                                           lp.chosen.version, None, None, None, lp.required))
            continue
        # the chosen file, then the acceptable alternatives in search order (a corrupt wheel file must not
        # leave the library unloaded when a good copy exists)
        alternatives = [lp.chosen] + [c for c in lp.candidates if c.rejected is None and c.source != "loaded"
                                      and c.path != lp.chosen.path]
        errors: list[str] = []
        for cand in alternatives:
            try:
                got = loader.load(cand.path, global_=global_)
            except loader.LoadError as exc:
                errors.append(f"{cand.path}: {exc}")
                continue
            measured = loader.library_version(got.handle, vfun)
            result.loaded.append(LoadedLib(
                lp.name, lp.soname, cand.path, cand.source, _best_version(measured, cand.version), None,
                got.mapped.path if got.mapped else None, got.mapped.inode if got.mapped else None, lp.required,
                measured))
            if not win and got.mapped is None:
                result.findings.append(_finding(
                    "lib-not-mapped", "warning", f"{cand.path} loaded but is not in /proc/self/maps",
                    "dlopen succeeded, yet no mapping of that file (by inode) was found: another copy "
                    "with the same soname may have been returned.", None))
            break
        else:
            result.failed.append(FailedLib(lp.name, lp.soname, "; ".join(errors), searched, lp.required))
            result.findings.append(_finding(
                "lib-load-failed", "error" if lp.required else "warning", f"{lp.soname} exists but does not load",
                "; ".join(errors),
                "Reinstall the package that ships it: pip install --force-reinstall "
                f"'{spec.package if spec and spec.package else 'onnxruntime-gpu[cuda,cudnn]'}'"))
    if not dry_run and not win:
        _note_sublibraries(result, plan)
    _note_torch(result, environment, mat, plan, directory)
    return _finish(result, strict)


def _note_torch(result: PreloadResult, env: Environment, matrix: object | None, plan: Plan,
                directory: str | None) -> None:
    """When torch is installed: a warning if the loaded set is not the files torch loads (a process holds
    one library per soname, so whichever comes first decides for both)."""
    t = env.torch
    if t is None or not t.cuda:
        return
    if directory:  # an explicit directory hides the wheels from the plan: look them up for torch's side
        try:
            wheel_plan = resolve(env, matrix, directory="", cwd=os.getcwd())
        except DirectoryError:
            return
        copies = torch_copies(env, wheel_plan)
    else:
        copies = torch_copies(env, plan)
    pairs = []
    for x in result.loaded:
        theirs = copies.get(x.name)
        if theirs is None or x.loaded_by is not None:
            continue
        ours = x.mapped or os.path.realpath(x.path)
        if ours != os.path.realpath(theirs.path):
            pairs.append((x.soname, Candidate(x.path, x.source, x.version), theirs))  # type: ignore[arg-type]
    if pairs:
        from ortdoctor.decide.torch import torch_other_copy_finding

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
