"""Compare the nodes onnxruntime's CUDA EP leaves on the CPU with ortdoctor's static shape-only nodes.

For the GPU machine, with onnxruntime-gpu importable:

    python scripts/compare_cpu_nodes.py MODEL.onnx [MODEL.onnx ...] [--device-id N] [--log-dir DIR]

For each model it creates a CUDA EP session with ``log_severity_level=0`` (onnxruntime writes its log to
file descriptor 2, captured into a file), reads the ``VerifyEachNodeIsAssignedToAnEp`` block with its own
regular expressions (not ortdoctor's parser, so the two are independent), and checks that every CPU node
that is not a Memcpy node is in :func:`ortdoctor.prove.model_check.shape_subgraph.shape_only_names`.
A CPU node the model file does not have (ORT's optimizer added it) counts as shape work when ORT's own
heuristic kept it on the CPU ("Force fallback to CPU execution for node: X because the CPU execution
path is deemed faster"); it is listed under ``cpu_nodes_added_by_ort``.
Prints one JSON object per model; exits 1 when a CPU node is outside the shape-only set.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.prove.model_check.inspect import inspect_model  # noqa: E402
from ortdoctor.prove.model_check.shape_subgraph import shape_only_names  # noqa: E402

HEADER = re.compile(r"(Node\(s\)|All nodes) placed on \[(\w+)\]\. Number of nodes: (\d+)")
NODE = re.compile(r"^(?:.*VerifyEachNodeIsAssignedToAnEp\])?\s{2,}([A-Za-z_][\w.]*) \((.*)\)\s*$")
COPY = re.compile(r"Add (Memcpy(?:To|From)Host) (before|after) (.+?) for (\w+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
PREFERRED = re.compile(r"Force fallback to CPU execution for node: (.+?) because the CPU execution path is deemed faster")


def placement(log: str) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in log.splitlines():
        line = ANSI.sub("", raw)
        head = HEADER.search(line)
        if head:
            current = head.group(2) if head.group(1) == "Node(s)" else None
            out.setdefault(head.group(2), [])
            continue
        node = NODE.match(line) if current else None
        if node and current:
            out[current].append((node.group(1), node.group(2)))
        else:
            current = None
    return out


def session_log(model: str, device_id: int) -> str:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 0
    so.log_verbosity_level = 0
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            session = ort.InferenceSession(model, so, providers=[("CUDAExecutionProvider", {"device_id": str(device_id)}),
                                                                 "CPUExecutionProvider"])
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        log = tmp.read().decode("utf-8", "replace")
    if "CUDAExecutionProvider" not in session.get_providers():
        raise SystemExit(f"{model}: the CUDA EP was not created: {session.get_providers()}")
    return log


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--device-id", type=int, default=0)
    parser.add_argument("--log-dir", help="also keep each session's full log here")
    args = parser.parse_args()
    failed = False
    for model in args.models:
        log = session_log(model, args.device_id)
        if args.log_dir:
            Path(args.log_dir, Path(model).stem + ".ort.log").write_text(log, encoding="utf-8")
        ins = inspect_model(model)
        assert ins.graph is not None, ins.problem_detail
        shape_only = shape_only_names(ins.graph)
        placed = placement(log)
        cpu = [(op, name) for op, name in placed.get("CPUExecutionProvider", []) if not op.startswith("Memcpy")]
        in_file = {n.name for n in ins.graph.nodes}
        preferred = set(PREFERRED.findall(ANSI.sub("", log)))
        added = [f"{op} ({name})" for op, name in cpu if name not in in_file and name in preferred]
        outside = [f"{op} ({name})" for op, name in cpu
                   if name not in shape_only and not (name not in in_file and name in preferred)]
        failed |= bool(outside)
        print(json.dumps({
            "model": model,
            "nodes_by_provider": {ep: len(nodes) for ep, nodes in placed.items()},
            "cpu_nodes": [f"{op} ({name})" for op, name in cpu],
            "cpu_nodes_added_by_ort": added,
            "cpu_nodes_outside_shape_only": outside,
            "subset": not outside,
            "memcpy_added": [" ".join(m.groups()) for m in COPY.finditer(ANSI.sub("", log))],
        }, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
