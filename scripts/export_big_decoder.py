"""Export a multi-GB decoder in fp16 for `check --model` at the size people deploy (bench/bench_model_check.py).

A GPT-2-shaped decoder with random weights from a config (no download: the weights are made here), cast to
float16 on the GPU and exported by torch.onnx with its weights as external data. Needs torch and
transformers (the GPU machine has both).

    python scripts/export_big_decoder.py OUT_DIR [--layers 36] [--width 2560]

36 layers of width 2560 is 2.96 B parameters: 5.9 GB in float16.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=36)
    parser.add_argument("--width", type=int, default=2560)
    parser.add_argument("--positions", type=int, default=1024)
    args = parser.parse_args()

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    started = time.monotonic()
    config = GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=args.width // 128,
                        n_positions=args.positions, use_cache=False)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = GPT2LMHeadModel(config).half().eval()
    params = sum(p.numel() for p in model.parameters())
    print(f"{params / 1e9:.2f} B parameters, built in {time.monotonic() - started:.0f} s", flush=True)

    class Logits(torch.nn.Module):  # one output, no cache: what a plain text-generation export gives
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).logits

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "model.onnx"
    ids = torch.randint(0, config.vocab_size, (1, 16), device="cuda")
    mask = torch.ones_like(ids)
    with torch.no_grad():
        torch.onnx.export(Logits(model), (ids, mask), str(path), input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], opset_version=17, dynamo=False,
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                        "attention_mask": {0: "batch", 1: "sequence"},
                                        "logits": {0: "batch", 1: "sequence"}})
    size = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"exported {path} ({size / 2**30:.1f} GiB with its external data) in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
