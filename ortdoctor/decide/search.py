"""Where to look for each library, in order, and what each directory holds.

The search order (the same for every library, so one source can serve the whole set), a tuple of tier
functions, first hit wins:

``directory`` (explicit) -> ``torch`` (its ``lib`` dir, only when its CUDA and cuDNN majors match the
build) -> ``nvidia-wheel`` (every site directory, both wheel layouts) -> ``conda`` -> ``cuda-home``
(CUDA_HOME, CUDA_PATH, CUDNN_PATH) -> ``system`` (LD_LIBRARY_PATH, the ld.so cache, the default
directories). What is already mapped in the process comes before all of them (the resolver's job).

``directory`` follows ``onnxruntime.preload_dlls``: ``None`` is the whole order, ``""`` is the NVIDIA
wheels then the system, a path is that directory then the system.

:func:`search_dirs` is pure; :func:`index_dirs` is the one place that lists directories.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence

from ortdoctor.core.facts import Environment, Source
from ortdoctor.core.record import field, record, replace
from ortdoctor.decide.matrix.model import LibSpec
from ortdoctor.decide.names import component_stems, major_of, stem_major
from ortdoctor.formats.realpath import real_path
from ortdoctor.native.gate import Judge

__all__ = ["DirIndex", "DirListing", "DirectoryError", "SearchTier", "index_dirs", "resolve_directory",
           "search_dirs", "tier_dirs"]


class DirectoryError(RuntimeError, ValueError):
    """The ``directory`` argument cannot be used (it does not exist, or cannot be resolved).

    A RuntimeError, as ``onnxruntime.preload_dlls`` raises for a missing directory.
    """


# --------------------------------------------------------------------------------------------------
# Directory index: the one place that touches the file system
# --------------------------------------------------------------------------------------------------
@record
class DirListing:
    """One directory as listed, with what makes it unsafe to load from."""

    path: str  # as searched (absolute)
    exists: bool
    realpath: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)  # file name -> realpath of the file
    world_writable: bool = False  # writable by anyone and not sticky: anyone can plant a library
    foreign_owner: int | None = None  # uid of a non-root owner other than the current user
    unsafe_files: Mapping[str, str] = field(default_factory=dict)  # file name -> why the file is unsafe
    # (the directory, why) when a directory above it lets another user replace it (world-writable and not
    # sticky, or owned by another user): the gate's rule, judged here so the resolver can pick another copy
    # and say why
    unsafe_ancestor: tuple[str, str] | None = None

    def unsafe(self) -> str | None:
        """Why nothing in this directory may be loaded without the override; None when it is safe."""
        if self.world_writable:
            return f"world-writable directory {self.realpath or self.path}"
        if self.foreign_owner is not None:
            return f"directory {self.realpath or self.path} owned by another user (uid {self.foreign_owner})"
        return self.unsafe_ancestor[1] if self.unsafe_ancestor is not None else None

    def unsafe_where(self) -> str:
        """The directory whose owner or mode makes this one unsafe (itself, or one above it)."""
        return self.unsafe_ancestor[0] if self.unsafe_ancestor is not None else (self.realpath or self.path)


DirIndex = Mapping[str, DirListing]


def _unsafe_reason(st: os.stat_result, uid: int) -> tuple[bool, int | None]:
    world = bool(st.st_mode & stat.S_IWOTH) and not (st.st_mode & stat.S_ISVTX)
    foreign = st.st_uid if st.st_uid not in (0, uid) else None
    return world, foreign


# ".dll" in every case: what name.lower().endswith(".dll") accepts (no other character lower-cases to ".", "d"
# or "l")
_DLL_ENDINGS = tuple("." + d + l1 + l2 for d in "dD" for l1 in "lL" for l2 in "lL")


def index_dirs(
    dirs: Iterable[str], *, stems: Iterable[str] | None = None, uid: int | None = None
) -> dict[str, DirListing]:
    """List each absolute directory once (files only, symlinks resolved) with its safety attributes.

    ``stems`` (``"libcudart.so"``, ...) keeps only the files of those components, so a system
    directory with thousands of libraries costs one ``listdir``. A symlinked directory is judged by its
    target, so a link into ``/tmp`` counts as ``/tmp``.
    """
    wanted = tuple(stems) if stems is not None else None
    wanted_dot = tuple(w + "." for w in wanted) if wanted is not None else None
    me = os.getuid() if uid is None and hasattr(os, "getuid") else (uid or 0)
    judge = Judge(me)
    out: dict[str, DirListing] = {}
    by_real: dict[str, DirListing] = {}  # /lib/x86_64-linux-gnu and /usr/lib/x86_64-linux-gnu are one directory
    for d in dirs:
        if d in out:
            continue
        if not d or not os.path.isabs(d):
            out[d] = DirListing(d, exists=False)
            continue
        real = real_path(d)
        seen = by_real.get(real)
        if seen is not None:  # listed under another name: the same files, ~1 ms for a system directory
            out[d] = replace(seen, path=d)
            continue
        try:
            st = os.stat(real)
            names = os.listdir(real)
        except OSError:
            out[d] = DirListing(d, exists=False, realpath=real)
            continue
        world, foreign = _unsafe_reason(st, me)
        # the directory's own mode and owner are reported as before; above it, the gate's judgement
        above = None if world or foreign is not None else judge.culprit(real)
        files: dict[str, str] = {}
        unsafe: dict[str, str] = {}
        if wanted is not None:
            # A system directory holds ~1,000 names and none or few of the wanted ones: this pass keeps a
            # superset of what the test below keeps (a wanted name begins with a wanted stem, a DLL name
            # ends in ".dll" in some case), in C, and the test judges only those.
            names = [n for n in names if n.startswith(wanted) or n.endswith(_DLL_ENDINGS)]
        for name in names:
            if ".so" not in name and not name.lower().endswith(".dll"):
                continue
            if wanted is not None and wanted_dot is not None and ".so" in name and not (
                    name in wanted or name.startswith(wanted_dot)):
                continue
            full = os.path.join(real, name)
            target = real_path(full)
            try:
                fst = os.stat(target)
            except OSError:
                continue
            if not stat.S_ISREG(fst.st_mode):
                continue
            files[name] = target
            f_world, f_foreign = _unsafe_reason(fst, me)
            if f_world:
                unsafe[name] = f"world-writable file {target}"
            elif f_foreign is not None:
                unsafe[name] = f"file {target} owned by another user (uid {f_foreign})"
            elif os.path.dirname(target) != real:
                # the file is a link out of this directory: judge the directory it really lives in
                try:
                    pst = os.stat(os.path.dirname(target))
                except OSError:
                    continue
                p_world, p_foreign = _unsafe_reason(pst, me)
                if p_world:
                    unsafe[name] = f"links into world-writable directory {os.path.dirname(target)}"
                elif p_foreign is not None:
                    unsafe[name] = f"links into a directory owned by another user (uid {p_foreign})"
                elif (why := judge.directory(os.path.dirname(target))) is not None:
                    unsafe[name] = f"links into {os.path.dirname(target)}: {why}"
        out[d] = by_real[real] = DirListing(d, True, real, files, world, foreign, unsafe, above)
    return out



# --------------------------------------------------------------------------------------------------
# Search tiers
# --------------------------------------------------------------------------------------------------
@record
class SearchTier:
    source: Source
    dirs: tuple[str, ...]  # absolute directories, in order
    origin: str = ""  # for the report: "LD_LIBRARY_PATH", "ld.so.cache", "site /x/y", ...
    rejected: tuple[tuple[str, str], ...] = ()  # (entry, reason) entries never searched


@record
class _Query:
    """What every tier function is asked."""

    env: Environment
    specs: Sequence[LibSpec]
    directory: str | None
    cuda_major: int | None
    cudnn_major: int | None

    @property
    def windows(self) -> bool:
        return self.env.python.os == "windows"

    def join(self, base: str, rel: str) -> str:
        if self.windows:
            return base.rstrip("\\/") + "\\" + rel.replace("/", "\\")
        return posixpath.normpath(posixpath.join(base, rel))

    def isabs(self, path: str) -> bool:
        if self.windows:
            import ntpath  # Windows paths only (a Linux check never needs it)

            return ntpath.isabs(path)
        return posixpath.isabs(path)


def _spec_dirs(spec: LibSpec, q: _Query) -> tuple[str, ...]:
    if q.windows:
        arch = "arm64" if q.env.python.machine.lower() in ("arm64", "aarch64") else "x86_64"
        return tuple(d for d in spec.windows_dirs if not d.endswith(("/x86_64", "/arm64")) or d.endswith(arch))
    return spec.linux_dirs


def _site_dirs(q: _Query) -> list[str]:
    sites = [s for s in q.env.python.site_dirs if s and q.isabs(s)]
    for w in q.env.nvidia_wheels:
        if w.location and q.isabs(w.location) and w.location not in sites:
            sites.append(w.location)
    return sites


def resolve_directory(directory: str, env: Environment) -> str:
    """An explicit ``directory`` as an absolute path: relative ones are taken from the onnxruntime
    package directory (as ``onnxruntime.preload_dlls`` does), never from the current directory."""
    if os.path.isabs(directory):
        return os.path.normpath(directory)
    if not env.ort.package_dir:
        raise DirectoryError(
            f"directory {directory!r} is relative, and relative directories are taken from the onnxruntime "
            "package directory, but onnxruntime is not installed; give an absolute path"
        )
    return os.path.normpath(os.path.join(env.ort.package_dir, directory))


def _directory_tier(q: _Query) -> list[SearchTier]:
    if not q.directory:
        return []
    return [SearchTier("directory", (resolve_directory(q.directory, q.env),), "--directory")]


def _torch_tier(q: _Query) -> list[SearchTier]:
    t = q.env.torch
    if q.directory is not None or t is None or not t.lib_dir:
        return []
    cudnn_ok = q.cudnn_major is None or t.cudnn is None or major_of(t.cudnn) == q.cudnn_major
    if major_of(t.cuda) == q.cuda_major and q.cuda_major is not None and cudnn_ok:
        return [SearchTier("torch", (t.lib_dir,), f"torch {t.version}")]
    why = (f"torch {t.version} uses CUDA {t.cuda or 'none'} / cuDNN {t.cudnn or '?'}, the build needs "
           f"CUDA {q.cuda_major} / cuDNN {q.cudnn_major}")
    return [SearchTier("torch", (), f"torch {t.version}", rejected=((t.lib_dir, why),))]


def _wheel_tiers(q: _Query) -> list[SearchTier]:
    if q.directory:
        return []
    rel_dirs = list(dict.fromkeys(d for s in q.specs for d in _spec_dirs(s, q)))
    return [SearchTier("nvidia-wheel", tuple(q.join(site, r) for r in rel_dirs), site) for site in _site_dirs(q)]


def _conda_tier(q: _Query) -> list[SearchTier]:
    conda = q.env.system.conda_prefix or q.env.python.conda_prefix
    if q.directory is not None or not conda:
        return []
    sub = ("Library\\bin", "bin") if q.windows else ("lib",)
    return [SearchTier("conda", tuple(q.join(conda, s) for s in sub), "CONDA_PREFIX")]


def _cuda_home_tiers(q: _Query) -> list[SearchTier]:
    if q.directory is not None:
        return []
    if q.windows:
        sub: tuple[str, ...] = ("bin\\x64", "bin")
    else:
        arch = q.env.python.machine if q.env.python.machine not in ("AMD64", "") else "x86_64"
        sub = ("lib64", "lib", f"targets/{arch}-linux/lib")
    system = q.env.system
    return [SearchTier("cuda-home", tuple(q.join(root, s) for s in sub), var)
            for var, root in (("CUDA_HOME", system.cuda_home), ("CUDA_PATH", system.cuda_path),
                              ("CUDNN_PATH", system.cudnn_path)) if root]


def _system_tiers(q: _Query) -> list[SearchTier]:
    """What the dynamic loader would search, minus what must never be searched."""
    system = q.env.system
    if q.windows:
        return [SearchTier("system", tuple(d.path for d in system.windows_path if d.path and not d.relative), "PATH")]
    ok: list[str] = []
    rejected: list[tuple[str, str]] = []
    for sd in system.ld_library_path:
        if not sd.path:
            rejected.append(("", "empty LD_LIBRARY_PATH entry (means the current directory)"))
        elif sd.relative or not os.path.isabs(sd.path):
            rejected.append((sd.path, f"relative LD_LIBRARY_PATH entry {sd.path!r} (resolved against the "
                                      "current directory)"))
        else:
            ok.append(sd.path)
    wanted = component_stems(q.specs)
    # A name's stem is its own beginning (lower-cased for a DLL): the ~500 names of the cache that begin
    # with no wanted stem are passed over without parsing.
    prefixes = tuple(wanted)
    cache_dirs = [posixpath.dirname(p) for soname, paths in system.ldconfig.items()
                  if soname.lower().startswith(prefixes)
                  and (sm := stem_major(soname)) is not None and sm[0] in wanted for p in paths]
    return [
        SearchTier("system", tuple(ok), "LD_LIBRARY_PATH", rejected=tuple(rejected)),
        SearchTier("system", tuple(dict.fromkeys(cache_dirs)), "ld.so.cache"),
        SearchTier("system", tuple(d.path for d in system.default_dirs if d.path), "default"),
    ]


#: The search order, first hit wins.
TIERS: tuple[Callable[[_Query], list[SearchTier]], ...] = (
    _directory_tier, _torch_tier, _wheel_tiers, _conda_tier, _cuda_home_tiers, _system_tiers,
)


def search_dirs(
    env: Environment,
    specs: Sequence[LibSpec],
    *,
    directory: str | None = None,
    cuda_major: int | None = None,
    cudnn_major: int | None = None,
) -> tuple[SearchTier, ...]:
    """The tiers to search, in order, without touching the file system (``loaded`` is not a tier)."""
    q = _Query(env, specs, directory, cuda_major, cudnn_major)
    return tuple(tier for make_tiers in TIERS for tier in make_tiers(q))


def tier_dirs(tiers: Iterable[SearchTier]) -> tuple[str, ...]:
    """Every directory of the tiers, in order, each once (what ``failed[].searched`` reports)."""
    return tuple(dict.fromkeys(d for t in tiers for d in t.dirs))
