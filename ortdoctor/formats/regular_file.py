"""Reading files that may be hostile or odd: one place for the rules every reader follows.

ortdoctor reads metadata, build info and binary headers out of environments that are often broken. A
FIFO named like a library must not block the reader until a writer appears, a device or socket must
not be read at all, and a header that points outside the file must fail with the reader's own error.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from io import BufferedReader
    from typing import BinaryIO

__all__ = ["NotRegularFile", "open_regular", "read_at", "read_capped"]

_pread: Callable[[int, int, int], bytes] | None = getattr(os, "pread", None)  # POSIX; Windows reads with seek() + read()


def _fd(f: BinaryIO) -> int | None:
    """The descriptor of a real file (None for an in-memory one, as tests pass)."""
    try:
        return f.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both of the last two
        return None


class NotRegularFile(ValueError):
    """The path is a FIFO, socket, device or directory, not a regular file."""


def open_regular(path: str | os.PathLike[str]) -> BufferedReader:
    """Open a regular file for binary reading.

    O_NONBLOCK makes opening a FIFO return at once; anything but a regular file is refused before a
    byte is read.

    Raises:
        OSError: it cannot be opened.
        NotRegularFile: it is not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{os.fspath(path)}: not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb")


# Reads up to this size go straight to the file; a larger one is first compared with the file's size.
_TRUSTED_READ = 64 * 1024


def read_at(f: BinaryIO, offset: int, size: int, what: str, path: str, error: type[Exception]) -> bytes:
    """Exactly ``size`` bytes at ``offset``, or ``error`` saying which structure was out of bounds.

    The memory a read takes is bounded by the file's size: a header field that asks for gigabytes of a
    small file (or of one that shrank) is refused before anything is allocated, as ``pread`` and
    ``read`` allocate the whole request up front.
    """
    if offset < 0 or size < 0:
        raise error(f"{path}: {what} has a negative offset or size")
    fd = _fd(f)
    if size > _TRUSTED_READ:
        end = os.fstat(fd).st_size if fd is not None else None
        if end is not None and offset + size > end:
            raise error(f"{path}: truncated ({what} at {offset}, wanted {size} bytes, the file has {end})")
    if _pread is None:
        fd = None
    if fd is not None:
        # One system call for exactly these bytes: seek() + read() on a buffered file reads a whole
        # buffer (8 KB) for each header, and the fatbin walk reads ~2,700 headers of a 280 MB library.
        # The file's own position is left alone; every reader here reads through read_at only.
        data = _pread(fd, size, offset)  # type: ignore[misc]
    else:
        f.seek(offset)
        data = f.read(size)
    if len(data) != size:
        raise error(f"{path}: truncated ({what} at {offset}, wanted {size} bytes, got {len(data)})")
    return data


_GROW_CHUNK = 64 * 1024


def read_capped(f: BinaryIO, limit: int) -> bytes:
    """The file's bytes from its position, at most ``limit + 1`` of them (one more than ``limit`` says the
    file is larger than the caller takes).

    ``f.read(limit + 1)`` allocates the whole cap before reading, whatever the file holds: 64 MB for a
    100-byte file. Here the memory follows the file: its size (``fstat``) is read in one call, and a file
    whose size says less than it holds (``/proc`` files say 0) is read on a chunk at a time.
    """
    fd = _fd(f)
    size = os.fstat(fd).st_size if fd is not None else limit
    first = f.read(min(size, limit) + 1)
    if len(first) <= min(size, limit):  # the end of the file
        return first
    parts = [first]
    total = len(first)
    while total <= limit:
        chunk = f.read(min(_GROW_CHUNK, limit + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)
