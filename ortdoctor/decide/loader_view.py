"""What the dynamic loader takes on its own, without ortdoctor's preload.

Pure functions of the inspected facts and the plan: whether a chosen file is on the loader's own
search path (``LD_LIBRARY_PATH``, the provider's RUNPATH, the ld.so cache, the default directories),
and which copy the loader would map instead. The diagnosis and the report ask these questions; they
are answered here, once.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

from ortdoctor.core.facts import Candidate, ElfInfo, Environment, LibraryPlan, Plan, SearchDir
from ortdoctor.core.record import record
from ortdoctor.decide.names import version_from_filename
from ortdoctor.formats.realpath import real_path

# os.path.normpath is a pure function of its text, and the same few dozen directories come back for every
# library of every plan (~800 calls, ~1 ms of a check): each text is normalised once.
_normpath = functools.lru_cache(maxsize=4096)(os.path.normpath)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

__all__ = [
    "SOURCE_WORDS",
    "LibraryRow",
    "LoaderPick",
    "compact_sonames",
    "default_loader_copy",
    "is_sublibrary",
    "library_row",
    "library_rows",
    "loader_dirs",
    "loader_visible",
    "same_file",
]

def compact_sonames(names: Sequence[str]) -> list[str]:
    """``libcudnn.so.9`` plus its sub-libraries as one item: the list stays readable."""
    subs = [n for n in names if n.startswith("libcudnn_")]
    rest = [n for n in names if not n.startswith("libcudnn_")]
    if len(subs) > 1:
        rest.append(f"{len(subs)} cuDNN sub-libraries")
    else:
        rest += subs
    return rest


def loader_dirs(env: Environment, os_name: str | None = None) -> set[str]:
    """Directories the dynamic loader searches on its own for the provider library's dependencies."""
    sys_ = env.system
    dirs: list[SearchDir] = list(sys_.ld_library_path) + list(sys_.default_dirs)
    if (os_name or env.python.os) == "windows":
        dirs += list(sys_.windows_path)
    out = {_normpath(d.path) for d in dirs if d.exists and not d.relative and d.path}
    provider = env.ort.cuda_provider
    if provider is not None:
        origin = os.path.dirname(provider.path)
        out.add(_normpath(origin))  # Windows: the DLL's own directory; Linux: harmless
        if isinstance(provider, ElfInfo):
            for entry in (*provider.runpath, *provider.rpath):
                out.add(_normpath(entry.replace("$ORIGIN", origin).replace("${ORIGIN}", origin)))
    return out


def loader_visible(env: Environment, soname: str, cand: Candidate, os_name: str | None = None) -> bool:
    """Whether the dynamic loader finds ``cand`` for ``soname`` on its own (no preload needed)."""
    if cand.source == "loaded":
        return True
    if cand.path in env.system.ldconfig.get(soname, ()):
        return True
    if real_path(cand.path) in env.mapped:
        return True
    return _normpath(os.path.dirname(cand.path)) in loader_dirs(env, os_name)


#: How the report names a candidate's source.
SOURCE_WORDS: dict[str, str] = {
    "loaded": "already loaded", "directory": "--directory", "torch": "torch lib", "nvidia-wheel": "NVIDIA wheel",
    "conda": "conda", "cuda-home": "CUDA toolkit", "system": "system",
}


@record
class LoaderPick:
    """The file the dynamic loader maps for a soname when nothing preloads it."""

    path: str  # as the loader opens it (the ld.so.cache entry, or directory + soname)
    version: str | None
    source: str  # the source of the same file among the plan's candidates ("system", "cuda-home", ...)
    via: str  # "LD_LIBRARY_PATH", "the CUDA provider's RUNPATH", "ld.so.cache", "default directory"
    same_as_chosen: bool


def same_file(a: str, b: str) -> bool:
    return a == b or real_path(a) == real_path(b)


def default_loader_copy(env: Environment, lp: LibraryPlan, os_name: str | None = None) -> LoaderPick | None:
    """What the dynamic loader would map for ``lp`` without a preload (Linux); None when it finds no
    copy, when it cannot be told (Windows), or when nothing was chosen.

    glibc's order for a library dlopen'd by the CUDA provider (which has a RUNPATH, so its RPATH is
    ignored): LD_LIBRARY_PATH, the provider's RUNPATH, the ld.so cache, the default directories."""
    chosen = lp.chosen
    if (os_name or env.python.os) == "windows" or chosen is None or chosen.source == "loaded":
        return None
    if real_path(chosen.path) in env.mapped:
        return None
    cands = [chosen, *(c for c in lp.candidates if c.source != "loaded")]

    def pick(c: Candidate, path: str, via: str) -> LoaderPick:
        return LoaderPick(path, c.version, c.source, via, same_file(path, chosen.path))

    cand_dirs = [(_normpath(os.path.dirname(c.path)), c) for c in cands]  # asked for every directory below

    def in_dir(d: str, via: str) -> LoaderPick | None:
        nd = _normpath(d)
        for cand_dir, c in cand_dirs:
            if cand_dir == nd:
                return pick(c, c.path, via)
        path = os.path.join(nd, lp.soname)
        if os.path.lexists(path):  # the same file reached through another directory (a symlinked one)
            for c in cands:
                if real_path(c.path) == real_path(path):
                    return pick(c, path, via)
        return None

    sys_ = env.system
    for d in sys_.ld_library_path:
        if d.exists and d.path and not d.relative and (hit := in_dir(d.path, "LD_LIBRARY_PATH")):
            return hit
    provider = env.ort.cuda_provider
    if isinstance(provider, ElfInfo):
        origin = os.path.dirname(provider.path)
        for entry in (*provider.runpath, *(() if provider.runpath else provider.rpath)):
            expanded = entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
            if os.path.isabs(expanded) and (hit := in_dir(expanded, "the CUDA provider's RUNPATH")):
                return hit
    for path in sys_.ldconfig.get(lp.soname, ())[:1]:
        for c in cands:
            if c.path == path or real_path(c.path) == real_path(path):
                return pick(c, path, "ld.so.cache")
        version = version_from_filename(real_path(path), lp.soname)
        return LoaderPick(path, version, "system", "ld.so.cache", False)
    for d in sys_.default_dirs:
        if d.exists and d.path and (hit := in_dir(d.path, "default directory")):
            return hit
    return None


# --------------------------------------------------------------------------------------------------
# The library table of a report: one row per planned library, each decision made here once
# --------------------------------------------------------------------------------------------------
if TYPE_CHECKING:
    RowStatus = Literal["ok", "warn", "fail", "info"]
    RowState = Literal["skipped", "sublibrary-absent", "other-major", "not-found", "loader-takes-other",
                       "needs-preload", "found"]
else:  # the aliases are the type checker's; at run time only their names are imported
    RowStatus = str
    RowState = str


@record
class LibraryRow:
    """What a report says about one planned library: its mark and why, decided once for every renderer."""

    plan: LibraryPlan
    status: RowStatus
    state: RowState
    loader_visible: bool | None  # the chosen file is on the loader's own search path (None: nothing chosen)
    default_loader: LoaderPick | None  # the copy the loader takes without a preload, when it is another

    @property
    def sublibrary(self) -> bool:
        return is_sublibrary(self.plan)


def is_sublibrary(lp: LibraryPlan) -> bool:
    """A cuDNN sub-library (dlopen'd by libcudnn itself; the set differs between cuDNN releases)."""
    name = lp.name.lower()
    return name.startswith(("cudnn_", "cudnn-"))


def library_row(env: Environment, lp: LibraryPlan) -> LibraryRow:
    if lp.skipped:
        return LibraryRow(lp, "info", "skipped", None, None)
    if lp.chosen is None:
        if is_sublibrary(lp) and not lp.required:  # one the provider lists in DT_NEEDED is essential
            return LibraryRow(lp, "info", "sublibrary-absent", None, None)
        essential = lp.required or lp.name.lower() == "cudnn"
        return LibraryRow(lp, "fail" if essential else "warn", "other-major" if lp.other_major else "not-found",
                          None, None)
    pick = default_loader_copy(env, lp)
    visible = loader_visible(env, lp.soname, lp.chosen)
    if pick is not None and not pick.same_as_chosen:
        # the loader finds a copy on its own, just not this one (the finding says what to do)
        same = bool(pick.version) and pick.version == lp.chosen.version
        return LibraryRow(lp, "ok" if same else "warn", "loader-takes-other", visible, pick)
    if pick is not None or visible:
        return LibraryRow(lp, "ok", "found", visible, None)
    return LibraryRow(lp, "warn", "needs-preload", visible, None)


def library_rows(env: Environment, plan: Plan | None) -> tuple[LibraryRow, ...]:
    """The report's library table (the driver's own libcuda is the driver section's, not a row)."""
    if plan is None:
        return ()
    return tuple(library_row(env, lp) for lp in plan.libraries if not lp.soname.lower().startswith("libcuda.so"))
