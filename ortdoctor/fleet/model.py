"""A fleet as data: one :class:`NodeResult` per node, and the :class:`FleetReport` over all of them.

A node's result keeps only what a fleet view needs from its report (where it ran, the verdict, the
findings, the versions that may drift between nodes), so thousands of them fit in little memory; the
full reports stay where they were written. A node without a report (unreachable, timed out, the
check crashed, its output unreadable) is a result too, with the reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any, Literal

from ortdoctor.core.record import field, record

__all__ = [
    "FAILING",
    "Drift",
    "DriftValue",
    "FindingGroup",
    "FleetReport",
    "NodeFinding",
    "NodeResult",
    "NotAReport",
    "OutcomeGroup",
    "Status",
    "Versions",
    "exit_code",
    "node_from_report",
    "node_without_report",
    "worst_status",
]

# ok / warn / fail: the node's own verdict. The others: no verdict, because no report came back.
Status = Literal["ok", "warn", "fail", "unreachable", "timeout", "error"]
FAILING: frozenset[str] = frozenset({"fail", "unreachable", "timeout", "error"})
_STATUS_RANK = {"ok": 0, "warn": 1, "fail": 2, "error": 3, "timeout": 4, "unreachable": 5}
_VERDICTS = ("ok", "warn", "fail")


class NotAReport(ValueError):
    """A JSON object that is not the report of ``ortdoctor check --json``."""


@record
class NodeFinding:
    id: str
    severity: str  # "error" | "warning" | "info"
    title: str
    detail: str
    fix: str | None


@record
class Versions:
    """The facts that may differ between nodes, each as the text a person compares (None: unknown)."""

    onnxruntime: str | None = None  # "onnxruntime-gpu 1.31.1", "onnxruntime-gpu 1.31.1 + onnxruntime 1.31.1"
    ort_cuda: str | None = None  # the CUDA version the installed build was made for: "13.0"; "CPU build"
    cudart: str | None = None  # the CUDA runtime the check picked: "13.0.96"
    cudnn: str | None = None  # the cuDNN it picked: "9.19.0.56"
    driver: str | None = None  # "580.159.04"; "none (library-not-found)"
    driver_cuda: str | None = None  # the highest CUDA the driver supports: "13.0"
    torch: str | None = None  # "2.11.0+cu130"; "not installed"
    python: str | None = None
    gpus: str | None = None  # "8 x NVIDIA H200"; "none"
    ortdoctor: str | None = None

    def items(self) -> list[tuple[str, str | None]]:
        return [(f.name, getattr(self, f.name)) for f in fields(self)]


@record
class NodeResult:
    """One node: its report's essentials, or why there is no report."""

    source: str  # where it came from: "reports/a.json", "logs.txt:120 [pod/ortdoctor-x/ortdoctor]", "ray:4f2a…"
    status: Status
    findings: tuple[NodeFinding, ...] = ()
    versions: Versions = Versions()
    host: Mapping[str, Any] = field(default_factory=dict, compare=False)
    reason: str | None = None  # why there is no report (status unreachable / timeout / error)
    smoke: str | None = None  # "ok", "failed", "not run"; None without a report
    schema_version: int | None = None
    ray: Mapping[str, Any] | None = field(default=None, compare=False)  # node id, address, GPUs Ray counts
    label: str = ""  # the node's unique name in its fleet (given by :func:`ortdoctor.fleet.drift.summarize`)
    hint: str | None = None  # a name to fall back on when the report has no host section (a log prefix)

    @property
    def problem_ids(self) -> tuple[str, ...]:
        """The ids of its errors and warnings, sorted: nodes with the same ones failed the same way."""
        return tuple(sorted({f.id for f in self.findings if f.severity in ("error", "warning")}))


@record
class FindingGroup:
    """One finding id across the fleet, with the nodes that have it."""

    id: str
    severity: str  # the worst severity any node gave it
    title: str
    fix: str | None  # the fix most nodes got; ``fix_variants`` says how many different ones there were
    detail: str  # one node's detail (the first node's), to show what was seen
    nodes: tuple[str, ...]
    fix_variants: int = 1


@record
class DriftValue:
    value: str
    nodes: tuple[str, ...]
    failing: int  # how many of those nodes failed


@record
class Drift:
    """One fact with more than one value across the fleet."""

    id: str  # "drift-driver"
    field: str  # the Versions field: "driver"
    label: str  # "NVIDIA driver"
    values: tuple[DriftValue, ...]  # most nodes first
    note: str | None = None  # what it means, where known ("2 nodes on driver 535.x while ... needs >= 580")
    only_on_failing: tuple[str, ...] = ()  # values no passing node has, while passing nodes exist


@record
class OutcomeGroup:
    """Nodes that ended the same way: the same status and the same error and warning ids."""

    status: Status
    problem_ids: tuple[str, ...]
    nodes: tuple[str, ...]
    reason: str | None = None  # for nodes without a report: the (first) reason


@record
class FleetReport:
    nodes: tuple[NodeResult, ...]
    findings: tuple[FindingGroup, ...] = ()
    drift: tuple[Drift, ...] = ()
    groups: tuple[OutcomeGroup, ...] = ()
    notes: tuple[str, ...] = ()  # about the input: skipped lines and files, duplicates, skipped nodes

    def counts(self) -> dict[str, int]:
        c: Counter[str] = Counter(n.status for n in self.nodes)
        return {s: c[s] for s in _STATUS_RANK}

    @property
    def status(self) -> Status:
        return worst_status(n.status for n in self.nodes)


def worst_status(statuses: Any) -> Status:
    worst: Status = "ok"
    for s in statuses:
        if _STATUS_RANK[s] > _STATUS_RANK[worst]:
            worst = s
    return worst


def exit_code(fleet: FleetReport, *, strict: bool = False) -> int:
    """The worst node's exit code: 1 when a node fails or has no report (or warns, with ``strict``)."""
    statuses = {n.status for n in fleet.nodes}
    if statuses & FAILING or (strict and "warn" in statuses):
        return 1
    return 0


# --------------------------------------------------------------------------------------------------
# From a report
# --------------------------------------------------------------------------------------------------
Intern = Callable[[str], str]


def _same(s: str) -> str:
    return s


def node_from_report(data: Any, source: str, *, intern: Intern = _same, hint: str | None = None) -> NodeResult:
    """The essentials of one ``check --json`` report. ``intern`` shares equal strings between nodes
    (titles and fixes repeat on every node of a big fleet).

    Raises:
        NotAReport: ``data`` is not such a report (it says which field is missing or wrong).
    """
    if not isinstance(data, dict):
        raise NotAReport(f"a JSON {type(data).__name__}, not an object")
    if "fleet_schema_version" in data:
        raise NotAReport("a fleet report (ortdoctor fleet --json), not one node's report")
    schema = data.get("schema_version")
    verdict = data.get("verdict")
    if not isinstance(schema, int) or verdict not in _VERDICTS or not isinstance(data.get("findings"), list):
        raise NotAReport("not an ortdoctor check report (no schema_version, verdict and findings)")
    findings = tuple(_finding(f, intern) for f in data["findings"] if isinstance(f, dict))
    host = data.get("host")
    return NodeResult(
        source=source,
        status=verdict,
        findings=findings,
        versions=versions_of(data, intern),
        host=dict(host) if isinstance(host, dict) else {},
        smoke=_smoke(data.get("smoke")),
        schema_version=schema,
        hint=hint,
    )


def node_without_report(source: str, status: Status, reason: str, *, host: Mapping[str, Any] | None = None,
                        ray: Mapping[str, Any] | None = None, hint: str | None = None) -> NodeResult:
    return NodeResult(source=source, status=status, reason=reason, host=dict(host or {}), ray=ray, hint=hint)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _finding(f: Mapping[str, Any], intern: Intern) -> NodeFinding:
    fix = f.get("fix")
    return NodeFinding(
        id=intern(_text(f.get("id")) or "unknown"),
        severity=intern(_text(f.get("severity")) or "info"),
        title=intern(_text(f.get("title"))),
        detail=intern(_text(f.get("detail"))),
        fix=intern(str(fix)) if fix is not None else None,
    )


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def versions_of(data: Mapping[str, Any], intern: Intern = _same) -> Versions:
    ort = _dict(data.get("ort"))
    drv = _dict(data.get("driver"))
    torch = data.get("torch")
    py = _dict(data.get("python"))

    def s(value: Any) -> str | None:
        return intern(str(value)) if value is not None and value != "" else None

    if ort.get("installed"):
        dists = [d for d in ort.get("distributions") or [] if isinstance(d, dict)]
        onnxruntime = " + ".join(f"{d.get('name')} {d.get('version')}" for d in dists) or s(ort.get("active"))
        ort_cuda = "CPU build" if ort.get("is_gpu_build") is False else s(ort.get("cuda_version"))
    else:
        onnxruntime, ort_cuda = ("not installed" if ort else None), None
    if drv.get("available"):
        driver = s(drv.get("version"))
    elif drv:
        driver = f"none ({drv.get('error_kind') or 'not available'})"
    else:
        driver = None
    devices = [d for d in drv.get("devices") or [] if isinstance(d, dict)]
    gpus = _gpus(devices) if drv.get("available") else ("none" if drv else None)
    return Versions(
        onnxruntime=s(onnxruntime),
        ort_cuda=s(ort_cuda),
        cudart=s(_library_version(data, "cudart")),
        cudnn=s(_library_version(data, "cudnn")),
        driver=s(driver),
        driver_cuda=s(drv.get("cuda_version")),
        torch=s(torch.get("version")) if isinstance(torch, dict) else ("not installed" if "torch" in data else None),
        python=s(py.get("version")),
        gpus=s(gpus),
        ortdoctor=s(data.get("ortdoctor_version")),
    )


def _library_version(data: Mapping[str, Any], name: str) -> str | None:
    for lib in data.get("libraries") or []:
        if isinstance(lib, dict) and lib.get("name") == name:
            if lib.get("path") is None:
                return "not found"
            return str(lib.get("version") or "found, version unknown")
    return None


def _gpus(devices: Sequence[Mapping[str, Any]]) -> str:
    if not devices:
        return "none"
    c = Counter(str(d.get("name") or "GPU") for d in devices)
    return ", ".join(f"{n} x {name}" for name, n in sorted(c.items()))


def _smoke(smoke: Any) -> str | None:
    if not isinstance(smoke, dict):
        return None
    if not smoke.get("ran"):
        return "not run"
    return "ok" if smoke.get("ok") else "failed"
