"""The diagnosis: facts + plan + matrix -> findings, each with what was seen, why it matters and the fix.

A function of its inputs: it opens no files (it only stats the chosen libraries against their RECORD sizes
and resolves links), imports nothing heavy and never touches a GPU, so
every finding is tested with an :class:`~ortdoctor.core.facts.Environment` built by hand. The order of the
checks follows the order in which a person has to repair things (the package first, then the driver,
then the libraries); the result is sorted by severity, keeping that order inside each severity.
Each rule family lives in its own module of this package."""

from __future__ import annotations

from collections.abc import Sequence

from ortdoctor.core.facts import (
    Environment,
    Finding,
    Plan,
)
from ortdoctor.core.record import replace
from ortdoctor.core.severity import severity_rank
from ortdoctor.decide.build import is_cuda_build
from ortdoctor.diagnose.context import Ctx, build_cuda_major
from ortdoctor.diagnose.driver import check_driver, driver_absent
from ortdoctor.diagnose.environment import (
    check_installer,
    check_multiprocessing,
    check_nvidia_stubs,
    check_readable,
    check_search_path,
    lead_with_the_layout,
)
from ortdoctor.diagnose.libraries import check_libraries, check_torch_copies
from ortdoctor.diagnose.merge import merge_device_smokes, merge_plan_findings, merge_smoke
from ortdoctor.diagnose.neighbours import check_siblings, check_torch
from ortdoctor.diagnose.package import check_import, check_package, check_platform, check_release
from ortdoctor.diagnose.platforms import check_glibc, check_jetson
from ortdoctor.diagnose.smoke import classify_smoke
from ortdoctor.diagnose.tensorrt import (
    check_cuda_plugin_ep,
    check_plugin_devices,
    check_plugin_eps,
    check_tensorrt,
)

TYPE_CHECKING = False

if TYPE_CHECKING:
    from ortdoctor.decide.matrix.model import Matrix
    from ortdoctor.prove.smoke.devices import DeviceSmoke
    from ortdoctor.prove.smoke.runner import SmokeResult


def diagnose(
    env: Environment,
    plan: Plan | None,
    matrix: Matrix,
    smoke: SmokeResult | None = None,
    *,
    os_name: str | None = None,
    device_id: int = 0,
    all_devices: bool = False,
    device_order: str | None = None,
    device_smokes: Sequence[DeviceSmoke] = (),
) -> list[Finding]:
    """Every problem the facts show, most severe first.

    ``plan`` is the resolver's answer for the installed build (None when there is nothing to resolve);
    its own findings are included. ``smoke`` is a :class:`ortdoctor.prove.smoke.SmokeResult` (or None): a
    failed smoke run confirms a finding (its evidence is appended) or adds its own. ``os_name`` is
    ``"linux"`` or ``"windows"`` (default: the inspected Python's). ``device_id`` is the GPU the
    session will use (counted after CUDA_VISIBLE_DEVICES, as CUDA does); ``all_devices`` checks every
    visible GPU instead. ``device_order`` is CUDA_DEVICE_ORDER. ``device_smokes`` are the
    :class:`ortdoctor.prove.smoke.devices.DeviceSmoke` results of ``check --all-devices``: the one on ``device_id``
    is ``smoke``; a failure on another device gets its own finding naming the device.
    """
    ort = env.ort
    os_name = os_name or env.python.os
    no_driver = driver_absent(env)  # then a failed smoke session failed for want of one, and says so
    smoke = classify_smoke(smoke, no_driver=no_driver) if smoke is not None else None
    device_smokes = [replace(d, smoke=classify_smoke(d.smoke, no_driver=no_driver)) for d in device_smokes]
    match = matrix.release_for(ort.version) if ort.installed and ort.version else None
    gpu_build = ort.installed and is_cuda_build(ort)
    ctx = Ctx(env, plan, matrix, os_name, device_id, match, gpu_build, build_cuda_major(env, plan, match),
               all_devices, device_order)

    found: list[Finding] = check_readable(ctx)
    found += check_platform(ctx)
    found += check_glibc(ctx)
    found += check_jetson(ctx)
    found += check_package(ctx)
    if gpu_build:
        found += check_release(ctx)
        found += check_import(ctx)
    found += check_driver(ctx)
    if gpu_build:
        found += check_libraries(ctx)
        found += check_torch(ctx)
        found += check_torch_copies(ctx)
        found += check_siblings(ctx)
        found += check_tensorrt(ctx, smoke)
        found += check_cuda_plugin_ep(ctx)
    if ort.installed:
        found += check_plugin_eps(ctx)
        found += check_plugin_devices(ctx, smoke)
    found += check_search_path(ctx)
    found += check_installer(ctx)
    found += check_nvidia_stubs(ctx)
    if gpu_build:
        found += check_multiprocessing(ctx)
    found = merge_plan_findings(found, plan)
    found = merge_smoke(found, smoke, ctx.installer)
    found = merge_device_smokes(found, ctx, smoke, device_smokes)
    # every package fix one command a line, its prose as comments (decide/fixes.py: Installer.complete)
    found = [ctx.installer.complete(f) for f in found]
    found = sorted(found, key=lambda f: severity_rank(f.severity))
    return lead_with_the_layout(found)
