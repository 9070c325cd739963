"""pytest plugin (registered through the ``pytest11`` entry point): GPU tests that skip with a reason.

* ``@pytest.mark.requires_cuda_ep``: the test is skipped unless onnxruntime's CUDA execution provider
  works here; the skip reason is ortdoctor's finding (title, id) and its fix.
* ``ort_cuda_session``: a fixture that skips the same way, then returns a factory
  ``ort_cuda_session(model, **options) -> onnxruntime.InferenceSession`` on the CUDA EP (the CUDA and
  cuDNN libraries preloaded first, as ``import ortdoctor.hook`` would).
* ``pytest --ortdoctor``: the verdict and each problem with its fix in the session header.

"Works" means ortdoctor's smoke session ran a model on the CUDA EP with CPU fallback disabled: only a
real session proves it. ``ortdoctor check`` runs once per test session, when the first marked test,
the fixture or ``--ortdoctor`` asks for it; a machine without a CUDA build of onnxruntime skips the
smoke session, so that answer comes fast. The check runs in this process (it imports neither
onnxruntime nor torch) and the smoke session in a spawned child.

pytest loads this module in every test session of an environment where ortdoctor is installed, so it
imports nothing of ortdoctor at load time and does nothing unless one of the three is used.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

__all__ = ["MARKER", "CudaEpStatus", "cuda_ep_status", "skip_reason"]

MARKER = "requires_cuda_ep"
_MARKER_HELP = (f"{MARKER}: skip unless onnxruntime's CUDA execution provider works here (proved by ortdoctor's "
                "smoke session, run once per test session); the reason is ortdoctor's finding and fix")


# a dataclass, not ortdoctor.core.record: loaded in every pytest session, the plugin imports nothing
# of ortdoctor until asked
@dataclass(frozen=True)
class CudaEpStatus:
    """The answer of one `ortdoctor check` for this test session."""

    works: bool
    reason: str | None  # why the CUDA EP does not work, for the skip (None when it works)
    report: Any = None  # ortdoctor.doctor.check.Report; None when ortdoctor itself failed
    crash: str | None = None  # ortdoctor raised: a bug, reported as a test error, never hidden as a skip


_STATUS = pytest.StashKey[CudaEpStatus]()


# ---------------------------------------------------------------------------------------------- hooks
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ortdoctor", "ONNX Runtime CUDA execution provider (ortdoctor)")
    group.addoption("--ortdoctor", action="store_true", default=False,
                    help="Show ortdoctor's verdict and each problem with its fix in the header "
                    "(runs `ortdoctor check` with its smoke session once).")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if not config.getoption("ortdoctor", default=False):
        return None
    status = cuda_ep_status(config)
    if status.report is None:
        return [f"ortdoctor: {status.crash}"]
    from ortdoctor.report.short import render

    return render(status.report).rstrip("\n").splitlines()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker(MARKER) is not None:
        _require_cuda_ep(item.config)


@pytest.fixture
def ort_cuda_session(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Skip unless the CUDA EP works; else a factory: ``ort_cuda_session(model, device_id=0,
    provider_options=None, session_options=None, allow_cpu_nodes=True)`` -> an ``InferenceSession`` whose
    first provider is ``CUDAExecutionProvider`` (``model``: a path or the model's bytes).

    ``allow_cpu_nodes=False`` sets ``session.disable_cpu_ep_fallback``: creating the session fails when a
    node of the model has no CUDA kernel, instead of running that node on the CPU.
    """
    _require_cuda_ep(request.config)
    _preload()
    import onnxruntime

    from ortdoctor.core.ep_names import CUDA_EP

    def make(model: str | os.PathLike[str] | bytes, *, device_id: int = 0,
             provider_options: dict[str, Any] | None = None, session_options: Any = None,
             allow_cpu_nodes: bool = True) -> Any:
        options = session_options if session_options is not None else onnxruntime.SessionOptions()
        if not allow_cpu_nodes:
            options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        ep_options = {"device_id": str(device_id), **{k: str(v) for k, v in (provider_options or {}).items()}}
        source = model if isinstance(model, bytes) else os.fspath(model)
        session = onnxruntime.InferenceSession(source, sess_options=options,
                                               providers=[(CUDA_EP, ep_options)])
        providers = session.get_providers()
        if not providers or providers[0] != CUDA_EP:
            # ortdoctor's smoke session worked, this one did not: a real failure of the code under test
            # (provider options, device id), not of the machine, so fail rather than skip.
            pytest.fail(f"onnxruntime created the session on {providers}, not on CUDAExecutionProvider, although "
                        "ortdoctor's smoke session ran on the CUDA EP here; check device_id and provider_options",
                        pytrace=False)
        return session

    return make


# -------------------------------------------------------------------------------------------- library
def cuda_ep_status(config: pytest.Config) -> CudaEpStatus:
    """This test session's answer, computed on first use and kept in ``config.stash``."""
    status = config.stash.get(_STATUS, None)
    if status is None:
        status = _check()
        config.stash[_STATUS] = status
    return status


def skip_reason(report: Any) -> str | None:
    """None when the smoke session proved the CUDA EP; else the first error's title, id and fix."""
    smoke = report.smoke
    if smoke is not None and getattr(smoke, "ok", False):
        return None
    errors = [f for f in report.findings if f.severity == "error"]
    if errors:
        first = errors[0]
        fix = f"; fix: {' / '.join(first.fix.splitlines())}" if first.fix else ""
        return f"CUDA EP unusable: {first.title} [{first.id}]{fix}"
    why = report.smoke_skipped or (getattr(smoke, "error", None) or "the smoke session did not pass")
    return f"CUDA EP unusable: the smoke session did not prove it ({why.strip().splitlines()[-1]})"


def _check() -> CudaEpStatus:
    try:
        from ortdoctor.doctor.check import run_check

        report = run_check(smoke="auto")
    except Exception as exc:  # a bad $ORTDOCTOR_MATRIX, or ortdoctor's own bug: never disguised as "no GPU"
        from ortdoctor.core.exitcodes import BUG_REPORT_URL

        return CudaEpStatus(works=False, reason=None, crash=f"ortdoctor check raised {type(exc).__name__}: {exc} "
                            f"(run `ortdoctor check --debug`; if it is a bug, report it at {BUG_REPORT_URL})")
    reason = skip_reason(report)
    return CudaEpStatus(works=reason is None, reason=reason, report=report)


def _require_cuda_ep(config: pytest.Config) -> None:
    status = cuda_ep_status(config)
    if status.crash is not None:
        pytest.fail(status.crash, pytrace=False)
    if not status.works:
        skip = pytest.skip.Exception(status.reason or "CUDA EP unusable")
        # reported at the test, not at this line, as pytest does for a skip raised in a fixture
        skip._use_item_location = True
        raise skip


def _preload() -> None:
    """Load the libraries the CUDA EP needs by absolute path, as the smoke session did (idempotent)."""
    from ortdoctor.preloading.preloader import preload

    preload()
