"""The smoke run: a real session on the CUDA execution provider, in a child process CPU fallback cannot fool.

``run_smoke(SmokeRequest(...)) -> SmokeResult`` is the whole API; see :mod:`ortdoctor.smoke.runner`.
The child (:mod:`ortdoctor.smoke.child`) and the model (:mod:`ortdoctor.smoke.model`) live beside it.
"""

from __future__ import annotations

from ortdoctor.smoke.runner import SmokeRequest, SmokeResult, not_run, run_smoke

__all__ = ["SmokeRequest", "SmokeResult", "not_run", "run_smoke"]
