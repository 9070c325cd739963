"""Benchmark `ortdoctor check --model` against a hand-written script that proves the same thing on the same
file: a session on the execution provider under test, the CPU EP's reference session, the reference run,
the run under test three times, every output compared. Wall time and peak host memory of each side.

    python bench/bench_model_check.py --model PATH [--runs N] [--ep cuda|cpu] [--compare-limit GIB] [--sitedirs DIR ...]
    python bench/bench_model_check.py --make-medium DIR [--layers N]   # writes DIR/medium.onnx (+ .data)

--ep cuda (the default; the GPU machine): `ortdoctor check --model PATH --no-smoke --json`, the command
people run, against the script with providers [CUDA EP, CPU EP]. Where the CUDA EP cannot be created (a
CPU build), both sides fall back the same way: the session lands on the CPU EP, the reference runs, and
neither runs the session under test.
--ep cpu (any machine): the whole proof with the CPU EP under test, through the library
(`check_model(path, ep="CPUExecutionProvider")`, the only way to put the CPU EP under test), against the
script with providers [CPU EP]; both run the session under test and compare.

Peak host memory is the largest resident set of any process of a side (`ru_maxrss` of the children,
read by a wrapper process per run, so each run is measured alone). Runs are interleaved (a, b, a, b ...);
the median is reported. The inputs are the ones `check --model` proposes (made once, saved as .npy, and
loaded by the script), so both sides run the same shapes.

--make-medium writes a decoder-shaped model with onnx.helper: token embedding, N blocks of
LayerNormalization -> MatMul (1024x4096) -> Relu -> MatMul (4096x1024) -> residual Add, and an output
projection; random float32 weights in external data (N=12: 113 M parameters, 453 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support import testenvs  # noqa: E402

# Runs one command and prints its wall time and the peak RSS of every process it started (ru_maxrss of
# the reaped children: Linux keeps the largest of the whole tree, grandchildren included).
_WRAPPER = r"""
import json, resource, subprocess, sys, time
cmd = json.loads(sys.argv[1])
t0 = time.perf_counter()
proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"wall_s": wall, "peak_rss_mib": peak_kib / 1024, "rc": proc.returncode,
                  "stderr": proc.stderr.decode(errors="replace")[-2000:]}))
"""

# The hand-written proof: what a careful engineer writes to check that a model runs on the EP and agrees
# with the CPU EP. Above the size limit (argv[4] names the part check --model compares: its first nodes
# and the tensors that cross the cut), the reference is that part: cut with the onnx package from the
# graph alone (load_external_data=False), its weights read by onnxruntime from the model's directory.
_SCRIPT = r"""
import sys, glob, json, os
import numpy as np
import onnxruntime as ort
model, feeds_dir, ep, part = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
feeds = {os.path.basename(p)[:-4]: np.load(p) for p in glob.glob(os.path.join(feeds_dir, "*.npy"))}
providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if ep == "cuda" else ["CPUExecutionProvider"]
under_test = "CUDAExecutionProvider" if ep == "cuda" else "CPUExecutionProvider"
session = ort.InferenceSession(model, providers=providers)
on_ep = under_test in session.get_providers()
if on_ep:
    for _ in range(3):
        got = session.run(None, feeds)
if part:
    import onnx
    from onnx import helper
    m = onnx.load(model, load_external_data=False)
    nodes = list(m.graph.node)[: part["nodes"]]
    used = {x for n in nodes for x in n.input}
    graph = helper.make_graph(nodes, "part", [i for i in m.graph.input if i.name in used],
                              [helper.make_empty_tensor_value_info(o) for o in part["outputs"]],
                              [t for t in m.graph.initializer if t.name in used])
    data = helper.make_model(graph, opset_imports=m.opset_import, ir_version=m.ir_version).SerializeToString()
    def make(providers):
        so = ort.SessionOptions()
        so.add_session_config_entry("session.model_external_initializers_file_folder_path", os.path.dirname(model))
        return ort.InferenceSession(data, so, providers=providers)
    reference = make(["CPUExecutionProvider"])
    if on_ep:
        compared = make(providers)
else:
    reference = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    compared = session
names = {i.name for i in reference.get_inputs()}
want = reference.run(None, {k: v for k, v in feeds.items() if k in names})
if on_ep:
    got = compared.run(None, {k: v for k, v in feeds.items() if k in names})
    for a, b in zip(got, want):
        if a.dtype.kind == "f":
            bound = 2e-2 if a.dtype == np.float16 else 1e-2
            a, b = a.astype(np.float64), b.astype(np.float64)
            assert np.abs(a - b).max() <= bound * max(np.abs(b).max(), 1e-30), "outputs differ"
        else:
            assert (a == b).all(), "outputs differ"
print("ok", session.get_providers(), "compared:", "the first %d nodes" % part["nodes"] if part else "the whole model")
"""

_LIBRARY = r"""
import sys
from ortdoctor.doctor.model import check_model
report = check_model(sys.argv[1], ep="CPUExecutionProvider", compare_limit=int(sys.argv[2]) if sys.argv[2] else None)
run = report.run or {}
assert run.get("agree") is True, report.findings
"""


def make_medium(directory: Path, layers: int = 12, hidden: int = 1024, ffn: int = 4096, vocab: int = 8192) -> Path:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32), name)

    inits = [weight("wte", vocab, hidden), weight("lm_head", hidden, vocab)]
    nodes = [helper.make_node("Gather", ["wte", "input_ids"], ["h0"], name="embed", axis=0)]
    for i in range(layers):
        inits += [weight(f"l{i}.up", hidden, ffn), weight(f"l{i}.down", ffn, hidden),
                  numpy_helper.from_array(np.ones(hidden, np.float32), f"l{i}.ln_w"),
                  numpy_helper.from_array(np.zeros(hidden, np.float32), f"l{i}.ln_b")]
        nodes += [
            helper.make_node("LayerNormalization", [f"h{i}", f"l{i}.ln_w", f"l{i}.ln_b"], [f"n{i}"], name=f"ln{i}", axis=-1),
            helper.make_node("MatMul", [f"n{i}", f"l{i}.up"], [f"u{i}"], name=f"up{i}"),
            helper.make_node("Relu", [f"u{i}"], [f"r{i}"], name=f"relu{i}"),
            helper.make_node("MatMul", [f"r{i}", f"l{i}.down"], [f"d{i}"], name=f"down{i}"),
            helper.make_node("Add", [f"h{i}", f"d{i}"], [f"h{i + 1}"], name=f"residual{i}"),
        ]
    nodes.append(helper.make_node("MatMul", [f"h{layers}", "lm_head"], ["logits"], name="lm_head"))
    graph = helper.make_graph(
        nodes, "medium_decoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "sequence_length", vocab])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="ortdoctor-bench")
    model.ir_version = 8
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "medium.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="medium.onnx.data",
              size_threshold=1024)
    return path


def _save_feeds(model: Path, directory: Path, ep: str, limit: int | None) -> dict[str, Any] | None:
    """The inputs check --model proposes for this model, saved for the script; returns the part it compares
    (None: the whole model), decided by the same rule on this machine's free memory."""
    import numpy as np

    from ortdoctor.prove.model_check.budget import BOUNDED_SEQUENCE, available_host_memory, plan_comparison
    from ortdoctor.prove.model_check.inspect import inspect_model
    from ortdoctor.prove.model_check.shape_subgraph import Defaults, propose_inputs
    from ortdoctor.prove.model_check.synthetic_feeds import materialise

    ins = inspect_model(model)
    graph = ins.graph
    assert graph is not None
    plan = plan_comparison(ins.total_bytes, available_host_memory(), limit=limit, on_device=ep == "cuda", graph=graph)
    print(f"comparison: {plan.why}", flush=True)
    one_token = plan.bounded and plan.part is None
    defaults = Defaults(sequence=BOUNDED_SEQUENCE) if one_token else Defaults()
    for name, array in materialise(propose_inputs(graph, defaults=defaults).to_json()).items():
        np.save(directory / f"{name}.npy", array)
    return {"nodes": plan.part.nodes, "outputs": list(plan.part.outputs)} if plan.part is not None else None


def _measure(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, json.dumps(cmd)], env=env, capture_output=True,
                          text=True, check=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--make-medium", type=Path, metavar="DIR")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ep", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--compare-limit", type=float, default=None, metavar="GIB",
                        help="check --model's --compare-limit (default: its own, from free host memory)")
    parser.add_argument("--sitedirs", nargs="*", help="directories for PYTHONPATH (default: the test suite's "
                        "onnxruntime CPU wheel)")
    args = parser.parse_args()
    if args.make_medium:
        path = make_medium(args.make_medium, layers=args.layers)
        print(path)
        return 0
    if args.model is None:
        parser.error("--model or --make-medium is needed")
    model = args.model.resolve()
    sites = args.sitedirs if args.sitedirs is not None else [str(testenvs.ensure("ort-cpu"))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sites])}
    with tempfile.TemporaryDirectory(prefix="ortdoctor-bench-feeds-") as feeds:
        limit = None if args.compare_limit is None else int(args.compare_limit * 1024 ** 3)
        part = _save_feeds(model, Path(feeds), args.ep, limit)
        if args.ep == "cuda":
            ours = [sys.executable, "-m", "ortdoctor", "check", "--no-smoke", "--json", "--model", str(model)]
            ours += ["--compare-limit", str(args.compare_limit)] if args.compare_limit is not None else []
        else:
            ours = [sys.executable, "-c", _LIBRARY, str(model), str(limit or "")]
        script = [sys.executable, "-c", _SCRIPT, str(model), feeds, args.ep, json.dumps(part)]
        sides: dict[str, list[dict[str, Any]]] = {"check --model": [], "hand-written proof": []}
        for _ in range(args.runs):
            for name, cmd in (("check --model", ours), ("hand-written proof", script)):
                result = _measure(cmd, env)
                if name == "hand-written proof" and result["rc"] != 0:
                    raise SystemExit(f"the hand-written proof failed: {result['stderr']}")
                if name == "check --model" and result["rc"] not in (0, 1):  # 1: the environment has no GPU
                    raise SystemExit(f"check --model failed ({result['rc']}): {result['stderr']}")
                sides[name].append(result)
    from ortdoctor.prove.model_check.inspect import inspect_model

    size = inspect_model(model).total_bytes  # the file and every external data file it names
    print(f"model {model} ({size / 2**20:.0f} MiB with external data), --ep {args.ep}, {args.runs} runs each")
    wall = {name: statistics.median(r["wall_s"] for r in rs) for name, rs in sides.items()}
    for name, rs in sides.items():
        peak = max(r["peak_rss_mib"] for r in rs)
        runs = ", ".join(f"{r['wall_s']:.2f}" for r in rs)
        print(f"  {name:<20} median {wall[name]:6.2f} s  (runs: {runs})"
              f"  peak host memory {peak:7.0f} MiB = {peak / (size / 2**20):.2f}x the model")
    print(f"  ratio                {wall['check --model'] / wall['hand-written proof']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
