"""A fast scanner of installed distributions (``*.dist-info`` directories) in site directories.

``importlib.metadata`` opens and parses the METADATA of every distribution it meets; with a thousand
packages installed that dominates a diagnosis. This scanner lists directory *names* only, picks the
few distributions ortdoctor cares about by the name encoded in the directory name, and parses
METADATA and RECORD of those alone. Nothing is imported and nothing is executed.
"""

from __future__ import annotations

import io
import os
import stat
from collections import namedtuple
from collections.abc import Iterable, Iterator
from functools import cached_property

from ortdoctor.core.record import field, record
from ortdoctor.formats.regular_file import open_regular, read_capped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple

__all__ = [
    "DistIndex",
    "DistRef",
    "Distribution",
    "RecordEntry",
    "file_sha256",
    "list_dist_infos",
    "normalize",
    "open_regular",
]

# A METADATA header block or RECORD larger than this is not a real one: stop reading instead of
# letting a hostile or corrupt file cost memory and time.
_MAX_METADATA = 1024 * 1024
_MAX_RECORD = 32 * 1024 * 1024
_MAX_SMALL = 64 * 1024


def normalize(name: str) -> str:
    """PEP 503 normalisation: ``Nvidia_CUDNN.cu13`` -> ``nvidia-cudnn-cu13``.

    ``re.sub(r"[-_.]+", "-", name).lower()``, without compiling a pattern on every start."""
    out = name.replace("_", "-").replace(".", "-")  # two replaces: ~5x faster than str.translate here
    while "--" in out:
        out = out.replace("--", "-")
    return out.lower()


@record
class DistRef:
    """A distribution known by its ``.dist-info`` directory name only (nothing parsed yet)."""

    name: str  # normalised project name from the directory name
    version: str  # version from the directory name ("" when the name carries none)
    location: str  # the site directory
    dist_info: str  # absolute path of the .dist-info directory


if TYPE_CHECKING:
    class RecordEntry(NamedTuple):
        """One RECORD row. A named tuple, not a record: torch's RECORD has ~14,000 rows, and a tuple is
        created several times faster than an object with a ``__dict__``."""

        path: str  # as written in RECORD, relative to the site directory ("/" separated)
        hash: str | None  # "sha256=<urlsafe base64 without padding>" or None
        size: int | None
else:
    # The same class at run time, made by collections.namedtuple: typing.NamedTuple compiles each
    # annotation string (they are strings under `from __future__ import annotations`), ~1 ms at import.
    RecordEntry = namedtuple("RecordEntry", ("path", "hash", "size"), module=__name__)
    RecordEntry.__doc__ = "One RECORD row: path (relative, '/' separated), hash ('sha256=...' or None), size."


@record
class Distribution:
    """One parsed distribution: METADATA headers and RECORD."""

    name: str  # the Name header as written ("onnxruntime-gpu"); the directory's name if unreadable
    version: str
    location: str
    dist_info: str
    requires: tuple[str, ...] = ()  # Requires-Dist lines, verbatim
    # RECORD's text, parsed on first use of `record` (torch's ~14,000 rows cost tens of milliseconds, and
    # most distributions are read for their version alone); already parsed when it needs the csv module,
    # whose errors are reported as a problem. None when RECORD is missing or unreadable.
    record_source: str | tuple[RecordEntry, ...] | None = field(default=None, repr=False, compare=False)
    installer: str | None = None
    index_url: str | None = None  # direct_url.json "url" when present
    problems: tuple[str, ...] = ()

    @cached_property
    def record(self) -> tuple[RecordEntry, ...] | None:
        """RECORD's rows; None when it is missing or unreadable. Never raises: a row that cannot be read
        is left out (it costs that row, not the distribution)."""
        source = self.record_source
        return _parse_record(source) if isinstance(source, str) else source

    def files(self) -> Iterator[str]:
        """Paths from RECORD, relative to the site directory."""
        for entry in self.record or ():
            yield entry.path

    def abspath(self, relative: str) -> str:
        return os.path.normpath(os.path.join(self.location, relative))


# Directory listings are cached by (path, mtime_ns): installing or removing a package changes the
# directory's mtime, so a stale listing is never served within one process.
_listing_cache: dict[str, tuple[int, tuple[str, ...]]] = {}


def list_dist_infos(site_dir: str) -> tuple[str, ...]:
    """Names of the ``*.dist-info`` entries in ``site_dir`` (sorted); () when it cannot be listed."""
    try:
        mtime = os.stat(site_dir).st_mtime_ns
    except (OSError, ValueError):  # ValueError: a path holding a NUL
        return ()
    cached = _listing_cache.get(site_dir)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        with os.scandir(site_dir) as it:
            names = tuple(sorted(e.name for e in it if e.name.endswith(".dist-info")))
    except OSError:
        names = ()
    _listing_cache[site_dir] = (mtime, names)
    return names


def _split_dist_info_name(dirname: str) -> tuple[str, str]:
    stem = dirname[: -len(".dist-info")]
    # Wheel-installed names escape "-" in the project name as "_", so the first "-" separates the
    # version. Editable or odd installers may write no version at all.
    name, sep, version = stem.partition("-")
    return normalize(name), version if sep else ""


class DistIndex:
    """Every ``.dist-info`` in a list of site directories, by name, parsed lazily and once."""

    def __init__(self, site_dirs: Iterable[str]) -> None:
        self.site_dirs: tuple[str, ...] = tuple(dict.fromkeys(os.fspath(d) for d in site_dirs))
        refs: list[DistRef] = []
        for site in self.site_dirs:
            # posixpath.join's rule, applied once per site (a site with 1,000 distributions is common);
            # Windows joins each name (a drive or a share root has rules of its own)
            prefix = (site if not site or site.endswith("/") else site + "/") if os.sep == "/" else None
            for dirname in list_dist_infos(site):
                name, version = _split_dist_info_name(dirname)
                path = prefix + dirname if prefix is not None else os.path.join(site, dirname)
                refs.append(DistRef(name, version, site, path))
        self.refs: tuple[DistRef, ...] = tuple(refs)
        self._parsed: dict[str, Distribution] = {}

    def starting_with(self, prefixes: str | tuple[str, ...]) -> list[DistRef]:
        """References whose normalised name starts with ``prefixes`` (one or a tuple), in site-directory
        order. A test in C per distribution: each probe runs one over every distribution installed."""
        return [r for r in self.refs if r.name.startswith(prefixes)]

    def find(self, name: str) -> list[DistRef]:
        wanted = normalize(name)
        return [r for r in self.refs if r.name == wanted]

    def load(self, ref: DistRef) -> Distribution:
        """Parse METADATA headers and RECORD of one distribution (cached; never raises)."""
        cached = self._parsed.get(ref.dist_info)
        if cached is None:
            cached = _load(ref)
            self._parsed[ref.dist_info] = cached
        return cached


class _Meta:
    __slots__ = ("name", "requires", "version")

    def __init__(self) -> None:
        self.name: str | None = None
        self.version: str | None = None
        self.requires: list[str] = []


def _read_text(path: str, limit: int) -> str:
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size > limit:  # a 100 GB sparse file is refused without reading it
            raise ValueError(f"larger than {limit} bytes")
        data = read_capped(f, limit)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data.decode("utf-8", "replace")


def _parse_metadata(text: str) -> _Meta:
    """The RFC 822 style header block only (the description after the first blank line is skipped)."""
    meta = _Meta()
    for line in text.splitlines():
        if not line.strip():
            break
        if line[:1] in (" ", "\t"):  # continuation line of a folded header
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "name" and meta.name is None:
            meta.name = value
        elif key == "version" and meta.version is None:
            meta.version = value
        elif key == "requires-dist":
            meta.requires.append(value)
    return meta


# A size field is a file's length in ASCII digits: 20 of them reach 10**20 bytes. str.isdigit() alone also
# accepts "²" and other Unicode digits (int() refuses them), and int() refuses more than 4,300 digits.
_MAX_SIZE_DIGITS = 20


def _size(field: str) -> int | None:
    """A RECORD size field as a number; None when empty or not a plain ASCII decimal of bounded length."""
    if 0 < len(field) <= _MAX_SIZE_DIGITS and field.isascii() and field.isdigit():
        return int(field)
    return None


def _parse_record(text: str) -> tuple[RecordEntry, ...]:
    """RECORD's rows. Raises ValueError only for text the csv module refuses (quoted fields); a row
    whose hash or size is odd keeps its path, with that field None."""
    rows: Iterable[list[str]]
    if '"' in text:  # a quoted field (a path with a comma or a quote): the csv module's rules throughout
        import csv  # only then: most RECORDs have no quote, and the import is not free

        try:
            rows = list(csv.reader(io.StringIO(text)))
        except csv.Error as exc:
            raise ValueError(f"not CSV: {exc}") from None
    else:  # the common case, ~10x faster than csv: no field can hold a comma or a line break
        rows = (line.split(",") for line in text.splitlines())
    entries: list[RecordEntry] = []
    append = entries.append
    for row in rows:
        if not row or not row[0]:
            continue
        path = row[0].replace("\\", "/") if "\\" in row[0] else row[0]
        digest = row[1] if len(row) > 1 and row[1] else None
        size = _size(row[2]) if len(row) > 2 else None
        append(RecordEntry(path, digest, size))
    return tuple(entries)


def _load(ref: DistRef) -> Distribution:
    problems: list[str] = []
    meta = _Meta()
    try:
        meta = _parse_metadata(_read_text(os.path.join(ref.dist_info, "METADATA"), _MAX_METADATA))
    except FileNotFoundError:
        problems.append("METADATA missing")
    except (OSError, ValueError) as exc:
        problems.append(f"METADATA unreadable: {exc}")

    record: str | tuple[RecordEntry, ...] | None = None
    try:
        text = _read_text(os.path.join(ref.dist_info, "RECORD"), _MAX_RECORD)
        record = _parse_record(text) if '"' in text else text  # left None when the csv module refuses it
    except FileNotFoundError:
        problems.append("RECORD missing")
    except (OSError, ValueError) as exc:
        problems.append(f"RECORD unreadable: {exc}")

    installer: str | None = None
    try:
        installer = _read_text(os.path.join(ref.dist_info, "INSTALLER"), _MAX_SMALL).strip() or None
    except (OSError, ValueError):
        pass

    index_url: str | None = None
    try:
        direct_text: str | None = _read_text(os.path.join(ref.dist_info, "direct_url.json"), _MAX_SMALL)
    except (OSError, ValueError):
        direct_text = None  # the common case: installed from an index, pip writes no direct_url.json
    if direct_text is not None:
        # json only when there is such a file: a text-mode check need not import it (~2% of its instructions)
        import json

        try:
            direct = json.loads(direct_text)
        except ValueError:
            direct = None
        if isinstance(direct, dict) and isinstance(direct.get("url"), str):
            index_url = direct["url"]

    return Distribution(
        name=meta.name or ref.name,
        version=meta.version or ref.version,
        location=ref.location,
        dist_info=ref.dist_info,
        requires=tuple(meta.requires),
        record_source=record,
        installer=installer,
        index_url=index_url,
        problems=tuple(problems),
    )


# Hashing the ~30 MB pybind module costs tens of milliseconds (so probe_ort asks only when two
# distributions share its directory); the second of those asks for the same digest, so remember it
# by identity of the file.
_hash_cache: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str) -> str | None:
    """The file's digest in RECORD notation (``sha256=...``), or None when it cannot be read."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a path holding a NUL
        return None
    if not stat.S_ISREG(st.st_mode):
        return None  # reading a FIFO would block forever, a device would never end
    key = (path, st.st_mtime_ns, st.st_size)
    cached = _hash_cache.get(key)
    if cached is not None:
        return cached
    # Imported here: only two distributions sharing one directory need a digest (~4 ms to import
    # OpenSSL's hashlib otherwise spent by every `check`).
    import base64
    import hashlib

    h = hashlib.sha256()
    try:
        with open_regular(path) as f:  # the file checked above may have been replaced by a FIFO since
            while chunk := f.read(1024 * 1024):
                h.update(chunk)
    except (OSError, ValueError):  # ValueError: not a regular file (any more)
        return None
    digest = "sha256=" + base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode("ascii")
    _hash_cache[key] = digest
    return digest
