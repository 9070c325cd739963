"""``ortdoctor preload``: load the right CUDA/cuDNN libraries and show which, from where."""

from __future__ import annotations

import json
import sys

import click

from ortdoctor.core import exitcodes
from ortdoctor.core.execution_providers import PROVIDER_CHOICES


@click.command("preload")
@click.option("--directory", default=None, metavar="DIR",
              help='As onnxruntime.preload_dlls: omitted = default order, "" = NVIDIA wheels then the system, '
                   "a path = that directory (relative to the onnxruntime package) then the system.")
@click.option("--no-cuda", is_flag=True, help="Do not load the CUDA libraries.")
@click.option("--no-cudnn", is_flag=True, help="Do not load cuDNN.")
@click.option("--no-msvc", is_flag=True, help="Windows: skip the MSVC runtime check.")
@click.option("--tensorrt", is_flag=True,
              help="Also load the TensorRT libraries the TensorRT EP links (libnvinfer, its plugins, the ONNX "
                   "parser), by full path, after the CUDA set.")
@click.option("--provider", type=click.Choice(list(PROVIDER_CHOICES)), default=None,
              help="Load what that execution provider needs, in the order of its row of the execution-provider "
                   "table (tensorrt: as --tensorrt).")
@click.option("--dry-run", is_flag=True, help="Decide and show, load nothing.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout (the report contract).")
@click.option("--print-env", is_flag=True,
              help="Print the `export LD_LIBRARY_PATH=...` line for other processes.")
@click.option("--allow-unsafe-dirs", is_flag=True,
              help="Accept world-writable or foreign-owned directories, everywhere (the broad form; reported).")
@click.option("--allow-unsafe-dir", "allow_unsafe_dir", multiple=True, metavar="DIR",
              type=click.Path(file_okay=False, resolve_path=True),
              help="Accept them only for libraries under DIR (repeatable; reported).")
@click.option("--quiet", "-q", is_flag=True,
              help="No report: stdout has only --print-env's line (for eval); failures go to stderr.")
@click.option("--matrix", "matrix_path", type=click.Path(dir_okay=False), default=None,
              help="A compatibility matrix file instead of the shipped one (default: $ORTDOCTOR_MATRIX).")
@click.option("--verbose", "-v", is_flag=True, help="More detail: each library's mapping and inode, every skip.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def command(directory: str | None, no_cuda: bool, no_cudnn: bool, no_msvc: bool, tensorrt: bool,
            provider: str | None, dry_run: bool, as_json: bool, print_env: bool, allow_unsafe_dirs: bool, allow_unsafe_dir: tuple[str, ...], quiet: bool,
            matrix_path: str | None, verbose: bool, debug: bool) -> None:
    """Load the CUDA and cuDNN libraries onnxruntime-gpu needs, by absolute path, and prove it.

    Exit 0: everything loaded; 1: something failed; 2: bad option, directory or matrix file.
    """
    from ortdoctor.decide.matrix.load import load_matrix
    from ortdoctor.decide.matrix.model import MatrixError
    from ortdoctor.preloading.preloader import DirectoryError, preload
    from ortdoctor.report.preload import render_env, render_text

    try:
        result = preload(directory=directory, cuda=not no_cuda, cudnn=not no_cudnn, msvc=not no_msvc,
                         dry_run=dry_run, allow_unsafe_dirs=allow_unsafe_dirs or allow_unsafe_dir,
                         matrix=load_matrix(matrix_path),
                         tensorrt=tensorrt, provider=provider)
    except (DirectoryError, MatrixError) as exc:
        click.echo(f"ortdoctor preload: {exc}", err=True)
        sys.exit(exitcodes.USAGE)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    elif not quiet:
        click.echo(render_text(result, verbose=verbose or debug), nl=False)
    elif not result.ok:
        # the error findings say what failed and the fix; a bare load failure has no finding of its own
        errors = [f for f in result.findings if f.severity == "error"]
        for finding in errors:
            click.echo(f"ortdoctor preload: {finding.title} [{finding.id}]"
                       + (f"; fix: {finding.fix}" if finding.fix else ""), err=True)
        if not errors:
            for failed in result.failed:
                click.echo(f"ortdoctor preload: {failed.soname} failed to load: {failed.error}", err=True)
    if print_env:
        # with --json the shell line goes to stderr, so stdout stays one JSON object
        click.echo(render_env(result), nl=False, err=as_json)
    sys.exit(exitcodes.OK if result.ok else exitcodes.FAIL)
