"""The newest release and what is "latest", read from the shipped matrix, never written into a test.

A new release (scripts/add_release.py) changes what these return and no test: tests of the shipped data ask
here for the newest line, its newest good patch, or the newest release that carries a GPU's kernels.
"""

from __future__ import annotations

from dataclasses import replace

from ortdoctor.decide.matrix.load import default_matrix_path, load_matrix
from ortdoctor.decide.matrix.model import LINUX_X86_64, Matrix, Release

SHIPPED = load_matrix(default_matrix_path())
NEWEST = SHIPPED.releases[0]  # releases are newest first (tests/test_matrix.py checks it)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def newest_good(release: Release) -> str:
    """The newest patch of ``release`` that is not known to be bad."""
    return max((v for v in release.versions if release.bad(v) is None), key=_key)


NEWEST_VERSION = newest_good(NEWEST)


def newest_version(cuda_major: int, *, carrying: str | None = None, platform: str = LINUX_X86_64,
                   matrix: Matrix = SHIPPED) -> str:
    """The newest good PyPI release built for ``cuda_major`` (whose ``platform`` wheel carries the kernel
    target ``carrying``, e.g. ``"sm_90a"``, when given, and not only in single-GPU kernels: ``isolated``)."""
    for release in matrix.releases:
        if not release.pypi or release.cuda_major != cuda_major:
            continue
        kernels = release.kernels_for(platform)
        if carrying is not None and (kernels is None or carrying not in kernels.archs
                                     or carrying in kernels.isolated):
            continue
        if any(release.bad(v) is None for v in release.versions):
            return newest_good(release)
    raise LookupError(f"no CUDA {cuda_major} release carrying {carrying} for {platform}")


def offered_for(gpu: tuple[int, int], cuda_major: int, *, driver_cuda: str, platform: str = LINUX_X86_64,
                matrix: Matrix = SHIPPED) -> str:
    """The release ``check`` offers a GPU of compute capability ``gpu`` that the installed build has no kernels
    for: among the releases whose kernels run on it (PTX that ``driver_cuda`` can JIT counts), the newest on the
    installed ``cuda_major`` first, native code before PTX."""
    found = matrix.kernel_releases(gpu, platform=platform, driver_cuda=driver_cuda)
    return sorted(found, key=lambda k: (k.release.cuda_major != cuda_major, k.coverage.verdict != "sass"))[0].version


def lines_carrying(target: str, platform: str = LINUX_X86_64) -> list[str]:
    """Every line (newest first) whose ``platform`` wheel carries the kernel target ``target``."""
    return [r.line for r in SHIPPED.releases if (k := r.kernels_for(platform)) is not None and target in k.archs]


def as_of(line: str) -> Matrix:
    """The shipped matrix as it was when ``line`` was the newest: the stable world of a logic test that
    reasons about particular releases (which one first carries sm_100a, ...). Newer lines are left out, so a
    release that changes the answer changes it in the data tests, not here."""
    key = tuple(int(x) for x in line.split("."))
    return replace(SHIPPED, releases=tuple(r for r in SHIPPED.releases
                                           if tuple(int(x) for x in r.line.split(".")) <= key))


def next_line(ahead: int = 1) -> str:
    """A release line the matrix does not know yet: ``ahead`` minors after the newest."""
    major, minor = (int(x) for x in NEWEST.line.split("."))
    return f"{major}.{minor + ahead}"
