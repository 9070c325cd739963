"""``build_and_package_info.py`` (and torch's ``version.py``) missing, garbage, not a file, or hostile:
read as text, never executed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.conftest import Case
from tests.faults.helpers import BUILD_INFO, ROOT, Result
from tests.support.fake_site import install_dist

FIFO_TIMEOUT = 20


def _check(case: Case, **kw: object) -> Result:
    return case.run("check", "--json", "--no-smoke", **kw)  # type: ignore[arg-type]


def hostile_source(marker_dir: Path) -> str:
    """Code that leaves a PWNED file behind if anything ever runs it."""
    first, second = str(marker_dir / "PWNED"), str(marker_dir / "PWNED2")
    return (
        f"import os; os.system('touch PWNED'); open({first!r}, 'w').write('executed')\n"
        "cuda_version = __import__('os').getcwd()\n"
        f"__version__ = (lambda: open({second!r}, 'w') and '1.31.1')()\n"
        "package_name = 'onnxruntime-gpu'\n"
    )


def assert_never_executed(case: Case) -> None:
    for where in (case.base, case.cwd, case.site, ROOT, Path("/tmp")):
        for name in ("PWNED", "PWNED2"):
            assert not (where / name).exists(), where / name


def test_build_info_missing(case: Case) -> None:
    site = case.gpu_site()
    (site / BUILD_INFO).unlink()
    res = _check(case)
    assert res.returncode == 1
    assert "build_and_package_info.py missing" in res.finding("ort-install-damaged")["detail"]
    assert res.data["ort"]["version"] == "1.31.1"  # from the distribution instead


def test_build_info_hostile_is_never_executed(case: Case) -> None:
    site = case.gpu_site()
    (site / BUILD_INFO).write_text(hostile_source(case.base))
    res = _check(case)
    assert res.returncode == 1
    ort = res.data["ort"]
    assert ort["cuda_version"] is None  # `__import__('os').getcwd()` is not a literal: not evaluated
    assert ort["package_name"] == "onnxruntime-gpu"  # the literal next to it is still read
    human = case.run("check", "--no-smoke")
    assert human.returncode == 1
    pre = case.run("preload", "--json")
    assert pre.returncode in (0, 1)
    assert_never_executed(case)


def test_torch_version_py_and_metadata_hostile(case: Case) -> None:
    site = case.gpu_site()
    hostile = hostile_source(case.base).encode()
    install_dist(site, "torch", "2.11.0+cu130", {
        "torch/__init__.py": hostile,
        "torch/version.py": hostile + b"__version__ = '2.11.0+cu130'\ncuda = '13.0'\n",
        "torch/lib/.keep": b"",
    }, requires=("nvidia-cudnn-cu13==9.19.0.56", "os.system('touch PWNED')"))
    meta = next(site.glob("torch-*.dist-info")) / "METADATA"
    meta.write_text(meta.read_text() + "\n" + hostile_source(case.base))
    res = _check(case)
    assert res.returncode == 1
    assert res.data["torch"]["version"].startswith("2.11.0")
    pre = case.run("preload", "--json", "--dry-run")
    assert pre.returncode in (0, 1)
    assert_never_executed(case)


@pytest.mark.parametrize("content", [
    b"\x00\xff\xfe garbage \x00 not python",
    b"def broken(:\n",
    b"cuda_version = '13.0'\n" + b"(" * 100_000 + b"\n",  # deeper than the parser allows
    b"x" * (300 * 1024),  # larger than any real one
], ids=["binary", "syntax-error", "too-deep", "too-large"])
def test_build_info_garbage(case: Case, content: bytes) -> None:
    site = case.gpu_site()
    (site / BUILD_INFO).write_bytes(content)
    res = _check(case)
    assert res.returncode == 1
    detail = res.finding("ort-install-damaged")["detail"]
    assert "build_and_package_info.py" in detail


def test_build_info_is_a_directory(case: Case) -> None:
    site = case.gpu_site()
    (site / BUILD_INFO).unlink()
    (site / BUILD_INFO).mkdir()
    res = _check(case)
    assert res.returncode == 1
    assert "build_and_package_info.py" in res.finding("ort-install-damaged")["detail"]
    pre = case.run("preload", "--json", "--dry-run")
    assert pre.returncode in (0, 1)


def test_build_info_is_a_fifo(case: Case) -> None:
    site = case.gpu_site()
    (site / BUILD_INFO).unlink()
    os.mkfifo(site / BUILD_INFO)
    res = _check(case, timeout=FIFO_TIMEOUT)
    assert res.returncode == 1
    assert "build_and_package_info.py" in res.finding("ort-install-damaged")["detail"]
    pre = case.run("preload", "--json", "--dry-run", timeout=FIFO_TIMEOUT)
    assert pre.returncode in (0, 1)


def test_build_info_cuda_version_of_an_unknown_major(case: Case) -> None:
    site = case.gpu_site()
    (site / BUILD_INFO).write_text("package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\ncuda_version = '99.0'\n")
    res = _check(case)
    assert res.returncode == 1
    assert res.data["cuda_major"] == 99
    # The matrix knows no CUDA 99: what the provider really needs (its DT_NEEDED) is searched instead.
    assert "has no rows for CUDA 99" in res.finding("matrix-missing-library")["detail"]
    pre = case.run("preload", "--json", "--dry-run")
    assert pre.returncode == 0
    assert "libcudart.so.13" in {x["soname"] for x in pre.data["loaded"]}


UNKNOWN_CUDA = ("a GPU package whose build_and_package_info.py gives no usable cuda_version gets no library plan "
                "and no finding saying why (the provider's DT_NEEDED libcudart.so.13 tells the major, but a CPU "
                "wheel installed over a GPU one leaves that provider behind too: the rule needs package_name)")


@pytest.mark.parametrize("cuda_version", ["'garbage'", "13", "None", "''"], ids=["text", "int", "none", "empty"])
def test_build_info_unusable_cuda_version(case: Case, cuda_version: str) -> None:
    """package_name says GPU, cuda_version is unusable: the plan should still come from the provider."""
    site = case.gpu_site()
    (site / BUILD_INFO).write_text(f"package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\n"
                                   f"cuda_version = {cuda_version}\n")
    res = _check(case)
    assert res.returncode == 1
    assert res.data["cuda_major"] == 13
    cudart = [lib for lib in res.data["libraries"] if lib["name"] == "cudart"]
    assert cudart, res.data["libraries"]
    assert cudart[0]["path"], res.data["libraries"]


def test_torch_version_py_and_metadata_are_fifos(case: Case) -> None:
    site = case.gpu_site()
    install_dist(site, "torch", "2.11.0+cu130", {"torch/__init__.py": b"", "torch/lib/.keep": b""})
    os.mkfifo(site / "torch" / "version.py")
    meta = next(site.glob("torch-*.dist-info")) / "METADATA"
    meta.unlink()
    os.mkfifo(meta)
    res = _check(case, timeout=FIFO_TIMEOUT)
    assert res.returncode == 1
    assert res.data["torch"]["version"].startswith("2.11.0")
    pre = case.run("preload", "--json", "--dry-run", timeout=FIFO_TIMEOUT)
    assert pre.returncode == 0
