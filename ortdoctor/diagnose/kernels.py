"""Rules about kernels for the GPUs: does the installed build carry code each GPU can run?

What the build carries comes from its CUDA provider's fatbin headers, read by the probe (the truth for
any build, a PyPI wheel or a local one); where they could not be read, from the matrix's row for an
exactly known PyPI release (for this platform's wheel). The rule itself is
:func:`ortdoctor.decide.kernels.coverage`. A GPU without kernels is an error before any session runs:
ORT creates the session and fails at the first kernel with ``cudaErrorNoKernelImageForDevice``. A GPU
that runs only through PTX is an info note: the driver JIT-compiles the kernels at first use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import Finding
from ortdoctor.core.package_names import ORT_GPU
from ortdoctor.core.record import record
from ortdoctor.decide.devices import CudaDevice, describe
from ortdoctor.decide.kernels import (
    TEGRA,
    Coverage,
    cmake_arch,
    coverage,
    describe_archs,
    parse_compute_capability,
    parse_target,
    sm_name,
)
from ortdoctor.decide.matrix.model import KernelRelease, wheel_platform
from ortdoctor.decide.names import major_of
from ortdoctor.diagnose.context import Ctx

__all__ = ["BuildKernels", "build_kernels", "check_kernels", "device_coverage"]

#: The CUDA floor of CUDA 13 builds: CUDA 13 dropped Maxwell, Pascal and Volta.
CUDA13_FLOOR = (7, 5)
_BUILD_DOCS = "https://onnxruntime.ai/docs/build/eps.html#cuda"
_NO_KERNEL = ("ORT creates the session, then fails at the first CUDA kernel (often Relu, Slice or Cast) with "
              "cudaErrorNoKernelImageForDevice: no kernel image is available for execution on the device.")


@record
class BuildKernels:
    """The kernel targets of the installed build and where they were read."""

    archs: tuple[str, ...]
    ptx_isa: str | None
    where: str  # "read from <provider path>" or the matrix row it comes from
    isolated: tuple[str, ...] = ()  # targets only kernels for one GPU alone carry

    def describe(self) -> str:
        return describe_archs(self.archs, self.ptx_isa)


def build_kernels(ctx: Ctx) -> BuildKernels | None:
    """What the installed CUDA provider carries: its own fatbin headers, else the matrix's row for an
    exactly known PyPI release; None when neither is known."""
    ort = ctx.env.ort
    read = ort.kernels
    if read is not None and read.error is None and read.archs:
        return BuildKernels(read.archs, read.ptx_isa, f"read from {read.path}", read.isolated)
    match = ctx.match
    if match is None or not match.exact or "+" in (ort.version or ""):
        return None  # a local build, a pre-release or an unknown line: the matrix does not describe it
    platform = wheel_platform(ctx.env.python.platform, ctx.env.python.machine)
    row = match.release.kernels_for(platform)
    if row is None:
        return None
    why = f"; the installed provider could not be read: {read.error}" if read is not None and read.error else ""
    parts = row.source.split("-")
    read_version = parts[1] if len(parts) > 2 else None
    other = (f"; {ort.version}'s own wheel was not read and may differ" if read_version and ort.version
             and read_version != ort.version else "")
    return BuildKernels(row.archs, row.ptx_isa,
                        f"the matrix's facts for the {match.release.line} {platform} wheel, {row.source}{other}{why}",
                        row.isolated)


def device_coverage(ctx: Ctx, build: BuildKernels, c: CudaDevice) -> Coverage | None:
    """How one device runs the build (None: a MIG instance NVML cannot tie to a GPU, or no capability)."""
    cc = parse_compute_capability(c.device.compute_capability) if c.device is not None else None
    if cc is None:
        return None
    return coverage(cc, build.archs, ptx_isa=build.ptx_isa, driver_cuda=ctx.env.driver.cuda_version,
                    isolated=build.isolated)


def check_kernels(ctx: Ctx, target: Sequence[CudaDevice], visible: Sequence[CudaDevice], *,
                  others_fix: Callable[[Sequence[CudaDevice], Sequence[CudaDevice]], str | None],
                  cuda12_build: Callable[[], str | None]) -> list[Finding]:
    """``gpu-arch-unsupported`` for the target devices without kernels (one finding naming each of
    them), ``gpu-arch-ptx-jit`` for those that run only through PTX.

    ``others_fix(bad, candidates)`` words the "use only the other GPUs" fix; ``cuda12_build()`` is the
    command for a CUDA 12 build of the installed release (the fallback for old GPUs on CUDA 13 builds
    when the matrix knows no release with their kernels).
    """
    build = build_kernels(ctx)
    if build is None:
        return _cuda13_floor(ctx, target, visible, others_fix, cuda12_build)
    covered = {c: device_coverage(ctx, build, c) for c in {*target, *visible}}
    bad = [c for c in target if (cov := covered[c]) is not None and not cov.runs]
    jit = [c for c in target if (cov := covered[c]) is not None and cov.verdict == "ptx"]
    out: list[Finding] = []
    if bad:
        out.append(_unsupported(ctx, build, bad, visible, covered, others_fix, cuda12_build))
    if jit:
        out.append(_jit_note(ctx, build, jit, covered))
    return out


# --------------------------------------------------------------------------------------------------
# No kernels
# --------------------------------------------------------------------------------------------------
def _unsupported(ctx: Ctx, build: BuildKernels, bad: Sequence[CudaDevice], visible: Sequence[CudaDevice],
                 covered: dict[CudaDevice, Coverage | None],
                 others_fix: Callable[[Sequence[CudaDevice], Sequence[CudaDevice]], str | None],
                 cuda12_build: Callable[[], str | None]) -> Finding:
    ort = ctx.env.ort
    drv = ctx.env.driver
    lines: list[str] = []
    fixes: list[str] = []
    for c in bad:
        cov = covered[c]
        assert cov is not None
        cc_text = f"compute capability {cov.cc[0]}.{cov.cc[1]} ({cov.sm})"
        if cov.verdict == "ptx-driver-too-old":
            lines.append(f"{describe(c)}: {cc_text}: no native code for it, and its PTX ({', '.join(cov.ptx)}, "
                         f"ISA {cov.ptx_isa}) needs a driver for CUDA >= {cov.jit_cuda} to JIT-compile; this "
                         f"driver ({drv.version or '?'}) supports CUDA {drv.cuda_version or '?'}")
            minimum = ctx.matrix.min_driver(cov.jit_cuda or "", "windows" if ctx.os_name == "windows" else "linux")
            upgrade = (f"Upgrade the driver to one for CUDA >= {cov.jit_cuda}"
                       + (f" (>= {minimum})" if minimum else "") + ": the driver JIT-compiles the PTX then")
            if upgrade not in fixes:
                fixes.append(upgrade)
        elif cov.verdict == "isolated":
            lines.append(f"{describe(c)}: {cc_text}: its only image, {', '.join(cov.sass + cov.ptx)}, is in kernels "
                         f"built for {cov.cc[0]}.{cov.cc[1]} alone; the build's general kernels have none for it "
                         "(read from how the fatbin groups its kernels: the smoke session tells for sure)")
        else:
            lines.append(f"{describe(c)}: {cc_text}: no kernel image for it")
    name = ort.active or ORT_GPU
    lines.append(f"{name} {ort.version or '?'} carries {build.describe()} ({build.where}).")
    lines.append(_why(build, [covered[c] for c in bad]))
    floor = [c for c in bad if (cov := covered[c]) is not None and cov.cc < CUDA13_FLOOR]
    if floor and ctx.cuda_major is not None and ctx.cuda_major >= 13:
        lines.append(f"CUDA {ctx.cuda_major} dropped Maxwell, Pascal and Volta (compute capability < 7.5): no "
                     f"CUDA {ctx.cuda_major} build has kernels for them.")
    lines.append(_NO_KERNEL)
    ccs = list(dict.fromkeys(cov.cc for c in bad if (cov := covered[c]) is not None))
    for cc in ccs:
        fixes += [f for f in _release_fixes(ctx, cc) if f not in fixes]
    known = any(_candidates(ctx, cc) for cc in ccs)
    if floor and not known and ctx.cuda_major and ctx.cuda_major >= 13:
        cu12 = cuda12_build()
        if cu12:
            fixes.append(f"Install a CUDA 12 build (with a CUDA 12 driver stack): {cu12}  (its architectures are "
                         "not in the matrix: run `ortdoctor check` after installing)")
    archs = ";".join(dict.fromkeys(cmake_arch(cov.cc) for c in bad if (cov := covered[c]) is not None))
    fixes.append(f"or build onnxruntime from source for this GPU: ./build.sh --use_cuda ... --cmake_extra_defines "
                 f"CMAKE_CUDA_ARCHITECTURES={archs}  ({_BUILD_DOCS})")
    supported = [c for c in visible if c not in bad and (cov := covered.get(c)) is not None and cov.runs]
    others = others_fix(bad, supported + list(bad)) if supported else None
    if others:
        fixes.append(others)
    hard = any((cov := covered[c]) is not None and cov.verdict != "isolated" for c in bad)
    # The package steps of the fix: the best release for the GPU, when all of them share one architecture.
    best = _candidates(ctx, ccs[0]) if len(ccs) == 1 else []
    return make("gpu-arch-unsupported", "\n".join(lines), "\n".join(fixes), severity=None if hard else "warning",
                steps=best[0].steps if best else ())


def _why(build: BuildKernels, covs: Sequence[Coverage | None]) -> str:
    """Why the targets the build carries do not reach these GPUs, in NVIDIA's rules."""
    specific = [t for t in (parse_target(a) for a in build.archs) if t is not None and t.kind == "sass"
                and t.variant == "a"]
    parts = ["SASS (native code) runs only on GPUs of its own major and a minor at least its own"]
    if specific:
        parts.append(", ".join(f"{t.name} only on exactly {t.major}.{t.minor}" for t in specific))
    if any(cov is not None and cov.cc in TEGRA for cov in covs):
        parts.append("on Jetson (Tegra) GPUs only on exactly their own compute capability")
    has_ptx = any(a.startswith("compute_") for a in build.archs)
    tail = ("PTX is JIT-compiled only for architectures at or above its own" if has_ptx
            else "and there is no PTX the driver could JIT-compile")
    return "; ".join(parts) + "; " + tail + "."


def _candidates(ctx: Ctx, cc: tuple[int, int]) -> list[KernelRelease]:
    """The matrix's PyPI releases with kernels for ``cc`` on this platform, best first: those this driver
    runs, then the installed build's CUDA major, then native code, then the newest."""
    drv = ctx.env.driver
    found = ctx.matrix.kernel_releases(cc, platform=ctx.wheel_platform, driver_cuda=drv.cuda_version,
                                       glibc=ctx.glibc)
    drv_major = major_of(drv.cuda_version)

    def rank(k: KernelRelease) -> tuple[bool, bool, bool]:
        runs_here = drv_major is None or k.release.cuda_major <= drv_major
        return (not runs_here, k.release.cuda_major != ctx.cuda_major, k.coverage.verdict != "sass")

    return sorted(found, key=rank)  # stable: newest first inside each rank


def _install_line(ctx: Ctx, k: KernelRelease, lead: str) -> str:
    how = (f"native code {', '.join(k.coverage.sass)}" if k.coverage.verdict == "sass" else
           f"PTX {', '.join(k.coverage.ptx)} only, JIT-compiled at first use")
    drv_major = major_of(ctx.env.driver.cuda_version)
    needs = f"; needs a driver for CUDA {k.release.cuda_major}" if drv_major is not None and \
        k.release.cuda_major > drv_major else ""
    command = ctx.run(*k.steps) if k.steps else k.command
    return f"{lead}{command}  ({k.version}: {how}; built for CUDA {k.release.cuda}{needs})"


def _release_fixes(ctx: Ctx, cc: tuple[int, int]) -> list[str]:
    """Pip commands for the best release with kernels for ``cc`` and, when that one runs only through
    PTX, the best one with native code."""
    ordered = _candidates(ctx, cc)
    if not ordered:
        platform = wheel_platform(ctx.env.python.platform, ctx.env.python.machine)
        return [f"No onnxruntime-gpu release in the matrix carries kernels for {sm_name(cc)} ({platform} wheels)."]
    lines = [_install_line(ctx, ordered[0], f"Install a release with kernels for {sm_name(cc)}: ")]
    if ordered[0].coverage.verdict != "sass":
        native = next((k for k in ordered if k.coverage.verdict == "sass"), None)
        if native is not None:
            lines.append(_install_line(ctx, native, "or, with native code: "))
    return lines


# --------------------------------------------------------------------------------------------------
# PTX only: JIT at first use
# --------------------------------------------------------------------------------------------------
def _jit_note(ctx: Ctx, build: BuildKernels, jit: Sequence[CudaDevice],
              covered: dict[CudaDevice, Coverage | None]) -> Finding:
    ort = ctx.env.ort
    lines = []
    for c in jit:
        cov = covered[c]
        assert cov is not None
        needs = f", needs a driver for CUDA >= {cov.jit_cuda}" if cov.jit_cuda else ""
        lines.append(f"{describe(c)}: compute capability {cov.cc[0]}.{cov.cc[1]} ({cov.sm}): no native code; "
                     f"the driver JIT-compiles the PTX ({', '.join(cov.ptx)}, ISA {cov.ptx_isa or '?'}{needs})")
    lines.append(f"{ort.active or 'onnxruntime-gpu'} {ort.version or '?'} carries {build.describe()} "
                 f"({build.where}).")
    lines.append("Each process JIT-compiles the kernels it uses at first use: the first runs are slow (long for "
                 "a whole model), and the results are kept in the driver's JIT cache (~/.nv/ComputeCache, "
                 "CUDA_CACHE_PATH) up to CUDA_CACHE_MAXSIZE bytes.")
    fixes: list[str] = []
    for cc in dict.fromkeys(cov.cc for c in jit if (cov := covered[c]) is not None):
        native = next((k for k in _candidates(ctx, cc) if k.coverage.verdict == "sass"), None)
        if native is not None:
            fixes.append(_install_line(ctx, native, f"For native code on {sm_name(cc)}: "))
    fixes.append("or keep the compiled kernels cached between runs: export CUDA_CACHE_MAXSIZE=4294967296")
    return make("gpu-arch-ptx-jit", "\n".join(lines), "\n".join(fixes))


# --------------------------------------------------------------------------------------------------
# Without the build's targets: CUDA 13's floor alone
# --------------------------------------------------------------------------------------------------
def _cuda13_floor(ctx: Ctx, target: Sequence[CudaDevice], visible: Sequence[CudaDevice],
                  others_fix: Callable[[Sequence[CudaDevice], Sequence[CudaDevice]], str | None],
                  cuda12_build: Callable[[], str | None]) -> list[Finding]:
    """CUDA 13 builds have no kernels below compute capability 7.5, whatever else they carry."""
    if ctx.cuda_major is None or ctx.cuda_major < 13:
        return []

    def below(c: CudaDevice) -> tuple[int, int] | None:
        cc = parse_compute_capability(c.device.compute_capability) if c.device is not None else None
        return cc if cc is not None and cc < CUDA13_FLOOR else None

    bad = [c for c in target if below(c) is not None]
    if not bad:
        return []
    lines = []
    for c in bad:
        cc = below(c)
        assert cc is not None
        lines.append(f"{describe(c)}: CUDA {ctx.cuda_major} dropped Maxwell, Pascal and Volta (compute capability "
                     f"< 7.5); this build cannot run on {sm_name(cc)}")
    lines.append(f"(onnxruntime-gpu {ctx.env.ort.version}.) {_NO_KERNEL}")
    fixes: list[str] = []
    for cc in dict.fromkeys(cc for c in bad if (cc := below(c)) is not None):
        fixes += [f for f in _release_fixes(ctx, cc) if f.startswith(("Install", "or,")) and f not in fixes]
    if not fixes:
        cu12 = cuda12_build() or 'python -m pip install "onnxruntime-gpu<1.27"'
        fixes.append(f"Install a CUDA 12 build: {cu12} (with a CUDA 12 driver stack)")
    supported = [c for c in visible if c not in bad and c.device is not None and below(c) is None]
    others = others_fix(bad, supported + list(bad)) if supported else None
    if others:
        fixes.append(others)
    return [make("gpu-arch-unsupported", "\n".join(lines), "\n".join(fixes))]
