"""``import ortdoctor.hook``: preload the right CUDA/cuDNN libraries once, before the first session.

* silent when everything loaded; one :class:`OrtdoctorWarning` (finding id and fix) when not;
* imports neither onnxruntime nor torch, and nothing of ortdoctor's CLI;
* idempotent and thread-safe: a second import, or :func:`run` from another thread, does nothing;
* never raises, unless ``ORTDOCTOR_STRICT=1``; ``ORTDOCTOR_DISABLE=1`` turns it off;
* ``ORTDOCTOR_DIRECTORY`` is the ``directory`` argument: unset = default order, empty = NVIDIA wheels
  then the system, a path = that directory then the system.
* ``ORTDOCTOR_TENSORRT=1`` also loads the TensorRT libraries the TensorRT EP links, after the CUDA set.
* ``ORTDOCTOR_ALLOW_UNSAFE_DIR`` (absolute directories, separated by ``:``) is ``--allow-unsafe-dir``: the
  refusal of directories others can write or own is lifted for the libraries under those directories only,
  and each library it lets through is named in the hook's warning (``unsafe-dir-allowed``), at every start.
  A relative entry is ignored (it would widen with the current directory). There is no broad form.

Fast path: after a clean run (everything loaded, nothing to warn about) the hook remembers its
decision in a small file in the user's cache directory (``$ORTDOCTOR_CACHE_DIR``, else
``$XDG_CACHE_HOME/ortdoctor``, else ``~/.cache/ortdoctor``; ``ORTDOCTOR_CACHE=0`` turns it off). The
next interpreter with the same executable, ``sys.path`` and environment variables reuses it only if
every directory that was searched, every site directory, ``/etc/ld.so.cache`` and every chosen file
still have the same modification time (and the files the same inode), and none of the libraries is
already loaded; it then dlopens the same absolute paths through the gate and checks ``/proc/self/maps``
once, after the batch, for their devices and inodes. Anything else takes the full path. So the hook
costs about what the dlopens cost.

The outcome is :data:`result` (a :class:`~ortdoctor.preloading.preloader.PreloadResult`, or None when disabled
or when preloading could not run); on the fast path it is rebuilt from the cache when first read.
"""

from __future__ import annotations

import _thread
import os
import stat
import sys
import warnings

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs more than the whole fast path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["OrtdoctorWarning", "run"]  # and `result`, served by __getattr__

_CACHE_FORMAT = 1
_ENV_KEYS = ("ORTDOCTOR_DIRECTORY", "ORTDOCTOR_TENSORRT", "ORTDOCTOR_ALLOW_UNSAFE_DIR", "LD_LIBRARY_PATH", "CONDA_PREFIX", "CUDA_HOME", "CUDA_PATH",
             "CUDNN_PATH")


class OrtdoctorWarning(UserWarning):
    """Something is wrong with the CUDA/cuDNN libraries onnxruntime-gpu will use."""


_result: Any = None  # PreloadResult | None
_cached_json: dict[str, Any] | None = None  # the fast path's result, turned into PreloadResult when read
_done = False
_lock = _thread.allocate_lock()  # threading.Lock without importing threading


def __getattr__(name: str) -> Any:
    if name == "result":
        return _current_result()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _current_result() -> Any:
    global _result, _cached_json
    if _result is None and _cached_json is not None:
        from ortdoctor.preloading.preloader import result_from_json

        _result, _cached_json = result_from_json(_cached_json), None
    return _result


def _warn(message: str) -> None:
    """The hook's one voice (stderr, through the warnings machinery, so a program can filter it).

    Under ``-W error`` (or ``PYTHONWARNINGS=error``, or pytest's ``filterwarnings = error``) the warning
    would become an exception in the middle of the program's imports; the hook never raises (only
    ``ORTDOCTOR_STRICT=1`` does), so the same text is shown as a warning instead.
    """
    try:
        warnings.warn(message, OrtdoctorWarning, stacklevel=5)
    except Warning:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", OrtdoctorWarning)
                warnings.warn(message, OrtdoctorWarning, stacklevel=5)
        except Exception:
            pass  # a broken warnings.showwarning must not break the program either


def _message(res: Any) -> str | None:
    """One line for the first problem, or None when there is nothing to say."""
    serious = [f for f in res.findings if f.severity == "error"] or [
        f for f in res.findings if f.severity == "warning"]
    if not serious and not res.failed:
        return None
    if any(f.id == "ort-not-installed" for f in res.findings) and not res.failed:
        return None  # no onnxruntime at all: nothing to preload, nothing to say
    first = serious[0] if serious else None
    more = len(serious) - 1 + (len(res.failed) if not serious else 0)
    if first is None:
        f = res.failed[0]
        text = f"ortdoctor [cuda-lib-missing]: {f.soname} could not be loaded: {f.error}"
    else:
        text = f"ortdoctor [{first.id}]: {first.title}. {first.detail}"
        if first.fix:
            text += f" Fix: {first.fix}"
    if more > 0:
        text += f" ({more} more: run `ortdoctor preload` for details)"
    return text


# --------------------------------------------------------------------------------------------------
# The cache of a clean decision
# --------------------------------------------------------------------------------------------------
def _cache_key() -> str:
    paths = [p for p in sys.path if p and os.path.isabs(p)]
    env = [f"{k}={os.environ.get(k)!r}" for k in _ENV_KEYS]
    return "\0".join([sys.executable, sys.version, *env, *paths])


_MAX_CACHE_BYTES = 4 * 1024 * 1024  # a real cache file is a few KB
_cache_note: str | None = None  # why the cache was not used, reported in the result (an info finding)


def _cache_file(key: str) -> tuple[str, str] | None:
    """(the cache directory, the file's name in it), or None when the cache is off."""
    if os.environ.get("ORTDOCTOR_CACHE") == "0":
        return None
    from ortdoctor.core.user_cache import user_cache_dir

    base = user_cache_dir()
    if base is None:
        return None
    import zlib

    return base, f"hook-{zlib.crc32(key.encode('utf-8', 'surrogateescape')):08x}.bin"


def _open_cache_dir(base: str, *, create: bool) -> int | None:
    """A descriptor of the cache directory, only if it is this user's alone: a real directory (not a
    symlink), owned by the user, with no access for group or others. Every file in it is then opened
    relative to this descriptor, so swapping the path afterwards changes nothing. None (and a note)
    otherwise: another user who owns or can write the directory could plant a symlink at the temporary
    name and have the write land in any file of this user's, or forge the decision."""
    global _cache_note
    if create:
        try:
            os.makedirs(os.path.dirname(base), mode=0o700, exist_ok=True)
            os.mkdir(base, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None  # a read-only home: the full path runs at every start, silently
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(base, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        _cache_note = f"the cache directory {base} cannot be opened as a directory of its own ({exc.strerror}): not used"
        return None
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        os.close(fd)
        _cache_note = (f"the cache directory {base} is owned by uid {st.st_uid} with mode {st.st_mode & 0o7777:o}; "
                       "only a directory of this user's with mode 0700 is used")
        return None
    return fd


def _read_cache(base: str, name: str) -> Any:
    """The cached tuple, or None: a file of this user's that nobody else can write, read with a size cap,
    holding exactly one marshalled object (trailing bytes mean it is not a file this hook wrote)."""
    dfd = _open_cache_dir(base, create=False)
    if dfd is None:
        return None
    import marshal

    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0), dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
    with open(fd, "rb") as f:
        st = os.fstat(f.fileno())
        # the cache names files to load: only trust one that this user owns and nobody else can write
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return None
        if st.st_size > _MAX_CACHE_BYTES:
            return None
        data = f.read(_MAX_CACHE_BYTES + 1)
    if len(data) > _MAX_CACHE_BYTES:
        return None
    import io

    buf = io.BytesIO(data)
    value = marshal.load(buf)
    return value if buf.tell() == len(data) else None


def _stamp(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return (st.st_mtime_ns, st.st_ino)


def _try_fast_path() -> bool:
    """Load from a still-valid cached decision; False (nothing loaded) when it does not apply."""
    global _cached_json
    if not sys.platform.startswith("linux"):
        return False
    key = _cache_key()
    where = _cache_file(key)
    if where is None:
        return False
    try:
        cached = _read_cache(*where)
        if cached is None:
            return False
        fmt, cached_key, stamps, loads, result_json = cached
    except (OSError, EOFError, ValueError, TypeError):
        return False
    if fmt != _CACHE_FORMAT or cached_key != key:
        return False
    if any(_stamp(p) != tuple(s) for p, s in stamps):
        return False
    from ortdoctor.native import gate

    if gate.any_mapped(soname for soname, _lib_path, _inode in loads):
        return False  # already in the process: the full path reports where it came from
    judge = gate.Judge()  # one set of directory verdicts for the whole batch
    got = []
    for _soname, lib_path, inode in loads:
        try:
            one = gate.load(lib_path, judge=judge, prove_now=False)
        except gate.GateError:
            return False  # the full path retries and reports (what was loaded stays, and is reported as loaded)
        if one.inode != inode:
            return False
        got.append(one)
    # one read of /proc/self/maps proves every load of the batch (and gives the inodes mapped now)
    text = gate.prove(got)
    if text is None or not all(one.verified for one in got):
        return False
    # Libraries the first run saw mapped as a side effect (cuDNN maps a sub-library when its version
    # is asked) are reported only if they are mapped now too.
    kept: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    for x in result_json["loaded"]:
        (kept if x["loaded_by"] is None or (x["inode"] is not None and gate.rows_with_inode(text, x["inode"]))
         else dropped).append(x)
    result_json["loaded"] = kept
    result_json["skipped"] = [*result_json["skipped"], *(
        {"name": x["name"], "reason": f"cuDNN sub-library: {x['loaded_by']} loads it on first use"} for x in dropped)]
    _cached_json = result_json
    return True


def _write_cache(res: Any) -> None:
    key = _cache_key()
    where = _cache_file(key)
    if where is None or not res.loaded or res.failed or res.dry_run:
        return
    if any(x.source == "loaded" and x.loaded_by is None for x in res.loaded):
        return  # something was already loaded before us: not a decision to replay
    import marshal

    paths = [p for p in sys.path if p and os.path.isabs(p)]
    watched = [*paths, *res.searched, "/etc/ld.so.cache", *(x.path for x in res.loaded)]
    stamps = [(p, _stamp(p)) for p in dict.fromkeys(watched)]
    loads = [(x.soname, x.path, x.inode) for x in res.loaded if x.loaded_by is None and x.inode is not None]
    data = marshal.dumps((_CACHE_FORMAT, key, stamps, loads, res.to_json()))
    base, name = where
    dfd = _open_cache_dir(base, create=True)
    if dfd is None:
        return
    # O_EXCL|O_NOFOLLOW: a name that exists (a symlink planted at it, a stale file) is never opened
    tmp = f"{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o600, dir_fd=dfd)
    except OSError:
        os.close(dfd)
        return
    try:
        with open(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError:
        # a full disk or a file-size limit: nothing half-written is left behind
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
    finally:
        os.close(dfd)


# --------------------------------------------------------------------------------------------------
# The hook
# --------------------------------------------------------------------------------------------------
def _matrix() -> Any:
    """``$ORTDOCTOR_MATRIX`` when it can be used; else, with one warning, the shipped matrix: a typo in a
    variable must not cost the program its GPU."""
    from ortdoctor.decide.matrix.load import default_matrix_path, load_matrix
    from ortdoctor.decide.matrix.model import MatrixError

    try:
        return load_matrix()
    except MatrixError as exc:
        _warn(f"ortdoctor [preload-error]: ORTDOCTOR_MATRIX cannot be used ({exc}); the shipped matrix was "
              "used instead. Fix: correct or unset ORTDOCTOR_MATRIX")
        return load_matrix(default_matrix_path())


def _run() -> None:
    global _done
    with _lock:
        if _done:
            return
        _done = True
        if os.environ.get("ORTDOCTOR_DISABLE") == "1":
            return
        strict = os.environ.get("ORTDOCTOR_STRICT") == "1"
        try:
            _run_once(strict)
        except Exception:
            if strict:
                raise
            # Nothing the hook does may raise into the program: a warning turned into an error by a
            # filter, or a defect of ortdoctor's own, ends here.


def _run_once(strict: bool) -> None:
    global _result
    try:
        if _try_fast_path():
            return
    except Exception:
        pass
    directory = os.environ.get("ORTDOCTOR_DIRECTORY")  # None: unset; "": the NVIDIA wheels first
    try:
        from ortdoctor.preloading.preloader import preload

        allow = [d for d in os.environ.get("ORTDOCTOR_ALLOW_UNSAFE_DIR", "").split(os.pathsep) if os.path.isabs(d)]
        _result = preload(directory=directory, matrix=_matrix(),
                          tensorrt=os.environ.get("ORTDOCTOR_TENSORRT") == "1", allow_unsafe_dirs=allow)
    except ImportError as exc:  # a broken ortdoctor install must not break the user's program
        if strict:
            raise
        _warn(f"ortdoctor [ortdoctor-broken]: the hook could not import its modules ({exc}). "
              "Fix: pip install --force-reinstall ortdoctor")
        return
    except Exception as exc:
        if strict:
            raise
        _warn(f"ortdoctor [preload-error]: preloading failed: {type(exc).__name__}: {exc}")
        return
    if _cache_note is not None:
        from ortdoctor.core.catalog import make

        _result.findings.append(make("hook-cache-ignored", _cache_note))
    message = _message(_result)
    if message:
        if strict:
            from ortdoctor.preloading.preloader import PreloadError

            raise PreloadError(_result)
        _warn(message)
        return
    _write_cache(_result)


def run() -> Any:
    """Preload once per process; returns the result (later calls return the first one)."""
    _run()
    return _current_result()


_run()
