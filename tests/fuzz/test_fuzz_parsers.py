"""Property tests for the small parsers the probes run on files they do not trust: the ld.so cache,
``build_and_package_info.py`` (literal assignments only, never evaluated), METADATA and RECORD.
Each may raise only its one documented error: LdCacheError, SyntaxError, and for RECORD the csv module's
refusal of quoted text (a ValueError, raised while loading; the lazy parse of unquoted text never raises).

Budget: ORTDOCTOR_FUZZ_EXAMPLES examples per test (default 200)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ortdoctor.formats.distinfo import _parse_metadata, _parse_record
from ortdoctor.formats.ldcache import LdCacheError, parse_ld_cache
from ortdoctor.probes.ort import parse_literal_assignments
from tests.fuzz.bounds import FUZZ

LD_CACHE = Path("/etc/ld.so.cache")


@pytest.fixture(scope="module")
def real_cache() -> bytes:
    if not LD_CACHE.is_file():
        pytest.skip("no /etc/ld.so.cache on this machine")
    return LD_CACHE.read_bytes()[:64 * 1024]


@FUZZ
@given(data=st.data(), machine=st.sampled_from([None, "x86_64", "aarch64", "sparc"]))
def test_ld_cache_mutations(real_cache: bytes, data: st.DataObject, machine: str | None) -> None:
    blob = bytearray(real_cache[: data.draw(st.integers(0, len(real_cache)), label="cut")])
    for _ in range(data.draw(st.integers(0, 6), label="edits")):
        if not blob:
            break
        at = data.draw(st.integers(0, min(len(blob) - 1, 4096)), label="at")
        value = data.draw(st.sampled_from([0, 0xFF, 0x7F]) | st.integers(0, 255), label="value")
        blob[at] = value
    try:
        out = parse_ld_cache(bytes(blob), machine)
    except LdCacheError:  # caught by probe_system and reported
        return
    assert all(isinstance(k, str) and all(isinstance(p, str) for p in v) for k, v in out.items())


@FUZZ
@given(st.binary(max_size=512))
def test_ld_cache_random_bytes_behind_the_magic(tail: bytes) -> None:
    for magic in (b"glibc-ld.so.cache1.1", b"ld.so-1.7.0"):
        try:
            parse_ld_cache(magic + tail)
        except LdCacheError:
            pass


SOURCE_PARTS = st.sampled_from([
    "cuda_version = '13.0'\n", "__version__ = '1.31.1'\n", "package_name: str = 'onnxruntime-gpu'\n",
    "cuda_version = __import__('os').getcwd()\n", "x = [1, 2, {3: (4,)}]\n", "import os\n",
    "def f():\n    return 1\n", "if True:\n    cuda_version = '12.0'\n", "a = b = 'c'\n", "(x) = 1\n",
    "cuda_version = 1e999\n", "y = -(-(-1))\n", "z = {'a': [1, 2]}\n", "s = b'\\xff'\n", "\t", "(", "'''",
    "cuda_version = '13.0' if x else '12.0'\n", "w = 9" + "9" * 5000 + "\n", "a = 1\0\n",
    "x = " + "(" * 300 + ")" * 300 + "\n", "y = " + "-" * 100000 + "1\n", "z = [" * 1000 + "\n",
]) | st.text(max_size=30)


@FUZZ
@given(st.lists(SOURCE_PARTS, max_size=20))
def test_build_info_literal_parser(parts: list[str]) -> None:
    source = "".join(parts)
    try:
        out = parse_literal_assignments(source)
    except SyntaxError:  # caught by the probe and reported
        return
    assert isinstance(out, dict)
    assert all(isinstance(k, str) for k in out)


@FUZZ
@given(st.text(max_size=3000))
def test_metadata_and_record_parsers(text: str) -> None:
    meta = _parse_metadata(text)
    assert meta.name is None or isinstance(meta.name, str)
    try:
        rows = _parse_record(text)
    except ValueError:  # the csv module's refusal, only for quoted text; the loader reports it
        assert '"' in text
        return
    assert all(isinstance(r.path, str) and r.path for r in rows)
    assert all(r.size is None or r.size >= 0 for r in rows)
