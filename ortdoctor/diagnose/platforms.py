"""Rules about the platforms the wheels cover: the glibc a wheel needs, and a Jetson, whose integrated GPU
PyPI's aarch64 wheels carry no kernels for."""

from __future__ import annotations

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import Finding, PackageStep
from ortdoctor.core.shell import posix_join
from ortdoctor.decide.fixes import step
from ortdoctor.decide.kernels import coverage, describe_archs
from ortdoctor.diagnose.context import Ctx, ort_family
from ortdoctor.diagnose.kernels import build_kernels

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ortdoctor.decide.matrix.model import Matrix

__all__ = ["check_glibc", "check_jetson", "jetson_install_steps", "jetson_routes", "jetson_summary", "wheel_platforms_text"]


def _v(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def check_glibc(ctx: Ctx) -> list[Finding]:
    """The installed line's wheel for this platform needs a newer glibc than the system has; or, with no CUDA
    build installed, PyPI has wheels for this platform and this glibc loads none of them."""
    glibc = ctx.glibc
    if glibc is None or ctx.os_name != "linux" or ctx.env.jetson is not None:
        return []  # a Jetson's wheels are not PyPI's: check_jetson answers there
    platform = ctx.wheel_platform
    ort = ctx.env.ort
    if ctx.gpu_build and ctx.match is not None and not ctx.match.unverified:
        release = ctx.match.release
        need = release.glibc_needed(platform)
        if need is None or need <= glibc:
            return []
        tag = release.wheel_platforms[platform]
        detail = (f"onnxruntime-gpu {ort.version}'s {platform} wheel is {tag}: it needs glibc {_v(need)}; this "
                  f"system has glibc {_v(glibc)}, so its native library fails to load (`GLIBC_{_v(need)}' not "
                  f"found`).")
        return [_finding(ctx, detail)]
    if ctx.gpu_build:
        return []
    lines = [r for r in ctx.matrix.releases if r.pypi and r.wheel_platforms and r.has_wheel(platform)]
    if not lines or any(r.has_wheel(platform, glibc) for r in lines):
        return []
    floors = sorted({need for r in lines if (need := r.glibc_needed(platform)) is not None})
    span = lines[0].line if len(lines) == 1 else f"{lines[-1].line}-{lines[0].line}"
    detail = (f"PyPI's onnxruntime-gpu {platform} wheels ({span}) need glibc {_v(floors[0])} or newer; this "
              f"system has glibc {_v(glibc)}: pip finds no onnxruntime-gpu it can install here.")
    return [_finding(ctx, detail)]


def _finding(ctx: Ctx, detail: str) -> Finding:
    """glibc-below-wheel-floor with the newest build this glibc loads as its fix, where there is one."""
    env = ctx.env
    cuda = env.driver.cuda_version if env.driver.available else None
    rec = ctx.matrix.recommend(cuda, None, python=env.python.version, platform=ctx.wheel_platform,
                               glibc=ctx.glibc, driver_cuda=cuda)
    if rec is None or not rec.steps:
        return make("glibc-below-wheel-floor", detail + " No onnxruntime-gpu line in the matrix has a wheel for "
                    "this platform that this glibc loads.",
                    "Move to a distribution or container with a newer glibc (Ubuntu 22.04 has 2.35).")
    steps = rec.steps
    fix, commands = ctx.installer.fix(steps, "or move to a distribution or container with a newer glibc")
    return make("glibc-below-wheel-floor", detail + f" The newest line this glibc loads: {rec.release.line}.",
                fix, steps=steps, commands=commands)


def _tegra_cc(ctx: Ctx) -> tuple[int, int] | None:
    jet, facts = ctx.env.jetson, ctx.matrix.jetson
    if jet is None or facts is None or jet.soc is None or jet.soc not in facts.socs:
        return None
    major, minor = facts.socs[jet.soc].split(".")
    return int(major), int(minor)


def jetson_summary(ctx: Ctx) -> str:
    """``Jetson AGX Orin (L4T 36.4.3, JetPack 6; SoC tegra234: integrated GPU sm_87)``, from what is known."""
    jet = ctx.env.jetson
    if jet is None:
        return ""
    facts = ctx.matrix.jetson
    jetpack = facts.jetpack_of(jet.l4t) if facts is not None else None
    release = ", ".join(x for x in (f"L4T {jet.l4t}" if jet.l4t else "",
                                   f"JetPack {jetpack}" if jetpack else "") if x)
    cc = _tegra_cc(ctx)
    soc = f"SoC {jet.soc}" + (f": integrated GPU sm_{cc[0]}{cc[1]}" if cc else "") if jet.soc else ""
    inside = "; ".join(x for x in (release, soc) if x)
    return (jet.model or "a Jetson") + (f" ({inside})" if inside else "")


def jetson_install_steps(ctx: Ctx) -> tuple[PackageStep, ...]:
    """The install of onnxruntime-gpu from the pip index for this Jetson's JetPack; () when the matrix has
    none for it (JetPack 4 and 5 download a wheel from a page) or this is no Jetson."""
    jet, facts = ctx.env.jetson, ctx.matrix.jetson
    if jet is None or facts is None:
        return ()
    jetpack = facts.jetpack_of(jet.l4t)
    feed = next((f for f in facts.feeds if f.jetpack == jetpack and f.pip_index), None)
    if feed is None:
        return ()
    return (step("install", "onnxruntime-gpu", "--index-url", feed.index_url),)


def check_jetson(ctx: Ctx) -> list[Finding]:
    """On a Jetson: no CUDA build installed, or the installed CUDA provider has no kernels its integrated GPU
    runs (PyPI's aarch64 wheels): where the JetPack builds come from."""
    jet, facts = ctx.env.jetson, ctx.matrix.jetson
    cc = _tegra_cc(ctx)
    if jet is None or facts is None or cc is None:
        return []
    ort = ctx.env.ort
    gpu = f"sm_{cc[0]}{cc[1]}"
    if not ctx.gpu_build:
        why = ("no onnxruntime is installed" if not ort.installed
               else f"the installed onnxruntime {ort.version or ''} is a CPU build".replace("  ", " "))
    else:
        kernels = build_kernels(ctx)
        if kernels is None:
            return []  # a JetPack build the matrix does not describe, its provider unread: nothing to say
        if coverage(cc, kernels.archs, ptx_isa=kernels.ptx_isa, tegra=True, isolated=kernels.isolated).runs:
            return []
        why = (f"the installed onnxruntime-gpu {ort.version}'s CUDA provider carries "
               f"{describe_archs(kernels.archs, kernels.ptx_isa)} ({kernels.where}): nothing a Tegra {gpu} runs "
               f"(it runs SASS of exactly its own compute capability)")
    pypi = ("" if ctx.matrix.kernel_releases(cc, platform=ctx.wheel_platform) else
            f" No PyPI onnxruntime-gpu {ctx.wheel_platform} wheel carries kernels for {gpu}.")
    detail = f"This is {jetson_summary(ctx)}; {why}.{pypi}"
    jetpack = facts.jetpack_of(jet.l4t)
    steps = jetson_install_steps(ctx)
    if steps:
        family = [d.name for d in ort_family(ort)]
        steps = ((step("uninstall", "-y", *family),) if family else ()) + steps
        fix, commands = ctx.installer.fix(steps, f"the JetPack {jetpack} build ({facts.feeds_for(jetpack)[0].note})")
        return [make("jetson-needs-jetpack-wheel", detail, fix, steps=steps, commands=commands)]
    pages = facts.feeds_for(jetpack)
    where = "; ".join(f"JetPack {f.jetpack}: {f.index_url}" + (f" ({f.note})" if f.note else "") for f in pages)
    what = f"JetPack {jetpack}" if jetpack else "your JetPack release (L4T unknown)"
    return [make("jetson-needs-jetpack-wheel", detail,
                 f"Install the onnxruntime-gpu build for {what} and your Python: {where}.")]


def wheel_platforms_text(matrix: Matrix) -> str:
    """Which platforms PyPI's onnxruntime-gpu has wheels for, from the matrix: ``Linux x86_64 (1.11-1.31),
    Windows x64 (1.11-1.31) and Linux aarch64 (1.29-1.31, glibc 2.34 or newer; kernels for sm_89, ...)``."""
    names = {"linux_x86_64": "Linux x86_64", "win_amd64": "Windows x64", "linux_aarch64": "Linux aarch64"}
    parts = []
    for platform, name in names.items():
        lines = [r for r in matrix.releases if r.pypi and platform in r.wheel_platforms]
        if not lines:
            continue
        span = lines[0].line if len(lines) == 1 else f"{lines[-1].line}-{lines[0].line}"
        extra = ""
        if platform == "linux_aarch64":
            floor = lines[0].glibc_needed(platform)
            kernels = lines[0].kernels_for(platform)
            extra = (f", glibc {_v(floor)} or newer" if floor else "") + (
                f"; kernels for {', '.join(a for a in kernels.archs if a.startswith('sm_'))}" if kernels else "")
        parts.append(f"{name} ({span}{extra})")
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


def jetson_routes(matrix: Matrix) -> str:
    """Where a Jetson's builds come from, per JetPack, from the matrix: the pip command for an index, the page
    for a wheel to download."""
    facts = matrix.jetson
    if facts is None:
        return ""
    by_target: dict[str, list[str]] = {}
    for feed in facts.feeds:
        target = (posix_join(["pip", "install", "onnxruntime-gpu", "--index-url", feed.index_url]) if feed.pip_index
                  else f"the wheel for your release from {feed.index_url}")
        by_target.setdefault(target, []).append(feed.jetpack)
    return "; ".join(f"JetPack {' and '.join(majors)}: {target}" for target, majors in by_target.items())
