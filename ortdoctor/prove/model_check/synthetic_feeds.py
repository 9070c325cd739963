"""Make the arrays a synthetic input plan describes; runs in the child, where numpy is at hand.

The plan is the JSON form of :class:`ortdoctor.prove.model_check.shape_subgraph.SyntheticPlan` (the parent
decides, without numpy; the child only materialises). numpy is imported inside the function, so importing
this module costs nothing in the parent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: dtype names of the plan that numpy spells differently
_NUMPY_NAMES = {"bool": "bool_"}


def materialise(plan: Mapping[str, Any], seed: int = 0) -> dict[str, Any]:
    """``{input name: numpy array}`` for every input of ``plan``; the same seed gives the same arrays.

    Raises:
        ValueError: a dtype numpy has no type for (the float8 types; bfloat16 unless ml_dtypes is loaded)
            or an unknown ``values``.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds: dict[str, Any] = {}
    for item in plan["inputs"]:
        name = str(item["name"])
        try:
            dtype = np.dtype(_NUMPY_NAMES.get(item["dtype"], item["dtype"]))
        except TypeError:
            raise ValueError(f"input {name!r}: numpy has no dtype {item['dtype']!r}") from None
        shape = tuple(int(d) for d in item["shape"])
        values = item["values"]
        if values == "fill":
            array = np.full(shape, item["fill"], dtype=dtype)
        elif values == "randint":
            array = rng.integers(int(item["low"]), int(item["high"]), size=shape).astype(dtype)
        elif values == "uniform":
            array = rng.uniform(float(item["low"]), float(item["high"]), size=shape).astype(dtype)
        elif values == "normal":
            array = rng.standard_normal(shape).astype(dtype)
        elif values == "arange":  # positions along the last axis, the same for every row
            start = int(item["low"] or 0)
            length = shape[-1] if shape else 1
            array = np.broadcast_to(np.arange(start, start + length), shape).astype(dtype)
        else:
            raise ValueError(f"input {name!r}: unknown values {values!r}")
        feeds[name] = array
    return feeds


__all__ = ["materialise"]
