"""Decide which file to load for every CUDA and cuDNN library the installed onnxruntime build needs.

:func:`resolve` is a pure function of the inspected facts (:class:`~ortdoctor.core.facts.Environment`),
the matrix's library rows and a :class:`~ortdoctor.decide.search.DirIndex` (which files exist in which
candidate directory, and whether that directory is safe); without an index it lists the directories
of the search order (:mod:`ortdoctor.decide.search`) first. It works in four steps, one function each:

1. the rows: the matrix's libraries for the build's CUDA/cuDNN majors, plus anything the CUDA
   provider's ``DT_NEEDED`` names that the matrix lacks;
2. the candidates: every copy of each library along the search order (already mapped first), each
   rejected or not (current directory, unsafe directory), and the copies of other majors;
3. the choice: one coherent origin per family (the CUDA libraries; cuDNN and its sub-libraries);
4. the plan, with what the resolver itself noticed as findings.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence

from ortdoctor.core.catalog import make
from ortdoctor.core.driver_libraries import DRIVER_LIBRARIES
from ortdoctor.core.facts import Candidate, Environment, Finding, LibraryPlan, Plan, Source
from ortdoctor.core.patterns import lazy
from ortdoctor.core.shell import Command, compose
from ortdoctor.decide.build import build_majors
from ortdoctor.decide.fixes import Installer, gpu_install
from ortdoctor.decide.matrix.model import LibSpec, Matrix
from ortdoctor.decide.names import (
    canonical,
    component_stems,
    matches_loaded,
    stem_major,
    version_from_filename,
)
from ortdoctor.decide.search import DirectoryError, DirIndex, SearchTier, index_dirs, search_dirs, tier_dirs
from ortdoctor.formats.distinfo import normalize
from ortdoctor.formats.realpath import real_path
from ortdoctor.native.gate import covers, override_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ortdoctor.native.gate import Allowance

__all__ = ["DRIVER_SONAMES", "provider_needs", "resolve"]

# The libraries of the NVIDIA driver are never preloaded: they must match the kernel module.
DRIVER_SONAMES = DRIVER_LIBRARIES
# The rule; _cuda_like reads it by hand (see core/patterns.py)
_CUDA_LIKE = lazy(r"^(lib)?(cu|nvrtc|nvJitLink|cudnn)", re.IGNORECASE)
_CUDA_LIKE_PREFIXES = ("cu", "nvrtc", "nvjitlink", "libcu", "libnvrtc", "libnvjitlink")  # "cudnn" is a "cu"


def _cuda_like(name: str) -> bool:
    """``_CUDA_LIKE.match(name)``: a name of a CUDA library (cuDNN's included)."""
    if not name.isascii():  # case folding beyond ASCII ("ı" for "i"): the pattern decides
        return _CUDA_LIKE.match(name) is not None
    return name.lower().startswith(_CUDA_LIKE_PREFIXES)


class _Cand:
    """One place a library could be loaded from. A plain mutable class: ``rejected`` is set as the steps
    go (and ``dataclasses``, not otherwise imported by ``check``, would cost ~9 ms to import)."""

    __slots__ = ("origin", "path", "rank", "real", "rejected", "source", "version")

    def __init__(self, path: str, real: str, source: Source, rank: int, origin: str, version: str | None,
                 rejected: str | None = None) -> None:
        self.path = path  # the path to load (directory + soname); realpath kept for comparisons
        self.real = real
        self.source = source
        self.rank = rank  # global search position
        self.origin = origin  # coherence unit: site dir for wheels, the directory otherwise
        self.version = version
        self.rejected = rejected

    def __repr__(self) -> str:
        return f"_Cand({self.path!r}, {self.source!r}, version={self.version!r}, rejected={self.rejected!r})"


class _Work:
    """What the steps share while one plan is made."""

    __slots__ = ("cuda_major", "cudnn_major", "dir_stems", "env", "findings", "ld_stems", "needed", "specs")

    def __init__(self, env: Environment, specs: list[LibSpec], cuda_major: int, cudnn_major: int | None,
                 needed: tuple[str, ...] | None) -> None:
        self.env = env
        self.specs = specs
        self.cuda_major = cuda_major
        self.cudnn_major = cudnn_major
        self.needed = needed  # the CUDA provider's DT_NEEDED / imports, when readable
        self.findings: list[Finding] = []
        # The files of a directory and of the ld.so cache by component stem, built once per plan: each
        # library asks which other majors of its component exist, and a system directory or the cache
        # holds thousands of names.
        self.dir_stems: dict[str, dict[str, list[tuple[int, str, str]]]] = {}
        self.ld_stems: dict[str, list[tuple[int, str, tuple[str, ...]]]] | None = None

    @property
    def windows(self) -> bool:
        return self.env.python.os == "windows"

    def soname(self, spec: LibSpec) -> str:
        return (spec.windows_dll or spec.soname) if self.windows else spec.soname


def resolve(
    env: Environment,
    matrix: Matrix,
    *,
    directory: str | None = None,
    cuda: bool = True,
    cudnn: bool = True,
    cwd: str | None = None,
    allow_unsafe_dirs: Allowance = False,
    mapped: Sequence[str] = (),
    index: DirIndex | None = None,
) -> Plan:
    """Plan which file to load for each library the installed onnxruntime build needs.

    Pure given ``index``; without one, the directories are listed with :func:`index_dirs` first.
    ``mapped`` are realpaths already mapped in the process that will load (besides ``env.mapped``);
    ``cwd`` is the current directory, whose files are never candidates unless ``directory`` names it.

    Raises:
        DirectoryError: ``directory`` is a path that does not exist or cannot be resolved.
    """
    majors = build_majors(env.ort, matrix)
    if majors.cuda is None:
        return Plan(None, majors.cudnn, directory, (), ())
    w = _Work(env, list(matrix.libraries_for(majors.cuda, majors.cudnn)), majors.cuda, majors.cudnn,
              provider_needs(env, matrix, majors.cuda))
    _add_unlisted_needs(w, matrix)

    tiers = search_dirs(env, w.specs, directory=directory, cuda_major=w.cuda_major, cudnn_major=w.cudnn_major)
    if index is None:
        index = index_dirs((d for t in tiers for d in t.dirs), stems=None if w.windows else component_stems(w.specs))
    if directory:
        explicit = tiers[0].dirs[0]
        listing = index.get(explicit)
        if listing is None or not listing.exists:
            raise DirectoryError(f"directory {directory!r} does not exist (looked for {explicit})")
    _note_rejected_entries(w, tiers)

    unsafe_dirs = _unsafe_dirs(tiers, index)
    cwd_real = real_path(cwd) if cwd else None
    all_mapped = tuple(dict.fromkeys((*env.mapped, *mapped)))
    cands: dict[str, list[_Cand]] = {}
    other: dict[str, list[Candidate]] = {}
    used_unsafe: set[str] = set()
    # candidate path -> (what only the override let through, the option that did)
    allowed: dict[str, tuple[str, str]] = {}
    for s in w.specs:
        cands[s.name] = _candidates(w, s, tiers, index, all_mapped, cwd_real, unsafe_dirs,
                                    allow_unsafe_dirs, used_unsafe, allowed)
        other[s.name] = _other_majors(w, s, tiers, index)
    windows = w.env.python.os == "windows"
    for d in sorted(used_unsafe):
        chmod = Command(("chmod", "o-w", index[d].unsafe_where()))
        w.findings.append(make(
            "unsafe-library-dir",
            f"{unsafe_dirs.get(d, d)}: anyone who can write there can plant a library that runs in your process.",
            compose((chmod,), "or, if you trust it, pass --allow-unsafe-dirs", windows=windows), commands=(chmod,)))

    skip = _skip_reasons(w.specs, cuda=cuda, cudnn=cudnn)
    chosen = _choose(w, matrix, cands, skip)
    _note_allowed(w, chosen, allowed)
    libs = tuple(_library_plan(w, s, cands[s.name], chosen.get(s.name), other[s.name], skip.get(s.name))
                 for s in w.specs)
    return Plan(w.cuda_major, w.cudnn_major, directory, libs, tuple(w.findings), tier_dirs(tiers))


# --------------------------------------------------------------------------------------------------
# 1. The rows
# --------------------------------------------------------------------------------------------------
def provider_needs(env: Environment, matrix: Matrix, cuda_major: int) -> tuple[str, ...] | None:
    """What the installed CUDA provider loads before it runs: its real ``DT_NEEDED`` (or PE imports) when
    the file was read; else, for an exactly known PyPI release built for ``cuda_major`` (not a feed build
    of another major), what the matrix recorded from that release's wheel: the Linux wheel's ``DT_NEEDED``,
    on Windows the win_amd64 wheel's import table (``windows_needed``); else None (the matrix's load kinds
    decide).

    Every CUDA or cuDNN library in it is *required*: the provider cannot be loaded without it, whatever the
    library is (1.20's provider lists the cuDNN 9 sub-libraries, which libcudnn would otherwise map on
    first use)."""
    prov = env.ort.cuda_provider
    if prov is not None:
        return tuple(prov.needed) if hasattr(prov, "needed") else tuple(prov.imports)
    if not env.ort.version:
        return None
    match = matrix.release_for(env.ort.version)
    windows = env.python.os == "windows"
    needed = (match.release.windows_needed if windows else match.release.provider_needed) if match else ()
    if match is None or not match.exact or not needed or match.release.cuda_major != cuda_major:
        return None
    return needed


def _add_unlisted_needs(w: _Work, matrix: Matrix) -> None:
    """A CUDA library the provider's real DT_NEEDED names that the matrix lacks for this build is searched
    for anyway, so a newer build's needs are never silently ignored: with another major's row for the same
    file where the matrix has one (its directories and package), else by name alone."""
    if w.needed is None:
        return
    known = {(s.windows_dll or "").lower() if w.windows else s.soname for s in w.specs}
    elsewhere = {(s.windows_dll or "").lower() if w.windows else s.soname: s
                 for major in matrix.cuda_majors for s in matrix.libraries_for(major, None)}
    path = getattr(w.env.ort.cuda_provider, "path", "the CUDA provider")
    unlisted: list[str] = []
    for n in w.needed:
        key = n.lower() if w.windows else n
        if key in known or n in DRIVER_SONAMES or n.lower() in DRIVER_SONAMES or not _cuda_like(n):
            continue
        row = elsewhere.get(key)
        if row is None:
            sm = stem_major(n)
            name = sm[0].removeprefix("lib").removesuffix(".so") if sm else n
            row = LibSpec(name, n, n if w.windows else None, "required", None, (), ())
        w.specs.append(row)
        known.add(key)
        unlisted.append(n)
    if unlisted:
        names = ", ".join(unlisted)
        what = (f"has no rows for CUDA {w.cuda_major}" if w.cuda_major not in matrix.cuda_majors
                else f"does not list {names} for CUDA {w.cuda_major}")
        w.findings.append(make(
            "matrix-missing-library", f"{path} lists {names} as needed; the compatibility matrix {what}. "
            "They were searched for anyway.",
            title=f"the CUDA provider needs {names}, which the matrix does not list for this build"))


# --------------------------------------------------------------------------------------------------
# 2. The candidates
# --------------------------------------------------------------------------------------------------
def _note_rejected_entries(w: _Work, tiers: Sequence[SearchTier]) -> None:
    reasons = list(dict.fromkeys(reason for t in tiers if t.source == "system" for _e, reason in t.rejected))
    if reasons:
        w.findings.append(make(
            "ld-library-path-unsafe-entry",
            f"{'; '.join(reasons)}. ortdoctor never loads from them, but the dynamic loader searches them for "
            "every library a program loads by name."))


def _unsafe_dirs(tiers: Sequence[SearchTier], index: DirIndex) -> dict[str, str]:
    """Directory-level safety (the directory and every directory above it), once per directory."""
    out: dict[str, str] = {}
    for t in tiers:
        for d in t.dirs:
            lst = index.get(d)
            if lst is None or not lst.exists or d in out:
                continue
            why = lst.unsafe()
            if why is not None:
                out[d] = why
    return out


def _files(w: _Work, files: Mapping[str, str]) -> Mapping[str, str]:
    return {k.lower(): v for k, v in files.items()} if w.windows else files


def _candidates(w: _Work, s: LibSpec, tiers: Sequence[SearchTier], index: DirIndex, mapped: Sequence[str],
                cwd_real: str | None, unsafe_dirs: Mapping[str, str], allow_unsafe: Allowance,
                used_unsafe: set[str], allowed: dict[str, tuple[str, str]]) -> list[_Cand]:
    """Every copy of ``s`` in search order, the already-mapped ones first, each once (by realpath)."""
    soname = w.soname(s)
    key = soname.lower() if w.windows else soname
    out = [_Cand(p, p, "loaded", -1, p, version_from_filename(p, soname)) for p in mapped
           if matches_loaded(p, soname)]
    rank = 0
    seen_real: set[str] = set()
    for t in tiers:
        site = t.origin if t.source == "nvidia-wheel" else None
        for d in t.dirs:
            rank += 1
            lst = index.get(d)
            if lst is None or not lst.exists:
                continue
            real = _files(w, lst.files).get(key)
            if real is None or real in seen_real:
                continue  # absent, or the same file reached again through another tier
            seen_real.add(real)
            c = _Cand(_join(w, d, soname), real, t.source, rank, site or d,
                      _wheel_version(w.env, s, d, site) or version_from_filename(real, soname))
            if cwd_real and lst.realpath == cwd_real and t.source != "directory":
                c.rejected = "in the current directory"
            elif cwd_real and site is not None and real_path(site) == cwd_real:
                # PYTHONPATH=. (or the '' entry of `python -c`) makes the current directory a site
                # directory: a wheel tree under it is the current directory's, not an installation
                c.rejected = "in a site directory that is the current directory"
            elif why := unsafe_dirs.get(d) or lst.unsafe_files.get(key):
                if covers(allow_unsafe, real):
                    allowed[c.path] = (why, override_name(allow_unsafe, real))
                else:
                    c.rejected = why
                    used_unsafe.add(d)
            out.append(c)
    return out


def _note_allowed(w: _Work, chosen: Mapping[str, _Cand | None], allowed: Mapping[str, tuple[str, str]]) -> None:
    """The override is never silent: each chosen file it alone let through is named, with the option
    (``--allow-unsafe-dirs``, or the ``--allow-unsafe-dir DIR`` whose scope holds it)."""
    let = [(c.path, *allowed[c.path]) for c in chosen.values() if c is not None and c.path in allowed]
    if let:
        options = " and ".join(dict.fromkeys(option for _path, _why, option in let))
        w.findings.append(make(
            "unsafe-dir-allowed", "; ".join(f"{path} ({why})" for path, why, _option in let)
            + f". Only {options} let these through: anyone who can write there can run code in "
            "this process."))


def _other_majors(w: _Work, s: LibSpec, tiers: Sequence[SearchTier], index: DirIndex) -> list[Candidate]:
    """Files of the same component for another major (libcudart.so.12 beside a CUDA 13 build)."""
    soname = w.soname(s)
    want = stem_major(soname)
    if want is None:
        return []
    out: list[Candidate] = []
    for t in tiers:
        for d in t.dirs:
            lst = index.get(d)
            if lst is None or not lst.exists:
                continue
            stems = w.dir_stems.get(d)
            if stems is None:
                stems = w.dir_stems[d] = _by_stem((name, real) for name, real in sorted(_files(w, lst.files).items())
                                                  if name == canonical(name))
            for major, name, real in stems.get(want[0], ()):
                if major != want[1]:
                    out.append(Candidate(_join(w, d, name), t.source, version_from_filename(real, name),
                                         _other_major_reason(s.name, major, w.cuda_major, w.cudnn_major)))
    if not w.windows:
        if w.ld_stems is None:
            # Only the specs' components are looked up, and a name's stem is its own beginning (lower-cased
            # for a DLL): the ~500 other names of the cache are passed over without parsing.
            wanted = tuple({sm[0] for spec in w.specs if (sm := stem_major(w.soname(spec))) is not None})
            w.ld_stems = _by_stem((name, paths) for name, paths in w.env.system.ldconfig.items()
                                  if name.lower().startswith(wanted))
        for major, name, paths in w.ld_stems.get(want[0], ()):
            if major != want[1]:
                out.extend(Candidate(p, "system", None, f"{name} (ld.so.cache) is for another major, build needs "
                                                        f"{soname}")
                           for p in paths if all(o.path != p for o in out))
    return out


if TYPE_CHECKING:
    _V = TypeVar("_V")


def _by_stem(items: Iterable[tuple[str, _V]]) -> dict[str, list[tuple[int, str, _V]]]:
    """``(name, value)`` pairs grouped by component stem, in their order, with each name's major."""
    out: dict[str, list[tuple[int, str, _V]]] = {}
    for name, value in items:
        sm = stem_major(name)
        if sm:
            out.setdefault(sm[0], []).append((sm[1], name, value))
    return out


def _other_major_reason(name: str, major: int, cuda_major: int, cudnn_major: int | None) -> str:
    if name == "cudnn" or name.startswith("cudnn"):
        return f"cuDNN {major} file, build needs cuDNN {cudnn_major}"
    if name == "cufft":  # cuFFT's major is one below CUDA's since CUDA 12 (libcufft.so.11 = CUDA 12)
        return f"CUDA {major + 1} file (cuFFT {major}), build needs CUDA {cuda_major}"
    return f"CUDA {major} file, build needs CUDA {cuda_major}"


def _join(w: _Work, base: str, rel: str) -> str:
    if w.windows:
        return base.rstrip("\\/") + "\\" + rel.replace("/", "\\")
    return os.path.normpath(os.path.join(base, rel))


def _wheel_version(env: Environment, spec: LibSpec, directory: str, site: str | None) -> str | None:
    if spec.package is None:
        return None
    want = normalize(spec.package)
    for wheel in env.nvidia_wheels:
        if normalize(wheel.name) != want:
            continue
        if (site and os.path.normpath(wheel.location) == os.path.normpath(site)) or directory in wheel.lib_dirs:
            return wheel.version
    return None


# --------------------------------------------------------------------------------------------------
# 3. The choice
# --------------------------------------------------------------------------------------------------
def _is_sub(spec: LibSpec) -> bool:
    return spec.sublibrary_of is not None


def _skip_reasons(specs: Sequence[LibSpec], *, cuda: bool, cudnn: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in specs:
        is_cudnn = s.name == "cudnn" or s.sublibrary_of == "cudnn" or s.name.startswith("cudnn")
        if is_cudnn and not cudnn:
            out[s.name] = "--no-cudnn"
        elif not is_cudnn and not cuda:
            out[s.name] = "--no-cuda"
    return out


def _best_origin(active: Sequence[LibSpec], cands: Mapping[str, list[_Cand]]) -> str | None:
    """The origin that holds most of the family. Main libraries count for more than sub-libraries, so a
    complete cuDNN wins over loose sub-libraries; ties go to the earlier place in the search order."""
    weights: dict[str, tuple[int, int]] = {}
    for s in active:
        ok = [c for c in cands[s.name] if c.rejected is None and c.source != "loaded"]
        for origin in dict.fromkeys(c.origin for c in ok):
            first = min(c.rank for c in ok if c.origin == origin)
            n, rank = weights.get(origin, (0, first))
            weights[origin] = (n - (1 if _is_sub(s) else 100), min(rank, first))
    return min(weights, key=weights.__getitem__) if weights else None


def _choose(w: _Work, matrix: Matrix, cands: Mapping[str, list[_Cand]],
            skip: Mapping[str, str]) -> dict[str, _Cand | None]:
    """One coherent origin per family: the CUDA libraries; cuDNN and its sub-libraries."""
    chosen: dict[str, _Cand | None] = {}
    groups: dict[str, list[LibSpec]] = {"cuda": [], "cudnn": []}
    for s in w.specs:
        groups["cudnn" if (s.name == "cudnn" or s.sublibrary_of) else "cuda"].append(s)
    for gname, members in groups.items():
        active = [s for s in members if s.name not in skip]
        best = _best_origin(active, cands)
        for s in members:
            if s.name in skip:
                chosen[s.name] = None
                continue
            # Already mapped wins (the loader would reuse it anyway); then an explicit --directory.
            forced = [c for c in cands[s.name] if c.source == "loaded"] or [
                c for c in cands[s.name] if c.source == "directory" and c.rejected is None]
            ok = [c for c in cands[s.name] if c.rejected is None]
            chosen[s.name] = forced[0] if forced else next((c for c in ok if c.origin == best), ok[0] if ok else None)
        _note_mixed_sources(w, matrix, gname, active, chosen)
    return chosen


def _note_mixed_sources(w: _Work, matrix: Matrix, gname: str, active: Sequence[LibSpec],
                        chosen: Mapping[str, _Cand | None]) -> None:
    origins = {c.origin for s in active if (c := chosen.get(s.name)) is not None and c.source != "loaded"}
    if len(origins) <= 1:
        return
    pairs = [("cublas", "cublasLt")] if gname == "cuda" else [("cudnn", s.name) for s in active if _is_sub(s)]
    split = [(a, b) for a, b in pairs
             if (ca := chosen.get(a)) is not None and (cb := chosen.get(b)) is not None and ca.origin != cb.origin]
    detail = "; ".join(f"{s.name} from {c.path}" for s in active if (c := chosen.get(s.name)))
    if split:
        a, b = split[0]
        steps = (gpu_install(matrix, w.env.ort.version),)
        w.findings.append(make(
            "lib-sources-mixed",
            f"No single location has the whole set: {detail}. Libraries of one family must come from one release.",
            Installer.of(w.env.python).fix(steps, "installs the matching NVIDIA wheels in one environment")[0],
            title=f"{a} and {b} would come from different places", steps=steps,
            commands=Installer.of(w.env.python).lines(steps)))
    else:
        family = "CUDA" if gname == "cuda" else "cuDNN"
        w.findings.append(make("lib-sources-mixed", f"No single location has all of them: {detail}.", "",
                               severity="info", title=f"the {family} libraries come from more than one place"))


# --------------------------------------------------------------------------------------------------
# 4. The plan
# --------------------------------------------------------------------------------------------------
def _library_plan(w: _Work, s: LibSpec, cands: Sequence[_Cand], pick: _Cand | None, other: Sequence[Candidate],
                  skipped: str | None) -> LibraryPlan:
    soname = w.soname(s)
    if w.needed is not None:
        # what the provider really lists in DT_NEEDED decides, not the matrix's default; a cuDNN
        # sub-library it lists is as required as any other (it must be loadable before the provider)
        required = soname.lower() in {n.lower() for n in w.needed} if w.windows else soname in w.needed
    else:
        required = s.load == "required"
    # Acceptable alternatives keep rejected=None (facts.Candidate's contract): the diagnosis compares
    # their versions with the chosen one to find conflicting copies.
    return LibraryPlan(
        name=s.name, soname=soname, required=required,
        chosen=None if pick is None else Candidate(pick.path, pick.source, pick.version, None),
        candidates=tuple(Candidate(c.path, c.source, c.version, c.rejected) for c in cands),
        other_major=tuple(other), skipped=skipped,
    )
