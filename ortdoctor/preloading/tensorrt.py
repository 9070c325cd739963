"""``preload(tensorrt=True)``: load the TensorRT libraries the TensorRT EP links, by full path, after the
CUDA set.

``onnxruntime.preload_dlls()`` does not load TensorRT, and pip's ``tensorrt_libs/`` is on no search path,
so the TensorRT provider fails with ``libnvinfer.so.10: cannot open shared object file`` although TensorRT
is installed. Loaded by path, each library's soname satisfies the provider's DT_NEEDED when onnxruntime
loads it. The choice is :func:`ortdoctor.decide.tensorrt.plan_tensorrt`'s; each loaded library is proved in
``/proc/self/maps`` and asked its version (``getInferLibVersion``, ``getNvOnnxParserVersion``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import Environment, Finding
from ortdoctor.core.shell import Command, compose
from ortdoctor.decide.fixes import Installer
from ortdoctor.decide.matrix.model import Matrix
from ortdoctor.decide.tensorrt import TensorrtPlan, plan_tensorrt, refused_needed, tensorrt_fix
from ortdoctor.formats.realpath import real_path
from ortdoctor.native.gate import Judge, override_name
from ortdoctor.preloading import loader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ortdoctor.native.gate import Allowance

__all__ = ["load_tensorrt"]


def _best(measured: str | None, planned: str | None) -> str | None:
    """The file's or distribution's version (10.16.1.11) when the library's own answer (10.16.1) agrees."""
    if measured and planned and planned.startswith(measured.rsplit(".", 1)[0] + "."):
        return planned if len(planned) > len(measured) else measured
    return measured or planned


def _missing(tplan: TensorrtPlan, installer: Installer) -> Finding:
    need = tplan.need
    fix, steps = tensorrt_fix(tplan, installer)
    if tplan.other_major:
        majors = ", ".join(sorted({str(i.major) for i in tplan.other_major}))
        where = "; ".join(f"{i.directory} (TensorRT {i.major})" for i in tplan.other_major)
        return make("tensorrt-major-mismatch",
                    f"The TensorRT EP links libnvinfer.so.{need.major}; installed is TensorRT {majors}: {where}.",
                    fix, steps=steps, severity="error",
                    title=f"TensorRT {majors} is installed; the TensorRT EP needs TensorRT {need.major}")
    refused = refused_needed(tplan)
    if refused is not None:
        title, where, _dirs = refused
        return make("tensorrt-unavailable", f"The TensorRT EP links libnvinfer.so.{need.major}; {where}", fix,
                    steps=steps, severity="error", title=title)
    return make("tensorrt-unavailable",
                f"The TensorRT EP links libnvinfer.so.{need.major}; no TensorRT {need.major} was found (pip "
                "tensorrt_libs, LD_LIBRARY_PATH, the ld.so cache).", fix, steps=steps, severity="error")


def _note_judged(result: Any, tplan: TensorrtPlan, allow: Allowance) -> None:
    """The TensorRT installs refused as the CUDA libraries are, and those only the override let through."""
    for r in tplan.refused:
        if r.unsafe_dir is None:
            continue  # the current directory: named in the failure, as the CUDA libraries' candidates are
        result.findings.append(make(
            "unsafe-library-dir",
            f"{r.why}: anyone who can write there can plant a library that runs in your process (TensorRT "
            f"{r.install.major} in {r.install.directory} was not loaded).",
            compose((chmod := Command(("chmod", "o-w", r.unsafe_dir)),), "or, if you trust it, pass "
                    "--allow-unsafe-dirs"), commands=(chmod,)))
    for r in tplan.allowed:
        if r.install is tplan.chosen:
            result.findings.append(make(
                "unsafe-dir-allowed", f"TensorRT {r.install.major} from {r.install.directory} ({r.why}). Only "
                f"{override_name(allow, real_path(r.install.directory))} let it through: anyone who can write "
                "there can run code in this process."))


def load_tensorrt(
    result: Any,
    env: Environment,
    matrix: Matrix,
    cuda_major: int | None,
    *,
    dry_run: bool,
    global_: bool,
    record: Callable[..., Any],
    failed: Callable[..., Any],
    skipped: Callable[..., Any],
    allow_unsafe: Allowance = False,
    named: tuple[str, ...] = (),
    judge: Judge | None = None,
) -> None:
    """Append what was loaded (``record``), what failed (``failed``) and findings to ``result``.

    ``record(name, soname, path, source, version, mapped, inode, required, measured)``,
    ``failed(name, soname, error, required)`` and ``skipped(name, reason)`` build the preloader's own
    entries, so this module needs none of its types.
    """
    installer = Installer.of(env.python)
    match = matrix.release_for(env.ort.version) if env.ort.version else None
    tplan = plan_tensorrt(env, matrix, match, cuda_major, cwd=os.getcwd(), allow_unsafe=allow_unsafe)
    if tplan is None or tplan.need.major is None:
        skipped("tensorrt", "this onnxruntime has no TensorRT provider library")
        return
    _note_judged(result, tplan, allow_unsafe)
    if tplan.chosen is None:
        refused = "".join(f"; refused {r.install.directory}: {r.why}" for r in tplan.refused
                          if r.install.major == tplan.need.major)
        failed("nvinfer", f"libnvinfer.so.{tplan.need.major}", "not found"
               + (f"; only TensorRT {', '.join(sorted({str(i.major) for i in tplan.other_major}))}"
                  if tplan.other_major else "") + refused, True)
        result.findings.append(_missing(tplan, installer))
        return
    specs = {s.name: s for s in (matrix.tensorrt.majors[tplan.need.major].libraries
                                 if matrix.tensorrt and tplan.need.major in matrix.tensorrt.majors else ())}
    for lp in tplan.libraries:
        if lp.chosen is None:
            if lp.required:
                failed(lp.name, lp.soname, f"not in {tplan.chosen.directory}", True)
                fix, steps = tensorrt_fix(tplan, installer, reinstall=True)
                result.findings.append(make(
                    "tensorrt-incomplete", f"{tplan.chosen.directory} has no {lp.soname}, which the TensorRT EP "
                    "links.", fix, steps=steps, severity="error"))
            else:
                skipped(lp.name, f"not in {tplan.chosen.directory} (the TensorRT EP does not link it)")
            continue
        if dry_run:
            record(lp.name, lp.soname, lp.chosen.path, lp.chosen.source, lp.chosen.version, None, None,
                   lp.required, None)
            continue
        before = loader.already_loaded(lp.soname)
        if before is not None:
            proof = loader.mapped_file(before)
            record(lp.name, lp.soname, before, "loaded", lp.chosen.version, proof.path if proof else None,
                   proof.inode if proof else None, lp.required, None)
            continue
        try:
            got = loader.load(lp.chosen.path, global_=global_, allow_unsafe=allow_unsafe, named=named, judge=judge)
        except loader.LoadError as exc:
            failed(lp.name, lp.soname, f"{lp.chosen.path}: {exc}", lp.required)
            fix, steps = tensorrt_fix(tplan, installer, reinstall=True)
            result.findings.append(make(
                "lib-load-failed", f"{lp.chosen.path}: {exc}", fix, steps=steps,
                severity="error" if lp.required else "warning", title=f"{lp.soname} exists but does not load"))
            continue
        spec = specs.get(lp.name)
        measured = loader.library_version(got.handle, spec.version_function if spec else None)
        record(lp.name, lp.soname, lp.chosen.path, lp.chosen.source, _best(measured, lp.chosen.version),
               got.mapped.path if got.mapped else None, got.mapped.inode if got.mapped else None, lp.required,
               measured)
