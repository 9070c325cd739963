"""Export a GPT-2-shaped decoder in float16 with external data, the kind of model `check --model` meets at
the size people deploy (bench/bench_model_check.py, scripts/big_decoder_gpu.sh).

Random weights from a config (nothing is downloaded), exported the way people make an fp16 ONNX model that
onnxruntime loads: the model is exported in float32 by torch.onnx (the TorchScript exporter, opset 17),
then converted to float16 by onnxruntime's own converter,
``onnxruntime.transformers.float16.convert_float_to_float16`` (the tool of onnxruntime's "Create Float16
and Mixed Precision Models" page, https://onnxruntime.ai/docs/performance/model-optimizations/float16.html),
which gives every input of a node the same float type, inserting Casts around the ops it keeps in float32.

The exporter's and the converter's cost grows with the weights (the TorchScript exporter runs ONNX shape
inference over them, the converter makes a dozen numpy passes): at 3 B parameters, many minutes. So by
default (``--weights after``) the graph is exported and converted alone (``export_params=False``: each
weight a graph input named as in the state dict), and each weight is then written in float16 by the
converter's own rounding rule into one external data file, as an initializer. The result is the same model:
on a small configuration its logits on the CPU EP are bit-identical to ``--weights in-export`` (the weights
through the exporter and the converter), which stays available.

Why not ``model.half()`` before the export: on the GPU machine (torch 2.11, CUDA) that export gave a file
whose LayerNormalization nodes bind their type parameter to float and float16 at once, which onnxruntime
refuses to load. (On the CPU, torch 2.13, the same export loads: the converter is the way that does not
depend on the exporter's version.)

    python scripts/export_big_decoder.py OUT_DIR [--layers 36] [--hidden 2560] [--dtype float16]
    python scripts/export_big_decoder.py OUT_DIR --layers 2 --hidden 256 --vocab 1024 --verify  # small, any machine

36 layers of width 2560 (GPT-2's vocabulary, 1,024 positions) is 2.96 B parameters: 5.9 GB in float16.
The float32 export is written to OUT_DIR/fp32 and removed after the conversion (it takes twice the final
size on disk for a while). Needs torch, transformers, onnx and onnxruntime (its CPU package is enough);
uses the GPU for the model's initialisation and trace where torch sees one. ``--verify`` runs the result
once on onnxruntime's CPU EP (the small configuration; a multi-GB model costs minutes there).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

_T0 = time.monotonic()


def _say(what: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f} s] {what}", flush=True)


def build(layers: int, hidden: int, heads: int, vocab: int, positions: int, device: str) -> Any:
    """A GPT2LMHeadModel in float32 with random weights: every parameter, biases and LayerNorm scales too
    (transformers starts those at 0 and 1, and the TorchScript exporter then folds identical tensors into
    one initializer behind Identity nodes, which no trained model has)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads, vocab_size=vocab, n_positions=positions,
                        bos_token_id=vocab - 1, eos_token_id=vocab - 1, use_cache=False)
    config._attn_implementation = "eager"  # plain MatMul/Softmax attention: what every exporter can trace
    torch.manual_seed(0)
    with torch.device(device):
        model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:  # biases and LayerNorm weights; the matrices keep their normal(0, 0.02) start
                p.uniform_(0.5, 1.5) if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") \
                    or name.endswith("ln_f.weight") else p.uniform_(-0.02, 0.02)
    return model


def export_fp32(model: Any, path: Path, vocab: int, device: str, export_params: bool = True) -> None:
    """torch.onnx's TorchScript exporter; ``export_params=False`` writes the graph alone, every weight a graph
    input named as in the module's state dict (``inner.transformer.wte.weight``)."""
    import torch

    class Logits(torch.nn.Module):  # one output, no cache: what a plain text-generation export gives
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).logits

    ids = torch.randint(0, vocab, (1, 16), device=device)
    mask = torch.ones_like(ids)
    with torch.no_grad():
        # dynamo=False: the TorchScript exporter (Optimum's default too); above 2 GB it writes each weight
        # as external data beside the file
        torch.onnx.export(Logits(model), (ids, mask), str(path), input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], opset_version=17, dynamo=False, do_constant_folding=export_params,
                          export_params=export_params,
                          dynamic_axes={"input_ids": {0: "batch_size", 1: "sequence_length"},
                                        "attention_mask": {0: "batch_size", 1: "sequence_length"},
                                        "logits": {0: "batch_size", 1: "sequence_length"}})


def _fast_np_to_float16(np_array: Any, min_positive_val: float = 5.96e-08, max_finite_val: float = 65504.0) -> Any:
    """The rule of onnxruntime's ``float16.convert_np_to_float16`` (non-zero magnitudes below
    ``min_positive_val`` become it, finite ones above ``max_finite_val`` become it, sign kept; 0, NaN and
    infinities unchanged) in a few passes over slices in threads: the original makes about a dozen passes in
    one thread, minutes for 3 B weights. numpy releases the GIL in these loops."""
    import numpy as np

    flat = np.ascontiguousarray(np_array).reshape(-1)
    out = np.empty(flat.shape, np.float16)

    def one(start: int) -> None:
        a = flat[start : start + _SLICE]
        mag = np.abs(a)
        tiny = (mag > 0) & (mag < min_positive_val)
        huge = (mag > max_finite_val) & np.isfinite(mag)
        if tiny.any() or huge.any():
            a = a.copy()
            a[tiny] = np.copysign(np.float32(min_positive_val), a[tiny])
            a[huge] = np.copysign(np.float32(max_finite_val), a[huge])
        out[start : start + _SLICE] = a

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        list(pool.map(one, range(0, flat.size, _SLICE)))
    return out.reshape(np.shape(np_array))


_SLICE = 1 << 22


def convert(fp32: Path, out: Path, dtype: str) -> None:
    """float32 -> float16 with onnxruntime's converter; all weights into one external data file."""
    import onnx
    from onnxruntime.transformers import float16
    from onnxruntime.transformers.float16 import convert_float_to_float16

    float16.convert_np_to_float16 = _fast_np_to_float16  # the same rule, in threads (see its docstring)

    if dtype in ("float32", "bfloat16"):  # bfloat16: torch exported it so
        model = onnx.load(str(fp32))
    else:
        # a path (not a loaded model): the converter then runs onnx's shape inference on the file, the way
        # that works above protobuf's 2 GB limit, and loads the result with its external data
        model = convert_float_to_float16(str(fp32), keep_io_types=False)
    _say(f"converted to {dtype}")
    onnx.save_model(model, str(out), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=out.name + ".data", size_threshold=1024)


def attach_weights(graph_path: Path, out: Path, tensors: dict[str, Any]) -> int:
    """Make the graph's weight inputs (converted to float16 by the converter) initializers: their float16
    values, by the converter's own rule (:func:`_fast_np_to_float16`), written one after the other (each at a
    4 KiB boundary, so onnxruntime can map them) into one external data file. Returns the bytes written."""
    import numpy as np
    import onnx
    from onnx import TensorProto

    model = onnx.load(str(graph_path))
    data_name = out.name + ".data"
    offset = 0
    keep = []
    with open(out.parent / data_name, "wb") as fh:
        for value in model.graph.input:
            tensor = tensors.get(value.name)
            if tensor is None:
                keep.append(value)
                continue
            array = tensor.detach().float().cpu().numpy()
            if value.type.tensor_type.elem_type == TensorProto.FLOAT16:
                array = _fast_np_to_float16(array)
            payload = np.ascontiguousarray(array).tobytes()
            pad = -offset % 4096
            fh.write(b"\0" * pad)
            offset += pad
            fh.write(payload)
            init = TensorProto(name=value.name, data_type=value.type.tensor_type.elem_type, dims=list(array.shape))
            init.data_location = TensorProto.EXTERNAL
            for key, text in (("location", data_name), ("offset", str(offset)), ("length", str(len(payload)))):
                entry = init.external_data.add()
                entry.key, entry.value = key, text
            model.graph.initializer.append(init)
            offset += len(payload)
    del model.graph.input[:]
    model.graph.input.extend(keep)
    onnx.save_model(model, str(out))
    return offset


def verify(path: Path, vocab: int) -> None:
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = np.random.default_rng(0).integers(0, vocab, (1, 8), dtype=np.int64)
    (logits,) = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
    if not np.isfinite(logits.astype(np.float32)).all():  # (a bfloat16 model does not load on the CPU EP)
        raise SystemExit(f"the CPU EP's logits are not all finite: {logits}")
    _say(f"onnxruntime {ort.__version__} CPU EP ran it: logits {logits.dtype} {list(logits.shape)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=36)
    parser.add_argument("--hidden", "--width", type=int, default=2560)
    parser.add_argument("--heads", type=int, default=0, help="default: hidden / 128 (at least 1)")
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--positions", type=int, default=1024)
    parser.add_argument("--dtype", choices=("float16", "bfloat16", "float32"), default="float16",
                        help="bfloat16: the model cast by torch and exported as it is (onnxruntime's converter "
                        "makes no bfloat16); its CPU EP cannot load it (no bfloat16 kernels)")
    parser.add_argument("--name", default="model.onnx", help="the file's name in OUT_DIR (its data: NAME.data)")
    parser.add_argument("--device", default="auto", help="torch device for the model and its trace")
    parser.add_argument("--verify", action="store_true", help="run the result once on the CPU EP")
    parser.add_argument("--weights", choices=("after", "in-export"), default="after",
                        help="after (float16 only): export and convert the graph alone, then write each weight "
                        "in float16 by the converter's rule (minutes faster at 3 B: the exporter's cost grows "
                        "with the weights); in-export: the weights go through the exporter and the converter")
    args = parser.parse_args()

    import torch

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    heads = args.heads or max(1, args.hidden // 128)
    model = build(args.layers, args.hidden, heads, args.vocab, args.positions, device)
    if args.dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    params = sum(p.numel() for p in model.parameters())
    _say(f"{params / 1e9:.3f} B parameters ({args.layers} layers, width {args.hidden}, {heads} heads, "
         f"vocabulary {args.vocab}) on {device}")

    args.out.mkdir(parents=True, exist_ok=True)
    staging = args.out / "fp32"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    after = args.weights == "after" and args.dtype == "float16"
    export_fp32(model, staging / "model.onnx", args.vocab, device, export_params=not after)
    tensors = dict(model.named_parameters(prefix="inner")) | dict(model.named_buffers(prefix="inner")) if after else {}
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    _say(f"exported {'bfloat16' if args.dtype == 'bfloat16' else 'float32'} ({_size(staging) / 2**30:.2f} GiB)")

    final = args.out / args.name
    data = args.out / (args.name + ".data")
    for old in (final, data):
        old.unlink(missing_ok=True)
    if after:
        convert(staging / "model.onnx", staging / "graph.onnx", args.dtype)
        written = attach_weights(staging / "graph.onnx", final, tensors)
        _say(f"wrote the float16 weights ({written / 2**30:.2f} GiB)")
        del tensors
        del model
    else:
        del model
        convert(staging / "model.onnx", final, args.dtype)
    shutil.rmtree(staging)
    size = final.stat().st_size + data.stat().st_size
    _say(f"wrote {final} ({size / 2**30:.2f} GiB with its external data, {args.dtype})")
    if args.verify:
        verify(final, args.vocab)
    return 0


def _size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file())


if __name__ == "__main__":
    sys.exit(main())
