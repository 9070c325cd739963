"""What a failed smoke session's messages mean: ORT's text classified into causes.

The smoke runner (:mod:`ortdoctor.prove.smoke.runner`) reports what the child did and said; this
module reads what it said with the error-text classifier, so every cause a report shows comes from
one place, whether it was pasted into ``explain`` or printed by the smoke child.
"""

from __future__ import annotations

from ortdoctor.core.catalog import CATALOG
from ortdoctor.core.facts import Match
from ortdoctor.core.record import replace
from ortdoctor.decide.resolve import DRIVER_SONAMES

TYPE_CHECKING = False

if TYPE_CHECKING:
    from ortdoctor.prove.smoke.runner import SmokeResult

__all__ = ["classify_smoke"]

_MAX_EVIDENCE_LINES = 30

# Causes about the installed files, which a missing driver does not explain: they stay causes.
# Everything else a smoke session says without a driver (a crash in the provider's initialisers, CUDA
# error 35 read as "driver too old", no GPU, a fallback to the CPU) is what the missing driver does.
_FILE_CAUSES = ("cuda-lib-", "cuda-major-", "cudnn-major-", "cudnn-sublibrary-", "lib-", "numpy-", "glibcxx-",
                "ort-", "zlibwapi-", "msvc-", "sibling-", "tensorrt-major-", "tensorrt-cuda-major-",
                "tensorrt-incomplete", "tensorrt-unavailable", "matrix-")
# the stages at which the child works on the GPU (before them: the preload, the import)
_GPU_STAGES = frozenset({"session", "run", "done"})


def classify_smoke(result: SmokeResult, *, no_driver: bool = False) -> SmokeResult:
    """``result`` with its causes (and their lines first in the evidence); unchanged when it passed or
    was already classified. ``no_driver``: no NVIDIA driver is usable here (``driver-missing``); a
    session that failed on the GPU then failed for that reason, and says so (:func:`_for_want_of_driver`)."""
    result = _classified(result)
    return _for_want_of_driver(result) if no_driver else result


def _for_want_of_driver(result: SmokeResult) -> SmokeResult:
    """Without a driver the smoke session cannot run on the GPU, whatever the build's own failure looks
    like (1.18 and 1.22 crash in the CUDA provider's initialisers, 1.17 reports CUDA error 35): the
    cause is ``driver-missing``; the failure's own reading becomes its consequence, so no second error
    (``smoke-failed``, ``driver-too-old``) sends the user after a symptom. Causes about the files stay."""
    if result.ok or result.stage not in _GPU_STAGES:
        return result
    if any(m.finding_id == "driver-missing" and not m.consequence for m in result.causes):
        return result  # already attributed
    blocked = _needs_the_driver(result)
    causes = tuple(m if m.consequence or _about_the_files(m, blocked) else replace(m, consequence=True)
                   for m in result.causes)
    what = result.error or (f"the smoke child ended with {result.exit_status}" if result.exit_status else
                            "the smoke session did not run on the CUDA EP")
    entry = CATALOG["driver-missing"]
    cause = Match("driver-missing", f"The smoke session could not run on the GPU: no NVIDIA driver is usable "
                  f"here. {what}", entry.cause, entry.fix or "", what.splitlines()[0] if what else "")
    return replace(result, causes=(cause, *causes))


# the dynamic loader's own words for a library it could not load or link: about the files, not the driver
_LOADER_ERRORS = ("cannot open shared object file", "undefined symbol", "error 126", "LoadLibrary failed")


def _about_the_files(m: Match, blocked: frozenset[str]) -> bool:
    """A cause a missing driver does not explain: its id is about the installed files, or its line is the
    loader refusing a library that is not the driver's own (nor one that links it, ``blocked``)."""
    if m.details.get("soname") in blocked:
        return False
    if m.finding_id.startswith(_FILE_CAUSES):
        return True
    text = f"{m.evidence}\n{m.what}"
    return any(e in text for e in _LOADER_ERRORS) and not any(n in text for n in DRIVER_SONAMES)


def _needs_the_driver(result: SmokeResult) -> frozenset[str]:
    """The libraries the child's preload found but could not load because they link the driver's own
    library (cuDNN 9's runtime-compiled engines link libcuda.so.1): ORT then reports them as not found,
    which no package install changes."""
    failed = (result.preload or {}).get("failed") or ()
    return frozenset(str(f.get("soname")) for f in failed if isinstance(f, dict)
                     and any(f"{n}: cannot open" in str(f.get("error")) for n in DRIVER_SONAMES))


def _classified(result: SmokeResult) -> SmokeResult:
    if result.ok or result.causes or not result.message_text:
        return result
    # the classifier (its tables and patterns) is loaded only when a smoke session failed: `check
    # --no-smoke` and every passing check skip it
    from ortdoctor.diagnose.classify import classify

    causes = tuple(classify(result.message_text, ort_version=result.ort_version))
    if not causes:
        return result
    evidence: list[str] = []
    for line in (*(m.evidence for m in causes), *result.evidence):
        if line not in evidence and len(evidence) < _MAX_EVIDENCE_LINES:
            evidence.append(line)
    return replace(result, causes=causes, evidence=tuple(evidence))
