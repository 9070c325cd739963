"""Human text for ``ortdoctor preload``: what was loaded from where, with versions and the proof.

Renderers return strings; the command prints them.
"""

from __future__ import annotations

import os

from ortdoctor.core.terminal import terminal_safe
from ortdoctor.preloading.preloader import PreloadResult, SkippedLib

__all__ = ["render_env", "render_text"]

_SOURCE_WORDS = {
    "loaded": "already loaded",
    "directory": "--directory",
    "torch": "torch lib",
    "nvidia-wheel": "NVIDIA wheel",
    "conda": "conda",
    "cuda-home": "CUDA toolkit",
    "system": "system",
}


def _shorten(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home not in ("", "/") and path.startswith(home + os.sep) else path


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def render_text(result: PreloadResult, *, verbose: bool = False) -> str:
    """One block per outcome: loaded (with proof), skipped, failed, then findings with their fixes.

    The proof (the file ``/proc/self/maps`` shows) is printed only where it is not the path loaded, unless
    ``verbose``; skips that say only "not this platform" are left out unless ``verbose``."""
    lines: list[str] = []
    where = {None: "default search order", "": "NVIDIA wheels, then the system"}.get(
        result.directory, result.directory)
    head = "Would load" if result.dry_run else "Loaded"
    build = f"CUDA {result.cuda_major}, cuDNN {result.cudnn_major}" if result.cuda_major else "no CUDA build"
    lines.append(f"ortdoctor preload ({build}; {where})")
    if result.loaded:
        proven = sum(1 for x in result.loaded if x.mapped)
        proof = " (each mapped into this process, checked in /proc/self/maps)" if proven == len(result.loaded) else ""
        lines.append(f"{head}{proof}:")
        width = max(len(x.soname) for x in result.loaded)
        for x in result.loaded:
            version = x.version or "version unknown"
            src = _SOURCE_WORDS.get(x.source, x.source)
            by = f"  (by {x.loaded_by})" if x.loaded_by else ""
            lines.append(f"  ✔ {x.soname:<{width}}  {version:<12} {src:<14} {_shorten(x.path)}{by}")
            if x.already_loaded_from:
                lines.append(f"      already in the process before preload: {_shorten(x.already_loaded_from)}")
            elif x.mapped and (verbose or not _same(x.mapped, x.path)):
                lines.append(f"      mapped: {_shorten(x.mapped)} (inode {x.inode})")
    skipped = [s for s in result.skipped if verbose or not s.reason.startswith("not ")]
    if not verbose:
        # cuDNN opens its own sub-libraries on first use, from one directory: one line for those
        groups: dict[str, list[SkippedLib]] = {}
        for sk in skipped:
            groups.setdefault(sk.reason, []).append(sk)
        skipped = []
        for reason, members in groups.items():
            if len(members) > 1 and reason.startswith("cuDNN sub-library: "):
                skipped.append(SkippedLib(f"{len(members)} cuDNN sub-libraries",
                                          reason.removeprefix("cuDNN sub-library: ").replace(" it ", " them ")))
            else:
                skipped += members
    if skipped:
        lines.append("Skipped:")
        lines.extend(f"  - {s.name}: {s.reason}" for s in skipped)
    if result.failed:
        lines.append("Failed:")
        for f in result.failed:
            kind = "needed" if f.required else "loaded on demand"
            lines.append(f"  ✘ {f.soname} ({kind}): {f.error}")
            if f.searched:
                lines.append("      searched: " + ", ".join(_shorten(d) for d in f.searched[:8])
                             + (f", … ({len(f.searched) - 8} more)" if len(f.searched) > 8 else ""))
    for fd in result.findings:
        mark = {"error": "✘", "warning": "⚠"}.get(fd.severity, "ℹ")
        lines.append(f"{mark} [{fd.id}] {fd.title}")
        lines.extend(f"    {line}" for line in fd.detail.splitlines())
        if fd.fix:
            fix = fd.fix.splitlines()
            lines.append(f"    fix: {fix[0]}")
            lines.extend(f"         {line}" for line in fix[1:])
    if not result.loaded and not result.failed and not result.findings:
        lines.append("Nothing to load.")
    # paths, the loader's errors and the directory given are text from the file system: shown, not obeyed
    return terminal_safe("\n".join(lines), multiline=True) + "\n"


def render_env(result: PreloadResult) -> str:
    """The shell line that makes the chosen directories visible to other processes."""
    dirs = result.chosen_dirs()
    if not dirs:
        return "# ortdoctor: no directory to add to LD_LIBRARY_PATH\n"
    from ortdoctor.core.shell import Command, render

    return render(Command(("LD_LIBRARY_PATH", *dirs), "path")) + "\n"
