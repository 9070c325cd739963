"""`ortdoctor matrix`: show the compatibility matrix, one release, or which build to install."""

from __future__ import annotations

import sys

import click

from ortdoctor.core import exitcodes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ortdoctor.decide.matrix.model import Matrix


def _fail(message: str, code: int = exitcodes.USAGE) -> None:
    click.echo(f"ortdoctor matrix: {message}", err=True)
    sys.exit(code)


@click.command(name="matrix")
@click.option("--ort", "ort", metavar="VERSION", help="Show one onnxruntime-gpu release in full (e.g. 1.20.2).")
@click.option("--cuda", metavar="X[.Y]", help="Recommend a build for this CUDA major (e.g. 12 or 12.4).")
@click.option("--torch", "torch_version", metavar="X.Y", help="Recommend a build that agrees with this torch.")
@click.option("--gpu", metavar="CC", default="auto", show_default=True,
              help="Recommend only builds with kernels for this GPU: a compute capability (10.0, sm_100); "
                   "'auto': the GPUs NVML reports here; 'none': any GPU.")
@click.option("--platform", "wheel_platform", type=click.Choice(["linux_x86_64", "linux_aarch64", "win_amd64"]),
              help="The wheel platform whose kernels count (default: this machine's).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--matrix", "matrix_file", metavar="FILE", envvar="ORTDOCTOR_MATRIX", show_envvar=True,
              help="Use this matrix file instead of the shipped one.")
def command(ort: str | None, cuda: str | None, torch_version: str | None, gpu: str,
            wheel_platform: str | None, as_json: bool, matrix_file: str | None) -> None:
    """Show what each onnxruntime-gpu release needs, or which one to install.

    \b
    ortdoctor matrix                         every release line, drivers, torch builds
    ortdoctor matrix --ort 1.20.2            one release in full
    ortdoctor matrix --cuda 12 --torch 2.4   which onnxruntime-gpu to install, with the pip command
    ortdoctor matrix --cuda 13 --gpu sm_100  ... that has kernels for this GPU
    """
    from ortdoctor.decide.kernels import parse_compute_capability
    from ortdoctor.decide.matrix.load import load_matrix
    from ortdoctor.decide.matrix.model import MatrixError, parse_cuda_request, parse_torch_request
    from ortdoctor.report import matrix as rm

    gpu_cc = None
    if gpu.strip().lower() not in ("auto", "none", ""):
        gpu_cc = parse_compute_capability(gpu)
        if gpu_cc is None:
            _fail(f"--gpu {gpu!r} is not a compute capability (expected e.g. 10.0 or sm_100, or auto / none)")

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
        gpus, driver_cuda, where = ((gpu_cc,), None, "--gpu") if gpu_cc else (
            _detected_gpus(matrix) if gpu.strip().lower() == "auto" else ((), None, ""))
        platform = wheel_platform or _this_platform()
        rec = matrix.recommend(cuda, torch_version, gpus=gpus, platform=platform, driver_cuda=driver_cuda)
        gpu_text = ", ".join(f"sm_{g[0]}{g[1]}" for g in gpus) + (f" ({where})" if where else "")
        if as_json:
            click.echo(rm.recommendation_json(matrix, cuda, torch_version, rec,
                                              gpus=[f"{g[0]}.{g[1]}" for g in gpus], platform=platform),
                       nl=False)
        elif rec is not None:
            click.echo(rm.render_recommendation(rec, cuda, torch_version, gpu=gpu_text if gpus else None), nl=False)
        if rec is None:
            asked = " and ".join(x for x in (f"CUDA {cuda}" if cuda else "",
                                            f"torch {torch_version}" if torch_version else "",
                                            f"kernels for {gpu_text} in the {platform} wheel" if gpus else "")
                                 if x)
            if not as_json:
                if gpus and matrix.recommend(cuda, torch_version, platform=platform) is not None:
                    why = ("no release with those CUDA and cuDNN majors has kernels for it (--gpu none ignores "
                           "the GPU)" + rm.tegra_route(matrix, gpus, platform))
                elif matrix.recommend(cuda, torch_version) is not None:
                    why = (f"PyPI has no {platform} wheel of the lines that fit (its {platform} wheels: "
                           f"{rm.lines_with_wheel(matrix, platform)})")
                else:
                    why = "no release has the same CUDA and cuDNN majors"
                click.echo(f"ortdoctor matrix: no onnxruntime-gpu build in the matrix fits {asked}: {why}. Run "
                           "`ortdoctor matrix` to see every line.", err=True)
            sys.exit(exitcodes.FAIL)
        return

    table_gpu = gpu_cc if wheel_platform else None
    click.echo(rm.matrix_json(matrix) if as_json else rm.render_table(matrix, wheel_platform, table_gpu), nl=False)


def _this_platform() -> str:
    """This machine's wheel platform, as the matrix spells it (linux_x86_64 when it is none of its three)."""
    import platform
    import sysconfig

    from ortdoctor.decide.matrix.model import ARCH_PLATFORMS, LINUX_X86_64, wheel_platform

    name = wheel_platform(sysconfig.get_platform(), platform.machine())
    return name if name in (LINUX_X86_64, *ARCH_PLATFORMS) else LINUX_X86_64


def _detected_gpus(matrix: Matrix) -> tuple[tuple[tuple[int, int], ...], str | None, str]:
    """The compute capabilities of the GPUs CUDA can see here (NVML, after CUDA_VISIBLE_DEVICES), the
    driver's CUDA version, and how they were found; on a Jetson (no NVML) its SoC's integrated GPU; nothing
    when there is no usable driver."""
    import os

    from ortdoctor.decide.devices import map_devices
    from ortdoctor.decide.kernels import parse_compute_capability
    from ortdoctor.probes.driver import probe_driver
    from ortdoctor.probes.jetson import probe_jetson

    drv = probe_driver()
    if not drv.available:
        jet = probe_jetson() if sys.platform.startswith("linux") else None
        cc = matrix.jetson.socs.get(jet.soc) if jet is not None and jet.soc and matrix.jetson else None
        tegra = parse_compute_capability(cc) if cc else None
        return ((tegra,), None, f"detected: Jetson {jet.soc}") if tegra and jet else ((), None, "")
    dmap = map_devices(drv, device_order=os.environ.get("CUDA_DEVICE_ORDER"))
    ccs = [parse_compute_capability(c.device.compute_capability) for c in dmap.devices if c.device is not None]
    found = tuple(dict.fromkeys(cc for cc in ccs if cc is not None))
    return found, drv.cuda_version, "detected" if found else ""
