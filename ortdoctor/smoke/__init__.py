"""The smoke run: a real session on the CUDA execution provider, in a child process CPU fallback cannot fool.

``run_smoke(SmokeRequest(...)) -> SmokeResult`` is the whole API; see :mod:`ortdoctor.smoke.runner`.
The child (:mod:`ortdoctor.smoke.child`) and the model (:mod:`ortdoctor.smoke.model`) live beside it.

The runner is imported on first use: the child is a module of this package too, and must not pay for
the parent's subprocess, threading and dataclass machinery before its own measured work.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ortdoctor.smoke.runner import SmokeRequest, SmokeResult, not_run, run_smoke

__all__ = ["SmokeRequest", "SmokeResult", "not_run", "run_smoke"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from ortdoctor.smoke import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
