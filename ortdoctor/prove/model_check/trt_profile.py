"""TensorRT EP advice for the user's model: the shape profiles and engine-cache options to pass.

TensorRT builds an engine for a range of input shapes. onnxruntime's TensorRT EP takes that range from
three provider options, each ``"input1:d1xd2,input2:d3xd4"`` (the format of ``trtexec --minShapes``):
``trt_profile_min_shapes``, ``trt_profile_opt_shapes``, ``trt_profile_max_shapes``. Once one is given,
every input with a dynamic dimension needs all three, or the session fails ("User needs to provide all
the dynamic shape inputs with associated profiles", onnxruntime PR #15546 and #17007). With
``trt_engine_cache_enable``/``trt_engine_cache_path`` the engine is built once and reloaded; the profile
options must still be passed, since onnxruntime compares them with the cached ``.profile`` file to decide
whether to rebuild (PR #15546). The Optimum GPU guide (the seed documents) shows the same options for GPT-2.

The values come from the inputs :func:`~.shape_subgraph.propose_inputs` proposed (the "opt" shapes,
which this check ran) and a role per dynamic dimension read from its name or position: batch 1..8,
sequences 1..the model's position-table rows (512 when there is none), image and audio sizes fixed at
the proposed size. With a key/value cache the cache and the new tokens share the table's positions, so
the max profile splits them (past + sequence = rows). Every shape set is checked against the model's
limits (:mod:`.shape_limits`) before it is advised. The engine cache goes to the user's cache directory.
Advice only: nothing here runs TensorRT.

Pure: no numpy, no onnxruntime.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ortdoctor.core.record import record
from ortdoctor.core.user_cache import user_cache_dir
from ortdoctor.prove.model_check.graph import InputInfo, ModelGraph
from ortdoctor.prove.model_check.inspect import QUANTIZED_OPS
from ortdoctor.prove.model_check.shape_limits import PositionLimit, position_limits, shape_problems
from ortdoctor.prove.model_check.shape_subgraph import SyntheticPlan, embedding_tables

Role = Literal["batch", "sequence", "past", "total", "spatial", "channels", "audio", "other"]

MAX_BATCH = 8
DEFAULT_MAX_SEQUENCE = 512
_POSITION_TABLE_WORDS = ("position_embeddings", "position_embedding", "wpe", "pos_embed", "positional")


@record
class InputProfile:
    name: str
    roles: tuple[Role | None, ...]  # None for a fixed dimension
    min: tuple[int, ...]
    opt: tuple[int, ...]
    max: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "roles": list(self.roles), "min": list(self.min), "opt": list(self.opt),
                "max": list(self.max)}


@record
class TrtAdvice:
    profiles: tuple[InputProfile, ...]  # one per input with a dynamic dimension
    cache_path: str
    max_sequence: int | None  # the position-table rows the sequence limits came from; None: the default
    notes: tuple[str, ...] = ()

    def provider_options(self) -> dict[str, str]:
        """What to pass as the TensorRT EP's provider options (strings, as onnxruntime takes them)."""
        options: dict[str, str] = {}
        if self.profiles:
            for key, pick in (("trt_profile_min_shapes", "min"), ("trt_profile_opt_shapes", "opt"),
                              ("trt_profile_max_shapes", "max")):
                options[key] = ",".join(f"{p.name}:{_dims(getattr(p, pick))}" for p in self.profiles)
        options["trt_engine_cache_enable"] = "True"
        options["trt_engine_cache_path"] = self.cache_path
        return options

    def to_json(self) -> dict[str, Any]:
        return {"provider_options": self.provider_options(), "profiles": [p.to_json() for p in self.profiles],
                "max_sequence": self.max_sequence, "notes": list(self.notes)}


def _dims(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


def advise(graph: ModelGraph, plan: SyntheticPlan, model_path: str,
           environ: Mapping[str, str] | None = None) -> TrtAdvice:
    """Profiles for every dynamic input of ``graph``, around the shapes ``plan`` proposed; each of the
    min, opt and max shape sets is checked against the model's limits (:mod:`.shape_limits`) first."""
    opt_shapes = {i.name: i.shape for i in plan.inputs}
    kinds = {i.name: i.kind for i in plan.inputs}
    limits = position_limits(graph)
    rows = min((lim.rows for lim in limits), default=None) or _position_rows(graph)
    max_sequence = rows or DEFAULT_MAX_SEQUENCE
    shaped = []
    for info in graph.inputs:
        if not info.is_dynamic or info.name not in opt_shapes:
            continue
        opt = opt_shapes[info.name]
        roles = tuple(_role(dim, pos, kinds[info.name], info) if pos in info.dynamic_dims or info.shape is None
                      else None for pos, dim in enumerate(info.shape or (None,) * len(opt)))
        if len(roles) != len(opt):  # a given --input-shape of another rank: keep it as it is
            roles = (None,) * len(opt)
        shaped.append((info.name, roles, tuple(opt)))
    high = _high_sizes(shaped, max_sequence)
    profiles = [InputProfile(name, roles, tuple(_low(r, o) for r, o in zip(roles, opt, strict=True)), opt,
                             tuple(high.get(r, o) if r is not None else o for r, o in zip(roles, opt, strict=True)))
                for name, roles, opt in shaped]
    notes = _notes(graph, profiles, rows)
    profiles, fitted = _fit(graph, profiles, limits, opt_shapes)
    notes += fitted
    if "past" in high and rows is not None:
        notes.append(f"past + sequence share the {rows} positions of the position table: the max profile "
                     f"takes {high['past']} cached + {high['sequence']} new tokens; a longer prompt needs a "
                     "profile with a shorter cache")
    return TrtAdvice(tuple(profiles), engine_cache_dir(model_path, environ), rows, tuple(notes))


def _high_sizes(shaped: Sequence[tuple[str, tuple[Role | None, ...], tuple[int, ...]]],
                max_sequence: int) -> dict[Role, int]:
    """The max profile's size per role, so that the max shapes run together: with a key/value cache,
    the cache and the new tokens share the position table (past + sequence <= rows)."""
    opt: dict[Role, int] = {}
    for _, roles, sizes in shaped:
        for role, size in zip(roles, sizes, strict=True):
            if role is not None:
                opt[role] = max(opt.get(role, 0), size)
    high: dict[Role, int] = {"batch": max(opt.get("batch", 1), MAX_BATCH)}
    if "past" in opt:
        sequence = max(opt.get("sequence", 1), max_sequence // 2)
        past = max(opt["past"], max_sequence - sequence)
        high["sequence"], high["past"], high["total"] = sequence, past, past + sequence
    else:
        sequence = max(opt.get("sequence", 1), opt.get("total", 1), max_sequence)
        high["sequence"] = high["total"] = sequence
    return high


def _fit(graph: ModelGraph, profiles: Sequence[InputProfile], limits: Sequence[PositionLimit],
         opt_shapes: Mapping[str, tuple[int, ...]]) -> tuple[list[InputProfile], list[str]]:
    """Check the min and max shape sets (with the fixed inputs at their tested shapes) against the model's
    limits; one that fails falls back to the tested (opt) shapes, and a note says why."""
    out = list(profiles)
    notes: list[str] = []
    for pick in ("min", "max"):
        shapes = {**opt_shapes, **{p.name: getattr(p, pick) for p in out}}
        problems = shape_problems(graph, shapes, limits)
        if problems:
            out = [InputProfile(p.name, p.roles, p.opt if pick == "min" else p.min, p.opt,
                                p.opt if pick == "max" else p.max) for p in out]
            notes.append(f"the {pick} shapes were narrowed to the tested ones: " + "; ".join(problems))
    return out, notes


def engine_cache_dir(model_path: str, environ: Mapping[str, str] | None = None) -> str:
    """Where to keep the model's TensorRT engines: the user's cache directory (the one ortdoctor's hook
    uses, :func:`ortdoctor.core.user_cache.user_cache_dir`), one
    directory per model file. Never the model's own directory: model stores are often read-only, and
    onnxruntime fails to write the engine there."""
    env = os.environ if environ is None else environ
    # a relative setting would follow the current directory, which is no cache: then the default place
    base = user_cache_dir(env) or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache", "ortdoctor")
    absolute = os.path.abspath(model_path)
    stem = os.path.splitext(os.path.basename(absolute))[0] or "model"
    digest = hashlib.sha256(absolute.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return os.path.join(base, "trt-engines", f"{stem}-{digest}")


def _role(dim: int | str | None, pos: int, kind: str, info: InputInfo) -> Role:
    if isinstance(dim, str):
        s = dim.lower()
        if "+" in s:
            return "total"
        if "batch" in s:
            return "batch"
        if "past" in s or "cache" in s:
            return "past"
        if "total" in s and ("seq" in s or "len" in s):
            return "total"
        if "height" in s or "width" in s:
            return "spatial"
        if "channel" in s:
            return "channels"
        if "frame" in s or (kind == "audio" and ("sample" in s or "seq" in s or "len" in s)):
            return "audio"
        if any(k in s for k in ("seq", "len", "token", "step")):
            return "sequence"
    rank = len(info.shape or ())
    if pos == 0:
        return "batch"
    if kind == "image":
        return "channels" if pos in (1, rank - 1) and _channels_at(info) == pos else "spatial"
    if kind == "past_key_values":
        return "past" if pos == rank - 2 else "other"
    if kind == "audio":
        return "audio"
    if pos == 1 and kind in ("token_ids", "token_type_ids", "position_ids", "attention_mask", "integer"):
        return "sequence"
    return "other"


def _channels_at(info: InputInfo) -> int:
    shape = info.shape or ()
    return len(shape) - 1 if shape and shape[-1] in (1, 3, 4) and shape[1] not in (1, 3, 4) else 1


def _low(role: Role | None, opt: int) -> int:
    if role in ("batch", "sequence", "total"):
        return 1
    if role == "past":
        return 0
    return opt


def _position_rows(graph: ModelGraph) -> int | None:
    """Rows of the position-embedding table: the longest sequence the model was built for."""
    for source, tables in embedding_tables(graph).items():
        if "position" in source.lower() and tables:
            return min(t.rows for t in tables)
    for name, info in graph.initializers.items():
        if any(w in name.lower() for w in _POSITION_TABLE_WORDS) and info.dims and len(info.dims) == 2:
            return info.dims[0]
    return None


def _notes(graph: ModelGraph, profiles: Sequence[InputProfile], rows: int | None) -> list[str]:
    notes: list[str] = []
    if not profiles:
        notes.append("no input has a dynamic dimension: TensorRT builds one engine for the fixed shapes, no "
                     "profile is needed")
    elif rows is None and any(r in ("sequence", "total", "past") for p in profiles for r in p.roles):
        notes.append(f"no position table found: sequences are limited to {DEFAULT_MAX_SEQUENCE}; use the "
                     "longest your model accepts")
    if any(r in ("spatial", "audio") for p in profiles for r in p.roles):
        notes.append("image and audio sizes are fixed at the size this check ran; widen min/max to serve "
                     "other sizes (each range costs engine build time)")
    ops = {n.op_type for n in graph.nodes}
    dynamic_quant = sorted(ops & QUANTIZED_OPS)
    if dynamic_quant:
        notes.append(f"the model is dynamically quantized ({', '.join(dynamic_quant)}): TensorRT runs only "
                     "statically, symmetrically quantized (QDQ) models; give it the float model instead")
    elif "QuantizeLinear" in ops:
        unsigned = _unsigned_zero_points(graph, _mapping(graph))
        if unsigned:
            notes.append(f"QDQ model with uint8 zero points ({unsigned} QuantizeLinear node(s)): TensorRT needs "
                         "symmetric int8 quantization (quantize with activation_type=QInt8, weight_type=QInt8)")
        else:
            notes.append("QDQ model: TensorRT's INT8 needs trt_int8_enable=True, with onnxruntime's graph "
                         "optimisations disabled (the Optimum GPU guide)")
    return notes


def _mapping(graph: ModelGraph) -> Mapping[str, str | None]:
    """Tensor name -> element type, for initializers and Constant node values."""
    types: dict[str, str | None] = {name: info.dtype for name, info in graph.initializers.items()}
    for node in graph.nodes:
        if node.op_type == "Constant" and node.constant is not None:
            types.update({o: node.constant.dtype for o in node.outputs if o})
    return types


def _unsigned_zero_points(graph: ModelGraph, types: Mapping[str, str | None]) -> int:
    return sum(1 for n in graph.nodes if n.op_type == "QuantizeLinear" and len(n.inputs) > 2
               and types.get(n.inputs[2]) == "uint8")


__all__ = ["DEFAULT_MAX_SEQUENCE", "MAX_BATCH", "InputProfile", "Role", "TrtAdvice", "advise", "engine_cache_dir"]
