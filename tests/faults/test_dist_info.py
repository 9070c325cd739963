"""Half-uninstalled and corrupt distributions: dist-info files missing, garbage, or not files at all."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.faults import helpers
from tests.faults.conftest import Case
from tests.faults.helpers import ORT_DIST_INFO, PYBIND, Result

FIFO_TIMEOUT = 20  # seconds: a healthy run takes well under one; a blocked open() never returns


def _check(case: Case, **kw: object) -> Result:
    return case.run("check", "--json", "--no-smoke", **kw)  # type: ignore[arg-type]


def _ort_dist(res: Result) -> dict[str, Any]:
    dists: list[dict[str, Any]] = res.data["ort"]["distributions"]
    assert len(dists) == 1, dists
    return dists[0]


def _damaged(res: Result) -> str:
    """The detail of the ``ort-install-damaged`` finding (what is wrong with the install, by file)."""
    f = res.finding("ort-install-damaged")
    assert "pip install --force-reinstall" in (f["fix"] or "")
    return str(f["detail"])


def test_dist_info_without_record(case: Case) -> None:
    site = case.gpu_site()
    (site / ORT_DIST_INFO / "RECORD").unlink()
    res = _check(case)
    assert res.returncode == 1  # no driver on this machine: the verdict is fail, not a crash
    dist = _ort_dist(res)
    assert "onnxruntime-gpu: RECORD missing" in _damaged(res)
    assert dist["owns_files_on_disk"] is None
    assert res.data["ort"]["is_gpu_build"] is True


def test_metadata_is_binary_garbage(case: Case) -> None:
    site = case.gpu_site()
    (site / ORT_DIST_INFO / "METADATA").write_bytes(bytes(range(256)) * 64 + b"\xff\xfe\x00Name")
    res = _check(case)
    assert res.returncode == 1
    dist = _ort_dist(res)
    # no Name header: the name falls back to the directory's, the version to the directory's
    assert dist["name"] == "onnxruntime-gpu"
    assert dist["version"] == "1.31.1"


def test_metadata_without_name_or_version(case: Case) -> None:
    site = case.gpu_site()
    (site / ORT_DIST_INFO / "METADATA").write_text("Metadata-Version: 2.1\nSummary: no name here\n")
    res = _check(case)
    assert res.returncode == 1
    dist = _ort_dist(res)
    assert dist["name"] == "onnxruntime-gpu"
    assert dist["version"] == "1.31.1"


def test_metadata_missing(case: Case) -> None:
    site = case.gpu_site()
    (site / ORT_DIST_INFO / "METADATA").unlink()
    res = _check(case)
    assert res.returncode == 1
    assert "METADATA missing" in _damaged(res)


def test_metadata_is_a_directory(case: Case) -> None:
    site = case.gpu_site()
    meta = site / ORT_DIST_INFO / "METADATA"
    meta.unlink()
    meta.mkdir()
    res = _check(case)
    assert res.returncode == 1
    assert "METADATA unreadable" in _damaged(res)


def test_metadata_larger_than_any_real_one(case: Case) -> None:
    site = case.gpu_site()
    with open(site / ORT_DIST_INFO / "METADATA", "w") as f:
        f.write("Name: onnxruntime-gpu\nVersion: 1.31.1\n")
        f.write("X-Padding: " + "a" * (2 * 1024 * 1024) + "\n")
    res = _check(case)
    assert res.returncode == 1
    assert "METADATA unreadable: larger than" in _damaged(res)


def test_record_names_files_that_are_gone(case: Case) -> None:
    site = case.gpu_site()
    (site / PYBIND).unlink()
    (site / "onnxruntime" / "capi" / "build_and_package_info.py").unlink()
    res = _check(case)
    assert res.returncode == 1
    # RECORD names the pybind module, the file is gone: its files are not on disk
    assert _ort_dist(res)["owns_files_on_disk"] is False
    assert "build_and_package_info.py missing" in _damaged(res)


def _rewrite_record(record: Path, *, digest: str | None = None, size: str | None = None) -> None:
    rows = []
    for line in record.read_text().splitlines():
        path, old_digest, old_size = line.split(",")
        if old_digest:
            line = f"{path},{digest if digest is not None else old_digest},{size if size is not None else old_size}"
        rows.append(line)
    record.write_text("\n".join(rows) + "\n")


def test_record_with_bad_hashes_and_sizes(case: Case) -> None:
    site = case.gpu_site()
    _rewrite_record(site / ORT_DIST_INFO / "RECORD", digest="sha256=" + "A" * 43, size="1")
    res = _check(case)
    assert res.returncode == 1
    # the pybind module on disk is not the one this RECORD describes (another wheel overwrote it)
    assert _ort_dist(res)["owns_files_on_disk"] is False


def _second_family_distribution(site: Path) -> None:
    """An `onnxruntime` (CPU) dist-info in the same directory whose RECORD also names the pybind
    module: whose file is on disk can then only be told by hashing it."""
    cpu = site / "onnxruntime-1.31.1.dist-info"
    cpu.mkdir()
    (cpu / "METADATA").write_text("Metadata-Version: 2.1\nName: onnxruntime\nVersion: 1.31.1\n")
    (cpu / "RECORD").write_text(f"{PYBIND},sha256={'B' * 43},\nonnxruntime/__init__.py,,\n")


def test_record_with_bad_hashes_in_a_shared_directory(case: Case) -> None:
    site = case.gpu_site()
    _second_family_distribution(site)
    _rewrite_record(site / ORT_DIST_INFO / "RECORD", digest="sha256=" + "A" * 43)
    res = _check(case)
    assert res.returncode == 1
    owners = {d["name"]: d["owns_files_on_disk"] for d in res.data["ort"]["distributions"]}
    assert owners == {"onnxruntime-gpu": False, "onnxruntime": False}
    assert "ort-multiple-packages" in res.finding_ids()


def test_record_is_binary_garbage(case: Case) -> None:
    site = case.gpu_site()
    (site / ORT_DIST_INFO / "RECORD").write_bytes(b"\x00\xff\"\x00,,\r\n\"unterminated" + os.urandom(4096))
    res = _check(case)
    assert res.returncode == 1
    assert res.data["ort"]["installed"] is True


def test_record_is_a_directory(case: Case) -> None:
    site = case.gpu_site()
    record = site / ORT_DIST_INFO / "RECORD"
    record.unlink()
    record.mkdir()
    res = _check(case)
    assert res.returncode == 1
    assert "RECORD unreadable" in _damaged(res)


def test_dist_info_is_a_file(case: Case) -> None:
    site = case.gpu_site()
    dist_info = site / ORT_DIST_INFO
    for child in dist_info.iterdir():
        child.unlink()
    dist_info.rmdir()
    dist_info.write_text("not a directory\n")
    res = _check(case)
    assert res.returncode == 1
    # a *.dist-info that is a file: its METADATA and RECORD cannot be read, and the report says so
    assert "METADATA unreadable" in _damaged(res)
    assert "RECORD unreadable" in _damaged(res)


def test_package_without_any_dist_info(case: Case) -> None:
    site = case.gpu_site()
    for child in (site / ORT_DIST_INFO).iterdir():
        child.unlink()
    (site / ORT_DIST_INFO).rmdir()
    res = _check(case)
    assert res.returncode == 1
    assert "belongs to no installed distribution" in _damaged(res)
    assert res.data["ort"]["distributions"] == []


def test_direct_url_json_is_garbage(case: Case) -> None:
    site = case.gpu_site()
    (site / ORT_DIST_INFO / "direct_url.json").write_bytes(b"{\"url\": [1, 2, \xff")
    (site / ORT_DIST_INFO / "INSTALLER").write_bytes(b"\xff" * 100)
    res = _check(case)
    assert res.returncode == 1
    assert _ort_dist(res)["index_url"] is None


@pytest.mark.parametrize("version", ["1.99.0", "garbage"])
def test_unknown_or_unparsable_ort_version(case: Case, version: str) -> None:
    site = case.gpu_site()
    info = site / "onnxruntime" / "capi" / "build_and_package_info.py"
    info.write_text(f"package_name = 'onnxruntime-gpu'\n__version__ = {version!r}\ncuda_version = '13.0'\n")
    meta = site / ORT_DIST_INFO / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 1.31.1", f"Version: {version}"))
    res = _check(case)
    assert res.returncode == 1
    assert res.data["ort"]["version"] == version
    # the libraries are still resolved from the build's own CUDA version
    assert any(lib["path"] for lib in res.data["libraries"])
    human = case.run("check", "--no-smoke")
    assert version in human.stdout


def test_two_distributions_own_onnxruntime_one_without_record(case: Case) -> None:
    site = case.gpu_site()
    cpu = site / "onnxruntime-1.31.1.dist-info"
    cpu.mkdir()
    (cpu / "METADATA").write_text("Metadata-Version: 2.1\nName: onnxruntime\nVersion: 1.31.1\n")
    res = _check(case)
    assert res.returncode == 1
    names = sorted(d["name"] for d in res.data["ort"]["distributions"])
    assert names == ["onnxruntime", "onnxruntime-gpu"]
    f = res.finding("ort-multiple-packages")
    assert "pip uninstall" in (f["fix"] or "")
    json.dumps(res.data)  # the whole report is JSON-clean


def test_metadata_is_a_fifo(case: Case) -> None:
    """A FIFO where METADATA should be: opening it for reading would block forever."""
    site = case.gpu_site()
    meta = site / ORT_DIST_INFO / "METADATA"
    meta.unlink()
    os.mkfifo(meta)
    res = _check(case, timeout=FIFO_TIMEOUT)
    assert res.returncode == 1
    assert "METADATA unreadable" in _damaged(res)
    pre = case.run("preload", "--json", "--dry-run", timeout=FIFO_TIMEOUT)  # the hook's quick reader
    assert pre.returncode == 0


def test_record_is_a_fifo(case: Case) -> None:
    site = case.gpu_site()
    record = site / ORT_DIST_INFO / "RECORD"
    record.unlink()
    os.mkfifo(record)
    res = _check(case, timeout=FIFO_TIMEOUT)
    assert res.returncode == 1
    assert "RECORD unreadable" in _damaged(res)


def test_metadata_read_fails_with_an_io_error(case: Case) -> None:
    """A disk read error: METADATA is /proc/self/mem, which opens but fails to read at offset 0."""
    site = case.gpu_site()
    meta = site / ORT_DIST_INFO / "METADATA"
    meta.unlink()
    meta.symlink_to("/proc/self/mem")
    res = _check(case)
    assert res.returncode == 1
    assert "METADATA unreadable" in _damaged(res)




def test_pybind_module_is_a_fifo(case: Case) -> None:
    """Two distributions name the pybind module, so it is hashed; a FIFO sits where it should be."""
    site = case.gpu_site()
    _second_family_distribution(site)
    _rewrite_record(site / ORT_DIST_INFO / "RECORD", size="")
    (site / PYBIND).unlink()
    os.mkfifo(site / PYBIND)
    res = _check(case, timeout=FIFO_TIMEOUT)
    assert res.returncode == 1
    assert all(d["owns_files_on_disk"] is not True for d in res.data["ort"]["distributions"])


@pytest.mark.parametrize("size", ["\u00b2", "\u0663", "9" * 5000], ids=["superscript-two", "arabic-three", "5000-digits"])
def test_one_odd_record_size_costs_that_row_only(case: Case, size: str) -> None:
    """A size field that str.isdigit() accepts but int() refuses ("²", a non-ASCII digit, more digits than
    int() converts): that row loses its size; check, preload and the hook go on as without it."""
    site = case.gpu_site()
    dist_info = next(site.glob("nvidia_cublas-*.dist-info"))
    with open(dist_info / "RECORD", "a", encoding="utf-8") as f:
        f.write(f"nvidia/cu13/lib/x,,{size}\n")
    res = _check(case)
    assert res.returncode == 1, res.text  # no driver here: fail, never 3 (an internal error)
    assert "internal error" not in res.stderr
    pre = case.run("preload", "--json")
    assert pre.returncode in (0, 1), pre.text
    assert {x["name"] for x in pre.data["loaded"]} >= {"cudart", "cublas", "cublasLt"}
    script = case.base / "hook.py"
    script.write_text("import ortdoctor.hook as h\nprint(sorted(x.soname for x in h.result.loaded))\n")
    hook = helpers.run_cli([], sites=[case.site], cwd=case.cwd, env={"ORTDOCTOR_CACHE": "0"},
                           argv0=[sys.executable, str(script)])
    assert hook.returncode == 0, hook.text
    assert "preload-error" not in hook.stderr
    assert "libcublas.so.13" in hook.stdout
