"""diagnose(): one test per finding id, positive and negative, on environments built by hand.

The diagnosis is a pure function of facts, a plan and the matrix, so every GPU situation this
machine cannot have (old driver, hidden GPU, unsupported architecture, library mismatch) is built
here as plain dataclasses. The matrix is a real :class:`~ortdoctor.decide.matrix.Matrix` with a few rows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

import pytest

from ortdoctor.core.catalog import CATALOG
from ortdoctor.core.facts import (
    Candidate,
    Device,
    DriverError,
    DriverInfo,
    ElfInfo,
    Environment,
    Finding,
    LibraryPlan,
    NvidiaWheel,
    OrtDistribution,
    OrtInfo,
    Plan,
    PythonInfo,
    SearchDir,
    SystemInfo,
    TorchInfo,
)
from ortdoctor.decide.build import is_cuda_build
from ortdoctor.decide.loader_view import default_loader_copy, loader_visible
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import (
    CudaMajor,
    CudnnMajor,
    Feed,
    KnownBad,
    Matrix,
    Release,
    TorchRelease,
    TorchVariant,
)
from ortdoctor.diagnose.checklist import diagnose
from ortdoctor.diagnose.classify import classify
from ortdoctor.diagnose.driver import visible_devices
from ortdoctor.diagnose.package import recommended_install
from ortdoctor.prove.smoke.runner import SmokeResult

SITE = "/venv/lib/python3.11/site-packages"
CU13 = f"{SITE}/nvidia/cu13/lib"
CUDNN = f"{SITE}/nvidia/cudnn/lib"
CU12_FEED = "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/pypi/simple/"


# ------------------------------------------------------------------------------------------------
# The matrix
# ------------------------------------------------------------------------------------------------
def _cuda_rows(major: int) -> tuple[Any, ...]:
    return tuple(s for s in load_matrix().libraries_for(major, None))


def make_matrix() -> Matrix:
    cuda = {
        12: CudaMajor(12, _cuda_rows(12), "525.60.13", "527.41"),
        13: CudaMajor(13, _cuda_rows(13), "580.65.06", "580.88"),
    }
    cudnn_rows = tuple(s for s in load_matrix().libraries_for(13, 9) if s.name.startswith("cudnn"))
    cudnn = {9: CudnnMajor(9, cudnn_rows, packages={12: "nvidia-cudnn-cu12", 13: "nvidia-cudnn-cu13"})}
    feed12 = Feed(cuda="12.x", cudnn_major=9, index_url=CU12_FEED)
    releases = (
        Release(line="1.31", versions=("1.31.0", "1.31.1"), cuda="13.0", cudnn_major=9, cudnn="9.x",
                source="wheel", source_ref="onnxruntime_gpu-1.31.1.whl", feeds=(feed12,),
                extras={"cuda": ("nvidia-cuda-runtime~=13.0",), "cudnn": ("nvidia-cudnn-cu13~=9.0",)},
                archs=("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")),
        Release(line="1.27", versions=("1.27.0",), cuda="13.0", cudnn_major=9, cudnn="9.x", source="doc",
                source_ref="x", feeds=(feed12,),
                known_bad=(KnownBad("1.27.0", "the pybind module NEEDS libcudart.so.13", 'pip install "onnxruntime-gpu!=1.27.0"'),)),
        Release(line="1.20", versions=("1.20.1",), cuda="12.6", cudnn_major=9, cudnn="9.x", source="doc",
                source_ref="x"),
    )
    torch = (TorchRelease("2.11", (
        TorchVariant("13.0", "cu130", "9.19.0", None, pypi_default=True),
        TorchVariant("12.8", "cu128", "9.10.2", "https://download.pytorch.org/whl/cu128"),
    )),)
    return Matrix(path="<test>", releases=releases, cuda_majors=cuda, cudnn_majors=cudnn, torch=torch)


MATRIX = make_matrix()


# ------------------------------------------------------------------------------------------------
# Builders of a healthy CUDA 13 environment, then variations with dataclasses.replace
# ------------------------------------------------------------------------------------------------
def python_info(**kw: Any) -> PythonInfo:
    base = PythonInfo(version="3.11.7", executable="/venv/bin/python", implementation="CPython",
                      platform="linux-x86_64", machine="x86_64", os="linux", libc="glibc 2.36",
                      venv="/venv", site_dirs=(SITE,), multiprocessing_start_method="spawn")
    return replace(base, **kw)


PROVIDER_NEEDED = ("libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", "libcudart.so.13", "libcuda.so.1",
                   "libdl.so.2", "libstdc++.so.6", "libc.so.6")


def ort_gpu(**kw: Any) -> OrtInfo:
    pkg = f"{SITE}/onnxruntime"
    base = OrtInfo(
        installed=True,
        distributions=(OrtDistribution("onnxruntime-gpu", "1.31.1", SITE, f"{SITE}/onnxruntime_gpu-1.31.1.dist-info",
                                       owns_files_on_disk=True),),
        package_dir=pkg, active="onnxruntime-gpu", version="1.31.1", package_name="onnxruntime-gpu",
        cuda_version="13.0", cudnn_major=9, is_gpu_build=True,
        cuda_provider=ElfInfo(f"{pkg}/capi/libonnxruntime_providers_cuda.so", "x86_64", 64, needed=PROVIDER_NEEDED),
        tensorrt_provider=None,
        pybind=ElfInfo(f"{pkg}/capi/onnxruntime_pybind11_state.so", "x86_64", 64, needed=("libc.so.6",)),
    )
    return replace(base, **kw)


def ort_cpu(**kw: Any) -> OrtInfo:
    pkg = f"{SITE}/onnxruntime"
    base = OrtInfo(
        installed=True,
        distributions=(OrtDistribution("onnxruntime", "1.31.1", SITE, f"{SITE}/onnxruntime-1.31.1.dist-info",
                                       owns_files_on_disk=True),),
        package_dir=pkg, active="onnxruntime", version="1.31.1", package_name="onnxruntime",
        cuda_version=None, is_gpu_build=False,
    )
    return replace(base, **kw)


H200 = Device(0, "NVIDIA H200", uuid="GPU-aaaa", compute_capability="9.0", memory_total_mib=143771,
              memory_free_mib=140000)


def driver_ok(**kw: Any) -> DriverInfo:
    base = DriverInfo(available=True, version="580.95.05", cuda_version="13.0", devices=(H200,),
                      libcuda=("/usr/lib/x86_64-linux-gnu/libcuda.so.1",),
                      dev_nodes=("/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"))
    return replace(base, **kw)


def driver_none(**kw: Any) -> DriverInfo:
    base = DriverInfo(available=False, error="libnvidia-ml.so.1: cannot open shared object file",
                      error_kind=DriverError.LIBRARY_NOT_FOUND)
    return replace(base, **kw)


def system_with_path(*dirs: str, **kw: Any) -> SystemInfo:
    return replace(SystemInfo(ld_library_path=tuple(SearchDir(d, "LD_LIBRARY_PATH") for d in dirs)), **kw)


def lib(name: str, soname: str, path: str | None, *, required: bool = True, version: str | None = None,
        source: str = "nvidia-wheel", others: tuple[Candidate, ...] = (),
        extra: tuple[Candidate, ...] = ()) -> LibraryPlan:
    chosen = Candidate(path, source, version) if path else None  # type: ignore[arg-type]
    cands = ((chosen,) if chosen else ()) + extra
    return LibraryPlan(name, soname, required, chosen, cands, others)


def full_plan(**overrides: LibraryPlan | None) -> Plan:
    libs = {
        "cublasLt": lib("cublasLt", "libcublasLt.so.13", f"{CU13}/libcublasLt.so.13", version="13.1.0.3"),
        "cublas": lib("cublas", "libcublas.so.13", f"{CU13}/libcublas.so.13", version="13.1.0.3"),
        "nvrtc": lib("nvrtc", "libnvrtc.so.13", f"{CU13}/libnvrtc.so.13", required=False),
        "curand": lib("curand", "libcurand.so.10", f"{CU13}/libcurand.so.10"),
        "cufft": lib("cufft", "libcufft.so.12", f"{CU13}/libcufft.so.12", required=False),
        "cudart": lib("cudart", "libcudart.so.13", f"{CU13}/libcudart.so.13", version="13.0.96"),
        "cudnn": lib("cudnn", "libcudnn.so.9", f"{CUDNN}/libcudnn.so.9", required=False, version="9.19.0.56"),
        "cudnn_graph": lib("cudnn_graph", "libcudnn_graph.so.9", f"{CUDNN}/libcudnn_graph.so.9", required=False),
    }
    for k, v in overrides.items():
        if v is None:
            del libs[k]
        else:
            libs[k] = v
    return Plan(13, 9, None, tuple(libs.values()))


def healthy_env(**kw: Any) -> Environment:
    base = Environment(python=python_info(), ort=ort_gpu(), torch=None, nvidia_wheels=(),
                       system=system_with_path(CU13, CUDNN), driver=driver_ok())
    return replace(base, **kw)


def ids(findings: list[Finding]) -> list[str]:
    return [f.id for f in findings]


def one(findings: list[Finding], fid: str) -> Finding:
    hits = [f for f in findings if f.id == fid]
    assert len(hits) == 1, (fid, ids(findings))
    return hits[0]


def run(env: Environment | None = None, plan: Plan | None = None, **kw: Any) -> list[Finding]:
    env = env or healthy_env()
    if plan is None and is_cuda_build(env.ort) and env.ort.installed:
        plan = full_plan()
    return diagnose(env, plan, MATRIX, **kw)


# ------------------------------------------------------------------------------------------------
# The baseline
# ------------------------------------------------------------------------------------------------
def test_healthy_environment_has_no_findings() -> None:
    assert run() == []


def test_every_emitted_id_is_catalogued_and_findings_are_sorted_by_severity() -> None:
    env = healthy_env(driver=driver_none(), python=python_info(multiprocessing_start_method="fork"))
    found = run(env, full_plan(cufft=lib("cufft", "libcufft.so.12", None, required=False)))
    assert all(f.id in CATALOG for f in found)
    order = {"error": 0, "warning": 1, "info": 2}
    assert [order[f.severity] for f in found] == sorted(order[f.severity] for f in found)


# ------------------------------------------------------------------------------------------------
# The package
# ------------------------------------------------------------------------------------------------
def test_ort_not_installed_names_what_to_install() -> None:
    env = healthy_env(ort=OrtInfo(installed=False))
    f = one(run(env), "ort-not-installed")
    assert f.severity == "error"
    assert f.fix is not None
    assert "onnxruntime-gpu" in f.fix
    assert SITE in f.detail


def test_ort_not_installed_on_a_cuda_12_driver_recommends_the_cuda_12_feed() -> None:
    env = healthy_env(ort=OrtInfo(installed=False), driver=driver_ok(version="550.54.14", cuda_version="12.4"))
    f = one(run(env), "ort-not-installed")
    rec = MATRIX.recommend("12.4", None)
    assert rec is not None
    assert (rec.feed.cuda if rec.feed else rec.release.cuda).startswith("12.")  # a CUDA 12 build
    assert f.fix is not None
    # the command names the inspected interpreter, and installs exactly what the matrix recommends
    assert f.fix.startswith("/venv/bin/python -m " + rec.command)
    assert f.steps == rec.steps
    assert recommended_install(env, MATRIX).startswith("/venv/bin/python -m " + rec.command)


def test_ort_not_installed_but_recorded_means_files_were_removed() -> None:
    dist = OrtDistribution("onnxruntime-gpu", "1.31.1", SITE, f"{SITE}/onnxruntime_gpu-1.31.1.dist-info")
    f = one(run(healthy_env(ort=OrtInfo(installed=False, distributions=(dist,)))), "ort-not-installed")
    assert "files are gone" in f.detail
    assert f.fix is not None
    assert f.fix.startswith("/venv/bin/python -m pip uninstall -y onnxruntime-gpu\n")


def test_installed_gpu_build_is_not_reported_missing_or_cpu() -> None:
    assert not {"ort-not-installed", "ort-cpu-only", "ort-multiple-packages"} & set(ids(run()))


def test_ort_cpu_only() -> None:
    found = run(healthy_env(ort=ort_cpu()))
    f = one(found, "ort-cpu-only")
    assert f.severity == "error"
    assert f.fix is not None
    assert "pip uninstall -y onnxruntime" in f.fix
    assert "onnxruntime-gpu" in f.fix
    # no library findings about a build that is not installed
    assert not {"cuda-lib-missing", "cuda-lib-not-loadable"} & set(ids(found))


def test_cpu_package_name_with_provider_file_left_behind_is_cpu() -> None:
    # The GPU wheel's provider library survives when the CPU wheel overwrote the shared files.
    ort = ort_gpu(package_name="onnxruntime", cuda_version=None, active="onnxruntime")
    assert not is_cuda_build(ort)
    assert "ort-cpu-only" in ids(run(healthy_env(ort=ort)))


def test_ort_multiple_packages() -> None:
    dists = (
        OrtDistribution("onnxruntime-gpu", "1.31.1", SITE, f"{SITE}/onnxruntime_gpu-1.31.1.dist-info",
                        owns_files_on_disk=False),
        OrtDistribution("onnxruntime", "1.31.1", SITE, f"{SITE}/onnxruntime-1.31.1.dist-info", owns_files_on_disk=True),
    )
    ort = ort_gpu(distributions=dists, active="onnxruntime", package_name="onnxruntime", cuda_version=None)
    found = run(healthy_env(ort=ort))
    f = one(found, "ort-multiple-packages")
    assert "onnxruntime 1.31.1" in f.detail
    assert "overwritten" in f.detail
    assert "CPU build" in f.detail
    assert f.fix is not None
    assert "pip uninstall -y onnxruntime-gpu onnxruntime" in f.fix
    assert "ort-cpu-only" not in ids(found)  # one problem, one fix


def test_genai_sibling_is_not_a_second_onnxruntime_package() -> None:
    dists = (*ort_gpu().distributions,
             OrtDistribution("onnxruntime-genai-cuda", "0.13.1", SITE, f"{SITE}/onnxruntime_genai_cuda-0.13.1.dist-info"))
    assert "ort-multiple-packages" not in ids(run(healthy_env(ort=ort_gpu(distributions=dists))))


def test_ort_install_damaged() -> None:
    f = one(run(healthy_env(ort=ort_gpu(build_info_error="SyntaxError")), full_plan()), "ort-install-damaged")
    assert "SyntaxError" in f.detail
    assert "ort-install-damaged" not in ids(run())


def test_ort_known_bad_release() -> None:
    ort = ort_gpu(version="1.27.0", distributions=(replace(ort_gpu().distributions[0], version="1.27.0"),))
    f = one(run(healthy_env(ort=ort)), "ort-known-bad-release")
    assert "libcudart.so.13" in f.detail
    assert f.fix == 'pip install "onnxruntime-gpu!=1.27.0"'
    assert "ort-known-bad-release" not in ids(run())


def test_ort_version_unverified() -> None:
    f = one(run(healthy_env(ort=ort_gpu(version="1.99.0"))), "ort-version-unverified")
    assert f.severity == "info"
    assert "1.99.0" in f.detail
    assert "ort-version-unverified" not in ids(run())


def test_ort_import_fails_when_the_pybind_module_needs_a_missing_cudart() -> None:
    pybind = ElfInfo(f"{SITE}/onnxruntime/capi/onnxruntime_pybind11_state.so", "x86_64", 64,
                     needed=("libcudart.so.13", "libc.so.6"))
    env = healthy_env(ort=ort_gpu(pybind=pybind))
    found = run(env, full_plan(cudart=lib("cudart", "libcudart.so.13", None)))
    f = one(found, "ort-import-fails")
    assert "libcudart.so.13" in f.detail
    assert f.severity == "error"
    # found and loadable: the import works
    assert "ort-import-fails" not in ids(run(env, full_plan()))


def test_ort_import_fails_when_cudart_is_only_in_a_wheel_dir() -> None:
    pybind = ElfInfo(f"{SITE}/onnxruntime/capi/x.so", "x86_64", 64, needed=("libcudart.so.13",))
    env = healthy_env(ort=ort_gpu(pybind=pybind), system=SystemInfo())
    f = one(run(env), "ort-import-fails")
    assert "ortdoctor.hook" in (f.fix or "")


def test_platform_no_cuda_on_macos() -> None:
    env = healthy_env(ort=ort_cpu(), python=python_info(os="darwin", machine="arm64", platform="macosx-14-arm64"))
    assert "platform-no-cuda" in ids(run(env))
    assert "platform-no-cuda" not in ids(run())


# ------------------------------------------------------------------------------------------------
# Libraries
# ------------------------------------------------------------------------------------------------
def test_cuda_lib_missing_required_is_an_error_naming_the_wheel() -> None:
    found = run(plan=full_plan(curand=lib("curand", "libcurand.so.10", None)))
    f = one(found, "cuda-lib-missing")
    assert f.severity == "error"
    assert "libcurand.so.10" in f.detail
    assert f.fix is not None
    # 1.31.1's own extras bring every library of the build (curand included), pinned to the build
    assert f.fix.startswith("/venv/bin/python -m pip install 'onnxruntime-gpu[cuda,cudnn]==1.31.1'")
    assert [s.args for s in f.steps] == [("onnxruntime-gpu[cuda,cudnn]==1.31.1",)]


def test_cuda_lib_missing_lazy_only_is_a_warning() -> None:
    f = one(run(plan=full_plan(cufft=lib("cufft", "libcufft.so.12", None, required=False))), "cuda-lib-missing")
    assert f.severity == "warning"


def test_cudnn_missing_is_an_error_even_though_lazily_loaded() -> None:
    f = one(run(plan=full_plan(cudnn=lib("cudnn", "libcudnn.so.9", None, required=False))), "cuda-lib-missing")
    assert f.severity == "error"
    assert '\'onnxruntime-gpu[cuda,cudnn]==1.31.1\'' in (f.fix or "")


def test_libcuda_in_the_plan_is_left_to_the_driver_checks() -> None:
    plan = full_plan(libcuda=lib("cuda", "libcuda.so.1", None))
    assert "cuda-lib-missing" not in ids(run(plan=plan))


def test_cuda_major_mismatch_names_the_soname_and_both_fixes() -> None:
    other = (Candidate(f"{SITE}/nvidia/cuda_runtime/lib/libcudart.so.12", "nvidia-wheel", "12.9.79",
                       "CUDA 12 file, build needs CUDA 13"),)
    found = run(plan=full_plan(cudart=lib("cudart", "libcudart.so.13", None, others=other)))
    f = one(found, "cuda-major-mismatch")
    assert "libcudart.so.13" in f.detail
    assert "libcudart.so.12" in f.detail
    assert f.fix is not None
    assert '\'onnxruntime-gpu[cuda,cudnn]==1.31.1\'' in f.fix  # the whole CUDA 13 set in one command
    assert CU12_FEED in f.fix
    assert "cuda-lib-missing" not in ids(found)
    assert "cuda-major-mismatch" not in ids(run())


def test_cudnn_major_mismatch() -> None:
    other = (Candidate("/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "system", None, "cuDNN 8 file, build needs cuDNN 9"),)
    found = run(plan=full_plan(cudnn=lib("cudnn", "libcudnn.so.9", None, required=False, others=other)))
    f = one(found, "cudnn-major-mismatch")
    assert f.severity == "error"
    assert "libcudnn.so.8" in f.detail
    assert '\'onnxruntime-gpu[cuda,cudnn]==1.31.1\'' in (f.fix or "")
    assert "cuda-major-mismatch" not in ids(found)


def test_cuda_lib_not_loadable_needs_preload() -> None:
    env = healthy_env(system=SystemInfo())
    f = one(run(env), "cuda-lib-not-loadable")
    assert f.severity == "warning"
    assert f.fix is not None
    assert "import ortdoctor.hook" in f.fix
    assert f"export LD_LIBRARY_PATH={CU13}:{CUDNN}" in f.fix


def test_libraries_in_the_ld_cache_or_runpath_are_loadable() -> None:
    cache = {"libcudart.so.13": (f"{CU13}/libcudart.so.13",)}
    env = healthy_env(system=system_with_path(CUDNN, ldconfig=cache))
    assert loader_visible(env, "libcudart.so.13", Candidate(f"{CU13}/libcudart.so.13", "system"))
    prov = replace(ort_gpu().cuda_provider, runpath=("$ORIGIN/../../nvidia/cu13/lib",))  # type: ignore[type-var]
    env2 = healthy_env(ort=ort_gpu(cuda_provider=prov), system=system_with_path(CUDNN))
    assert loader_visible(env2, "libcublas.so.13", Candidate(f"{CU13}/libcublas.so.13", "nvidia-wheel"))
    assert "cuda-lib-not-loadable" not in ids(run(env2))
    assert not loader_visible(healthy_env(system=SystemInfo()), "libcublas.so.13",
                              Candidate(f"{CU13}/libcublas.so.13", "nvidia-wheel"))


def test_an_earlier_ld_library_path_copy_is_what_the_loader_takes() -> None:
    # the chosen wheel copy is on LD_LIBRARY_PATH too, but an old toolkit directory comes first
    old = "/opt/cuda-13.0/lib64"
    extra = (Candidate(f"{old}/libcudart.so.13", "system", "13.0.48"),)
    plan = full_plan(cudart=lib("cudart", "libcudart.so.13", f"{CU13}/libcudart.so.13", version="13.0.96", extra=extra))
    found = run(healthy_env(system=system_with_path(old, CU13, CUDNN)), plan)
    f = one(found, "default-loader-picks-other-copy")
    assert f.severity == "warning"
    assert f"libcudart.so.13: the loader takes {old} (LD_LIBRARY_PATH), 13.0.48 instead of the chosen 13.0.96" \
        in f.detail
    assert "cuda-lib-not-loadable" not in ids(found)
    pick = default_loader_copy(healthy_env(system=system_with_path(old, CU13, CUDNN)), plan.libraries[5])
    assert pick is not None
    assert (pick.path, pick.version, pick.via, pick.same_as_chosen) == (f"{old}/libcudart.so.13", "13.0.48",
                                                                        "LD_LIBRARY_PATH", False)


def test_same_version_default_copies_without_torch_are_a_note() -> None:
    other = "/opt/cuda/lib64"
    extra = (Candidate(f"{other}/libcudart.so.13", "cuda-home", "13.0.96"),)
    plan = full_plan(cudart=lib("cudart", "libcudart.so.13", f"{CU13}/libcudart.so.13", version="13.0.96", extra=extra))
    found = run(healthy_env(system=system_with_path(CUDNN, ldconfig={"libcudart.so.13": (f"{other}/libcudart.so.13",)})),
                plan)
    assert one(found, "default-loader-picks-other-copy").severity == "info"
    assert one(found, "lib-multiple-copies").severity == "info"  # same-version duplicates only


def test_windows_keeps_the_preload_finding() -> None:
    assert default_loader_copy(healthy_env(), full_plan().libraries[0], os_name="windows") is None


def test_torch_on_other_files_than_the_preload() -> None:
    wheels = (NvidiaWheel("nvidia-cudnn-cu13", "9.19.0.56", SITE, (CUDNN,), ("libcudnn.so.9",), 13),)
    torch = TorchInfo("2.11.0", "13.0", "9.19.0", f"{SITE}/torch/lib", SITE)
    plan = full_plan(cudnn=lib("cudnn", "libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", required=False,
                               version="9.14.0", source="system"))
    env = healthy_env(torch=torch, nvidia_wheels=wheels,
                      system=system_with_path(CU13, CUDNN, "/usr/lib/x86_64-linux-gnu"))
    f = one(run(env, plan), "torch-loads-other-copy")
    assert f.severity == "warning"
    assert "libcudnn.so.9: onnxruntime gets system /usr/lib/x86_64-linux-gnu" in f.detail
    assert "9.14.0 vs torch's 9.19.0.56" in f.detail
    # the same files: a note
    same = run(healthy_env(torch=torch, nvidia_wheels=wheels))
    assert one(same, "torch-shares-libraries").severity == "info"
    assert "torch-loads-other-copy" not in ids(same)


def test_lib_multiple_copies_with_different_versions() -> None:
    extra = (Candidate("/usr/local/cuda/lib64/libcudart.so.13", "cuda-home", "13.2.10"),)
    plan = full_plan(cudart=lib("cudart", "libcudart.so.13", f"{CU13}/libcudart.so.13", version="13.0.96", extra=extra))
    f = one(run(plan=plan), "lib-multiple-copies")
    assert "13.2.10" in f.detail
    assert "13.0.96" in f.detail
    rejected = (Candidate("/usr/local/cuda/lib64/libcudart.so.13", "cuda-home", "13.2.10", "shadowed"),)
    plan_ok = full_plan(cudart=lib("cudart", "libcudart.so.13", f"{CU13}/libcudart.so.13", version="13.0.96",
                                   extra=rejected))
    assert "lib-multiple-copies" not in ids(run(plan=plan_ok))


def test_cublas_and_cublaslt_from_different_directories() -> None:
    plan = full_plan(cublas=lib("cublas", "libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13"))
    env = healthy_env(system=system_with_path(CU13, CUDNN, "/usr/local/cuda/lib64"))
    f = one(run(env, plan), "lib-multiple-copies")
    assert "cuBLAS/cuBLASLt" in f.detail


def test_cudnn_split_across_directories_is_a_sublibrary_mismatch() -> None:
    plan = full_plan(cudnn_graph=lib("cudnn_graph", "libcudnn_graph.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn_graph.so.9",
                                     required=False, source="system"))
    env = healthy_env(system=system_with_path(CU13, CUDNN, "/usr/lib/x86_64-linux-gnu"))
    found = run(env, plan)
    assert "cudnn-sublibrary-mismatch" in ids(found)
    assert "lib-multiple-copies" in ids(found)


def test_resolver_findings_are_merged_unless_superseded() -> None:
    extra = Finding("unsafe-library-dir", "warning", "t", "d", None)
    plan = replace(full_plan(), findings=(extra,))
    assert "unsafe-library-dir" in ids(run(plan=plan))
    dup = Finding("ld-library-path-unsafe-entry", "warning", "t", "d", None)
    env = healthy_env(system=SystemInfo(ld_library_path=(SearchDir("", "LD_LIBRARY_PATH", note="empty entry"),
                                                         SearchDir(CU13, "LD_LIBRARY_PATH"),
                                                         SearchDir(CUDNN, "LD_LIBRARY_PATH"))))
    found = run(env, replace(full_plan(), findings=(dup,)))
    assert "ld-library-path-unsafe" in ids(found)
    assert "ld-library-path-unsafe-entry" not in ids(found)


# ------------------------------------------------------------------------------------------------
# Driver and GPU
# ------------------------------------------------------------------------------------------------
def test_driver_missing() -> None:
    f = one(run(healthy_env(driver=driver_none())), "driver-missing")
    assert f.severity == "error"
    assert "libnvidia-ml.so.1" in f.detail
    assert f.fix is not None
    assert "nvidia-driver-580" in f.fix
    assert "580.65.06" in f.fix
    assert "driver-missing" not in ids(run())


def test_driver_missing_in_a_container_says_gpus_all() -> None:
    env = healthy_env(driver=driver_none(), python=python_info(container=("/.dockerenv",)))
    f = one(run(env), "driver-missing")
    assert "--gpus all" in (f.fix or "")
    assert "/.dockerenv" in f.detail


def test_driver_not_loaded() -> None:
    env = healthy_env(driver=driver_none(error_kind=DriverError.DRIVER_NOT_LOADED, error="Driver Not Loaded"))
    f = one(run(env), "driver-missing")
    assert "modprobe nvidia" in (f.fix or "")


def test_driver_library_mismatch() -> None:
    drv = driver_none(error_kind=DriverError.LIB_RM_VERSION_MISMATCH, error="Driver/library version mismatch",
                      kernel_module_version="570.86.15")
    f = one(run(healthy_env(driver=drv)), "driver-library-mismatch")
    assert "570.86.15" in f.detail
    assert "Reboot" in (f.fix or "")
    assert "driver-missing" not in ids(run(healthy_env(driver=drv)))


def test_driver_error() -> None:
    drv = driver_none(error_kind=DriverError.NO_PERMISSION, error="Insufficient Permissions")
    assert "driver-error" in ids(run(healthy_env(driver=drv)))


def test_driver_too_old_for_cuda_13() -> None:
    env = healthy_env(driver=driver_ok(version="550.54.14", cuda_version="12.4"))
    f = one(run(env), "driver-too-old")
    assert "550.54.14" in f.detail
    assert "12.4" in f.detail
    assert "13.0" in f.detail
    assert f.fix is not None
    assert "580.65.06" in f.fix
    assert CU12_FEED in f.fix


def test_driver_new_enough_is_not_too_old() -> None:
    assert "driver-too-old" not in ids(run(healthy_env(driver=driver_ok(version="595.58.03", cuda_version="13.2"))))


def test_driver_below_minimum_even_if_cuda_major_matches() -> None:
    env = healthy_env(driver=driver_ok(version="575.51.03", cuda_version="13.0"))
    assert "driver-too-old" in ids(run(env))


def test_no_gpu_visible_without_devices() -> None:
    f = one(run(healthy_env(driver=driver_ok(devices=()))), "no-gpu-visible")
    assert f.severity == "error"


def test_no_gpu_visible_in_a_container_says_gpus_all() -> None:
    env = healthy_env(driver=driver_ok(devices=(), nvidia_visible_devices="void"),
                      python=python_info(container=("/.dockerenv",)))
    f = one(run(env), "no-gpu-visible")
    assert "--gpus all" in (f.fix or "")
    assert "void" in f.detail


def test_cuda_visible_devices_empty_hides_every_gpu() -> None:
    env = healthy_env(driver=driver_ok(cuda_visible_devices=""))
    f = one(run(env), "no-gpu-visible")
    assert "CUDA_VISIBLE_DEVICES" in f.detail
    assert "unset CUDA_VISIBLE_DEVICES" in (f.fix or "")
    assert "no-gpu-visible" not in ids(run(healthy_env(driver=driver_ok(cuda_visible_devices="0"))))


def test_visible_devices_follow_cudas_rules() -> None:
    two = (H200, replace(H200, index=1, uuid="GPU-bbbb"))
    assert [d.index for d in visible_devices(driver_ok(devices=two, cuda_visible_devices="1"))[0]] == [1]
    assert [d.index for d in visible_devices(driver_ok(devices=two, cuda_visible_devices="GPU-bb,0"))[0]] == [1, 0]
    # enumeration stops at the first invalid entry
    assert [d.index for d in visible_devices(driver_ok(devices=two, cuda_visible_devices="0,7,1"))[0]] == [0]
    assert visible_devices(driver_ok(devices=two, cuda_visible_devices="-1"))[0] == []


def test_invalid_device_ordinal_after_remapping() -> None:
    two = (H200, replace(H200, index=1, uuid="GPU-bbbb"))
    env = healthy_env(driver=driver_ok(devices=two, cuda_visible_devices="1"))
    f = one(run(env, device_id=1), "invalid-device-ordinal")
    assert "1 GPU(s) are visible" in f.detail
    assert "CUDA_VISIBLE_DEVICES='1'" in f.detail
    assert "invalid-device-ordinal" not in ids(run(env, device_id=0))


def test_gpu_arch_unsupported_for_a_gpu_newer_than_the_build() -> None:
    ort = ort_gpu(version="1.31.0")
    matrix_release = replace(MATRIX.releases[0], archs=("sm_75", "sm_80", "sm_86", "sm_89", "sm_90"))
    matrix = replace(MATRIX, releases=(matrix_release, *MATRIX.releases[1:]))
    blackwell = replace(H200, name="NVIDIA GeForce RTX 5090", compute_capability="12.0")
    f = one(diagnose(healthy_env(ort=ort, driver=driver_ok(devices=(blackwell,))), full_plan(), matrix),
            "gpu-arch-unsupported")
    assert "sm_120" in f.detail
    # same major, higher minor runs the older cubin (sm_86 on an sm_80 cubin)
    ampere = replace(H200, name="NVIDIA RTX A6000", compute_capability="8.6")
    assert "gpu-arch-unsupported" not in ids(diagnose(healthy_env(driver=driver_ok(devices=(ampere,))),
                                                      full_plan(), matrix))


def test_gpu_arch_unsupported_for_pascal_on_cuda_13() -> None:
    pascal = replace(H200, name="NVIDIA GeForce GTX 1080", compute_capability="6.1")
    f = one(run(healthy_env(driver=driver_ok(devices=(pascal,)))), "gpu-arch-unsupported")
    assert "CUDA 13" in f.detail
    assert CU12_FEED in (f.fix or "")


def test_gpu_low_memory() -> None:
    busy = replace(H200, memory_free_mib=300)
    f = one(run(healthy_env(driver=driver_ok(devices=(busy,)))), "gpu-low-memory")
    assert "300 MiB free" in f.detail
    assert "gpu-low-memory" not in ids(run())


def test_wsl_without_the_windows_libcuda() -> None:
    env = healthy_env(driver=driver_none(), python=python_info(wsl=True))
    found = run(env)
    assert "wsl-libcuda-missing" in ids(found)
    assert "driver-missing" not in ids(found)


def test_cuda_compat_on_a_consumer_gpu() -> None:
    rtx = replace(H200, name="NVIDIA GeForce RTX 4090", compute_capability="8.9")
    drv = driver_ok(devices=(rtx,), libcuda=("/usr/local/cuda/compat/libcuda.so.1",))
    f = one(run(healthy_env(driver=drv)), "cuda-compat-on-unsupported-hw")
    assert f.severity == "error"
    assert "GeForce" in f.detail
    dc = one(run(healthy_env(driver=driver_ok(libcuda=("/usr/local/cuda/compat/libcuda.so.1",)))),
             "cuda-compat-on-unsupported-hw")
    assert dc.severity == "warning"


# ------------------------------------------------------------------------------------------------
# Neighbours
# ------------------------------------------------------------------------------------------------
def test_torch_cuda_mismatch() -> None:
    torch = TorchInfo("2.11.0+cu128", "12.8", "9.10.2", f"{SITE}/torch/lib", SITE)
    f = one(run(healthy_env(torch=torch)), "torch-cuda-mismatch")
    assert "12.8" in f.detail
    assert f.severity == "warning"
    assert f.fix is not None
    assert ("torch" in f.fix)
    assert CU12_FEED in f.fix


def test_torch_with_the_same_majors_is_fine() -> None:
    torch = TorchInfo("2.11.0+cu130", "13.0", "9.19.0", f"{SITE}/torch/lib", SITE)
    assert "torch-cuda-mismatch" not in ids(run(healthy_env(torch=torch)))
    cpu_torch = TorchInfo("2.11.0+cpu", None, None, None, SITE)
    assert "torch-cuda-mismatch" not in ids(run(healthy_env(torch=cpu_torch)))


def test_torch_cudnn_major_mismatch() -> None:
    torch = TorchInfo("2.3.1+cu130", "13.0", "8.9.2", f"{SITE}/torch/lib", SITE)
    assert "cuDNN 8.9.2" in one(run(healthy_env(torch=torch)), "torch-cuda-mismatch").detail


def test_sibling_cuda_major_mismatch() -> None:
    genai = ElfInfo(f"{SITE}/onnxruntime_genai/libonnxruntime-genai-cuda.so", "x86_64", 64,
                    needed=("libcublasLt.so.12", "libcudart.so.12", "libcurand.so.10"))
    f = one(run(healthy_env(ort=ort_gpu(other_cuda_libraries=(genai,)))), "sibling-cuda-major-mismatch")
    assert "libcublasLt.so.12" in f.detail
    same = replace(genai, needed=("libcublasLt.so.13",))
    assert "sibling-cuda-major-mismatch" not in ids(run(healthy_env(ort=ort_gpu(other_cuda_libraries=(same,)))))


# ------------------------------------------------------------------------------------------------
# Search path, stubs, program
# ------------------------------------------------------------------------------------------------
def test_ld_library_path_unsafe_entries() -> None:
    entries = (SearchDir("", "LD_LIBRARY_PATH", note="empty entry = current directory"),
               SearchDir("lib", "LD_LIBRARY_PATH", relative=True),
               SearchDir("/tmp/libs", "LD_LIBRARY_PATH", world_writable=True),
               SearchDir(CU13, "LD_LIBRARY_PATH"), SearchDir(CUDNN, "LD_LIBRARY_PATH"))
    f = one(run(healthy_env(system=SystemInfo(ld_library_path=entries))), "ld-library-path-unsafe")
    assert "(empty)" in f.detail
    assert "lib: relative" in f.detail
    assert "/tmp/libs: world-writable" in f.detail
    assert CU13 not in f.detail
    assert f.fix is not None
    assert f.fix.startswith(f"export LD_LIBRARY_PATH={CU13}:{CUDNN}\n")  # the variable without the unsafe ones
    assert "ld-library-path-unsafe" not in ids(run())


def test_nvidia_wheel_stub() -> None:
    stub = NvidiaWheel("nvidia-cublas-cu13", "0.0.1", SITE)
    f = one(run(healthy_env(nvidia_wheels=(stub,))), "nvidia-wheel-stub")
    # with this interpreter's pip (the test matrix has no package table, so no series pin)
    assert "/venv/bin/python -m pip uninstall -y nvidia-cublas-cu13\n/venv/bin/python -m pip install nvidia-cublas" == f.fix
    real_matrix = diagnose(healthy_env(nvidia_wheels=(stub,)), full_plan(), load_matrix())
    assert (one(real_matrix, "nvidia-wheel-stub").fix or "").endswith("-m pip install 'nvidia-cublas==13.*'")
    real = NvidiaWheel("nvidia-cublas", "13.1.0.3", SITE, (CU13,), ("libcublas.so.13",), 13)
    assert "nvidia-wheel-stub" not in ids(run(healthy_env(nvidia_wheels=(real,))))


def test_multiprocessing_fork_is_a_note() -> None:
    f = one(run(healthy_env(python=python_info(multiprocessing_start_method="fork"))), "multiprocessing-fork")
    assert f.severity == "info"
    assert "multiprocessing-fork" not in ids(run(healthy_env(ort=ort_cpu(), python=python_info(
        multiprocessing_start_method="fork"))))


# ------------------------------------------------------------------------------------------------
# The layout first: an unreadable directory, an activated environment that is not the one inspected
# ------------------------------------------------------------------------------------------------
def test_an_unreadable_site_directory_is_named_first_and_nothing_there_is_called_missing() -> None:
    env = healthy_env(python=python_info(unreadable=(SITE,)), ort=OrtInfo(installed=False),
                      driver=driver_none())
    found = run(env)
    assert ids(found)[0] == "path-unreadable"
    assert SITE in found[0].detail
    assert "ort-not-installed" not in ids(found)
    assert not any(f.steps for f in found)  # no ensurepip, no install of what may be there
    assert "driver-missing" in ids(found)  # what the directory does not decide stays


def test_an_unreadable_capi_directory_is_not_a_cpu_build() -> None:
    capi = f"{SITE}/onnxruntime/capi"
    env = healthy_env(python=python_info(unreadable=(capi,)), ort=ort_gpu(is_gpu_build=False, cuda_provider=None,
                                                                          cuda_version=None))
    found = run(env, plan=None)
    assert ids(found)[0] == "path-unreadable"
    assert "ort-cpu-only" not in ids(found)


def test_an_activated_environment_that_is_not_inspected_comes_first_and_no_fix_installs_here() -> None:
    """ortdoctor in its own venv, the user's venv activated: a package fix would fill ortdoctor's own
    environment (1.5 GB of it), so the activated environment is said first and the fixes wait for it."""
    py = python_info(virtual_env="/app-venv", prefix="/venv")
    found = run(healthy_env(python=py, ort=OrtInfo(installed=False)))
    assert ids(found)[0] == "virtual-env-not-inspected"
    assert found[0].severity == "error"
    # the re-check is run by this ortdoctor's own interpreter, not by the `ortdoctor` first on PATH (the
    # activated venv's copy, or none)
    assert found[0].fix == "/venv/bin/python -m ortdoctor check --python /app-venv/bin/python"
    assert [c.argv for c in found[0].commands] == [
        ("/venv/bin/python", "-m", "ortdoctor", "check", "--python", "/app-venv/bin/python")]
    missing = one(found, "ort-not-installed")
    assert missing.steps == ()
    assert "pip" not in (missing.fix or "")


@pytest.mark.parametrize(("version", "needed", "cuda"), [
    ("1.20.2", ("libcudart.so.12", "libcudnn.so.9"), "12.2"),
    ("1.18.0", ("libcudart.so.11.0", "libcudnn.so.8"), "11.8"),
    ("1.17.1", ("libcudart.so.11.0", "libcudnn.so.8"), "11.8"),
])
def test_an_old_wheel_gets_the_cuda_version_the_matrix_knows(version: str, needed: tuple[str, ...],
                                                              cuda: str) -> None:
    """Wheels before 1.21 carry no build info: "CUDA ?" in the header and null in the JSON, though the
    matrix has the release's CUDA version, read from its wheel."""
    from ortdoctor.decide.build import with_known_cuda

    pkg = f"{SITE}/onnxruntime"
    old = ort_gpu(version=version, cuda_version=None, cudnn_major=None, package_name=None,  # no build info
                  cuda_provider=ElfInfo(f"{pkg}/capi/libonnxruntime_providers_cuda.so", "x86_64", 64, needed=needed))
    assert with_known_cuda(old, load_matrix()).cuda_version == cuda
    # a build for another CUDA major than the PyPI wheel's (a feed build) gets only a version the matrix has
    cuda11_build_of_120 = replace(old, version="1.20.2", cuda_provider=ElfInfo(
        f"{pkg}/capi/libonnxruntime_providers_cuda.so", "x86_64", 64, needed=("libcudart.so.11.0", "libcudnn.so.8")))
    assert with_known_cuda(cuda11_build_of_120, load_matrix()).cuda_version == "11.8"  # the CUDA 11 feed's
    assert with_known_cuda(ort_gpu(), load_matrix()).cuda_version == "13.0"  # the wheel's own word stands
    # build info that was read but has no literal cuda_version: what it leaves out is not filled in
    assert with_known_cuda(ort_gpu(cuda_version=None), load_matrix()).cuda_version is None


def test_cudnn_built_for_another_cuda_is_named_so_and_never_advised_for_a_preload() -> None:
    """A CUDA 13 build whose cuDNN 9 comes from nvidia-cudnn-cu12: the same cuDNN major, another CUDA.
    The title says that (not "present only for another major"), and the preload advice leaves it out."""
    wheel = NvidiaWheel("nvidia-cudnn-cu12", "9.19.0.56", SITE, lib_dirs=(CUDNN,), cuda_major=12)
    found = run(healthy_env(nvidia_wheels=(wheel,), system=SystemInfo()))
    f = one(found, "cudnn-major-mismatch")
    assert f.title == "cuDNN 9 is installed, but built for CUDA 12, not the build's CUDA 13"
    advice = next((x for x in found if x.id == "cuda-lib-not-loadable"), None)
    assert advice is None or CUDNN not in advice.detail + (advice.fix or "")


def test_an_activated_environment_named_with_python_is_no_finding() -> None:
    py = python_info(virtual_env="/app-venv", prefix="/venv", inspected_other=True)
    assert "virtual-env-not-inspected" not in ids(run(healthy_env(python=py)))


# ------------------------------------------------------------------------------------------------
# Smoke results
# ------------------------------------------------------------------------------------------------
LIBCUDA_MSG = ("[E:onnxruntime:Default, provider_bridge_ort.cc:1862 TryGetProviderInfo_CUDA] Failed to load library "
               "libonnxruntime_providers_cuda.so with error: libcuda.so.1: cannot open shared object file: "
               "No such file or directory")
FALLBACK_MSG = ("[W:onnxruntime:Default, onnxruntime_pybind_state.cc:1036 CreateExecutionProviderInstance] Failed to "
                "create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 13.*.")


def smoke_result(text: str, **kw: Any) -> SmokeResult:
    """A failed smoke result whose causes come from the real classifier run on ORT's real text."""
    base = SmokeResult(ran=True, ok=False, providers=(), finding_id="smoke-fell-back-to-cpu",
                       causes=tuple(classify(text)), evidence=tuple(text.splitlines()),
                       error="fallback to CPU EP has been explicitly disabled by the user.")
    return replace(base, **kw)


def test_smoke_confirms_an_existing_finding_with_orts_message() -> None:
    smoke = smoke_result(LIBCUDA_MSG + "\n" + FALLBACK_MSG)
    found = run(healthy_env(driver=driver_none()), smoke=smoke)
    f = one(found, "driver-missing")
    assert "Confirmed by the smoke session" in f.detail
    assert "libcuda.so.1: cannot open shared object file" in f.detail
    # the cause carries the smoke session's evidence: no second error saying only that it fell back
    assert "smoke-fell-back-to-cpu" not in ids(found)
    # the consequence line is not a second finding
    assert "cuda-ep-fell-back-to-cpu" not in ids(found)


def test_smoke_cause_not_seen_by_inspection_is_added() -> None:
    found = run(smoke=smoke_result(LIBCUDA_MSG))
    f = one(found, "driver-missing")
    assert "libcuda.so.1" in f.detail
    assert f.severity == "error"


def test_smoke_without_a_classified_cause() -> None:
    smoke = SmokeResult(ran=True, ok=False, finding_id="smoke-failed", exit_status="SIGSEGV",
                        error="child killed by SIGSEGV")
    f = one(run(smoke=smoke), "smoke-failed")
    assert "SIGSEGV" in f.detail


# Without a driver the smoke session fails however the build fails; the report names one cause.
_SIGSEGV = SmokeResult(ran=True, ok=False, finding_id="smoke-failed", exit_status="SIGSEGV", stage="session",
                       error="the smoke child was killed by SIGSEGV while creating the CUDA session")


def _error_text(name: str) -> str:
    """The real text of a tests/data/errors sample (its last line; the others are its header)."""
    from pathlib import Path

    return (Path(__file__).parent / "data/errors" / name).read_text().splitlines()[-1]


def _error_35() -> SmokeResult:
    text = _error_text("mode08_cuda_failure_35.txt")
    return SmokeResult(ran=True, ok=False, finding_id="smoke-failed", stage="session", error=text, message_text=text)


@pytest.mark.parametrize("smoke", [_SIGSEGV, _error_35()], ids=["provider-crash", "cuda-error-35"])
def test_without_a_driver_a_failed_smoke_is_the_missing_drivers_doing(smoke: SmokeResult) -> None:
    """1.18/1.22 crash in the CUDA provider's initialisers without a driver, 1.17 reports CUDA error 35:
    either way one error, driver-missing, which the smoke session confirms; no smoke-failed whose fix
    points at itself, no "upgrade the driver" on a machine that has none."""
    from ortdoctor.diagnose.smoke import classify_smoke

    env = healthy_env(driver=driver_none())
    found = run(env, smoke=smoke)
    assert [f.id for f in found if f.severity == "error"] == ["driver-missing"], ids(found)
    assert "Confirmed by the smoke session" in one(found, "driver-missing").detail
    told = classify_smoke(smoke, no_driver=True)
    assert told.cause_ids[0] == "driver-missing"
    assert "driver-too-old" not in told.cause_ids


def test_without_a_driver_the_smoke_row_says_it_could_not_run_and_why() -> None:
    from ortdoctor.diagnose.smoke import classify_smoke
    from ortdoctor.report.model import Report, verdict_of
    from ortdoctor.report.text import render

    env = healthy_env(driver=driver_none())
    smoke = classify_smoke(_SIGSEGV, no_driver=True)
    findings = run(env, smoke=smoke)
    text = render(Report(verdict=verdict_of(findings), findings=tuple(findings), env=env, plan=full_plan(),
                         matrix_path="<test>", smoke=smoke))
    row = next(line for line in text.splitlines() if line.startswith("Smoke"))
    assert "could not run on the GPU (no usable NVIDIA driver)" in row
    assert "[driver-missing]" in text.split(row, 1)[1].splitlines()[1]  # the cause, under the row
    assert "smoke-failed" not in text


def test_with_a_driver_the_same_failures_are_what_they_say() -> None:
    assert "smoke-failed" in ids(run(smoke=_SIGSEGV))
    assert "driver-too-old" in ids(run(smoke=_error_35()))


def test_without_a_driver_a_missing_library_stays_a_cause_of_its_own() -> None:
    """What the files lack is not the driver's doing: the classified cause stays beside driver-missing."""
    from ortdoctor.diagnose.smoke import classify_smoke

    text = _error_text("mode02_cudnn_adv_missing.txt")
    told = classify_smoke(smoke_result(text, stage="session"), no_driver=True)
    assert told.cause_ids[0] == "driver-missing"
    assert "cuda-lib-missing" in told.cause_ids


def test_without_a_driver_a_library_that_links_libcuda_is_not_called_missing() -> None:
    """cuDNN 9's runtime-compiled engines link libcuda.so.1: the child's preload finds the file and cannot
    load it, and ORT then says it cannot open it. Installing cuDNN again would change nothing."""
    from ortdoctor.diagnose.smoke import classify_smoke

    lib = f"{CUDNN}/libcudnn_adv.so.9"
    preload = {"failed": [{"name": "cudnn_adv", "soname": "libcudnn_adv.so.9",
                           "error": f"{lib}: libcuda.so.1: cannot open shared object file: No such file or directory"}]}
    smoke = smoke_result(_error_text("mode02_cudnn_adv_missing.txt"), stage="session", preload=preload)
    told = classify_smoke(smoke, no_driver=True)
    assert told.cause_ids == ("driver-missing",)
    found = run(healthy_env(driver=driver_none()), smoke=told)
    assert [f.id for f in found if f.severity == "error"] == ["driver-missing"], ids(found)


def test_a_cut_short_library_ort_cannot_open_is_said_once() -> None:
    """ORT cannot open a library ortdoctor already found cut short: the smoke session confirms
    lib-file-damaged; no second error (cuda-lib-missing) with advice about ldconfig for the same file."""
    from ortdoctor.core.catalog import make
    from ortdoctor.diagnose.merge import merge_smoke

    damaged = make("lib-file-damaged", f"{CUDNN}/libcudnn_adv.so.9: 4096 bytes, but nvidia-cudnn-cu13 9.19.0.56 "
                   "installed 250000000 bytes")
    found = merge_smoke([damaged], smoke_result(_error_text("mode02_cudnn_adv_missing.txt"), stage="session"))
    assert ids(found) == ["lib-file-damaged"]
    assert "Confirmed by the smoke session" in found[0].detail


def test_without_a_driver_an_import_failure_is_not_blamed_on_it() -> None:
    from ortdoctor.diagnose.smoke import classify_smoke

    smoke = replace(_SIGSEGV, stage="import")
    assert classify_smoke(smoke, no_driver=True).cause_ids == ()


def test_smoke_with_an_unknown_id_becomes_smoke_failed() -> None:
    # an id from outside (a child's JSON) that the catalog does not know: the type rejects it, the code copes
    smoke = SmokeResult(ran=True, ok=False, finding_id="no-such-id", error="Segmentation fault")  # type: ignore[arg-type]
    assert "Segmentation fault" in one(run(smoke=smoke), "smoke-failed").detail


def test_passing_or_skipped_smoke_adds_nothing() -> None:
    assert run(smoke=SmokeResult(ran=True, ok=True, providers=("CUDAExecutionProvider", "CPUExecutionProvider"))) == []
    assert run(smoke=SmokeResult(ran=False, ok=False, error="--no-smoke")) == []


def test_findings_are_plain_dataclasses() -> None:
    for f in run(healthy_env(driver=driver_none())):
        assert dataclasses.is_dataclass(f)


@pytest.mark.parametrize("fid", sorted(CATALOG))
def test_catalog_entries_are_complete(fid: str) -> None:
    e = CATALOG[fid]
    assert e.title
    assert e.cause
    assert e.evidence
    assert e.fix
    assert e.severity in ("error", "warning", "info")


def test_nvml_without_libcuda_cannot_run_a_session() -> None:
    """A container started with NVIDIA_DRIVER_CAPABILITIES=utility: nvidia-smi works, CUDA does not."""
    found = run(healthy_env(driver=driver_ok(libcuda=())))
    f = one(found, "libcuda-missing")
    assert f.severity == "error"
    assert "NVML works" in f.detail
    assert "libcuda-missing" not in ids(run())


def test_libraries_only_a_preload_finds_are_a_note_when_the_hook_is_installed() -> None:
    from ortdoctor.report.model import Report, verdict_of

    bare = healthy_env(system=SystemInfo())
    hooked = dataclasses.replace(bare, python=dataclasses.replace(bare.python, hook_pth=f"{SITE}/ortdoctor_hook.pth"))
    for env, severity, outcome in ((bare, "warning", "works-with-preload"), (hooked, "info", "works")):
        found = run(env)
        assert one(found, "cuda-lib-not-loadable").severity == severity
        report = Report(verdict_of(found), tuple(found), env, full_plan(), None)
        assert report.outcome == outcome
