"""ortdoctor executes no file it inspects and starts no process but its own smoke child.

The real CLI runs under a ``sys.addaudithook`` recorder (a small driver script) that sees every process
start (subprocess.Popen, os.system, os.exec*, os.posix_spawn, os.spawn*, os.fork), every code object
executed or compiled from a file, every import, every ``dlopen`` and every file opened for writing. The
inspected tree holds hostile files (build_and_package_info.py, torch/version.py, METADATA, a .pth)
that would leave a PWNED marker if anything ever ran them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.faults import helpers
from tests.faults.conftest import Case
from tests.faults.test_build_info import assert_never_executed, hostile_source
from tests.support.fake_site import install_dist

RECORDER = r'''
import atexit, json, os, sys
TREES = [os.path.realpath(p) + os.sep for p in sys.argv[1].split(os.pathsep)]
OUT = sys.argv[2]
seen = {"spawn": [], "executed": [], "compiled": [], "imported": [], "dlopen": [], "writes": []}
SPAWN = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
         "pty.spawn", "os.startfile"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

def inside(path):
    try:
        p = os.fsdecode(path)
    except Exception:
        return False
    if not os.path.isabs(p):  # "<string>", "<frozen ...>": not a file
        return False
    p = os.path.normpath(p)
    return any((p + os.sep).startswith(t) for t in TREES)

def hook(event, args):
    if event in SPAWN:
        seen["spawn"].append([event, [os.fsdecode(a) if isinstance(a, (str, bytes)) else repr(a) for a in
                                      (args[1] if event == "subprocess.Popen" and args[1] else args)][:4]])
    elif event == "exec":
        name = getattr(args[0], "co_filename", "")
        if inside(name):
            seen["executed"].append(name)
    elif event == "compile":
        if len(args) > 1 and isinstance(args[1], (str, bytes)) and inside(args[1]):
            seen["compiled"].append(os.fsdecode(args[1]))
    elif event == "import":
        if len(args) > 1 and args[1] and inside(args[1]):
            seen["imported"].append(str(args[1]))
    elif event == "ctypes.dlopen":
        seen["dlopen"].append(os.fsdecode(args[0]) if args and args[0] is not None else None)
    elif event == "open":
        path, mode, flags = args[0], args[1], args[2]
        if isinstance(path, int) or path is None:
            return
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and mode is None and flags & WRITE_FLAGS)
        if writing and inside(path):
            seen["writes"].append(os.fsdecode(path))

def dump():
    sys.addaudithook(lambda *a: None)
    with open(OUT, "w") as f:
        json.dump(seen, f)

atexit.register(dump)
sys.addaudithook(hook)
sys.argv = ["ortdoctor", *sys.argv[3:]]
from ortdoctor.cli.main import main
main()
'''


def _hostile_tree(case: Case) -> Path:
    site = case.gpu_site()
    hostile = hostile_source(case.base)
    (site / helpers.BUILD_INFO).write_text(hostile.replace("cuda_version = __import__('os').getcwd()\n", "")
                                           + "cuda_version = '13.0'\n")
    install_dist(site, "torch", "2.11.0+cu130", {
        "torch/__init__.py": hostile.encode(),
        "torch/version.py": hostile.encode() + b"__version__ = '2.11.0+cu130'\ncuda = '13.0'\n",
    }, requires=("nvidia-cudnn-cu13==9.19.0.56",))
    meta = site / helpers.ORT_DIST_INFO / "METADATA"
    meta.write_text(meta.read_text() + hostile)
    (site / "hostile.pth").write_text("import os; os.system('touch PWNED')\n")
    return site


def _record(case: Case, tmp_path: Path, *args: str, env: dict[str, str | None] | None = None) -> dict[str, Any]:
    recorder = tmp_path / "recorder.py"
    recorder.write_text(RECORDER)
    out = tmp_path / "events.json"
    trees = f"{case.base}"
    before = helpers.snapshot(case.base)
    res = helpers.run_cli(list(args), sites=[case.site], cwd=case.cwd, env=env,
                          argv0=[sys.executable, "-P", str(recorder), trees, str(out)])
    helpers.assert_unchanged(before, helpers.snapshot(case.base))
    assert res.returncode in (0, 1), res.text
    events: dict[str, Any] = json.loads(out.read_text())
    events["_result"] = res
    return events


def _assert_nothing_ran(case: Case, events: dict[str, Any]) -> None:
    assert events["executed"] == [], events["executed"]
    assert events["compiled"] == [], events["compiled"]
    assert events["imported"] == [], events["imported"]
    assert events["writes"] == [], events["writes"]
    assert_never_executed(case)


def test_check_without_smoke_executes_nothing_and_spawns_nothing(case: Case, tmp_path: Path) -> None:
    _hostile_tree(case)
    events = _record(case, tmp_path, "check", "--json", "--no-smoke")
    _assert_nothing_ran(case, events)
    assert events["spawn"] == [], events["spawn"]
    # nothing from the inspected tree is loaded either: inspecting reads headers
    assert not [d for d in events["dlopen"] if d and d.startswith(str(case.base))], events["dlopen"]
    report = events["_result"].data
    assert report["torch"]["version"].startswith("2.11.0")
    assert report["ort"]["cuda_version"] == "13.0"


def test_check_with_smoke_spawns_only_its_own_child(case: Case, tmp_path: Path) -> None:
    _hostile_tree(case)
    events = _record(case, tmp_path, "check", "--json", "--timeout", "30")
    _assert_nothing_ran(case, events)
    assert len(events["spawn"]) == 1, events["spawn"]
    event, argv = events["spawn"][0]
    assert event == "subprocess.Popen"
    assert argv[0] == sys.executable, argv
    assert argv[1] == "-c", argv
    assert "ortdoctor.prove.smoke.child" in argv[2], argv
    assert events["_result"].data["smoke"]["ran"] is True


def test_preload_executes_nothing_and_loads_only_the_planned_files(case: Case, tmp_path: Path) -> None:
    site = _hostile_tree(case)
    events = _record(case, tmp_path, "preload", "--json", "--directory", "")
    _assert_nothing_ran(case, events)
    assert events["spawn"] == []
    loaded = {x["path"] for x in events["_result"].data["loaded"]}
    by_path = [d for d in events["dlopen"] if d and "/" in d]
    assert all(d.startswith("/") for d in by_path), by_path  # never a relative path
    assert not [d for d in by_path if d.startswith(str(case.cwd))]
    from_tree = {d for d in by_path if d.startswith(str(site))}
    assert from_tree == loaded, (from_tree, loaded)


def test_hook_executes_nothing_and_spawns_nothing(case: Case, tmp_path: Path) -> None:
    _hostile_tree(case)
    hook_driver = tmp_path / "hook_driver.py"
    hook_driver.write_text("import ortdoctor.hook\n")
    recorder = RECORDER.replace('sys.argv = ["ortdoctor", *sys.argv[3:]]\nfrom ortdoctor.cli.main import main\nmain()\n',
                                "import ortdoctor.hook\n")
    (tmp_path / "recorder.py").write_text(recorder)
    out = tmp_path / "events.json"
    before = helpers.snapshot(case.base)
    res = helpers.run_cli([], sites=[case.site], cwd=case.cwd,
                          argv0=[sys.executable, "-P", str(tmp_path / "recorder.py"), str(case.base), str(out)])
    helpers.assert_unchanged(before, helpers.snapshot(case.base))
    assert res.returncode == 0, res.text
    events = json.loads(out.read_text())
    _assert_nothing_ran(case, events)
    assert events["spawn"] == []
