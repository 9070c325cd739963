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
    "NO_REPORT_KEY",
    "Drift",
    "DriftValue",
    "FindingGroup",
    "FleetReport",
    "InvalidReport",
    "Memo",
    "NodeFinding",
    "NodeFix",
    "NodeResult",
    "NotAReport",
    "OutcomeGroup",
    "Status",
    "Versions",
    "exit_code",
    "host_of",
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
    taken_at: str | None = None  # when the report was taken (UTC, ISO 8601); None for older reports

    @property
    def problem_ids(self) -> tuple[str, ...]:
        """The ids of its errors and warnings, sorted: nodes with the same ones failed the same way."""
        return tuple(sorted({f.id for f in self.findings if f.severity in ("error", "warning")}))


@record
class NodeFix:
    """One fix text as nodes gave it, with those nodes."""

    fix: str
    nodes: tuple[str, ...]


@record
class FindingGroup:
    """One finding id across the fleet, with the nodes that have it.

    A node's report is its own word about itself: what it says never stands for other nodes. The title
    and ``fix`` of an id ortdoctor knows come from its own catalog; the fixes the nodes gave (which name
    their paths and versions) are kept per group of nodes that gave the same text (``node_fixes``)."""

    id: str
    severity: str  # the worst severity any node gave it
    title: str  # the catalog's title; for an id this ortdoctor does not know, the one most nodes gave
    fix: str | None  # the catalog's fix (None for an id this ortdoctor does not know)
    detail: str  # one node's detail (the first node's), to show what was seen
    nodes: tuple[str, ...]
    fix_variants: int = 1  # how many different fix texts the nodes gave
    node_fixes: tuple[NodeFix, ...] = ()  # each fix text with its nodes, most nodes first


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
    reason: str | None = None  # for nodes without a report: their reason (the same for every node of the group)


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


class Memo:
    """What was read from a report's sections, for later reports holding the very same section objects
    (:class:`~ortdoctor.fleet.decode.ReportDecoder` gives nodes of one image shared objects): their
    findings and versions are read once. Keyed by the objects' identity, which it keeps alive; at most
    :attr:`LIMIT` entries, so reports that share nothing never make it grow."""

    LIMIT = 64

    def __init__(self) -> None:
        self._by_id: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}

    def get(self, parts: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        key = tuple(map(id, parts))
        hit = self._by_id.get(key)
        if hit is not None:
            return hit[1]
        value = make()
        if len(self._by_id) < self.LIMIT:
            self._by_id[key] = (parts, value)
        return value


_ABSENT = object()


def node_from_report(data: Any, source: str, *, intern: Intern = _same, hint: str | None = None,
                     memo: Memo | None = None) -> NodeResult:
    """The essentials of one ``check --json`` report. ``intern`` shares equal strings between nodes
    (titles and fixes repeat on every node of a big fleet); ``memo`` reuses what was read from the same
    section objects before.

    A report with a field of the wrong type (``"libraries": 1``) is a node in error, with the reason
    ``invalid report: libraries: a number, not an array``: one broken node report costs that node only.

    Raises:
        NotAReport: ``data`` is not such a report (it says which field is missing or wrong).
    """
    if not isinstance(data, dict):
        raise NotAReport(f"a JSON {_kind(data)}, not an object")
    if "fleet_schema_version" in data:
        raise NotAReport("a fleet report (ortdoctor fleet --json), not one node's report")
    record = data.get(NO_REPORT_KEY)
    if record is not None:  # `fleet --ray --save-reports` for a node that gave no report
        return _without_report(record, data, source, hint)
    schema = data.get("schema_version")
    verdict = data.get("verdict")
    if (not isinstance(schema, int) or isinstance(schema, bool) or verdict not in _VERDICTS
            or not isinstance(data.get("findings"), list)):
        raise NotAReport("not an ortdoctor check report (no schema_version, verdict and findings)")
    try:
        host = host_of(data)
    except InvalidReport as exc:
        return node_without_report(source, "error", f"invalid report: {exc}", hint=hint)
    try:
        listed = data["findings"]

        def read_findings() -> tuple[NodeFinding, ...]:
            return tuple(_finding(f, f"findings[{i}]", intern) for i, f in enumerate(listed))

        def read_versions() -> Versions:
            return versions_of(data, intern)

        if memo is None:
            findings, versions = read_findings(), read_versions()
        else:
            findings = memo.get((listed,), read_findings)
            versions = memo.get(tuple([data.get(k, _ABSENT) for k in _VERSION_SECTIONS]), read_versions)
        smoke = _smoke(_get(data, "smoke", dict, ""))
        taken_at = _get(data, "taken_at", str, "")
    except InvalidReport as exc:
        return node_without_report(source, "error", f"invalid report: {exc}", host=host, hint=hint)
    return NodeResult(
        source=source,
        status=verdict,
        findings=findings,
        versions=versions,
        host=host,
        smoke=smoke,
        schema_version=schema,
        hint=hint,
        taken_at=taken_at,
    )


NO_REPORT_KEY = "no_report"  # {"status": "unreachable" | "timeout" | "error", "reason": "..."}


def _without_report(record: Any, data: Mapping[str, Any], source: str, hint: str | None) -> NodeResult:
    try:
        host = host_of(data)
        status = _get(record, "status", str, f"{NO_REPORT_KEY}.") if isinstance(record, dict) else None
        reason = _get(record, "reason", str, f"{NO_REPORT_KEY}.") if isinstance(record, dict) else None
    except InvalidReport as exc:
        return node_without_report(source, "error", f"invalid report: {exc}", hint=hint)
    if status not in ("unreachable", "timeout", "error") or reason is None:
        return node_without_report(source, "error", f"invalid report: {NO_REPORT_KEY}: not a status and a reason",
                                   host=host, hint=hint)
    ray = data.get("ray")
    return node_without_report(source, status, reason, host=host, hint=hint,
                               ray=dict(ray) if isinstance(ray, dict) and ray else None)


def node_without_report(source: str, status: Status, reason: str, *, host: Mapping[str, Any] | None = None,
                        ray: Mapping[str, Any] | None = None, hint: str | None = None) -> NodeResult:
    return NodeResult(source=source, status=status, reason=reason, host=dict(host or {}), ray=ray, hint=hint)


# --------------------------------------------------------------------------------------------------
# Fields, each read with its type checked
# --------------------------------------------------------------------------------------------------
class InvalidReport(ValueError):
    """A report's field has the wrong type; the message names the field and what it holds."""


_KINDS: tuple[tuple[type, str], ...] = ((bool, "true/false"), (str, "a string"), (int, "a number"),
                                        (float, "a number"), (list, "an array"), (dict, "an object"))


def _kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    return next((name for t, name in _KINDS if isinstance(value, t)), type(value).__name__)


def _get(obj: Mapping[str, Any], key: str, want: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]`` when it is of type ``want``; None when absent or null (older reports lack fields).

    Raises:
        InvalidReport: it is there with another type (``true`` is not a number here).
    """
    value = obj.get(key)
    if value is None:
        return None
    wanted = want if isinstance(want, tuple) else (want,)
    if isinstance(value, wanted) and (bool in wanted or not isinstance(value, bool)):
        return value
    names = " or ".join(dict.fromkeys(name for t, name in _KINDS if t in wanted))
    raise InvalidReport(f"{where}{key}: {_kind(value)}, not {names}")


def _items(obj: Mapping[str, Any], key: str, where: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The objects of the array ``obj[key]``, each with its place (``libraries[2].``) for a message."""
    out: list[tuple[str, Mapping[str, Any]]] = []
    for i, item in enumerate(_get(obj, key, list, where) or ()):
        if not isinstance(item, dict):
            raise InvalidReport(f"{where}{key}[{i}]: {_kind(item)}, not an object")
        out.append((f"{where}{key}[{i}].", item))
    return out


# host keys a fleet view reads, with their types (the report's JSON Schema, report/check.schema.json)
_HOST_TEXT = ("name", "hostname", "machine_id", "boot_id", "k8s_node_name", "k8s_pod_name", "k8s_namespace",
              "slurm_job_id", "slurm_node_name", "ray_node_id")


def host_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """The report's host section, its fields checked; {} when it has none.

    Raises:
        InvalidReport: the section or one of the fields a fleet view reads has the wrong type.
    """
    host = _get(data, "host", dict, "")
    if host is None:
        return {}
    for key in _HOST_TEXT:
        value = host.get(key)
        if value is not None and type(value) is not str:  # the usual case checked without a call
            _get(host, key, str, "host.")
    _get(host, "slurm_procid", (str, int), "host.")
    _get(host, "kubernetes", bool, "host.")
    for i, uuid in enumerate(_get(host, "gpu_uuids", list, "host.") or ()):
        if not isinstance(uuid, str):
            raise InvalidReport(f"host.gpu_uuids[{i}]: {_kind(uuid)}, not a string")
    return dict(host)


def _finding(f: Any, where: str, intern: Intern) -> NodeFinding:
    if not isinstance(f, dict):
        raise InvalidReport(f"{where}: {_kind(f)}, not an object")
    where += "."
    fix = _get(f, "fix", str, where)
    return NodeFinding(
        id=intern(_get(f, "id", str, where) or "unknown"),
        severity=intern(_get(f, "severity", str, where) or "info"),
        title=intern(_get(f, "title", str, where) or ""),
        detail=intern(_get(f, "detail", str, where) or ""),
        fix=intern(fix) if fix is not None else None,
    )


# the sections versions_of reads (a memo's key)
_VERSION_SECTIONS = ("ort", "driver", "torch", "python", "libraries", "ortdoctor_version")


def versions_of(data: Mapping[str, Any], intern: Intern = _same) -> Versions:
    """The facts that may drift between nodes.

    Raises:
        InvalidReport: a field it reads has the wrong type.
    """
    ort = _get(data, "ort", dict, "") or {}
    drv = _get(data, "driver", dict, "") or {}
    torch = _get(data, "torch", dict, "")
    py = _get(data, "python", dict, "") or {}

    def s(value: Any) -> str | None:
        return intern(str(value)) if value is not None and value != "" else None

    if _get(ort, "installed", bool, "ort."):
        dists = _items(ort, "distributions", "ort.")
        onnxruntime = " + ".join(f"{_get(d, 'name', str, w)} {_get(d, 'version', str, w)}" for w, d in dists) \
            or s(_get(ort, "active", str, "ort."))
        ort_cuda = "CPU build" if _get(ort, "is_gpu_build", bool, "ort.") is False \
            else s(_get(ort, "cuda_version", str, "ort."))
    else:
        onnxruntime, ort_cuda = ("not installed" if ort else None), None
    available = _get(drv, "available", bool, "driver.")
    devices = _items(drv, "devices", "driver.")
    if available:
        driver = s(_get(drv, "version", str, "driver."))
    elif drv:
        driver = f"none ({_get(drv, 'error_kind', str, 'driver.') or 'not available'})"
    else:
        driver = None
    gpus = _gpus([_get(d, "name", str, w) for w, d in devices]) if available else ("none" if drv else None)
    return Versions(
        onnxruntime=s(onnxruntime),
        ort_cuda=s(ort_cuda),
        cudart=s(_library_version(data, "cudart")),
        cudnn=s(_library_version(data, "cudnn")),
        driver=s(driver),
        driver_cuda=s(_get(drv, "cuda_version", str, "driver.")),
        torch=s(_get(torch, "version", str, "torch.")) if torch is not None
        else ("not installed" if "torch" in data else None),
        python=s(_get(py, "version", str, "python.")),
        gpus=s(gpus),
        ortdoctor=s(_get(data, "ortdoctor_version", str, "")),
    )


def _library_version(data: Mapping[str, Any], name: str) -> str | None:
    for where, lib in _items(data, "libraries", ""):
        if _get(lib, "name", str, where) == name:
            if _get(lib, "path", str, where) is None:
                return "not found"
            return str(_get(lib, "version", str, where) or "found, version unknown")
    return None


def _gpus(names: Sequence[str | None]) -> str:
    if not names:
        return "none"
    c = Counter(name or "GPU" for name in names)
    return ", ".join(f"{n} x {name}" for name, n in sorted(c.items()))


def _smoke(smoke: Mapping[str, Any] | None) -> str | None:
    if smoke is None:
        return None
    if not _get(smoke, "ran", bool, "smoke."):
        return "not run"
    return "ok" if _get(smoke, "ok", bool, "smoke.") else "failed"
