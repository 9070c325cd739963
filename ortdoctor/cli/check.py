"""`ortdoctor check`: inspect the environment, say what is wrong and how to fix it, prove the CUDA EP.

The one definition of check's options (help, validation, usage errors). The command parses them and hands
them to :func:`ortdoctor.cli.check_run.execute`, which does the work without click. A plain command line
skips this module altogether: :mod:`ortdoctor.cli.check_argv` parses it from a table that a test keeps
equal to these options, and anything that table cannot parse exactly as click would comes here.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ortdoctor.cli.check_run import MalformedProviderOption, execute
from ortdoctor.core.execution_providers import DEFAULT_PROVIDER, EXECUTION_PROVIDERS, PROVIDER_CHOICES

_PROVIDERS = "; ".join(f"{p.choice}: {p.name}{' as a plugin EP' if p.plugin else ''}" for p in EXECUTION_PROVIDERS)


@click.command("check", help="Inspect this environment (without importing onnxruntime or torch), say what "
               "stops the CUDA execution provider and how to fix it; prove it with a smoke session.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default=None,
              help="text (default): the human report; json: the report contract (docs/report-contract.md) on "
              "stdout; markdown: one collapsible block for a GitHub issue, home directory and user name redacted.")
@click.option("--quiet", "-q", is_flag=True,
              help="Text: only the verdict line and each problem with its fix (one line when all is well).")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@click.option("--debug", is_flag=True, help="More detail: every candidate, full paths, timings; tracebacks.")
@click.option("--no-smoke", is_flag=True, help="Skip the smoke session (inspection only).")
@click.option("--matrix", "matrix_file", type=click.Path(dir_okay=False), default=None,
              help="Compatibility matrix file (default: $ORTDOCTOR_MATRIX or the shipped one).")
@click.option("--directory", default=None,
              help='Where the libraries would be preloaded from: "" = the NVIDIA wheels, or a path '
              "(onnxruntime.preload_dlls semantics).")
@click.option("--allow-unsafe-dirs", is_flag=True, help="Accept world-writable or foreign-owned library "
              "directories for the plan (as `preload --allow-unsafe-dirs`; they are still reported).")
@click.option("--device-id", type=click.IntRange(min=0), default=0, show_default=True,
              help="GPU to check and run the smoke session on (counted after CUDA_VISIBLE_DEVICES).")
@click.option("--provider", type=click.Choice(list(PROVIDER_CHOICES)), default=DEFAULT_PROVIDER, show_default=True,
              help=f"The execution provider the smoke session proves, alone (CPU fallback disabled) ({_PROVIDERS}). "
              "tensorrt: TensorRT preloaded after the CUDA set, the engine cache in a temporary directory, built then "
              "reused by a second session. A plugin EP is registered (unless onnxruntime did) and the session put on "
              "its device.")
@click.option("--provider-option", "provider_options", multiple=True, metavar="KEY=VALUE",
              help="Option of that execution provider for the smoke session, passed as-is (repeatable), e.g. "
              "trt_fp16_enable=1.")
@click.option("--iobinding", is_flag=True, help="Smoke session, and the --model run: bind inputs and outputs as "
              "CUDA OrtValues (as Optimum and other clients do).")
@click.option("--cuda-graph", is_flag=True, help="Smoke session: capture and replay a CUDA graph.")
@click.option("--placement", is_flag=True, help="Smoke session: show the per-node provider assignment.")
@click.option("--verbose", "-v", is_flag=True, help="More detail: every candidate, full paths, timings (as --debug, "
              "without tracebacks).")
@click.option("--python", "python_path", type=click.Path(dir_okay=False), default=None, metavar="PATH",
              help="Inspect this interpreter's environment (as pip --python and uv --python do): for an "
              "ortdoctor installed by pipx or uv tool, or a venv that is not activated.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds the smoke session may take (also the model check's, whose default is 120).")
@click.option("--all-devices", is_flag=True,
              help="Check every GPU CUDA can see: the smoke session once per device, in parallel children.")
@click.option("--model", "model_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Also check this ONNX model: where each node runs on the CUDA EP, and why not on the GPU.")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=1x3x224x224",
              help="With --model: this input's shape for the test run (repeatable; default: chosen from the model).")
@click.option("--input", "model_inputs", multiple=True, metavar="NAME=FILE.npy",
              help="With --model: this input's values from a numpy.save file (repeatable; default: valid "
              "synthetic values).")
@click.option("--compare-limit", "compare_limit", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="GIB", help="With --model: above this model size (GiB of weights) the comparison covers the model's "
              "first blocks (or a one-token run where none can be cut); default: a quarter of the free host memory, "
              "at most 2 GiB.")
def command(**params: Any) -> None:
    # click passes the parsed options by parameter name, the keywords of execute()
    try:
        code = execute(**params)
    except MalformedProviderOption as exc:
        raise click.BadParameter(str(exc), param_hint="--provider-option") from None
    sys.exit(code)
