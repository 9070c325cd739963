"""The order of finding severities: errors first, then warnings, then notes. Every sort by severity uses it."""

from __future__ import annotations

#: Rank of each severity, most serious first.
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


def severity_rank(severity: str) -> int:
    """The rank of a severity; one read from elsewhere that is none of the three comes last."""
    return SEVERITY_ORDER.get(severity, len(SEVERITY_ORDER))
