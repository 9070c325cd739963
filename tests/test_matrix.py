"""The shipped compatibility matrix: its invariants, the seed document's rows, the loader's errors and
the version lookups."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.version import Version

from ortdoctor.decide.matrix.load import default_matrix_path, load_matrix
from ortdoctor.decide.matrix.model import Matrix, MatrixError, Release, parse_cuda_request
from tests.support.releases import NEWEST, NEWEST_VERSION, newest_version, next_line


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(Path(default_matrix_path()))


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(Path(default_matrix_path()).read_text(encoding="utf-8"))
    return data


def _line(matrix: Matrix, line: str) -> Release:
    return next(r for r in matrix.releases if r.line == line)


# ------------------------------------------------------------------------------------------------
# Invariants over the shipped file
# ------------------------------------------------------------------------------------------------
def test_every_line_from_1_0_to_the_newest_is_present(matrix: Matrix) -> None:
    lines = {r.line for r in matrix.releases}
    newest_minor = int(NEWEST.line.split(".")[1])
    assert newest_minor >= 31
    assert lines == {f"1.{i}" for i in range(newest_minor + 1)}


def test_releases_are_newest_first(matrix: Matrix) -> None:
    keys = [Version(r.line) for r in matrix.releases]
    assert keys == sorted(keys, reverse=True)


def test_every_line_has_cuda_and_cudnn_major(matrix: Matrix) -> None:
    for r in matrix.releases:
        assert parse_cuda_request(r.cuda) is not None, r.line
        assert r.cudnn_major in matrix.cudnn_majors, r.line
        assert r.cuda_major in matrix.cuda_majors, r.line


@pytest.mark.parametrize("line", [f"1.{i}" for i in range(15, 32)])
def test_lines_from_1_15_are_read_from_the_wheel(matrix: Matrix, line: str) -> None:
    r = _line(matrix, line)
    assert r.source == "wheel"
    assert r.source_ref.startswith(f"onnxruntime_gpu-{line}.")
    assert r.source_ref.endswith(".whl")
    assert r.source_ref in r.wheels.values()
    # every listed wheel belongs to its version
    for version, wheel in r.wheels.items():
        assert wheel.startswith(f"onnxruntime_gpu-{version}-")


def test_doc_rows_cite_a_url(matrix: Matrix) -> None:
    for r in matrix.releases:
        if r.source == "doc":
            assert r.source_ref.startswith("https://"), r.line


def test_provider_sonames_agree_with_the_cuda_major(matrix: Matrix) -> None:
    for r in matrix.releases:
        for soname in (*r.provider_needed, *r.pybind_needed_cuda):
            m = re.fullmatch(r"lib(cudart|cublasLt|cublas|nvrtc)\.so\.(\d+)(\.\d+)*", soname)
            if m:
                assert int(m.group(2)) == r.cuda_major, (r.line, soname)
            m = re.fullmatch(r"libcudnn(_\w+)?\.so\.(\d+)", soname)
            if m:
                assert int(m.group(2)) == r.cudnn_major, (r.line, soname)


def test_library_sonames_agree_with_their_major(matrix: Matrix) -> None:
    for major, cm in matrix.cuda_majors.items():
        names = [lib.name for lib in cm.libraries]
        assert names[-1] == "cudart", major
        assert names[:2] == ["cublasLt", "cublas"], major
        for lib in cm.libraries:
            m = re.fullmatch(r"lib(cudart|cublasLt|cublas|nvrtc)\.so\.(\d+)(\.\d+)*", lib.soname)
            if m:
                assert int(m.group(2)) == major, lib
            assert lib.version_function, lib
    for major, dm in matrix.cudnn_majors.items():
        assert dm.libraries[0].soname == f"libcudnn.so.{major}"
        for lib in dm.libraries:
            assert lib.soname.endswith(f".so.{major}")
            assert lib.windows_dll
            assert lib.windows_dll.endswith(f"64_{major}.dll")


def test_dependency_order_is_cublaslt_cublas_nvrtc_curand_cufft_cudart(matrix: Matrix) -> None:
    for major in (11, 12, 13):
        libs = matrix.libraries_for(major, 9)
        assert [lib.name for lib in libs][:6] == ["cublasLt", "cublas", "nvrtc", "curand", "cufft", "cudart"]
        assert libs[6].name == "cudnn"
        assert all(lib.sublibrary_of == "cudnn" for lib in libs[7:])


def test_cuda13_layout_matches_the_installed_wheels(matrix: Matrix) -> None:
    """The consolidated nvidia/cu13/lib directory and nvidia/cudnn/lib, as the real wheels install them."""
    from tests.support.testenvs import ensure

    site = ensure("nvidia-cu13")
    for lib in matrix.libraries_for(13, 9):
        if lib.name in ("cudnn_engines_tensor_ir", "cudnn_ext"):
            continue  # only in newer cuDNN 9 releases (9.21, 9.22) than the one installed
        assert any((site / d / lib.soname).is_file() for d in lib.linux_dirs), lib.soname
    dists = {p.name.split("-")[0].replace("_", "-") for p in site.glob("*.dist-info")}
    cm = matrix.cuda_majors[13]
    for lib in cm.libraries:
        if lib.name != "nvrtc" or "nvidia-cuda-nvrtc" in dists:
            assert lib.package in dists, lib
    assert matrix.cudnn_majors[9].packages[13] in dists


test_cuda13_layout_matches_the_installed_wheels = pytest.mark.realwheels(
    test_cuda13_layout_matches_the_installed_wheels)


def test_cuda12_layout_matches_the_installed_runtime_wheel(matrix: Matrix) -> None:
    from tests.support.testenvs import ensure

    site = ensure("nvidia-cu12-runtime")
    cudart = next(lib for lib in matrix.cuda_majors[12].libraries if lib.name == "cudart")
    assert any((site / d / cudart.soname).is_file() for d in cudart.linux_dirs)
    assert cudart.package == "nvidia-cuda-runtime-cu12"


test_cuda12_layout_matches_the_installed_runtime_wheel = pytest.mark.realwheels(
    test_cuda12_layout_matches_the_installed_runtime_wheel)


def test_driver_rows_cover_every_cuda_major_used(matrix: Matrix) -> None:
    used = {r.cuda_major for r in matrix.releases} | {f.cuda_major for r in matrix.releases for f in r.feeds}
    used |= {tv.cuda_major for t in matrix.torch for tv in t.variants if tv.cuda_major is not None}
    for major in used:
        cm = matrix.cuda_majors[major]
        assert cm.min_driver_linux, major
        assert cm.min_driver_windows, major
        assert cm.driver_source.startswith("https://"), major


def test_min_driver(matrix: Matrix) -> None:
    assert matrix.min_driver("12.8", "linux") == "525.60.13"
    assert matrix.min_driver("12", "windows") == "527.41"
    assert matrix.min_driver("11.8", "linux") == "450.80.02"
    assert matrix.min_driver("13.0", "linux") == "580"
    assert matrix.min_driver("10.1", "linux") == "418.39"  # before CUDA 11 each minor has its own
    assert matrix.min_driver("10.0", "linux") == "410.48"
    assert matrix.min_driver("9.2", "linux") is None
    assert matrix.min_driver("12.4", "macos") is None
    assert matrix.min_driver("garbage", "linux") is None


def test_torch_releases_2_0_to_2_15_with_their_cudnn(matrix: Matrix) -> None:
    versions = {t.version for t in matrix.torch}
    assert {f"2.{i}" for i in range(16)} <= versions
    for t in matrix.torch:
        assert sum(v.pypi_default for v in t.variants) == 1, t.version
        assert t.python, t.version  # every line says which CPython versions have wheels
        for v in t.variants:
            # the lines read from the PyPI wheel alone name no download.pytorch.org index
            assert v.index_url == f"https://download.pytorch.org/whl/{v.tag}" or (
                v.index_url is None and v.source.startswith("wheel:")), (t.version, v)
            assert v.source
    cudnn = {t.version: {v.cudnn_major for v in t.variants} for t in matrix.torch}
    assert cudnn["2.3"] == {8}
    assert all(cudnn[f"2.{i}"] == {9} for i in range(4, 12))


def test_wheel_facts_that_docs_get_wrong(matrix: Matrix) -> None:
    # the PyPI 1.18.1 wheel is CUDA 11.8 + cuDNN 8; the documented CUDA 12 + cuDNN 9 build is on the feed
    r118 = _line(matrix, "1.18")
    assert (r118.cuda, r118.cudnn_major) == ("11.8", 8)
    assert any(f.versions == ("1.18.1",) and f.cudnn_major == 9 and f.cuda_major == 12 for f in r118.feeds)
    assert any(f.versions == ("1.18.0",) and f.cudnn_major == 8 and f.cuda_major == 12 for f in r118.feeds)
    # 1.26 is still CUDA 12 on PyPI; 1.27 is the first CUDA 13 line
    assert _line(matrix, "1.26").cuda == "12.8"
    assert _line(matrix, "1.27").cuda == "13.0"
    # 1.27.0's pybind module needs libcudart.so.13; 1.28 does not
    assert _line(matrix, "1.27").pybind_needed_cuda == ("libcudart.so.13",)
    assert _line(matrix, "1.28").pybind_needed_cuda == ()


def test_known_bad_releases(matrix: Matrix) -> None:
    bad = {kb.version: kb for r in matrix.releases for kb in r.known_bad}
    assert "libcudart.so.13" in bad["1.27.0"].problem
    assert "1.28" in bad["1.27.0"].fix
    assert bad["1.23.0"].affects == "sm_120"
    assert "cudaErrorNoKernelImageForDevice" in bad["1.23.0"].problem


def test_release_1_31_1(matrix: Matrix) -> None:
    match = matrix.release_for("1.31.1")
    assert match is not None
    assert match.exact
    assert not match.unverified
    r = match.release
    assert (r.cuda, r.cudnn_major, r.source) == ("13.0", 9, "wheel")
    assert r.provider_needed == ("libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", "libcudart.so.13")
    assert r.extras["cudnn"] == ("nvidia-cudnn-cu13~=9.0",)
    loads = {lib.soname: lib.load for lib in matrix.libraries_for_release(r)}
    assert loads["libcudart.so.13"] == "required"
    assert loads["libcudnn.so.9"] == "lazy"  # not in DT_NEEDED from 1.28 on
    assert loads["libcufft.so.12"] == "lazy"


def test_libraries_for_release_follows_the_wheel(matrix: Matrix) -> None:
    r120 = _line(matrix, "1.20")
    loads = {lib.soname: lib.load for lib in matrix.libraries_for_release(r120)}
    assert loads["libnvrtc.so.12"] == "required"
    assert loads["libcudnn_graph.so.9"] == "required"
    libs = matrix.libraries_for(12, 9)
    assert {lib.package for lib in libs if lib.name.startswith("cudnn")} == {"nvidia-cudnn-cu12"}
    assert matrix.libraries_for(99, 9) == ()


# ------------------------------------------------------------------------------------------------
# The seed document's requirement tables, row by row
# ------------------------------------------------------------------------------------------------
# (ONNX Runtime, CUDA, cuDNN) exactly as the tables give them.
SEED_ROWS = [
    # CUDA 12.x table
    ("1.20.x", "12.x", "9.x"),
    ("1.19.x", "12.x", "9.x"),
    ("1.18.1", "12.x", "9.x"),
    ("1.18.0", "12.x", "8.x"),
    ("1.17.x", "12.x", "8.x"),
    # CUDA 11.x table
    ("1.20.x", "11.8", "8.x"),
    ("1.19.x", "11.8", "8.x"),
    ("1.18.x", "11.8", "8.x"),
    ("1.17", "11.8", "8.2.4 (Linux) 8.5.0.96 (Windows)"),
    ("1.16", "11.8", "8.2.4 (Linux) 8.5.0.96 (Windows)"),
    ("1.15", "11.8", "8.2.4 (Linux) 8.5.0.96 (Windows)"),
    ("1.14", "11.6", "8.2.4 (Linux) 8.5.0.96 (Windows)"),
    ("1.13", "11.6", "8.2.4 (Linux) 8.5.0.96 (Windows)"),
    ("1.12", "11.4", "8.2.4 (Linux) 8.2.2.26 (Windows)"),
    ("1.11", "11.4", "8.2.4 (Linux) 8.2.2.26 (Windows)"),
    ("1.10", "11.4", "8.2.4 (Linux) 8.2.2.26 (Windows)"),
    ("1.9", "11.4", "8.2.4 (Linux) 8.2.2.26 (Windows)"),
    ("1.8", "11.0.3", "8.0.4 (Linux) 8.0.2.39 (Windows)"),
    ("1.7", "11.0.3", "8.0.4 (Linux) 8.0.2.39 (Windows)"),
    # CUDA 10.x table
    ("1.5-1.6", "10.2", "8.0.3"),
    ("1.2-1.4", "10.1", "7.6.5"),
    ("1.0-1.1", "10.0", "7.6.4"),
]


def _seed_versions(spec: str) -> list[tuple[str, str | None]]:
    """'1.20.x' -> [('1.20', None)]; '1.18.1' -> [('1.18', '1.18.1')]; '1.2-1.4' -> the three lines."""
    if "-" in spec:
        lo, hi = spec.split("-")
        a, b = int(lo.split(".")[1]), int(hi.split(".")[1])
        return [(f"1.{i}", None) for i in range(a, b + 1)]
    parts = spec.split(".")
    line = ".".join(parts[:2])
    patch = spec if len(parts) == 3 and parts[2] != "x" else None
    return [(line, patch)]


def _builds(r: Release, patch: str | None) -> list[tuple[str, int | None, str]]:
    """Every build of a line (PyPI and feeds) that exists for ``patch``: (cuda, cudnn major, cudnn text)."""
    out = [(r.cuda, r.cudnn_major, r.cudnn or "")]
    for f in r.feeds:
        if patch is None or not f.versions or patch in f.versions:
            out.append((f.cuda, f.cudnn_major, f.cudnn or ""))
    return out


@pytest.mark.parametrize(("ort", "cuda", "cudnn"), SEED_ROWS)
def test_seed_row_present(matrix: Matrix, ort: str, cuda: str, cudnn: str) -> None:
    want_major, want_minor = parse_cuda_request(cuda) or (0, None)
    cudnn_major = int(cudnn.split(".")[0])
    details = re.findall(r"\d+\.\d+\.\d+(?:\.\d+)?", cudnn)
    for line, patch in _seed_versions(ort):
        r = _line(matrix, line)
        ok = False
        for b_cuda, b_cudnn_major, b_cudnn in _builds(r, patch):
            b_major, b_minor = parse_cuda_request(b_cuda) or (0, None)
            if b_major != want_major or b_cudnn_major != cudnn_major:
                continue
            if want_minor is not None and b_minor != want_minor:
                continue
            if all(d in b_cudnn for d in details):
                ok = True
        assert ok, f"seed row {ort} CUDA {cuda} cuDNN {cudnn} is missing from line {line}: {_builds(r, patch)}"


def test_seed_notes_present(matrix: Matrix) -> None:
    """The seed's remarks that carry a fact: PyPI availability, torch ranges, cublas10."""
    notes = {r.line: " ".join(r.notes + tuple(f.note for f in r.feeds)) for r in matrix.releases}
    assert "cublas10-10.2.1.243" in notes["1.2"]
    assert "PyTorch <= 2.3.1" in notes["1.20"]
    assert _line(matrix, "1.20").torch == ">=2.4"
    assert _line(matrix, "1.19").torch == ">=2.4"
    assert "no Java package" in notes["1.18"]
    assert "libcudart 11.0.221" in notes["1.8"]
    assert "libcublasLt 11.6.1.51" in notes["1.9"]


# ------------------------------------------------------------------------------------------------
# Version lookups
# ------------------------------------------------------------------------------------------------
def test_lookup_exact(matrix: Matrix) -> None:
    m = matrix.release_for("1.20.2")
    assert m is not None
    assert m.exact
    assert not m.unverified
    assert m.release.line == "1.20"


def test_lookup_unknown_patch_uses_the_line(matrix: Matrix) -> None:
    m = matrix.release_for("1.20.1")
    assert m is not None
    assert m.release.line == "1.20"
    assert not m.exact
    assert not m.unverified
    assert "1.20.0" in m.note


def test_lookup_newer_than_the_matrix_is_unverified(matrix: Matrix) -> None:
    for version in (f"{next_line()}.0", f"{next_line(9)}.1", "2.0.0"):
        m = matrix.release_for(version)
        assert m is not None
        assert m.unverified
        assert not m.exact
        assert m.release.line == NEWEST.line
        assert "unverified" in m.note


@pytest.mark.parametrize("version", ["", "not-a-version", "1.x", "latest", "1.2.3.4.5-abc"])
def test_lookup_unparsable_is_none(matrix: Matrix, version: str) -> None:
    assert matrix.release_for(version) is None


def test_lookup_older_than_every_line_is_none(matrix: Matrix) -> None:
    assert matrix.release_for("0.5.0") is None


def test_lookup_local_and_pre_releases(matrix: Matrix) -> None:
    m = matrix.release_for(f"{NEWEST_VERSION}+cu126")
    assert m is not None
    assert m.release.line == NEWEST.line
    assert not m.unverified
    assert "local build" in m.note
    rc = matrix.release_for(f"{NEWEST.line}.0rc1")
    assert rc is not None
    assert rc.release.line == NEWEST.line
    assert not rc.exact
    dev = matrix.release_for(f"{next_line()}.0.dev20260101")
    assert dev is not None
    assert dev.unverified
    assert dev.release.line == NEWEST.line


# ------------------------------------------------------------------------------------------------
# Recommendations
# ------------------------------------------------------------------------------------------------
def test_recommend_cuda12_torch24(matrix: Matrix) -> None:
    rec = matrix.recommend(cuda="12", torch="2.4")
    assert rec is not None
    assert rec.release.cuda_major == 12
    assert rec.feed is None
    assert rec.release.cudnn_major == 9
    assert rec.command == f"pip install onnxruntime-gpu=={rec.version}"
    assert rec.torch_variant is not None
    assert rec.torch_variant.pypi_default
    # the newer CUDA 12 builds on the feed are offered with the exact command
    assert "--index-url https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/" \
        in rec.alternative
    assert rec.alternative.startswith("pip install flatbuffers numpy packaging protobuf sympy && ")


def test_recommend_feed_build_for_torch23(matrix: Matrix) -> None:
    """torch 2.3 from PyPI is CUDA 12 + cuDNN 8: only the CUDA 12 feed has such an ORT."""
    rec = matrix.recommend(cuda=None, torch="2.3")
    assert rec is not None
    assert rec.feed is not None
    assert (rec.feed.cuda_major, rec.feed.cudnn_major, rec.version) == (12, 8, "1.18.0")
    assert rec.command == (
        "pip install coloredlogs flatbuffers numpy packaging protobuf sympy && pip install "
        "onnxruntime-gpu==1.18.0 --index-url "
        "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/pypi/simple/")


def test_recommend_other_stacks(matrix: Matrix) -> None:
    r13 = matrix.recommend(cuda="13", torch=None)
    assert r13 is not None
    assert r13.version == newest_version(13)
    assert r13.command == f"pip install 'onnxruntime-gpu[cuda,cudnn]=={r13.version}'"
    r11 = matrix.recommend(cuda="11.8", torch="2.3.1+cu118")
    assert r11 is not None
    assert r11.version == "1.18.1"
    assert r11.feed is None
    t211 = matrix.recommend(cuda=None, torch="2.11")
    assert t211 is not None
    assert t211.release.cuda_major == 13
    # never a known-bad version
    for cuda in ("11", "12", "13"):
        rec = matrix.recommend(cuda=cuda, torch=None)
        assert rec is not None
        assert rec.release.bad(rec.version) is None


def test_recommend_impossible_is_none(matrix: Matrix) -> None:
    assert matrix.recommend(cuda="13", torch="2.3") is None  # torch 2.3 has no CUDA 13 build
    assert matrix.recommend(cuda="banana", torch=None) is None
    assert matrix.recommend(cuda=None, torch="1.13") is None  # older than every torch line


def test_torch_facts_from_the_package_table(matrix: Matrix) -> None:
    """scripts/data/package_table.yaml (METADATA of the cp311 Linux wheels; FINDINGS.md)."""
    lines = {t.version: t for t in matrix.torch}
    assert lines["2.4"].python == ("3.8", "3.9", "3.10", "3.11", "3.12")
    assert lines["2.15"].python == ("3.11", "3.12", "3.13", "3.14", "3.15")
    default = {v: next(tv for tv in t.variants if tv.pypi_default) for v, t in lines.items()}
    assert (default["2.0"].cuda, default["2.0"].cudnn) == ("11.7", "8.5.0.96")
    assert (default["2.10"].cuda, default["2.10"].cudnn) == ("12.8", "9.10.2.21")
    assert (default["2.11"].cuda, default["2.11"].cudnn) == ("13.0", "9.19.0.56")
    assert (default["2.12"].cuda, default["2.12"].cudnn) == ("13.0", "9.20.0.48")
    assert (default["2.13"].cuda, default["2.13"].cudnn) == ("13.0", "9.20.0.48")
    assert (default["2.14"].cuda, default["2.14"].cudnn) == ("13.0", "9.24.0.43")
    assert (default["2.15"].cuda, default["2.15"].cudnn) == ("13.2", "9.26.0.51")


def test_a_torch_newer_than_the_matrix_takes_the_newest_line_with_a_note(matrix: Matrix) -> None:
    newest = max(matrix.torch, key=lambda t: tuple(int(p) for p in t.version.split(".")))
    tm = matrix.torch_match("9.9")
    assert tm is not None
    assert tm.release is newest
    assert "newer than every torch line" in tm.note
    rec = matrix.recommend(cuda=None, torch="9.9.1")
    assert rec is not None
    assert "newer than every torch line" in rec.reason
    exact = matrix.torch_match("2.13.0+cu130")
    assert exact is not None
    assert (exact.release.version, exact.note) == ("2.13", "")


def test_recommendations_intersect_pythons_with_torch(matrix: Matrix) -> None:
    """torch 2.4 has wheels for 3.8-3.12: onnxruntime-gpu 1.26.0 (3.11-3.14) is usable on 3.11 and 3.12."""
    rec = matrix.recommend(cuda="12", torch="2.4")
    assert rec is not None
    assert "wheels exist for Python 3.11, 3.12 " in rec.reason
    assert "3.13" not in rec.reason
    # an interpreter the newest build has no wheels for gets an older build that has
    old_py = matrix.recommend(cuda="12", torch=None, python="3.9.18")
    assert old_py is not None
    assert "3.9" in old_py.release.python
    assert matrix.recommend(cuda="13", torch=None, python="3.8") is None


def test_the_1_20_line_is_cuda_12_2(matrix: Matrix) -> None:
    """Its provider's embedded PTX is ISA 8.2 (CUDA 12.2), as for 1.19 and 1.21-1.23 (wheel_facts.json)."""
    assert _line(matrix, "1.20").cuda == "12.2"
    assert {_line(matrix, v).cuda for v in ("1.19", "1.21", "1.22", "1.23")} == {"12.2"}


def test_cudnn_9_sub_libraries_of_newer_releases(matrix: Matrix) -> None:
    subs = {lib.soname: lib for lib in matrix.cudnn_majors[9].libraries}
    for soname in ("libcudnn_engines_tensor_ir.so.9", "libcudnn_ext.so.9"):
        assert subs[soname].sublibrary_of == "cudnn"
        assert subs[soname].load == "lazy"
    assert subs["libcudnn_ext.so.9"].windows_dll == "cudnn_ext64_9.dll"


# ------------------------------------------------------------------------------------------------
# The loader's errors, on broken files written to tmp_path
# ------------------------------------------------------------------------------------------------
def _write(tmp_path: Path, data: Any, name: str = "m.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return p


def _error(path: Path) -> MatrixError:
    with pytest.raises(MatrixError) as info:
        load_matrix(path)
    assert str(path) in str(info.value)
    return info.value


def test_error_not_yaml(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("releases: [1, 2\n  - oops: {\n", encoding="utf-8")
    err = _error(p)
    assert "not valid YAML" in err.message
    assert "line" in err.message


def test_error_missing_file_and_empty_file(tmp_path: Path) -> None:
    assert "file not found" in _error(tmp_path / "absent.yaml").message
    empty = tmp_path / "empty.yaml"
    empty.write_text("", encoding="utf-8")
    assert "empty" in _error(empty).message
    assert "mapping" in _error(_write(tmp_path, ["a", "list"])).message


def test_error_wrong_types(raw: dict[str, Any], tmp_path: Path) -> None:
    data = dict(raw, releases="not a list")
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases"
    assert "expected a list" in err.message

    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"][0]["cudnn_major"] = "nine"
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases[0].cudnn_major"
    assert "integer" in err.message

    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"][3]["cuda"] = 12.0
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases[3].cuda"
    assert "quoted" in err.message


def test_error_missing_key_and_unknown_key(raw: dict[str, Any], tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(raw))
    del data["releases"][2]["source"]
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases[2].source"
    assert "missing" in err.message

    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"][1]["cuda_verison"] = "12.2"
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases[1].cuda_verison"
    assert "unknown key" in err.message


def test_error_duplicate_versions(raw: dict[str, Any], tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"][0]["versions"].append(data["releases"][0]["versions"][0])
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases[0].versions"
    assert "duplicate version" in err.message

    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"].append(dict(data["releases"][0]))
    err = _error(_write(tmp_path, data))
    assert f"duplicate release line {data['releases'][0]['line']}" in err.message


def test_error_unknown_cuda_major(raw: dict[str, Any], tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"][0]["cuda"] = "14.0"
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases[0].cuda"
    assert "CUDA major 14 has no `cuda_majors` entry" in err.message


def test_error_soname_of_the_wrong_major(raw: dict[str, Any], tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(raw))
    data["cuda_majors"][13]["libraries"][0]["soname"] = "libcublasLt.so.12"
    err = _error(_write(tmp_path, data))
    assert err.key_path == "cuda_majors.13.libraries[0].soname"
    assert "CUDA 12" in err.message

    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"][0]["provider_needed"] = ["libcudart.so.12"]
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases[0].provider_needed[0]"


def test_error_source_without_reference(raw: dict[str, Any], tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"][0]["source_ref"] = "somewhere"
    err = _error(_write(tmp_path, data))
    assert err.key_path == "releases[0].source_ref"
    assert ".whl" in err.message


def test_error_feed_name_unknown(raw: dict[str, Any], tmp_path: Path) -> None:
    data = yaml.safe_load(yaml.safe_dump(raw))
    i = next(i for i, r in enumerate(data["releases"]) if r.get("feeds"))
    data["releases"][i]["feeds"][0]["index_url"] = "cuda99"
    err = _error(_write(tmp_path, data))
    assert err.key_path == f"releases[{i}].feeds[0].index_url"
    assert "cuda99" in err.message


def test_shipped_file_is_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORTDOCTOR_MATRIX", raising=False)
    assert load_matrix() is load_matrix()


def test_env_var_selects_a_file(raw: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = yaml.safe_load(yaml.safe_dump(raw))
    data["releases"] = data["releases"][:2]
    p = _write(tmp_path, data)
    monkeypatch.setenv("ORTDOCTOR_MATRIX", str(p))
    m = load_matrix()
    assert m.path == str(p)
    assert len(m.releases) == 2


def test_a_feed_build_records_the_bindings_it_ships(matrix: Matrix, raw: dict[str, Any], tmp_path: Path) -> None:
    # the CUDA EP page: the 1.17 CUDA 12 build was "C++/C# NuGet and Python only"; 1.18.1's had no Java package
    by_line = {r.line: r for r in matrix.releases}
    for line, version in (("1.17", "1.17.1"), ("1.18", "1.18.1")):
        feed = next(f for f in by_line[line].feeds if f.cuda_major == 12 and (not f.versions or version in f.versions))
        assert not feed.ships("java")
        assert all(feed.ships(b) for b in ("python", "csharp", "unknown"))
    data = yaml.safe_load(yaml.safe_dump(raw))
    row = next(i for i, r in enumerate(data["releases"]) if r.get("feeds"))
    data["releases"][row]["feeds"][0]["bindings"] = ["python", "fortran"]
    err = _error(_write(tmp_path, data))
    assert err.key_path == f"releases[{row}].feeds[0].bindings[1]"
