"""What every rule family of the diagnosis shares: the context of one diagnosis and small helpers."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ortdoctor.core.facts import (
    Environment,
    OrtDistribution,
    PackageStep,
    Plan,
)
from ortdoctor.core.finding_ids import FindingId
from ortdoctor.core.patterns import lazy
from ortdoctor.core.record import record
from ortdoctor.core.shell import Command
from ortdoctor.decide.fixes import Installer, search_path
from ortdoctor.decide.matrix.model import parse_glibc, wheel_platform
from ortdoctor.decide.names import major_of
from ortdoctor.formats.distinfo import normalize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from ortdoctor.decide.matrix.model import Matrix, ReleaseMatch


# Dependencies the CUDA feeds do not carry: pip must find them on PyPI before --index-url points elsewhere.
FEED_PREREQS = ("flatbuffers", "numpy", "packaging", "protobuf", "sympy")
# Resolver findings that say less than a diagnosis finding about the same thing: dropped when it fires.
SUPERSEDED: dict[FindingId, FindingId] = {"ld-library-path-unsafe-entry": "ld-library-path-unsafe", "lib-sources-mixed": "lib-multiple-copies"}
# Free memory below this (MiB) leaves too little for an arena plus cuDNN workspaces.
LOW_MEMORY_MIB = 1024
# NVML compute modes that refuse a new CUDA context (always, or while another process holds one).
RESTRICTED_MODES: dict[str, FindingId] = {"prohibited": "gpu-compute-mode-prohibited", "exclusive-process": "gpu-compute-mode-exclusive",
                     "exclusive-thread": "gpu-compute-mode-exclusive"}
CUDA_SONAME = lazy(r"^(?:lib(cudart|cublasLt|cublas|cufft|curand|nvrtc|cudnn)\.so\.(\d+)"
                    r"|(cudart|cublasLt|cublas|cufft|curand|nvrtc)64_(\d+)\.dll)", re.IGNORECASE)
DATACENTER_HINTS = ("Tesla", "A100", "A30", "A10", "A40", "H100", "H200", "H800", "B100", "B200", "GH200",
                     "GB200", "L4", "L40", "V100", "T4", "A2", "A16")


def cuda_soname(name: str) -> re.Match[str] | None:
    """``CUDA_SONAME.match(name)``. Every such name holds "cu" or "nvrtc" (in any case), and most names
    a check reads hold neither (the pybind module links libstdc++ and the like): those do not cost a
    compiled pattern."""
    low = name.lower()
    return CUDA_SONAME.match(name) if "cu" in low or "nvrtc" in low else None


@record
class Ctx:
    env: Environment
    plan: Plan | None
    matrix: Matrix
    os_name: str
    device_id: int
    match: ReleaseMatch | None
    gpu_build: bool
    cuda_major: int | None
    all_devices: bool = False  # check every visible GPU, not only device_id's
    device_order: str | None = None  # CUDA_DEVICE_ORDER

    @property
    def installer(self) -> Installer:
        """How the fixes run pip: the inspected interpreter's, never a bare ``pip``."""
        return Installer.of(self.env.python)

    def run(self, *steps: PackageStep) -> str:
        """The package steps as the one command line a fix prints."""
        return self.installer.commands(steps)

    @property
    def wheel_platform(self) -> str:
        """The PyPI wheel platform of the inspected Python (``linux_aarch64``): the wheels a pin may name."""
        return wheel_platform(self.env.python.platform, self.env.python.machine)

    @property
    def glibc(self) -> tuple[int, int] | None:
        """The C library's glibc version, which a wheel's manylinux floor must not exceed; None elsewhere."""
        return parse_glibc(self.env.python.libc)


def vtuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def build_cuda_major(env: Environment, plan: Plan | None, match: ReleaseMatch | None) -> int | None:
    if plan is not None and plan.cuda_major:
        return plan.cuda_major
    major = major_of(env.ort.cuda_version)
    if major is None and match is not None:
        major = major_of(match.release.cuda)
    return major


def ort_family(ort: Any) -> list[OrtDistribution]:
    """Distributions that own `onnxruntime/` itself (genai and other siblings have their own package)."""
    return [d for d in ort.distributions if not normalize(d.name).startswith(("onnxruntime-genai", "onnxruntime-extensions"))]


def search_path_entries(ctx: Ctx) -> tuple[list[str], list[str]]:
    """LD_LIBRARY_PATH (PATH on Windows): the entries that are safe to keep, and a line for each unsafe one
    (empty, relative, world-writable, another user's). One reading for the finding that reports them and
    for every fix that prints the variable, so no fix carries an unsafe entry along."""
    sys_ = ctx.env.system
    entries = sys_.windows_path if ctx.os_name == "windows" else sys_.ld_library_path
    lines: list[str] = []
    keep: list[str] = []
    for d in entries:
        why = []
        if d.path == "" or (d.note and "empty" in d.note):
            why.append("empty entry: the loader searches the current directory")
        elif d.relative:
            why.append("relative: resolved against whatever the current directory is")
        if d.world_writable:
            why.append("world-writable: any user can plant a library here")
        if d.foreign_owner:
            why.append("owned by another user")
        if why:
            lines.append(f"{d.path or '(empty)'}: " + "; ".join(why))
        elif d.path not in keep:
            keep.append(d.path)
    return keep, lines


def search_path_line(ctx: Ctx, dirs: Sequence[str]) -> Command:
    """The shell line that puts ``dirs`` first on the loader's path: the current value appended, or, when it
    holds unsafe entries, only its safe ones (written out). Rendered by :mod:`ortdoctor.core.shell`."""
    keep, unsafe = search_path_entries(ctx)
    variable = "PATH" if ctx.os_name == "windows" else "LD_LIBRARY_PATH"
    if unsafe:
        return search_path(variable, [*dirs, *(k for k in keep if k not in dirs)], keep=False)
    return search_path(variable, dirs)
