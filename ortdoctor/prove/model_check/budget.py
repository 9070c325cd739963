"""How much of the proof ``check --model`` can afford on this host: decided in the parent, before the child.

The proof needs two sessions on the same file: the one under test (the CUDA EP keeps its weights on the
device, but loads them through host memory) and the CPU EP's reference (all weights in host memory, and
its run costs CPU time that grows with the model). Two rules, from the model's bytes (the file plus its
external data, :attr:`~.inspect.ModelInspection.total_bytes`) and the host's free memory
(``MemAvailable`` of ``/proc/meminfo``):

- **concurrent reference**: the CPU reference loads and runs in a thread of the child while the session
  under test is created, when both fit: ``2 x model + margin <= free``, and the EP under test is a
  device's (with the CPU EP under test both would load on the same cores), and the whole model is compared.
  Otherwise one after the other: a part's reference loads in a second or two, and after the session under
  test their peaks of host memory do not add up.
- **bounded comparison**: above the size limit (default: a quarter of the free memory, at most
  :data:`LIMIT_CAP_BYTES`: above that a whole CPU reference costs seconds of loading, and a float16 model's
  reference holds its weights twice over once the CPU EP has cast them to float32), the CPU EP does not get
  the whole model. Its reference is the model's first blocks (:func:`~.model_part.choose_prefix`: the first
  nodes, cut at a block boundary, reading at most a quarter of the limit in weights), which the EP under test
  runs too, and the whole model still runs on the EP under test. Where no such cut exists, the synthetic test
  run is made at the shortest sequence (one token) instead. The report says which part was compared and why.
  Shapes the user gave are never changed.

Pure but for :func:`available_host_memory`, which reads ``/proc/meminfo`` (None where there is none).
"""

from __future__ import annotations

from typing import Any

from ortdoctor.core.record import record
from ortdoctor.prove.model_check.graph import ModelGraph
from ortdoctor.prove.model_check.model_part import PrefixCut, choose_prefix

MEMINFO = "/proc/meminfo"
#: host memory kept free beside the two sessions: onnxruntime's arenas, numpy's inputs and outputs
MARGIN_BYTES = 512 * 1024 * 1024
#: the bounded comparison's sequence length, where the model has no part to cut
BOUNDED_SEQUENCE = 1
#: the default size limit is a quarter of the free memory, at most this
LIMIT_CAP_BYTES = 2 * 1024 ** 3


def available_host_memory(path: str = MEMINFO) -> int | None:
    """``MemAvailable`` in bytes (what the kernel can give without swapping); None when unknown."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    parts = line.split()
                    return int(parts[1]) * 1024 if len(parts) >= 2 and parts[1].isdigit() else None
    except OSError:
        return None
    return None


@record
class ComparePlan:
    model_bytes: int
    available: int | None  # free host memory, bytes; None when unknown
    limit: int | None  # above it the comparison is bounded; None: no limit (free memory unknown)
    concurrent: bool  # the CPU reference loads beside the session under test
    bounded: bool  # the comparison is bounded: to `part`, or else to a run at BOUNDED_SEQUENCE
    why: str
    part: PrefixCut | None = None  # the first blocks both EPs run and compare

    def to_json(self) -> dict[str, Any]:
        return {"model_bytes": self.model_bytes, "available_bytes": self.available, "limit_bytes": self.limit,
                "concurrent_reference": self.concurrent, "bounded": self.bounded,
                "sequence": BOUNDED_SEQUENCE if self.bounded and self.part is None else None,
                "part": self.part.to_json() if self.part is not None else None, "why": self.why}


def plan_comparison(model_bytes: int, available: int | None, *, limit: int | None = None,
                    shapes_given: bool = False, on_device: bool = True,
                    concurrent: bool | None = None, graph: ModelGraph | None = None) -> ComparePlan:
    """The rules of the module docstring; ``limit`` overrides the default (a quarter of the free memory, at
    most :data:`LIMIT_CAP_BYTES`); ``graph`` is the model's, where the part to compare is cut.
    ``on_device``: the EP under test is a device's; with the CPU EP under test both sessions would load on
    the same cores, so the reference waits (measured: no gain on a loaded 2-core host). ``concurrent``
    forces the choice either way (None: decide)."""
    if limit is None and available is not None:
        limit = min(available // 4, LIMIT_CAP_BYTES)
    over = limit is not None and model_bytes > limit
    bounded = over and not shapes_given
    part = choose_prefix(graph, min((limit or 0) // 4, model_bytes // 4)) if over and graph is not None else None
    # the reference holds the part only: it fits beside the session under test where that session does
    needed = model_bytes + (part.weight_bytes * 2 if part is not None else model_bytes)
    if concurrent is None:
        # with a part the reference is small and quick to load: after the session under test, whose own
        # loading peak then does not add to it (the peak host memory, not a second, is what is bounded here)
        concurrent = on_device and part is None and available is not None and needed + MARGIN_BYTES <= available
    size, free = _gib(model_bytes), _gib(available) if available is not None else "unknown"
    if part is not None:
        bounded = True
        why = (f"the weights take {size} GiB, above the {_gib(limit or 0)} GiB limit ({free} GiB of host memory "
               f"free): the CPU EP and the EP under test compare {part.describe()}; the whole model runs on the "
               "EP under test")
    elif bounded:
        why = (f"the weights take {size} GiB, above the {_gib(limit or 0)} GiB limit ({free} GiB of host memory "
               f"free): the test run is made at sequence length {BOUNDED_SEQUENCE}, so the CPU reference costs "
               "one token's compute")
    elif over:
        why = (f"the weights take {size} GiB, above the {_gib(limit or 0)} GiB limit, but the shapes were given: "
               "compared at those shapes")
    else:
        why = f"the whole model at the tested shapes ({size} GiB of weights, {free} GiB of host memory free)"
    fits = available is not None and needed + MARGIN_BYTES <= available
    if concurrent:
        why += "; the CPU reference loaded beside the session under test"
    elif not fits:
        why += "; the CPU reference loaded after the session under test (host memory does not hold both)"
    elif part is not None:
        why += ("; the CPU reference of the part loaded after the session under test, so that their peaks of host "
                "memory do not add up")
    elif not on_device:
        why += "; the CPU reference loaded after the session under test (both on the CPU: they would share its cores)"
    else:
        why += "; the CPU reference loaded after the session under test"
    return ComparePlan(model_bytes, available, limit, concurrent, bounded, why, part)


def _gib(n: int) -> str:
    return f"{n / (1024 ** 3):.2f}"


__all__ = ["BOUNDED_SEQUENCE", "LIMIT_CAP_BYTES", "MARGIN_BYTES", "ComparePlan", "available_host_memory", "plan_comparison"]
