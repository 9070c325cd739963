"""probe_ort against fake site-packages trees (real dist-info, gcc-built libraries) and the real wheels."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ortdoctor.core.facts import ElfInfo
from ortdoctor.formats.distinfo import DistIndex
from ortdoctor.probes.ort import parse_literal_assignments, probe_ort
from tests.support import testenvs
from tests.support.fake_site import install_dist
from tests.support.sharedlibs import build_so

PYBIND = "onnxruntime/capi/onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so"
CUDA_PROVIDER = "onnxruntime/capi/libonnxruntime_providers_cuda.so"
TRT_PROVIDER = "onnxruntime/capi/libonnxruntime_providers_tensorrt.so"
BUILD_INFO = "onnxruntime/capi/build_and_package_info.py"


@pytest.fixture(scope="module")
def libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("ortlibs")
    cudart = build_so(d / "deps", "libcudart.so.13")
    cublas = build_so(d / "deps", "libcublas.so.13")
    cudnn = build_so(d / "deps", "libcudnn.so.9")
    return {
        "cuda": build_so(d / "gpu", "libonnxruntime_providers_cuda.so", needed=(cublas, cudart)),
        "trt": build_so(d / "gpu", "libonnxruntime_providers_tensorrt.so", needed=(cudart, cudnn)),
        "pybind_gpu": build_so(d / "gpu", "onnxruntime_pybind11_state.so",
                               source="int gpu_flavour(void) { return 1; }\n"),
        "pybind_cpu": build_so(d / "cpu", "onnxruntime_pybind11_state.so",
                               source="int cpu_flavour(void) { return 2; }\n"),
        "genai_cuda": build_so(d / "genai", "libonnxruntime-genai-cuda.so", needed=(cudart,)),
    }


def _build_info(name: str, version: str, cuda: str = "") -> bytes:
    return f"package_name = '{name}'\n__version__ = '{version}'\ncuda_version = '{cuda}'\n".encode()


def install_gpu(site: Path, libs: dict[str, Path], *, requires: tuple[str, ...] = ("nvidia-cudnn-cu13~=9.0; extra == \"cudnn\"",),
                with_trt: bool = True) -> Path:
    files: dict[str, bytes | Path] = {
        "onnxruntime/__init__.py": b"raise SystemExit('never imported')\n",
        PYBIND: libs["pybind_gpu"],
        CUDA_PROVIDER: libs["cuda"],
        BUILD_INFO: _build_info("onnxruntime-gpu", "1.31.1", "13.0"),
    }
    if with_trt:
        files[TRT_PROVIDER] = libs["trt"]
    return install_dist(site, "onnxruntime-gpu", "1.31.1", files, requires=requires)


def install_cpu(site: Path, libs: dict[str, Path]) -> Path:
    return install_dist(site, "onnxruntime", "1.31.1", {
        "onnxruntime/__init__.py": b"raise SystemExit('never imported')\n",
        PYBIND: libs["pybind_cpu"],
        BUILD_INFO: _build_info("onnxruntime", "1.31.1"),
    })


def test_gpu_only(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs)
    info = probe_ort([str(tmp_path)])
    assert info.installed
    assert [d.name for d in info.distributions] == ["onnxruntime-gpu"]
    assert info.distributions[0].owns_files_on_disk is True
    assert info.distributions[0].installer == "pip"
    assert info.active == "onnxruntime-gpu"
    assert (info.version, info.package_name, info.cuda_version) == ("1.31.1", "onnxruntime-gpu", "13.0")
    assert info.package_dir == str(tmp_path / "onnxruntime")
    assert info.is_gpu_build
    assert isinstance(info.cuda_provider, ElfInfo)
    assert info.cuda_provider.needed[:2] == ("libcublas.so.13", "libcudart.so.13")
    assert isinstance(info.tensorrt_provider, ElfInfo)
    assert info.pybind is not None
    assert info.pybind.path.endswith(".so")
    assert info.cudnn_major == 9
    assert info.problems == ()


def test_cpu_installed_after_gpu_owns_the_files(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs)
    install_cpu(tmp_path, libs)  # overwrites the pybind module and build info, leaves the provider
    info = probe_ort([str(tmp_path)])
    owns = {d.name: d.owns_files_on_disk for d in info.distributions}
    assert owns == {"onnxruntime-gpu": False, "onnxruntime": True}
    assert info.active == "onnxruntime"
    assert info.package_name == "onnxruntime"
    assert info.cuda_version is None
    assert info.is_gpu_build  # the GPU wheel's provider library is left behind on disk


def test_cudnn_major_from_tensorrt_needed_when_no_extras(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs, requires=())
    assert probe_ort([str(tmp_path)]).cudnn_major == 9


def test_cudnn_major_unknown_without_extras_or_trt(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs, requires=(), with_trt=False)
    info = probe_ort([str(tmp_path)])
    assert info.cudnn_major is None
    assert info.tensorrt_provider is None


def test_not_installed(tmp_path: Path) -> None:
    install_dist(tmp_path, "numpy", "2.0.0", {"numpy/__init__.py": b""})
    info = probe_ort([str(tmp_path)])
    assert not info.installed
    assert info.distributions == ()
    assert info.package_dir is None


def test_hostile_build_info_is_never_executed(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs)
    marker = tmp_path / "PWNED"
    (tmp_path / BUILD_INFO).write_text(
        f"import os\nos.system('touch {marker}')\nopen({str(marker)!r}, 'w').write('x')\n"
        "package_name = __import__('os').getcwd()\n"
        "__version__ = '1.31.1'\n"
        "cuda_version = '13' + '.0'\n"
        "cuda_version: str = '13.0'\n"
    )
    info = probe_ort([str(tmp_path)])
    assert not marker.exists()
    assert info.package_name is None  # not a literal: skipped
    assert (info.version, info.cuda_version) == ("1.31.1", "13.0")
    assert info.build_info_error is None


def test_unparsable_build_info(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs)
    (tmp_path / BUILD_INFO).write_text("cuda_version = '13.0\n")
    info = probe_ort([str(tmp_path)])
    assert info.build_info_error is not None
    assert "does not parse" in info.build_info_error
    assert info.version == "1.31.1"  # from the distribution instead
    (tmp_path / BUILD_INFO).unlink()
    assert probe_ort([str(tmp_path)]).build_info_error == "build_and_package_info.py missing"


def test_an_old_wheel_without_build_info_is_not_damaged(tmp_path: Path, libs: dict[str, Path]) -> None:
    """Wheels before 1.21 never shipped build_and_package_info.py: its RECORD does not list it."""
    install_dist(tmp_path, "onnxruntime-gpu", "1.20.2", {
        "onnxruntime/__init__.py": b"raise SystemExit('never imported')\n",
        PYBIND: libs["pybind_gpu"],
        CUDA_PROVIDER: libs["cuda"],
    })
    info = probe_ort([str(tmp_path)])
    assert info.build_info_error is None
    assert (info.version, info.is_gpu_build, info.cuda_version) == ("1.20.2", True, None)


def test_parse_literal_assignments_skips_calls() -> None:
    values = parse_literal_assignments("a = 1\nb = f()\nc: int = 2\nd, e = 1, 2\nf = ('x', None)\n")
    assert values == {"a": 1, "c": 2, "f": ("x", None)}


def test_distribution_without_record_counts_with_a_problem(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs)
    install_dist(tmp_path, "ort-nightly-gpu", "1.32.0.dev1", {}, record=False)
    info = probe_ort([str(tmp_path)])
    names = {d.name: d for d in info.distributions}
    assert set(names) == {"onnxruntime-gpu", "ort-nightly-gpu"}
    assert names["ort-nightly-gpu"].owns_files_on_disk is None
    assert "RECORD missing" in names["ort-nightly-gpu"].problems


def test_family_member_found_by_record_not_by_name(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs)
    # onnxruntime-tools style: a family name but nothing under onnxruntime/: not an owner.
    install_dist(tmp_path, "onnxruntime-tools", "1.7.0", {"onnxruntime_tools/__init__.py": b""})
    install_dist(tmp_path, "onnxruntime-directml", "1.31.1", {"onnxruntime/capi/DirectML.dll": b"MZ"})
    names = [d.name for d in probe_ort([str(tmp_path)]).distributions]
    assert sorted(names) == ["onnxruntime-directml", "onnxruntime-gpu"]


def test_first_site_dir_on_the_path_wins(tmp_path: Path, libs: dict[str, Path]) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    install_cpu(first, libs)
    install_gpu(second, libs)
    info = probe_ort([str(first), str(second)])
    assert info.package_dir == str(first / "onnxruntime")
    assert info.active == "onnxruntime"
    assert {d.name: d.owns_files_on_disk for d in info.distributions} == {"onnxruntime": True, "onnxruntime-gpu": True}
    info = probe_ort([str(second), str(first)])
    assert info.active == "onnxruntime-gpu"
    assert info.is_gpu_build


def test_package_without_distribution(tmp_path: Path) -> None:
    (tmp_path / "onnxruntime").mkdir()
    (tmp_path / "onnxruntime" / "__init__.py").write_text("")
    info = probe_ort([str(tmp_path)])
    assert info.installed
    assert info.distributions == ()
    assert info.active is None
    assert any("belongs to no installed distribution" in p for p in info.problems)


def test_genai_cuda_libraries(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs)
    install_dist(tmp_path, "onnxruntime-genai-cuda", "0.13.1", {
        "onnxruntime_genai/__init__.py": b"",
        "onnxruntime_genai/libonnxruntime-genai-cuda.so": libs["genai_cuda"],
        "onnxruntime_genai/libonnxruntime-genai.so": libs["pybind_cpu"],
    })
    info = probe_ort([str(tmp_path)])
    assert [d.name for d in info.distributions] == ["onnxruntime-gpu"]  # genai is not an onnxruntime/ owner
    assert [os.path.basename(x.path) for x in info.other_cuda_libraries] == ["libonnxruntime-genai-cuda.so"]
    lib = info.other_cuda_libraries[0]
    assert isinstance(lib, ElfInfo)
    assert "libcudart.so.13" in lib.needed


def test_broken_provider_is_a_problem_not_a_crash(tmp_path: Path, libs: dict[str, Path]) -> None:
    install_gpu(tmp_path, libs)
    (tmp_path / CUDA_PROVIDER).write_bytes(b"\x7fELF\x02\x01")
    info = probe_ort([str(tmp_path)])
    assert info.is_gpu_build
    assert info.cuda_provider is None
    assert any("libonnxruntime_providers_cuda.so" in p for p in info.problems)


# ---------------------------------------------------------------------------------------------
# The real wheels
# ---------------------------------------------------------------------------------------------
@pytest.mark.realwheels
def test_real_cpu_wheel() -> None:
    site = testenvs.ensure("ort-cpu")
    info = probe_ort([str(site)])
    assert [d.name for d in info.distributions] == ["onnxruntime"]
    assert info.active == "onnxruntime"
    assert info.distributions[0].owns_files_on_disk is True
    assert not info.is_gpu_build
    assert info.cuda_provider is None
    assert info.cuda_version is None
    assert info.version == testenvs.ORT_CPU_VERSION


@pytest.mark.realwheels
def test_real_both_wheels() -> None:
    site = testenvs.ensure("ort-both")
    info = probe_ort([str(site)])
    owns = {d.name: d.owns_files_on_disk for d in info.distributions}
    assert owns == {"onnxruntime": True, "onnxruntime-gpu": False}
    assert info.active == "onnxruntime"
    assert info.package_name == "onnxruntime"


@pytest.mark.realwheels
def test_real_gpu_wheel_with_cuda13_wheels() -> None:
    sites = [str(testenvs.ensure("ort-gpu")), str(testenvs.ensure("nvidia-cu13"))]
    index = DistIndex(sites)
    info = probe_ort(index=index)
    assert info.active == "onnxruntime-gpu"
    assert (info.version, info.cuda_version, info.cudnn_major) == (testenvs.ORT_GPU_VERSION, "13.0", 9)
    assert info.is_gpu_build
    assert isinstance(info.cuda_provider, ElfInfo)
    assert "libcudart.so.13" in info.cuda_provider.needed
    assert isinstance(info.tensorrt_provider, ElfInfo)
    assert "libnvinfer.so.10" in info.tensorrt_provider.needed
    # Only the family's metadata was parsed, not the NVIDIA wheels'.
    assert all("onnxruntime" in p for p in index._parsed)
