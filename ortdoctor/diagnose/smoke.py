"""What a failed smoke session's messages mean: ORT's text classified into causes.

The smoke runner (:mod:`ortdoctor.prove.smoke.runner`) reports what the child did and said; this
module reads what it said with the error-text classifier, so every cause a report shows comes from
one place, whether it was pasted into ``explain`` or printed by the smoke child.
"""

from __future__ import annotations

from ortdoctor.core.record import replace

TYPE_CHECKING = False

if TYPE_CHECKING:
    from ortdoctor.prove.smoke.runner import SmokeResult

__all__ = ["classify_smoke"]

_MAX_EVIDENCE_LINES = 30


def classify_smoke(result: SmokeResult) -> SmokeResult:
    """``result`` with its causes (and their lines first in the evidence); unchanged when it passed or
    was already classified."""
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
