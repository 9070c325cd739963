"""The one gate every native load in ortdoctor goes through: nothing else calls ``dlopen``/``LoadLibrary``.

A library is code that runs the moment it is mapped (its constructors), so the gate decides, before
the dynamic loader sees a path, whether the file could have been put or swapped there by someone
else. Its rule, in order (``docs/security.md``):

1. the path is absolute (a relative path is resolved against the current directory, which changes
   under the caller);
2. its real path (symlinks resolved) is judged: the file must not sit directly in the current
   directory unless the caller named that directory (``--directory``);
3. the file's directory **and every ancestor up to ``/``** is owned by root or the current user and
   not writable by others, unless sticky (``/tmp``): the ``StrictModes`` rule. Judging the ancestors
   is what makes the path stable between this check and the map: a directory can only be renamed or
   replaced by someone who may write its parent, so when every directory on the way is writable only
   by root or the caller (or is sticky, where only an entry's owner may rename it), no one else can
   swap what the path names. Only the final directory was judged before, and another user who owned
   a world-writable parent swapped the directory between the check and ``dlopen``;
4. the file itself is owned by root or the current user and not writable by others;
5. the file is opened (``O_NOFOLLOW``: the real path has no symlink left to follow, so one appearing
   now is a swap) and ``fstat``'ed: only a regular file is read at all (a FIFO, device or socket is
   refused before any read, and ``O_NONBLOCK`` keeps even the open from blocking);
6. the file is not shorter than its ``PT_LOAD`` segments (``max(p_offset + p_filesz)``, read with
   ``pread`` from the open descriptor): a truncated library is mapped without complaint, and the first
   page past the end kills the whole process with SIGBUS;
7. the real path is ``dlopen``'ed and the mapping that appeared in ``/proc/self/maps`` must be the
   ``(device, inode)`` that was ``fstat``'ed: the file checked is the file mapped, or the caller is told.
   A caller that loads a batch (the hook) proves the whole batch with one read of the maps after it
   (:func:`prove`): a mapping stays while its handle lives, so the proof finds the same mappings.

``allow_unsafe`` lifts rules 3 and 4 only: ``True`` (``--allow-unsafe-dirs``) for every library, a tuple of
directories (``--allow-unsafe-dir DIR``, :func:`allowance`) only for a library whose real path is under one of
them. Whatever it lets through is returned in :attr:`Mapped.accepted_unsafe`, so the caller can report it. Rules 1, 2, 5, 6 and 7 always
hold.

Why not ``dlopen("/proc/self/fd/N")`` of the checked descriptor: glibc records that string as the
object's name, so ``$ORIGIN`` and ``dladdr`` (cuDNN finds its sub-libraries through them) point into
``/proc``, and a later ``dlopen`` that happens to reuse the same descriptor number is matched by name to
the old object. Judged ancestors make the real path itself stable instead.

"Already loaded?" (:func:`mapped_copy`) is answered from ``/proc/self/maps``, never by asking the loader
for a bare soname with ``RTLD_NOLOAD``: that makes glibc search ``LD_LIBRARY_PATH`` (empty entries
included) and open each candidate, which blocks forever on a FIFO named like a library.

Standard library only, and cheap to import: the hook's fast path loads through it.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ctypes
    from collections.abc import Iterable
    from typing import Literal

__all__ = ["GateError", "Judge", "LoadFailed", "Mapped", "Refused", "allowance", "any_mapped", "covers",
           "elf_extent", "load", "mapped_copy", "mapped_files", "maps_text", "override_name", "prove", "refusal",
           "rows_with_inode", "windows_kernel32", "windows_system_dll_loads"]

#: What the override lifts rules 3 and 4 for: True everywhere (``--allow-unsafe-dirs``), False nowhere, a
#: tuple of real directory paths under which only (``--allow-unsafe-dir DIR``, repeatable).
if TYPE_CHECKING:
    from typing import TypeAlias

    Allowance: TypeAlias = bool | tuple[str, ...]

RTLD_NOW = getattr(os, "RTLD_NOW", 2)
RTLD_LOCAL = getattr(os, "RTLD_LOCAL", 0)
RTLD_GLOBAL = getattr(os, "RTLD_GLOBAL", 0x100)
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
_MAX_PHDRS_BYTES = 4 * 1024 * 1024  # 65,535 entries of 64 bytes; a real library has ~10
_MAX_MAPS = 64 * 1024 * 1024
_FIRST_READ = 4096  # the ELF header and, in every library built by a usual linker, the program headers


class GateError(OSError):
    """The gate did not map a file. ``str()`` says why, in words for a report."""

    kind = "failed"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class Refused(GateError):
    """The file was judged and refused before the loader saw it (nothing of it ran).

    ``kind``: ``"relative"``, ``"current-directory"``, ``"unsafe"`` (owner or mode of the file or of a
    directory on its way), ``"not-regular"``, ``"missing"`` or ``"truncated"``.
    """

    def __init__(self, path: str, kind: str, reason: str) -> None:
        super().__init__(path, reason)
        self.kind = kind


class LoadFailed(GateError):
    """The file passed the gate and the dynamic loader refused it; ``str()`` is the loader's own message."""

    kind = "loader"


class Mapped:
    """A library the gate let through and the loader mapped."""

    __slots__ = ("accepted_unsafe", "device", "handle", "inode", "mapped_path", "path", "real")

    def __init__(self, path: str, real: str, handle: ctypes.CDLL, device: str, inode: int,
                 mapped_path: str | None, accepted_unsafe: tuple[str, ...]) -> None:
        self.path = path  # as asked for
        self.real = real  # what was opened, judged and dlopen'ed
        self.handle = handle
        self.device = device  # "fe:00", as /proc/<pid>/maps writes it
        self.inode = inode
        # the realpath /proc/self/maps shows for that (device, inode) after the load; None when no mapping
        # of the checked file appeared (another copy was handed back, or the file was swapped) or maps
        # cannot be read
        self.mapped_path = mapped_path
        self.accepted_unsafe = accepted_unsafe  # what only --allow-unsafe-dirs let through, one line each

    @property
    def verified(self) -> bool:
        """The file checked is the file mapped."""
        return self.mapped_path is not None


# --------------------------------------------------------------------------------------------------
# The judgement of a path (rules 1-4)
# --------------------------------------------------------------------------------------------------
class Judge:
    """Judges directories and files for one run, remembering each directory's verdict.

    A verdict is remembered for the life of this object only: a long-lived process makes a new one per
    decision, so a ``chmod`` between two preloads is seen.
    """

    def __init__(self, uid: int | None = None) -> None:
        self.uid = uid if uid is not None else (os.getuid() if hasattr(os, "getuid") else 0)
        self._dirs: dict[str, tuple[str, str] | None] = {}
        self._real_dirs: dict[str, str] = {}

    def real_path(self, path: str) -> str:
        """``os.path.realpath(path)`` for an absolute path, resolving each directory once per run.

        ``realpath`` is an ``lstat`` per component in Python; the loads of one run share two or three
        directories, so only the file's own name is looked at again (and resolved in full when it is a
        link). What is loaded is always the real path returned here, and that is what the rules judge."""
        directory, name = os.path.split(path)
        real_dir = self._real_dirs.get(directory)
        if real_dir is None:
            real_dir = self._real_dirs[directory] = _real_directory(directory)
        full = os.path.join(real_dir, name)
        if not name or name in (".", ".."):
            return os.path.realpath(full)
        try:
            if stat.S_ISLNK(os.lstat(full).st_mode):
                return os.path.realpath(full)
        except OSError:
            pass  # missing: the open below says so, with this path
        return full

    def _one(self, path: str, st: os.stat_result, what: str) -> str | None:
        if st.st_mode & stat.S_IWOTH and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
            return f"world-writable {what} {path}"
        if st.st_uid not in (0, self.uid):
            return f"{what} {path} owned by another user (uid {st.st_uid})"
        return None

    def directory(self, real_dir: str) -> str | None:
        """Why ``real_dir`` (a real path) or one of its ancestors lets another user change what it holds;
        None when nothing does."""
        found = self.culprit(real_dir)
        return found[1] if found is not None else None

    def culprit(self, real_dir: str) -> tuple[str, str] | None:
        """(the directory to fix, why) for :meth:`directory`: ``real_dir`` itself or the nearest ancestor
        that others control; None when nothing does."""
        if os.name == "nt":
            return None  # Windows ACLs are not judged here (docs/security.md)
        found = self._chain(real_dir)
        if found is None:
            return None
        where, why = found
        if where == real_dir:
            return found
        return where, f"{why}, above {real_dir}: whoever can write there can replace {real_dir}"

    def _chain(self, real_dir: str) -> tuple[str, str] | None:
        """The nearest directory on the way from ``real_dir`` up to ``/`` that others control, with why."""
        if real_dir in self._dirs:
            return self._dirs[real_dir]
        try:
            st = os.lstat(real_dir)
        except OSError as exc:
            found: tuple[str, str] | None = (real_dir, f"directory {real_dir} cannot be examined ({exc.strerror})")
        else:
            if not stat.S_ISDIR(st.st_mode):
                found = (real_dir, f"{real_dir} is not a directory (it changed while it was judged)")
            else:
                own = self._one(real_dir, st, "directory")
                parent = os.path.dirname(real_dir)
                found = (real_dir, own) if own is not None else (
                    None if parent == real_dir else self._chain(parent))
        self._dirs[real_dir] = found
        return found

    def file(self, real: str, st: os.stat_result) -> str | None:
        """Why a file's own owner or mode lets another user change it; None when nothing does."""
        if os.name == "nt":
            return None
        return self._one(real, st, "file")


_O_PATH_DIR = getattr(os, "O_PATH", 0) | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _real_directory(directory: str) -> str:
    """The real path of a directory, as the kernel resolves it: opened ``O_PATH`` (nothing is read, and
    no FIFO can block) and read back from ``/proc/self/fd``, three system calls where ``realpath`` makes
    one ``lstat`` per component in Python. ``realpath`` itself where that does not give a plain path."""
    if not getattr(os, "O_PATH", 0):
        return os.path.realpath(directory)
    try:
        fd = os.open(directory, _O_PATH_DIR)
    except OSError:
        return os.path.realpath(directory)  # missing or not a directory: the open of the file says so
    try:
        shown = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        shown = ""
    finally:
        os.close(fd)
    if not shown.startswith("/") or shown.endswith(" (deleted)"):
        return os.path.realpath(directory)
    return shown


def allowance(value: bool | Iterable[str] | None) -> Allowance:
    """The override as the gate reads it: ``True``/``False`` as given; directories resolved to their real
    paths (the rule is about where a library really is).

    Raises:
        ValueError: a directory that is not an absolute path (the current directory changes under the
            caller, and an override must not widen with it).
    """
    if value is None or isinstance(value, bool):
        return bool(value)
    dirs = []
    for d in value:
        if not d or not os.path.isabs(d):
            raise ValueError(f"--allow-unsafe-dir needs an absolute directory, not {d!r}")
        dirs.append(os.path.realpath(d))
    return tuple(dict.fromkeys(dirs))


def covers(allow: Allowance, real: str) -> bool:
    """Does the override lift rules 3 and 4 for the file or directory at the real path ``real``?"""
    if isinstance(allow, bool):
        return allow
    return any(real == d or real.startswith(d.rstrip("/") + "/") for d in allow)


def override_name(allow: Allowance, real: str = "") -> str:
    """The option that let ``real`` through, for the report: ``--allow-unsafe-dirs`` or ``--allow-unsafe-dir
    DIR``."""
    if isinstance(allow, bool):
        return "--allow-unsafe-dirs"
    hit = next((d for d in allow if real == d or real.startswith(d.rstrip("/") + "/")), allow[0] if allow else "")
    return f"--allow-unsafe-dir {hit}"


def _current_directory() -> str | None:
    # the kernel's getcwd() is already the resolved path (no symlink in it): no realpath needed
    try:
        return os.getcwd()
    except OSError:
        return None


# --------------------------------------------------------------------------------------------------
# The file (rules 5-6): its PT_LOAD extent, read with pread from the open descriptor
# --------------------------------------------------------------------------------------------------
def _pread(fd: int, size: int, offset: int) -> bytes:
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)  # Windows: no pread
    return os.read(fd, size)


def elf_extent(fd: int) -> int | None:
    """The bytes an ELF file must hold for the loader to map it: the end of its program header table
    and of every ``PT_LOAD`` segment's file part. None when the file is not ELF (the loader says so).

    Raises:
        ValueError: an ELF file too short for its own headers (the reason is the text).
    """
    # One read of the first page: a real library's program headers follow its ELF header there, so the
    # table is sliced from it; only a table elsewhere costs a second pread.
    page = _pread(fd, _FIRST_READ, 0)
    ident = page[:64]
    if ident[:4] != b"\x7fELF":
        return None
    wide = ident[4:5] == b"\x02"
    if len(ident) < (64 if wide else 52) or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ValueError("shorter than an ELF header")
    order: Literal["little", "big"] = "little" if ident[5] == 1 else "big"

    def num(data: bytes, at: int, size: int) -> int:
        return int.from_bytes(data[at:at + size], order)

    if wide:  # ELF64: e_phoff at 32, e_shoff at 40, e_phentsize/e_phnum at 54/56, e_shentsize at 58
        phoff, shoff, phentsize, phnum, shentsize = num(ident, 32, 8), num(ident, 40, 8), num(ident, 54, 2), \
            num(ident, 56, 2), num(ident, 58, 2)
        # p_type (4), p_flags (4), p_offset (8), p_vaddr, p_paddr, p_filesz (8) at 32
        fields, need, info_at = ((0, 4), (8, 8), (32, 8)), 40, 44
    else:  # ELF32: e_phoff at 28, e_shoff at 32, e_phentsize/e_phnum at 42/44, e_shentsize at 46
        phoff, shoff, phentsize, phnum, shentsize = num(ident, 28, 4), num(ident, 32, 4), num(ident, 42, 2), \
            num(ident, 44, 2), num(ident, 46, 2)
        # p_type (4), p_offset (4), p_vaddr, p_paddr, p_filesz (4) at 16
        fields, need, info_at = ((0, 4), (4, 4), (16, 4)), 20, 28
    if phnum == 0xFFFF and shoff:  # PN_XNUM: the real count is section 0's sh_info
        sh = _pread(fd, shentsize, shoff)
        if len(sh) < info_at + 4:
            raise ValueError("shorter than its section header 0")
        phnum = num(sh, info_at, 4)
    extent = phoff + phentsize * phnum if phnum else len(ident)
    if phnum == 0:
        return extent
    if phentsize < need or phentsize * phnum > _MAX_PHDRS_BYTES:
        raise ValueError("its program header table is malformed")
    table = (page[phoff:phoff + phentsize * phnum] if phoff + phentsize * phnum <= len(page)
             else _pread(fd, phentsize * phnum, phoff))
    if len(table) < phentsize * phnum:
        raise ValueError(f"shorter than its program header table ({extent} bytes)")
    (t_at, t_size), (o_at, o_size), (f_at, f_size) = fields
    pt_load = (1).to_bytes(t_size, order)  # compared as bytes: most entries are not PT_LOAD
    for base in range(0, phentsize * phnum, phentsize):
        if table[base + t_at:base + t_at + t_size] == pt_load:
            extent = max(extent, num(table, base + o_at, o_size) + num(table, base + f_at, f_size))
    return extent


def _open_checked(real: str, judge: Judge, allow_unsafe: Allowance, accepted: list[str]) -> tuple[int, os.stat_result]:
    """Rules 4-6 on an open descriptor; returns it (the caller closes it) with its ``fstat``."""
    try:
        lst = os.lstat(real)
    except OSError as exc:
        raise Refused(real, "missing", f"{real}: {exc.strerror}") from None
    if not stat.S_ISREG(lst.st_mode):
        # a FIFO is never opened: open() on one blocks until a writer appears
        raise Refused(real, "not-regular", f"{real} is not a regular file")
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        raise Refused(real, "missing", f"{real}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (lst.st_dev, lst.st_ino):
            raise Refused(real, "not-regular", f"{real} changed while it was judged (not the regular file "
                                               "that was there a moment before)")
        why = judge.file(real, st)
        if why is not None:
            if not covers(allow_unsafe, real):
                raise Refused(real, "unsafe", why)
            accepted.append(why)
        if os.name != "nt":
            try:
                extent = elf_extent(fd)
            except (ValueError, OSError) as exc:
                raise Refused(real, "truncated", f"{real} is damaged: {exc}") from None
            if extent is not None and st.st_size < extent:
                raise Refused(real, "truncated", f"{real} is truncated: {st.st_size} bytes, but its loadable "
                                                 f"segments end at byte {extent}")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


# --------------------------------------------------------------------------------------------------
# The load (rule 7)
# --------------------------------------------------------------------------------------------------
def _device_text(st_dev: int) -> str:
    return f"{os.major(st_dev):02x}:{os.minor(st_dev):02x}"


def maps_text() -> str | None:
    """``/proc/self/maps`` as read now (one read, capped); None when it cannot be read."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read(_MAX_MAPS).decode("utf-8", "surrogateescape")
    except OSError:
        return None


def _rows(text: str) -> list[list[str]]:
    """The maps text as ``[address, perms, offset, device, inode, path]`` rows of mapped files. The kernel
    writes each path resolved (no symlink in it), so no ``realpath`` is needed to compare it: this stays
    cheap enough for the hook's fast path, where :func:`ortdoctor.formats.procmaps.mapped_objects` (the full
    reader) would resolve every path again."""
    rows = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and parts[4] != "0":
            rows.append(parts)
    return rows


def rows_with_inode(text: str, inode: int) -> list[list[str]]:
    """The rows of the maps text whose inode is ``inode``: found with ``str.find`` in C, then only those
    lines split (the hook's batch has ~7 libraries among ~100 mapped files)."""
    ino = str(inode)
    needle = f" {ino} "
    out = []
    at = text.find(needle)
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        parts = text[start:end].split(None, 5)
        if len(parts) == 6 and parts[4] == ino and parts[5].startswith("/"):
            out.append(parts)
        at = text.find(needle, end)
    return out


def _mapping_in(rows: Iterable[list[str]], device: str, real: str) -> str | None:
    """The path ``/proc/self/maps`` shows for the file ``(device, inode)``, from its rows with that inode;
    None when it is not mapped.

    An overlay file system shows the inode with the device of the layer underneath: there the inode and
    the real path together identify the file.
    """
    fallback = None
    for parts in rows:
        shown = parts[5].removesuffix(" (deleted)")
        if parts[3] == device:
            return shown
        if fallback is None and shown == real:  # both resolved already: the kernel's and realpath's
            fallback = shown
    return fallback


def _judged(path: str, allow_unsafe: Allowance, named: Iterable[str],
            judge: Judge | None) -> tuple[str, int, os.stat_result, list[str]]:
    """Rules 1-6: (the real path, an open descriptor of it, its fstat, what only the override let through)."""
    if not path or not os.path.isabs(path):
        raise Refused(path, "relative", f"refusing to load a relative path: {path!r}")
    judge = judge or Judge()
    real = judge.real_path(path)
    directory = os.path.dirname(real)
    cwd = _current_directory()
    if cwd is not None and directory == cwd and not any(
            os.path.realpath(n) == cwd for n in named if os.path.isabs(n)):
        raise Refused(path, "current-directory", f"{real} is in the current directory")
    accepted: list[str] = []
    why = judge.directory(directory)
    if why is not None:
        if not covers(allow_unsafe, real):
            raise Refused(path, "unsafe", why)
        accepted.append(why)
    fd, st = _open_checked(real, judge, allow_unsafe, accepted)
    return real, fd, st, accepted


def refusal(path: str, *, allow_unsafe: Allowance = False, named: Iterable[str] = (),
            judge: Judge | None = None) -> str | None:
    """Why the gate would refuse ``path`` (rules 1-6), without mapping it; None when it would not.

    For a file something else will ``dlopen`` (onnxruntime loads a plugin's provider library itself)."""
    if sys.platform == "win32":
        return None if path and os.path.isabs(path) else f"refusing to load a relative path: {path!r}"
    try:
        _real, fd, _st, _accepted = _judged(path, allow_unsafe, named, judge)
    except Refused as exc:
        return exc.reason
    os.close(fd)
    return None


def load(path: str, *, global_: bool = False, allow_unsafe: Allowance = False, named: Iterable[str] = (),
         judge: Judge | None = None, prove_now: bool = True) -> Mapped:
    """Judge ``path``, open and check it, ``dlopen`` its real path and prove the mapping.

    ``named`` are directories the user named (``--directory``): files directly in the current directory
    load only from those. ``judge`` shares directory verdicts across the loads of one run.
    ``prove_now=False`` leaves the proof to one :func:`prove` call after a batch of loads: each proof
    reads the whole of ``/proc/self/maps``, and a library, once mapped, stays mapped (its handle holds
    it), so proving after the batch finds the same mappings that proving after each load would.
    Until then :attr:`Mapped.mapped_path` is None.

    Raises:
        Refused: the gate refused the file; nothing of it was mapped.
        LoadFailed: the loader refused it.
    """
    if sys.platform == "win32":
        return _load_windows(path)
    real, fd, st, accepted = _judged(path, allow_unsafe, named, judge)
    try:
        import ctypes

        try:
            handle = ctypes.CDLL(real, mode=RTLD_NOW | (RTLD_GLOBAL if global_ else RTLD_LOCAL))
        except OSError as exc:
            raise LoadFailed(path, str(exc)) from None
    finally:
        os.close(fd)
    got = Mapped(path, real, handle, _device_text(st.st_dev), st.st_ino, None, tuple(accepted))
    if prove_now:
        prove((got,))
    return got


def prove(loaded: Iterable[Mapped]) -> str | None:
    """Rule 7 for a batch: set each :attr:`Mapped.mapped_path` from one read of ``/proc/self/maps`` (None
    stays where no mapping of the checked ``(device, inode)`` is there). Returns the maps text read (for
    :func:`mapped_files` and :func:`rows_with_inode`), None when it cannot be read."""
    items = [m for m in loaded if m.inode]  # Windows: nothing to prove (mapped_path is the path)
    text = maps_text()
    if text is None:
        return None
    for m in items:
        m.mapped_path = _mapping_in(rows_with_inode(text, m.inode), m.device, m.real)
    return text


def mapped_files(text: str | None = None) -> list[str]:
    """The paths of the files mapped in this process, as ``/proc/self/maps`` shows them ([] without it);
    from ``text`` when given (what :func:`prove` returned: the maps as they were read for a proof)."""
    if text is None:
        text = maps_text()
    return list(dict.fromkeys(parts[5].removesuffix(" (deleted)") for parts in _rows(text or "")))


def any_mapped(sonames: Iterable[str], text: str | None = None) -> bool:
    """Is a copy of any of ``sonames`` mapped (the rule of :func:`mapped_copy`)? Searched in the maps text
    with ``str.find``, without splitting every line: the hook asks this at every start."""
    if text is None:
        text = maps_text() or ""
    for soname in sonames:
        needle = "/" + soname
        at = text.find(needle)
        while at != -1:
            end = text.find("\n", at)
            name = text[at + 1:len(text) if end == -1 else end].removesuffix(" (deleted)")
            if "/" not in name and (name == soname or name.startswith(soname + ".")):
                return True
            at = text.find(needle, at + 1)
    return False


def mapped_copy(soname: str, paths: Iterable[str] | None = None) -> str | None:
    """The path of the copy of ``soname`` already mapped in this process, from ``/proc/self/maps`` (or
    ``paths``, what :func:`mapped_files` returned); None when none is.

    A mapped file named ``soname``, or ``soname`` plus a version (``libcudnn.so.9.19.0``), is the copy
    a later ``dlopen`` of that soname returns. Nothing is opened or searched: asking the loader instead
    (``RTLD_NOLOAD`` with the bare name) makes it search the library path and open each candidate.
    """
    if paths is None:
        paths = mapped_files()
    prefix = soname + "."
    for path in paths:
        base = os.path.basename(path)
        if base == soname or base.startswith(prefix):
            return path
    return None


# --------------------------------------------------------------------------------------------------
# Windows (written against the documented behaviour of LoadLibraryEx; not run on Windows yet)
# --------------------------------------------------------------------------------------------------
_LOAD_LIBRARY_SEARCH_SYSTEM32 = 0x00000800


def _load_windows(path: str) -> Mapped:
    import ctypes

    if not path or not os.path.isabs(path):
        raise Refused(path, "relative", f"refusing to load a relative path: {path!r}")
    try:
        handle = ctypes.WinDLL(path)  # type: ignore[attr-defined]
    except OSError as exc:
        raise LoadFailed(path, str(exc)) from None
    return Mapped(path, path, handle, "", 0, path, ())


def windows_kernel32() -> ctypes.CDLL | None:
    """kernel32, which every Windows process already has mapped (a lookup, not a load)."""
    if sys.platform != "win32":
        return None
    import ctypes

    try:
        return ctypes.WinDLL("kernel32", use_last_error=True)
    except OSError:
        return None


def windows_system_dll_loads(dll: str) -> bool:
    """Windows: does ``dll`` load from System32 alone (never the current or the program's directory)?"""
    kernel32 = windows_kernel32()
    if kernel32 is None:
        return False
    import ctypes

    load_ex = kernel32.LoadLibraryExW
    load_ex.restype = ctypes.c_void_p
    return bool(load_ex(dll, None, _LOAD_LIBRARY_SEARCH_SYSTEM32))
