"""``import ortdoctor.hook`` and ``ortdoctor hook install/uninstall``, each case in a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.preloading import hook_install
from tests.support import testenvs
from tests.test_preload_helpers import MAPS_SNIPPET, ROOT, build_fake_site, child_json, run_child

HOOK_AND_REPORT = MAPS_SNIPPET + """
import sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    import ortdoctor.hook
    import ortdoctor.hook  # a second import does nothing
res = ortdoctor.hook.result
print(json.dumps({
    "loaded": [x.path for x in res.loaded] if res else None,
    "warnings": [(w.category.__name__, str(w.message)) for w in caught],
    "cuda_mapped": [p for p in _mapped() if '/nvidia/' in p],
    "heavy": sorted(m for m in sys.modules if m.split('.')[0] in ('onnxruntime', 'torch', 'click', 'yaml')),
}))
"""


def test_hook_is_silent_on_success_and_imports_nothing_heavy(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    got = child_json(run_child(HOOK_AND_REPORT, pythonpath=[site]))
    assert got["warnings"] == []
    assert got["heavy"] == []
    assert sorted(got["loaded"]) == sorted(got["cuda_mapped"])
    assert len(got["loaded"]) == 7


def test_hook_disabled(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    got = child_json(run_child(HOOK_AND_REPORT, pythonpath=[site], env={"ORTDOCTOR_DISABLE": "1"}))
    assert got["loaded"] is None
    assert got["cuda_mapped"] == []
    assert got["warnings"] == []


def test_hook_respects_ortdoctor_directory(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    own = build_fake_site(tmp_path / "own", ort=False) / "nvidia" / "cu13" / "lib"
    got = child_json(run_child(HOOK_AND_REPORT, pythonpath=[site], env={"ORTDOCTOR_DIRECTORY": str(own)}))
    cudart = [p for p in got["loaded"] if p.endswith("libcudart.so.13")]
    assert cudart == [str(own / "libcudart.so.13")]


def test_hook_warns_once_with_id_and_fix(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site", cuda_libs=("libcurand.so.10",), cudnn=False)
    got = child_json(run_child(HOOK_AND_REPORT, pythonpath=[site]))
    assert len(got["warnings"]) == 1
    category, message = got["warnings"][0]
    assert category == "OrtdoctorWarning"
    assert message.startswith("ortdoctor [cuda-lib-missing]")
    assert f"Fix: {sys.executable} -m pip install 'onnxruntime-gpu[cuda,cudnn]" in message


def test_hook_strict_raises(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site", cuda_libs=("libcurand.so.10",), cudnn=False)
    proc = run_child("import ortdoctor.hook", pythonpath=[site], env={"ORTDOCTOR_STRICT": "1"})
    assert proc.returncode == 1
    assert "PreloadError: ortdoctor could not load" in proc.stderr


def test_hook_nonexistent_directory_warns_instead_of_raising(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    got = child_json(run_child(HOOK_AND_REPORT, pythonpath=[site],
                               env={"ORTDOCTOR_DIRECTORY": str(tmp_path / "nope")}))
    assert len(got["warnings"]) == 1
    assert "does not exist" in got["warnings"][0][1]


def test_hook_survives_a_broken_install(tmp_path: Path) -> None:
    code = """
import sys, warnings
sys.modules['ortdoctor.preloading.preloader'] = None  # the import system now raises ImportError for it
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    import ortdoctor.hook
print([str(w.message)[:40] for w in caught])
"""
    proc = run_child(code, pythonpath=[])
    assert proc.returncode == 0, proc.stderr
    assert "ortdoctor [ortdoctor-broken]" in proc.stdout


def test_hook_is_thread_safe_and_runs_once(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    code = """
import json, threading, ortdoctor.hook as h
results = []
threads = [threading.Thread(target=lambda: results.append(h.run())) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"same": all(r is h.result for r in results), "n": len(results)}))
"""
    got = child_json(run_child(code, pythonpath=[site]))
    assert got == {"same": True, "n": 8}


# ---------------------------------------------------------------------------------------------------
# .pth install / uninstall
# ---------------------------------------------------------------------------------------------------
def test_install_uninstall_roundtrip(tmp_path: Path) -> None:
    site_dir = tmp_path / "site-packages"
    site_dir.mkdir()
    path = hook_install.install(str(site_dir))
    assert path == str(site_dir / "ortdoctor_hook.pth")
    assert "__import__('ortdoctor.hook')" in Path(path).read_text()
    assert hook_install.install(str(site_dir)) == path  # idempotent
    assert os.listdir(site_dir) == ["ortdoctor_hook.pth"]
    assert hook_install.uninstall(str(site_dir)) == path
    assert hook_install.uninstall(str(site_dir)) is None
    assert os.listdir(site_dir) == []


def test_install_refuses_a_foreign_file_and_a_missing_dir(tmp_path: Path) -> None:
    (tmp_path / "ortdoctor_hook.pth").write_text("import something_else\n")
    with pytest.raises(hook_install.HookInstallError, match="not written by ortdoctor"):
        hook_install.install(str(tmp_path))
    with pytest.raises(hook_install.HookInstallError, match="not written by ortdoctor"):
        hook_install.uninstall(str(tmp_path))
    assert (tmp_path / "ortdoctor_hook.pth").read_text() == "import something_else\n"
    with pytest.raises(hook_install.HookInstallError, match="does not exist"):
        hook_install.install(str(tmp_path / "nope"))


def test_installed_pth_runs_the_hook_at_interpreter_start(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    pth_dir = tmp_path / "pth-site"
    pth_dir.mkdir()
    proc = run_child(
        "import sys; from ortdoctor.cli.main import main; "
        f"sys.argv = ['ortdoctor', 'hook', 'install', '--site-dir', {str(pth_dir)!r}]; main()",
        pythonpath=[site])
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {pth_dir / 'ortdoctor_hook.pth'}" in proc.stdout
    # a new interpreter that processes that site directory runs the hook before user code
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORTDOCTOR_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    env["ORTDOCTOR_CACHE"] = "0"
    code = (f"import site, sys; site.addsitedir({str(pth_dir)!r}); import json; "
            "print(json.dumps(['ortdoctor.hook' in sys.modules, len(sys.modules['ortdoctor.hook'].result.loaded)]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert json.loads(out.stdout) == [True, 7], out.stderr
    proc = run_child(
        "import sys; from ortdoctor.cli.main import main; "
        f"sys.argv = ['ortdoctor', 'hook', 'uninstall', '--site-dir', {str(pth_dir)!r}]; main()",
        pythonpath=[])
    assert f"removed {pth_dir / 'ortdoctor_hook.pth'}" in proc.stdout
    assert os.listdir(pth_dir) == []


def test_hook_install_refuses_where_there_is_nothing_to_preload(tmp_path: Path) -> None:
    # a CPU-only onnxruntime: the hook would warn at every interpreter start, so install says why and stops
    pth_dir = tmp_path / "pth-site"
    pth_dir.mkdir()
    install = ("import sys; from ortdoctor.cli.main import main; "
               f"sys.argv = ['ortdoctor', 'hook', 'install', '--site-dir', {str(pth_dir)!r}] + sys.argv[1:]; main()")
    proc = run_child(install, pythonpath=[testenvs.ensure("ort-cpu")])
    assert proc.returncode == 1
    assert "no CUDA build of onnxruntime is installed here" in proc.stderr
    assert "[ort-cpu-only]" in proc.stderr
    assert "pip install 'onnxruntime-gpu[cuda,cudnn]" in proc.stderr
    assert os.listdir(pth_dir) == []
    forced = subprocess.run([sys.executable, "-c", install, "--force"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert forced.returncode == 0, forced.stderr
    assert os.listdir(pth_dir) == ["ortdoctor_hook.pth"]


def test_strict_names_the_problem_and_its_fix(tmp_path: Path) -> None:
    proc = run_child("import ortdoctor.hook", pythonpath=[testenvs.ensure("ort-cpu")], env={"ORTDOCTOR_STRICT": "1"})
    assert proc.returncode == 1
    assert "PreloadError: ortdoctor [ort-cpu-only]: " in proc.stderr
    assert "Fix: " in proc.stderr
    assert "see findings" not in proc.stderr


def test_fast_path_replays_a_clean_decision_and_is_invalidated_by_changes(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    cache = tmp_path / "cache"
    code = MAPS_SNIPPET + """
import sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    import ortdoctor.hook
full = 'ortdoctor.preloading.preloader' in sys.modules
res = ortdoctor.hook.result
print(json.dumps({"loaded": [x.path for x in res.loaded], "warnings": [str(w.message) for w in caught],
                  "cuda_mapped": [p for p in _mapped() if '/nvidia/' in p]}))
print(json.dumps(full))
"""
    env = {"ORTDOCTOR_CACHE": "1", "ORTDOCTOR_CACHE_DIR": str(cache)}

    def once() -> tuple[dict[str, Any], bool]:
        proc = run_child(code, pythonpath=[site], env=env)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.strip().splitlines()
        return json.loads(lines[-2]), json.loads(lines[-1])

    first, full = once()
    assert full is True  # the full path ran and wrote the cache
    assert len(os.listdir(cache)) == 1
    second, full = once()
    assert full is False  # replayed without importing the resolver or the preloader
    assert second["cuda_mapped"] == first["cuda_mapped"]
    assert sorted(second["loaded"]) == sorted(first["loaded"])  # the result, rebuilt from the cache
    assert second["warnings"] == []
    # a new library in a searched directory changes its mtime: the full path runs again
    (site / "nvidia" / "cu13" / "lib" / "libextra.so.1").write_bytes(b"")
    _third, full = once()
    assert full is True
    # a different LD_LIBRARY_PATH is a different cache entry
    env["LD_LIBRARY_PATH"] = str(tmp_path)
    _fourth, full = once()
    assert full is True
    assert len(os.listdir(cache)) == 2


def test_fast_path_ignores_a_cache_file_others_can_write(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    cache = tmp_path / "cache"
    env = {"ORTDOCTOR_CACHE": "1", "ORTDOCTOR_CACHE_DIR": str(cache)}
    code = "import sys, ortdoctor.hook; print('ortdoctor.preloading.preloader' in sys.modules)"
    assert run_child(code, pythonpath=[site], env=env).stdout.strip() == "True"
    (entry,) = cache.iterdir()
    assert entry.stat().st_mode & 0o777 == 0o600
    assert run_child(code, pythonpath=[site], env=env).stdout.strip() == "False"
    entry.chmod(0o666)
    assert run_child(code, pythonpath=[site], env=env).stdout.strip() == "True"


def test_the_pth_name_is_the_one_the_probe_looks_for() -> None:
    from ortdoctor.preloading.hook_install import PTH_NAME
    from ortdoctor.probes.platform import HOOK_PTH

    assert PTH_NAME == HOOK_PTH
