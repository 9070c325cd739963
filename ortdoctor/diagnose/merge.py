"""Merging: the resolver's and the smoke session's findings into the checklist's, without saying a thing twice."""

from __future__ import annotations

from collections.abc import Sequence

from ortdoctor.core.catalog import CATALOG, known_id, make
from ortdoctor.core.ep_names import CUDA_EP
from ortdoctor.core.execution_providers import smoke_provider
from ortdoctor.core.facts import (
    Finding,
    PackageStep,
    Plan,
)
from ortdoctor.core.finding_ids import FindingId
from ortdoctor.core.record import replace
from ortdoctor.decide.devices import CudaDevice, describe
from ortdoctor.decide.fixes import Installer, step
from ortdoctor.diagnose.context import RESTRICTED_MODES, SUPERSEDED, Ctx
from ortdoctor.diagnose.driver import visible_ids

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def merge_plan_findings(found: list[Finding], plan: Plan | None) -> list[Finding]:
    """The resolver's own findings, unless the diagnosis already says the same (same id)."""
    if plan is None:
        return found
    have = {f.id for f in found}
    return found + [f for f in plan.findings if f.id not in have and SUPERSEDED.get(f.id) not in have]


def _smoke_evidence(smoke: Any) -> str:
    ev = getattr(smoke, "evidence", None)
    if isinstance(ev, str):
        text = ev
    elif isinstance(ev, Sequence):
        text = "\n".join(str(x) for x in ev)
    else:
        text = ""
    return text or (getattr(smoke, "error", None) or "")


def merge_smoke(found: list[Finding], smoke: Any, installer: Installer | None = None) -> list[Finding]:
    """A failed smoke run confirms the findings its classified causes name (ORT's own line appended as
    evidence) or adds them; then its own verdict (fell back / failed) is added with ORT's error. A cause
    added here whose fix installs packages gets them as the inspected interpreter's pip command."""
    if smoke is None or getattr(smoke, "ok", False):
        return found
    if not getattr(smoke, "ran", False) and getattr(smoke, "finding_id", None) is None:
        return found  # skipped on purpose (--no-smoke, no CUDA build): nothing to report
    confirm = "Confirmed by the smoke session (a real CUDA session in a child process); ORT said:\n"
    cause_ids: list[FindingId] = []
    mode_ids = [f.id for f in found if f.id in RESTRICTED_MODES.values()]
    for cause in getattr(smoke, "causes", ()) or ():
        cid = getattr(cause, "finding_id", None)
        if mode_ids and _is_busy(cause):
            cid = mode_ids[0]  # the GPU refuses contexts because of its compute mode, not for lack of GPUs
        soname = (getattr(cause, "details", None) or {}).get("soname")
        damaged = next((f.id for f in found if f.id == "lib-file-damaged" and soname and soname in f.detail), None)
        if cid == "cuda-lib-missing" and damaged:
            cid = damaged  # ORT could not open the file ortdoctor found cut short: the same problem, said once
        if not cid or getattr(cause, "consequence", False) or cid in cause_ids:
            continue
        cause_ids.append(cid)
        evidence = _clip(getattr(cause, "evidence", "") or "", 600)
        hit = next((i for i, f in enumerate(found) if f.id == cid), None)
        if hit is not None:
            found[hit] = replace(found[hit], detail=f"{found[hit].detail}\n{confirm}{evidence}")
        elif cid in CATALOG:
            what = getattr(cause, "what", "") or CATALOG[cid].title
            fix, steps = _cause_fix(cause, installer)
            found.append(make(cid, f"{what}\nThe smoke session's ORT log:\n{evidence}", fix, steps=steps))
    if cause_ids:
        # the causes carry the smoke session's evidence and the fix: a second error saying "the smoke
        # session failed, fix the above first" would only make the report longer
        return found
    fid = known_id(getattr(smoke, "finding_id", None), "smoke-failed")
    if any(f.id == fid for f in found):
        return found
    providers = getattr(smoke, "providers", None)
    ep = getattr(smoke, "ep", None) or CUDA_EP
    row = smoke_provider(smoke)
    ep_words = row.label if row is not None else ep
    detail = f"The smoke session (MatMul+Add+Relu on {ep_words}, CPU fallback disabled, in a child process)"
    detail += f" ran on {list(providers)}" if providers else f" did not run on {ep_words}"
    status = getattr(smoke, "exit_status", None)
    if status and status != "0":
        detail += f" (child exit: {status})"
    error = getattr(smoke, "error", None)
    detail += (":\n" + _clip(error)) if error else "."
    if not error:
        evidence = _smoke_evidence(smoke)
        if evidence:
            detail += "\n" + _clip(evidence)
    return [*found, make(fid, detail, None)]


def _cause_fix(cause: Any, installer: Installer | None) -> tuple[str | None, tuple[PackageStep, ...]]:
    """The classified text's fix, its pip part as the inspected interpreter's command (the text was read
    without knowing which Python printed it; here it is known)."""
    text = getattr(cause, "fix", None) or None
    specs = tuple(getattr(cause, "packages", ()) or ())
    if installer is None or not specs or text is None:
        return text, ()
    steps = (step("install", *specs),)
    alternatives = text.split(", or ", 1)[1:]
    return installer.commands(steps) + "".join(f"\nor {a}" for a in alternatives), steps


def _smoke_signature(smoke: Any) -> tuple[str | None, tuple[str, ...]]:
    return getattr(smoke, "finding_id", None), tuple(getattr(smoke, "cause_ids", ()) or ())


def merge_device_smokes(found: list[Finding], ctx: Ctx, smoke: Any, device_smokes: Sequence[Any]) -> list[Finding]:
    """``check --all-devices``: a device whose smoke session failed like the main one's is named in that
    finding; one that failed differently (or while the main one passed) gets a finding of its own."""
    if not device_smokes:
        return found
    failed = [ds for ds in device_smokes if ds.smoke is not None and ds.smoke is not smoke
              and getattr(ds.smoke, "ran", False) and not getattr(ds.smoke, "ok", False)]
    if not failed:
        return found
    usable = [ds.cuda for ds in device_smokes if ds.cuda is not None and getattr(ds.smoke, "ok", False)]
    main_failed = smoke is not None and getattr(smoke, "ran", False) and not getattr(smoke, "ok", False)
    main_sig = _smoke_signature(smoke) if main_failed else None
    same = [ds for ds in failed if main_sig is not None and _smoke_signature(ds.smoke) == main_sig]
    if same:
        fid = known_id(main_sig[0] if main_sig else None, "smoke-failed")
        hit = next((i for i, f in enumerate(found) if f.id == fid), None)
        names = "; ".join(_device_name(ds) for ds in same)
        if hit is not None:
            found[hit] = replace(found[hit], detail=f"{found[hit].detail}\nThe same failure on: {names}.")
    for ds in failed:
        if ds in same:
            continue
        sm = ds.smoke
        fid = known_id(getattr(sm, "finding_id", None), "smoke-failed")
        where = _device_name(ds)
        providers = getattr(sm, "providers", None)
        detail = f"On {where} the smoke session "
        detail += f"ran on {list(providers)}" if providers else "did not run on the CUDA EP"
        error = getattr(sm, "error", None)
        detail += (":\n" + _clip(error, 800)) if error else "."
        fixes: list[str] = []
        mode_id = _mode_finding(ds.cuda)
        for cause in getattr(sm, "causes", ()) or ():
            if getattr(cause, "consequence", False):
                continue
            if mode_id and _is_busy(cause):
                detail += (f"\nCause ({mode_id}): the GPU's compute mode refuses a new context "
                           "(CUDA error 46, cudaErrorDevicesUnavailable).")
                continue
            detail += f"\nCause ({cause.finding_id}): {getattr(cause, 'what', '')}"
            fix = getattr(cause, "fix", None)
            if fix and fix not in fixes:
                fixes.append(fix)
        if mode_id and ds.cuda is not None and ds.cuda.nvml_index is not None:
            fixes.insert(0, f"sudo nvidia-smi -i {ds.cuda.nvml_index} -c DEFAULT  (see {mode_id})")
        good = [c for c in usable if c is not ds.cuda]
        if good:
            ords = ", ".join(str(c.ordinal) for c in good)
            fixes.append(f"The smoke session passed on CUDA device(s) {ords}: --device-id {good[0].ordinal}, or "
                         f"export CUDA_VISIBLE_DEVICES={visible_ids(good)} to keep a server off this GPU")
        found.append(make(fid, detail, "\n".join(fixes) or None,
                          title=f"the smoke session failed on CUDA device {ds.ordinal}"
                          if fid == "smoke-failed" else f"the smoke session on CUDA device {ds.ordinal} did "
                          "not run on the CUDA execution provider"))
    return found


def _mode_finding(c: CudaDevice | None) -> str | None:
    """The compute-mode finding id of a GPU that refuses new contexts (None for the default mode)."""
    if c is None or c.device is None:
        return None
    return RESTRICTED_MODES.get(c.device.compute_mode or "")


def _is_busy(cause: Any) -> bool:
    """CUDA error 46 (cudaErrorDevicesUnavailable): what a GPU in a restricted compute mode answers.
    The classifier files it with no-gpu-visible; on a GPU NVML shows in such a mode the mode is the cause."""
    text = f"{getattr(cause, 'evidence', '')} {getattr(cause, 'details', {}).get('cuda_error', '')}"
    return getattr(cause, "finding_id", None) == "no-gpu-visible" and (
        "busy or unavailable" in text or "DevicesUnavailable" in text or " 46" in f" {text}")


def _device_name(ds: Any) -> str:
    return describe(ds.cuda) if ds.cuda is not None else f"CUDA device {ds.ordinal} (not visible)"


def _clip(text: str, limit: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]
