"""What `ortdoctor check` does once its options are parsed, without click.

:func:`execute` takes the parameters click's command passes (or, for a plain command line,
:mod:`ortdoctor.cli.check_argv` builds), calls :func:`ortdoctor.doctor.check.run_check`, writes a renderer's
string and returns the exit code. JSON alone goes to stdout; progress and errors go to stderr. The click
command (:mod:`ortdoctor.cli.check`) stays the one definition of the options; this module must not import
click, so that a plain `ortdoctor check` never loads it (it and what it imports are ~20 ms of a start).
"""

from __future__ import annotations

import os
import sys

from ortdoctor.cli.echo import echo
from ortdoctor.core import exitcodes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MalformedProviderOption", "execute", "parse_provider_options"]


class MalformedProviderOption(ValueError):
    """A --provider-option that is not KEY=VALUE: the click command turns it into click's usage error."""


def parse_provider_options(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key.strip():
            raise MalformedProviderOption(f"{v!r} is not KEY=VALUE")
        out[key.strip()] = val.strip()
    return out


def _usage_error(message: str) -> int:
    echo(f"ortdoctor: error: {message}", err=True)
    return exitcodes.USAGE


def _use_color(stream: Any) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set to anything non-empty."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def execute(
    *,
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
    compare_limit: float | None = None,
) -> int:
    """Run `ortdoctor check` with these parameters (those of the click command); the exit code
    (`core/exitcodes.py`). A usage error is written to stderr and returns 2; a malformed ``provider_options``
    raises :class:`MalformedProviderOption`, which the click command turns into click's own usage error."""
    from ortdoctor.decide.matrix.model import MatrixError
    from ortdoctor.decide.search import DirectoryError
    from ortdoctor.doctor.check import run_check

    if as_json and fmt not in (None, "json"):
        return _usage_error(f"--json and --format {fmt} contradict each other")
    fmt = "json" if as_json else (fmt or "text")
    options = parse_provider_options(provider_options)
    interpreter = None
    if python_path is not None:
        from ortdoctor.probes.interpreter import InterpreterError, describe

        try:
            interpreter = describe(python_path)
        except InterpreterError as exc:
            return _usage_error(str(exc))
    if provider == "tensorrt" and timeout == 60.0:
        timeout = 300.0  # building a TensorRT engine, twice with the cache, takes longer than a CUDA session
    shapes: dict[str, tuple[int, ...]] = {}
    if input_shapes and model_path is None:
        return _usage_error("--input-shape needs --model")
    if compare_limit is not None and model_path is None:
        return _usage_error("--compare-limit needs --model")
    if input_shapes:
        from ortdoctor.prove.model_check.inspect import parse_input_shapes

        try:
            shapes = parse_input_shapes(input_shapes)
        except ValueError as exc:
            return _usage_error(str(exc))
    files: dict[str, str] = {}
    if model_inputs and model_path is None:
        return _usage_error("--input needs --model")
    if model_inputs:
        from ortdoctor.prove.model_check.given_inputs import parse_input_files

        try:
            files = parse_input_files(model_inputs)
        except ValueError as exc:
            return _usage_error(str(exc))
    if sys.stderr.isatty() and fmt == "text" and not quiet:
        echo("ortdoctor: inspecting…", err=True)
    try:
        report = run_check(matrix_path=matrix_file, smoke=False if no_smoke else "auto", python=interpreter,
                           directory=directory, allow_unsafe_dirs=allow_unsafe_dirs, device_id=device_id, all_devices=all_devices,
                           smoke_provider_options=options, smoke_iobinding=iobinding, smoke_cuda_graph=cuda_graph,
                           smoke_placement=placement, smoke_timeout=timeout, smoke_provider=provider,
                           model=model_path, input_shapes=shapes, model_cuda_graph=cuda_graph,
                           model_timeout=timeout if timeout != 60.0 else 120.0, model_provider_options=options, model_inputs=files, model_iobinding=iobinding,
                           model_compare_limit=None if compare_limit is None else int(compare_limit * 1024 ** 3))
    except MatrixError as exc:
        return _usage_error(f"bad matrix file: {exc}")
    except DirectoryError as exc:
        return _usage_error(f"--directory: {exc}")

    if fmt == "json":
        from ortdoctor.report.json_report import dumps

        echo(dumps(report))
    elif fmt == "markdown":
        from ortdoctor.report.markdown import render as render_markdown

        echo(render_markdown(report), nl=False)
    elif quiet:
        from ortdoctor.report.short import render as render_short

        echo(render_short(report, color=_use_color(sys.stdout)), nl=False)
    else:
        from ortdoctor.report.text import render

        echo(render(report, color=_use_color(sys.stdout), debug=debug or verbose), nl=False)

    if report.model is not None and report.model.input_error:
        return exitcodes.USAGE  # the model file itself cannot be used: an input error
    if report.verdict == "fail" or (strict and report.verdict == "warn"):
        return exitcodes.FAIL
    return exitcodes.OK

