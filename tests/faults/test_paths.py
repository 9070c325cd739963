"""Odd paths and search paths: unreadable directories (as an unprivileged user), non-UTF-8 and very
long paths, LD_LIBRARY_PATH with empty, relative, undecodable and thousands of entries."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from tests.faults import helpers
from tests.faults.conftest import Case
from tests.faults.helpers import CU13_LIB, ORT_DIST_INFO, Result, nobody, unprivileged_python

UNSAFE_ENTRY = "ld-library-path-unsafe"


def _unsafe_entry(res: Result) -> dict[str, Any]:
    """The finding about LD_LIBRARY_PATH entries that mean the current directory."""
    hits: list[dict[str, Any]] = [f for f in res.data["findings"] if f["id"].startswith(UNSAFE_ENTRY)]
    assert hits, res.finding_ids()
    return hits[0]


def _check(case: Case, **kw: object) -> Result:
    return case.run("check", "--json", "--no-smoke", **kw)  # type: ignore[arg-type]


def _unprivileged() -> tuple[int, int] | None:
    """nobody's ids when ortdoctor can run as nobody here (the suite runs as root in CI)."""
    ids = nobody()
    if ids is None or os.getuid() != 0 or unprivileged_python(ids) is None:
        return None
    return ids


def _as_nobody() -> tuple[int, int]:
    ids = _unprivileged()
    if ids is None:
        # say which of the three conditions failed: a newcomer running as root with a `nobody` user
        # otherwise cannot tell why these tests were skipped
        if nobody() is None:
            why = "there is no `nobody` user"
        elif os.getuid() != 0:
            why = "the tests do not run as root (needed to run a process as `nobody`)"
        else:
            ver = f"{sys.version_info[0]}.{sys.version_info[1]}"
            why = (f"`nobody` can run neither {sys.executable} (is a directory above it private?) nor "
                   f"/usr/bin/python{ver} or /usr/local/bin/python{ver} with ortdoctor's dependencies")
        pytest.skip(f"cannot run the interpreter as an unprivileged user here: {why}")
    return ids


# --------------------------------------------------------------------------------------------------
# Unreadable directories and files (root reads everything, so these drop to `nobody`)
# --------------------------------------------------------------------------------------------------
def test_unreadable_dist_info_directory(case: Case) -> None:
    user = _as_nobody()
    site = case.gpu_site()
    os.chmod(site / ORT_DIST_INFO, 0)
    res = _check(case, as_user=user)
    assert res.returncode == 1
    detail = res.finding("ort-install-damaged")["detail"]
    assert "METADATA unreadable" in detail
    assert "Permission denied" in detail


def test_unreadable_metadata_file(case: Case) -> None:
    user = _as_nobody()
    site = case.gpu_site()
    os.chmod(site / ORT_DIST_INFO / "METADATA", 0)
    res = _check(case, as_user=user)
    assert res.returncode == 1
    assert "Permission denied" in res.finding("ort-install-damaged")["detail"]


def test_unreadable_library_directory(case: Case) -> None:
    user = _as_nobody()
    site = case.gpu_site()
    os.chmod(site / CU13_LIB, 0)
    res = _check(case, as_user=user)
    assert res.returncode == 1
    # named first, as what it is; nothing there is called missing (its fix would reinstall what is there)
    assert res.finding_ids()[0] == "path-unreadable"
    assert str(site / CU13_LIB) in res.finding("path-unreadable")["detail"]
    assert "cuda-lib-missing" not in res.finding_ids()
    pre = case.run("preload", "--json", "--directory", "", as_user=user)
    assert pre.returncode == 1
    assert {"cudart", "cublas"} <= {f["name"] for f in pre.data["failed"]} | {
        x["name"] for x in pre.data["loaded"] if "/nvidia/cu13/" not in x["path"]}


def test_unreadable_capi_directory(case: Case) -> None:
    user = _as_nobody()
    site = case.gpu_site()
    os.chmod(site / "onnxruntime" / "capi", 0)
    res = _check(case, as_user=user)
    assert res.returncode == 1
    assert res.data["ort"]["installed"] is True
    assert res.finding_ids()[0] == "path-unreadable"
    assert "Permission denied" in res.finding("path-unreadable")["detail"]
    # not a "CPU build", no reinstall: the provider may well be in the directory that cannot be read
    assert not {"ort-cpu-only", "ort-install-damaged"} & set(res.finding_ids())


def test_unreadable_package_directory(case: Case) -> None:
    user = _as_nobody()
    site = case.gpu_site()
    os.chmod(site / "onnxruntime", 0)
    res = _check(case, as_user=user)
    assert res.returncode == 1
    assert res.finding_ids()[0] == "path-unreadable"
    assert not {"ort-cpu-only", "ort-not-installed", "ort-install-damaged"} & set(res.finding_ids())
    human = case.run("check", "--no-smoke", as_user=user)
    assert "None" not in human.stdout.splitlines()[0]  # never "onnxruntime None cannot use the GPU"


def test_unreadable_site_directory(case: Case) -> None:
    user = _as_nobody()
    site = case.gpu_site()
    os.chmod(site, 0o311)  # can be entered, not listed: no dist-info can be found
    res = _check(case, as_user=user)
    assert res.returncode == 1
    assert res.data["verdict"] == "fail"
    # the permission first; no "not installed" and no ensurepip-and-install fix for what may be there
    assert res.finding_ids()[0] == "path-unreadable"
    assert str(site) in res.finding("path-unreadable")["detail"]
    assert "ort-not-installed" not in res.finding_ids()
    assert not any(f.get("steps") for f in res.data["findings"])


# --------------------------------------------------------------------------------------------------
# Paths that are not UTF-8, or very long
# --------------------------------------------------------------------------------------------------
def test_site_directory_with_invalid_utf8_bytes(case: Case) -> None:
    name = os.fsdecode(b"site-\xff\xfe-latin1-\xe9")
    case.site = case.base / name
    site = case.gpu_site()
    res = _check(case)
    assert res.returncode == 1
    assert res.data["ort"]["is_gpu_build"] is True
    cudart = next(lib for lib in res.data["libraries"] if lib["name"] == "cudart")
    assert cudart["path"]
    assert cudart["path"].endswith("/nvidia/cu13/lib/libcudart.so.13")
    human = case.run("check", "--no-smoke")
    assert human.returncode == 1
    pre = case.run("preload", "--json", "--directory", "")
    assert pre.returncode == 0, pre.text
    assert {x["name"] for x in pre.data["loaded"]} >= {"cudart", "cublas", "cudnn"}
    assert site.exists()


def test_site_directory_path_of_4000_characters(case: Case) -> None:
    deep = case.base
    while len(str(deep)) < 3950:
        deep = deep / ("d" * min(200, 3990 - len(str(deep)) - 1))
    case.site = deep / "site"
    assert len(str(case.site)) > 3900
    case.gpu_site()
    res = _check(case)
    assert res.returncode == 1
    assert res.data["ort"]["is_gpu_build"] is True
    pre = case.run("preload", "--json", "--directory", "")
    assert pre.returncode == 0, pre.text
    assert {x["name"] for x in pre.data["loaded"]} >= {"cudart", "cublas", "cudnn"}


# --------------------------------------------------------------------------------------------------
# LD_LIBRARY_PATH
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["::", ":/usr/lib", "/usr/lib:"], ids=["only-empty", "leading-empty", "trailing-empty"])
def test_ld_library_path_with_empty_entries(case: Case, value: str) -> None:
    case.gpu_site()
    res = _check(case, env={"LD_LIBRARY_PATH": value})
    assert res.returncode == 1
    f = _unsafe_entry(res)
    assert "empty" in f["detail"]
    assert f["fix"]


def test_ld_library_path_with_relative_entries(case: Case) -> None:
    case.gpu_site()
    (case.cwd / "lib").mkdir()
    res = _check(case, env={"LD_LIBRARY_PATH": "lib:./x:../y"})
    assert res.returncode == 1
    detail = _unsafe_entry(res)["detail"]
    assert "relative" in detail
    assert "./x" in detail
    assert "../y" in detail


def test_ld_library_path_with_5000_entries(case: Case) -> None:
    case.gpu_site()
    entries = [f"/n/{i}" for i in range(4990)]  # short: one variable may hold at most 128 KiB
    for i in range(10):
        d = case.base / "ld" / str(i)
        d.mkdir(parents=True)
        entries.append(str(d))
    res = _check(case, env={"LD_LIBRARY_PATH": ":".join(entries)})
    assert res.returncode == 1
    cudart = next(lib for lib in res.data["libraries"] if lib["name"] == "cudart")
    assert cudart["source"] == "nvidia-wheel"
    pre = case.run("preload", "--json", "--dry-run", env={"LD_LIBRARY_PATH": ":".join(entries)})
    assert pre.returncode == 0, pre.text


def test_ld_library_path_with_undecodable_bytes(case: Case) -> None:
    case.gpu_site()
    odd = case.base / os.fsdecode(b"lib-\xff")
    odd.mkdir()
    res = _check(case, env={"LD_LIBRARY_PATH": f"{odd}:/usr/lib"})
    assert res.returncode == 1
    assert res.data["ort"]["is_gpu_build"] is True


def test_cuda_home_and_conda_prefix_point_at_files(case: Case) -> None:
    case.gpu_site()
    bogus = case.base / "not-a-dir"
    bogus.write_text("x")
    res = _check(case, env={"CUDA_HOME": str(bogus), "CUDA_PATH": "relative/cuda", "CONDA_PREFIX": str(bogus),
                            "CUDNN_PATH": ""})
    assert res.returncode == 1
    cudart = next(lib for lib in res.data["libraries"] if lib["name"] == "cudart")
    assert cudart["source"] == "nvidia-wheel"




HOOK_FINDINGS = ("import json, ortdoctor.hook as h\n"
                 "print(json.dumps([f.id for f in h.result.findings] if h.result else None))\n")


@pytest.mark.parametrize("value", ["", ":", "relative/lib", "/opt/none::/opt/other"])
def test_check_preload_and_the_hook_read_ld_library_path_alike(case: Case, value: str) -> None:
    """One fact reader: the same LD_LIBRARY_PATH gives the same answer from check, preload and the hook
    (an empty variable is no entry at all for the loader; a ':' or a relative entry is the cwd)."""
    case.gpu_site()
    env = {"LD_LIBRARY_PATH": value, "ORTDOCTOR_CACHE": "0"}
    check = _check(case, env=env)
    preload = case.run("preload", "--dry-run", "--json", "--directory", "", env=env)
    script = case.base / "hook_findings.py"
    script.write_text(HOOK_FINDINGS)
    hook = helpers.run_cli([], sites=[case.site], cwd=case.cwd, env=env, argv0=[sys.executable, str(script)])
    assert hook.returncode == 0, hook.text
    hook_ids = json.loads(hook.stdout.strip().splitlines()[-1]) or []
    said = {
        "check": any(i.startswith(UNSAFE_ENTRY) for i in check.finding_ids()),
        "preload": any(f["id"].startswith(UNSAFE_ENTRY) for f in preload.data["findings"]),
        "hook": any(i.startswith(UNSAFE_ENTRY) for i in hook_ids),
    }
    assert len(set(said.values())) == 1, said
    assert said["check"] is (value not in ("",)), said
