"""Which TensorRT the installed TensorRT EP needs, and which install on disk to load (pure).

The need is read from the provider library itself (its DT_NEEDED: ``libnvinfer.so.10``,
``libnvonnxparser.so.10``), else from the matrix row of the release; the minor it was built with comes
from the matrix's documented builds where a source names one. The choice prefers an install of the
needed major built for the build's CUDA major (or for no known one), complete (every needed library
present), in probe order: pip's ``tensorrt_libs`` (site order), LD_LIBRARY_PATH, the ld.so cache.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ortdoctor.core.facts import (
    Candidate,
    ElfInfo,
    Environment,
    LibraryPlan,
    PackageStep,
    PeInfo,
    Source,
    TensorrtInstall,
)
from ortdoctor.core.patterns import lazy
from ortdoctor.core.record import record
from ortdoctor.decide.fixes import Installer, step
from ortdoctor.decide.matrix.model import LibSpec, Matrix, ReleaseMatch, TensorrtBuild, TensorrtPip
from ortdoctor.decide.search import DirIndex, index_dirs
from ortdoctor.formats.distinfo import normalize as normalize_name
from ortdoctor.formats.realpath import real_path
from ortdoctor.native.gate import covers
from ortdoctor.probes.tensorrt import tensorrt_component

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ortdoctor.native.gate import Allowance

__all__ = ["LOAD_HINT", "TensorrtNeed", "TensorrtPlan", "TensorrtRefusal", "judge_installs", "plan_tensorrt",
           "refused_needed", "tensorrt_fix", "tensorrt_need", "tensorrt_steps"]

_TRT_DLL_RE = lazy(r"^(nvinfer|nvinfer_plugin|nvonnxparser)(?:_(\d+))?\.dll$", re.I)
LOAD_HINT = ("then load it by full path: `ortdoctor preload --tensorrt`, or ORTDOCTOR_TENSORRT=1 with "
             "`import ortdoctor.hook` first in the program")
_SOURCES: dict[str, Source] = {"pip": "nvidia-wheel", "LD_LIBRARY_PATH": "system", "ld.so.cache": "system"}


@record
class TensorrtNeed:
    """What the installed TensorRT EP links."""

    major: int | None
    sonames: tuple[str, ...]  # the TensorRT sonames of its DT_NEEDED: loaded with the provider, all required
    source: str  # where the need was read: "DT_NEEDED of <provider>", "the matrix's 1.31 row"
    provider: str | None = None  # path of libonnxruntime_providers_tensorrt.so
    built_with: TensorrtBuild | None = None  # the documented major.minor, when a source names it
    cuda_major: int | None = None  # the onnxruntime build's CUDA major


@record
class TensorrtRefusal:
    """An install the CUDA libraries' refusals keep from being loaded (or that only the override let through)."""

    install: TensorrtInstall
    why: str
    unsafe_dir: str | None = None  # the directory whose owner or mode is the reason (None: the current directory)


@record
class TensorrtPlan:
    need: TensorrtNeed
    chosen: TensorrtInstall | None  # the install to load (None: no install of the needed major)
    libraries: tuple[LibraryPlan, ...] = ()  # one per library of the major, in load order
    missing: tuple[str, ...] = ()  # needed sonames the chosen install lacks
    other_major: tuple[TensorrtInstall, ...] = ()  # installs of another TensorRT major
    other_cuda: tuple[TensorrtInstall, ...] = ()  # installs of the needed major built for another CUDA major
    loader_finds: bool = False  # the dynamic loader finds the chosen libraries without a preload
    pip: TensorrtPip | None = None  # the pip packages of the needed major for the build's CUDA major
    index_url: str = ""
    # installs never to be loaded, with why (the CUDA libraries' refusals: the current directory, a
    # directory or file others can write, or one under such a directory)
    refused: tuple[TensorrtRefusal, ...] = ()
    allowed: tuple[TensorrtRefusal, ...] = ()  # accepted only because of the override (--allow-unsafe-dir[s])


def _trt_needed(info: ElfInfo | PeInfo | None) -> tuple[int | None, tuple[str, ...]]:
    if info is None:
        return None, ()
    names = info.needed if isinstance(info, ElfInfo) else info.imports
    sonames: list[str] = []
    major: int | None = None
    for name in names:
        m = tensorrt_component(name)
        # only a name ending in ".dll" (any case) can be a DLL's: the pattern is compiled for those alone
        d = _TRT_DLL_RE.match(name) if m is None and ".dll" in name.lower() else None
        if m or d:
            sonames.append(name)
            if m and m[0] == "nvinfer":
                major = m[1]
            elif d and d.group(1).lower() == "nvinfer" and d.group(2):
                major = int(d.group(2))
    return major, tuple(sonames)


def tensorrt_need(env: Environment, matrix: Matrix, match: ReleaseMatch | None,
                  cuda_major: int | None) -> TensorrtNeed | None:
    """The TensorRT the installed provider needs; None when no TensorRT provider is installed."""
    provider = env.ort.tensorrt_provider
    if provider is None:
        return None
    if match is not None and match.unverified:
        # a line the matrix does not have yet: the stand-in line's TensorRT facts are not this build's; its
        # own DT_NEEDED is all there is
        match = None
    facts = matrix.tensorrt
    built = facts.build_for(match.release.line) if facts is not None and match is not None else None
    major, sonames = _trt_needed(provider)
    source = f"DT_NEEDED of {provider.path}"
    if major is None and match is not None:
        major, sonames = _trt_needed(ElfInfo(path="", machine="", bits=64, needed=match.release.tensorrt_needed))
        source = f"the matrix's {match.release.line} row (tensorrt_needed)"
    if major is None and built is not None:
        major, sonames, source = built.major, (), f"the documented build of {match.release.line if match else '?'}"
    return TensorrtNeed(major=major, sonames=sonames, source=source, provider=provider.path, built_with=built,
                        cuda_major=cuda_major)


def _loader_dirs(env: Environment) -> set[str]:
    dirs = {real_path(d.path) for d in env.system.ld_library_path if d.exists and not d.relative and d.path}
    for paths in env.system.ldconfig.values():
        dirs.update(real_path(os.path.dirname(p)) for p in paths)
    return dirs


_STEMS = ("libnvinfer.so", "libnvinfer_plugin.so", "libnvonnxparser.so")


def judge_installs(env: Environment, *, cwd: str | None = None, allow_unsafe: Allowance = False,
                   index: DirIndex | None = None) -> tuple[list[TensorrtInstall], list[TensorrtRefusal],
                                                           list[TensorrtRefusal]]:
    """The installs that may be loaded, those refused (with why) and those only the override lets through.

    The refusals of the CUDA libraries (:mod:`ortdoctor.decide.resolve`): never the current directory, nor
    a wheel tree in a site directory that is the current directory; never a directory or a file others
    can write or own, or one under such a directory, unless ``allow_unsafe`` covers it (True: every
    install; directories: an install under one of them). Without ``index`` the
    install directories are listed with :func:`~ortdoctor.decide.search.index_dirs`.
    """
    installs = env.tensorrt.installs
    if index is None:
        index = index_dirs(dict.fromkeys(i.directory for i in installs), stems=_STEMS)
    cwd_real = real_path(cwd) if cwd else None
    sites = {normalize_name(d.name): d.location for d in env.tensorrt.distributions}
    ok: list[TensorrtInstall] = []
    refused: list[TensorrtRefusal] = []
    allowed: list[TensorrtRefusal] = []
    for i in installs:
        lst = index.get(i.directory)
        site = sites.get(normalize_name(i.distribution)) if i.distribution else None
        if lst is None or not lst.exists:
            ok.append(i)  # gone since the probe listed it: the load says so (and the gate judges it then)
        elif cwd_real and lst.realpath == cwd_real:
            refused.append(TensorrtRefusal(i, f"{i.directory} is the current directory"))
        elif cwd_real and site and real_path(site) == cwd_real:
            refused.append(TensorrtRefusal(i, f"{i.directory} is in a site directory that is the current directory"))
        elif why := lst.unsafe() or next((w for lib in i.libraries
                                          if (w := lst.unsafe_files.get(os.path.basename(lib.path)))), None):
            refusal = TensorrtRefusal(i, why, lst.unsafe_where())
            if covers(allow_unsafe, lst.realpath or i.directory):
                allowed.append(refusal)
                ok.append(i)
            else:
                refused.append(refusal)
        else:
            ok.append(i)
    return ok, refused, allowed


def plan_tensorrt(env: Environment, matrix: Matrix, match: ReleaseMatch | None,
                  cuda_major: int | None, *, cwd: str | None = None, allow_unsafe: Allowance = False,
                  index: DirIndex | None = None) -> TensorrtPlan | None:
    """The TensorRT to load for the installed provider; None when there is no TensorRT provider.

    Only installs that pass :func:`judge_installs` are chosen from; the others are in ``refused``."""
    need = tensorrt_need(env, matrix, match, cuda_major)
    if need is None:
        return None
    facts = matrix.tensorrt
    pip = facts.pip_for(need.major, cuda_major) if facts is not None and need.major is not None else None
    index_url = facts.index_url if facts is not None else ""
    judged, refused_list, allowed_list = judge_installs(env, cwd=cwd, allow_unsafe=allow_unsafe, index=index)
    installs = tuple(judged)
    refused, allowed = tuple(refused_list), tuple(allowed_list)
    if need.major is None:
        return TensorrtPlan(need=need, chosen=None, other_major=installs, pip=pip, index_url=index_url,
                            refused=refused, allowed=allowed)
    same = [i for i in installs if i.major == need.major]
    other_major = tuple(i for i in installs if i.major != need.major)
    other_cuda = tuple(i for i in same if cuda_major is not None and i.cuda_major not in (None, cuda_major))

    def rank(i: TensorrtInstall) -> tuple[int, int]:
        wrong_cuda = int(i in other_cuda)
        lacking = int(any(_lacks(i, s) for s in need.sonames))
        return wrong_cuda, lacking

    chosen = min(same, key=rank) if same else None  # min keeps probe order among equals
    specs = _specs(matrix, need.major)
    libraries: list[LibraryPlan] = []
    missing: list[str] = []
    for spec in specs:
        required = spec.soname in need.sonames if need.sonames else spec.load == "required"
        lib = chosen.library(spec.name) if chosen is not None else None
        cand = Candidate(lib.path, _SOURCES.get(chosen.origin, "system"), lib.version or chosen.version) \
            if lib is not None and chosen is not None else None
        if cand is None and required and chosen is not None:
            missing.append(spec.soname)
        libraries.append(LibraryPlan(name=spec.name, soname=spec.soname, required=required, chosen=cand))
    loader_finds = chosen is not None and real_path(chosen.directory) in _loader_dirs(env)
    return TensorrtPlan(need=need, chosen=chosen, libraries=tuple(libraries), missing=tuple(missing),
                        other_major=other_major, other_cuda=other_cuda, loader_finds=loader_finds, pip=pip,
                        index_url=index_url, refused=refused, allowed=allowed)


def refused_needed(plan: TensorrtPlan) -> tuple[str, str, tuple[str, ...]] | None:
    """When the needed major was found only in installs the plan refused: (the finding's title, the
    sentence that says where and why, the directories whose owner or mode to fix); None otherwise.

    One text for ``preload --tensorrt`` and ``check`` (``tensorrt-unavailable``)."""
    major = plan.need.major
    refused = [r for r in plan.refused if r.install.major == major]
    if plan.chosen is not None or not refused:
        return None
    where = "; ".join(f"{r.install.directory} ({r.why})" for r in refused)
    return (f"TensorRT {major} was found only in places ortdoctor refuses to load from",
            f"TensorRT {major} was found only where ortdoctor never loads from: {where}.",
            tuple(dict.fromkeys(r.unsafe_dir for r in refused if r.unsafe_dir is not None)))


def _lacks(install: TensorrtInstall, soname: str) -> bool:
    m = tensorrt_component(soname)
    return m is not None and install.library(m[0]) is None


def _specs(matrix: Matrix, major: int) -> tuple[LibSpec, ...]:
    facts = matrix.tensorrt
    tm = facts.majors.get(major) if facts is not None else None
    if tm is not None:
        return tm.libraries
    # A major the matrix does not describe: the three libraries every TensorRT has had since 7.
    return tuple(LibSpec(name=n, soname=f"lib{n}.so.{major}", windows_dll=None, load="lazy" if n == "nvinfer_plugin"
                         else "required", package=None, linux_dirs=(), windows_dirs=())
                 for n in ("nvinfer", "nvinfer_plugin", "nvonnxparser"))


def tensorrt_steps(plan: TensorrtPlan, installed: Sequence[tuple[str, str]] = (), *,
                   reinstall: bool = False) -> tuple[PackageStep, ...]:
    """The package steps that install the needed major for the build's CUDA major, pinned (an unpinned
    ``tensorrt-cu13`` is TensorRT 11), from NVIDIA's index (the -libs sdists download from it); installed
    TensorRT distributions the install would not replace are removed first. () when PyPI has none."""
    if plan.pip is None or plan.need.major is None:
        return ()
    target = {plan.pip.package, plan.pip.libs_package or "", f"{plan.pip.package}-bindings"}
    remove = list(dict.fromkeys(name for name, _version in installed if name not in target))
    steps = [step("uninstall", "-y", *remove)] if remove else []
    args = ["--force-reinstall"] if reinstall else []
    args.append(plan.pip.spec(plan.need.major))
    if plan.index_url:
        args += ["--extra-index-url", plan.index_url]
    steps.append(step("install", *args))
    return tuple(steps)


def tensorrt_fix(plan: TensorrtPlan, installer: Installer, installed: Sequence[tuple[str, str]] = (), *,
                 reinstall: bool = False) -> tuple[str, tuple[PackageStep, ...]]:
    """:func:`tensorrt_steps` as the command ``installer`` runs, with why NVIDIA's index must be reachable
    and how to load TensorRT afterwards; the text alone where PyPI has no package for it."""
    steps = tensorrt_steps(plan, installed, reinstall=reinstall)
    if not steps or plan.pip is None:
        return (f"Install TensorRT {plan.need.major} for CUDA {plan.need.cuda_major} from NVIDIA (the tar file, with "
                "its lib/ on LD_LIBRARY_PATH), or an onnxruntime-gpu whose TensorRT EP links a TensorRT that exists "
                "for your CUDA (`ortdoctor matrix`)", ())
    note = (f"({plan.pip.libs_package} is a source package that downloads the wheel from {plan.index_url} while "
            "installing: that host must be reachable)") if plan.pip.libs_package and plan.index_url else ""
    return installer.fix(steps, "\n".join(x for x in (note, LOAD_HINT) if x))[0], steps
