"""Rules about the process around the session: the search path, stub libraries, multiprocessing."""

from __future__ import annotations

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import (
    Finding,
)
from ortdoctor.diagnose.context import Ctx


def check_search_path(ctx: Ctx) -> list[Finding]:
    sys_ = ctx.env.system
    entries = sys_.windows_path if ctx.os_name == "windows" else sys_.ld_library_path
    var = "PATH" if ctx.os_name == "windows" else "LD_LIBRARY_PATH"
    lines = []
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
    if not lines:
        return []
    # The resolver refuses these directories for ortdoctor's own preloads; the process the user starts
    # still searches them, so the fix is to remove them.
    return [make("ld-library-path-unsafe", f"{var} entries:\n" + "\n".join(lines),
                 f"Remove these entries from {var} (and from the shell start-up file that adds them); "
                 f"never end {var} with ':' or use '::'")]


def check_nvidia_stubs(ctx: Ctx) -> list[Finding]:
    stubs = [w for w in ctx.env.nvidia_wheels if w.version.startswith("0.0.") and not w.sonames]
    if not stubs:
        return []
    names = " ".join(w.name for w in stubs)
    real = " ".join(w.name.removesuffix("-cu13") for w in stubs if "cudnn" not in w.name)
    return [make("nvidia-wheel-stub",
                 "Deprecated stub distributions without libraries: " + ", ".join(f"{w.name} {w.version}" for w in stubs),
                 f"pip uninstall -y {names}" + (f" && pip install {real}" if real else ""))]


def check_multiprocessing(ctx: Ctx) -> list[Finding]:
    method = ctx.env.python.multiprocessing_start_method
    if method != "fork":
        return []
    return [make("multiprocessing-fork",
                 "This Python's default multiprocessing start method is 'fork': a worker forked after the "
                 "parent created a CUDA session (or torch used the GPU) fails with CUDA failure 3.")]
