"""PyTorch beside onnxruntime: which files torch maps for the sonames both need.

A process holds one library per soname, so whichever of the two loads a library first decides for
both. :func:`torch_copies` says which file torch would load (pure, from the facts and the plan);
:func:`torch_other_copy_finding` words the finding when that is not ortdoctor's choice.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import Candidate, Environment, Finding, Plan
from ortdoctor.decide.loader_view import SOURCE_WORDS, compact_sonames

__all__ = ["torch_copies", "torch_other_copy_finding"]


def _major_of(version: str | None) -> int | None:
    m = re.match(r"\s*(\d+)", version or "")
    return int(m.group(1)) if m else None


def torch_copies(env: Environment, plan: Plan) -> dict[str, Candidate]:
    """The file PyTorch loads for each library of ``plan`` that it shares with the build (name -> file).

    Pure: torch's own ``lib`` directory (older wheels bundle the libraries there) when the plan saw a
    candidate in it, else the NVIDIA wheels of torch's site directory, which its RPATH
    (``$ORIGIN/../../nvidia/<pkg>/lib``) names. Empty when torch is absent, a CPU build, or built for
    another CUDA major (its sonames differ then: nothing is shared). cuDNN is left out when torch's
    cuDNN major differs from the build's.
    """
    t = env.torch
    if t is None or not t.cuda or plan.cuda_major is None or _major_of(t.cuda) != plan.cuda_major:
        return {}
    cudnn_shared = t.cudnn is None or plan.cudnn_major is None or _major_of(t.cudnn) == plan.cudnn_major
    site = os.path.normpath(t.location) if t.location else None
    lib_dir = os.path.normpath(t.lib_dir) if t.lib_dir else None
    out: dict[str, Candidate] = {}
    for lp in plan.libraries:
        if lp.name.lower().startswith("cudnn") and not cudnn_shared:
            continue
        seen = [c for c in (*lp.candidates, *((lp.chosen,) if lp.chosen else ())) if c.source != "loaded"]
        hit = next((c for c in seen if lib_dir and c.source == "torch"
                    and os.path.normpath(os.path.dirname(c.path)) == lib_dir), None)
        if hit is None and site is not None:
            for w in env.nvidia_wheels:
                if os.path.normpath(w.location) != site or lp.soname not in w.sonames or not w.lib_dirs:
                    continue
                paths = [os.path.join(d, lp.soname) for d in w.lib_dirs]
                path = next((p for p in paths if any(c.path == p for c in seen)), paths[0])
                hit = Candidate(path, "nvidia-wheel", w.version)
                break
        if hit is None and site is not None:
            # facts without the wheels' file lists (the preloader's quick look): the wheel files the plan
            # found in torch's site directory
            nvidia = os.path.join(site, "nvidia") + os.sep
            hit = next((c for c in seen if c.source == "nvidia-wheel" and c.path.startswith(nvidia)), None)
        if hit is not None:
            out[lp.name] = Candidate(hit.path, hit.source, hit.version)
    return out


def torch_other_copy_finding(torch_version: str, pairs: Sequence[tuple[str, Candidate, Candidate]], what: str,
                             directory: str | None) -> Finding:
    """``torch-loads-other-copy``: (soname, ORT's copy, torch's copy) for each library that differs."""
    lines = [f"{what} and PyTorch {torch_version} take different files for the same sonames:"]
    groups: dict[tuple[str, str], list[tuple[str, Candidate, Candidate]]] = {}
    for soname, ours, theirs in pairs:
        groups.setdefault((os.path.dirname(ours.path), os.path.dirname(theirs.path)), []).append(
            (soname, ours, theirs))
    for (ours_dir, theirs_dir), members in groups.items():
        names = ", ".join(compact_sonames([m[0] for m in members]))
        word = SOURCE_WORDS.get(members[0][1].source, members[0][1].source)
        diffs = list(dict.fromkeys((o.version or "version unknown", t.version or "version unknown")
                                   for _so, o, t in members if not (o.version and o.version == t.version)))
        if not diffs:
            versions = "the same version" + ("s" if len(members) > 1 else "")
        elif len(diffs) == 1:
            versions = f"{diffs[0][0]} vs torch's {diffs[0][1]}"
        else:
            versions = "; ".join(f"{so} {o.version or '?'} vs torch's {t.version or '?'}" for so, o, t in members
                                 if o.version != t.version)
        lines.append(f"{names}: onnxruntime gets {word} {ours_dir}, torch's own are in {theirs_dir} ({versions})")
    example = next((f": {so} {o.version} instead of its {t.version}" for so, o, t in pairs
                    if o.version and t.version and o.version != t.version), "")
    lines.append(
        "A process holds one library per soname, so whichever is loaded first wins: if the preload maps "
        f"onnxruntime's copies and torch is imported after, torch runs on them instead of its own{example} "
        "(and if torch comes first, onnxruntime runs on torch's copies).")
    fix = "import torch first (before onnxruntime and the preload): both then use torch's copies"
    if directory:
        fix += "\nor drop --directory: the default order takes torch's copies"
    else:
        fix += '\nor `ortdoctor preload --directory ""` / `import ortdoctor.hook`: the NVIDIA wheels torch uses'
    return make("torch-loads-other-copy", "\n".join(lines), fix)
