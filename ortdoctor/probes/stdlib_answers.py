"""What ``platform``, ``sysconfig``, ``shutil.which`` and ``glob`` would answer for the few questions the
probes ask, without importing those modules on the common systems.

Importing ``platform``, ``sysconfig`` (with its generated config data), ``shutil`` (which brings
``fnmatch``, ``zlib``, ``bz2`` and ``lzma``) and ``glob`` costs ~8 ms on a 2-core machine: a tenth of
what ``check --no-smoke`` may take. Each answer here reads what the interpreter already holds
(``os.uname()``, ``sys.implementation``) and falls back to the module itself wherever the shortcut
would not give the same answer; ``tests/test_stdlib_answers.py`` compares the two.
"""

from __future__ import annotations

import os
import sys

__all__ = ["directory_entries", "machine", "multiarch", "platform_tag", "python_implementation",
           "python_version", "which"]

_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "graalpy": "GraalVM", "ironpython": "IronPython",
                    "jython": "Jython"}


def machine() -> str:
    """``platform.machine()``."""
    if hasattr(os, "uname"):
        return os.uname().machine  # what platform.uname() reads on POSIX
    import platform

    return platform.machine()


def python_version() -> str:
    """``platform.python_version()`` for a release build (major.minor.micro, plus the pre-release tag)."""
    v = sys.version_info
    if v.releaselevel == "final":
        return f"{v.major}.{v.minor}.{v.micro}"
    import platform

    return platform.python_version()


def python_implementation() -> str:
    """``platform.python_implementation()``."""
    name = _IMPLEMENTATIONS.get(sys.implementation.name)
    if name is not None:
        return name
    import platform

    return platform.python_implementation()


def platform_tag() -> str:
    """``sysconfig.get_platform()``: on Linux ``linux-<machine>``, as sysconfig builds it there."""
    if sys.platform.startswith("linux") and hasattr(os, "uname") and "_PYTHON_HOST_PLATFORM" not in os.environ:
        return "linux-" + os.uname().machine.replace(" ", "_").replace("/", "-")
    import sysconfig

    return sysconfig.get_platform()


def multiarch() -> str | None:
    """``sysconfig.get_config_var("MULTIARCH")`` ("x86_64-linux-gnu"; None where the build has none)."""
    value = getattr(sys.implementation, "_multiarch", None)  # CPython holds the same build-time value
    if value is None:
        import sysconfig

        value = sysconfig.get_config_var("MULTIARCH")
    return value if isinstance(value, str) and value else None


def which(name: str, path: str) -> str | None:
    """``shutil.which(name, path=path)`` on POSIX (the first executable regular file of that name in a
    directory of ``path``, the empty entry meaning the current directory)."""
    if os.name != "posix" or os.sep in name:
        import shutil

        return shutil.which(name, path=path)
    if not path:
        return None
    for directory in path.split(os.pathsep):
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.F_OK | os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def directory_entries(directory: str, prefix: str, suffix: str = "") -> list[str]:
    """``glob.glob(os.path.join(directory, prefix + "*" + suffix))``, sorted, for a plain prefix and
    suffix (no hidden files, as glob skips them)."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(os.path.join(directory, n) for n in names
                  if n.startswith(prefix) and n.endswith(suffix) and len(n) >= len(prefix) + len(suffix)
                  and not n.startswith("."))
