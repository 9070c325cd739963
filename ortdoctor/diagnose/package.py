"""Rules about the onnxruntime package itself: installed, which flavour, damaged, known-bad, importable."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import (
    ElfInfo,
    Environment,
    Finding,
    OrtDistribution,
)
from ortdoctor.decide.build import is_cuda_build
from ortdoctor.decide.kernels import parse_compute_capability
from ortdoctor.decide.loader_view import (
    loader_visible,
)
from ortdoctor.decide.matrix.model import wheel_platform
from ortdoctor.diagnose.context import CUDA_SONAME, DEFAULT_GPU_INSTALL, Ctx, ort_family
from ortdoctor.formats.distinfo import normalize

if TYPE_CHECKING:
    from ortdoctor.decide.matrix.model import Matrix


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
        if family:
            names = ", ".join(f"{d.name} {d.version}" for d in family)
            detail = (f"{names} {'is' if len(family) == 1 else 'are'} recorded as installed but the onnxruntime "
                      "package files are gone (uninstalling one ORT flavour deletes files the other needs).")
            fix = f"pip uninstall -y {' '.join(d.name for d in family)} && {_install_command(ctx)}"
        else:
            fix = _install_command(ctx)
        searched = ctx.env.python.site_dirs
        if searched:
            detail += "\nSearched: " + ", ".join(searched)
        return [make("ort-not-installed", detail, fix)]

    out: list[Finding] = []
    shadow = _shadowing(ctx, family) if len(family) > 1 else None
    if shadow is not None:
        out.append(shadow)
    elif len(family) > 1:
        names = [d.name for d in family]
        lines = []
        for d in family:
            owner = {True: "its files are the ones on disk", False: "its files were overwritten",
                     None: "cannot tell whose files are on disk"}[d.owns_files_on_disk]
            lines.append(f"{d.name} {d.version} ({d.dist_info}): {owner}")
        winner = f"The files on disk belong to {ort.active}" if ort.active else "Whose files are on disk is unclear"
        build = "a CPU build" if not is_cuda_build(ort) else f"a CUDA {ort.cuda_version or '?'} build"
        detail = "\n".join([*lines, f"{winner} ({build}, package_name={ort.package_name!r})."])
        uninstall = " ".join(dict.fromkeys([*names, "onnxruntime", "onnxruntime-gpu"]))
        out.append(make("ort-multiple-packages", detail, f"pip uninstall -y {uninstall} && {_install_command(ctx)}"))
    elif not is_cuda_build(ort):
        name = ort.active or (family[0].name if family else "onnxruntime")
        detail = (f"{name} {ort.version or ''} in {ort.package_dir} is a CPU build: "
                  f"package_name={ort.package_name!r}, cuda_version={ort.cuda_version!r}, and there is no "
                  "CUDA provider library (libonnxruntime_providers_cuda.so / onnxruntime_providers_cuda.dll).")
        out.append(make("ort-cpu-only", detail, f"pip uninstall -y {name} && {_install_command(ctx)}"))

    problems = [*ort.problems, *(f"{d.name}: {p}" for d in family for p in d.problems)]
    if ort.build_info_error:
        problems.append(f"build_and_package_info.py: {ort.build_info_error}")
    if problems:
        dist = ort.active or (family[0].name if family else "onnxruntime-gpu")
        out.append(make("ort-install-damaged", "\n".join(problems),
                        f"pip install --force-reinstall --no-deps {dist}"))
    return out


def _is_pip_site(location: str) -> bool:
    """A site-packages directory pip manages (a ``pip install --target`` directory is not one)."""
    return os.path.basename(os.path.normpath(location)) in ("site-packages", "dist-packages")


def _remove_command(d: OrtDistribution, family: Sequence[OrtDistribution]) -> str:
    """How to remove one distribution from its own location, and only it."""
    same_name_elsewhere = any(o is not d and normalize(o.name) == normalize(d.name) for o in family)
    if _is_pip_site(d.location) and not same_name_elsewhere:
        return f"pip uninstall -y {d.name}  # removes it from {d.location}"
    pkg = os.path.join(d.location, "onnxruntime")
    return (f"rm -rf {pkg} {d.dist_info}  # a --target directory: pip does not manage it;\n"
            f"or drop {d.location} from PYTHONPATH")


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
        fix = "\n".join(_remove_command(d, family) for d in shadowed)
        return make("ort-multiple-packages", "\n".join(lines), fix, severity="warning")
    gpu_dists = [d for d in shadowed if normalize(d.name) == "onnxruntime-gpu"]
    if gpu_dists:
        fix = (_remove_command(imp, family)
               + f"\nthen `import onnxruntime` takes {gpu_dists[0].name} {gpu_dists[0].version} from "
                 f"{gpu_dists[0].location}")
    else:
        fix = "\n".join(_remove_command(d, family) for d in family) + f"\nthen: {_install_command(ctx)}"
    return make("ort-multiple-packages", "\n".join(lines), fix)


def recommended_install(env: Environment, matrix: Matrix) -> str:
    """The command that installs a working onnxruntime-gpu on this machine (driver's and torch's CUDA)."""
    ctx = Ctx(env, None, matrix, env.python.os, 0, None, False, None)
    return _install_command(ctx)


def _install_command(ctx: Ctx) -> str:
    """What to install on this machine: a build for the driver's (or torch's) CUDA major."""
    env = ctx.env
    cuda = env.driver.cuda_version if env.driver.available else None
    torch = env.torch.version if env.torch is not None and env.torch.cuda else None
    if cuda is None and torch is None:
        return DEFAULT_GPU_INSTALL
    # Agree with torch when possible; else the driver alone decides. A wheel known to lack kernels for
    # the GPUs here is not offered while one with kernels fits.
    gpus = tuple(dict.fromkeys(cc for d in env.driver.devices
                               if (cc := parse_compute_capability(d.compute_capability)) is not None))
    platform = wheel_platform(env.python.platform, env.python.machine)
    rec = None
    for want_gpus in ((gpus, ()) if gpus else ((),)):
        rec = ctx.matrix.recommend(cuda, torch, gpus=want_gpus, platform=platform, driver_cuda=cuda)
        if rec is None and torch is not None and cuda is not None:
            rec = ctx.matrix.recommend(cuda, None, gpus=want_gpus, platform=platform, driver_cuda=cuda)
        if rec is not None:
            break
    if rec is None:
        return DEFAULT_GPU_INSTALL
    alternative = getattr(rec, "alternative", None)
    return rec.command + (f"\nor the newest build for this CUDA: {alternative}" if alternative else "")


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
    cuda_needed = [n for n in needed if CUDA_SONAME.match(n)]
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
    if not problems:
        return []
    detail = (f"The pybind module {pybind.path} has NEEDED {', '.join(cuda_needed)}, so `import onnxruntime` "
              "raises ImportError unless they load:\n" + "\n".join(problems))
    fix = (f'pip install "{ort.active or "onnxruntime-gpu"}!={ort.version}"  (a release whose pybind module does '
           "not link CUDA), or install and preload the CUDA runtime: pip install nvidia-cuda-runtime, then "
           "`import ortdoctor.hook` before `import onnxruntime`")
    return [make("ort-import-fails", detail, fix)]
