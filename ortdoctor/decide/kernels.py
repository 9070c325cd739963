"""Whether a GPU can run a CUDA build's kernels, from the architectures the build carries.

A build's device code is a list of targets (read from its fatbin headers, :mod:`ortdoctor.formats.fatbin`,
or from the compatibility matrix): SASS ``sm_XY`` (machine code) and PTX ``compute_XY`` (virtual code the
driver JIT-compiles), each possibly with an ``a`` (architecture-specific) or ``f`` (family) suffix. A
GPU of compute capability M.m runs the build when

* there is SASS for the same major M with a minor <= m: a cubin runs on the later minors of its major
  ("a cubin generated for compute capability 8.6 is supported to run on a GPU with compute capability
  8.9", https://docs.nvidia.com/cuda/ada-compatibility-guide/index.html#application-compatibility-on-the-nvidia-ada-gpu-architecture),
  except ``sm_XYa``, which runs on exactly M.m, and except on Tegra GPUs (Jetson), where a cubin runs
  only on its own compute capability ("Unlike NVIDIA dGPUs, where a SASS binary is guaranteed to run on a
  later GPU minor revision, such a guarantee isn't provided on Tegra",
  https://threedots.ovh/blog/2022/04/cuda-on-nvidia-jetson-just-not-the-same/); ``sm_XYf`` runs on its
  family: the same major, minor >= its own (``sm_100f`` on 10.0 and 10.3);
* or there is PTX for an architecture <= M.m (``compute_XYa`` for exactly M.m, ``compute_XYf`` for its
  family) that this driver can JIT-compile: the PTX ISA version of the code must be one the driver's CUDA
  version knows (the ISA -> CUDA table below). JIT-compiling a whole provider library takes minutes on
  the first run; the driver caches the result (``CUDA_CACHE_MAXSIZE``, ``CUDA_CACHE_PATH``).

Otherwise CUDA fails at the first kernel launch with ``cudaErrorNoKernelImageForDevice`` ("no kernel
image is available for execution on the device"): after the session was created, at the first Relu,
Slice or Cast.

Everything here is pure: strings and tuples in, a :class:`Coverage` out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ortdoctor.core.patterns import lazy
from ortdoctor.core.record import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

__all__ = [
    "CUDA_FLOOR",
    "PTX_ISA_CUDA",
    "PTX_ISA_SOURCE",
    "TEGRA",
    "Coverage",
    "Target",
    "cmake_arch",
    "coverage",
    "describe_archs",
    "parse_compute_capability",
    "parse_target",
    "ptx_isa_cuda",
    "sm_name",
]

#: Where :data:`PTX_ISA_CUDA` comes from.
PTX_ISA_SOURCE = "https://docs.nvidia.com/cuda/parallel-thread-execution/#release-notes-ptx-release-history"

#: PTX ISA version -> the CUDA version that introduced it (NVIDIA's PTX release history, PTX_ISA_SOURCE).
#: A driver JIT-compiles PTX up to the ISA of the CUDA version it supports (NVML's CUDA driver version):
#: PTX 8.7 from a CUDA 12.8 build needs a driver for CUDA >= 12.8. (CUDA 12.6 still writes ISA 8.5.)
PTX_ISA_CUDA: dict[tuple[int, int], tuple[int, int]] = {
    (6, 0): (9, 0), (6, 1): (9, 1), (6, 2): (9, 2), (6, 3): (10, 0), (6, 4): (10, 1), (6, 5): (10, 2),
    (7, 0): (11, 0), (7, 1): (11, 1), (7, 2): (11, 2), (7, 3): (11, 3), (7, 4): (11, 4), (7, 5): (11, 5),
    (7, 6): (11, 6), (7, 7): (11, 7), (7, 8): (11, 8),
    (8, 0): (12, 0), (8, 1): (12, 1), (8, 2): (12, 2), (8, 3): (12, 3), (8, 4): (12, 4), (8, 5): (12, 5),
    (8, 6): (12, 7), (8, 7): (12, 8), (8, 8): (12, 9),
    (9, 0): (13, 0), (9, 1): (13, 1),
}

#: Compute capabilities of Tegra (Jetson) GPUs, where SASS runs only on its own compute capability:
#: 5.3 (TX1, Nano), 6.2 (TX2), 7.2 (Xavier), 8.7 (Orin).
TEGRA: frozenset[tuple[int, int]] = frozenset({(5, 3), (6, 2), (7, 2), (8, 7)})

#: The oldest compute capability each CUDA major can build for: CUDA 12 dropped Kepler, CUDA 13 dropped
#: Maxwell, Pascal and Volta (the CUDA 12.0 and 13.0 release notes, https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/).
#: No build of that major has kernels for an older GPU, whatever the matrix knows of it.
CUDA_FLOOR: dict[int, tuple[int, int]] = {12: (5, 0), 13: (7, 5)}

if TYPE_CHECKING:
    Kind = Literal["sass", "ptx"]
    Variant = Literal["", "a", "f"]
    Verdict = Literal["sass", "ptx", "ptx-driver-too-old", "isolated", "none"]
else:  # the aliases are the type checker's; at run time only their names are imported
    Kind = str
    Variant = str
    Verdict = str

_TARGET_RE = lazy(r"(sm|compute)_(\d{2,3})([af]?)")


@record(order=True)
class Target:
    """One kernel target as nvcc's ``-gencode`` spells it: ``sm_90a`` (SASS) or ``compute_90`` (PTX)."""

    major: int
    minor: int
    kind: Kind
    variant: Variant
    name: str


def parse_target(name: str) -> Target | None:
    """``"sm_90a"`` -> Target(9, 0, "sass", "a"); ``"compute_120"`` -> Target(12, 0, "ptx", ""); else None."""
    m = _TARGET_RE.fullmatch(name.strip().lower())
    if m is None:
        return None
    number = int(m.group(2))
    kind: Kind = "sass" if m.group(1) == "sm" else "ptx"
    variant: Variant = "a" if m.group(3) == "a" else "f" if m.group(3) == "f" else ""
    return Target(number // 10, number % 10, kind, variant, f"{m.group(1)}_{number}{m.group(3)}")


def parse_compute_capability(text: str | None) -> tuple[int, int] | None:
    """A compute capability from ``"9.0"``, ``"10.0"``, ``"sm_100"``, ``"sm100"``, ``"100"`` or ``"90"``;
    None when the text is none of these."""
    t = (text or "").strip().lower()
    m = re.fullmatch(r"(\d{1,2})\.(\d)", t)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.fullmatch(r"(?:sm_?|compute_?)?(\d{2,3})[af]?", t)
    if m:
        number = int(m.group(1))
        return number // 10, number % 10
    return None


def sm_name(cc: tuple[int, int]) -> str:
    """(10, 0) -> ``"sm_100"``."""
    return f"sm_{cc[0]}{cc[1]}"


def cmake_arch(cc: tuple[int, int]) -> str:
    """The ``CMAKE_CUDA_ARCHITECTURES`` value for a compute capability: (10, 0) -> ``"100"``."""
    return f"{cc[0]}{cc[1]}"


def ptx_isa_cuda(isa: str | None) -> tuple[int, int] | None:
    """The CUDA version that introduced a PTX ISA (``"8.7"`` -> (12, 8)); None when unknown."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", isa or "")
    if m is None:
        return None
    return PTX_ISA_CUDA.get((int(m.group(1)), int(m.group(2))))


def _version(text: str | None) -> tuple[int, int] | None:
    m = re.match(r"\s*(\d+)(?:\.(\d+))?", text or "")
    return (int(m.group(1)), int(m.group(2) or 0)) if m else None


def _sass_runs(t: Target, cc: tuple[int, int], tegra: bool) -> bool:
    if t.major != cc[0]:
        return False
    if t.variant == "a" or tegra:
        return t.minor == cc[1]
    return t.minor <= cc[1]  # plain: binary compatibility inside a major; "f": its family, the same rule


def _ptx_jits(t: Target, cc: tuple[int, int]) -> bool:
    if t.variant == "a":
        return (t.major, t.minor) == cc
    if t.variant == "f":
        return t.major == cc[0] and t.minor <= cc[1]
    return (t.major, t.minor) <= cc


@record
class Coverage:
    """How one GPU runs a build's kernels (see :func:`coverage`)."""

    cc: tuple[int, int]
    # "sass": native code; "ptx": JIT at first use; "ptx-driver-too-old"; "isolated": only targets that the
    # build's general kernels lack (see coverage()); "none"
    verdict: Verdict
    sass: tuple[str, ...] = ()  # the SASS targets that run on this GPU
    ptx: tuple[str, ...] = ()  # the PTX targets that could be JIT-compiled for it
    ptx_isa: str | None = None  # the PTX's ISA version ("8.2")
    jit_cuda: str | None = None  # the CUDA version a driver must support to JIT that ISA ("12.2")

    @property
    def sm(self) -> str:
        return sm_name(self.cc)

    @property
    def runs(self) -> bool:
        """True when the GPU runs the build: natively, or through PTX this driver can JIT."""
        return self.verdict in ("sass", "ptx")


def coverage(cc: tuple[int, int], archs: Iterable[str], *, ptx_isa: str | None = None,
             driver_cuda: str | None = None, tegra: bool | None = None, isolated: Iterable[str] = ()) -> Coverage:
    """Whether a GPU of compute capability ``cc`` runs code built for ``archs``.

    Args:
        cc: the GPU's compute capability, (9, 0) for 9.0.
        archs: the build's targets, ``sm_XY[a|f]`` and ``compute_XY[a|f]``; other strings are ignored.
        ptx_isa: the PTX ISA version of the build's PTX (``"8.2"``); None when unknown or without PTX.
        driver_cuda: the highest CUDA version the driver supports (NVML, ``"13.0"``); None when unknown,
            which gives PTX the benefit of the doubt.
        tegra: the GPU is a Tegra (Jetson) one, where SASS runs only on its own compute capability;
            default: ``cc`` is one of :data:`TEGRA`.
        isolated: targets of ``archs`` found only in fatbin containers that hold nothing but
            arch-specific targets: kernels written for one GPU alone (Hopper-only GEMMs). A GPU that only
            they reach has no image for the build's other kernels: verdict ``"isolated"``. (The Windows
            wheels of 1.29-1.31 carry sm_90a only so.)
    """
    archs = list(archs)
    every = _coverage(cc, archs, ptx_isa, driver_cuda, cc in TEGRA if tegra is None else tegra)
    lone = {a.strip().lower() for a in isolated}
    if not lone or not every.runs:
        return every
    general = _coverage(cc, [a for a in archs if a.strip().lower() not in lone], ptx_isa, driver_cuda,
                        cc in TEGRA if tegra is None else tegra)
    if general.verdict != "none":
        return general
    return Coverage(cc, "isolated", every.sass, every.ptx, every.ptx_isa, every.jit_cuda)


def _coverage(cc: tuple[int, int], archs: Iterable[str], ptx_isa: str | None, driver_cuda: str | None,
              is_tegra: bool) -> Coverage:
    targets = sorted({t for t in (parse_target(a) for a in archs) if t is not None})
    sass = tuple(t.name for t in targets if t.kind == "sass" and _sass_runs(t, cc, is_tegra))
    ptx = tuple(t.name for t in targets if t.kind == "ptx" and _ptx_jits(t, cc))
    needs = ptx_isa_cuda(ptx_isa) if ptx else None
    jit_cuda = f"{needs[0]}.{needs[1]}" if needs else None
    if sass:
        return Coverage(cc, "sass", sass, ptx, ptx_isa if ptx else None, jit_cuda)
    if not ptx:
        return Coverage(cc, "none")
    have = _version(driver_cuda)
    if needs is not None and have is not None and have < needs:
        return Coverage(cc, "ptx-driver-too-old", (), ptx, ptx_isa, jit_cuda)
    return Coverage(cc, "ptx", (), ptx, ptx_isa, jit_cuda)


def describe_archs(archs: Iterable[str], ptx_isa: str | None = None) -> str:
    """``"SASS sm_75, sm_80, sm_90a; PTX compute_90 (ISA 8.2, CUDA 12.2)"`` / ``"...; no PTX"``."""
    targets = sorted({t for t in (parse_target(a) for a in archs) if t is not None})
    sass = [t.name for t in targets if t.kind == "sass"]
    ptx = [t.name for t in targets if t.kind == "ptx"]
    parts = [f"SASS {', '.join(sass)}" if sass else "no SASS"]
    if ptx:
        needs = ptx_isa_cuda(ptx_isa)
        isa = f" (ISA {ptx_isa}" + (f", CUDA {needs[0]}.{needs[1]}" if needs else "") + ")" if ptx_isa else ""
        parts.append(f"PTX {', '.join(ptx)}{isa}")
    else:
        parts.append("no PTX")
    return "; ".join(parts)
