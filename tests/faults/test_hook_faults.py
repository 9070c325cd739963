"""``import ortdoctor.hook`` under stress: from 32 threads at once, twice, with ortdoctor's own
dependencies missing, with a broken ortdoctor install, with a directory that does not exist."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.faults import helpers
from tests.faults.conftest import Case
from tests.faults.helpers import Result

PRELUDE = r'''
import json, os, sys, threading, warnings
warnings.simplefilter("always")
caught = []
warnings.showwarning = lambda message, category, *a, **k: caught.append(f"{category.__name__}: {message}")

def mapped():
    out = []
    with open("/proc/self/maps") as f:
        lines = f.read().splitlines()
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
            p = parts[5].strip()
            if p not in out:
                out.append(p)
    return out
'''

THREADS = PRELUDE + r'''
import ortdoctor.preloading.preloader as preloader
passes = []
real_preload = preloader.preload
def counting_preload(*args, **kwargs):  # observe how many load passes run; the logic is untouched
    passes.append(threading.get_ident())
    return real_preload(*args, **kwargs)
preloader.preload = counting_preload

barrier = threading.Barrier(32)
errors, results = [], []
def worker(i):
    try:
        barrier.wait()
        import ortdoctor.hook as hook
        results.append(hook.run() if i % 2 else hook.result)
    except BaseException as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=worker, args=(i,)) for i in range(32)]
for t in threads: t.start()
for t in threads: t.join()
import ortdoctor.hook  # and a second import
import ortdoctor.hook as again
again.run()
hook_passes = len(passes)

# the API itself from 32 threads at once: every call answers, none raises, all agree
import ortdoctor
api_errors, api_loaded = [], []
barrier2 = threading.Barrier(32)
def api_worker():
    try:
        barrier2.wait()
        r = ortdoctor.preload(directory="")
        api_loaded.append(sorted((x.name, x.path) for x in r.loaded))
    except BaseException as exc:
        api_errors.append(repr(exc))
threads = [threading.Thread(target=api_worker) for _ in range(32)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({
    "errors": errors, "hook_passes": hook_passes, "distinct_results": len({id(r) for r in results}),
    "results": len(results), "loaded": sorted(x.path for x in results[0].loaded) if results[0] else None,
    "api_errors": api_errors, "api_variants": len({json.dumps(x) for x in api_loaded}), "api_calls": len(api_loaded),
    "warnings": caught, "mapped": mapped()}))
'''

BLOCKED = PRELUDE + r'''
BLOCK = set(sys.argv[1].split(","))
class Blocker:  # as if these distributions were never installed
    def find_spec(self, name, path=None, target=None):
        if name in BLOCK or name.split(".")[0] in BLOCK:
            raise ImportError(f"No module named {name!r} (blocked by the test)")
        return None
sys.meta_path.insert(0, Blocker())
for name in list(sys.modules):
    if name.split(".")[0] in BLOCK:
        del sys.modules[name]
import ortdoctor.hook as hook
hook.run()
r = hook.result
print(json.dumps({"warnings": caught, "loaded": sorted(x.name for x in r.loaded) if r else None,
                  "failed": [x.name for x in r.failed] if r else None,
                  "blocked_imported": sorted(n for n in BLOCK if n in sys.modules)}))
'''


def _driver(case: Case, code: str, *args: str, env: dict[str, str | None] | None = None) -> dict[str, Any]:
    script = case.base / "driver" / "driver.py"
    script.parent.mkdir()
    script.write_text(code)
    res = _run_script(case, script, args, env)
    assert res.returncode == 0, res.text
    data: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return data


def _run_script(case: Case, script: Path, args: tuple[str, ...], env: dict[str, str | None] | None) -> Result:
    before = helpers.snapshot(case.base)
    res = helpers.run_cli(list(args), sites=[case.site], cwd=case.cwd, env=env, argv0=[sys.executable, str(script)])
    helpers.assert_unchanged(before, helpers.snapshot(case.base))
    return res


def test_hook_from_32_threads_at_once_and_twice(case: Case) -> None:
    site = case.gpu_site()
    got = _driver(case, THREADS)
    assert got["errors"] == []
    assert got["api_errors"] == []
    assert got["hook_passes"] == 1  # one load pass, whatever the number of threads and imports
    assert got["results"] == 32
    assert got["distinct_results"] == 1
    assert got["api_calls"] == 32
    assert got["api_variants"] == 1
    assert got["warnings"] == []
    want = {str(site / "nvidia/cu13/lib/libcudart.so.13"), str(site / "nvidia/cudnn/lib/libcudnn.so.9")}
    assert want <= set(got["loaded"])
    assert want <= set(got["mapped"])
    # each library is mapped from one file only, however many threads loaded it
    names = [p.rsplit("/", 1)[-1] for p in got["mapped"] if "/nvidia/" in p]
    assert len(names) == len(set(names)), names


def test_hook_without_its_dependencies(case: Case) -> None:
    """yaml, click, pynvml, packaging and importlib_metadata missing: the hook still preloads."""
    case.gpu_site()
    got = _driver(case, BLOCKED, "yaml,click,pynvml,packaging,importlib_metadata")
    assert len(got["warnings"]) <= 1, got["warnings"]
    assert got["blocked_imported"] == []
    assert {"cudart", "cublas", "cudnn"} <= set(got["loaded"])


def test_hook_with_a_broken_ortdoctor_install_warns_once(case: Case) -> None:
    case.gpu_site()
    got = _driver(case, BLOCKED, "yaml,click,pynvml,packaging,ortdoctor.preloading.loader")
    assert len(got["warnings"]) == 1, got["warnings"]
    assert "OrtdoctorWarning" in got["warnings"][0]
    assert "ortdoctor-broken" in got["warnings"][0]
    assert got["loaded"] is None


def test_hook_with_a_directory_that_does_not_exist_warns_once(case: Case) -> None:
    case.gpu_site()
    got = _driver(case, BLOCKED, "nothing", env={"ORTDOCTOR_DIRECTORY": str(case.base / "no-such-dir")})
    assert len(got["warnings"]) == 1, got["warnings"]
    assert "no-such-dir" in got["warnings"][0]


def test_hook_with_missing_libraries_warns_once(case: Case) -> None:
    site = case.gpu_site()
    for lib in (site / "nvidia/cu13/lib").iterdir():
        lib.unlink()
    got = _driver(case, BLOCKED, "nothing")
    assert len(got["warnings"]) == 1, got["warnings"]
    assert "OrtdoctorWarning" in got["warnings"][0]
    assert "Fix:" in got["warnings"][0]
