"""Does a package spec name something PyPI has? Checked against the matrix's package table.

The table (``compat_matrix.yaml`` ``packages:``) is generated from ``scripts/data/package_table.yaml``,
which ``scripts/data/collect_package_table.py`` reads from PyPI's index; the fix builder chooses versions
from the same table, and these tests check every spec a fix can print against it.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ortdoctor.decide.matrix.load import load_matrix

MATRIX = load_matrix()


def spec_problem(spec: str) -> str | None:
    """Why ``spec`` cannot be installed from PyPI, or None when some release satisfies it."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return f"{spec!r} is not a valid requirement"
    row = MATRIX.packages.get(canonicalize_name(req.name))
    if row is None:
        return f"{req.name} is not in the matrix's package table (add it to the collector, or it does not exist)"
    matching = [v for v in row.versions if req.specifier.contains(v, prereleases=False)]
    if not matching:
        return f"no release of {req.name} satisfies {spec}" + (f" ({row.note})" if row.note else "")
    if req.extras and canonicalize_name(req.name) == "onnxruntime-gpu":
        # pip installs the newest release that satisfies the spec: that one must have the extras
        newest = max(matching, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))
        release = {r.line: r for r in MATRIX.releases}.get(".".join(newest.split(".")[:2]))
        missing = req.extras - set(release.extras if release else ())
        if missing:
            return f"onnxruntime-gpu {newest} has no extras {sorted(missing)}"
    return None


def specs_of(args: tuple[str, ...]) -> list[str]:
    """The requirement specs among a pip step's arguments (options and their values left out)."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("--index-url", "--extra-index-url", "--python"):
            skip = True
            continue
        if not a.startswith("-"):
            out.append(a)
    return out
