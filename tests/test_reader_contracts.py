"""Every reader against the paths that break naive ones: each ends at once with a result or its one
documented error, never a hang, a foreign exception or memory out of proportion to what it was given.

The paths: a FIFO without a writer (a plain open() blocks forever), /dev/zero (never ends), /dev/null, a
100 GB sparse file, a symlink loop, a directory, a file whose name is not UTF-8, /proc/self/mem (opens,
then fails to read) and a missing file. Each reader's contract is in its docstring and
docs/architecture.md.
"""

from __future__ import annotations

import os
import signal
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import MatrixError
from ortdoctor.formats.distinfo import DistIndex
from ortdoctor.formats.elf import ElfError, is_elf, read_elf
from ortdoctor.formats.elf_rodata import find_marked_string
from ortdoctor.formats.fatbin import FatbinError, read_fatbin
from ortdoctor.formats.ldcache import LdCacheError, read_ld_cache, try_read_ld_cache
from ortdoctor.formats.npy import NpyError, read_npy_header
from ortdoctor.formats.pe import PeError, is_pe, read_pe
from ortdoctor.formats.procmaps import mapped_objects
from ortdoctor.formats.realpath import real_path, remembered_realpaths
from ortdoctor.probes import ort
from ortdoctor.prove.model_check.inspect import ModelInspection, inspect_model

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/proc/self/mem"),
                                reason="FIFOs and /proc: Linux")

SPECIAL = ("fifo", "dev-zero", "dev-null", "sparse-100g", "symlink-loop", "directory", "non-utf8-name",
           "proc-self-mem", "missing")
TIME_LIMIT = 20  # seconds: each call takes milliseconds; a blocked open() never returns
MEMORY_LIMIT = 32 << 20  # bytes Python may hold at once during a call: none of these files is worth more


class _Hung(BaseException):
    """Raised by the alarm: a BaseException, so that no reader's `except OSError` can swallow it."""


@pytest.fixture(scope="module")
def special(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("special")
    os.mkfifo(base / "fifo")
    with open(base / "sparse", "wb") as f:
        f.truncate(100 << 30)
    (base / "loop-a").symlink_to(base / "loop-b")
    (base / "loop-b").symlink_to(base / "loop-a")
    (base / "dir").mkdir()
    odd = os.path.join(os.fsencode(base), b"lib\xff\xfe.so.1")
    with open(odd, "wb") as f:
        f.write(b"\x7fELF\x02\x01\x01" + bytes(57) + b"\x93NUMPY" + bytes(64))
    return {
        "fifo": str(base / "fifo"), "dev-zero": "/dev/zero", "dev-null": "/dev/null",
        "sparse-100g": str(base / "sparse"), "symlink-loop": str(base / "loop-a"), "directory": str(base / "dir"),
        "non-utf8-name": os.fsdecode(odd), "proc-self-mem": "/proc/self/mem", "missing": str(base / "absent"),
    }


def _distributions(path: str) -> object:
    """A site whose one distribution has METADATA, RECORD and INSTALLER at ``path`` (by symlink)."""
    import tempfile

    with tempfile.TemporaryDirectory() as site:
        dist_info = Path(site) / "onnxruntime_gpu-1.31.1.dist-info"
        dist_info.mkdir()
        for name in ("METADATA", "RECORD", "INSTALLER", "direct_url.json"):
            (dist_info / name).symlink_to(path)
        index = DistIndex([site])
        (ref,) = index.refs
        dist = index.load(ref)
        return dist.record, tuple(dist.files()), dist.problems


def _remembered_realpath(path: str) -> str:
    with remembered_realpaths():
        return real_path(path)


def _inspect(path: str) -> ModelInspection:
    found = inspect_model(path)
    assert found.problem is not None  # none of these is a model
    return found


# reader -> (the call, the errors it may raise; () for a reader that never raises)
READERS: dict[str, tuple[Callable[[str], object], tuple[type[BaseException], ...]]] = {
    "elf": (read_elf, (ElfError,)),
    "is_elf": (is_elf, ()),
    "elf_rodata": (lambda p: find_marked_string(p, b"ORT Build Info:"), ()),
    "pe": (read_pe, (PeError,)),
    "is_pe": (is_pe, ()),
    "fatbin": (read_fatbin, (FatbinError,)),
    # OSError: the cache cannot be opened or read (the callers tell a missing cache apart)
    "ldcache": (read_ld_cache, (LdCacheError, OSError)),
    "try_ldcache": (try_read_ld_cache, ()),
    "distinfo": (_distributions, ()),
    "npy": (read_npy_header, (NpyError,)),
    "procmaps": (mapped_objects, ()),
    "realpath": (real_path, ()),
    "realpath_remembered": (_remembered_realpath, ()),
    "build_info_literals": (ort._read_build_info, ()),
    "onnx_model": (_inspect, ()),
    "matrix": (load_matrix, (MatrixError,)),
}


@pytest.fixture
def limits() -> Iterator[None]:
    def hung(signum: int, frame: object) -> None:
        raise _Hung(f"still running after {TIME_LIMIT} s")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(TIME_LIMIT)
    tracemalloc.start()
    try:
        yield
        _now, peak = tracemalloc.get_traced_memory()
        assert peak < MEMORY_LIMIT, f"{peak} bytes held at once"
    finally:
        tracemalloc.stop()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("path_kind", SPECIAL)
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.usefixtures("limits")
def test_special_path(special: dict[str, str], reader: str, path_kind: str) -> None:
    call, allowed = READERS[reader]
    try:
        call(special[path_kind])
    except allowed:
        pass
