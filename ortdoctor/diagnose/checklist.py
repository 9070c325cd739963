"""The diagnosis: facts + plan + matrix -> findings, each with what was seen, why it matters and the fix.

A pure function of its inputs: it reads no files, imports nothing heavy and never touches a GPU, so
every finding is tested with an :class:`~ortdoctor.core.facts.Environment` built by hand. The order of the
checks follows the order in which a person has to repair things (the package first, then the driver,
then the libraries); the result is sorted by severity, keeping that order inside each severity.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ortdoctor.core.catalog import CATALOG, make
from ortdoctor.core.facts import (
    Candidate,
    Device,
    DriverError,
    ElfInfo,
    Environment,
    Finding,
    LibraryPlan,
    OrtDistribution,
    Plan,
)
from ortdoctor.decide.build import is_cuda_build
from ortdoctor.decide.devices import CudaDevice, DeviceMap, describe, map_devices
from ortdoctor.decide.loader_view import (
    SOURCE_WORDS,
    LoaderPick,
    compact_sonames,
    default_loader_copy,
    loader_visible,
    same_file,
)
from ortdoctor.decide.torch import torch_copies, torch_other_copy_finding
from ortdoctor.diagnose.smoke import classify_smoke
from ortdoctor.prove.smoke.devices import DeviceSmoke
from ortdoctor.prove.smoke.runner import SmokeResult

if TYPE_CHECKING:
    from ortdoctor.decide.matrix.model import LibSpec, Matrix, ReleaseMatch

__all__ = ["DEFAULT_GPU_INSTALL", "diagnose", "recommended_install", "visible_devices"]

DEFAULT_GPU_INSTALL = 'pip install "onnxruntime-gpu[cuda,cudnn]"'
# Dependencies the CUDA feeds do not carry: pip must find them on PyPI before --index-url points elsewhere.
_FEED_PREREQS = "pip install flatbuffers numpy packaging protobuf sympy"
# Resolver findings that say less than a diagnosis finding about the same thing: dropped when it fires.
_SUPERSEDED = {"ld-library-path-unsafe-entry": "ld-library-path-unsafe", "lib-sources-mixed": "lib-multiple-copies"}
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
# Free memory below this (MiB) leaves too little for an arena plus cuDNN workspaces.
LOW_MEMORY_MIB = 1024
# NVML compute modes that refuse a new CUDA context (always, or while another process holds one).
_RESTRICTED_MODES = {"prohibited": "gpu-compute-mode-prohibited", "exclusive-process": "gpu-compute-mode-exclusive",
                     "exclusive-thread": "gpu-compute-mode-exclusive"}
_CUDA_SONAME = re.compile(r"^(?:lib(cudart|cublasLt|cublas|cufft|curand|nvrtc|cudnn)\.so\.(\d+)"
                          r"|(cudart|cublasLt|cublas|cufft|curand|nvrtc)64_(\d+)\.dll)", re.IGNORECASE)
_DATACENTER_HINTS = ("Tesla", "A100", "A30", "A10", "A40", "H100", "H200", "H800", "B100", "B200", "GH200",
                     "GB200", "L4", "L40", "V100", "T4", "A2", "A16")


@dataclass(frozen=True)
class _Ctx:
    env: Environment
    plan: Plan | None
    matrix: Matrix
    os_name: str
    device_id: int
    match: ReleaseMatch | None
    gpu_build: bool
    cuda_major: int | None
    all_devices: bool = False  # check every visible GPU, not only device_id's
    device_order: str | None = None  # CUDA_DEVICE_ORDER


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
    smoke = classify_smoke(smoke) if smoke is not None else None
    device_smokes = [replace(d, smoke=classify_smoke(d.smoke)) for d in device_smokes]
    match = matrix.release_for(ort.version) if ort.installed and ort.version else None
    gpu_build = ort.installed and is_cuda_build(ort)
    ctx = _Ctx(env, plan, matrix, os_name, device_id, match, gpu_build, _build_cuda_major(env, plan, match),
               all_devices, device_order)

    found: list[Finding] = []
    found += _check_platform(ctx)
    found += _check_package(ctx)
    if gpu_build:
        found += _check_release(ctx)
        found += _check_import(ctx)
    found += _check_driver(ctx)
    if gpu_build:
        found += _check_libraries(ctx)
        found += _check_torch(ctx)
        found += _check_torch_copies(ctx)
        found += _check_siblings(ctx)
        found += _check_tensorrt(ctx)
    found += _check_search_path(ctx)
    found += _check_nvidia_stubs(ctx)
    if gpu_build:
        found += _check_multiprocessing(ctx)
    found = _merge_plan_findings(found, plan)
    found = _merge_smoke(found, smoke)
    found = _merge_device_smokes(found, ctx, smoke, device_smokes)
    return sorted(found, key=lambda f: _SEVERITY_ORDER.get(f.severity, 3))


# ================================================================================================
# The package
# ================================================================================================
def _build_cuda_major(env: Environment, plan: Plan | None, match: ReleaseMatch | None) -> int | None:
    if plan is not None and plan.cuda_major:
        return plan.cuda_major
    major = _major(env.ort.cuda_version)
    if major is None and match is not None:
        major = _major(match.release.cuda)
    return major


def _ort_family(ort: Any) -> list[OrtDistribution]:
    """Distributions that own `onnxruntime/` itself (genai and other siblings have their own package)."""
    return [d for d in ort.distributions if not _norm(d.name).startswith(("onnxruntime-genai", "onnxruntime-extensions"))]


def _check_platform(ctx: _Ctx) -> list[Finding]:
    py = ctx.env.python
    if py.os in ("darwin", "macos"):
        return [make("platform-no-cuda", f"This Python runs on {py.os} ({py.machine}); NVIDIA CUDA and "
                     "onnxruntime-gpu are not available there.")]
    return []


def _check_package(ctx: _Ctx) -> list[Finding]:
    ort = ctx.env.ort
    family = _ort_family(ort)
    if not ort.installed:
        detail = "No distribution owns the onnxruntime package in any site directory of " + ctx.env.python.executable
        if family:
            names = ", ".join(f"{d.name} {d.version}" for d in family)
            detail = (f"{names} {'is' if len(family) == 1 else 'are'} recorded as installed but the onnxruntime "
                      "package files are gone (uninstalling one ORT flavour deletes files the other needs).")
            fix = f"pip uninstall -y {' '.join(d.name for d in family)} && {_install_command(ctx)}"
        else:
            fix = _install_command(ctx)
        searched = ctx.env.python.site_dirs
        if searched:
            detail += "\nSearched: " + ", ".join(searched)
        return [make("ort-not-installed", detail, fix)]

    out: list[Finding] = []
    shadow = _shadowing(ctx, family) if len(family) > 1 else None
    if shadow is not None:
        out.append(shadow)
    elif len(family) > 1:
        names = [d.name for d in family]
        lines = []
        for d in family:
            owner = {True: "its files are the ones on disk", False: "its files were overwritten",
                     None: "cannot tell whose files are on disk"}[d.owns_files_on_disk]
            lines.append(f"{d.name} {d.version} ({d.dist_info}): {owner}")
        winner = f"The files on disk belong to {ort.active}" if ort.active else "Whose files are on disk is unclear"
        build = "a CPU build" if not is_cuda_build(ort) else f"a CUDA {ort.cuda_version or '?'} build"
        detail = "\n".join([*lines, f"{winner} ({build}, package_name={ort.package_name!r})."])
        uninstall = " ".join(dict.fromkeys([*names, "onnxruntime", "onnxruntime-gpu"]))
        out.append(make("ort-multiple-packages", detail, f"pip uninstall -y {uninstall} && {_install_command(ctx)}"))
    elif not is_cuda_build(ort):
        name = ort.active or (family[0].name if family else "onnxruntime")
        detail = (f"{name} {ort.version or ''} in {ort.package_dir} is a CPU build: "
                  f"package_name={ort.package_name!r}, cuda_version={ort.cuda_version!r}, and there is no "
                  "CUDA provider library (libonnxruntime_providers_cuda.so / onnxruntime_providers_cuda.dll).")
        out.append(make("ort-cpu-only", detail, f"pip uninstall -y {name} && {_install_command(ctx)}"))

    problems = [*ort.problems, *(f"{d.name}: {p}" for d in family for p in d.problems)]
    if ort.build_info_error:
        problems.append(f"build_and_package_info.py: {ort.build_info_error}")
    if problems:
        dist = ort.active or (family[0].name if family else "onnxruntime-gpu")
        out.append(make("ort-install-damaged", "\n".join(problems),
                        f"pip install --force-reinstall --no-deps {dist}"))
    return out


def _is_pip_site(location: str) -> bool:
    """A site-packages directory pip manages (a ``pip install --target`` directory is not one)."""
    return os.path.basename(os.path.normpath(location)) in ("site-packages", "dist-packages")


def _remove_command(d: OrtDistribution, family: Sequence[OrtDistribution]) -> str:
    """How to remove one distribution from its own location, and only it."""
    same_name_elsewhere = any(o is not d and _norm(o.name) == _norm(d.name) for o in family)
    if _is_pip_site(d.location) and not same_name_elsewhere:
        return f"pip uninstall -y {d.name}  # removes it from {d.location}"
    pkg = os.path.join(d.location, "onnxruntime")
    return (f"rm -rf {pkg} {d.dist_info}  # a --target directory: pip does not manage it;\n"
            f"or drop {d.location} from PYTHONPATH")


def _shadowing(ctx: _Ctx, family: Sequence[OrtDistribution]) -> Finding | None:
    """Two distributions in different site directories: one is imported, the other shadowed. None when
    they share a directory (one overwrote the other's files: the general message says so)."""
    ort = ctx.env.ort
    if not ort.package_dir or len({os.path.normpath(d.location) for d in family}) < 2:
        return None
    site = os.path.normpath(os.path.dirname(ort.package_dir))
    imported = [d for d in family if os.path.normpath(d.location) == site]
    if len(imported) != 1:
        return None
    imp = imported[0]
    shadowed = [d for d in family if d is not imp]
    gpu = is_cuda_build(ort)
    build = f"a CUDA {ort.cuda_version or '?'} build" if gpu else "a CPU build"
    lines = [f"{imp.name} {imp.version} in {imp.location}: `import onnxruntime` takes this one (its directory "
             f"comes first on sys.path; {build})"]
    lines += [f"{d.name} {d.version} in {d.location}: shadowed (its onnxruntime/ is not imported)" for d in shadowed]
    lines.append(f"Still a problem: a change of PYTHONPATH or uninstalling {imp.name} flips `import onnxruntime` "
                 f"to {shadowed[0].name}, and pip sees both (pip check, upgrades, dependency resolution).")
    if gpu:
        fix = "\n".join(_remove_command(d, family) for d in shadowed)
        return make("ort-multiple-packages", "\n".join(lines), fix, severity="warning")
    gpu_dists = [d for d in shadowed if _norm(d.name) == "onnxruntime-gpu"]
    if gpu_dists:
        fix = (_remove_command(imp, family)
               + f"\nthen `import onnxruntime` takes {gpu_dists[0].name} {gpu_dists[0].version} from "
                 f"{gpu_dists[0].location}")
    else:
        fix = "\n".join(_remove_command(d, family) for d in family) + f"\nthen: {_install_command(ctx)}"
    return make("ort-multiple-packages", "\n".join(lines), fix)


def recommended_install(env: Environment, matrix: Matrix) -> str:
    """The command that installs a working onnxruntime-gpu on this machine (driver's and torch's CUDA)."""
    ctx = _Ctx(env, None, matrix, env.python.os, 0, None, False, None)
    return _install_command(ctx)


def _install_command(ctx: _Ctx) -> str:
    """What to install on this machine: a build for the driver's (or torch's) CUDA major."""
    env = ctx.env
    cuda = env.driver.cuda_version if env.driver.available else None
    torch = env.torch.version if env.torch is not None and env.torch.cuda else None
    if cuda is None and torch is None:
        return DEFAULT_GPU_INSTALL
    # Agree with torch when possible; else the driver alone decides.
    rec = ctx.matrix.recommend(cuda, torch)
    if rec is None and torch is not None and cuda is not None:
        rec = ctx.matrix.recommend(cuda, None)
    if rec is None:
        return DEFAULT_GPU_INSTALL
    alternative = getattr(rec, "alternative", None)
    return rec.command + (f"\nor the newest build for this CUDA: {alternative}" if alternative else "")


def _check_release(ctx: _Ctx) -> list[Finding]:
    ort = ctx.env.ort
    out: list[Finding] = []
    if ctx.match is None:
        out.append(make("ort-version-unverified",
                        f"onnxruntime {ort.version} is older than every release line in the matrix (or its "
                        "version is unparsable); its needs are read from the installed files only."))
        return out
    rel = ctx.match.release
    for bad in rel.known_bad:
        if bad.version == ort.version:
            affects = f" (affects: {bad.affects})" if bad.affects else ""
            out.append(make("ort-known-bad-release",
                            f"{ort.active or 'onnxruntime'} {ort.version}{affects}: {bad.problem}", bad.fix))
    if ctx.match.unverified:
        out.append(make("ort-version-unverified", f"onnxruntime {ort.version}: {ctx.match.note}"))
    return out


def _check_import(ctx: _Ctx) -> list[Finding]:
    """Mode 11: the pybind module itself links a CUDA library, so `import onnxruntime` fails without it."""
    ort = ctx.env.ort
    pybind = ort.pybind
    needed = pybind.needed if isinstance(pybind, ElfInfo) else getattr(pybind, "imports", ())
    cuda_needed = [n for n in needed if _CUDA_SONAME.match(n)]
    if not cuda_needed:
        return []
    by_soname = {lp.soname: lp for lp in ctx.plan.libraries} if ctx.plan else {}
    problems: list[str] = []
    for soname in cuda_needed:
        lp = by_soname.get(soname)
        if lp is None or lp.chosen is None:
            problems.append(f"{soname}: not found anywhere")
        elif not loader_visible(ctx.env, lp.soname, lp.chosen, ctx.os_name):
            problems.append(f"{soname}: only at {lp.chosen.path}, which the loader does not search")
    if not problems:
        return []
    detail = (f"The pybind module {pybind.path} has NEEDED {', '.join(cuda_needed)}, so `import onnxruntime` "
              "raises ImportError unless they load:\n" + "\n".join(problems))
    fix = (f'pip install "{ort.active or "onnxruntime-gpu"}!={ort.version}"  (a release whose pybind module does '
           "not link CUDA), or install and preload the CUDA runtime: pip install nvidia-cuda-runtime, then "
           "`import ortdoctor.hook` before `import onnxruntime`")
    return [make("ort-import-fails", detail, fix)]


# ================================================================================================
# Driver and GPU
# ================================================================================================
def visible_devices(driver: Any, *, device_order: str | None = None) -> tuple[list[Device], str | None]:
    """The NVML devices CUDA will enumerate after CUDA_VISIBLE_DEVICES, in CUDA's order, and why some
    are hidden (see :func:`ortdoctor.decide.devices.map_devices` for CUDA's rules; a MIG instance that NVML's
    list cannot tie to a GPU is left out here and kept in the map)."""
    dmap = map_devices(driver, device_order=device_order)
    return [c.device for c in dmap.devices if c.device is not None], dmap.visibility_note


def _check_driver(ctx: _Ctx) -> list[Finding]:
    env = ctx.env
    drv = env.driver
    py = env.python
    hints = _environment_hints(ctx)
    if not drv.available:
        kind = drv.error_kind
        if kind == DriverError.LIB_RM_VERSION_MISMATCH:
            detail = f"NVML: {drv.error or 'Driver/library version mismatch'}"
            if drv.kernel_module_version:
                detail += f"\nKernel module (/proc/driver/nvidia/version): {drv.kernel_module_version}"
            return [make("driver-library-mismatch", detail + hints,
                         "Reboot, or reload the modules: sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia "
                         "&& sudo modprobe nvidia nvidia_uvm")]
        if kind in (DriverError.NO_PERMISSION, DriverError.GPU_IS_LOST, DriverError.OTHER):
            return [make("driver-error", f"NVML: {drv.error or kind.value}" + hints)]
        # No driver library, or the kernel module is not loaded.
        if py.wsl and not any(p.startswith("/usr/lib/wsl/") for p in drv.libcuda):
            seen = ", ".join(drv.libcuda) or "no libcuda.so.1"
            dxg = "present" if "/dev/dxg" in drv.dev_nodes else "missing"
            return [make("wsl-libcuda-missing",
                         f"WSL2 detected; /usr/lib/wsl/lib/libcuda.so.1 not found ({seen}); /dev/dxg {dxg}. "
                         f"NVML: {drv.error or 'not loadable'}" + hints)]
        if kind == DriverError.DRIVER_NOT_LOADED:
            detail = f"The NVIDIA driver library is installed but the kernel module is not loaded: {drv.error or ''}"
            fix = "sudo modprobe nvidia (or reboot); check `dmesg | grep -i nvidia` for why it did not load"
        else:
            lib = "nvml.dll" if ctx.os_name == "windows" else "libnvidia-ml.so.1"
            detail = f"NVML could not be loaded ({drv.error or lib + ' not found'})"
            detail += "; libcuda.so.1 " + ("found at " + ", ".join(drv.libcuda) if drv.libcuda else "not found")
            detail += "; /dev/nvidia*: " + (", ".join(drv.dev_nodes) if drv.dev_nodes else "none") + "."
            fix = _driver_install_fix(ctx, py.container)
        if not ctx.gpu_build:
            detail += "\nWithout a driver no CUDA build can run here; a CPU build will."
        return [make("driver-missing", detail + hints, fix)]

    out: list[Finding] = []
    out += _check_driver_version(ctx)
    out += _check_compat_libs(ctx)
    dmap = map_devices(drv, device_order=ctx.device_order)
    why = dmap.visibility_note
    if not dmap.devices:
        detail = why or "NVML reports no GPU"
        detail += f" (driver {drv.version}; NVML sees {len(drv.devices)} device(s))"
        if drv.nvidia_visible_devices is not None:
            detail += f"; NVIDIA_VISIBLE_DEVICES={drv.nvidia_visible_devices!r}"
        if drv.cuda_visible_devices is not None and drv.devices:
            fix = "unset CUDA_VISIBLE_DEVICES (or set it to the GPU indices to use, e.g. export CUDA_VISIBLE_DEVICES=0)"
        elif py.container or drv.nvidia_visible_devices in ("void", "none", ""):
            fix = ("Start the container with GPUs: docker run --gpus all ... (nvidia-container-toolkit on the "
                   "host); in Kubernetes request nvidia.com/gpu")
        else:
            fix = CATALOG["no-gpu-visible"].fix
        out.append(make("no-gpu-visible", detail + hints, fix))
        return out
    visible = list(dmap.devices)
    if ctx.device_id < 0 or ctx.device_id >= len(visible):
        out.append(_invalid_ordinal(ctx, dmap))
        target = visible
    elif ctx.all_devices:
        target = visible
    else:
        target = [visible[ctx.device_id]]
    if ctx.gpu_build:
        out += _check_arch(ctx, target, visible)
    out += _check_memory(target, visible)
    out += _check_compute_mode(target, visible)
    return out


def _invalid_ordinal(ctx: _Ctx, dmap: DeviceMap) -> Finding:
    """A device_id CUDA does not have here: what is visible, and the id or variable that gets the GPU meant."""
    drv = ctx.env.driver
    visible = dmap.devices
    n = len(visible)
    cvd = f" (CUDA_VISIBLE_DEVICES={drv.cuda_visible_devices!r})" if drv.cuda_visible_devices is not None else ""
    detail = (f"device_id {ctx.device_id} requested, but {n} GPU(s) are visible{cvd}; CUDA numbers them from 0: "
              f"{dmap.listing()}.")
    if dmap.visibility_note:
        detail += f"\n{dmap.visibility_note}."
    detail += "\nORT fails with `CUDA failure 101: invalid device ordinal`."
    fixes = [f"--device-id {0 if n == 1 else f'0 … {n - 1}'}  (provider option {{'device_id': 0}}: ids count from 0 "
             "after CUDA_VISIBLE_DEVICES)"]
    # The GPU the id was probably meant for: NVML's (nvidia-smi's) GPU with that number.
    meant = next((d for d in drv.devices if d.index == ctx.device_id), None)
    if meant is not None:
        ordinal = dmap.ordinal_of(meant.index)
        if ordinal is not None:
            fixes.append(f"nvidia-smi's GPU {meant.index} ({meant.name}) is CUDA device {ordinal} here: "
                         f"--device-id {ordinal}")
        elif drv.cuda_visible_devices is not None:
            keep = [c.entry for c in visible if c.entry]
            ident = meant.uuid or str(meant.index)
            fixes.append(f"to use nvidia-smi's GPU {meant.index} ({meant.name}), make it visible: export "
                         f"CUDA_VISIBLE_DEVICES={','.join([*keep, ident])} and use --device-id {len(keep)}")
    return make("invalid-device-ordinal", detail, "\n".join(fixes))


def _visible_ids(devices: Sequence[CudaDevice]) -> str:
    """A CUDA_VISIBLE_DEVICES value naming exactly these GPUs (UUIDs: they survive renumbering)."""
    return ",".join(c.uuid or str(c.nvml_index) for c in devices)


def _others_fix(bad: Sequence[CudaDevice], visible: Sequence[CudaDevice]) -> str | None:
    good = [c for c in visible if c not in bad and c.device is not None]
    if not good or len(visible) < 2:
        return None
    ords = ", ".join(str(c.ordinal) for c in good)
    return (f"or use only the GPUs without this problem (CUDA devices {ords}): --device-id {good[0].ordinal}, "
            f"or for a server using every GPU: export CUDA_VISIBLE_DEVICES={_visible_ids(good)}")
def _environment_hints(ctx: _Ctx) -> str:
    py = ctx.env.python
    parts = []
    if py.container:
        parts.append("container: " + ", ".join(py.container))
    if py.wsl:
        parts.append("WSL2")
    return ("\nEnvironment: " + "; ".join(parts)) if parts else ""


def _driver_install_fix(ctx: _Ctx, container: Sequence[str]) -> str:
    minimum = _min_driver(ctx)
    branch = minimum.split(".")[0] if minimum else "580"
    need = f" (>= {minimum} for CUDA {ctx.env.ort.cuda_version})" if minimum and ctx.env.ort.cuda_version else ""
    if container:
        return ("This is a container: install the NVIDIA driver on the host and start the container with "
                f"`docker run --gpus all` (nvidia-container-toolkit on the host){need}")
    if ctx.os_name == "windows":
        return f"Install the NVIDIA driver{need} from https://www.nvidia.com/Download/index.aspx"
    return (f"Install the NVIDIA driver{need}: sudo apt-get install nvidia-driver-{branch} (Ubuntu/Debian; "
            "or NVIDIA's .run installer), then reboot. On a machine without an NVIDIA GPU, CUDA cannot run.")


def _min_driver(ctx: _Ctx) -> str | None:
    cuda = ctx.env.ort.cuda_version or (ctx.match.release.cuda if ctx.match else None)
    if not cuda or not ctx.gpu_build:
        return None
    return ctx.matrix.min_driver(cuda, "windows" if ctx.os_name == "windows" else "linux")


def _check_driver_version(ctx: _Ctx) -> list[Finding]:
    if not ctx.gpu_build:
        return []
    drv = ctx.env.driver
    build_cuda = ctx.env.ort.cuda_version or (ctx.match.release.cuda if ctx.match else None)
    if not build_cuda:
        return []
    minimum = _min_driver(ctx)
    reasons = []
    drv_major = _major(drv.cuda_version)
    if drv_major is not None and ctx.cuda_major is not None and drv_major < ctx.cuda_major:
        reasons.append(f"the driver supports CUDA up to {drv.cuda_version}")
    if minimum and drv.version and _vtuple(drv.version) < _vtuple(minimum):
        reasons.append(f"CUDA {build_cuda} needs driver >= {minimum}")
    if not reasons:
        return []
    detail = (f"Driver {drv.version or '?'} (CUDA {drv.cuda_version or '?'}); {ctx.env.ort.active or 'onnxruntime-gpu'} "
              f"{ctx.env.ort.version} is built for CUDA {build_cuda}: " + "; ".join(reasons) + ".")
    branch = minimum.split(".")[0] if minimum else "580"
    upgrade = (f"Upgrade the driver to >= {minimum or branch}: "
               + ("NVIDIA's installer (https://www.nvidia.com/Download/index.aspx)" if ctx.os_name == "windows"
                  else f"sudo apt-get install nvidia-driver-{branch}, then reboot"))
    alt = _build_for_major(ctx, drv_major) if drv_major is not None else None
    fix = upgrade + (f"\nor keep this driver and install a build for CUDA {drv_major}: {alt}" if alt else "")
    return [make("driver-too-old", detail, fix)]


def _build_for_major(ctx: _Ctx, major: int) -> str | None:
    """The command that installs an onnxruntime-gpu built for CUDA ``major`` (a feed of the installed
    release line, else the matrix's recommendation)."""
    ort = ctx.env.ort
    if ctx.match is not None:
        for feed in ctx.match.release.feeds:
            if _major(feed.cuda) == major:
                if feed.index_url is None:
                    return f'pip install "onnxruntime-gpu=={ort.version}"'
                return (f"pip uninstall -y onnxruntime-gpu && {_FEED_PREREQS} && pip install --no-cache-dir "
                        f"onnxruntime-gpu=={ort.version} --index-url {feed.index_url}")
    rec = ctx.matrix.recommend(str(major), None)
    if rec is None:
        return None
    return f"pip uninstall -y onnxruntime-gpu && {rec.command}"


def _check_compat_libs(ctx: _Ctx) -> list[Finding]:
    """Mode 22: cuda-compat (forward-compatibility) libcuda on the path."""
    env = ctx.env
    paths = list(env.driver.libcuda) + list(env.system.ldconfig.get("libcuda.so.1", ()))
    paths += [d.path for d in env.system.ld_library_path if re.search(r"/compat/?$", d.path)]
    compat = sorted({p for p in paths if "/compat" in p})
    if not compat:
        return []
    names = [d.name for d in env.driver.devices]
    consumer = [n for n in names if not any(h in n for h in _DATACENTER_HINTS)]
    severity = "error" if consumer else "warning"
    detail = (f"Forward-compatibility libcuda on the library path: {', '.join(compat)}; GPUs: "
              f"{', '.join(names) or 'none'}.")
    if consumer:
        detail += " Forward compatibility works only on data-centre GPUs; these are not: " + ", ".join(consumer)
    return [make("cuda-compat-on-unsupported-hw", detail, severity=severity)]


def _sm(cc: str) -> tuple[int, int] | None:
    m = re.fullmatch(r"(\d+)\.(\d+)", cc.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def _arch_supported(cc: tuple[int, int], archs: Iterable[str]) -> bool:
    """NVIDIA's rules: a cubin for sm_Mn runs on sm_Mk with k >= n (same major); PTX for compute_XY is
    JIT-compiled on any device of capability >= X.Y."""
    for arch in archs:
        m = re.fullmatch(r"(sm|compute)_(\d+?)(\d)([a-z]?)", arch.strip().lower())
        if not m:
            continue
        kind, major, minor, suffix = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if kind == "sm" and major == cc[0] and minor <= cc[1] and (not suffix or minor == cc[1]):
            return True
        if kind == "compute" and not suffix and (major, minor) <= cc:
            return True
    return False


def _arch_problem(ctx: _Ctx, dev: Device) -> tuple[str, str | None] | None:
    """Why ``dev`` cannot run this build's kernels, with the fix (None when it can, or when unknown)."""
    archs = ctx.match.release.archs if ctx.match else ()
    cc = _sm(dev.compute_capability or "")
    if cc is None:
        return None
    if ctx.cuda_major is not None and ctx.cuda_major >= 13 and cc < (7, 5):
        why = (f"CUDA {ctx.cuda_major} dropped Maxwell, Pascal and Volta (compute capability < 7.5); this "
               f"build cannot run on sm_{cc[0]}{cc[1]}")
        cu12 = _build_for_major(ctx, 12) or 'pip install "onnxruntime-gpu<1.27"'
        return why, f"Install a CUDA 12 build: {cu12} (with a CUDA 12 driver stack)"
    if archs and not _arch_supported(cc, archs):
        return (f"compute capability {dev.compute_capability} (sm_{cc[0]}{cc[1]}) is not among the build's "
                f"architectures: {', '.join(archs)}"), CATALOG["gpu-arch-unsupported"].fix
    return None


def _check_arch(ctx: _Ctx, target: Sequence[CudaDevice], visible: Sequence[CudaDevice]) -> list[Finding]:
    lines: list[str] = []
    fixes: list[str] = []
    bad: list[CudaDevice] = []
    for c in target:
        problem = _arch_problem(ctx, c.device) if c.device is not None else None
        if problem is None:
            continue
        why, fix = problem
        bad.append(c)
        lines.append(f"{_gpu(c)}: {why}")
        if fix and fix not in fixes:
            fixes.append(fix)
    if not bad:
        return []
    # Among GPUs of several generations, the ones this build supports are a fix of their own.
    supported = [c for c in visible if c.device is not None and _arch_problem(ctx, c.device) is None]
    others = _others_fix(bad, supported + bad) if supported else None
    if others:
        fixes.append(others)
    detail = "\n".join(lines) + (f"\n(onnxruntime-gpu {ctx.env.ort.version}.) ORT fails at run time with "
                                 "cudaErrorNoKernelImageForDevice.")
    return [make("gpu-arch-unsupported", detail, "\n".join(fixes) or None)]


def _gpu(c: CudaDevice) -> str:
    """How a finding names a GPU: the CUDA ordinal, NVML's index, the model, the UUID."""
    return describe(c)


def _check_memory(target: Sequence[CudaDevice], visible: Sequence[CudaDevice]) -> list[Finding]:
    """Free memory below LOW_MEMORY_MIB (NVML's count, before ORT creates its context and arena)."""
    def low(c: CudaDevice) -> bool:
        d = c.device
        return d is not None and not c.mig and d.memory_free_mib is not None and d.memory_total_mib is not None \
            and d.memory_free_mib < LOW_MEMORY_MIB

    bad = [c for c in target if low(c)]
    if not bad:
        return []
    lines = [f"{_gpu(c)}: {c.device.memory_free_mib} MiB free of {c.device.memory_total_mib} MiB"  # type: ignore[union-attr]
             for c in bad]
    detail = "\n".join(lines) + (f"\nA session needs a CUDA context, cuBLAS/cuDNN workspaces and an arena: below "
                                 f"{LOW_MEMORY_MIB} MiB free it can fail to start.")
    fix = CATALOG["gpu-low-memory"].fix
    others = _others_fix(bad, [c for c in visible if not low(c)] + bad)
    return [make("gpu-low-memory", detail, fix + (f"\n{others}" if others else ""))]


def _check_compute_mode(target: Sequence[CudaDevice], visible: Sequence[CudaDevice]) -> list[Finding]:
    """Compute modes that refuse a new CUDA context: Prohibited always, Exclusive-process when another
    process already has one (NVML's facts cannot tell which process; the memory in use hints)."""
    out: list[Finding] = []
    modes = _RESTRICTED_MODES
    for mode_id in ("gpu-compute-mode-prohibited", "gpu-compute-mode-exclusive"):
        bad = [c for c in target if c.device is not None and modes.get(c.device.compute_mode or "") == mode_id]
        if not bad:
            continue
        lines = []
        for c in bad:
            d = c.device
            assert d is not None
            line = f"{_gpu(c)}: compute mode {d.compute_mode}"
            if mode_id == "gpu-compute-mode-exclusive" and d.memory_total_mib is not None and d.memory_free_mib is not None:
                used = d.memory_total_mib - d.memory_free_mib
                line += f"; {used} MiB in use" + (" (another process probably holds its one context)"
                                                  if used >= LOW_MEMORY_MIB else "")
            lines.append(line)
        if mode_id == "gpu-compute-mode-prohibited":
            detail = "\n".join(lines) + "\nNo process may create a CUDA context on it"
        else:
            detail = "\n".join(lines) + "\nOnly one process at a time may hold a CUDA context on it"
        detail += ("; ORT fails with `all CUDA-capable devices are busy or unavailable` "
                   "(cudaErrorDevicesUnavailable, 46).")
        reset = " && ".join(f"sudo nvidia-smi -i {c.nvml_index} -c DEFAULT" for c in bad if c.nvml_index is not None)
        fix = f"{reset}  (as root; a cluster scheduler may set this on purpose)" if reset else CATALOG[mode_id].fix
        if mode_id == "gpu-compute-mode-exclusive":
            fix = "Run one process per GPU (one worker per device), or " + fix
        others = _others_fix(bad, [c for c in visible if c not in bad and (c.device is None or
                                   modes.get(c.device.compute_mode or "") is None)] + bad)
        out.append(make(mode_id, detail, fix + (f"\n{others}" if others else "")))
    return out


# ================================================================================================
# Libraries
# ================================================================================================
def _is_driver_lib(soname: str) -> bool:
    """libcuda belongs to the driver (reported by the driver checks), not to the CUDA wheels."""
    low = soname.lower()
    return low.startswith("libcuda.so") or low == "nvcuda.dll"


def _specs(ctx: _Ctx, plan: Plan) -> dict[str, LibSpec]:
    if plan.cuda_major is None:
        return {}
    return {s.name: s for s in ctx.matrix.libraries_for(plan.cuda_major, plan.cudnn_major)}


def _is_cudnn(lp: LibraryPlan) -> bool:
    return lp.name.lower().startswith("cudnn") or "cudnn" in lp.soname.lower()


def _lib_severity(lp: LibraryPlan) -> str:
    # Load-time dependencies stop the provider from loading at all; cuDNN itself is needed by every
    # session; the other lazily loaded libraries only by the operators that use them.
    if lp.required or lp.name.lower() == "cudnn":
        return "error"
    return "warning"


def _pip_packages(libs: Iterable[LibraryPlan], specs: dict[str, LibSpec]) -> list[str]:
    return list(dict.fromkeys(specs[lp.name].package for lp in libs
                              if lp.name in specs and specs[lp.name].package))  # type: ignore[misc]


def _is_sublib(lp: LibraryPlan) -> bool:
    """A cuDNN sub-library (dlopen'd by libcudnn itself; the set differs between cuDNN releases)."""
    return _is_cudnn(lp) and lp.name.lower() != "cudnn"


def _check_libraries(ctx: _Ctx) -> list[Finding]:
    plan = ctx.plan
    if plan is None:
        return []
    specs = _specs(ctx, plan)
    libs = [lp for lp in plan.libraries if lp.skipped is None and not _is_driver_lib(lp.soname)]
    cudnn_main = next((lp for lp in libs if lp.name.lower() == "cudnn"), None)
    # cuDNN loads its sub-libraries itself and only those of its own release: a sub-library the matrix
    # lists but this cuDNN does not ship is not a problem; with libcudnn itself missing they are
    # covered by that one line.
    libs_checked = [lp for lp in libs if not (_is_sublib(lp) and lp.chosen is None)]
    out: list[Finding] = []
    ort = ctx.env.ort
    build = f"{ort.active or 'onnxruntime-gpu'} {ort.version} (CUDA {ort.cuda_version or plan.cuda_major}"
    build += f", cuDNN {plan.cudnn_major})" if plan.cudnn_major else ")"
    preload_hint = "then `import ortdoctor.hook` (or onnxruntime.preload_dlls()) before the first session"

    # --- present only for another major (modes 3, 7, 19); also wheels of another major that the
    # build cannot use even though its own major came from somewhere else.
    for is_cudnn, fid in ((False, "cuda-major-mismatch"), (True, "cudnn-major-mismatch")):
        foreign = {lp.name: _foreign_wheel_files(ctx, lp) for lp in libs_checked} if not is_cudnn else {}
        group = [lp for lp in libs_checked if _is_cudnn(lp) == is_cudnn and (
            (lp.other_major and (lp.chosen is None or any(c.source == "nvidia-wheel" for c in lp.other_major)))
            or foreign.get(lp.name))]
        if not group:
            continue
        lines = []
        for lp in group:
            listed = {c.path for c in lp.other_major}
            others = ", ".join([_cand(c) for c in lp.other_major]
                               + [p for p in foreign.get(lp.name, []) if p not in listed])
            if lp.chosen is None:
                lines.append(f"needs {lp.soname}; found only {others}")
            else:
                lines.append(f"needs {lp.soname} (taken from {lp.chosen.path}); the other-major copies are "
                             f"unusable by this build: {others}")
        wheels = [w for w in ctx.env.nvidia_wheels if w.cuda_major is not None and w.cuda_major != ctx.cuda_major
                  and any(_same_stem(so, lp.soname) for so in w.sonames for lp in group)]
        if wheels:
            lines.append("installed for another CUDA major: " + ", ".join(
                f"{w.name} {w.version} (CUDA {w.cuda_major})" for w in wheels))
        missing_now = [lp for lp in group if lp.chosen is None]
        sev = "error" if any(_lib_severity(lp) == "error" for lp in missing_now) else "warning"
        pkgs = _pip_packages(missing_now or group, specs)
        fixes = []
        if pkgs:
            fixes.append(f"pip install {' '.join(pkgs)}  (the build's CUDA {plan.cuda_major} libraries), "
                         + preload_hint)
        have = _other_major(ctx, group)
        if have is not None and not is_cudnn and have != ctx.cuda_major:
            alt = _build_for_major(ctx, have)
            if alt:
                fixes.append(f"or keep CUDA {have} and install the onnxruntime-gpu built for it: {alt}")
        installed_from = [d.index_url for d in _ort_family(ort) if d.index_url]
        extra = f"\nonnxruntime-gpu was installed from {installed_from[0]}" if installed_from else ""
        out.append(make(fid, f"{build}:\n" + "\n".join(lines) + extra,
                        "\n".join(fixes) or None, severity=sev))  # type: ignore[arg-type]

    # --- not found at all (modes 2, 21)
    missing = [lp for lp in libs_checked if lp.chosen is None and not lp.other_major]
    if missing:
        sev = "error" if any(_lib_severity(lp) == "error" for lp in missing) else "warning"
        lines = []
        for lp in missing:
            kind = "load-time dependency of the CUDA provider" if lp.required else "loaded at run time"
            if lp is cudnn_main:
                kind += "; with its sub-libraries"
            rejected = [c for c in lp.candidates if c.rejected]
            searched = (" (refused: " + "; ".join(f"{c.path}: {c.rejected}" for c in rejected) + ")") if rejected else ""
            lines.append(f"{lp.soname} ({kind}): not found{searched}")
        pkgs = _pip_packages(missing, specs)
        extras = ctx.match.release.extras if ctx.match else {}
        whole = f'pip install "onnxruntime-gpu[cuda,cudnn]=={ort.version}"' if ort.version else DEFAULT_GPU_INSTALL
        fix = f"pip install {' '.join(pkgs)}" + (f"\nor: {whole}" if extras else "") if pkgs else whole
        fix += "\n" + preload_hint
        out.append(make("cuda-lib-missing", f"{build}:\n" + "\n".join(lines), fix, severity=sev))  # type: ignore[arg-type]

    # --- the loader on its own (no preload): finds no copy at all (modes 6, 12), or another copy
    picks = {lp.name: default_loader_copy(ctx.env, lp, ctx.os_name) for lp in libs if lp.chosen is not None}
    hidden = [lp for lp in libs if lp.chosen is not None and picks.get(lp.name) is None
              and not loader_visible(ctx.env, lp.soname, lp.chosen, ctx.os_name)]
    if hidden:
        by_dir: dict[str, list[str]] = {}
        for lp in hidden:
            assert lp.chosen is not None
            by_dir.setdefault(os.path.dirname(lp.chosen.path), []).append(lp.soname)
        dirs = list(by_dir)
        if ctx.os_name == "windows":
            env_fix = "set PATH=" + ";".join(dirs) + ";%PATH%"
        else:
            env_fix = "export LD_LIBRARY_PATH=" + ":".join(dirs) + "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        lines = [f"{d}: {', '.join(compact_sonames(names))}" for d, names in by_dir.items()]
        detail = ("Installed, but in no directory the loader searches (LD_LIBRARY_PATH, ld.so.cache, default "
                  "directories, the provider's RUNPATH), and no other copy is there either; ORT finds them only "
                  "when they are preloaded:\n" + "\n".join(lines))
        fix = ("import ortdoctor.hook  # first line of the program: preloads them by full path\n"
               f"or, before starting Python: {env_fix}")
        out.append(make("cuda-lib-not-loadable", detail, fix))
    other = [(lp, pick) for lp in libs if lp.chosen is not None and (pick := picks.get(lp.name)) is not None
             and not pick.same_as_chosen]
    if other:
        out.append(_default_loader_finding(ctx, other))

    copies = _check_copies(ctx, libs)
    loader_warning = any(f.id == "default-loader-picks-other-copy" and f.severity == "warning" for f in out)
    if loader_warning:
        # The same stale copies already raised the loader warning, which says what they break and how to
        # avoid it: listing them again as a second warning would double one problem. A cuDNN or cuBLAS
        # set split across directories is a problem of its own and keeps its severity.
        copies = [replace(f, severity="info",
                          detail=f.detail + "\nThe risk these copies carry is under default-loader-picks-other-copy.")
                  if f.id == "lib-multiple-copies" and " chosen from " not in f.detail else f
                  for f in copies]
    out += copies
    return out


def _foreign_wheel_files(ctx: _Ctx, lp: LibraryPlan) -> list[str]:
    """Files of the same component shipped by NVIDIA wheels of another CUDA major (``libcudart.so.12``
    of nvidia-cuda-runtime-cu12 beside a CUDA 13 build), which the resolver does not search."""
    out = []
    for w in ctx.env.nvidia_wheels:
        if w.cuda_major is None or w.cuda_major == ctx.cuda_major:
            continue
        for so in w.sonames:
            if _same_stem(so, lp.soname) and so != lp.soname:
                where = w.lib_dirs[0] if w.lib_dirs else w.location
                out.append(f"{os.path.join(where, so)} [{w.name} {w.version}]")
    return out


def _same_stem(a: str, b: str) -> bool:
    """``libcudart.so.12`` and ``libcudart.so.13`` name the same component."""
    return a.split(".so")[0] == b.split(".so")[0] if ".so" in a and ".so" in b else False


def _other_major(ctx: _Ctx, group: Sequence[LibraryPlan]) -> int | None:
    """The CUDA major the other-major files belong to (cuFFT's and cuRAND's own majors differ from
    CUDA's, so the resolver's reason text and cudart/cublas names are used, never those)."""
    for lp in group:
        for c in lp.other_major:
            m = re.search(r"CUDA (\d+) file", c.rejected or "")
            if m:
                return int(m.group(1))
    for w in ctx.env.nvidia_wheels:
        if w.cuda_major is not None and w.cuda_major != ctx.cuda_major and any(
                _same_stem(so, lp.soname) for so in w.sonames for lp in group):
            return w.cuda_major
    for lp in group:
        if lp.name.lower() in ("cufft", "curand"):
            continue
        for c in lp.other_major:
            m = re.search(r"\.so\.(\d+)|64_(\d+)\.dll", os.path.basename(c.path))
            if m:
                return int(m.group(1) or m.group(2))
    return None


def _cand(c: Candidate) -> str:
    return f"{c.path}" + (f" ({c.version})" if c.version else "") + f" [{c.source}]"


def _copies(lp: LibraryPlan) -> list[Candidate]:
    """The acceptable files for one soname, the chosen one first, each file once."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for c in (*((lp.chosen,) if lp.chosen else ()), *lp.candidates):
        if c.rejected is not None or c.source == "loaded":
            continue
        real = os.path.realpath(c.path)
        if real in seen:
            continue
        seen.add(real)
        out.append(c)
    return out


def _family_label(ctx: _Ctx, cudnn: bool, members: Sequence[LibraryPlan]) -> str:
    plan = ctx.plan
    if cudnn:
        major = plan.cudnn_major if plan else None
        return f"cuDNN {major or ''}".rstrip() + f" ({len(members)} file{'s' * (len(members) != 1)})"
    major = plan.cuda_major if plan else ctx.cuda_major
    return f"CUDA {major or ''}".rstrip() + f" libraries ({', '.join(lp.name for lp in members)})"


def _location_text(loc: str, files: dict[str, Candidate], members: Sequence[LibraryPlan], chosen: bool,
                   differing: list[str]) -> str:
    word = SOURCE_WORDS.get(files[next(iter(files))].source, files[next(iter(files))].source)
    versions = {c.version for c in files.values()}
    text = word
    if len(versions) == 1 and None not in versions:
        text += f" {next(iter(versions))}"
    text += f" in {loc}"
    notes = []
    if chosen:
        notes.append("chosen")
    if len(files) < len(members):
        notes.append("only " + ", ".join(compact_sonames([lp.soname for lp in members if lp.name in files])))
    if not chosen:
        if differing:
            if len(versions) != 1 or None in versions:
                notes.append("differs: " + "; ".join(differing))
        elif all(c.version for c in files.values()):
            notes.append("same version" + ("s" if len(files) > 1 else ""))
        else:
            notes.append("version unknown")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def _check_copies(ctx: _Ctx, libs: Sequence[LibraryPlan]) -> list[Finding]:
    """Modes 15 and 16: more than one copy of the same libraries (grouped by family and location, the
    chosen location first), or libraries that must match chosen from different directories (cuBLAS with
    cuBLASLt, every cuDNN piece). Differing versions or a split choice: a warning; copies that are the
    same versions: a note."""
    lines: list[str] = []
    warn = False
    sublib_split = False
    for cudnn in (False, True):
        members = [lp for lp in libs if _is_cudnn(lp) == cudnn and lp.chosen is not None and len(_copies(lp)) > 1]
        if not members:
            continue
        locs: dict[str, dict[str, Candidate]] = {}
        for lp in members:
            for c in _copies(lp):
                locs.setdefault(os.path.dirname(c.path), {})[lp.name] = c
        chosen_dirs = {os.path.dirname(lp.chosen.path) for lp in members if lp.chosen}
        order = sorted(locs, key=lambda d: d not in chosen_dirs)  # stable: search order otherwise
        by_name = {lp.name: lp for lp in members}
        parts = []
        for loc in order:
            files = locs[loc]
            differing = []
            for name, c in files.items():
                ch = by_name[name].chosen
                if ch is not None and c.version and ch.version and c.version != ch.version:
                    differing.append(f"{by_name[name].soname} {c.version} vs {ch.version}")
            warn = warn or bool(differing)
            parts.append(_location_text(loc, files, members, loc in chosen_dirs, differing))
        lines.append(f"{_family_label(ctx, cudnn, members)}: " + " · ".join(parts))
    for group_name, group in (("cuBLAS/cuBLASLt", [lp for lp in libs if lp.name.lower() in ("cublas", "cublaslt")]),
                              ("cuDNN", [lp for lp in libs if _is_cudnn(lp)])):
        dirs = {os.path.dirname(lp.chosen.path) for lp in group if lp.chosen}
        if len(dirs) > 1:
            warn = True
            if group_name == "cuDNN":
                sublib_split = True
            lines.append(f"{group_name} chosen from {len(dirs)} directories: " + "; ".join(
                f"{lp.soname} <- {lp.chosen.path}" for lp in group if lp.chosen))
    if not lines:
        return []
    if warn:
        out = [make("lib-multiple-copies", "\n".join(lines),
                    "import ortdoctor.hook (first line of the program) or `ortdoctor preload` loads the chosen set by "
                    "full path, whatever else is installed;\nto be rid of the mismatch, remove the stale copies (or "
                    "their directories from LD_LIBRARY_PATH/PATH) and keep one source: pip wheels or one toolkit")]
    else:
        out = [make("lib-multiple-copies", "\n".join(lines),
                    "Nothing to fix while one set is loaded first: `import ortdoctor.hook` (or `ortdoctor preload`) "
                    "loads the chosen one by full path. Removing the unused copy keeps it that way.",
                    severity="info")]
    if sublib_split:
        out.append(make("cudnn-sublibrary-mismatch", "\n".join(line for line in lines if line.startswith("cuDNN "
                                                                                                   "chosen"))))
    return out


# ================================================================================================
# What the dynamic loader takes on its own, and what PyTorch takes
# ================================================================================================
def _env_line(dirs: Sequence[str]) -> str:
    return "export LD_LIBRARY_PATH=" + ":".join(dirs) + "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"


def _default_loader_finding(ctx: _Ctx, other: Sequence[tuple[LibraryPlan, LoaderPick]]) -> Finding:
    """Case 1(b): the loader finds copies on its own, but not the ones ortdoctor chose."""
    shared = torch_copies(ctx.env, ctx.plan) if ctx.plan is not None else {}
    groups: dict[tuple[str, str, str], list[tuple[LibraryPlan, LoaderPick]]] = {}
    for lp, p in other:
        assert lp.chosen is not None
        groups.setdefault((os.path.dirname(p.path), p.via, os.path.dirname(lp.chosen.path)), []).append((lp, p))
    lines = ["Without a preload, the dynamic loader maps other copies than the ones ortdoctor chose:"]
    differ = False
    for (pdir, via, cdir), members in groups.items():
        names = ", ".join(compact_sonames([lp.soname for lp, _ in members]))
        word = SOURCE_WORDS.get(members[0][1].source, members[0][1].source)
        pairs = list(dict.fromkeys((p.version, lp.chosen.version) for lp, p in members if lp.chosen))
        if all(a and b and a == b for a, b in pairs):
            versions = "the same version" + ("s" if len(members) > 1 else "") + " as the chosen"
        else:
            differ = True
            diffs = [(a, b) for a, b in pairs if not (a and b and a == b)]
            if len(diffs) == 1:
                versions = f"{diffs[0][0] or 'version unknown'} instead of the chosen {diffs[0][1] or 'version unknown'}"
            else:
                versions = "; ".join(f"{lp.soname} {p.version or '?'} instead of {lp.chosen.version or '?'}"
                                     for lp, p in members if lp.chosen and p.version != lp.chosen.version
                                     and not _is_sublib(lp))
        lines.append(f"{names}: the loader takes {word} {pdir} ({via}), {versions}; ortdoctor chose {cdir}")
    chosen_libs = [lp for lp, _ in other if lp.chosen is not None]
    sources = list(dict.fromkeys(SOURCE_WORDS.get(lp.chosen.source, lp.chosen.source)
                                 for lp in chosen_libs if lp.chosen))
    why = f"ortdoctor chose one coherent set ({', '.join(sources)}: every library of a family from one place)"
    torch_same = [lp for lp in chosen_libs if lp.name in shared and lp.chosen
                  and same_file(shared[lp.name].path, lp.chosen.path)]
    t = ctx.env.torch
    if torch_same and t is not None:
        why += f", the same files PyTorch {t.version} loads"
    lines.append(why + ".")
    if torch_same and t is not None:
        example = next((f": {lp.soname} {p.version} instead of {lp.chosen.version}" for lp, p in other
                        if lp in torch_same and lp.chosen and p.version and lp.chosen.version
                        and p.version != lp.chosen.version), "")
        lines.append("A process holds one library per soname: if onnxruntime loads first without a preload, a "
                     f"later `import torch` runs torch on the loader's copies instead of its own{example} (and if "
                     "torch comes first, onnxruntime reuses torch's).")
    dirs = list(dict.fromkeys(os.path.dirname(lp.chosen.path) for lp in chosen_libs if lp.chosen))
    fix = ("import ortdoctor.hook  # first line of the program: loads the chosen set by full path\n"
           "or `ortdoctor preload` (the same choice; --print-env prints it as a shell line)\n"
           f"or, before starting Python: {_env_line(dirs)}")
    if torch_same:
        fix += "\nor import torch before onnxruntime: both then use torch's copies"
    return make("default-loader-picks-other-copy", "\n".join(lines), fix,
                severity="warning" if differ or torch_same else "info")


def _check_torch_copies(ctx: _Ctx) -> list[Finding]:
    """Which copy torch maps for the libraries it shares with the build, against ortdoctor's choice."""
    plan = ctx.plan
    t = ctx.env.torch
    if plan is None or t is None:
        return []
    shared = torch_copies(ctx.env, plan)
    libs = [lp for lp in plan.libraries if lp.skipped is None and lp.chosen is not None and lp.name in shared
            and not _is_sublib(lp)]
    if not libs:
        return []
    differ = [lp for lp in libs if lp.chosen and not same_file(lp.chosen.path, shared[lp.name].path)]
    what = "ortdoctor's choice (what `import ortdoctor.hook` and `ortdoctor preload` load"
    what += f", --directory {plan.directory!r})" if plan.directory is not None else ")"
    if not differ:
        dirs = list(dict.fromkeys(os.path.dirname(lp.chosen.path) for lp in libs if lp.chosen))
        return [make("torch-shares-libraries",
                     f"{what} is the set PyTorch {t.version} loads ({', '.join(dirs)}): importing torch before "
                     "or after onnxruntime reuses the same files.")]
    return [torch_other_copy_finding(t.version, [(lp.soname, lp.chosen, shared[lp.name]) for lp in differ
                                                 if lp.chosen], what, plan.directory)]


# ================================================================================================
# Neighbours: torch, siblings, TensorRT
# ================================================================================================
def _check_torch(ctx: _Ctx) -> list[Finding]:
    torch = ctx.env.torch
    if torch is None or not torch.cuda:
        return []
    ort = ctx.env.ort
    reasons = []
    t_major = _major(torch.cuda)
    if t_major is not None and ctx.cuda_major is not None and t_major != ctx.cuda_major:
        reasons.append(f"CUDA {torch.cuda} vs onnxruntime's CUDA {ort.cuda_version or ctx.cuda_major}")
    o_cudnn = (ctx.plan.cudnn_major if ctx.plan else None) or ort.cudnn_major
    t_cudnn = _major(torch.cudnn)
    if t_cudnn is not None and o_cudnn is not None and t_cudnn != o_cudnn:
        reasons.append(f"cuDNN {torch.cudnn} vs onnxruntime's cuDNN {o_cudnn}")
    if not reasons:
        return []
    detail = (f"torch {torch.version} ({torch.lib_dir or torch.location}) and {ort.active or 'onnxruntime-gpu'} "
              f"{ort.version}: " + "; ".join(reasons) + ". In one process whichever loads first decides.")
    fixes = []
    torch_cmd = _torch_for_major(ctx, ctx.cuda_major)
    if torch_cmd:
        fixes.append(f"Move torch to onnxruntime's CUDA: {torch_cmd}")
    if t_major is not None and t_major != ctx.cuda_major:
        alt = _build_for_major(ctx, t_major)
        if alt:
            fixes.append(f"or move onnxruntime to torch's CUDA {t_major}: {alt}")
    return [make("torch-cuda-mismatch", detail, "\n".join(fixes) or None)]


def _torch_for_major(ctx: _Ctx, major: int | None) -> str | None:
    if major is None:
        return None
    for rel in ctx.matrix.torch:  # newest first
        for v in rel.variants:
            if v.cuda != "cpu" and _major(v.cuda) == major:
                if v.index_url:
                    return f"pip install --force-reinstall torch=={rel.version}.* --index-url {v.index_url}"
                return f"pip install --force-reinstall torch=={rel.version}.*"
    return None


def _needed_majors(info: Any) -> dict[str, int]:
    needed = info.needed if isinstance(info, ElfInfo) else getattr(info, "imports", ())
    out: dict[str, int] = {}
    for n in needed:
        m = _CUDA_SONAME.match(n)
        if m and (m.group(1) or m.group(3)) != "cudnn":
            out[n] = int(m.group(2) or m.group(4))
    return out


def _check_siblings(ctx: _Ctx) -> list[Finding]:
    if ctx.cuda_major is None:
        return []
    lines = []
    for lib in ctx.env.ort.other_cuda_libraries:
        majors = _needed_majors(lib)
        other = {n: m for n, m in majors.items() if m != ctx.cuda_major and not n.lower().startswith("libcufft")
                 and not n.lower().startswith("libcurand")}
        if other:
            lines.append(f"{lib.path} needs {', '.join(other)} (CUDA {sorted(set(other.values()))[0]})")
    if not lines:
        return []
    return [make("sibling-cuda-major-mismatch",
                 f"onnxruntime is built for CUDA {ctx.cuda_major}, but:\n" + "\n".join(lines))]


def _check_tensorrt(ctx: _Ctx) -> list[Finding]:
    trt = ctx.env.ort.tensorrt_provider
    if not isinstance(trt, ElfInfo):
        return []
    nvinfer = [n for n in trt.needed if n.startswith(("libnvinfer.so", "libnvonnxparser.so"))]
    if not nvinfer:
        return []
    # TensorRT comes from the ld.so.cache (apt), a tarball on LD_LIBRARY_PATH, or pip wheels; the
    # probes list the cache and the wheels' sonames, which is what a quick look can tell.
    wheel_sonames = {s for w in ctx.env.nvidia_wheels for s in w.sonames}
    missing = [n for n in nvinfer if not ctx.env.system.ldconfig.get(n) and n not in wheel_sonames]
    if not missing:
        return []
    major = re.search(r"\.so\.(\d+)", missing[0])
    trt_major = major.group(1) if major else "?"
    return [make("tensorrt-unavailable",
                 f"{trt.path} needs {', '.join(missing)} (TensorRT {trt_major}), which is not installed; "
                 "only matters if TensorrtExecutionProvider is requested.",
                 "Request providers=['CUDAExecutionProvider', 'CPUExecutionProvider'] explicitly, or install "
                 f"TensorRT {trt_major} for CUDA {ctx.cuda_major} (pip install tensorrt-cu{ctx.cuda_major}) "
                 "and put its lib directory on LD_LIBRARY_PATH")]


# ================================================================================================
# The search path, stubs, the program
# ================================================================================================
def _check_search_path(ctx: _Ctx) -> list[Finding]:
    sys_ = ctx.env.system
    entries = sys_.windows_path if ctx.os_name == "windows" else sys_.ld_library_path
    var = "PATH" if ctx.os_name == "windows" else "LD_LIBRARY_PATH"
    lines = []
    for d in entries:
        why = []
        if d.path == "" or (d.note and "empty" in d.note):
            why.append("empty entry: the loader searches the current directory")
        elif d.relative:
            why.append("relative: resolved against whatever the current directory is")
        if d.world_writable:
            why.append("world-writable: any user can plant a library here")
        if d.foreign_owner:
            why.append("owned by another user")
        if why:
            lines.append(f"{d.path or '(empty)'}: " + "; ".join(why))
    if not lines:
        return []
    # The resolver refuses these directories for ortdoctor's own preloads; the process the user starts
    # still searches them, so the fix is to remove them.
    return [make("ld-library-path-unsafe", f"{var} entries:\n" + "\n".join(lines),
                 f"Remove these entries from {var} (and from the shell start-up file that adds them); "
                 f"never end {var} with ':' or use '::'")]


def _check_nvidia_stubs(ctx: _Ctx) -> list[Finding]:
    stubs = [w for w in ctx.env.nvidia_wheels if w.version.startswith("0.0.") and not w.sonames]
    if not stubs:
        return []
    names = " ".join(w.name for w in stubs)
    real = " ".join(w.name.removesuffix("-cu13") for w in stubs if "cudnn" not in w.name)
    return [make("nvidia-wheel-stub",
                 "Deprecated stub distributions without libraries: " + ", ".join(f"{w.name} {w.version}" for w in stubs),
                 f"pip uninstall -y {names}" + (f" && pip install {real}" if real else ""))]


def _check_multiprocessing(ctx: _Ctx) -> list[Finding]:
    method = ctx.env.python.multiprocessing_start_method
    if method != "fork":
        return []
    return [make("multiprocessing-fork",
                 "This Python's default multiprocessing start method is 'fork': a worker forked after the "
                 "parent created a CUDA session (or torch used the GPU) fails with CUDA failure 3.")]


# ================================================================================================
# Merging
# ================================================================================================
def _merge_plan_findings(found: list[Finding], plan: Plan | None) -> list[Finding]:
    """The resolver's own findings, unless the diagnosis already says the same (same id)."""
    if plan is None:
        return found
    have = {f.id for f in found}
    return found + [f for f in plan.findings if f.id not in have and _SUPERSEDED.get(f.id) not in have]


def _smoke_evidence(smoke: Any) -> str:
    ev = getattr(smoke, "evidence", None)
    if isinstance(ev, str):
        text = ev
    elif isinstance(ev, Sequence):
        text = "\n".join(str(x) for x in ev)
    else:
        text = ""
    return text or (getattr(smoke, "error", None) or "")


def _merge_smoke(found: list[Finding], smoke: Any) -> list[Finding]:
    """A failed smoke run confirms the findings its classified causes name (ORT's own line appended as
    evidence) or adds them; then its own verdict (fell back / failed) is added with ORT's error."""
    if smoke is None or getattr(smoke, "ok", False):
        return found
    if not getattr(smoke, "ran", False) and getattr(smoke, "finding_id", None) is None:
        return found  # skipped on purpose (--no-smoke, no CUDA build): nothing to report
    confirm = "Confirmed by the smoke session (a real CUDA session in a child process); ORT said:\n"
    cause_ids: list[str] = []
    mode_ids = [f.id for f in found if f.id in _RESTRICTED_MODES.values()]
    for cause in getattr(smoke, "causes", ()) or ():
        cid = getattr(cause, "finding_id", None)
        if mode_ids and _is_busy(cause):
            cid = mode_ids[0]  # the GPU refuses contexts because of its compute mode, not for lack of GPUs
        if not cid or getattr(cause, "consequence", False) or cid in cause_ids:
            continue
        cause_ids.append(cid)
        evidence = _clip(getattr(cause, "evidence", "") or "", 600)
        hit = next((i for i, f in enumerate(found) if f.id == cid), None)
        if hit is not None:
            found[hit] = replace(found[hit], detail=f"{found[hit].detail}\n{confirm}{evidence}")
        elif cid in CATALOG:
            what = getattr(cause, "what", "") or CATALOG[cid].title
            found.append(make(cid, f"{what}\nThe smoke session's ORT log:\n{evidence}",
                              getattr(cause, "fix", None) or None))
    fid = getattr(smoke, "finding_id", None) or "smoke-failed"
    if fid not in CATALOG:
        fid = "smoke-failed"
    if any(f.id == fid for f in found):
        return found
    providers = getattr(smoke, "providers", None)
    detail = "The smoke session (MatMul+Add+Relu on the CUDA EP, CPU fallback disabled, in a child process)"
    detail += f" ran on {list(providers)}" if providers else " did not run on the CUDA EP"
    status = getattr(smoke, "exit_status", None)
    if status and status != "0":
        detail += f" (child exit: {status})"
    error = getattr(smoke, "error", None)
    detail += (":\n" + _clip(error)) if error else "."
    if cause_ids:
        detail += "\nCause: " + ", ".join(cause_ids) + " (above)."
    elif not error:
        evidence = _smoke_evidence(smoke)
        if evidence:
            detail += "\n" + _clip(evidence)
    fix = f"Fix {', '.join(cause_ids)} first (above)." if cause_ids else None
    return [*found, make(fid, detail, fix)]


def _smoke_signature(smoke: Any) -> tuple[str | None, tuple[str, ...]]:
    return getattr(smoke, "finding_id", None), tuple(getattr(smoke, "cause_ids", ()) or ())


def _merge_device_smokes(found: list[Finding], ctx: _Ctx, smoke: Any, device_smokes: Sequence[Any]) -> list[Finding]:
    """``check --all-devices``: a device whose smoke session failed like the main one's is named in that
    finding; one that failed differently (or while the main one passed) gets a finding of its own."""
    if not device_smokes:
        return found
    failed = [ds for ds in device_smokes if ds.smoke is not None and ds.smoke is not smoke
              and getattr(ds.smoke, "ran", False) and not getattr(ds.smoke, "ok", False)]
    if not failed:
        return found
    usable = [ds.cuda for ds in device_smokes if ds.cuda is not None and getattr(ds.smoke, "ok", False)]
    main_failed = smoke is not None and getattr(smoke, "ran", False) and not getattr(smoke, "ok", False)
    main_sig = _smoke_signature(smoke) if main_failed else None
    same = [ds for ds in failed if main_sig is not None and _smoke_signature(ds.smoke) == main_sig]
    if same:
        fid = main_sig[0] if main_sig and main_sig[0] in CATALOG else "smoke-failed"
        hit = next((i for i, f in enumerate(found) if f.id == fid), None)
        names = "; ".join(_device_name(ds) for ds in same)
        if hit is not None:
            found[hit] = replace(found[hit], detail=f"{found[hit].detail}\nThe same failure on: {names}.")
    for ds in failed:
        if ds in same:
            continue
        sm = ds.smoke
        fid = getattr(sm, "finding_id", None) or "smoke-failed"
        if fid not in CATALOG:
            fid = "smoke-failed"
        where = _device_name(ds)
        providers = getattr(sm, "providers", None)
        detail = f"On {where} the smoke session "
        detail += f"ran on {list(providers)}" if providers else "did not run on the CUDA EP"
        error = getattr(sm, "error", None)
        detail += (":\n" + _clip(error, 800)) if error else "."
        fixes: list[str] = []
        mode_id = _mode_finding(ds.cuda)
        for cause in getattr(sm, "causes", ()) or ():
            if getattr(cause, "consequence", False):
                continue
            if mode_id and _is_busy(cause):
                detail += (f"\nCause ({mode_id}): the GPU's compute mode refuses a new context "
                           "(CUDA error 46, cudaErrorDevicesUnavailable).")
                continue
            detail += f"\nCause ({cause.finding_id}): {getattr(cause, 'what', '')}"
            fix = getattr(cause, "fix", None)
            if fix and fix not in fixes:
                fixes.append(fix)
        if mode_id and ds.cuda is not None and ds.cuda.nvml_index is not None:
            fixes.insert(0, f"sudo nvidia-smi -i {ds.cuda.nvml_index} -c DEFAULT  (see {mode_id})")
        good = [c for c in usable if c is not ds.cuda]
        if good:
            ords = ", ".join(str(c.ordinal) for c in good)
            fixes.append(f"The smoke session passed on CUDA device(s) {ords}: --device-id {good[0].ordinal}, or "
                         f"export CUDA_VISIBLE_DEVICES={_visible_ids(good)} to keep a server off this GPU")
        found.append(make(fid, detail, "\n".join(fixes) or None,
                          title=f"the smoke session failed on CUDA device {ds.ordinal}"
                          if fid == "smoke-failed" else f"the smoke session on CUDA device {ds.ordinal} did "
                          "not run on the CUDA execution provider"))
    return found


def _mode_finding(c: CudaDevice | None) -> str | None:
    """The compute-mode finding id of a GPU that refuses new contexts (None for the default mode)."""
    if c is None or c.device is None:
        return None
    return _RESTRICTED_MODES.get(c.device.compute_mode or "")


def _is_busy(cause: Any) -> bool:
    """CUDA error 46 (cudaErrorDevicesUnavailable): what a GPU in a restricted compute mode answers.
    The classifier files it with no-gpu-visible; on a GPU NVML shows in such a mode the mode is the cause."""
    text = f"{getattr(cause, 'evidence', '')} {getattr(cause, 'details', {}).get('cuda_error', '')}"
    return getattr(cause, "finding_id", None) == "no-gpu-visible" and (
        "busy or unavailable" in text or "DevicesUnavailable" in text or " 46" in f" {text}")


def _device_name(ds: Any) -> str:
    return describe(ds.cuda) if ds.cuda is not None else f"CUDA device {ds.ordinal} (not visible)"


def _clip(text: str, limit: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


# ================================================================================================
# Small helpers
# ================================================================================================
def _major(version: str | None) -> int | None:
    if not version:
        return None
    m = re.match(r"\s*(\d+)", version)
    return int(m.group(1)) if m else None


def _vtuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
