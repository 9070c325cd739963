"""ortdoctor: why is my ONNX Runtime session not using the GPU? Diagnose, fix, and prove it.

The public API is small and imports nothing heavy at ``import ortdoctor`` time:

* :func:`ortdoctor.preload` loads the CUDA and cuDNN libraries the installed onnxruntime-gpu needs, by
  absolute path, and returns what it loaded from where (a drop-in for ``onnxruntime.preload_dlls``);
* :func:`ortdoctor.check` inspects the environment and returns a report with findings;
* ``import ortdoctor.hook`` preloads once, silently, before the first session.
"""

from __future__ import annotations

from ortdoctor._version import __version__

# `typing` costs ~10 ms to import and `import ortdoctor.hook` sits on programs' start-up path, so
# the annotations below stay strings and typing is imported for type checkers only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ortdoctor.preloading.preloader import PreloadResult

__all__ = ["__version__", "check", "preload"]


def preload(
    directory: str | None = None,
    cuda: bool = True,
    cudnn: bool = True,
    msvc: bool = True,
    strict: bool = False,
    **kwargs: Any,
) -> PreloadResult:
    """Load the libraries the installed onnxruntime-gpu needs; see :func:`ortdoctor.preloading.preloader.preload`."""
    from ortdoctor.preloading.preloader import preload as _preload

    return _preload(directory=directory, cuda=cuda, cudnn=cudnn, msvc=msvc, strict=strict, **kwargs)


def check(**kwargs: Any) -> Any:
    """Inspect the environment and return a report; see :func:`ortdoctor.doctor.check.run_check`."""
    from ortdoctor.doctor.check import run_check

    return run_check(**kwargs)
