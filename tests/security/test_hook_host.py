"""``import ortdoctor.hook`` in someone's program: its cache cannot be turned against the user, and it
leaves the program as it found it.

* a cache directory another user created first (with symlinks at the temporary names) is not used, and
  the user's file the symlinks point at is untouched;
* a cache file with a valid head and a 3 GB sparse tail is not served;
* a write that fails (a file-size limit) leaves no temporary file;
* under ``-W error`` (``-X dev``, ``PYTHONWARNINGS=error``, and through the ``.pth`` hook) the import never
  raises, prints nothing to stdout and leaves no thread or signal handler; ``ORTDOCTOR_STRICT=1`` still
  raises, as documented.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.preloading.hook_install import PTH_NAME, PTH_TEXT
from tests.faults import helpers
from tests.faults.conftest import Case

ATTACKER = 12345
HOOK_IDS = ("import json, ortdoctor.hook as h\n"
            "print(json.dumps([f.id for f in h.result.findings] if h.result else None))\n")


def _hook_env(case: Case, extra: dict[str, str | None]) -> dict[str, str]:
    env = helpers.clean_env({"ORTDOCTOR_CACHE": None, **extra})
    env["PYTHONPATH"] = os.pathsep.join([str(helpers.ROOT), str(case.site)])
    return env


def _run(case: Case, argv: list[str], extra: dict[str, str | None], **kwargs: object) -> subprocess.CompletedProcess[str]:
    proc: subprocess.CompletedProcess[str] = subprocess.run(  # type: ignore[call-overload]
        argv, cwd=case.cwd, env=_hook_env(case, extra), capture_output=True, text=True, timeout=helpers.TIMEOUT,
        **kwargs)
    return proc


# --------------------------------------------------------------------------------------------------
# The cache
# --------------------------------------------------------------------------------------------------
def test_cache_directory_created_by_another_user_cannot_redirect_the_write(case: Case) -> None:
    victim = helpers.nobody()
    if victim is None or os.getuid() != 0:
        pytest.skip("needs root and a `nobody` user")
    found = helpers.unprivileged_python(victim)
    if found is None:
        pytest.skip("no interpreter the `nobody` user can run ortdoctor with")
    python = found[0]
    case.gpu_site()
    shared = case.base / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # a shared cache home, /tmp-like
    home = case.base / "home"
    home.mkdir()
    bashrc = home / ".bashrc"
    bashrc.write_text("echo my bashrc\n")
    for p in (home, bashrc):
        os.chown(p, *victim)
    os.chmod(home, 0o700)
    # the attacker is first: <shared>/ortdoctor, theirs, writable by everyone
    planted_dir = shared / "ortdoctor"
    planted_dir.mkdir()
    os.chown(planted_dir, ATTACKER, ATTACKER)
    os.chmod(planted_dir, 0o777)

    def as_victim(env: dict[str, str | None]) -> helpers.Result:
        res = helpers.run_cli([], sites=[case.site], cwd=case.cwd, as_user=victim,
                              env={"ORTDOCTOR_CACHE": None, **env},
                              argv0=[python, "-c", HOOK_IDS])
        assert res.returncode == 0, res.text
        return res

    # the name the victim's cache file gets (the key does not depend on the directory)
    private = home / "private-cache"
    as_victim({"ORTDOCTOR_CACHE_DIR": str(private)})
    (name,) = [p.name for p in private.iterdir()]
    # what the attacker can do in a directory they own: a symlink at the file's name and at every temporary
    # name the next few thousand processes would use
    last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
    for target in [planted_dir / name, *(planted_dir / f"{name}.{pid}.tmp" for pid in range(last + 1, last + 3000))]:
        target.symlink_to(bashrc)
        os.lchown(target, ATTACKER, ATTACKER)
    before = sorted(os.listdir(planted_dir))

    res = as_victim({"XDG_CACHE_HOME": str(shared)})
    assert bashrc.read_bytes() == b"echo my bashrc\n"
    assert sorted(os.listdir(planted_dir)) == before
    assert "hook-cache-ignored" in json.loads(res.stdout), res.text


def _write_cache(case: Case, cache: Path) -> Path:
    res = _run(case, [sys.executable, "-c", "import ortdoctor.hook"], {"ORTDOCTOR_CACHE_DIR": str(cache)})
    assert res.returncode == 0, res.stderr
    (cache_file,) = list(cache.glob("hook-*.bin"))
    return cache_file


def test_a_cache_file_with_a_huge_tail_is_not_served(case: Case, tmp_path: Path) -> None:
    case.gpu_site()
    cache = tmp_path / "cache"
    cache_file = _write_cache(case, cache)
    with cache_file.open("r+b") as f:
        f.truncate(3 * 1024**3)  # sparse: a valid head, then 3 GB of holes
    res = _run(case, [sys.executable, "-c", "import ortdoctor.hook as h; print(h._cached_json is not None)"],
               {"ORTDOCTOR_CACHE_DIR": str(cache)})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"  # the full path ran
    assert cache_file.stat().st_size < 1024 * 1024  # and wrote a fresh cache


def test_a_cache_file_with_trailing_bytes_is_not_served(case: Case, tmp_path: Path) -> None:
    case.gpu_site()
    cache = tmp_path / "cache"
    cache_file = _write_cache(case, cache)
    with cache_file.open("ab") as f:
        f.write(b"\0")
    res = _run(case, [sys.executable, "-c", "import ortdoctor.hook as h; print(h._cached_json is not None)"],
               {"ORTDOCTOR_CACHE_DIR": str(cache)})
    assert res.stdout.strip() == "False", res.stderr


def test_a_failed_cache_write_leaves_no_temporary_file(case: Case, tmp_path: Path) -> None:
    case.gpu_site()
    cache = tmp_path / "cache"

    def small_files() -> None:  # the interpreter ignores SIGXFSZ: a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    res = _run(case, [sys.executable, "-c", "import ortdoctor.hook"], {"ORTDOCTOR_CACHE_DIR": str(cache)},
               preexec_fn=small_files)
    assert res.returncode == 0, res.stderr
    assert cache.is_dir()
    assert list(cache.iterdir()) == []
    assert cache.stat().st_mode & 0o777 == 0o700


# --------------------------------------------------------------------------------------------------
# The program under -W error
# --------------------------------------------------------------------------------------------------
UNTOUCHED = """import signal, sys, threading
before = {s: signal.getsignal(s) for s in signal.valid_signals()}
filters = list(__import__("warnings").filters)
import ortdoctor.hook
assert {s: signal.getsignal(s) for s in signal.valid_signals()} == before, "signal handlers changed"
assert threading.active_count() == 1, threading.enumerate()
assert list(__import__("warnings").filters) == filters, "warning filters changed"
print("after")
"""


def _site_missing_a_library(case: Case) -> None:
    site = case.gpu_site()
    (site / helpers.CU13_LIB / "libcublasLt.so.13").unlink()


@pytest.mark.parametrize("how", [("-W", "error"), ("-X", "dev", "-W", "error"), ("PYTHONWARNINGS",)],
                         ids=["W-error", "X-dev", "PYTHONWARNINGS"])
def test_the_hook_does_not_raise_under_warnings_as_errors(case: Case, how: tuple[str, ...]) -> None:
    _site_missing_a_library(case)
    env: dict[str, str | None] = {"PYTHONWARNINGS": "error"} if how == ("PYTHONWARNINGS",) else {}
    flags = [] if how == ("PYTHONWARNINGS",) else list(how)
    res = _run(case, [sys.executable, *flags, "-c", UNTOUCHED], env)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "after\n"  # nothing of the hook's on stdout
    assert "OrtdoctorWarning" in res.stderr
    assert "cuda-lib-missing" in res.stderr
    assert helpers.TRACEBACK not in res.stderr, res.stderr


def test_the_pth_hook_does_not_raise_under_warnings_as_errors(case: Case, tmp_path: Path) -> None:
    _site_missing_a_library(case)
    pth_dir = tmp_path / "pth"
    pth_dir.mkdir()
    (pth_dir / PTH_NAME).write_text(PTH_TEXT)
    res = _run(case, [sys.executable, "-W", "error", "-c",
                      f"import site; site.addsitedir({str(pth_dir)!r}); print('after')"], {})
    assert res.returncode == 0, res.stderr
    assert res.stdout == "after\n"
    assert "Error processing line" not in res.stderr, res.stderr
    assert "OrtdoctorWarning" in res.stderr


def test_strict_still_raises(case: Case) -> None:
    _site_missing_a_library(case)
    res = _run(case, [sys.executable, "-W", "error", "-c", "import ortdoctor.hook"], {"ORTDOCTOR_STRICT": "1"})
    assert res.returncode == 1
    assert "PreloadError" in res.stderr
