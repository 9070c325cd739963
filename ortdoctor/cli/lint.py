"""`ortdoctor lint`: read requirement files, lock files, pyproject.toml, conda files and Dockerfiles."""

from __future__ import annotations

import sys

import click

from ortdoctor.core import exitcodes


def _fail(message: str, code: int = exitcodes.USAGE) -> None:
    click.echo(f"ortdoctor lint: {message}", err=True)
    sys.exit(code)


@click.command(name="lint")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "sarif"]), default="text",
              show_default=True, help="text; json; github: workflow annotations; sarif: SARIF 2.1.0 for code scanning.")
@click.option("--json", "as_json", is_flag=True, help="The same as --format json.")
@click.option("--gpu", "gpus", multiple=True, metavar="CC",
              help="A GPU the environment runs on (8.6, sm_70); repeat for more. Adds to [tool.ortdoctor] gpus.")
@click.option("--min-driver", metavar="VERSION",
              help="The oldest NVIDIA driver the machines run (535.104.05); overrides [tool.ortdoctor] min-driver.")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False, writable=True),
              help="Write the report to this file instead of stdout.")
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@click.option("--show-suppressed", is_flag=True,
              help="List the findings `# ortdoctor: ignore[ID]` or [tool.ortdoctor] ignore silence "
                   "(SARIF always marks them).")
@click.option("--matrix", "matrix_file", metavar="FILE", envvar="ORTDOCTOR_MATRIX", show_envvar=True,
              help="Use this matrix file instead of the shipped one.")
def command(paths: tuple[str, ...], fmt: str, as_json: bool, gpus: tuple[str, ...], min_driver: str | None,
            output: str | None, strict: bool, show_suppressed: bool, matrix_file: str | None) -> None:
    """Find onnxruntime-gpu misconfigurations in the files, before anything is installed.

    Reads pip requirement files (-r, -c, markers, index URLs), pyproject.toml (PEP 621, Poetry, PDM, uv),
    uv.lock, poetry.lock, pylock.toml, conda environment files and Dockerfiles; with no PATH, the files
    it recognises under the current directory. Installs nothing and asks no index.

    \b
    ortdoctor lint                                 every recognised file under .
    ortdoctor lint requirements.txt Dockerfile     these files
    ortdoctor lint --format github                 annotations in a GitHub workflow
    ortdoctor lint --format sarif -o lint.sarif    for code scanning
    ortdoctor lint --gpu 7.0 --min-driver 535.104  what the machines are
    """
    import re

    from ortdoctor.decide.kernels import parse_compute_capability
    from ortdoctor.decide.matrix.load import load_matrix
    from ortdoctor.decide.matrix.model import MatrixError
    from ortdoctor.doctor.lint import lint_paths
    from ortdoctor.report.lint import render, verdict

    for gpu in gpus:
        if parse_compute_capability(gpu) is None:
            _fail(f"--gpu {gpu!r} is not a compute capability (expected e.g. 8.6 or sm_70)")
    if min_driver is not None and not re.fullmatch(r"\d+(\.\d+){0,2}", min_driver.strip()):
        _fail(f"--min-driver {min_driver!r} is not a driver version (expected e.g. 535.104.05)")
    try:
        matrix = load_matrix(matrix_file or None)
    except MatrixError as exc:
        _fail(f"invalid matrix: {exc}")
        return
    report = lint_paths(paths or (".",), gpus=gpus, min_driver=min_driver.strip() if min_driver else None,
                        matrix=matrix)
    fmt = "json" if as_json else fmt
    text = render(fmt, report.files, report.findings, report.errors,
                  report.suppressed if show_suppressed or fmt == "sarif" else ())
    if output:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            _fail(f"cannot write {output}: {exc.strerror or exc}")
    else:
        click.echo(text, nl=False)
    if report.errors:
        sys.exit(exitcodes.USAGE)
    v = verdict(report.findings)
    sys.exit(exitcodes.FAIL if v == "fail" or (v == "warn" and strict) else exitcodes.OK)
