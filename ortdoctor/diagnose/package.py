"""Rules about the onnxruntime package itself: installed, which flavour, damaged, known-bad, importable."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import (
    ElfInfo,
    Environment,
    Finding,
    OrtDistribution,
    PackageStep,
)
from ortdoctor.core.package_names import ORT_CPU, ORT_GPU
from ortdoctor.core.record import record
from ortdoctor.core.shell import Command, compose
from ortdoctor.decide.build import is_cuda_build
from ortdoctor.decide.fixes import gpu_install, library_specs, move_aside, step
from ortdoctor.decide.kernels import parse_compute_capability
from ortdoctor.decide.loader_view import (
    loader_visible,
)
from ortdoctor.decide.matrix.model import python_line
from ortdoctor.diagnose.context import Ctx, cuda_soname, ort_family
from ortdoctor.diagnose.platforms import jetson_install_steps, jetson_routes
from ortdoctor.formats.distinfo import normalize
from ortdoctor.formats.realpath import real_path

TYPE_CHECKING = False

if TYPE_CHECKING:
    from ortdoctor.decide.matrix.model import Matrix, Recommendation, Release


def check_platform(ctx: Ctx) -> list[Finding]:
    py = ctx.env.python
    if py.os in ("darwin", "macos"):
        return [make("platform-no-cuda", f"This Python runs on {py.os} ({py.machine}); NVIDIA CUDA and "
                     "onnxruntime-gpu are not available there.")]
    return []


def check_package(ctx: Ctx) -> list[Finding]:
    ort = ctx.env.ort
    family = ort_family(ort)
    if not ort.installed:
        detail = "No distribution owns the onnxruntime package in any site directory of " + ctx.env.python.executable
        steps = _install_steps(ctx)
        if family:
            names = ", ".join(f"{d.name} {d.version}" for d in family)
            detail = (f"{names} {'is' if len(family) == 1 else 'are'} recorded as installed but the onnxruntime "
                      "package files are gone (uninstalling one ORT flavour deletes files the other needs).")
            steps = (step("uninstall", "-y", *(d.name for d in family)), *steps)
        searched = ctx.env.python.site_dirs
        if searched:
            detail += "\nSearched: " + ", ".join(searched)
        fix, commands = _with_alternative(ctx, steps)
        return [make("ort-not-installed", detail, fix, steps=steps, commands=commands)]

    out: list[Finding] = []
    shadow = _shadowing(ctx, family) if len(family) > 1 else None
    if shadow is not None:
        out.append(shadow)
    elif len(family) > 1:
        dist_names = [d.name for d in family]
        lines = []
        for d in family:
            owner = {True: "its files are the ones on disk", False: "its files were overwritten",
                     None: "cannot tell whose files are on disk"}[d.owns_files_on_disk]
            lines.append(f"{d.name} {d.version} ({d.dist_info}): {owner}")
        winner = f"The files on disk belong to {ort.active}" if ort.active else "Whose files are on disk is unclear"
        build = "a CPU build" if not is_cuda_build(ort) else f"a CUDA {ort.cuda_version or '?'} build"
        detail = "\n".join([*lines, f"{winner} ({build}, package_name={ort.package_name!r})."])
        uninstall = tuple(dict.fromkeys([*dist_names, ORT_CPU, ORT_GPU]))
        # Keep the GPU build the user chose (its version pins its CUDA major); else what fits this machine.
        gpu = [d for d in family if normalize(d.name) == ORT_GPU]
        steps = (step("uninstall", "-y", *uninstall),
                 *((gpu_install(ctx.matrix, gpu[0].version),) if gpu else _install_steps(ctx)))
        fix, commands = _with_alternative(ctx, steps, keep=bool(gpu))
        out.append(make("ort-multiple-packages", detail, fix, steps=steps, commands=commands))
    elif not is_cuda_build(ort):
        name = ort.active or (family[0].name if family else ORT_CPU)
        detail = (f"{name} {ort.version or ''} in {ort.package_dir} is a CPU build: "
                  f"package_name={ort.package_name!r}, cuda_version={ort.cuda_version!r}, and there is no "
                  "CUDA provider library (libonnxruntime_providers_cuda.so / onnxruntime_providers_cuda.dll).")
        steps = (step("uninstall", "-y", name), *_install_steps(ctx, user=_user_install(ctx, family)))
        fix, commands = _with_alternative(ctx, steps)
        out.append(make("ort-cpu-only", detail, fix, steps=steps, commands=commands))

    problems = [*ort.problems, *(f"{d.name}: {p}" for d in family for p in d.problems)]
    if ort.build_info_error:
        problems.append(f"build_and_package_info.py: {ort.build_info_error}")
    if problems:
        dist = ort.active or (family[0].name if family else ORT_GPU)
        version = next((d.version for d in family if d.name == dist), ort.version)
        # pinned: an unpinned reinstall moves to the newest build, which may be for another CUDA major
        steps = (step("install", "--force-reinstall", "--no-deps", f"{dist}=={version}" if version else dist),)
        fix, commands = ctx.installer.fix(steps)
        out.append(make("ort-install-damaged", "\n".join(problems), fix, steps=steps, commands=commands))
    return out


def _is_pip_site(location: str) -> bool:
    """A site-packages directory pip manages (a ``pip install --target`` directory is not one)."""
    return os.path.basename(os.path.normpath(location)) in ("site-packages", "dist-packages")


@record
class _Removal:
    """How to take distributions out of their own locations, and only them: pip where it works, else
    their directories moved into a backup folder (a ``--target`` directory pip does not manage)."""

    steps: tuple[PackageStep, ...] = ()
    moves: tuple[Command, ...] = ()
    notes: tuple[str, ...] = ()

    def __add__(self, other: _Removal) -> _Removal:
        return _Removal(self.steps + other.steps, self.moves + other.moves, self.notes + other.notes)


def _under(path: str, prefix: str | None) -> bool:
    """``path`` is ``prefix`` or inside it, by the paths as the interpreter gave them or by their real paths."""
    if not prefix:
        return True  # not known: assume the inspected environment's own (the old answer)
    for p, root in ((os.path.normpath(path), os.path.normpath(prefix)), (real_path(path), real_path(prefix))):
        if p == root or p.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def _same_dir(a: str | None, b: str | None) -> bool:
    return bool(a and b) and os.path.normpath(str(a)) == os.path.normpath(str(b))


def _removal(ctx: Ctx, d: OrtDistribution, family: Sequence[OrtDistribution]) -> _Removal:
    py = ctx.env.python
    same_name_elsewhere = any(o is not d and normalize(o.name) == normalize(d.name) for o in family)
    in_user_site = _same_dir(d.location, py.user_site) and bool(py.venv)
    # a venv with system site packages also sees the base interpreter's site-packages
    outside = in_user_site or (bool(py.venv) and _is_pip_site(d.location) and not _under(d.location, py.prefix))
    if outside and py.base_executable and not same_name_elsewhere:
        # A venv's pip refuses a copy outside the venv ("Not uninstalling ... outside environment", exit 0):
        # the interpreter the venv was made from owns the user site and its own site-packages.
        where = "the user site " if in_user_site else ""
        return _Removal((step("uninstall", "-y", d.name, python=py.base_executable),),
                        notes=(f"removes {d.name} from {where}{d.location} with the interpreter the venv was made "
                               "from (the venv's pip does not touch it)",))
    if _is_pip_site(d.location) and not same_name_elsewhere and not outside:
        return _Removal((step("uninstall", "-y", d.name),), notes=(f"removes {d.name} from {d.location}",))
    pkg = os.path.join(d.location, "onnxruntime")
    return _Removal(moves=(move_aside((pkg, d.dist_info), d.location),),
                    notes=(f"moves {d.name}'s files out of {d.location} into a backup folder there (pip does not "
                           f"manage a --target directory); or drop {d.location} from PYTHONPATH",))


def _removal_fix(ctx: Ctx, removal: _Removal, *, then: tuple[PackageStep, ...] = (),
                 prose: str = "") -> tuple[str, tuple[PackageStep, ...], tuple[Command, ...]]:
    """The fix text, its package steps and its command lines: the moves first, then pip."""
    steps = (*removal.steps, *then)
    commands = (*removal.moves, *ctx.installer.lines(steps))
    notes = "\n".join([*removal.notes, *([prose] if prose else [])])
    return compose(commands, notes, windows=ctx.installer.windows), steps, commands


def _shadowing(ctx: Ctx, family: Sequence[OrtDistribution]) -> Finding | None:
    """Two distributions in different site directories: one is imported, the other shadowed. None when
    they share a directory (one overwrote the other's files: the general message says so)."""
    ort = ctx.env.ort
    if not ort.package_dir or len({os.path.normpath(d.location) for d in family}) < 2:
        return None
    site = os.path.normpath(os.path.dirname(ort.package_dir))
    imported = [d for d in family if os.path.normpath(d.location) == site]
    if len(imported) != 1:
        return None
    imp = imported[0]
    shadowed = [d for d in family if d is not imp]
    gpu = is_cuda_build(ort)
    build = f"a CUDA {ort.cuda_version or '?'} build" if gpu else "a CPU build"
    lines = [f"{imp.name} {imp.version} in {imp.location}: `import onnxruntime` takes this one (its directory "
             f"comes first on sys.path; {build})"]
    lines += [f"{d.name} {d.version} in {d.location}: shadowed (its onnxruntime/ is not imported)" for d in shadowed]
    lines.append(f"Still a problem: a change of PYTHONPATH or uninstalling {imp.name} flips `import onnxruntime` "
                 f"to {shadowed[0].name}, and pip sees both (pip check, upgrades, dependency resolution).")
    if gpu:
        removal = sum((_removal(ctx, d, family) for d in shadowed), _Removal())
        fix, steps, commands = _removal_fix(ctx, removal)
        return make("ort-multiple-packages", "\n".join(lines), fix, severity="warning", steps=steps,
                    commands=commands)
    gpu_dists = [d for d in shadowed if normalize(d.name) == ORT_GPU]
    if gpu_dists:
        fix, steps, commands = _removal_fix(
            ctx, _removal(ctx, imp, family),
            prose=f"afterwards `import onnxruntime` takes {gpu_dists[0].name} {gpu_dists[0].version} from "
                  f"{gpu_dists[0].location}")
    else:
        removal = sum((_removal(ctx, d, family) for d in family), _Removal())
        fix, steps, commands = _removal_fix(ctx, removal, then=_install_steps(ctx))
    return make("ort-multiple-packages", "\n".join(lines), fix, steps=steps, commands=commands)


def recommended_install(env: Environment, matrix: Matrix) -> str:
    """The command that installs a working onnxruntime-gpu on this machine (driver's and torch's CUDA)."""
    ctx = Ctx(env, None, matrix, env.python.os, 0, None, False, None)
    return _with_alternative(ctx, _install_steps(ctx))[0]


def _recommendation(ctx: Ctx) -> Recommendation | None:
    """The build for the driver's (or torch's) CUDA major; None when neither is known."""
    env = ctx.env
    cuda = env.driver.cuda_version if env.driver.available else None
    torch = env.torch.version if env.torch is not None and env.torch.cuda else None
    if cuda is None and torch is None:
        return None
    # Agree with torch when possible; else the driver alone decides. A wheel known to lack kernels for
    # the GPUs here is not offered while one with kernels fits. Either way a build with wheels for the
    # inspected Python (a fix pip cannot install converges nowhere).
    gpus = tuple(dict.fromkeys(cc for d in env.driver.devices
                               if (cc := parse_compute_capability(d.compute_capability)) is not None))
    platform, glibc = ctx.wheel_platform, ctx.glibc
    python = env.python.version
    rec = None
    for want_gpus in ((gpus, ()) if gpus else ((),)):
        rec = ctx.matrix.recommend(cuda, torch, python=python, gpus=want_gpus, platform=platform, driver_cuda=cuda,
                                   glibc=glibc)
        if rec is None and torch is not None and cuda is not None:
            rec = ctx.matrix.recommend(cuda, None, python=python, gpus=want_gpus, platform=platform,
                                       driver_cuda=cuda, glibc=glibc)
        if rec is not None:
            break
    return rec


def _user_install(ctx: Ctx, family: Sequence[OrtDistribution]) -> bool:
    """onnxruntime was installed with ``pip install --user`` into a Python that is no venv: its replacement
    goes there too (without ``--user`` pip writes into the system's site-packages, or refuses)."""
    py = ctx.env.python
    return not py.venv and any(_same_dir(d.location, py.user_site) for d in family)


def _install_steps(ctx: Ctx, *, user: bool = False) -> tuple[PackageStep, ...]:
    """What to install on this machine: a build for the driver's (or torch's) CUDA major, pinned; the
    newest build with its CUDA and cuDNN wheels when nothing says which CUDA the machine has."""
    if ctx.env.jetson is not None:
        # a Jetson's GPU runs only the JetPack builds: never a PyPI pin there (and no step where the JetPack
        # build is a wheel to download from a page: the fix's prose names it)
        steps = jetson_install_steps(ctx)
    else:
        rec = _recommendation(ctx)
        steps = rec.steps if rec is not None and rec.steps else (
            gpu_install(ctx.matrix, _newest_gpu(ctx.matrix, ctx.env.python.version, ctx.wheel_platform, ctx.glibc)),)
    if not user:
        return steps
    return tuple(PackageStep(s.verb, ("--user", *s.args), s.python) if s.verb == "install" else s for s in steps)


def _newest_gpu(matrix: Matrix, python: str | None = None, platform: str = "linux_x86_64",
                glibc: tuple[int, int] | None = None) -> str | None:
    """The newest onnxruntime-gpu release that is not known to be bad and has wheels for ``python`` where
    known, for ``platform`` and one ``glibc`` loads (pinned: today's answer stays today's answer when the fix
    is pasted next month)."""
    line = python_line(python)
    for release in matrix.releases:
        good = [v for v in release.versions if release.bad(v) is None]
        if line is not None and release.python and line not in release.python:
            continue
        if release.has_wheel(platform, glibc) and good:
            return max(good, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))
    return None


def _with_alternative(ctx: Ctx, steps: tuple[PackageStep, ...], *,
                      keep: bool = False) -> tuple[str, tuple[Command, ...]]:
    """The command lines, plus (as a note) the newest build for the same CUDA on its feed where there is one."""
    if ctx.env.jetson is not None and not keep and not any(s.verb == "install" for s in steps):
        routes = jetson_routes(ctx.matrix)
        lead = "then install" if steps else "Install"
        note = f"{lead} the JetPack build of onnxruntime-gpu for your release ({routes})" if routes else None
        return ctx.installer.fix(steps, note)
    rec = None if keep or ctx.env.jetson is not None else _recommendation(ctx)
    alternative = rec.alternative_steps if rec is not None else ()
    note = f"or the newest build for this CUDA: {ctx.run(*alternative)}" if alternative else None
    return ctx.installer.fix(steps, note)


def check_release(ctx: Ctx) -> list[Finding]:
    ort = ctx.env.ort
    out: list[Finding] = []
    if ctx.match is None:
        out.append(make("ort-version-unverified",
                        f"onnxruntime {ort.version} is older than every release line in the matrix (or its "
                        "version is unparsable); its needs are read from the installed files only."))
        return out
    rel = ctx.match.release
    for bad in rel.known_bad:
        if bad.version == ort.version:
            affects = f" (affects: {bad.affects})" if bad.affects else ""
            out.append(make("ort-known-bad-release",
                            f"{ort.active or 'onnxruntime'} {ort.version}{affects}: {bad.problem}", bad.fix))
    if ctx.match.unverified:
        out.append(make("ort-version-unverified", f"onnxruntime {ort.version}: {ctx.match.note}"))
    return out


def check_import(ctx: Ctx) -> list[Finding]:
    """Mode 11: the pybind module itself links a CUDA library, so `import onnxruntime` fails without it."""
    ort = ctx.env.ort
    pybind = ort.pybind
    needed = pybind.needed if isinstance(pybind, ElfInfo) else getattr(pybind, "imports", ())
    cuda_needed = [n for n in needed if cuda_soname(n)]
    if not cuda_needed:
        return []
    by_soname = {lp.soname: lp for lp in ctx.plan.libraries} if ctx.plan else {}
    problems: list[str] = []
    for soname in cuda_needed:
        lp = by_soname.get(soname)
        if lp is None or lp.chosen is None:
            problems.append(f"{soname}: not found anywhere")
        elif not loader_visible(ctx.env, lp.soname, lp.chosen, ctx.os_name):
            problems.append(f"{soname}: only at {lp.chosen.path}, which the loader does not search")
    if not problems or pybind is None:
        return []
    detail = (f"The pybind module {pybind.path} has NEEDED {', '.join(cuda_needed)}, so `import onnxruntime` "
              "raises ImportError unless they load:\n" + "\n".join(problems))
    good = _good_neighbour(ctx)
    steps = (gpu_install(ctx.matrix, good),) if good else ()
    runtime = library_specs(ctx.matrix, [s for s in ctx.matrix.libraries_for(ctx.cuda_major or 0, None)
                                        if s.soname in cuda_needed], cudnn_major=None)
    fix = (f"{ctx.run(*steps)}  # a release whose pybind module does not link CUDA\nor " if steps else "")
    fix += ("install and preload the CUDA runtime: " + (ctx.run(step("install", *runtime)) + ", then " if runtime
                                                          else "") + "`import ortdoctor.hook` before `import onnxruntime`")
    return [make("ort-import-fails", detail, fix, steps=steps)]


def _good_neighbour(ctx: Ctx) -> str | None:
    """The nearest release for the same CUDA major that is not known to be bad (the next one first)."""
    if ctx.match is None:
        return None
    this = ctx.match.release
    def line(r: Release) -> tuple[int, ...]:
        return tuple(int(p) for p in r.line.split("."))

    same = sorted((r for r in ctx.matrix.releases if r.cuda_major == this.cuda_major and r.pypi), key=line)
    for release in [r for r in same if line(r) > line(this)] + [r for r in reversed(same) if r is not this]:
        good = [v for v in release.versions if release.bad(v) is None]
        if good:
            return good[-1]
    return None
