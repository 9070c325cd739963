"""Rules about the process around the session: the search path, stub libraries, multiprocessing."""

from __future__ import annotations

import os

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import (
    Finding,
)
from ortdoctor.core.record import replace
from ortdoctor.core.shell import Command, compose
from ortdoctor.decide.fixes import check_again, pin_series, quote, search_path, step
from ortdoctor.diagnose.context import Ctx, search_path_entries
from ortdoctor.formats.realpath import real_path


def check_search_path(ctx: Ctx) -> list[Finding]:
    var = "PATH" if ctx.os_name == "windows" else "LD_LIBRARY_PATH"
    keep, lines = search_path_entries(ctx)
    if not lines:
        return []
    # The resolver refuses these directories for ortdoctor's own preloads; the process the user starts
    # still searches them, so the fix is the variable without them (and the start-up file that sets it).
    sep = ";" if ctx.os_name == "windows" else ":"
    windows = ctx.os_name == "windows"
    if windows and not keep:
        return [make("ld-library-path-unsafe", f"{var} entries:\n" + "\n".join(lines),
                     f"remove those entries from PATH (and in the settings that set it; never end it with '{sep}' "
                     f"or use '{sep * 2}')")]
    line = search_path(var, keep, keep=False)
    prose = f"also in the shell start-up file that sets {var}; never end it with '{sep}' or use '{sep * 2}'"
    return [make("ld-library-path-unsafe", f"{var} entries:\n" + "\n".join(lines),
                 compose((line,), prose, windows=windows), commands=(line,))]


def check_nvidia_stubs(ctx: Ctx) -> list[Finding]:
    stubs = [w for w in ctx.env.nvidia_wheels if w.version.startswith("0.0.") and not w.sonames]
    if not stubs:
        return []
    real = [pin_series(ctx.matrix, w.name.removesuffix("-cu13")) for w in stubs if "cudnn" not in w.name]
    steps = (step("uninstall", "-y", *(w.name for w in stubs)),
             *((step("install", *real),) if real else ()))
    fix, commands = ctx.installer.fix(steps)
    return [make("nvidia-wheel-stub",
                 "Deprecated stub distributions without libraries: " + ", ".join(f"{w.name} {w.version}" for w in stubs),
                 fix, steps=steps, commands=commands)]


def check_installer(ctx: Ctx) -> list[Finding]:
    """Which pip a shell would run, and which environment the shell has activated, against the
    interpreter inspected: a bare ``pip install`` or a check of the wrong environment fixes nothing."""
    py = ctx.env.python
    out: list[Finding] = []
    me = _real(py.executable)
    if py.pip_on_path and py.pip_on_path_python and _real(py.pip_on_path_python) != me:
        out.append(make(
            "pip-other-interpreter",
            f"`pip` on PATH ({py.pip_on_path}) installs into {py.pip_on_path_python}; the interpreter inspected "
            f"here is {py.executable}. A bare `pip install` changes the other Python's packages, not this one's.",
            f"Run pip through the interpreter, as every fix here does: {quote(py.executable, windows=ctx.os_name == 'windows')} -m pip ..."
            + ("" if py.venv is None else "\nor activate the environment first: source "
               + quote(os.path.join(py.venv, "bin", "activate")))))
    # --python names the environment: an activated venv beside it is the user's choice, not a mistake
    if py.virtual_env and py.prefix and not py.inspected_other and _real(py.virtual_env) != _real(py.prefix):
        other = os.path.join(py.virtual_env, "Scripts\\python.exe" if ctx.os_name == "windows" else "bin/python")
        out.append(make(
            "virtual-env-not-inspected",
            f"The shell has activated {py.virtual_env} ($VIRTUAL_ENV), but ortdoctor inspected {py.prefix} "
            f"({py.executable}): ortdoctor runs in its own environment (pipx, uv tool), or the venv was "
            "activated after it started. The findings below are about that other environment.",
            # bound to this interpreter (not --python: it is ortdoctor's own), not to the `ortdoctor` on PATH
            compose((again := check_again(other, py.executable),), windows=ctx.os_name == "windows"),
            commands=(again,)))
    return out


# What the contents of an unreadable directory decide: said of a directory ortdoctor cannot read, each
# would be a guess (the package may be right there), and its package fix a reinstall of what is there.
_UNKNOWABLE = frozenset({"ort-not-installed", "ort-cpu-only", "ort-multiple-packages", "ort-install-damaged",
                         "ort-import-fails", "cuda-lib-missing", "cuda-major-mismatch", "cudnn-major-mismatch",
                         "cuda-lib-not-loadable", "lib-sources-mixed", "matrix-missing-library"})
# said before anything else: until they are settled, the other findings are about the wrong place
LAYOUT_FIRST = ("path-unreadable", "virtual-env-not-inspected")


def check_readable(ctx: Ctx) -> list[Finding]:
    """Directories of the import path this user cannot read (:attr:`PythonInfo.unreadable`)."""
    dirs = ctx.env.python.unreadable
    if not dirs:
        return []
    return [make("path-unreadable",
                 "Permission denied for " + ", ".join(dirs) + ": what is installed there cannot be seen, so "
                 "nothing there is called missing or a CPU build here.",
                 compose((chmod := Command(("chmod", "-R", "a+rX", *dirs)),), "as the owner; or run as the user "
                         "who owns the environment", windows=ctx.os_name == "windows"), commands=(chmod,))]


def lead_with_the_layout(found: list[Finding]) -> list[Finding]:
    """The layout findings first, and what they make unreliable left out.

    An unreadable directory: the findings about what is installed there are dropped (no "not installed",
    no reinstall). An activated environment that is not the one inspected: it becomes an error, said
    first, and the other findings keep no package commands, which would change ortdoctor's own
    environment instead of the activated one."""
    ids = {f.id for f in found}
    if "path-unreadable" in ids:
        found = [f for f in found if f.id not in _UNKNOWABLE]
    venv = next((f for f in found if f.id == "virtual-env-not-inspected"), None)
    if venv is not None:
        here = venv.fix or ""
        out = []
        for f in found:
            if f is venv:
                out.append(replace(f, severity="error"))
            elif f.steps:
                out.append(replace(f, steps=(), fix=f"(not printed: check the activated environment first, {here}; "
                                   "to change the inspected one, pass its interpreter with --python)"))
            else:
                out.append(f)
        found = out
    first = [f for fid in LAYOUT_FIRST for f in found if f.id == fid]
    return first + [f for f in found if f.id not in LAYOUT_FIRST]


def _real(path: str) -> str:
    return os.path.normcase(real_path(path))


def check_multiprocessing(ctx: Ctx) -> list[Finding]:
    method = ctx.env.python.multiprocessing_start_method
    if method != "fork":
        return []
    return [make("multiprocessing-fork",
                 "This Python's default multiprocessing start method is 'fork': a worker forked after the "
                 "parent created a CUDA session (or torch used the GPU) fails with CUDA failure 3.")]
