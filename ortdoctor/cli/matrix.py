"""`ortdoctor matrix`: show the compatibility matrix, one release, or which build to install."""

from __future__ import annotations

import sys

import click

from ortdoctor.core import exitcodes


def _fail(message: str, code: int = exitcodes.USAGE) -> None:
    click.echo(f"ortdoctor matrix: {message}", err=True)
    sys.exit(code)


@click.command(name="matrix")
@click.option("--ort", "ort", metavar="VERSION", help="Show one onnxruntime-gpu release in full (e.g. 1.20.2).")
@click.option("--cuda", metavar="X[.Y]", help="Recommend a build for this CUDA major (e.g. 12 or 12.4).")
@click.option("--torch", "torch_version", metavar="X.Y", help="Recommend a build that agrees with this torch.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--matrix", "matrix_file", metavar="FILE", envvar="ORTDOCTOR_MATRIX", show_envvar=True,
              help="Use this matrix file instead of the shipped one.")
def command(ort: str | None, cuda: str | None, torch_version: str | None, as_json: bool,
            matrix_file: str | None) -> None:
    """Show what each onnxruntime-gpu release needs, or which one to install.

    \b
    ortdoctor matrix                         every release line, drivers, torch builds
    ortdoctor matrix --ort 1.20.2            one release in full
    ortdoctor matrix --cuda 12 --torch 2.4   which onnxruntime-gpu to install, with the pip command
    """
    from ortdoctor.decide.matrix.load import load_matrix
    from ortdoctor.decide.matrix.model import MatrixError, parse_cuda_request, parse_torch_request
    from ortdoctor.report import matrix as rm

    if ort and (cuda or torch_version):
        _fail("use --ort on its own, or --cuda/--torch to get a recommendation")
    if cuda and parse_cuda_request(cuda) is None:
        _fail(f"--cuda {cuda!r} is not a CUDA version (expected a major like 12, or major.minor like 12.4)")
    if torch_version and parse_torch_request(torch_version) is None:
        _fail(f"--torch {torch_version!r} is not a torch version (expected e.g. 2.4 or 2.4.1+cu121)")
    try:
        matrix = load_matrix(matrix_file or None)
    except MatrixError as exc:
        _fail(f"invalid matrix: {exc}")
        return

    if ort:
        match = matrix.release_for(ort)
        if match is None:
            try:
                from packaging.version import Version

                Version(ort)
            except ValueError:
                _fail(f"--ort {ort!r} is not a PEP 440 version (expected e.g. 1.20.2)")
            _fail(f"onnxruntime-gpu {ort} is older than every release line in {matrix.path}", exitcodes.FAIL)
            return
        click.echo(rm.release_json(matrix, ort, match) if as_json else rm.render_release(matrix, match), nl=False)
        return

    if cuda or torch_version:
        if torch_version and matrix.torch_match(torch_version) is None:  # newer lines fall back, with a note
            known = ", ".join(t.version for t in matrix.torch)
            _fail(f"torch {torch_version} is older than every torch line in the matrix (known: {known})",
                  exitcodes.FAIL)
        rec = matrix.recommend(cuda, torch_version)
        if as_json:
            click.echo(rm.recommendation_json(matrix, cuda, torch_version, rec), nl=False)
        elif rec is not None:
            click.echo(rm.render_recommendation(rec, cuda, torch_version), nl=False)
        if rec is None:
            asked = " and ".join(x for x in (f"CUDA {cuda}" if cuda else "",
                                            f"torch {torch_version}" if torch_version else "") if x)
            if not as_json:
                click.echo(f"ortdoctor matrix: no onnxruntime-gpu build in the matrix fits {asked}: no release "
                           "has the same CUDA and cuDNN majors. Run `ortdoctor matrix` to see every line.",
                           err=True)
            sys.exit(exitcodes.FAIL)
        return

    click.echo(rm.matrix_json(matrix) if as_json else rm.render_table(matrix), nl=False)
