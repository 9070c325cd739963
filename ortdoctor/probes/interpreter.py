"""The interpreter whose environment is inspected: this one, or another named by ``--python PATH``.

``ortdoctor`` installed by pipx or ``uv tool`` runs in its own environment; to inspect the environment
that serves the model, as pip and uv do, ``--python PATH`` asks that interpreter for its identity and
``sys.path`` in a child (it runs only this small script: nothing is imported but ``sys``, ``json`` and
``sysconfig``), and the probes then read that environment's files.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from ortdoctor.core.record import record
from ortdoctor.probes.stdlib_answers import machine, platform_tag, python_implementation, python_version

__all__ = ["Interpreter", "InterpreterError", "describe", "this_interpreter"]

_SCRIPT = (
    "import json, platform, site, sys, sysconfig\n"
    "print(json.dumps({'executable': sys.executable, 'version': platform.python_version(),\n"
    "  'base_executable': getattr(sys, '_base_executable', None),\n"
    "  'user_site': site.getusersitepackages() if site.ENABLE_USER_SITE else None,\n"
    "  'implementation': platform.python_implementation(), 'platform': sysconfig.get_platform(),\n"
    "  'machine': platform.machine(), 'sys_platform': sys.platform, 'prefix': sys.prefix,\n"
    "  'base_prefix': getattr(sys, 'base_prefix', sys.prefix), 'path': [p for p in sys.path if p]}))\n"
)
_TIMEOUT = 30.0


class InterpreterError(ValueError):
    """``--python`` names something that is not a working Python interpreter (the message says why)."""


@record
class Interpreter:
    executable: str
    version: str
    implementation: str
    platform: str  # sysconfig.get_platform()
    machine: str
    sys_platform: str
    prefix: str
    base_prefix: str
    path: tuple[str, ...]  # its sys.path, without the current directory
    other: bool = False  # not the interpreter ortdoctor runs in
    base_executable: str | None = None  # sys._base_executable: the interpreter a venv was made from
    user_site: str | None = None  # the user site directory, when this interpreter reads it (--user installs)


def this_interpreter() -> Interpreter:
    site = sys.modules.get("site")  # imported at start-up unless -S; then no user site is read either
    user_site = getattr(site, "USER_SITE", None) if getattr(site, "ENABLE_USER_SITE", False) else None
    return Interpreter(sys.executable, python_version(), python_implementation(),
                       platform_tag(), machine(), sys.platform, sys.prefix,
                       getattr(sys, "base_prefix", sys.prefix), tuple(p for p in sys.path if p),
                       base_executable=getattr(sys, "_base_executable", None), user_site=user_site)


def describe(python: str, environ: Mapping[str, str] | None = None) -> Interpreter:
    """Ask ``python`` who it is and where it imports from.

    Raises:
        InterpreterError: not found, not executable, not Python, or no answer in time.
    """
    path = os.path.abspath(os.path.expanduser(python))
    if not os.path.isfile(path):
        raise InterpreterError(f"--python {python}: no such file")
    if not os.access(path, os.X_OK):
        raise InterpreterError(f"--python {python}: not executable")
    env = dict(os.environ if environ is None else environ)
    for key in ("PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(key, None)
    import subprocess  # only for --python: every other check saves their imports
    import tempfile

    try:

        with tempfile.TemporaryDirectory(prefix="ortdoctor-python-") as cwd:  # no stray module shadows sys
            proc = subprocess.run([path, "-c", _SCRIPT], capture_output=True, text=True, timeout=_TIMEOUT,
                                  env=env, cwd=cwd, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InterpreterError(f"--python {python}: could not run it: {exc}") from None
    import json  # only here: a check without --python does not import it

    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise InterpreterError(f"--python {python}: not a Python interpreter that answers ({tail[0]})") from None
    return Interpreter(str(data["executable"]) or path, str(data["version"]), str(data["implementation"]),
                       str(data["platform"]), str(data["machine"]), str(data["sys_platform"]),
                       str(data["prefix"]), str(data["base_prefix"]),
                       tuple(str(p) for p in data["path"] if p), other=True,
                       base_executable=_text(data.get("base_executable")), user_site=_text(data.get("user_site")))


def _text(value: object) -> str | None:
    return str(value) if value else None
