"""The resolver: search order, directory semantics, coherence, rejections and safety (pure decisions on
facts built by hand; directory listings built from real trees in tmp_path or by hand)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ortdoctor.core.facts import (
    Candidate,
    DriverInfo,
    ElfInfo,
    Environment,
    LibraryPlan,
    NvidiaWheel,
    OrtInfo,
    Plan,
    PythonInfo,
    SearchDir,
    SystemInfo,
    TorchInfo,
)
from ortdoctor.core.record import replace
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.names import version_from_filename
from ortdoctor.decide.resolve import resolve
from ortdoctor.decide.search import DirectoryError, DirListing, index_dirs

MATRIX = load_matrix()

PROVIDER_NEEDED = ("libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", "libcudart.so.13", "libcuda.so.1")
CUDA_FILES = ("libcublasLt.so.13", "libcublas.so.13", "libnvrtc.so.13", "libcurand.so.10", "libcufft.so.12",
              "libcudart.so.13")
CUDNN_FILES = ("libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9")


def make_env(*, sites: tuple[str, ...] = ("/site",), ort_dir: str = "/site/onnxruntime",
             torch: TorchInfo | None = None, ld: tuple[SearchDir, ...] = (), ldconfig: dict[str, tuple[str, ...]] | None = None,
             default: tuple[str, ...] = ("/usr/lib/x86_64-linux-gnu",), conda: str | None = None,
             cuda_home: str | None = None, wheels: tuple[NvidiaWheel, ...] = (),
             needed: tuple[str, ...] = PROVIDER_NEEDED,
             mapped: tuple[str, ...] = (), os_name: str = "linux", cuda_version: str | None = "13.0") -> Environment:
    provider = ElfInfo(path=f"{ort_dir}/capi/libonnxruntime_providers_cuda.so", machine="x86_64", bits=64,
                       needed=needed)
    return Environment(
        python=PythonInfo(version="3.11.7", executable="/usr/bin/python3", implementation="cpython",
                          platform="linux-x86_64", machine="x86_64", os=os_name, site_dirs=sites),
        ort=OrtInfo(installed=True, package_dir=ort_dir, cuda_version=cuda_version, cudnn_major=9,
                    is_gpu_build=True, cuda_provider=provider),
        torch=torch, nvidia_wheels=wheels,
        system=SystemInfo(conda_prefix=conda, cuda_home=cuda_home, ld_library_path=ld, ldconfig=ldconfig or {},
                          default_dirs=tuple(SearchDir(d, "default") for d in default)),
        driver=DriverInfo(available=False), mapped=mapped,
    )


def listing(path: str, *names: str, world_writable: bool = False, real: dict[str, str] | None = None) -> DirListing:
    files = {n: (real or {}).get(n, f"{path}/{n}") for n in names}
    return DirListing(path, True, path, files, world_writable=world_writable)


def idx(*listings: DirListing) -> dict[str, DirListing]:
    return {lst.path: lst for lst in listings}


def by_name(plan: Plan) -> dict[str, LibraryPlan]:
    return {lp.name: lp for lp in plan.libraries}


def chosen(lp: LibraryPlan) -> Candidate:
    assert lp.chosen is not None, f"{lp.name}: nothing chosen"
    return lp.chosen


WHEEL_DIRS = ("/site/nvidia/cu13/lib", "/site/nvidia/cudnn/lib")


def full_site(site: str = "/site") -> tuple[DirListing, DirListing]:
    return listing(f"{site}/nvidia/cu13/lib", *CUDA_FILES), listing(f"{site}/nvidia/cudnn/lib", *CUDNN_FILES)


def test_default_order_prefers_wheels_and_keeps_system_copy_as_shadowed() -> None:
    env = make_env()
    index = idx(*full_site(), listing("/usr/lib/x86_64-linux-gnu", *CUDA_FILES, "libcudnn.so.9"))
    plan = resolve(env, MATRIX, index=index)
    libs = by_name(plan)
    assert plan.cuda_major == 13
    assert plan.cudnn_major == 9
    assert [lp.name for lp in plan.libraries][:7] == ["cublasLt", "cublas", "nvrtc", "curand", "cufft", "cudart",
                                                      "cudnn"]
    assert chosen(libs["cudart"]).path == "/site/nvidia/cu13/lib/libcudart.so.13"
    assert chosen(libs["cudart"]).source == "nvidia-wheel"
    assert chosen(libs["cudnn"]).path == "/site/nvidia/cudnn/lib/libcudnn.so.9"
    system = [c for c in libs["cudart"].candidates if c.source == "system"]
    assert system
    assert system[0].rejected is None  # an acceptable alternative (facts.Candidate's contract)
    assert libs["cudart"].required
    assert not libs["cufft"].required
    assert not libs["cudnn"].required


def test_versions_come_from_the_wheel_or_the_file_name() -> None:
    env = make_env(wheels=(NvidiaWheel("nvidia-cuda-runtime", "13.0.96", "/site"),))
    index = idx(listing("/site/nvidia/cu13/lib", *CUDA_FILES),
                listing("/usr/lib/x86_64-linux-gnu", "libcudnn.so.9",
                        real={"libcudnn.so.9": "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"}))
    libs = by_name(resolve(env, MATRIX, index=index))
    assert chosen(libs["cudart"]).version == "13.0.96"
    assert chosen(libs["cublas"]).version is None
    assert chosen(libs["cudnn"]).version == "9.14.0"
    assert chosen(libs["cudnn"]).source == "system"


def test_version_from_filename() -> None:
    assert version_from_filename("/x/libcudnn.so.9.14.0", "libcudnn.so.9") == "9.14.0"
    assert version_from_filename("/x/libcudart.so.13.0.96", "libcudart.so.13") == "13.0.96"
    assert version_from_filename("/x/libcudart.so.13", "libcudart.so.13") is None
    assert version_from_filename("/x/libcublasLt.so.13.1.0", "libcublas.so.13") is None


def test_empty_directory_means_wheels_then_system_only() -> None:
    env = make_env(conda="/conda", cuda_home="/usr/local/cuda",
                   torch=TorchInfo("2.11.0+cu130", "13.0", "9.19.0", "/site/torch/lib", "/site"))
    index = idx(listing("/conda/lib", *CUDA_FILES), listing("/usr/local/cuda/lib64", *CUDA_FILES),
                listing("/site/torch/lib", *CUDA_FILES), listing("/usr/lib/x86_64-linux-gnu", *CUDA_FILES))
    libs = by_name(resolve(env, MATRIX, directory="", index=index))
    assert chosen(libs["cudart"]).source == "system"
    assert {c.source for c in libs["cudart"].candidates} == {"system"}
    libs = by_name(resolve(env, MATRIX, directory=None, index=index))
    assert chosen(libs["cudart"]).source == "torch"
    sources = [c.source for c in libs["cudart"].candidates]
    assert sources == ["torch", "conda", "cuda-home", "system"]


def test_torch_lib_is_used_only_when_its_majors_match() -> None:
    env = make_env(torch=TorchInfo("2.5.1+cu124", "12.4", "9.1.0", "/site/torch/lib", "/site"))
    index = idx(listing("/site/torch/lib", *CUDA_FILES), *full_site())
    libs = by_name(resolve(env, MATRIX, index=index))
    assert chosen(libs["cudart"]).source == "nvidia-wheel"
    assert all(c.source != "torch" for c in libs["cudart"].candidates)


def test_explicit_directory_then_system_and_relative_to_the_ort_package(tmp_path: Path) -> None:
    ort_dir = tmp_path / "site" / "onnxruntime"
    (ort_dir / "libs").mkdir(parents=True)
    env = make_env(ort_dir=str(ort_dir))
    libdir = str(ort_dir / "libs")
    index = idx(listing(libdir, "libcudart.so.13"), *full_site(), listing("/usr/lib/x86_64-linux-gnu", *CUDA_FILES))
    libs = by_name(resolve(env, MATRIX, directory="libs", index=index))
    assert chosen(libs["cudart"]).path == f"{libdir}/libcudart.so.13"
    assert chosen(libs["cudart"]).source == "directory"
    assert chosen(libs["cublas"]).source == "system"  # the wheels are not searched with a path
    with pytest.raises(DirectoryError, match="does not exist"):
        resolve(env, MATRIX, directory=str(tmp_path / "nope"))
    with pytest.raises(RuntimeError):  # what onnxruntime.preload_dlls raises, too
        resolve(env, MATRIX, directory="nope")


def test_one_coherent_source_is_preferred_over_the_first_tier(tmp_path: Path) -> None:
    # site A (first on sys.path) has only part of the CUDA set; site B has all of it
    env = make_env(sites=("/a", "/b"))
    index = idx(listing("/a/nvidia/cu13/lib", "libcublas.so.13", "libcudart.so.13"), *full_site("/b"))
    plan = resolve(env, MATRIX, index=index)
    libs = by_name(plan)
    assert chosen(libs["cublas"]).path == "/b/nvidia/cu13/lib/libcublas.so.13"
    assert chosen(libs["cublasLt"]).path == "/b/nvidia/cu13/lib/libcublasLt.so.13"
    assert chosen(libs["cudart"]).path.startswith("/b/")
    assert not [f for f in plan.findings if f.id == "lib-sources-mixed"]


def test_mixing_is_reported_when_unavoidable() -> None:
    env = make_env(sites=("/a",))
    index = idx(listing("/a/nvidia/cu13/lib", "libcublas.so.13", "libcudart.so.13", "libcurand.so.10"),
                listing("/usr/lib/x86_64-linux-gnu", "libcublasLt.so.13"))
    plan = resolve(env, MATRIX, index=index)
    mixed = [f for f in plan.findings if f.id == "lib-sources-mixed"]
    assert mixed
    assert mixed[0].severity == "warning"
    assert "cublas" in mixed[0].title
    assert "cublasLt" in mixed[0].title


def test_other_major_only_is_kept_with_a_reason() -> None:
    env = make_env()
    index = idx(listing("/site/nvidia/cu13/lib", "libcublas.so.13", "libcublasLt.so.13"),
                listing("/usr/lib/x86_64-linux-gnu", "libcudart.so.12", "libcudnn.so.8", "libcufft.so.11"))
    libs = by_name(resolve(env, MATRIX, index=index))
    assert libs["cudart"].chosen is None
    assert [o.rejected for o in libs["cudart"].other_major] == ["CUDA 12 file, build needs CUDA 13"]
    assert libs["cudnn"].other_major[0].rejected == "cuDNN 8 file, build needs cuDNN 9"
    assert (libs["cufft"].other_major[0].rejected or "").startswith("CUDA 12 file (cuFFT 11)")


def test_other_major_from_the_ld_so_cache() -> None:
    env = make_env(ldconfig={"libcudart.so.12": ("/usr/local/cuda-12/lib64/libcudart.so.12",)})
    libs = by_name(resolve(env, MATRIX, index={}))
    assert libs["cudart"].other_major[0].path == "/usr/local/cuda-12/lib64/libcudart.so.12"


def test_empty_and_relative_ld_library_path_entries_are_never_searched() -> None:
    ld = (SearchDir("", "LD_LIBRARY_PATH", relative=True), SearchDir("lib", "LD_LIBRARY_PATH", relative=True),
          SearchDir("/opt/cuda/lib64", "LD_LIBRARY_PATH"))
    env = make_env(ld=ld)
    index = idx(listing("/opt/cuda/lib64", *CUDA_FILES))
    plan = resolve(env, MATRIX, index=index)
    libs = by_name(plan)
    assert chosen(libs["cudart"]).path == "/opt/cuda/lib64/libcudart.so.13"
    entries = [f for f in plan.findings if f.id == "ld-library-path-unsafe-entry"]
    assert len(entries) == 1
    assert "empty LD_LIBRARY_PATH entry" in entries[0].detail
    assert "relative LD_LIBRARY_PATH entry 'lib'" in entries[0].detail


def test_files_in_the_current_directory_are_rejected(tmp_path: Path) -> None:
    (tmp_path / "libcudart.so.13").write_bytes(b"\x7fELF")
    env = make_env(ld=(SearchDir(str(tmp_path), "LD_LIBRARY_PATH"),), default=())
    libs = by_name(resolve(env, MATRIX, cwd=str(tmp_path)))
    assert libs["cudart"].chosen is None
    assert libs["cudart"].candidates[0].rejected == "in the current directory"


def test_world_writable_directory_is_refused_unless_allowed(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "libcudart.so.13").write_bytes(b"\x7fELF")
    os.chmod(bad, 0o777)
    env = make_env(ld=(SearchDir(str(bad), "LD_LIBRARY_PATH"),), default=())
    plan = resolve(env, MATRIX)
    libs = by_name(plan)
    assert libs["cudart"].chosen is None
    assert libs["cudart"].candidates[0].rejected == f"world-writable directory {bad}"
    assert [f.id for f in plan.findings if f.id == "unsafe-library-dir"] == ["unsafe-library-dir"]
    libs = by_name(resolve(env, MATRIX, allow_unsafe_dirs=True))
    assert chosen(libs["cudart"]).path == f"{bad}/libcudart.so.13"


def test_symlink_into_a_world_writable_directory_is_judged_by_its_target(tmp_path: Path) -> None:
    bad = tmp_path / "tmpdir"
    bad.mkdir()
    (bad / "libcudart.so.13").write_bytes(b"\x7fELF")
    os.chmod(bad, 0o777)
    good = tmp_path / "lib"
    good.mkdir()
    (good / "libcudart.so.13").symlink_to(bad / "libcudart.so.13")
    linked_dir = tmp_path / "linkdir"
    linked_dir.symlink_to(bad)
    listed = index_dirs([str(good), str(linked_dir)])
    assert "world-writable directory" in listed[str(good)].unsafe_files["libcudart.so.13"] or \
        "links into world-writable" in listed[str(good)].unsafe_files["libcudart.so.13"]
    assert listed[str(linked_dir)].world_writable
    env = make_env(ld=(SearchDir(str(good), "LD_LIBRARY_PATH"),), default=())
    assert by_name(resolve(env, MATRIX))["cudart"].chosen is None


def test_a_directory_under_two_names_is_listed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/lib is a link to /usr/lib on merged-/usr systems: /lib/x86_64-linux-gnu and /usr/lib/x86_64-linux-gnu
    are one directory of ~1,000 files, listed once, each name with the same answer."""
    real = tmp_path / "usr-lib"
    real.mkdir()
    (real / "libcudart.so.13").write_bytes(b"\x7fELF")
    os.chmod(real, 0o777)  # unsafe: the verdict too must be the same under both names
    alias = tmp_path / "lib"
    alias.symlink_to(real)
    listed_dirs: list[str] = []
    real_listdir = os.listdir

    def counting_listdir(path: str) -> list[str]:
        listed_dirs.append(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", counting_listdir)
    listed = index_dirs([str(alias), str(real), str(alias)])
    assert listed_dirs == [str(real)]
    assert listed[str(alias)].path == str(alias)
    assert listed[str(real)].path == str(real)
    assert replace(listed[str(alias)], path="") == replace(listed[str(real)], path="")
    assert listed[str(real)].world_writable
    assert listed[str(real)].files == {"libcudart.so.13": str(real / "libcudart.so.13")}


def test_a_listing_keeps_the_names_of_the_wanted_stems_and_dlls(tmp_path: Path) -> None:
    """index_dirs passes a big directory's names through a cheap test first: what it keeps must be what
    the rule keeps, a shared library of a wanted component (``stem`` or ``stem.<anything>``) or any
    ``.dll``, whatever the case."""
    names = ["libcudart.so", "libcudart.so.13", "libcudart.so.13.0.96", "libcudart.sox", "libcudart_static.a",
             "libcudart.so_old", "xlibcudart.so.13", "libcublasLt.so.13", "libcublas.so.13", "libc.so.6",
             "cudart64_13.dll", "nvcuda.DLL", "x.DlL", "readme.txt", "libcudart.so.13.dll", "libfoo.so.1",
             "libcudnn.so.9", "libcudnn_ops.so.9", "libcudnn.so.9.bak"]
    for name in names:
        (tmp_path / name).write_bytes(b"\x7fELF")
    stems = ("libcudart.so", "libcublas.so", "libcudnn.so")
    listed = index_dirs([str(tmp_path)], stems=stems)[str(tmp_path)]
    expected = {n for n in names if (".so" in n and (n in stems or n.startswith(tuple(s + "." for s in stems))))
                or (".so" not in n and n.lower().endswith(".dll"))}
    assert set(listed.files) == expected
    assert set(index_dirs([str(tmp_path)])[str(tmp_path)].files) == {
        n for n in names if ".so" in n or n.lower().endswith(".dll")}


def test_already_mapped_library_is_reported_as_loaded() -> None:
    env = make_env(mapped=("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0",))
    libs = by_name(resolve(env, MATRIX, index=idx(*full_site())))
    assert chosen(libs["cudnn"]).source == "loaded"
    assert chosen(libs["cudnn"]).version == "9.14.0"
    wheel = next(c for c in libs["cudnn"].candidates if c.source == "nvidia-wheel")
    assert wheel.rejected is None  # acceptable, but the mapped copy is what the loader will reuse


def test_switches_skip_cuda_or_cudnn() -> None:
    libs = by_name(resolve(make_env(), MATRIX, cudnn=False, index=idx(*full_site())))
    assert libs["cudnn"].skipped == "--no-cudnn"
    assert libs["cudnn"].chosen is None
    assert libs["cudart"].chosen is not None
    libs = by_name(resolve(make_env(), MATRIX, cuda=False, index=idx(*full_site())))
    assert libs["cudart"].skipped == "--no-cuda"
    assert libs["cudnn"].chosen is not None


def test_a_needed_library_missing_from_the_matrix_is_searched_anyway() -> None:
    env = make_env(needed=(*PROVIDER_NEEDED, "libcusparse.so.12"))
    plan = resolve(env, MATRIX, index=idx(listing("/site/nvidia/cu13/lib", *CUDA_FILES, "libcusparse.so.12")))
    libs = by_name(plan)
    assert chosen(libs["cusparse"]).path == "/site/nvidia/cu13/lib/libcusparse.so.12"
    assert libs["cusparse"].required
    assert any(f.id == "matrix-missing-library" for f in plan.findings)


def test_cpu_build_plans_nothing() -> None:
    from dataclasses import replace

    env = make_env(cuda_version=None)
    env = replace(env, ort=replace(env.ort, is_gpu_build=False, cuda_provider=None))
    plan = resolve(env, MATRIX, index={})
    assert plan.libraries == ()
    assert plan.cuda_major is None


def test_windows_uses_dll_names_and_bin_dirs() -> None:
    env = make_env(os_name="windows", sites=("C:\\venv\\Lib\\site-packages",),
                   needed=("cublasLt64_13.dll", "cublas64_13.dll", "curand64_10.dll", "cudart64_13.dll",
                           "nvcuda.dll"))
    bin_dir = "C:\\venv\\Lib\\site-packages\\nvidia\\cu13\\bin\\x86_64"
    index = {bin_dir: DirListing(bin_dir, True, bin_dir, {n: f"{bin_dir}\\{n}" for n in (
        "cublasLt64_13.dll", "cublas64_13.dll", "curand64_10.dll", "cudart64_13.dll", "cufft64_12.dll",
        "nvrtc64_130_0.dll")})}
    libs = by_name(resolve(env, MATRIX, index=index))
    assert libs["cudart"].soname == "cudart64_13.dll"
    assert chosen(libs["cudart"]).path == f"{bin_dir}\\cudart64_13.dll"
    assert libs["nvrtc"].chosen is not None
    assert libs["cudnn"].chosen is None


@pytest.mark.parametrize(("needed", "major"), [
    (("libcudart.so.13", "libcuda.so.1"), 13),
    (("libcudart.so.11.0",), 11),
    (("cudart64_110.dll",), 11),
    (("cudart64_12.dll",), 12),
    (("libcuda.so.1",), None),
])
def test_cuda_major_falls_back_to_the_providers_cudart_for_a_gpu_package(needed: tuple[str, ...],
                                                                         major: int | None) -> None:
    from dataclasses import replace

    env = make_env(cuda_version=None, needed=needed)
    env = replace(env, ort=replace(env.ort, package_name="onnxruntime-gpu"))
    assert resolve(env, MATRIX, index={}).cuda_major == major
