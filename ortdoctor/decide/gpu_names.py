"""GPU names and compute capabilities, for telling whether a build carries kernels for a GPU.

An error text names a GPU by its marketing name ("NVIDIA GeForce RTX 5090") or by its architecture
("sm_120", "compute capability 12.0"). The table maps the common names to the compute capability
NVIDIA lists for them (https://developer.nvidia.com/cuda-gpus); it is deliberately short: a name that
is not in it is simply not recognised.
"""

from __future__ import annotations

import re

__all__ = ["FAMILIES", "sm_from_text", "sm_of_name"]

#: (pattern over the GPU name, compute capability as "sm_NN", architecture family)
FAMILIES: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), sm, family)
    for pattern, sm, family in (
        (r"\bRTX\s*50[5-9]0\b|\bRTX\s*PRO\s*\d{4}\s*Blackwell\b", "sm_120", "Blackwell"),
        (r"\bGB10\b|\bDGX\s*Spark\b", "sm_121", "Blackwell"),
        (r"\bB200\b|\bGB200\b", "sm_100", "Blackwell"),
        (r"\bH100\b|\bH200\b|\bGH200\b", "sm_90", "Hopper"),
        (r"\bRTX\s*40[5-9]0\b|\bL40S?\b|\bL4\b|\bRTX\s*\d{4}\s*Ada\b", "sm_89", "Ada Lovelace"),
        (r"\bOrin\b", "sm_87", "Ampere (Jetson Orin)"),
        (r"\bRTX\s*30[5-9]0\b|\bA10G?\b|\bA40\b|\bRTX\s*A[2-6]000\b", "sm_86", "Ampere"),
        (r"\bA100\b|\bA30\b", "sm_80", "Ampere"),
        (r"\bRTX\s*20[6-8]0\b|\bGTX\s*16[5-6]0\b|\bT4\b|\bQuadro\s*RTX\b", "sm_75", "Turing"),
        (r"\bXavier\b", "sm_72", "Volta (Jetson Xavier)"),
        (r"\bV100\b|\bTitan\s*V\b", "sm_70", "Volta"),
        (r"\bP100\b|\bGP100\b", "sm_60", "Pascal"),
        (r"\bGTX\s*10[5-8]0\b|\bGT\s*1030\b|\bP40\b|\bP4\b|\bQuadro\s*P\d{3,4}\b", "sm_61", "Pascal"),
        (r"\bJetson\s*Nano\b", "sm_53", "Maxwell (Jetson Nano)"),
        (r"\bGTX\s*9[5-8]0\b|\bTesla\s*M(?:40|60)\b|\bQuadro\s*M\d{3,4}\b", "sm_52", "Maxwell"),
        (r"\bGTX\s*750\b|\bGTX\s*745\b", "sm_50", "Maxwell"),
        (r"\bK80\b", "sm_37", "Kepler"),
        (r"\bGT\s*7[1-4]0\b|\bK40\b|\bK20X?\b|\bGTX\s*TITAN\b(?!\s*[XVZ])", "sm_35", "Kepler"),
    )
)

_SUFFIX = re.compile(r"(\d{3,4})(?=(?:Ti|SUPER|Super|S)\b)")
_SM = re.compile(r"\bsm_?(\d{2,3})[a-z]?\b|compute capability[:\s]*(\d{1,2})\.(\d)", re.IGNORECASE)


def sm_of_name(name: str) -> tuple[str, str] | None:
    """``("sm_120", "Blackwell")`` for a GPU name in the table, else None."""
    # users write the suffix onto the number ("GTX 1080Ti", "RTX 4070Super"); the table's names end at a word
    # boundary, so the suffix is set apart first
    name = _SUFFIX.sub(r"\1 ", name)
    for pattern, sm, family in FAMILIES:
        if pattern.search(name):
            return sm, family
    return None


def sm_from_text(text: str) -> str | None:
    """An architecture written out in a text: ``sm_87``, ``sm120``, ``compute capability 8.6``."""
    m = _SM.search(text)
    if m is None:
        return None
    if m.group(1):
        return f"sm_{m.group(1)}"
    return f"sm_{m.group(2)}{m.group(3)}"
