"""Export the small real models under tests/data/models/ with the exporters people use.

Every model is random-initialised from a config and a tokenizer written here (nothing is downloaded from
a model hub), then exported by a real exporter:

- ``bert_optimum.onnx``: a 2-layer BERT sequence classifier through Optimum's ``optimum-cli export onnx``
  (which calls the TorchScript exporter, ``torch.onnx.export(..., dynamo=False)``);
- ``bert_dynamo.onnx``: the same weights through ``torch.onnx.export(..., dynamo=True)``;
- ``gpt2_with_past.onnx``: a 2-layer GPT-2 through ``optimum-cli export onnx --task text-generation-with-past``;
- ``cnn.onnx``: Conv/BatchNorm/Relu/MaxPool/GlobalAveragePool/Gemm through ``torch.onnx.export`` (its
  default, the dynamo exporter, in this torch);
- ``bert_optimum_int8_dynamic.onnx``: ``onnxruntime.quantization.quantize_dynamic`` of the Optimum BERT;
- ``cnn_qdq.onnx``: ``quantize_static(..., quant_format=QuantFormat.QDQ)`` of the CNN with a small
  calibration reader.

Next to each model, ``NAME.npz`` holds one fixed, valid input (``input:NAME`` arrays) and what the CPU EP
of onnxruntime computes for it (``output:NAME``). ``expected.json`` records, from the ``onnx`` package's
own parse, each model's inputs, outputs, node counts by op type, and the embedding tables its integer
inputs index; ``README.md`` the versions, commands, sizes and sha256 sums.

Run it in a separate virtual environment with the pinned versions below (they are checked)::

    python3 -m venv ~/fixture-venv
    ~/fixture-venv/bin/pip install torch==2.13.0
    ~/fixture-venv/bin/pip install optimum==2.1.0 optimum-onnx==0.1.0 transformers==4.57.6 \\
        onnx==1.23.2 onnxruntime==1.31.1 onnxscript==0.7.2 tokenizers==0.22.2
    ~/fixture-venv/bin/python scripts/make_model_fixtures.py

Why these versions: Optimum 2.x moved its ONNX exporter into the ``optimum-onnx`` package, whose newest
release (0.1.0) requires ``optimum~=2.1.0`` and ``transformers<4.58``; transformers 4.57.6 is the newest
release it admits. torch 2.13.0 is the CPU wheel this machine carries; onnxruntime 1.31.1 is the release
the test suite's real wheels (tests/support/testenvs.py) pin, so the recorded outputs are the ones the
tests recompute.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

PINNED: dict[str, str] = {
    "torch": "2.13.0",
    "transformers": "4.57.6",
    "optimum": "2.1.0",
    "optimum-onnx": "0.1.0",
    "onnx": "1.23.2",
    "onnxruntime": "1.31.1",
    "onnxscript": "0.7.2",
    "tokenizers": "0.22.2",
}

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "models"
SEED = 1234

# A tiny WordPiece vocabulary: special tokens, lower-case letters (so every word can be spelled) and a
# handful of whole words and suffixes.
WORDPIECE_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    *[chr(c) for c in range(ord("a"), ord("z") + 1)],
    *[f"##{chr(c)}" for c in range(ord("a"), ord("z") + 1)],
    "the", "gpu", "cpu", "onnx", "runtime", "model", "run", "fast", "slow", "is", "on",
    "##s", "##ing", "##ed", ".", ",", "!", "?",
]
BERT_SENTENCES = ["the model runs on the gpu.", "onnx runtime is fast!"]

# A tiny corpus for the byte-level BPE of the GPT-2 tokenizer.
GPT2_CORPUS = [
    "the model runs on the gpu and the cpu.",
    "onnx runtime places each node on an execution provider.",
    "shape computations stay on the cpu by design.",
    "token ids index the embedding table of the model.",
] * 4
GPT2_PROMPT = "the model runs on the gpu"


def check_versions(allow_other: bool) -> dict[str, str]:
    found: dict[str, str] = {}
    wrong: list[str] = []
    for name, want in PINNED.items():
        have = importlib.metadata.version(name)
        found[name] = have
        if have.split("+")[0] != want:
            wrong.append(f"{name} {have} (pinned {want})")
    if wrong and not allow_other:
        raise SystemExit("other versions installed than pinned: " + ", ".join(wrong)
                         + "\n(see the docstring; --allow-other-versions to go on anyway)")
    found["numpy"] = importlib.metadata.version("numpy")
    found["python"] = sys.version.split()[0]
    return found


# --------------------------------------------------------------------------------------------------
# Random initialisation that looks like a trained model
# --------------------------------------------------------------------------------------------------
def randomise(model: Any, seed: int) -> None:
    """Give every parameter and buffer of floating type a non-trivial random value.

    transformers' ``_init_weights`` leaves biases at 0 and LayerNorm weights at 1; exporters then
    deduplicate the identical tensors (the TorchScript exporter with Identity nodes, the dynamo exporter by
    reusing one initializer, and it drops an all-zero Gemm bias), which no trained model shows.
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen) * 0.05
            if name.endswith("weight") and p.dim() == 1:  # LayerNorm / BatchNorm scale
                p.copy_(1.0 + noise)
            else:
                p.copy_(noise if name.endswith("bias") else p + noise)
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=gen) * 0.1)
            elif name.endswith("running_var"):
                b.copy_(1.0 + torch.rand(b.shape, generator=gen) * 0.5)


# --------------------------------------------------------------------------------------------------
# Sources: configs, tokenizers and weights written into a work directory
# --------------------------------------------------------------------------------------------------
def make_bert_source(work: Path) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    src = work / "bert-src"
    src.mkdir()
    (src / "vocab.txt").write_text("\n".join(WORDPIECE_VOCAB) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(src / "vocab.txt"), do_lower_case=True)
    config = BertConfig(vocab_size=len(WORDPIECE_VOCAB), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                        type_vocab_size=2, num_labels=3)
    torch.manual_seed(SEED)
    model = BertForSequenceClassification(config).eval()
    randomise(model, SEED)
    model.save_pretrained(src)
    tokenizer.save_pretrained(src)
    return src


def make_gpt2_source(work: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    src = work / "gpt2-src"
    src.mkdir()
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator(GPT2_CORPUS, trainer=trainer)
    tokenizer = GPT2TokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                  unk_token="<|endoftext|>")
    eos = bpe.token_to_id("<|endoftext|>")
    config = GPT2Config(vocab_size=bpe.get_vocab_size(), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        n_inner=64, bos_token_id=eos, eos_token_id=eos)
    torch.manual_seed(SEED + 1)
    model = GPT2LMHeadModel(config).eval()
    randomise(model, SEED + 1)
    model.save_pretrained(src)
    tokenizer.save_pretrained(src)
    return src


def make_cnn() -> Any:
    import torch
    from torch import nn

    class SmallCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                # Conv -> BatchNorm: the exporter folds the BatchNorm into the Conv (eval mode)
                nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                # BatchNorm after the activation cannot be folded: it stays a BatchNormalization node
                nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(16), nn.MaxPool2d(2),
                nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                nn.AdaptiveAvgPool2d(1),
            )
            self.classifier = nn.Linear(16, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.classifier(torch.flatten(self.features(x), 1))

    torch.manual_seed(SEED + 2)
    model = SmallCNN().eval()
    randomise(model, SEED + 2)
    return model


# --------------------------------------------------------------------------------------------------
# Exports
# --------------------------------------------------------------------------------------------------
def optimum_cli(src: Path, task: str, dest: Path) -> list[str]:
    cli = Path(sys.executable).parent / "optimum-cli"
    argv = [str(cli), "export", "onnx", "--model", str(src), "--task", task, str(dest)]
    subprocess.run(argv, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return ["optimum-cli", "export", "onnx", "--model", f"./{src.name}", "--task", task, f"./{dest.name}"]


def export_bert_dynamo(src: Path, dest: Path) -> None:
    import torch
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(src).eval()
    ids = torch.tensor([[2, 40, 60, 3]])
    kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
    batch, seq = torch.export.Dim("batch_size"), torch.export.Dim("sequence_length")
    dynamic = {name: {0: batch, 1: seq} for name in kwargs}
    program = torch.onnx.export(model, (), kwargs=kwargs, dynamo=True, dynamic_shapes=dynamic,
                                input_names=list(kwargs), output_names=["logits"], opset_version=18)
    assert program is not None
    program.save(str(dest), external_data=False)


def export_cnn(model: Any, dest: Path) -> None:
    import torch

    x = torch.randn(1, 3, 32, 32)
    batch, height, width = torch.export.Dim("batch"), torch.export.Dim("height", min=8), torch.export.Dim("width", min=8)
    program = torch.onnx.export(model, (x,), input_names=["pixel_values"], output_names=["logits"],
                                dynamic_shapes=({0: batch, 2: height, 3: width},), opset_version=18)
    assert program is not None
    program.save(str(dest), external_data=False)


def quantize_bert_dynamic(src: Path, dest: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dest), weight_type=QuantType.QInt8)


def quantize_cnn_qdq(src: Path, dest: Path, work: Path) -> None:
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(SEED)
            self.batches = iter([{"pixel_values": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}
                                 for _ in range(8)])

        def get_next(self) -> dict[str, Any] | None:
            return next(self.batches, None)

    prepared = work / "cnn_prepared.onnx"
    quant_pre_process(str(src), str(prepared))
    quantize_static(str(prepared), str(dest), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


# --------------------------------------------------------------------------------------------------
# Fixed inputs and the outputs the CPU EP computes for them
# --------------------------------------------------------------------------------------------------
def bert_inputs(src: Path) -> dict[str, Any]:
    from transformers import BertTokenizerFast

    tok = BertTokenizerFast.from_pretrained(src)
    enc = tok(BERT_SENTENCES, padding=True, return_tensors="np")
    return {k: enc[k].astype("int64") for k in ("input_ids", "attention_mask", "token_type_ids")}


def gpt2_inputs(src: Path, layers: int, heads: int, head_dim: int) -> dict[str, Any]:
    import numpy as np
    from transformers import GPT2TokenizerFast

    tok = GPT2TokenizerFast.from_pretrained(src)
    ids = tok([GPT2_PROMPT], return_tensors="np")["input_ids"].astype(np.int64)
    feeds: dict[str, Any] = {"input_ids": ids}
    for i in range(layers):  # the first step of generation: an empty cache
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = np.zeros((1, heads, 0, head_dim), np.float32)
    feeds["attention_mask"] = np.ones_like(ids)
    feeds["position_ids"] = np.arange(ids.shape[1], dtype=np.int64)[None, :]
    return feeds


def cnn_inputs() -> dict[str, Any]:
    import numpy as np

    return {"pixel_values": np.random.default_rng(SEED).standard_normal((1, 3, 32, 32)).astype(np.float32)}


def run_cpu(model: Path, feeds: dict[str, Any]) -> dict[str, Any]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()}), strict=True))


def torch_reference(kind: str, src: Path | Any, feeds: dict[str, Any]) -> dict[str, Any]:
    """What the PyTorch model itself computes, to show the export is faithful."""
    import torch

    with torch.no_grad():
        if kind == "bert":
            from transformers import BertForSequenceClassification

            model = BertForSequenceClassification.from_pretrained(src).eval()
            out = model(**{k: torch.from_numpy(v) for k, v in feeds.items()})
            return {"logits": out.logits.numpy()}
        if kind == "gpt2":
            from transformers import GPT2LMHeadModel

            model = GPT2LMHeadModel.from_pretrained(src).eval()
            out = model(input_ids=torch.from_numpy(feeds["input_ids"]),
                        attention_mask=torch.from_numpy(feeds["attention_mask"]),
                        position_ids=torch.from_numpy(feeds["position_ids"]), use_cache=True)
            result = {"logits": out.logits.numpy()}
            for i, layer in enumerate(out.past_key_values.layers):
                result[f"present.{i}.key"] = layer.keys.numpy()
                result[f"present.{i}.value"] = layer.values.numpy()
            return result
        return {"logits": src(torch.from_numpy(feeds["pixel_values"])).numpy()}


# --------------------------------------------------------------------------------------------------
# What the onnx package says about each model (the oracle the tests compare ortdoctor's reader with)
# --------------------------------------------------------------------------------------------------
_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool", 10: "float16", 11: "float64"}
_PASSTHROUGH = {"Cast", "Unsqueeze", "Squeeze", "Reshape", "Identity", "Flatten"}


def _value_info(v: Any) -> dict[str, Any]:
    t = v.type.tensor_type
    dims: list[int | str | None] = []
    for d in t.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else (d.dim_param if d.HasField("dim_param") else None))
    return {"name": v.name, "dtype": _DTYPES.get(t.elem_type, f"type{t.elem_type}"), "dims": dims}


def embedding_rows(model: Any) -> dict[str, list[dict[str, Any]]]:
    """For each integer graph input, the Gather tables (initializers) it indexes, through passthrough ops."""
    inits = {i.name: list(i.dims) for i in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    inputs = {i.name for i in model.graph.input} - set(inits)
    found: dict[str, list[dict[str, Any]]] = {}
    for node in model.graph.node:
        if node.op_type != "Gather" or len(node.input) < 2 or node.input[0] not in inits:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        dims = inits[node.input[0]]
        if axis != 0 or len(dims) != 2:
            continue
        tensor = node.input[1]
        while tensor not in inputs and tensor in producer and producer[tensor].op_type in _PASSTHROUGH:
            tensor = producer[tensor].input[0]
        if tensor in inputs:
            found.setdefault(tensor, []).append({"gather": node.name, "table": node.input[0], "rows": dims[0]})
    return found


def describe(path: Path) -> dict[str, Any]:
    import onnx

    model = onnx.load(str(path))
    inits = {i.name for i in model.graph.initializer}
    return {
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "opsets": {(o.domain or "ai.onnx"): o.version for o in model.opset_import},
        "inputs": [_value_info(v) for v in model.graph.input if v.name not in inits],
        "outputs": [_value_info(v) for v in model.graph.output],
        "node_count": len(model.graph.node),
        "op_types": dict(sorted(Counter(n.op_type for n in model.graph.node).items())),
        "embedding_rows": embedding_rows(model),
    }


# --------------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------------
def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_case(out: Path, name: str, model: Path, feeds: dict[str, Any],
              reference: dict[str, Any] | None, record: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    dest = out / f"{name}.onnx"
    shutil.copyfile(model, dest)
    outputs = run_cpu(dest, feeds)
    arrays = {f"input:{k}": v for k, v in feeds.items()} | {f"output:{k}": v for k, v in outputs.items()}
    np.savez_compressed(out / f"{name}.npz", **arrays)
    entry = {"file": dest.name, "bytes": dest.stat().st_size, "sha256": sha256(dest), **record,
             **describe(dest), "fixed_input": {
                 "file": f"{name}.npz", "bytes": (out / f"{name}.npz").stat().st_size,
                 "inputs": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in feeds.items()},
                 "outputs": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in outputs.items()},
             }}
    if reference is not None:
        entry["fixed_input"]["torch_max_abs_diff"] = {
            k: float(np.abs(outputs[k] - v).max()) for k, v in reference.items()}
    assert all(np.isfinite(v).all() for v in outputs.values()), name
    return entry


README_HEAD = """\
# Model fixtures

Small real models, random-initialised from configs and tokenizers written by
`scripts/make_model_fixtures.py` (nothing comes from a model hub) and exported by the exporters people
use. Regenerate them with the pinned versions (the script checks them; with these versions a second
run on the same x86_64 machine wrote the same bytes):

```
python3 -m venv ~/fixture-venv
~/fixture-venv/bin/pip install torch==2.13.0
~/fixture-venv/bin/pip install optimum==2.1.0 optimum-onnx==0.1.0 transformers==4.57.6 \\
    onnx==1.23.2 onnxruntime==1.31.1 onnxscript==0.7.2 tokenizers==0.22.2
~/fixture-venv/bin/python scripts/make_model_fixtures.py
```

Why these versions: Optimum 2.x moved its ONNX exporter into `optimum-onnx`, whose newest release (0.1.0)
requires `optimum~=2.1.0` and `transformers<4.58`; 4.57.6 is the newest transformers it admits. torch
2.13.0 is a CPU wheel; onnxruntime 1.31.1 is what the test suite's real wheels pin, so the recorded outputs
are the ones the tests recompute.

Each `NAME.npz` holds one fixed, valid input (`input:NAME`) and the CPU EP's outputs for it
(`output:NAME`). `expected.json` records, from the `onnx` package's parse, each model's inputs, outputs,
node counts by op type and the embedding tables its integer inputs index (input -> Gather -> rows), and
for the float models the largest difference between onnxruntime's and PyTorch's outputs.
"""

README_TAIL = """
## Exporter quirks seen while making them

- transformers initialises biases to 0 and LayerNorm weights to 1. From such a model the TorchScript
  exporter deduplicates the identical tensors with `Identity` nodes, and the dynamo exporter reuses one
  initializer and drops an all-zero Gemm bias: no trained model looks like that, so the script gives
  every parameter a random value first.
- Optimum prints "Weight deduplication check in the ONNX export requires accelerate"; accelerate is not
  installed, the check is skipped.
- The TorchScript exporter warns for GPT-2: "Exporting aten::index operator of advanced indexing in opset
  18 is achieved by combination of multiple ONNX operators, including Reshape, Transpose, Concat, and
  Gather. If indices include negative values, the exported graph will produce incorrect results." and
  transformers' masking code emits TracerWarnings (Python conditions on shapes become constants).
- Optimum's GPT-2 takes `position_ids` as an input and names the attention mask's second axis
  `past_sequence_length + sequence_length`; an empty cache (past length 0) runs on the CPU EP.
- The dynamo exporter stores per-node metadata (source locations): the same BERT weights take about
  2.7 times the bytes of the TorchScript export. It computes the attention scale as a constant (no
  Shape -> Sqrt chain) and slices shapes with `Shape(start, end)`.
- The dynamo exporter folds a BatchNorm that follows a Conv into the Conv and writes
  `AdaptiveAvgPool2d(1)` as `ReduceMean`; the CNN puts one BatchNorm after its ReLU so that a
  `BatchNormalization` node stays in the graph.
- `quantize_dynamic` also quantizes the embedding Gathers (tables become `*_quantized` int8
  initializers followed by `DequantizeLinear`) and warns "Please consider to run pre-processing before
  quantization". `quant_pre_process` adds opset imports of many domains (ai.onnx.ml, com.microsoft,
  training ...) to the QDQ model, and `quantize_static` drops the Relu after each Conv (the activation's
  quantization range covers it).

## Placement on a GPU: not known here

This machine has no GPU: only the CPU EP ran. Which nodes onnxruntime's CUDA EP keeps on the CPU
(`GetCpuPreferredNodes`, after its own constant folding and fusions) is checked on a GPU machine by
`scripts/model_check_gpu.sh`: `ortdoctor check --model` on every fixture with no flags, and
`scripts/compare_cpu_nodes.py`, which compares onnxruntime's own `VerifyEachNodeIsAssignedToAnEp` log
with `ortdoctor.prove.model_check.shape_subgraph.shape_only_names()`. Here, `tests/support/ort_fallback.py`
applies the same rule to the file's graph (the tests check that it stays inside the shape-only nodes).
"""


def readme(expected: dict[str, Any]) -> str:
    versions = expected["versions"]
    lines = [README_HEAD, "## Versions", ""]
    lines += [f"- {name} {version}" for name, version in versions.items()]
    lines += ["", "## Files", "", "| model | exporter | bytes | .npz bytes | sha256 |", "| --- | --- | ---: | ---: | --- |"]
    total = 0
    for m in expected["models"].values():
        total += m["bytes"] + m["fixed_input"]["bytes"]
        lines.append(f"| `{m['file']}` | {m['exporter']} | {m['bytes']} | {m['fixed_input']['bytes']} | `{m['sha256']}` |")
    lines += ["", f"Together {total} bytes with their inputs and outputs.", "", "## Commands", ""]
    for name, m in expected["models"].items():
        lines.append(f"- `{name}`: `{m['command']}`")
    lines.append("")
    return "\n".join(lines) + README_TAIL


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--allow-other-versions", action="store_true")
    args = parser.parse_args(argv)
    versions = check_versions(args.allow_other_versions)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cases: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ortdoctor-fixtures-") as tmp:
        work = Path(tmp)
        os.chdir(work)  # the recorded commands are relative to the work directory

        bert_src = make_bert_source(work)
        cmd = optimum_cli(bert_src, "text-classification", work / "bert-optimum")
        feeds = bert_inputs(bert_src)
        cases["bert_optimum"] = save_case(
            out, "bert_optimum", work / "bert-optimum" / "model.onnx", feeds,
            torch_reference("bert", bert_src, feeds),
            {"exporter": "optimum-cli export onnx (TorchScript exporter)", "command": " ".join(cmd)})

        export_bert_dynamo(bert_src, work / "bert_dynamo.onnx")
        cases["bert_dynamo"] = save_case(
            out, "bert_dynamo", work / "bert_dynamo.onnx", feeds, torch_reference("bert", bert_src, feeds),
            {"exporter": "torch.onnx.export(dynamo=True)",
             "command": "torch.onnx.export(model, (), kwargs={input_ids, attention_mask, token_type_ids}, "
                        "dynamo=True, dynamic_shapes={batch_size, sequence_length}, opset_version=18)"})

        quantize_bert_dynamic(work / "bert-optimum" / "model.onnx", work / "bert_int8.onnx")
        cases["bert_optimum_int8_dynamic"] = save_case(
            out, "bert_optimum_int8_dynamic", work / "bert_int8.onnx", feeds, None,
            {"exporter": "onnxruntime.quantization.quantize_dynamic(weight_type=QInt8) of bert_optimum.onnx",
             "command": "quantize_dynamic('bert_optimum.onnx', out, weight_type=QuantType.QInt8)"})

        gpt2_src = make_gpt2_source(work)
        cmd = optimum_cli(gpt2_src, "text-generation-with-past", work / "gpt2-optimum")
        feeds = gpt2_inputs(gpt2_src, layers=2, heads=2, head_dim=16)
        cases["gpt2_with_past"] = save_case(
            out, "gpt2_with_past", work / "gpt2-optimum" / "model.onnx", feeds,
            torch_reference("gpt2", gpt2_src, feeds),
            {"exporter": "optimum-cli export onnx --task text-generation-with-past (TorchScript exporter)",
             "command": " ".join(cmd)})

        cnn = make_cnn()
        export_cnn(cnn, work / "cnn.onnx")
        feeds = cnn_inputs()
        cases["cnn"] = save_case(out, "cnn", work / "cnn.onnx", feeds, torch_reference("cnn", cnn, feeds),
                                 {"exporter": "torch.onnx.export (default: dynamo=True)",
                                  "command": "torch.onnx.export(model, (x,), dynamic_shapes=({0: batch, "
                                             "2: height, 3: width},), opset_version=18)"})

        quantize_cnn_qdq(work / "cnn.onnx", work / "cnn_qdq.onnx", work)
        cases["cnn_qdq"] = save_case(
            out, "cnn_qdq", work / "cnn_qdq.onnx", feeds, None,
            {"exporter": "onnxruntime.quantization.quantize_static(quant_format=QDQ, activations QUInt8, "
                         "weights QInt8) after quant_pre_process, 8 calibration images",
             "command": "quant_pre_process('cnn.onnx', prepared); quantize_static(prepared, out, reader, "
                        "quant_format=QuantFormat.QDQ, activation_type=QUInt8, weight_type=QInt8)"})

    expected = {"generated_by": "scripts/make_model_fixtures.py", "versions": versions, "models": cases}
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n", encoding="utf-8")
    (out / "README.md").write_text(readme(expected), encoding="utf-8")
    total = sum(p.stat().st_size for p in out.iterdir() if p.suffix in (".onnx", ".npz"))
    print(f"wrote {len(cases)} models to {out} ({total} bytes with their .npz files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
