"""The report's data: what one ``check`` found, every derived decision computed once.

:class:`Report` is built by :func:`ortdoctor.doctor.check.run_check`; the renderers of this package
(:mod:`.text`, :mod:`.json_report`, :mod:`.markdown`, :mod:`.short`) only read it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ortdoctor.core.ep_names import CUDA_EP
from ortdoctor.core.exitcodes import FAIL, OK, USAGE
from ortdoctor.core.facts import Environment, Finding, Plan, to_jsonable
from ortdoctor.core.record import field, record
from ortdoctor.decide.devices import DeviceMap, map_devices
from ortdoctor.decide.loader_view import LibraryRow, library_rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

if TYPE_CHECKING:  # `check` without --model or a smoke session does not load these modules
    from ortdoctor.probes.host import HostInfo
    from ortdoctor.prove.model_check.inspect import ModelInspection
    from ortdoctor.prove.model_check.placement import Placement
    from ortdoctor.prove.model_check.trt_profile import TrtAdvice
    from ortdoctor.prove.smoke.devices import DeviceSmoke
    from ortdoctor.prove.smoke.runner import SmokeResult

if TYPE_CHECKING:
    Verdict = Literal["ok", "warn", "fail"]
else:
    Verdict = str  # the alias is the type checker's; at run time only its name is imported
#: What a plain program can expect: the session runs on the GPU as is, only when the libraries are
#: preloaded (ortdoctor's hook, LD_LIBRARY_PATH), or not at all here.
if TYPE_CHECKING:
    Outcome = Literal["works", "works-with-preload", "cannot-work"]
else:
    Outcome = str  # the alias is the type checker's; at run time only its name is imported


@record
class Report:
    """Everything one `check` found; :mod:`ortdoctor.report.json_report` turns it into the contract's JSON and
    :mod:`ortdoctor.report.text` into the human report."""

    verdict: Verdict
    findings: tuple[Finding, ...]
    env: Environment
    plan: Plan | None
    matrix_path: str | None
    smoke: SmokeResult | None = None  # None when it did not run
    smoke_skipped: str | None = None  # why the smoke session did not run
    device_id: int = 0
    directory: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    # What to install on this machine when no GPU build is installed (None when one is).
    recommendation: str | None = None
    device_map: DeviceMap | None = None  # CUDA ordinal -> NVML device; derived from env when not given
    all_devices: bool = False  # `check --all-devices`: every visible GPU was checked
    device_smokes: tuple[DeviceSmoke, ...] = ()  # one per CUDA ordinal (--all-devices)
    model: ModelReport | None = None  # `check --model`
    # The library table, each row's mark decided once (derived from env and plan when not given).
    libraries: tuple[LibraryRow, ...] = ()
    host: HostInfo | None = None  # which machine this report is from (reports of a fleet merge on it)

    def __post_init__(self) -> None:
        # Derived views, computed once here so that no renderer decides them again.
        if self.device_map is None:
            object.__setattr__(self, "device_map", map_devices(self.env.driver))
        if not self.libraries and self.plan is not None:
            object.__setattr__(self, "libraries", library_rows(self.env, self.plan))

    @property
    def outcome(self) -> Outcome:
        """``works-with-preload`` when a library the session needs is found only by a preload (and no
        installed hook does it), so a plain ``InferenceSession`` falls back to the CPU."""
        if self.verdict == "fail":
            return "cannot-work"
        if not self.env.python.hook_pth and any(
                row.state == "needs-preload" and (row.plan.required or row.plan.name == "cudnn")
                for row in self.libraries):
            return "works-with-preload"
        return "works"

    @property
    def devices(self) -> DeviceMap:
        assert self.device_map is not None  # set in __post_init__
        return self.device_map


def verdict_of(findings: Iterable[Finding]) -> Verdict:
    """``fail`` when any finding is an error, ``warn`` when the worst is a warning, else ``ok``."""
    severities = {f.severity for f in findings}
    if "error" in severities:
        return "fail"
    if "warning" in severities:
        return "warn"
    return "ok"


@record
class ModelReport:
    path: str
    inspection: ModelInspection
    findings: tuple[Finding, ...] = ()
    ran: bool = False  # whether the child was started
    ort_version: str | None = None
    providers: tuple[str, ...] = ()  # the model session's providers, as get_providers() said
    cuda_ep_active: bool = False
    placement: Placement | None = None
    # the test run (ortdoctor.prove.model_check.proof): inputs, the CPU EP's and the EP's runs, the
    # comparison of every output, the speed-up; or {"problems": [...]} when it could not run
    run: dict[str, Any] | None = None
    cuda_graph: dict[str, Any] | None = None
    preload: dict[str, Any] | None = None
    error: str | None = None  # onnxruntime's error text when the session could not be created
    child_failure: str | None = None  # the child crashed / hung / gave no answer
    log_lines: tuple[str, ...] = ()  # ORT's warnings and errors while creating the session
    extra: dict[str, Any] = field(default_factory=dict)
    ep: str = CUDA_EP  # the execution provider under test
    ep_options: dict[str, str] = field(default_factory=dict)  # its options as the session reports them
    test_inputs: dict[str, Any] | None = None  # the inputs proposed or given: {"inputs", "dims", "problems"}
    trt: TrtAdvice | None = None  # TensorRT EP profile and engine-cache options (advice only)
    client: dict[str, Any] | None = None  # what an IO-binding client must place on the device
    # why the given --input-shape / --input cannot run on the model (its limits named); nothing was started
    refused: tuple[str, ...] = ()
    # what the proof compared and how (prove/model_check/budget.py): the whole model or a bounded run, and
    # whether the CPU reference loaded beside the session under test
    comparison: dict[str, Any] | None = None

    @property
    def input_error(self) -> bool:
        """The model itself cannot be used as given (unreadable, invalid, truncated, ...), or the shapes
        given for it cannot run (``refused``)."""
        from ortdoctor.diagnose.model import INPUT_ERROR_IDS

        return bool(self.refused) or any(f.id in INPUT_ERROR_IDS for f in self.findings)

    @property
    def exit_code(self) -> int:
        """2 for an unusable input model, 1 when any finding is an error, else 0."""
        if self.input_error:
            return USAGE
        return FAIL if any(f.severity == "error" for f in self.findings) else OK

    def to_json(self) -> dict[str, Any]:
        """The ``model`` block of ``ortdoctor check --json``."""
        ins = self.inspection
        p = self.placement
        return {
            "path": self.path,
            "ok": not any(f.severity == "error" for f in self.findings),
            "file": {
                "bytes": ins.file_bytes,
                "total_bytes": ins.total_bytes,
                "problem": ins.problem,
                "ir_version": ins.ir_version,
                "producer": ins.producer,
                "opsets": {(d or "ai.onnx"): v for d, v in ins.opsets.items()},
                "inputs": [{"name": i.name, "dtype": i.dtype, "shape": list(i.shape) if i.shape is not None else None,
                            "dynamic": i.is_dynamic} for i in ins.inputs],
                "nodes": ins.node_count,
                "nodes_with_subgraphs": ins.node_count_all,
                "op_types": ins.op_types,
                "control_flow": list(ins.control_flow_nodes),
                "initializers": ins.initializer_count,
                "initializer_bytes": ins.initializer_bytes,
                "external_data": [to_jsonable(r) for r in ins.external_refs],
            },
            # static (from the file): the nodes that only compute shapes, which onnxruntime may keep on the CPU
            "shape_only_nodes": list(ins.shape_nodes),
            "ep": self.ep,
            "ep_options": self.ep_options,
            "ran": self.ran,
            "ort_version": self.ort_version,
            "providers": list(self.providers),
            "cuda_ep_active": self.cuda_ep_active,
            "placement": None if p is None else {
                "source": list(p.source),
                "nodes_total": p.total,
                "final_graph_nodes": p.final_graph_nodes,
                "nodes_by_provider": p.nodes_by_provider,
                "op_types_by_provider": p.op_types_by_provider,
                "op_types_from": p.op_types_from,
                "cpu_nodes": list(p.cpu_nodes),
                "memcpy_nodes": p.memcpy_nodes,
                "memcpy_causes": p.memcpy_causes,
                "gpu_share": p.gpu_share,
            },
            "test_inputs": self.test_inputs,
            "refused": list(self.refused),
            "comparison": self.comparison,
            "run": self.run,
            "client": self.client,
            "tensorrt": self.trt.to_json() if self.trt is not None else None,
            "cuda_graph": self.cuda_graph,
            "preload": self.preload,
            "error": self.error,
            "child_failure": self.child_failure,
            "findings": [to_jsonable(f) for f in self.findings],
        }


__all__ = ["ModelReport", "Report", "Verdict", "verdict_of"]
