"""Rules about the CUDA and cuDNN libraries: found, for the right major, loadable without a preload, one copy."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ortdoctor.core.catalog import make
from ortdoctor.core.driver_libraries import NVCUDA_DLL
from ortdoctor.core.facts import (
    Candidate,
    Finding,
    LibraryPlan,
    NvidiaWheel,
    PackageStep,
    Severity,
)
from ortdoctor.core.finding_ids import FindingId
from ortdoctor.core.patterns import lazy
from ortdoctor.core.record import replace
from ortdoctor.core.shell import Command, add_note, compose
from ortdoctor.decide.fixes import library_fix, step, wrong_cuda_cudnn
from ortdoctor.decide.integrity import damage_of, short_elf
from ortdoctor.decide.loader_view import (
    SOURCE_WORDS,
    LoaderPick,
    compact_sonames,
    default_loader_copy,
    loader_visible,
    same_file,
)
from ortdoctor.decide.torch import torch_copies, torch_other_copy_finding
from ortdoctor.diagnose.context import Ctx, ort_family, search_path_line, vtuple
from ortdoctor.diagnose.driver import build_for_major
from ortdoctor.formats.distinfo import normalize
from ortdoctor.formats.realpath import real_path

TYPE_CHECKING = False

if TYPE_CHECKING:
    pass


def _is_driver_lib(soname: str) -> bool:
    """libcuda belongs to the driver (reported by the driver checks), not to the CUDA wheels."""
    low = soname.lower()
    return low.startswith("libcuda.so") or low == NVCUDA_DLL


def _is_cudnn(lp: LibraryPlan) -> bool:
    return lp.name.lower().startswith("cudnn") or "cudnn" in lp.soname.lower()


def _lib_severity(lp: LibraryPlan) -> str:
    # Load-time dependencies stop the provider from loading at all; cuDNN itself is needed by every
    # session; the other lazily loaded libraries only by the operators that use them.
    if lp.required or lp.name.lower() == "cudnn":
        return "error"
    return "warning"


def _wrong_cuda_cudnn(ctx: Ctx, libs: Sequence[LibraryPlan]) -> list[NvidiaWheel]:
    return wrong_cuda_cudnn(ctx.env, ctx.cuda_major, libs)


def package_fix(ctx: Ctx, wanted: Sequence[LibraryPlan]) -> tuple[PackageStep, ...]:
    if ctx.plan is None:
        return ()
    return library_fix(ctx.matrix, ctx.env, ctx.plan, wanted)


def _already_installed(ctx: Ctx, steps: Sequence[PackageStep]) -> list[NvidiaWheel]:
    """The installed NVIDIA wheels that already satisfy every requirement of ``steps``, when those steps
    are plain installs of such wheels: the command would change nothing (empty otherwise)."""
    if not steps or any(s.verb != "install" for s in steps):
        return []
    wheels = {normalize(w.name): w for w in ctx.env.nvidia_wheels}
    out: list[NvidiaWheel] = []
    for st in steps:
        for spec in st.args:
            m = _PLAIN_SPEC.fullmatch(spec)
            w = wheels.get(normalize(m.group(1))) if m else None
            if m is None or w is None or not _satisfies(w.version, m.group(2), m.group(3)):
                return []
            out.append(w)
    return list(dict.fromkeys(out))


# a plain requirement: name, optionally ==X.*, ==X.Y.Z or ~=X.Y (what the fixes of the NVIDIA wheels write)
_PLAIN_SPEC = lazy(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:(==|~=)([0-9][0-9.]*(?:\.\*)?))?")


def _satisfies(version: str, op: str | None, want: str | None) -> bool:
    if op is None or want is None:
        return True
    have = version.split(".")
    if want.endswith(".*") or op == "~=":
        # "==9.*": the same leading parts; "~=12.0": the same major, at least that release
        parts = want.removesuffix(".*").split(".")
        if op == "~=":
            return have[:1] == parts[:1] and vtuple(version) >= vtuple(want)
        return have[:len(parts)] == parts
    return vtuple(version) == vtuple(want)


def _is_sublib(lp: LibraryPlan) -> bool:
    """A cuDNN sub-library (dlopen'd by libcudnn itself; the set differs between cuDNN releases)."""
    return _is_cudnn(lp) and lp.name.lower() != "cudnn"


def check_libraries(ctx: Ctx) -> list[Finding]:
    plan = ctx.plan
    if plan is None:
        return []
    libs = [lp for lp in plan.libraries if lp.skipped is None and not _is_driver_lib(lp.soname)]
    cudnn_main = next((lp for lp in libs if lp.name.lower() == "cudnn"), None)
    # cuDNN loads its sub-libraries itself and only those of its own release: a sub-library the matrix
    # lists but this cuDNN does not ship is not a problem; with libcudnn itself missing they are
    # covered by that one line. A sub-library the CUDA provider itself lists in DT_NEEDED (1.20's) is
    # required like any other library: the provider does not load without it.
    libs_checked = [lp for lp in libs if not (_is_sublib(lp) and lp.chosen is None and not lp.required)]
    out: list[Finding] = []
    ort = ctx.env.ort
    build = f"{ort.active or 'onnxruntime-gpu'} {ort.version} (CUDA {ort.cuda_version or plan.cuda_major}"
    build += f", cuDNN {plan.cudnn_major})" if plan.cudnn_major else ")"
    preload_hint = "afterwards: `import ortdoctor.hook` (or onnxruntime.preload_dlls()) before the first session"

    # Everything a package fix must bring, for both findings below: one command covers the whole set.
    wanted = [lp for lp in libs_checked if lp.chosen is None and (lp.required or not _is_sublib(lp))]

    # --- present only for another major (modes 3, 7, 19); also wheels of another major that the
    # build cannot use even though its own major came from somewhere else.
    for is_cudnn in (False, True):
        fid: FindingId = "cudnn-major-mismatch" if is_cudnn else "cuda-major-mismatch"
        foreign = {lp.name: _foreign_wheel_files(ctx, lp) for lp in libs_checked} if not is_cudnn else {}
        group = [lp for lp in libs_checked if _is_cudnn(lp) == is_cudnn and (
            (lp.other_major and (lp.chosen is None or any(c.source == "nvidia-wheel" for c in lp.other_major)))
            or foreign.get(lp.name))]
        if is_cudnn and not group and _wrong_cuda_cudnn(ctx, plan.libraries):
            group = [lp for lp in libs_checked if lp.name.lower() == "cudnn" and lp.chosen is not None]
        if not group:
            continue
        lines = []
        for lp in group:
            listed = {c.path for c in lp.other_major}
            others = ", ".join([_cand(c) for c in lp.other_major]
                               + [p for p in foreign.get(lp.name, []) if p not in listed])
            if lp.chosen is None:
                lines.append(f"needs {lp.soname}; found only {others}")
            else:
                lines.append(f"needs {lp.soname} (taken from {lp.chosen.path}); the other-major copies are "
                             f"unusable by this build: {others}")
        wheels = [w for w in ctx.env.nvidia_wheels if w.cuda_major is not None and w.cuda_major != ctx.cuda_major
                  and any(_same_stem(so, lp.soname) for so in w.sonames for lp in group)]
        if is_cudnn:
            for w in _wrong_cuda_cudnn(ctx, plan.libraries):
                lines.append(f"{w.name} {w.version} is cuDNN built for CUDA {w.cuda_major}: its libcudnn "
                             f"has the right soname, but its engines load the CUDA {w.cuda_major} cuBLAS")
        if wheels:
            lines.append("installed for another CUDA major: " + ", ".join(
                f"{w.name} {w.version} (CUDA {w.cuda_major})" for w in wheels))
        missing_now = [lp for lp in group if lp.chosen is None]
        sev: Severity = "error" if any(_lib_severity(lp) == "error" for lp in missing_now) else "warning"
        if not is_cudnn and not missing_now and not wanted:
            # Every library of the build's CUDA major is found: the other major's wheels sit in their own
            # directories with other sonames, and this build never loads them (torch may).
            out.append(make(fid, f"{build}:\n" + "\n".join(lines) + f"\nThe build's CUDA {plan.cuda_major} "
                            "libraries are all found; the other major's files are unused by it.", "",
                            severity="info", title=f"CUDA libraries of another major are installed beside the "
                            f"build's CUDA {plan.cuda_major} ones (unused by onnxruntime)"))
            continue
        steps = package_fix(ctx, wanted)
        notes = [f"installs the build's CUDA {plan.cuda_major} libraries", preload_hint] if steps else []
        have = _other_major(ctx, group)
        if have is not None and not is_cudnn and have != ctx.cuda_major:
            alt = build_for_major(ctx, have)
            if alt:
                notes.append(f"or keep CUDA {have} and install the onnxruntime-gpu built for it: {ctx.run(*alt)}")
        installed_from = [d.index_url for d in ort_family(ort) if d.index_url]
        extra = f"\nonnxruntime-gpu was installed from {installed_from[0]}" if installed_from else ""
        wrong = _wrong_cuda_cudnn(ctx, plan.libraries) if is_cudnn else []
        # the same cuDNN major built for another CUDA: "present only for another major" would be untrue
        title = (f"cuDNN {plan.cudnn_major} is installed, but built for CUDA {wrong[0].cuda_major}, not the "
                 f"build's CUDA {plan.cuda_major}") if wrong and not any(lp.other_major for lp in group) else None
        fix, commands = ctx.installer.fix(steps, "\n".join(notes))
        out.append(make(fid, f"{build}:\n" + "\n".join(lines) + extra, fix or None, severity=sev,
                        steps=steps, commands=commands, title=title))

    # --- not found at all (modes 2, 21)
    missing = [lp for lp in libs_checked if lp.chosen is None and not lp.other_major]
    if missing:
        sev = "error" if any(_lib_severity(lp) == "error" for lp in missing) else "warning"
        lines = []
        for lp in missing:
            kind = "load-time dependency of the CUDA provider" if lp.required else "loaded at run time"
            if lp is cudnn_main:
                kind += "; with its sub-libraries"
            rejected = [c for c in lp.candidates if c.rejected]
            searched = (" (refused: " + "; ".join(f"{c.path}: {c.rejected}" for c in rejected) + ")") if rejected else ""
            lines.append(f"{lp.soname} ({kind}): not found{searched}")
        steps = package_fix(ctx, wanted)
        there = _already_installed(ctx, steps)
        if there and any(c.rejected for lp in missing for c in lp.candidates):
            # the files are there, and refused (the lines above say why): that refusal is what to change
            lines.append("Installing the wheels again changes nothing: ortdoctor refuses the copies named above.")
            steps = ()
        elif there:
            # the install would change nothing: say what stops the installed wheel from providing the file
            where = ", ".join(dict.fromkeys(d for w in there for d in w.lib_dirs)) or (
                "its library directory" if len(there) == 1 else "their library directories")
            lines.append(f"{', '.join(f'{w.name} {w.version}' for w in there)} already installed, yet "
                         f"{', '.join(lp.soname for lp in missing)} is not in {where}: that install is incomplete, "
                         "and installing it again the same way changes nothing")
            steps = (step("install", "--force-reinstall", "--no-deps", *(f"{w.name}=={w.version}" for w in there)),)
        if steps:
            prose = preload_hint
        elif there:
            prose = ("make the refused directory safe (chmod o-w, owned by you or root), or pass "
                     "--allow-unsafe-dirs\n" + preload_hint)
        else:
            prose = (f"install the CUDA {plan.cuda_major} toolkit and cuDNN {plan.cudnn_major} libraries (no pip "
                     "wheels exist for them)\n" + preload_hint)
        fix, commands = ctx.installer.fix(steps, prose)
        out.append(make("cuda-lib-missing", f"{build}:\n" + "\n".join(lines), fix, severity=sev, steps=steps,
                        commands=commands))

    # --- a chosen file that is not what its wheel installed (truncated: mapping it kills the process)
    damaged = [d for lp in libs if lp.chosen is not None and lp.chosen.source != "loaded"
               and (d := damage_of(ctx.env, lp.chosen.path)) is not None]
    if damaged:
        pins = list(dict.fromkeys(f"{d.wheel.name}=={d.wheel.version}" for d in damaged))
        steps = (step("install", "--force-reinstall", "--no-deps", *pins),)
        fix, commands = ctx.installer.fix(steps)
        out.append(make("lib-file-damaged", "\n".join(d.describe() for d in damaged)
                        + "\nThe preload refuses these files; loading them by name would kill the process (SIGBUS).",
                        fix, steps=steps, commands=commands))

    # --- the loader on its own (no preload): finds no copy at all (modes 6, 12), or another copy
    picks = {lp.name: default_loader_copy(ctx.env, lp, ctx.os_name) for lp in libs if lp.chosen is not None}
    out += _cut_short(ctx, libs, picks, {d.path for d in damaged})
    # a cuDNN built for another CUDA is reported above as unusable: never advise preloading it
    unusable = {os.path.normpath(d) for w in _wrong_cuda_cudnn(ctx, plan.libraries) for d in w.lib_dirs}
    hidden = [lp for lp in libs if lp.chosen is not None and picks.get(lp.name) is None
              and os.path.normpath(os.path.dirname(lp.chosen.path)) not in unusable
              and not loader_visible(ctx.env, lp.soname, lp.chosen, ctx.os_name)]
    if hidden:
        by_dir: dict[str, list[str]] = {}
        for lp in hidden:
            assert lp.chosen is not None
            by_dir.setdefault(os.path.dirname(lp.chosen.path), []).append(lp.soname)
        dirs = list(by_dir)
        # the other copies' warning is cured by the same preload: one finding, one shell line for both
        other_dirs = [os.path.dirname(lp.chosen.path) for lp in libs if lp.chosen is not None
                      and (pick := picks.get(lp.name)) is not None and not pick.same_as_chosen]
        env_fix = search_path_line(ctx, list(dict.fromkeys([*dirs, *other_dirs])))
        windows = ctx.os_name == "windows"
        lines = [f"{d}: {', '.join(compact_sonames(names))}" for d, names in by_dir.items()]
        detail = ("Installed, but in no directory the loader searches (LD_LIBRARY_PATH, ld.so.cache, default "
                  "directories, the provider's RUNPATH), and no other copy is there either; ORT finds them only "
                  "when they are preloaded:\n" + "\n".join(lines))
        hook = ctx.env.python.hook_pth
        if hook:
            # the .pth preloads them at every start of this Python: nothing left to do for its programs
            out.append(make("cuda-lib-not-loadable", detail + f"\n{hook} preloads them at every start of "
                            f"{ctx.env.python.executable} (`ortdoctor hook install`), so its programs find them.",
                            "", severity="info"))
        else:
            # the shell line is the command (for the programs this shell starts); the Python line is prose
            prose = ("the line above, before starting Python, for the programs this shell starts; or "
                     "`import ortdoctor.hook` as the first line of the program (preloads them by full path); "
                     "or `ortdoctor hook install`: every start of this Python preloads them (permanent)")
            out.append(make("cuda-lib-not-loadable", detail, compose((env_fix,), prose, windows=windows),
                            commands=(env_fix,)))
    other = [(lp, pick) for lp in libs if lp.chosen is not None and (pick := picks.get(lp.name)) is not None
             and not pick.same_as_chosen]
    if other:
        loader = _default_loader_finding(ctx, other)
        hit = next((i for i, f in enumerate(out) if f.id == "cuda-lib-not-loadable" and f.severity != "info"), None)
        if hit is not None and loader.severity != "info":
            # One cure for both (the preload); the other copies become part of the first finding's detail
            # rather than a second warning with an overlapping shell line.
            first = out[hit]
            torch_note = ("or import torch before onnxruntime: both then use torch's copies"
                          if "import torch before onnxruntime" in (loader.fix or "") else "")
            out[hit] = replace(first, detail=first.detail + "\n" + loader.detail,
                               fix=add_note(first.fix or "", torch_note, bool(first.commands)))
        else:
            out.append(loader)
        loader_merged = hit is not None and loader.severity != "info"
    else:
        loader_merged = False

    copies = _check_copies(ctx, libs)
    loader_warning = loader_merged or any(f.id == "default-loader-picks-other-copy" and f.severity == "warning"
                                          for f in out)
    if loader_warning:
        # The same stale copies already raised the loader warning, which says what they break and how to
        # avoid it: listing them again as a second warning would double one problem. A cuDNN or cuBLAS
        # set split across directories is a problem of its own and keeps its severity.
        copies = [replace(f, severity="info",
                          detail=f.detail + "\nThe risk these copies carry is under "
                          + ("cuda-lib-not-loadable." if loader_merged else "default-loader-picks-other-copy."))
                  if f.id == "lib-multiple-copies" and " chosen from " not in f.detail else f
                  for f in copies]
    out += copies
    return out


def _cut_short(ctx: Ctx, libs: Sequence[LibraryPlan], picks: dict[str, LoaderPick | None],
               told: set[str]) -> list[Finding]:
    """Copies no wheel's RECORD describes (on LD_LIBRARY_PATH, in a toolkit directory) that are shorter
    than their own ELF headers say: the chosen one, and the one the loader takes without a preload (a
    program that does not preload maps it and dies with SIGBUS). ``told``: files already reported."""
    if ctx.os_name == "windows":
        return []
    seen: dict[str, str] = {}  # path -> how it would be loaded
    for lp in libs:
        if lp.chosen is not None and lp.chosen.source != "loaded" and lp.chosen.path not in told \
                and damage_of(ctx.env, lp.chosen.path) is None:
            seen.setdefault(lp.chosen.path, f"ortdoctor's choice for {lp.soname}")
        pick = picks.get(lp.name)
        if pick is not None and not pick.same_as_chosen and pick.path not in told:
            seen.setdefault(pick.path, f"what the loader takes for {lp.soname} without a preload ({pick.via})")
    short = [(s, how) for path, how in seen.items() if (s := short_elf(path)) is not None]
    if not short:
        return []
    lines = [f"{s.describe()}; {how}" for s, how in short]
    dirs = list(dict.fromkeys(os.path.dirname(s.path) for s, _how in short))
    # moved aside, not deleted: the loader then finds the next copy (or the preload's)
    moves = tuple(Command(("mv", "--", s.path, s.path + ".cut-short")) for s, _how in short)
    windows = ctx.os_name == "windows"
    return [make("lib-file-damaged", "\n".join(lines) + "\nNo wheel's RECORD describes these files; their own "
                 "program headers do. Mapping one kills the process (SIGBUS).",
                 compose(moves, "or put a whole copy of the same release there, or take "
                         f"{', '.join(dirs)} off LD_LIBRARY_PATH", windows=windows), commands=moves,
                 title="a library the process would map is cut short")]


def _foreign_wheel_files(ctx: Ctx, lp: LibraryPlan) -> list[str]:
    """Files of the same component shipped by NVIDIA wheels of another CUDA major (``libcudart.so.12``
    of nvidia-cuda-runtime-cu12 beside a CUDA 13 build), which the resolver does not search."""
    out = []
    for w in ctx.env.nvidia_wheels:
        if w.cuda_major is None or w.cuda_major == ctx.cuda_major:
            continue
        for so in w.sonames:
            if _same_stem(so, lp.soname) and so != lp.soname:
                where = w.lib_dirs[0] if w.lib_dirs else w.location
                out.append(f"{os.path.join(where, so)} [{w.name} {w.version}]")
    return out


def _same_stem(a: str, b: str) -> bool:
    """``libcudart.so.12`` and ``libcudart.so.13`` name the same component."""
    return a.split(".so")[0] == b.split(".so")[0] if ".so" in a and ".so" in b else False


def _other_major(ctx: Ctx, group: Sequence[LibraryPlan]) -> int | None:
    """The CUDA major the other-major files belong to (cuFFT's and cuRAND's own majors differ from
    CUDA's, so the resolver's reason text and cudart/cublas names are used, never those)."""
    for lp in group:
        for c in lp.other_major:
            m = re.search(r"CUDA (\d+) file", c.rejected or "")
            if m:
                return int(m.group(1))
    for w in ctx.env.nvidia_wheels:
        if w.cuda_major is not None and w.cuda_major != ctx.cuda_major and any(
                _same_stem(so, lp.soname) for so in w.sonames for lp in group):
            return w.cuda_major
    for lp in group:
        if lp.name.lower() in ("cufft", "curand"):
            continue
        for c in lp.other_major:
            m = re.search(r"\.so\.(\d+)|64_(\d+)\.dll", os.path.basename(c.path))
            if m:
                return int(m.group(1) or m.group(2))
    return None


def _cand(c: Candidate) -> str:
    return f"{c.path}" + (f" ({c.version})" if c.version else "") + f" [{c.source}]"


def _copies(lp: LibraryPlan) -> list[Candidate]:
    """The acceptable files for one soname, the chosen one first, each file once."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for c in (*((lp.chosen,) if lp.chosen else ()), *lp.candidates):
        if c.rejected is not None or c.source == "loaded":
            continue
        real = real_path(c.path)
        if real in seen:
            continue
        seen.add(real)
        out.append(c)
    return out


def _family_label(ctx: Ctx, cudnn: bool, members: Sequence[LibraryPlan]) -> str:
    plan = ctx.plan
    if cudnn:
        major = plan.cudnn_major if plan else None
        return f"cuDNN {major or ''}".rstrip() + f" ({len(members)} file{'s' * (len(members) != 1)})"
    major = plan.cuda_major if plan else ctx.cuda_major
    return f"CUDA {major or ''}".rstrip() + f" libraries ({', '.join(lp.name for lp in members)})"


def _location_text(loc: str, files: dict[str, Candidate], members: Sequence[LibraryPlan], chosen: bool,
                   differing: list[str]) -> str:
    word = SOURCE_WORDS.get(files[next(iter(files))].source, files[next(iter(files))].source)
    versions = {c.version for c in files.values()}
    text = word
    if len(versions) == 1 and None not in versions:
        text += f" {next(iter(versions))}"
    text += f" in {loc}"
    notes = []
    if chosen:
        notes.append("chosen")
    if len(files) < len(members):
        notes.append("only " + ", ".join(compact_sonames([lp.soname for lp in members if lp.name in files])))
    if not chosen:
        if differing:
            if len(versions) != 1 or None in versions:
                notes.append("differs: " + "; ".join(differing))
        elif all(c.version for c in files.values()):
            notes.append("same version" + ("s" if len(files) > 1 else ""))
        else:
            notes.append("version unknown")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def _check_copies(ctx: Ctx, libs: Sequence[LibraryPlan]) -> list[Finding]:
    """Modes 15 and 16: more than one copy of the same libraries (grouped by family and location, the
    chosen location first), or libraries that must match chosen from different directories (cuBLAS with
    cuBLASLt, every cuDNN piece). Differing versions or a split choice: a warning; copies that are the
    same versions: a note."""
    lines: list[str] = []
    warn = False
    sublib_split = False
    for cudnn in (False, True):
        members = [lp for lp in libs if _is_cudnn(lp) == cudnn and lp.chosen is not None and len(_copies(lp)) > 1]
        if not members:
            continue
        locs: dict[str, dict[str, Candidate]] = {}
        for lp in members:
            for c in _copies(lp):
                locs.setdefault(os.path.dirname(c.path), {})[lp.name] = c
        chosen_dirs = {os.path.dirname(lp.chosen.path) for lp in members if lp.chosen}
        order = sorted(locs, key=lambda d: d not in chosen_dirs)  # stable: search order otherwise
        by_name = {lp.name: lp for lp in members}
        parts = []
        for loc in order:
            files = locs[loc]
            differing = []
            for name, c in files.items():
                ch = by_name[name].chosen
                if ch is not None and c.version and ch.version and c.version != ch.version:
                    differing.append(f"{by_name[name].soname} {c.version} vs {ch.version}")
            warn = warn or bool(differing)
            parts.append(_location_text(loc, files, members, loc in chosen_dirs, differing))
        lines.append(f"{_family_label(ctx, cudnn, members)}: " + " · ".join(parts))
    for group_name, group in (("cuBLAS/cuBLASLt", [lp for lp in libs if lp.name.lower() in ("cublas", "cublaslt")]),
                              ("cuDNN", [lp for lp in libs if _is_cudnn(lp)])):
        dirs = {os.path.dirname(lp.chosen.path) for lp in group if lp.chosen}
        if len(dirs) > 1:
            warn = True
            if group_name == "cuDNN":
                sublib_split = True
            lines.append(f"{group_name} chosen from {len(dirs)} directories: " + "; ".join(
                f"{lp.soname} <- {lp.chosen.path}" for lp in group if lp.chosen))
    if not lines:
        return []
    if warn:
        out = [make("lib-multiple-copies", "\n".join(lines),
                    "import ortdoctor.hook (first line of the program) or `ortdoctor preload` loads the chosen set by "
                    "full path, whatever else is installed;\nto be rid of the mismatch, remove the stale copies (or "
                    "their directories from LD_LIBRARY_PATH/PATH) and keep one source: pip wheels or one toolkit")]
    else:
        out = [make("lib-multiple-copies", "\n".join(lines),
                    "Nothing to fix while one set is loaded first: `import ortdoctor.hook` (or `ortdoctor preload`) "
                    "loads the chosen one by full path. Removing the unused copy keeps it that way.",
                    severity="info")]
    if sublib_split:
        out.append(make("cudnn-sublibrary-mismatch", "\n".join(line for line in lines if line.startswith("cuDNN "
                                                                                                   "chosen"))))
    return out


def _default_loader_finding(ctx: Ctx, other: Sequence[tuple[LibraryPlan, LoaderPick]]) -> Finding:
    """Case 1(b): the loader finds copies on its own, but not the ones ortdoctor chose."""
    shared = torch_copies(ctx.env, ctx.plan) if ctx.plan is not None else {}
    groups: dict[tuple[str, str, str], list[tuple[LibraryPlan, LoaderPick]]] = {}
    for lp, p in other:
        assert lp.chosen is not None
        groups.setdefault((os.path.dirname(p.path), p.via, os.path.dirname(lp.chosen.path)), []).append((lp, p))
    lines = ["Without a preload, the dynamic loader maps other copies than the ones ortdoctor chose:"]
    differ = False
    for (pdir, via, cdir), members in groups.items():
        names = ", ".join(compact_sonames([lp.soname for lp, _ in members]))
        # a directory named by LD_LIBRARY_PATH is the user's, not "system": the via says where it comes from
        word = "" if via == "LD_LIBRARY_PATH" else SOURCE_WORDS.get(members[0][1].source, members[0][1].source)
        pairs = list(dict.fromkeys((p.version, lp.chosen.version) for lp, p in members if lp.chosen))
        if all(a and b and a == b for a, b in pairs):
            versions = "the same version" + ("s" if len(members) > 1 else "") + " as the chosen"
        else:
            differ = True
            diffs = [(a, b) for a, b in pairs if not (a and b and a == b)]
            if len(diffs) == 1:
                versions = f"{diffs[0][0] or 'version unknown'} instead of the chosen {diffs[0][1] or 'version unknown'}"
            else:
                versions = "; ".join(f"{lp.soname} {p.version or '?'} instead of {lp.chosen.version or '?'}"
                                     for lp, p in members if lp.chosen and p.version != lp.chosen.version
                                     and not _is_sublib(lp))
        lines.append(f"{names}: the loader takes {f'{word} ' if word else ''}{pdir} ({via}), {versions}; "
                     f"ortdoctor chose {cdir}")
    chosen_libs = [lp for lp, _ in other if lp.chosen is not None]
    sources = list(dict.fromkeys(SOURCE_WORDS.get(lp.chosen.source, lp.chosen.source)
                                 for lp in chosen_libs if lp.chosen))
    why = f"ortdoctor chose one coherent set ({', '.join(sources)}: every library of a family from one place)"
    torch_same = [lp for lp in chosen_libs if lp.name in shared and lp.chosen
                  and same_file(shared[lp.name].path, lp.chosen.path)]
    t = ctx.env.torch
    if torch_same and t is not None:
        why += f", the same files PyTorch {t.version} loads"
    lines.append(why + ".")
    if torch_same and t is not None:
        example = next((f": {lp.soname} {p.version} instead of {lp.chosen.version}" for lp, p in other
                        if lp in torch_same and lp.chosen and p.version and lp.chosen.version
                        and p.version != lp.chosen.version), "")
        lines.append("A process holds one library per soname: if onnxruntime loads first without a preload, a "
                     f"later `import torch` runs torch on the loader's copies instead of its own{example} (and if "
                     "torch comes first, onnxruntime reuses torch's).")
    dirs = list(dict.fromkeys(os.path.dirname(lp.chosen.path) for lp in chosen_libs if lp.chosen))
    line = search_path_line(ctx, dirs)
    prose = ("the line above, before starting Python, for the programs this shell starts; or "
             "`import ortdoctor.hook` as the first line of the program (loads the chosen set by full path); or "
             "`ortdoctor preload` (the same choice; --print-env prints it as a shell line)")
    if torch_same:
        prose += "\nor import torch before onnxruntime: both then use torch's copies"
    return make("default-loader-picks-other-copy", "\n".join(lines),
                compose((line,), prose, windows=ctx.os_name == "windows"),
                severity="warning" if differ or torch_same else "info", commands=(line,))


def check_torch_copies(ctx: Ctx) -> list[Finding]:
    """Which copy torch maps for the libraries it shares with the build, against ortdoctor's choice."""
    plan = ctx.plan
    t = ctx.env.torch
    if plan is None or t is None:
        return []
    shared = torch_copies(ctx.env, plan)
    libs = [lp for lp in plan.libraries if lp.skipped is None and lp.chosen is not None and lp.name in shared
            and not _is_sublib(lp)]
    if not libs:
        return []
    differ = [lp for lp in libs if lp.chosen and not same_file(lp.chosen.path, shared[lp.name].path)]
    what = "ortdoctor's choice (what `import ortdoctor.hook` and `ortdoctor preload` load"
    what += f", --directory {plan.directory!r})" if plan.directory is not None else ")"
    if not differ:
        dirs = list(dict.fromkeys(os.path.dirname(lp.chosen.path) for lp in libs if lp.chosen))
        return [make("torch-shares-libraries",
                     f"{what} is the set PyTorch {t.version} loads ({', '.join(dirs)}): importing torch before "
                     "or after onnxruntime reuses the same files.")]
    return [torch_other_copy_finding(t.version, [(lp.soname, lp.chosen, shared[lp.name]) for lp in differ
                                                 if lp.chosen], what, plan.directory)]
