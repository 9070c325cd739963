"""ONNX Runtime / CUDA error text -> the failures it stands for, root cause first, with fixes for its stack.

Matching is by the words of the messages, never by ORT's source line numbers (``provider_bridge_ort.cc:1778``
changes with every release). Each :class:`Match` names a finding id of :mod:`ortdoctor.core.catalog`
and quotes the line it matched, so a person can see why ortdoctor said so.

How a text is read:

1. **Streamed, every line** (:mod:`.textlines`, :mod:`.text_observe`): the text (or a piped log) is read line by line, long
   lines in overlapping windows; nothing after line N is dropped. Each line is also read joined to the
   end of the line before, so a message a terminal wrapped in two is still one message.
2. **Observations, then decisions.** A line only records what it says (a soname that could not be
   opened, a CUDA error code, a provider list without CUDA, ORT's ``Require cuDNN 9.* and CUDA 12.*``).
   What it *means* is decided at the end, with everything the text showed: the build's CUDA major (a
   later line may name it), the binding and OS (:mod:`.stack`), the onnxruntime version, the matrix
   (:mod:`.text_meaning`).
3. **The root cause first.** Findings are ranked: causes (a missing library, a driver error) before the
   optional TensorRT provider, before bare symptoms (``CUDA_PATH is set but CUDA wasn't able to be
   loaded``), before consequences (``Failed to create CUDAExecutionProvider``, fallback banners); within
   a rank, in order of appearance. One id is listed once.

The classifier is pure and total: any text in, a list out, no exception (fuzzed in the tests).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

from ortdoctor.core.catalog import CATALOG as _CATALOG
from ortdoctor.core.ep_names import CUDA_EP
from ortdoctor.core.facts import Match
from ortdoctor.core.finding_ids import FindingId
from ortdoctor.core.record import replace
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import Matrix, MatrixError
from ortdoctor.diagnose import fixes
from ortdoctor.diagnose.stack import Stack
from ortdoctor.diagnose.text_evidence import Evidence
from ortdoctor.diagnose.text_meaning import Context, Decider, with_evidence
from ortdoctor.diagnose.text_observe import Facts, Hit, Scanner
from ortdoctor.diagnose.textlines import iter_lines
from ortdoctor.formats.ortlog import strip_ansi

#: Findings that only say "the CUDA EP was not used" (or that nothing is wrong); a cause usually sits beside them.
#: Each is marked in its catalog row (``consequence=True``).
CONSEQUENCE_IDS: frozenset[FindingId] = frozenset(e.id for e in _CATALOG.values() if e.consequence)

#: Ids whose (title, cause, fix) `explain` shows when the catalog lacks them (kept for callers; every id
#: the classifier gives is in the catalog now).
LOCAL_DOCS: dict[str, tuple[str, str, str]] = {
    fid: (_CATALOG[fid].title, _CATALOG[fid].cause, _CATALOG[fid].fix) for fid in ("cuda-ep-fell-back-to-cpu",)
}

# Rank of a finding, from its catalog row: 0 a cause, 1 the optional TensorRT provider, 2 a symptom that
# names no cause, 3 a consequence or a harmless warning. Ids whose row sets no rank take the observation's.
_RANK: dict[str, int] = {e.id: e.rank for e in _CATALOG.values() if e.rank is not None}


# --------------------------------------------------------------------------------------------------
# Resolution over the whole text
# --------------------------------------------------------------------------------------------------
def _tensorrt_banner(facts: Facts) -> bool:
    """Python's EP Error banner retried without TensorRT and kept the CUDA provider the caller asked for."""
    return any("Tensorrt" in when and CUDA_EP in when and CUDA_EP in back
               for when, back in facts.banners)


def _resolve(scanner: Scanner, ctx: Context, matrix: Matrix | None,
             used: dict[str, list[Evidence]]) -> list[Match]:
    decider = Decider(scanner, ctx, matrix)
    facts = scanner.facts
    ranked: list[tuple[int, int, Match]] = []
    fell_back = _tensorrt_banner(facts)
    for hit in scanner.hits.values():
        match = decider.decide(hit)
        if match is None:
            continue
        if match.finding_id == "tensorrt-unavailable" and fell_back and not match.details.get("soname", "").startswith(
                ("libnvinfer", "nvinfer")):
            match = decider.tensorrt_fell_back(hit)
        rank = _RANK.get(match.finding_id, 3 if match.consequence else hit.rank)
        ranked.append((rank, hit.order, match))
    if any(rank == 0 for rank, _, _ in ranked):
        # guesses a program prints after the real error ("cannot import name ...", genai's "set CUDA_PATH")
        ranked = [t for t in ranked if not (t[0] == 2 and t[2].finding_id == "cuda-lib-missing")]
    if any(t[2].finding_id == "tensorrt-ep-create-failed" for t in ranked):
        # TensorRT was found and loaded, only a function in it was not: ORT's generic "Please install
        # TensorRT libraries" around that error does not mean TensorRT is absent
        ranked = [t for t in ranked if t[2].finding_id != "tensorrt-unavailable"]
    if not scanner.hits or any(_status_like(hit) for hit in scanner.hits.values()):
        cause = decider.evidence_cause()
        if cause is not None:
            # the text's own evidence names the cause: the advice its status error or fallback line would
            # get by name (memory, driver, "install the requirements") is not printed against it
            ranked = [t for t in ranked if t[2].finding_id not in _CANNED and t[2].finding_id != cause.finding_id]
            ranked.append((0, -1, cause))
    ranked.sort(key=lambda t: (t[0], t[1]))
    merged = _merge(m for _, _, m in ranked)
    used.update(decider.used)
    return merged


#: Observations whose finding is advice by name (a status, a code, a fallback line): the text's evidence can
#: contradict them.
_STATUS_KINDS = frozenset({"cublas_status", "cudnn_status", "ep_not_created", "fell_back_to_cpu", "dll_init_failed",
                           "provider_126", "cuda_path_set", "cpu_applied"})
_STATUS_CODES = frozenset({"2", "3", "35", "209", "222", "999"})
#: Findings whose advice is canned by the message's name (memory, driver, "install the requirements").
_CANNED: frozenset[FindingId] = frozenset({"cublas-status-error", "cudnn-status-error", "driver-too-old", "gpu-out-of-memory",
                     "cuda-ep-fell-back-to-cpu", "cuda-path-set-not-loaded", "dll-init-failed", "driver-error",
                     "gpu-arch-unsupported", "cpu-provider-only-applied", "tensorrt-engine-build-failed"})


def _status_like(hit: Hit) -> bool:
    # a TensorRT engine build that failed for no stated reason, or for "Unsupported SM", is explained by the GPU
    # and the TensorRT the text shows (a generation TensorRT dropped)
    return hit.kind in _STATUS_KINDS or (hit.kind == "cuda_code" and hit.subject in _STATUS_CODES) or (
        hit.kind == "trt_build" and hit.subject in ("engine", "sm"))


def _merge(matches: Iterable[Match]) -> list[Match]:
    """One match per id: the first (highest ranked) keeps its text; the others' subjects are named in it."""
    out: dict[str, Match] = {}
    also: dict[str, list[str]] = {}
    for m in matches:
        if m.finding_id not in out:
            out[m.finding_id] = m
            continue
        subject = m.details.get("soname") or m.details.get("dll") or m.details.get("status") or m.details.get("op")
        first = out[m.finding_id].details
        if subject and subject not in (first.get("soname"), first.get("dll"), first.get("status"), first.get("op")):
            names = also.setdefault(m.finding_id, [])
            if subject not in names and len(names) < 5:
                names.append(subject)
    result = []
    for fid, m in out.items():
        if fid in also:
            details = dict(m.details)
            details["also"] = ", ".join(also[fid])
            m = replace(m, what=f"{m.what} Also: {details['also']}.", details=details)
        result.append(replace(m, packages=tuple(fixes.pip_specs(m.fix))))
    return result


def _matrix() -> Matrix | None:
    try:
        return load_matrix()
    except (MatrixError, OSError, ValueError):
        return None


def classify_with_stack(
    lines: Iterable[str],
    *,
    cuda_major: int | None = None,
    cudnn_major: int | None = None,
    ort_version: str | None = None,
    from_environment: bool = False,
    used: dict[str, list[Evidence]] | None = None,
    evidence: list[Evidence] | None = None,
) -> tuple[list[Match], Stack]:
    """:func:`classify_lines`, and the stack the text showed (binding, OS, versions) that shaped the fixes.

    ``used`` (filled when given): the evidence each finding was decided on, by finding id; ``evidence``
    (filled when given): everything the text showed (:mod:`.text_evidence`).

    ``from_environment``: the majors and version describe the onnxruntime installed *here*, not the text's;
    they are ignored when the text shows another binding or another operating system (a log pasted from
    a C# program on Windows says nothing about this machine's Python packages)."""
    scanner = Scanner()
    for line in lines:
        scanner.feed(line)
    stack = with_evidence(scanner.stack.stack(), scanner.evidence.evidence())
    if evidence is not None:
        evidence.extend(scanner.evidence.items)
    if not scanner.hits and stack.gpu_sm is None:
        return [], stack  # nothing said, and no GPU whose pairing with the text's CUDA could be a cause
    ctx = Context(_sane_major(cuda_major), _sane_major(cudnn_major), _sane_version(ort_version))
    if from_environment and not _same_place(stack):
        ctx = Context()
    return _resolve(scanner, ctx, _matrix(), used if used is not None else {}), stack


def _same_place(stack: Stack) -> bool:
    """Whether a text may come from this Python process's environment."""
    if stack.known and not stack.python:
        return False
    here = "windows" if sys.platform.startswith("win") else "macos" if sys.platform == "darwin" else "linux"
    return stack.os in ("unknown", here) or (here == "linux" and stack.os == "wsl")


def classify_lines(
    lines: Iterable[str],
    *,
    cuda_major: int | None = None,
    cudnn_major: int | None = None,
    ort_version: str | None = None,
) -> list[Match]:
    """:func:`classify` over lines that come one at a time (a log piped in): every line is read."""
    return classify_with_stack(lines, cuda_major=cuda_major, cudnn_major=cudnn_major, ort_version=ort_version)[0]


def classify(
    text: str,
    *,
    cuda_major: int | None = None,
    cudnn_major: int | None = None,
    ort_version: str | None = None,
) -> list[Match]:
    """Every known failure in ``text``, the root cause first (see the module docstring for the ranking).

    ``cuda_major`` / ``cudnn_major`` are the build's majors when known (from the environment); ORT's
    ``Require cuDNN 9.* and CUDA 13.*`` line in the text fills them otherwise. With them, a library of
    another major is reported as a major mismatch instead of a plain missing library. ``ort_version`` is the
    installed onnxruntime; a version the text names is used when it is not given.
    """
    if not isinstance(text, str) or not text:
        return []
    return classify_lines(iter_lines(text), cuda_major=cuda_major, cudnn_major=cudnn_major, ort_version=ort_version)


def _sane_major(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 100 else None


def _sane_version(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and re.fullmatch(r"\s*\d+\.\d+(?:\.\d+)?\S{0,20}\s*", value) \
        else None


def context_from_text(text: str, base: Context | None = None) -> Context:
    """Fill unknown build majors from ORT's own `Require cuDNN N.* and CUDA M.*` message."""
    base = base or Context()
    if base.cuda_major is not None and base.cudnn_major is not None:
        return base
    m = re.search(r"Require cuDNN (\d{1,2})\.\* and CUDA (\d{1,2})\.\*", strip_ansi(text[:4_000_000]))
    if not m:
        return base
    return Context(
        cuda_major=base.cuda_major if base.cuda_major is not None else int(m.group(2)),
        cudnn_major=base.cudnn_major if base.cudnn_major is not None else int(m.group(1)),
        ort_version=base.ort_version,
    )


def finding_ids(text: str, **kwargs: object) -> list[str]:
    """The distinct finding ids in ``text``, in :func:`classify`'s order."""
    out: list[str] = []
    for m in classify(text, **kwargs):  # type: ignore[arg-type]
        if m.finding_id not in out:
            out.append(m.finding_id)
    return out


__all__ = ["CONSEQUENCE_IDS", "LOCAL_DOCS", "Context", "Match", "Stack", "classify", "classify_lines",
           "classify_with_stack", "context_from_text", "finding_ids", "strip_ansi"]
