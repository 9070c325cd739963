"""Rules about the NVIDIA driver and the GPUs: present, new enough, visible, supported, free, usable."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ortdoctor.core.catalog import CATALOG, make
from ortdoctor.core.driver_libraries import LIBCUDA, LIBNVML, NVML_DLL
from ortdoctor.core.facts import (
    Device,
    DriverError,
    Finding,
    PackageStep,
    Severity,
)
from ortdoctor.core.package_names import ORT_GPU
from ortdoctor.decide.devices import CudaDevice, DeviceMap, describe, map_devices
from ortdoctor.decide.fixes import gpu_install, step
from ortdoctor.decide.names import major_of
from ortdoctor.diagnose.context import (
    DATACENTER_HINTS,
    FEED_PREREQS,
    LOW_MEMORY_MIB,
    RESTRICTED_MODES,
    Ctx,
    vtuple,
)
from ortdoctor.diagnose.platforms import jetson_summary

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def visible_devices(driver: Any, *, device_order: str | None = None) -> tuple[list[Device], str | None]:
    """The NVML devices CUDA will enumerate after CUDA_VISIBLE_DEVICES, in CUDA's order, and why some
    are hidden (see :func:`ortdoctor.decide.devices.map_devices` for CUDA's rules; a MIG instance that NVML's
    list cannot tie to a GPU is left out here and kept in the map)."""
    dmap = map_devices(driver, device_order=device_order)
    return [c.device for c in dmap.devices if c.device is not None], dmap.visibility_note


def driver_absent(env: Any) -> bool:
    """No NVIDIA driver is usable here: the cases :func:`check_driver` reports as ``driver-missing`` (no
    driver library, or its kernel module not loaded). Anything the smoke session then does on the GPU
    fails because of it, however the build happens to fail."""
    drv = env.driver
    if drv.available:
        return False
    if drv.error_kind in (DriverError.LIB_RM_VERSION_MISMATCH, DriverError.NO_PERMISSION, DriverError.GPU_IS_LOST,
                          DriverError.OTHER):
        return False
    if getattr(env, "jetson", None) is not None:
        return False  # a Jetson's integrated GPU has no NVML, and that is no missing driver
    return not (env.python.wsl and not any(p.startswith("/usr/lib/wsl/") for p in drv.libcuda))


def check_driver(ctx: Ctx) -> list[Finding]:
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
        if env.jetson is not None:
            return [_jetson_gpu(ctx)]
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
            lib = NVML_DLL if ctx.os_name == "windows" else LIBNVML
            detail = f"NVML could not be loaded ({drv.error or lib + ' not found'})"
            detail += "; libcuda.so.1 " + ("found at " + ", ".join(drv.libcuda) if drv.libcuda else "not found")
            detail += "; /dev/nvidia*: " + (", ".join(drv.dev_nodes) if drv.dev_nodes else "none") + "."
            fix = _driver_install_fix(ctx, py.container)
        if not ctx.gpu_build:
            detail += "\nWithout a driver no CUDA build can run here; a CPU build will."
        return [make("driver-missing", detail + hints, fix)]

    out: list[Finding] = []
    if ctx.os_name == "linux" and not drv.libcuda and not py.wsl:
        out.append(_libcuda_missing(ctx))
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


def _libcuda_missing(ctx: Ctx) -> Finding:
    """NVML answers (nvidia-smi works) but the CUDA driver library is not there: a container started with
    NVIDIA_DRIVER_CAPABILITIES=utility gets NVML and no compute; every CUDA session fails."""
    drv = ctx.env.driver
    caps = (ctx.env.python.container and "NVIDIA_DRIVER_CAPABILITIES") or ""
    detail = (f"NVML works (driver {drv.version}, {len(drv.devices)} GPU(s)), but libcuda.so.1 is in no "
              "directory the loader searches: CUDA cannot create a context, and onnxruntime falls back to the "
              "CPU (`libcuda.so.1: cannot open shared object file`).")
    if ctx.env.python.container:
        fix = ("Start the container with the compute capability: docker run --gpus all -e "
               "NVIDIA_DRIVER_CAPABILITIES=compute,utility ... (Kubernetes: the same variable in the pod's env)")
    else:
        fix = ("Install the driver's CUDA library (on Debian/Ubuntu: the libnvidia-compute package of the installed "
               f"driver branch {(drv.version or '').split('.')[0]}), or add its directory to the loader's path")
    return make("libcuda-missing", detail + (f" ({caps} decides what a container gets.)" if caps else ""), fix)


def _invalid_ordinal(ctx: Ctx, dmap: DeviceMap) -> Finding:
    """A device_id CUDA does not have here: what is visible, and the id or variable that gets the GPU meant."""
    drv = ctx.env.driver
    visible = dmap.devices
    n = len(visible)
    cvd = f" (CUDA_VISIBLE_DEVICES={drv.cuda_visible_devices!r})" if drv.cuda_visible_devices is not None else ""
    detail = (f"device_id {ctx.device_id} requested, but {n} GPU(s) are visible{cvd}; CUDA numbers them from 0: "
              f"{dmap.listing()}.")
    if dmap.visibility_note:
        detail += f"\n{dmap.visibility_note}."
    detail += ("\nORT fails with `Invalid device ID: N, must be between 0 (inclusive) and M (exclusive)` "
               "(older releases: `CUDA failure 101: invalid device ordinal`).")
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


def visible_ids(devices: Sequence[CudaDevice]) -> str:
    """A CUDA_VISIBLE_DEVICES value naming exactly these GPUs (UUIDs: they survive renumbering)."""
    return ",".join(c.uuid or str(c.nvml_index) for c in devices)


def _others_fix(bad: Sequence[CudaDevice], visible: Sequence[CudaDevice]) -> str | None:
    good = [c for c in visible if c not in bad and c.device is not None]
    if not good or len(visible) < 2:
        return None
    ords = ", ".join(str(c.ordinal) for c in good)
    return (f"or use only the GPUs without this problem (CUDA devices {ords}): --device-id {good[0].ordinal}, "
            f"or for a server using every GPU: export CUDA_VISIBLE_DEVICES={visible_ids(good)}")
def _environment_hints(ctx: Ctx) -> str:
    py = ctx.env.python
    parts = []
    if py.container:
        parts.append("container: " + ", ".join(py.container))
    if py.wsl:
        parts.append("WSL2")
    return ("\nEnvironment: " + "; ".join(parts)) if parts else ""


def _driver_install_fix(ctx: Ctx, container: Sequence[str]) -> str:
    minimum = _min_driver(ctx)
    branch = minimum.split(".")[0] if minimum else "580"
    cuda = ctx.env.ort.cuda_version
    need = f" {minimum} or newer (CUDA {cuda} needs it)" if minimum and cuda else ""
    if "KUBERNETES_SERVICE_HOST" in container or "cgroup:kubepods" in container:
        # a pod gets its GPU from the node's device plugin, not from `docker run`
        return (f"This is a Kubernetes pod: install the NVIDIA driver{need} on the node with the NVIDIA device "
                "plugin (or the GPU Operator), request the GPU in the pod (resources.limits nvidia.com/gpu: 1) "
                "and set runtimeClassName: nvidia where the container toolkit registered that runtime class")
    if container:
        return (f"This is a container: install the NVIDIA driver{need} on the host, and the NVIDIA Container "
                "Toolkit, then start the container with `docker run --gpus all`")
    if ctx.os_name == "windows":
        return f"Install the NVIDIA driver{need} from https://www.nvidia.com/Download/index.aspx"
    return (f"Install the NVIDIA driver{need}: sudo apt-get install nvidia-driver-{branch} on Ubuntu/Debian "
            "(or NVIDIA's .run installer), then reboot. On a machine without an NVIDIA GPU, CUDA cannot run.")


def _min_driver(ctx: Ctx) -> str | None:
    cuda = ctx.env.ort.cuda_version or (ctx.match.release.cuda if ctx.match else None)
    if not cuda or not ctx.gpu_build:
        return None
    return ctx.matrix.min_driver(cuda, "windows" if ctx.os_name == "windows" else "linux")


def _check_driver_version(ctx: Ctx) -> list[Finding]:
    if not ctx.gpu_build:
        return []
    drv = ctx.env.driver
    build_cuda = ctx.env.ort.cuda_version or (ctx.match.release.cuda if ctx.match else None)
    if not build_cuda:
        return []
    minimum = _min_driver(ctx)
    reasons = []
    drv_major = major_of(drv.cuda_version)
    if drv_major is not None and ctx.cuda_major is not None and drv_major < ctx.cuda_major:
        reasons.append(f"the driver supports CUDA up to {drv.cuda_version}")
    if minimum and drv.version and vtuple(drv.version) < vtuple(minimum):
        reasons.append(f"CUDA {build_cuda} needs driver >= {minimum}")
    if not reasons:
        return []
    detail = (f"Driver {drv.version or '?'} (CUDA {drv.cuda_version or '?'}); {ctx.env.ort.active or 'onnxruntime-gpu'} "
              f"{ctx.env.ort.version} is built for CUDA {build_cuda}: " + "; ".join(reasons) + ".")
    branch = minimum.split(".")[0] if minimum else "580"
    upgrade = (f"Upgrade the driver to >= {minimum or branch}: "
               + ("NVIDIA's installer (https://www.nvidia.com/Download/index.aspx)" if ctx.os_name == "windows"
                  else f"sudo apt-get install nvidia-driver-{branch}, then reboot"))
    alt = build_for_major(ctx, drv_major) if drv_major is not None else ()
    fix = upgrade + (f"\nor keep this driver and install a build for CUDA {drv_major}: {ctx.run(*alt)}" if alt else "")
    return [make("driver-too-old", detail, fix)]


def _jetson_gpu(ctx: Ctx) -> Finding:
    """A Jetson, where NVML is absent by design: what is known of its GPU instead of "no driver"."""
    drv = ctx.env.driver
    cuda = ctx.env.system.ldconfig.get("libcuda.so.1", ())
    found = tuple(dict.fromkeys((*drv.libcuda, *cuda)))
    detail = (f"This is {jetson_summary(ctx)}. NVML is not part of Jetson Linux ({drv.error or 'not loadable'}), "
              "so no driver version or GPU list is read; libcuda.so.1 "
              + ("found at " + ", ".join(found) if found else "not found") + ".")
    if found:
        return make("jetson-integrated-gpu", detail, "")
    return make("jetson-integrated-gpu", detail, severity="warning")


def build_for_major(ctx: Ctx, major: int) -> tuple[PackageStep, ...]:
    """The steps that install an onnxruntime-gpu built for CUDA ``major``: the same version from the feed
    that has it for that major, else the matrix's recommendation; () when none exists."""
    ort = ctx.env.ort
    if ctx.match is not None and ort.version:
        for feed in ctx.match.release.feeds:
            if major_of(feed.cuda) == major:
                if feed.index_url is None:
                    return (gpu_install(ctx.matrix, ort.version),)
                return (step("uninstall", "-y", ORT_GPU), step("install", *FEED_PREREQS),
                        step("install", "--no-cache-dir", f"onnxruntime-gpu=={ort.version}", "--index-url",
                             feed.index_url))
    rec = ctx.matrix.recommend(str(major), None, platform=ctx.wheel_platform, glibc=ctx.glibc)
    if rec is None or not rec.steps:
        return ()
    return (step("uninstall", "-y", ORT_GPU), *rec.steps)


def _check_compat_libs(ctx: Ctx) -> list[Finding]:
    """Mode 22: cuda-compat (forward-compatibility) libcuda on the path."""
    env = ctx.env
    paths = list(env.driver.libcuda) + list(env.system.ldconfig.get(LIBCUDA, ()))
    paths += [d.path for d in env.system.ld_library_path if re.search(r"/compat/?$", d.path)]
    compat = sorted({p for p in paths if "/compat" in p})
    if not compat:
        return []
    names = [d.name for d in env.driver.devices]
    consumer = [n for n in names if not any(h in n for h in DATACENTER_HINTS)]
    severity: Severity = "error" if consumer else "warning"
    detail = (f"Forward-compatibility libcuda on the library path: {', '.join(compat)}; GPUs: "
              f"{', '.join(names) or 'none'}.")
    if consumer:
        detail += " Forward compatibility works only on data-centre GPUs; these are not: " + ", ".join(consumer)
    return [make("cuda-compat-on-unsupported-hw", detail, severity=severity)]


def _check_arch(ctx: Ctx, target: Sequence[CudaDevice], visible: Sequence[CudaDevice]) -> list[Finding]:
    """Kernels for each GPU: :func:`ortdoctor.diagnose.kernels.check_kernels` (``gpu-arch-unsupported``,
    ``gpu-arch-ptx-jit``). Only a host with GPUs gets here: a GPU-less check does not import the module."""
    from ortdoctor.diagnose.kernels import check_kernels

    def cuda12_build() -> str | None:
        steps = build_for_major(ctx, 12)
        return ctx.run(*steps) if steps else None

    return check_kernels(ctx, target, visible, others_fix=_others_fix, cuda12_build=cuda12_build)


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
    modes = RESTRICTED_MODES
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
