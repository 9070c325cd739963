"""`ortdoctor check`: inspect the environment, say what is wrong and how to fix it, prove the CUDA EP.

Parses options, calls :func:`ortdoctor.doctor.check.run_check`, prints a renderer's string and picks the
exit code. JSON alone goes to stdout; progress and errors go to stderr.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ortdoctor.core import exitcodes


def _provider_options(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{v!r} is not KEY=VALUE", param_hint="--provider-option")
        out[key.strip()] = val.strip()
    return out


def _use_color(stream: Any) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything non-empty."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _usage_error(message: str) -> None:
    click.echo(f"ortdoctor: error: {message}", err=True)
    sys.exit(exitcodes.USAGE)


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
@click.option("--provider", type=click.Choice(["cuda", "tensorrt"]), default="cuda", show_default=True,
              help="The execution provider the smoke session proves. tensorrt: TensorrtExecutionProvider alone (CPU "
              "fallback disabled), TensorRT preloaded after the CUDA set, the engine cache in a temporary directory, "
              "built then reused by a second session.")
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
def command(
    as_json: bool,
    fmt: str | None,
    quiet: bool,
    strict: bool,
    debug: bool,
    no_smoke: bool,
    matrix_file: str | None,
    directory: str | None,
    allow_unsafe_dirs: bool,
    device_id: int,
    provider: str,
    provider_options: tuple[str, ...],
    iobinding: bool,
    cuda_graph: bool,
    placement: bool,
    verbose: bool,
    python_path: str | None,
    timeout: float,
    all_devices: bool,
    model_path: str | None,
    input_shapes: tuple[str, ...],
    model_inputs: tuple[str, ...],
) -> None:
    from ortdoctor.decide.matrix.model import MatrixError
    from ortdoctor.decide.search import DirectoryError
    from ortdoctor.doctor.check import run_check

    if as_json and fmt not in (None, "json"):
        _usage_error(f"--json and --format {fmt} contradict each other")
    fmt = "json" if as_json else (fmt or "text")
    options = _provider_options(provider_options)
    interpreter = None
    if python_path is not None:
        from ortdoctor.probes.interpreter import InterpreterError, describe

        try:
            interpreter = describe(python_path)
        except InterpreterError as exc:
            _usage_error(str(exc))
    if provider == "tensorrt" and timeout == 60.0:
        timeout = 300.0  # building a TensorRT engine, twice with the cache, takes longer than a CUDA session
    shapes: dict[str, tuple[int, ...]] = {}
    if input_shapes and model_path is None:
        _usage_error("--input-shape needs --model")
    if input_shapes:
        from ortdoctor.prove.model_check.inspect import parse_input_shapes

        try:
            shapes = parse_input_shapes(input_shapes)
        except ValueError as exc:
            _usage_error(str(exc))
    files: dict[str, str] = {}
    if model_inputs and model_path is None:
        _usage_error("--input needs --model")
    if model_inputs:
        from ortdoctor.prove.model_check.given_inputs import parse_input_files

        try:
            files = parse_input_files(model_inputs)
        except ValueError as exc:
            _usage_error(str(exc))
    if sys.stderr.isatty() and fmt == "text" and not quiet:
        click.echo("ortdoctor: inspecting…", err=True)
    try:
        report = run_check(matrix_path=matrix_file, smoke=False if no_smoke else "auto", python=interpreter,
                           directory=directory, allow_unsafe_dirs=allow_unsafe_dirs, device_id=device_id, all_devices=all_devices,
                           smoke_provider_options=options, smoke_iobinding=iobinding, smoke_cuda_graph=cuda_graph,
                           smoke_placement=placement, smoke_timeout=timeout, smoke_provider=provider,
                           model=model_path, input_shapes=shapes, model_cuda_graph=cuda_graph,
                           model_timeout=timeout if timeout != 60.0 else 120.0, model_provider_options=options, model_inputs=files, model_iobinding=iobinding)
    except MatrixError as exc:
        _usage_error(f"bad matrix file: {exc}")
        return
    except DirectoryError as exc:
        _usage_error(f"--directory: {exc}")
        return

    if fmt == "json":
        from ortdoctor.report.json_report import dumps

        click.echo(dumps(report))
    elif fmt == "markdown":
        from ortdoctor.report.markdown import render as render_markdown

        click.echo(render_markdown(report), nl=False)
    elif quiet:
        from ortdoctor.report.short import render as render_short

        click.echo(render_short(report, color=_use_color(sys.stdout)), nl=False)
    else:
        from ortdoctor.report.text import render

        click.echo(render(report, color=_use_color(sys.stdout), debug=debug or verbose), nl=False)

    if report.model is not None and report.model.input_error:
        sys.exit(exitcodes.USAGE)  # the model file itself cannot be used: an input error
    if report.verdict == "fail" or (strict and report.verdict == "warn"):
        sys.exit(exitcodes.FAIL)
    sys.exit(exitcodes.OK)
