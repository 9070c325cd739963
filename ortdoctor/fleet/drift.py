"""What a fleet's nodes have in common and where they differ; pure functions over node results.

:func:`summarize` names every node uniquely, groups the nodes that ended the same way, groups the
findings by id (with their fix and the nodes that have them) and lists each fact that drifts between
nodes (onnxruntime, its CUDA build, the CUDA runtime and cuDNN picked, the driver, PyTorch, Python,
the GPUs), with the values, the nodes holding each, and the values only failing nodes have: the
answer to "what differs between the good nodes and the bad ones".
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ortdoctor.core.record import replace
from ortdoctor.core.severity import severity_rank
from ortdoctor.fleet.model import (
    FAILING,
    Drift,
    DriftValue,
    FindingGroup,
    FleetReport,
    NodeFinding,
    NodeFix,
    NodeResult,
    OutcomeGroup,
    Status,
)

__all__ = ["DRIFT_FIELDS", "assign_labels", "summarize"]

# Versions field -> how a person calls it
DRIFT_FIELDS: tuple[tuple[str, str], ...] = (
    ("onnxruntime", "onnxruntime"),
    ("ort_cuda", "onnxruntime's CUDA build"),
    ("cudart", "CUDA runtime (libcudart)"),
    ("cudnn", "cuDNN"),
    ("driver", "NVIDIA driver"),
    ("driver_cuda", "CUDA the driver supports"),
    ("torch", "PyTorch"),
    ("python", "Python"),
    ("gpus", "GPUs"),
    ("ortdoctor", "ortdoctor"),
)
_STATUS_ORDER = {"unreachable": 0, "timeout": 1, "error": 2, "fail": 3, "warn": 4, "ok": 5}
NAMES_IN_A_NOTE = 5

# (onnxruntime's CUDA "major.minor") -> the lowest driver for it, or None; default: the shipped matrix
MinDriver = Callable[[str], str | None]


def summarize(nodes: Iterable[NodeResult], *, notes: Sequence[str] = (),
              min_driver: MinDriver | None = None) -> FleetReport:
    """The fleet report over ``nodes`` (in their order). ``min_driver`` answers the lowest Linux driver
    for a CUDA version (default: from the shipped compatibility matrix, loaded only when needed)."""
    labelled = assign_labels(list(nodes))
    return FleetReport(
        nodes=tuple(labelled),
        findings=tuple(_finding_groups(labelled)),
        drift=tuple(_drifts(labelled, min_driver or _matrix_min_driver())),
        groups=tuple(_outcome_groups(labelled)),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------------
def _base_name(n: NodeResult) -> str:
    h = n.host
    for key in ("name", "k8s_node_name", "slurm_node_name", "hostname"):
        value = h.get(key)
        if value:
            return str(value)
    ray_id = h.get("ray_node_id") or (n.ray or {}).get("node_id")
    if ray_id:
        return f"ray:{str(ray_id)[:12]}"
    return n.hint or n.source


def _qualifiers(n: NodeResult, base: str) -> list[str]:
    """What tells apart nodes that share a name, most telling first."""
    h = n.host
    out = []
    ray_id = h.get("ray_node_id") or (n.ray or {}).get("node_id")
    if ray_id:
        out.append(f"ray:{str(ray_id)[:8]}")
    pod = h.get("k8s_pod_name")
    if pod and pod != base:
        out.append(f"pod:{pod}")
    if h.get("slurm_procid") is not None:
        out.append(f"task:{h['slurm_procid']}")
    if n.hint and n.hint != base:
        out.append(n.hint)
    return out


def assign_labels(nodes: list[NodeResult]) -> list[NodeResult]:
    """Give every node a unique label: its machine's name, qualified only where names collide; the
    nodes come back sorted by it (numbers in names compare as numbers: gpu-2 before gpu-10)."""
    bases = [_base_name(n) for n in nodes]
    count = Counter(bases)
    labels: list[str] = []
    for n, base in zip(nodes, bases, strict=True):
        label = base
        if count[base] > 1:
            quals = _qualifiers(n, base)
            label = f"{base} ({quals[0]})" if quals else base
        labels.append(label)
    # whatever still collides (the same machine reported twice) is numbered in input order
    seen: Counter[str] = Counter(labels)
    taken: Counter[str] = Counter()
    out = []
    for n, label in zip(nodes, labels, strict=True):
        if seen[label] > 1:
            taken[label] += 1
            label = f"{label} #{taken[label]}"
        out.append(n if n.label == label else replace(n, label=label))
    out.sort(key=lambda n: _natural(n.label))
    return out


_DIGITS = re.compile(r"(\d+)")


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    return tuple([(0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(text) if part])


def _by_identity(nodes: Sequence[NodeResult], part: Callable[[NodeResult], Any]) -> list[tuple[Any, list[int]]]:
    """The nodes' ``part`` (their findings, their versions), each distinct object once with the
    positions of the nodes holding it. Nodes of one image share these objects (the merge reads each
    distinct section once), so a fleet of thousands has a handful of them: work per object, not per node."""
    by_id: dict[int, tuple[Any, list[int]]] = {}
    for i, n in enumerate(nodes):
        obj = part(n)
        entry = by_id.get(id(obj))
        if entry is None:
            by_id[id(obj)] = (obj, [i])
        else:
            entry[1].append(i)
    return list(by_id.values())


def _in_order(runs: list[list[int]]) -> list[int]:
    """Node positions gathered from several runs (each ascending), in ascending order."""
    if len(runs) == 1:
        return runs[0]
    return sorted(i for run in runs for i in run)


# --------------------------------------------------------------------------------------------------
# Findings by id, nodes by outcome
# --------------------------------------------------------------------------------------------------
def _finding_groups(nodes: Sequence[NodeResult]) -> list[FindingGroup]:
    # id -> [(the finding as one set of nodes gave it, those nodes' positions)], in order of first sight
    by_id: dict[str, list[tuple[NodeFinding, list[int]]]] = defaultdict(list)
    for findings, positions in _by_identity(nodes, lambda n: n.findings):
        seen: set[str] = set()
        for f in findings:
            if f.id not in seen:  # one finding id once per node (some repeat it, once per library)
                seen.add(f.id)
                by_id[f.id].append((f, positions))
    from ortdoctor.core.catalog import CATALOG

    labels = [n.label for n in nodes]
    groups = []
    for fid, hits in by_id.items():
        severity = min({f.severity for f, _ in hits}, key=severity_rank)
        # a node's fix is shown with that node only: one node's report never supplies the fix of others
        by_fix: dict[str, list[list[int]]] = defaultdict(list)
        for f, positions in hits:
            if f.fix:
                by_fix[f.fix].append(positions)
        fix_nodes = [(fix, _in_order(runs)) for fix, runs in by_fix.items()]
        # most nodes first; among equals the fix its first node gave first
        fix_nodes.sort(key=lambda kv: (-len(kv[1]), kv[1][0]))
        members = _in_order([positions for _, positions in hits])
        entry = CATALOG.get(fid)
        if entry is None:
            titles: Counter[str] = Counter()
            for f, positions in hits:
                titles[f.title] += len(positions)
        first = min(hits, key=lambda h: h[1][0])[0]
        groups.append(FindingGroup(
            id=fid,
            severity=severity,
            title=entry.title if entry is not None else titles.most_common(1)[0][0],
            fix=entry.fix if entry is not None else None,
            detail=first.detail,
            nodes=tuple([labels[i] for i in members]),
            fix_variants=len(fix_nodes),
            node_fixes=tuple(NodeFix(fix=fix, nodes=tuple([labels[i] for i in positions]))
                             for fix, positions in fix_nodes),
        ))
    groups.sort(key=lambda g: (severity_rank(g.severity), -len(g.nodes), g.id))
    return groups


def _outcome_groups(nodes: Sequence[NodeResult]) -> list[OutcomeGroup]:
    # nodes without a report are together only with nodes that have the same reason: a group never
    # speaks for a node with another one
    problems = {id(findings): nodes[positions[0]].problem_ids
                for findings, positions in _by_identity(nodes, lambda n: n.findings)}
    by_key: dict[tuple[Status, tuple[str, ...], str | None], list[NodeResult]] = defaultdict(list)
    for n in nodes:
        by_key[(n.status, problems[id(n.findings)], n.reason)].append(n)
    groups = [OutcomeGroup(status=status, problem_ids=ids, nodes=tuple(n.label for n in members), reason=reason)
              for (status, ids, reason), members in by_key.items()]
    groups.sort(key=lambda g: (_STATUS_ORDER[g.status], -len(g.nodes), g.problem_ids))
    return groups


# --------------------------------------------------------------------------------------------------
# Drift
# --------------------------------------------------------------------------------------------------
def _drifts(nodes: Sequence[NodeResult], min_driver: MinDriver) -> list[Drift]:
    out = []
    versions = _by_identity(nodes, lambda n: n.versions)
    labels = [n.label for n in nodes]
    failing = [n.status in FAILING for n in nodes]
    for fname, label in DRIFT_FIELDS:
        runs: dict[str, list[list[int]]] = defaultdict(list)
        for v, positions in versions:
            value = getattr(v, fname)
            if value is not None:
                runs[value].append(positions)
        if len(runs) < 2:
            continue
        by_value = {value: _in_order(r) for value, r in runs.items()}
        values = sorted(by_value.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        passing = any(not failing[i] for members in by_value.values() for i in members)
        only_failing = tuple(v for v, members in values
                             if passing and all(failing[i] for i in members))
        note = _driver_note(nodes, min_driver) if fname == "driver" else None
        out.append(Drift(
            id=f"drift-{fname.replace('_', '-')}",
            field=fname,
            label=label,
            values=tuple(DriftValue(value=v, nodes=tuple([labels[i] for i in members]),
                                    failing=sum([failing[i] for i in members]))
                         for v, members in values),
            note=note,
            only_on_failing=only_failing,
        ))
    return out


def _driver_note(nodes: Sequence[NodeResult], min_driver: MinDriver) -> str | None:
    """Which nodes' drivers are too old for the onnxruntime build they have, per build."""
    below_runs: dict[tuple[str, str, str], list[list[int]]] = defaultdict(list)
    missing_runs: list[list[int]] = []
    for v, positions in _by_identity(nodes, lambda n: n.versions):
        if v.driver is None or v.ort_cuda is None or not _CUDA_RE.match(v.ort_cuda):
            continue
        if v.driver.startswith("none"):
            missing_runs.append(positions)
            continue
        need = min_driver(v.ort_cuda)
        if need and _vtuple(v.driver) < _vtuple(need):
            below_runs[(v.onnxruntime or "onnxruntime-gpu", v.ort_cuda, need)].append(positions)
    below = {key: [nodes[i] for i in _in_order(runs)] for key, runs in below_runs.items()}
    missing = [nodes[i] for i in _in_order(missing_runs)] if missing_runs else []
    parts = []
    for (ort, cuda, need), members in sorted(below.items(), key=lambda kv: -len(kv[1])):
        branches = ", ".join(sorted({f"{m.versions.driver.split('.')[0]}.x" for m in members
                                     if m.versions.driver}))
        parts.append(f"{_nodes_phrase(members)} on driver {branches} while {ort} (CUDA {cuda}) needs >= {need}: "
                     f"{_names(members)}")
    if missing:
        parts.append(f"{_nodes_phrase(missing)} with a CUDA build but no usable driver: {_names(missing)}")
    return "; ".join(parts) or None


def _nodes_phrase(members: Sequence[NodeResult]) -> str:
    return f"{len(members)} node{'s' if len(members) != 1 else ''}"


def _names(members: Sequence[NodeResult]) -> str:
    names = [m.label for m in members[:NAMES_IN_A_NOTE]]
    more = len(members) - len(names)
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


_CUDA_RE = re.compile(r"^\d+\.\d+")


def _vtuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:4])


def _matrix_min_driver() -> MinDriver:
    """The shipped matrix's answer, loaded on the first question; no answer when it cannot be read."""
    cache: dict[str, str | None] = {}
    state: dict[str, Any] = {}

    def ask(cuda: str) -> str | None:
        if cuda in cache:
            return cache[cuda]
        if "matrix" not in state:
            from ortdoctor.decide.matrix.load import load_matrix
            from ortdoctor.decide.matrix.model import MatrixError

            try:
                state["matrix"] = load_matrix()
            except MatrixError:  # a broken $ORTDOCTOR_MATRIX loses the note, never the fleet report
                state["matrix"] = None
        matrix = state["matrix"]
        answer = matrix.min_driver(cuda, "linux") if matrix is not None else None
        cache[cuda] = answer
        return answer

    return ask
