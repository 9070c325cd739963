"""Read PyPI facts without downloading whole wheels.

* :func:`simple_index` fetches a project's PEP 691 JSON index (every file, with its URL and
  ``requires-python``).
* :func:`release_json` fetches ``https://pypi.org/pypi/NAME/VERSION/json`` (``info.requires_dist``).
* :class:`RemoteWheel` reads a wheel's zip central directory and single members through HTTP range
  requests: listing the 700 MB cuDNN wheel and reading its RECORD costs a few hundred kilobytes.

Every answer is cached under ``$PKGFACTS_CACHE`` (default ``~/.cache/ortdoctor-pkgfacts``) so a rerun
reads the same bytes; delete the folder to re-ask PyPI.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

_CACHE = Path(os.environ.get("PKGFACTS_CACHE", Path.home() / ".cache" / "ortdoctor-pkgfacts"))
_TIMEOUT = 120
_BLOCK = 256 * 1024
_MAX_CACHED_PREFIX = 8 * 1024 * 1024


def _cache_path(kind: str, key: str) -> Path:
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return _CACHE / kind / digest


def _get(url: str, headers: dict[str, str] | None = None) -> bytes:
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=_TIMEOUT) as resp:
        data: bytes = resp.read()
        return data


def _cached_json(kind: str, url: str, headers: dict[str, str] | None = None) -> Any:
    path = _cache_path(kind, url)
    if path.exists():
        return json.loads(path.read_text())
    try:
        doc: Any = json.loads(_get(url, headers))
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        doc = None  # the project or version does not exist: cached too
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return doc


def simple_index(name: str) -> dict[str, Any] | None:
    """The PEP 691 JSON simple index of a project, or None when PyPI answers 404."""
    doc: dict[str, Any] | None = _cached_json(
        "simple", f"https://pypi.org/simple/{name}/", {"Accept": "application/vnd.pypi.simple.v1+json"})
    return doc


def release_json(name: str, version: str) -> dict[str, Any] | None:
    """The PyPI JSON API document of one release, or None when PyPI answers 404."""
    doc: dict[str, Any] | None = _cached_json("release", f"https://pypi.org/pypi/{name}/{version}/json")
    return doc


def fetch_small(url: str) -> bytes:
    """A whole (small) file, cached: sdists of placeholders and stubs, a plugin's sdist."""
    path = _cache_path("file", url)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_get(url))
    return path.read_bytes()


class _RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file, fetched in blocks with HTTP Range requests."""

    def __init__(self, url: str, size: int) -> None:
        super().__init__()
        self._url = url
        self._size = size
        self._pos = 0
        self._blocks: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _block(self, index: int) -> bytes:
        if index not in self._blocks:
            start = index * _BLOCK
            end = min(self._size, start + _BLOCK) - 1
            self._blocks[index] = _get(self._url, {"Range": f"bytes={start}-{end}"})
        return self._blocks[index]

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self._size - self._pos
        size = min(size, self._size - self._pos)
        out = bytearray()
        while size > 0:
            index, offset = divmod(self._pos, _BLOCK)
            chunk = self._block(index)[offset:offset + size]
            if not chunk:
                break
            out += chunk
            self._pos += len(chunk)
            size -= len(chunk)
        return bytes(out)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


class RemoteWheel:
    """A wheel (or any zip) on PyPI's file host, read member by member."""

    def __init__(self, url: str, size: int) -> None:
        self.url = url
        self.size = size
        self._zip: zipfile.ZipFile | None = None

    def _open(self) -> zipfile.ZipFile:
        if self._zip is None:
            self._zip = zipfile.ZipFile(io.BufferedReader(_RangeFile(self.url, self.size), _BLOCK))
        return self._zip

    def names(self) -> list[str]:
        path = _cache_path("names", self.url)
        if path.exists():
            names: list[str] = json.loads(path.read_text())
            return names
        names = self._open().namelist()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(names))
        return names

    def read(self, member: str, limit: int = 64 * 1024 * 1024) -> bytes:
        """One member's bytes (refused above ``limit`` bytes uncompressed)."""
        path = _cache_path("member", self.url + "\0" + member)
        if path.exists():
            return path.read_bytes()
        info = self._open().getinfo(member)
        if info.file_size > limit:
            raise ValueError(f"{member} is {info.file_size} bytes, over the {limit} limit")
        data = self._open().read(member)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return data

    def read_prefix(self, member: str, nbytes: int) -> bytes:
        """The first ``nbytes`` of a member, decompressed as a stream (an ELF's dynamic section and its
        string table sit in the first segment, so a prefix is enough to read SONAME and DT_NEEDED)."""
        path = _cache_path("prefix", f"{self.url}\0{member}\0{nbytes}")
        if path.exists():
            return path.read_bytes()
        with self._open().open(member) as f:
            data = f.read(nbytes)
        if nbytes <= _MAX_CACHED_PREFIX:  # whole 200 MB libraries would fill the disk on a rerun
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return data

    def member_size(self, member: str) -> int:
        return self._open().getinfo(member).file_size

    def dist_info_file(self, name: str) -> str:
        """A ``*.dist-info/NAME`` member (METADATA, RECORD, WHEEL) as text."""
        hits = [n for n in self.names() if n.count("/") == 1 and n.split("/")[0].endswith(".dist-info")
                and n.endswith("/" + name)]
        if not hits:
            raise KeyError(f"no .dist-info/{name} in {self.url}")
        return self.read(hits[0]).decode("utf-8", "replace")
