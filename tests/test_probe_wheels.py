"""probe_nvidia_wheels and probe_torch: fake trees with real dist-info, and the real NVIDIA wheels."""

from __future__ import annotations

from pathlib import Path

import pytest

from ortdoctor.formats.distinfo import DistIndex
from ortdoctor.probes.nvidia_wheels import cuda_major_of, probe_nvidia_wheels
from ortdoctor.probes.torch import cuda_from_local_tag, probe_torch
from tests.support import testenvs
from tests.support.fake_site import install_dist
from tests.support.sharedlibs import build_so


@pytest.mark.parametrize(
    ("name", "version", "files", "major"),
    [
        ("nvidia-cudnn-cu13", "9.19.0.56", ["nvidia/cudnn/lib/libcudnn.so.9"], 13),
        ("nvidia-cublas-cu12", "12.9.1.4", ["nvidia/cublas/lib/libcublas.so.12"], 12),
        ("nvidia-cufft", "12.0.0.61", ["nvidia/cu13/lib/libcufft.so.12"], 13),
        ("nvidia-curand", "10.4.0.35", ["nvidia/cu13/lib/libcurand.so.10"], 13),
        ("nvidia-cuda-runtime", "13.0.96", [], 13),
        ("nvidia-cufft", "12.0.0.61", [], None),  # no layout, no suffix: the version says nothing
        ("nvidia-cublas", "13.1.0.3", ["nvidia/cu13/bin/x86_64/cublas64_13.dll"], 13),
        ("nvidia-ml-py", "13.615.71", [], None),
    ],
)
def test_cuda_major_of(name: str, version: str, files: list[str], major: int | None) -> None:
    assert cuda_major_of(name, version, files) == major


def test_fake_tree_both_layouts(tmp_path: Path) -> None:
    libs = tmp_path / "built"
    cudart12 = build_so(libs, "libcudart.so.12")
    cudart13 = build_so(libs, "libcudart.so.13")
    site = tmp_path / "site"
    install_dist(site, "nvidia-cuda-runtime-cu12", "12.9.79", {
        "nvidia/cuda_runtime/lib/libcudart.so.12": cudart12,
        "nvidia/cuda_runtime/lib/libcudart_static.a": b"!<arch>\n",
        "nvidia/cuda_runtime/include/cuda.h": b"",
    })
    install_dist(site, "nvidia-cuda-runtime", "13.0.96", {
        "nvidia/cu13/lib/libcudart.so.13": cudart13,
        "nvidia/cu13/bin/x86_64/cudart64_13.dll": b"MZ",
    })
    wheels = {w.name: w for w in probe_nvidia_wheels([str(site)])}
    w12, w13 = wheels["nvidia-cuda-runtime-cu12"], wheels["nvidia-cuda-runtime"]
    assert w12.lib_dirs == (str(site / "nvidia/cuda_runtime/lib"),)
    assert w12.sonames == ("libcudart.so.12",)
    assert w12.cuda_major == 12
    assert w13.lib_dirs == (str(site / "nvidia/cu13/lib"), str(site / "nvidia/cu13/bin/x86_64"))
    assert w13.sonames == ("libcudart.so.13", "cudart64_13.dll")
    assert w13.cuda_major == 13
    assert w13.location == str(site)


def test_wheels_in_every_site_dir(tmp_path: Path) -> None:
    a, b = tmp_path / "venv", tmp_path / "target"
    install_dist(a, "nvidia-cublas", "13.1.0.3", {"nvidia/cu13/lib/libcublas.so.13": b"x"})
    install_dist(b, "nvidia-cudnn-cu13", "9.19.0.56", {"nvidia/cudnn/lib/libcudnn.so.9": b"x"})
    assert [w.name for w in probe_nvidia_wheels([str(a), str(b)])] == ["nvidia-cublas", "nvidia-cudnn-cu13"]


@pytest.mark.realwheels
def test_real_cuda13_wheels() -> None:
    site = testenvs.ensure("nvidia-cu13")
    wheels = {w.name: w for w in probe_nvidia_wheels([str(site)])}
    assert {"nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cufft", "nvidia-curand", "nvidia-cuda-nvrtc",
            "nvidia-cudnn-cu13"} <= set(wheels)
    assert all(w.cuda_major == 13 for w in wheels.values())
    assert wheels["nvidia-cuda-runtime"].lib_dirs == (str(site / "nvidia/cu13/lib"),)
    assert "libcudart.so.13" in wheels["nvidia-cuda-runtime"].sonames
    assert "libcublasLt.so.13" in wheels["nvidia-cublas"].sonames
    assert wheels["nvidia-cudnn-cu13"].lib_dirs == (str(site / "nvidia/cudnn/lib"),)
    assert "libcudnn.so.9" in wheels["nvidia-cudnn-cu13"].sonames
    assert wheels["nvidia-cufft"].version.startswith("12.")


@pytest.mark.realwheels
def test_real_cuda12_runtime() -> None:
    site = testenvs.ensure("nvidia-cu12-runtime")
    (wheel,) = probe_nvidia_wheels([str(site)])
    assert (wheel.name, wheel.cuda_major, wheel.sonames) == ("nvidia-cuda-runtime-cu12", 12, ("libcudart.so.12",))
    assert wheel.lib_dirs == (str(site / "nvidia/cuda_runtime/lib"),)


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------
def test_local_tag() -> None:
    assert cuda_from_local_tag("2.11.0+cu130") == "13.0"
    assert cuda_from_local_tag("2.4.1+cu118") == "11.8"
    assert cuda_from_local_tag("2.4.1+cpu") is None
    assert cuda_from_local_tag("2.4.1") is None


def _install_torch(site: Path, version: str, version_py: str | None, requires: tuple[str, ...] = ()) -> None:
    files: dict[str, bytes | Path] = {"torch/__init__.py": b"raise SystemExit('never imported')\n",
                                      "torch/lib/libtorch_cuda.so": b"x"}
    if version_py is not None:
        files["torch/version.py"] = version_py.encode()
    install_dist(site, "torch", version, files, requires=requires)


def test_torch_cuda_build_with_cudnn_wheel(tmp_path: Path) -> None:
    _install_torch(tmp_path, "2.11.0+cu130",
                   "from typing import Optional\n__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n"
                   "git_version = 'abc'\nhip = None\n",
                   requires=("nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"", "filelock"))
    install_dist(tmp_path, "nvidia-cudnn-cu13", "9.19.0.56", {"nvidia/cudnn/lib/libcudnn.so.9": b"x"})
    info = probe_torch([str(tmp_path)])
    assert info is not None
    assert (info.version, info.cuda, info.cudnn) == ("2.11.0+cu130", "13.0", "9.19.0")
    assert info.lib_dir == str(tmp_path / "torch/lib")
    assert info.location == str(tmp_path)
    assert "filelock" in info.requires


def test_torch_cpu_build_and_fallbacks(tmp_path: Path) -> None:
    _install_torch(tmp_path / "cpu", "2.11.0+cpu", "cuda = None\n")
    cpu = probe_torch([str(tmp_path / "cpu")])
    assert cpu is not None
    assert (cpu.cuda, cpu.cudnn) == (None, None)
    _install_torch(tmp_path / "tag", "2.4.1+cu121", None, requires=("nvidia-cudnn-cu12==9.1.0.70",))
    tagged = probe_torch([str(tmp_path / "tag")])
    assert tagged is not None
    assert (tagged.cuda, tagged.cudnn) == ("12.1", None)  # the cuDNN wheel it names is not installed
    assert probe_torch([str(tmp_path / "nothing")]) is None


def test_torch_probe_parses_only_what_it_needs(tmp_path: Path) -> None:
    _install_torch(tmp_path, "2.11.0+cu130", "cuda = '13.0'\n", requires=("nvidia-cudnn-cu13==9.19.0.56",))
    install_dist(tmp_path, "nvidia-cudnn-cu13", "9.19.0.56", {})
    install_dist(tmp_path, "requests", "2.32.0", {"requests/__init__.py": b""})
    index = DistIndex([str(tmp_path)])
    probe_torch(index=index)
    assert sorted(Path(p).name for p in index._parsed) == ["nvidia_cudnn_cu13-9.19.0.56.dist-info",
                                                           "torch-2.11.0+cu130.dist-info"]
