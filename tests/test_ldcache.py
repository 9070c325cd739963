"""ortdoctor.formats.ldcache on this machine's cache and on hostile ones: LdCacheError (or OSError for a
file that cannot be opened) from read_ld_cache, never anything from try_read_ld_cache, and work and
memory bounded by the file's size."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from ortdoctor.formats import ldcache
from ortdoctor.formats.ldcache import LdCacheError, parse_ld_cache, read_ld_cache, try_read_ld_cache
from tests.support import crafted

LD_CACHE = Path("/etc/ld.so.cache")


def _peak_bytes(data: bytes) -> int:
    tracemalloc.start()
    try:
        parse_ld_cache(data)
    except LdCacheError:
        pass
    finally:
        _now, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


@pytest.mark.skipif(not LD_CACHE.is_file(), reason="no /etc/ld.so.cache on this machine")
def test_this_machines_cache() -> None:
    cache = read_ld_cache(str(LD_CACHE))
    assert cache
    assert all(paths and all(p.startswith("/") for p in paths) for paths in cache.values())
    assert try_read_ld_cache(str(LD_CACHE)) == cache


def test_entries_naming_one_long_string_decode_it_once() -> None:
    """100 entries naming one 1 MB string as soname and path: decoded once (each entry two copies cost
    200 MB; a million entries and a 30 MB string, under the 64 MB cap, reached the memory limit)."""
    data = crafted.ld_cache_bomb(100, 1 << 20)
    cache = parse_ld_cache(data)
    assert [len(v) for v in cache.values()] == [100]
    assert _peak_bytes(data) < 8 << 20


def test_entries_naming_overlapping_strings_are_bounded() -> None:
    """4,096 entries each one byte further into one 1 MB string: LdCacheError once the names take more
    than the file holds (each entry two copies: 8 GB)."""
    data = crafted.ld_cache_bomb(4096, 1 << 20, distinct=True)
    with pytest.raises(LdCacheError, match="more string bytes than the file holds"):
        parse_ld_cache(data)
    assert _peak_bytes(data) < 8 << 20


def test_try_read_never_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the parser runs out of (memory) is an unreadable cache too: {} and the loader's defaults."""
    path = tmp_path / "ld.so.cache"
    path.write_bytes(crafted.ld_cache_bomb(2, 16))

    def exhausted(data: bytes, machine: str | None = None) -> dict[str, tuple[str, ...]]:
        raise MemoryError

    monkeypatch.setattr(ldcache, "parse_ld_cache", exhausted)
    assert try_read_ld_cache(str(path)) == {}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_and_device_are_refused_before_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "ld.so.cache"
    os.mkfifo(fifo)
    with pytest.raises(LdCacheError, match="not a regular file"):
        read_ld_cache(str(fifo))  # returns at once: no writer is waited for
    assert try_read_ld_cache(str(fifo)) == {}
    with pytest.raises(LdCacheError, match="not a regular file"):
        read_ld_cache("/dev/zero")
    with pytest.raises(FileNotFoundError):
        read_ld_cache(str(tmp_path / "absent"))
