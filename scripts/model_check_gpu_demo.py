"""Build the four test models and run ``check_model`` on each, printing the ``model`` JSON blocks.

For the GPU machine (onnx and onnxruntime-gpu installed there):

    python scripts/model_check_gpu_demo.py [OUT_DIR] [--device-id N]

What a working CUDA EP should show (issue 10's "done when"):
  float      -> placement.gpu_share 1.0, no findings;
  quantized  -> MatMulInteger / DynamicQuantizeLinear in placement.cpu_nodes, model-quantized-ops-on-cpu;
  loop       -> model-control-flow-blocks-cuda-graph (warning here: the script asks for CUDA graphs
                on the loop model, so model-cuda-graph-refused quotes ORT's refusal too);
  shape      -> Shape/Gather/Unsqueeze/Concat on the CPU with kind "shape".
Each is also run with valid inputs on the CPU EP and then the CUDA EP, outputs compared (run.cpu / run.ep / run.outputs).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.prove.model_check import check_model  # noqa: E402
from ortdoctor.report.model_check import render_model  # noqa: E402
from tests.support import models  # noqa: E402

SHAPES = {"float": ["X=8x64"], "quantized": ["X=8x64"], "loop": ["X=1x16"], "shape": ["X=4x8x8"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", help="where to write the models (default: a temp dir)")
    parser.add_argument("--device-id", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    out = Path(args.out_dir or tempfile.mkdtemp(prefix="ortdoctor-models-"))
    paths = models.build_good(out)
    results = {}
    for name, path in paths.items():
        report = check_model(path, input_shapes=SHAPES[name], device_id=args.device_id,
                             cuda_graph=(name == "loop"), timeout=args.timeout)
        results[name] = {"exit_code": report.exit_code, "model": report.to_json()}
        print(render_model(report), file=sys.stderr)
        print(file=sys.stderr)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
