"""Rules about TensorRT and the plugin execution providers.

TensorRT: is the major the TensorRT EP links installed, built for the build's CUDA major, complete
(the ONNX parser, the builder resource), where the loader looks, not older than the build? Plugin EPs:
are their bundled libraries of the build's CUDA major, and do they bring a second copy of a library of
the chosen CUDA set? And is the CUDA EP itself a plugin build? Every fix pins what exists on PyPI.
"""

from __future__ import annotations

import os
import re

from ortdoctor.core.catalog import make
from ortdoctor.core.ep_names import TENSORRT_EP
from ortdoctor.core.execution_providers import smoke_provider
from ortdoctor.core.facts import (
    ElfInfo,
    Finding,
    PackageStep,
    PeInfo,
    PluginEpPackage,
    Severity,
    TensorrtInstall,
)
from ortdoctor.core.patterns import lazy
from ortdoctor.core.shell import Command, compose
from ortdoctor.decide.fixes import pin_series, step
from ortdoctor.decide.tensorrt import TensorrtPlan, plan_tensorrt, refused_needed, tensorrt_fix
from ortdoctor.diagnose.context import Ctx, cuda_soname, search_path_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:
    from ortdoctor.prove.smoke.runner import SmokeResult

__all__ = ["TENSORRT_EP", "check_cuda_plugin_ep", "check_plugin_devices", "check_plugin_eps", "check_tensorrt"]

_VERSION_RE = lazy(r"^(\d+)\.(\d+)")


def _requested(smoke: SmokeResult | None) -> bool:
    row = smoke_provider(smoke)
    return row is not None and "tensorrt" in row.families


def _where(install: TensorrtInstall) -> str:
    what = install.distribution or install.origin
    version = f" {install.version}" if install.version else ""
    names = ", ".join(lib.soname for lib in install.libraries)
    return f"{what}{version} in {install.directory} ({names})"


def _trt_names(plan: TensorrtPlan) -> str:
    return " and ".join(plan.need.sonames) or f"libnvinfer.so.{plan.need.major}"


def check_tensorrt(ctx: Ctx, smoke: SmokeResult | None = None) -> list[Finding]:
    """The TensorRT the installed TensorRT EP needs, against what is installed."""
    plan = plan_tensorrt(ctx.env, ctx.matrix, ctx.match, ctx.cuda_major)
    if plan is None or plan.need.major is None or ctx.os_name != "linux":
        return []
    requested = _requested(smoke)
    need = plan.need
    build = f"{ctx.env.ort.active or 'onnxruntime-gpu'} {ctx.env.ort.version}"
    head = f"{build}'s TensorRT EP ({need.provider}) links {_trt_names(plan)} (TensorRT {need.major})"
    chosen = plan.chosen
    if chosen is None:
        if plan.other_major:
            majors = sorted({i.major for i in plan.other_major})
            installed = [(d.name, d.version) for d in ctx.env.tensorrt.distributions
                         if d.version.split(".")[0] != str(need.major)]
            found = "\n".join(_where(i) for i in plan.other_major)
            detail = (f"{head}; installed is TensorRT {', '.join(map(str, majors))}:\n{found}\n"
                      f"The loader never takes one major for another: TensorrtExecutionProvider fails with "
                      f"`libnvinfer.so.{need.major}: cannot open shared object file`.")
            fix, steps = tensorrt_fix(plan, ctx.installer, installed)
            return [make("tensorrt-major-mismatch", detail, fix, steps=steps,
                         severity="error" if requested else None,
                         title=f"TensorRT {', '.join(map(str, majors))} is installed; the TensorRT EP needs "
                               f"TensorRT {need.major}")]
        install, steps = tensorrt_fix(plan, ctx.installer)
        refused = refused_needed(plan)
        if refused is not None:
            # found, but where the gate never loads from: say where and why, as `preload --tensorrt` does
            title, where, dirs = refused
            chmods = tuple(Command(("chmod", "o-w", d)) for d in dirs)
            # the directory made safe is the fix; the other ways out follow as prose (comments when pasted)
            prose = (("or, if you trust it, pass --allow-unsafe-dirs\nor " if chmods else "")
                     + "request providers=['CUDAExecutionProvider', 'CPUExecutionProvider'] explicitly, or install "
                     "it where only you or root can write:\n" + install)
            fix = compose(chmods, prose, windows=ctx.os_name == "windows")
            return [make("tensorrt-unavailable", f"{head}; {where} Only matters if TensorrtExecutionProvider is "
                         "requested.", fix, steps=() if chmods else steps, commands=chmods,
                         severity="error" if requested else None, title=title)]
        detail = (f"{head}, which is not installed (no pip tensorrt_libs, nothing on LD_LIBRARY_PATH or in the "
                  "ld.so cache); only matters if TensorrtExecutionProvider is requested.")
        fix = "Request providers=['CUDAExecutionProvider', 'CPUExecutionProvider'] explicitly, or install it:\n" + install
        return [make("tensorrt-unavailable", detail, fix, steps=steps, severity="error" if requested else None)]
    out: list[Finding] = []
    if chosen in plan.other_cuda:
        fix, steps = tensorrt_fix(plan, ctx.installer, [(d.name, d.version) for d in ctx.env.tensorrt.distributions
                                                        if f"-cu{chosen.cuda_major}" in d.name])
        out.append(make(
            "tensorrt-cuda-major-mismatch",
            f"{build} is built for CUDA {ctx.cuda_major}; the TensorRT {need.major} installed is built for CUDA "
            f"{chosen.cuda_major} ({chosen.cuda_source}): {_where(chosen)}.",
            fix, steps=steps, severity="error" if requested else None))
    lacks = list(plan.missing)
    if not any(r.startswith(f"libnvinfer_builder_resource.so.{need.major}") for r in chosen.builder_resources):
        short = ".".join(chosen.version.split(".")[:3]) if chosen.version else f"{need.major}.x.y"
        lacks.append(f"libnvinfer_builder_resource.so.{short} (engine building "
                     "dlopens it: `createInferBuilder: Error Code 6: API Usage Error (Unable to load library: "
                     "libnvinfer_builder_resource.so...)`)")
    if lacks:
        fix, steps = tensorrt_fix(plan, ctx.installer, reinstall=True) if chosen.origin == "pip" else (
            f"Reinstall the whole TensorRT {need.major} in {chosen.directory}: " + _system_install(ctx, plan, chosen),
            ())
        out.append(make(
            "tensorrt-incomplete",
            f"{_where(chosen)} lacks " + "; ".join(lacks) + ".",
            fix, steps=steps, severity="error" if requested and plan.missing else None))
    if not plan.loader_finds:
        owner = chosen.distribution or chosen.origin
        first = need.sonames[0] if need.sonames else f"libnvinfer.so.{need.major}"
        out.append(make(
            "tensorrt-not-on-loader-path",
            f"TensorRT {chosen.version or need.major} is installed in {chosen.directory} ({owner}), which neither "
            "LD_LIBRARY_PATH nor the ld.so cache names: without a preload the TensorRT EP fails with "
            f"`{first}: cannot open shared object file`. onnxruntime.preload_dlls() does not load TensorRT.",
            compose((line := search_path_line(ctx, [chosen.directory]),),
                    "the line above, before starting Python, for the programs this shell starts; or "
                    "ORTDOCTOR_TENSORRT=1 with `import ortdoctor.hook` first in the program, or `ortdoctor preload "
                    "--tensorrt` (loads these files by full path after the CUDA set)", windows=ctx.os_name == "windows"),
            severity="error" if requested else None, commands=(line,)))
    out += _older_than_build(ctx, plan, chosen)
    return out


def _system_install(ctx: Ctx, plan: TensorrtPlan, chosen: TensorrtInstall) -> str:
    facts = ctx.matrix.tensorrt
    major = facts.majors.get(plan.need.major or -1) if facts is not None else None
    if chosen.origin == "ld.so.cache" and major is not None and major.apt:
        return f"sudo apt-get install --reinstall {' '.join(major.apt)}"
    return "unpack the whole TensorRT tar file again (its lib/ holds every library and the builder resource)"


def _older_than_build(ctx: Ctx, plan: TensorrtPlan, chosen: TensorrtInstall) -> list[Finding]:
    built = plan.need.built_with
    have = _VERSION_RE.match(chosen.version or "")
    want = _VERSION_RE.match(built.tensorrt if built else "")
    if built is None or have is None or want is None:
        return []
    if (int(have.group(1)), int(have.group(2))) >= (int(want.group(1)), int(want.group(2))):
        return []
    line = ctx.match.release.line if ctx.match else "this release"
    fix, steps = tensorrt_fix(plan, ctx.installer) if plan.pip is not None else ("", ())
    return [make("tensorrt-older-than-build",
                 f"onnxruntime-gpu {line}'s TensorRT EP was built with TensorRT {built.tensorrt} ({built.source}); "
                 f"installed is {chosen.version} ({chosen.version_source or chosen.origin}) in {chosen.directory}.",
                 fix, steps=steps)]


# --------------------------------------------------------------------------------------------------
# Plugin execution providers
# --------------------------------------------------------------------------------------------------
def _needed(info: ElfInfo | PeInfo) -> tuple[str, ...]:
    return info.needed if isinstance(info, ElfInfo) else info.imports


def _cuda_majors(pkg: PluginEpPackage) -> dict[str, int]:
    out: dict[str, int] = {}
    for lib in pkg.libraries:
        for name in _needed(lib):
            m = cuda_soname(name)
            if m and (m.group(1) or m.group(3)) in ("cudart", "cublas", "cublasLt", "nvrtc"):
                out[name] = int(m.group(2) or m.group(4))
    return out


def _where_else(ctx: Ctx, soname: str) -> tuple[str | None, str | None]:
    """The copy of ``soname`` the process would use instead of a plugin's: the chosen one, else a wheel's
    or the loader's. (path, version) or (None, None)."""
    plan = ctx.plan
    if plan is not None:
        lp = next((x for x in plan.libraries if x.soname == soname and x.chosen is not None), None)
        if lp is not None and lp.chosen is not None:
            return lp.chosen.path, lp.chosen.version
    for wheel in ctx.env.nvidia_wheels:
        if soname in wheel.sonames:
            for lib_dir in wheel.lib_dirs:
                if os.path.exists(os.path.join(lib_dir, soname)):
                    return os.path.join(lib_dir, soname), wheel.version
    cached = ctx.env.system.ldconfig.get(soname)
    if cached:
        return cached[0], None
    for d in ctx.env.system.ld_library_path:
        if d.exists and not d.relative and d.path and os.path.exists(os.path.join(d.path, soname)):
            return os.path.join(d.path, soname), None
    return None, None


def check_plugin_eps(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    for pkg in ctx.env.plugins.packages:
        majors = _cuda_majors(pkg)
        other = {n: m for n, m in majors.items() if ctx.cuda_major is not None and m != ctx.cuda_major}
        if other:
            major = sorted(set(other.values()))[0]
            steps = _variant_steps(ctx, pkg)
            out.append(make(
                "plugin-ep-cuda-major-mismatch",
                f"{pkg.name} {pkg.version} ({pkg.location}) needs {', '.join(sorted(other))} (CUDA {major}); "
                f"{ctx.env.ort.active or 'onnxruntime'} {ctx.env.ort.version} is built for CUDA {ctx.cuda_major}. "
                "Registering the plugin brings a second CUDA major into the process.",
                ctx.run(*steps) if steps else "", steps=steps))
        out += _bundled(ctx, pkg)
    return out


def _variant_steps(ctx: Ctx, pkg: PluginEpPackage) -> tuple[PackageStep, ...]:
    """``onnxruntime-ep-nv-tensorrt-rtx-cu12`` -> the -cu13 variant of the same version, where PyPI has it."""
    m = re.match(r"^(.*-cu)(\d+)$", pkg.name)
    if m is None or ctx.cuda_major is None:
        return ()
    variant = f"{m.group(1)}{ctx.cuda_major}"
    if pkg.version not in ctx.matrix.versions_of(variant):
        return ()
    return (step("uninstall", "-y", pkg.name), step("install", f"{variant}=={pkg.version}"))


def _bundled(ctx: Ctx, pkg: PluginEpPackage) -> list[Finding]:
    out: list[Finding] = []
    files = {os.path.basename(lib.path) for lib in pkg.libraries}
    for lib in pkg.libraries:
        soname = lib.soname if isinstance(lib, ElfInfo) else None
        m = cuda_soname(soname or "")
        if soname is None or m is None or (m.group(1) or "") == "cudnn":
            continue
        base = os.path.basename(lib.path)
        users = [os.path.basename(x.path) for x in pkg.libraries if soname in _needed(x)]
        runpaths = {os.path.basename(x.path): (x.runpath or x.rpath) for x in pkg.libraries
                    if isinstance(x, ElfInfo) and (x.runpath or x.rpath) and soname in x.needed}
        by_path = base in pkg.named_in_python
        by_name = soname in files
        origin_search = any("$ORIGIN" in p for paths in runpaths.values() for p in paths)
        other, other_version = _where_else(ctx, soname)
        lines = [f"{pkg.name} {pkg.version} ships {base} (soname {soname}) in {os.path.dirname(lib.path)}, a second "
                 f"{soname.split('.so')[0]} file in the process's search space"
                 + (f" beside {'the chosen ' if ctx.plan else ''}{other}" + (f" ({other_version})" if other_version
                                                                            else "") if other else "") + "."]
        severity: Severity = "info"
        if by_path:
            severity = "warning"
            lines.append(f"Its Python code names {base}: loaded by full path it would be a second {soname} in the "
                         "process, beside the copy onnxruntime uses.")
        elif by_name and origin_search:
            severity = "warning"
            lines.append(f"A file named {soname} sits beside libraries whose RUNPATH has $ORIGIN: they load the "
                         "bundled copy when no other is loaded first.")
        else:
            plain = [u for u in users if u not in runpaths]
            how = (f"{', '.join(plain)} (DT_NEEDED {soname}, no RUNPATH)" if plain else
                   f"the libraries that need {soname} reach it only through RUNPATH")
            lines.append(f"Nothing in the package loads that file: its Python code does not name it, no file there is "
                         f"named {soname}, and {how}: registering the plugin takes {soname} from the normal search, "
                         "the copy already loaded, else LD_LIBRARY_PATH, then the ld.so cache.")
        for user, paths in runpaths.items():
            lines.append(f"{user}'s RUNPATH names {':'.join(paths)}: where that directory exists, it takes "
                         f"{soname} from there.")
        cwd = [os.path.basename(x.path) for x in pkg.libraries if isinstance(x, ElfInfo) and x.search_path_has_cwd
               and soname in x.needed]
        if cwd:
            severity = "warning"
            lines.append(f"{', '.join(cwd)}'s RUNPATH has an empty entry, which the loader searches as the current "
                         f"directory: a {soname} in the working directory is taken when no copy is loaded first.")
        if other is None:
            severity = "warning"
            lines.append(f"No other {soname} is installed (no NVIDIA wheel, nothing in LD_LIBRARY_PATH or the "
                         f"ld.so cache): registering the plugin fails with `{soname}: cannot open shared object "
                         "file` although the package ships a copy.")
        if pkg.import_effects:
            lines.append(f"Importing {pkg.import_name or pkg.name} " + ", ".join(pkg.import_effects) + ".")
        steps: tuple[PackageStep, ...] = ()
        if other is None:
            fix, steps = _runtime_fix(ctx, soname)
        else:
            fix = (f"Load the chosen CUDA set before importing {pkg.import_name or pkg.name} (`import ortdoctor.hook` "
                   f"first in the program), so the plugin uses the process's {soname}" if ctx.plan else "")
        commands = ctx.installer.lines(steps)
        out.append(make("plugin-ep-bundled-cuda-library", "\n".join(lines), fix, severity=severity, steps=steps,
                        title=f"{pkg.name} bundles its own {soname}", commands=commands))
    return out


# The CUDA runtime wheel of each major: CUDA 13's is unsuffixed (its -cu13 name is a deprecated stub).
_RUNTIME_WHEELS = {13: "nvidia-cuda-runtime", 12: "nvidia-cuda-runtime-cu12", 11: "nvidia-cuda-runtime-cu11"}


def _runtime_fix(ctx: Ctx, soname: str) -> tuple[str, tuple[PackageStep, ...]]:
    m = re.match(r"^libcudart\.so\.(\d+)", soname)
    wheel = _RUNTIME_WHEELS.get(int(m.group(1))) if m else None
    if m is None or wheel is None or not ctx.matrix.versions_of(wheel):
        return f"Install the CUDA library {soname} where the loader finds it (LD_LIBRARY_PATH or the ld.so cache)", ()
    steps = (step("install", pin_series(ctx.matrix, wheel)),)
    layout = "nvidia/cu13/lib" if m.group(1) == "13" else "nvidia/cuda_runtime/lib"
    return ctx.installer.fix(steps, f"afterwards put its directory (site-packages/{layout}) on LD_LIBRARY_PATH "
                             "before Python starts")[0], steps


def check_cuda_plugin_ep(ctx: Ctx) -> list[Finding]:
    plugins = ctx.env.plugins
    if not plugins.cuda_plugin_ep:
        return []
    return [make("cuda-plugin-ep-build",
                 f"{plugins.build_info_path}: \"{plugins.build_info}\". onnxruntime registers "
                 f"{ctx.env.ort.cuda_provider.path if ctx.env.ort.cuda_provider else 'libonnxruntime_providers_cuda.so'} "
                 "through register_execution_provider_library at import; the smoke result lists "
                 "onnxruntime.get_ep_devices().", "")]


def check_plugin_devices(ctx: Ctx, smoke: SmokeResult | None) -> list[Finding]:
    """What the smoke child saw of each installed plugin EP: a registration that failed, or an EP that
    onnxruntime offers no device (so no session can use it)."""
    if smoke is None or not smoke.ran:
        return []
    devices: list[dict[str, Any]] = list(smoke.ep_devices)
    offered = {d.get("ep_name") for d in devices}
    listed = "; ".join(f"{d.get('ep_name')} on {d.get('type')} ({d.get('vendor')})" for d in devices) or "nothing"
    gpus = ctx.env.driver.devices
    nvml = "; ".join(f"GPU {g.index} {g.name}" for g in gpus) if gpus else "no GPU"
    out: list[Finding] = []
    for p in smoke.plugin_eps:
        ep = p.get("ep_name") or "?"
        what = f"{p.get('package')} {p.get('version')} ({ep})"
        if not p.get("registered"):
            detail = f"{what}: registering {p.get('library')} failed: {p.get('error')}"
        elif ep not in offered:
            detail = (f"{what} registered, but onnxruntime offers it no device: get_ep_devices() lists {listed}; "
                      f"NVML sees {nvml}.")
            if gpus and not any(d.get("type") == "GPU" for d in devices):
                detail += "\nonnxruntime's own device discovery lists no GPU at all here, so no GPU plugin EP is offered one."
        else:
            continue
        out.append(make("plugin-ep-no-device", detail))
    return out
