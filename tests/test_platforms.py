"""Every platform the PyPI wheels cover: which lines have a wheel for Linux x86_64, Linux aarch64 and Windows,
the glibc each needs, and recommendations that name only wheels that exist for the user's platform."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from ortdoctor.cli.main import cli
from ortdoctor.decide.matrix.load import default_matrix_path, load_matrix
from ortdoctor.decide.matrix.model import (
    WHEEL_PLATFORMS,
    MatrixError,
    glibc_floor,
    parse_glibc,
)

MATRIX = load_matrix(default_matrix_path())
RAW: dict[str, Any] = yaml.safe_load(Path(default_matrix_path()).read_text(encoding="utf-8"))
AARCH64 = "linux_aarch64"
ORIN = (8, 7)


def _lines_with(platform: str) -> list[str]:
    return [r.line for r in MATRIX.releases if r.pypi and platform in r.wheel_platforms]


# -- the data ---------------------------------------------------------------------------------------------
def test_every_pypi_line_records_its_wheels() -> None:
    for r in MATRIX.releases:
        if r.pypi and r.source == "wheel":
            assert "linux_x86_64" in r.wheel_platforms, r.line
            assert "win_amd64" in r.wheel_platforms, r.line
        if not r.pypi:
            assert r.wheel_platforms == {}, r.line
    assert MATRIX.platforms_source.startswith("https://pypi.org/pypi/onnxruntime-gpu/json")


def test_wheel_platforms_agree_with_the_wheels_read() -> None:
    # a wheel file the matrix read (source_ref, wheels, platform_archs) carries the tag the row records
    for r in MATRIX.releases:
        read = [r.source_ref, *r.wheels.values()] if r.source == "wheel" else []
        for platform, kernels in r.platform_archs.items():
            assert platform in r.wheel_platforms, (r.line, platform)
            read.append(kernels.source)
        for wheel in read:
            tag = wheel[: -len(".whl")].split("-")[-1]
            platform = "win_amd64" if tag == "win_amd64" else ("linux_aarch64" if tag.endswith("aarch64")
                                                               else "linux_x86_64")
            floor = glibc_floor(tag)
            recorded = r.wheel_platforms[platform]
            if len(r.versions) > 1 and tag != recorded:  # the strictest patch stands for the line
                assert glibc_floor(recorded) >= floor if floor else True, (r.line, wheel)  # type: ignore[operator]
            else:
                assert tag == recorded, (r.line, wheel)


def test_aarch64_wheels_are_the_lines_with_aarch64_kernels() -> None:
    lines = _lines_with(AARCH64)
    assert lines, "PyPI carries linux_aarch64 onnxruntime-gpu wheels"
    assert lines == [r.line for r in MATRIX.releases if AARCH64 in r.platform_archs]
    for line in lines:
        release = next(r for r in MATRIX.releases if r.line == line)
        assert release.glibc_needed(AARCH64) == (2, 34)


def test_glibc_floor_and_parse_glibc() -> None:
    assert glibc_floor("manylinux_2_27_x86_64.manylinux_2_28_x86_64") == (2, 27)
    assert glibc_floor("manylinux_2_17_x86_64.manylinux2014_x86_64") == (2, 17)
    assert glibc_floor("manylinux2014_aarch64") == (2, 17)
    assert glibc_floor("manylinux_2_34_aarch64") == (2, 34)
    assert glibc_floor("win_amd64") is None
    assert parse_glibc("glibc 2.36") == (2, 36)
    assert parse_glibc("glibc 2.17-326") == (2, 17)
    assert parse_glibc("musl") is None
    assert parse_glibc(None) is None


# -- recommendations ----------------------------------------------------------------------------------------
def test_aarch64_recommendation_is_an_aarch64_wheel() -> None:
    newest = _lines_with(AARCH64)[0]
    rec = MATRIX.recommend("13", None, platform=AARCH64)
    assert rec is not None
    assert rec.release.line == newest
    # before: the CUDA 12 build of the newest x86_64-only line (1.26.0), which has no aarch64 wheel
    assert MATRIX.recommend("12", None, platform=AARCH64) is None
    assert MATRIX.recommend("12", None) is not None  # Linux x86_64 still has one


def test_orin_on_aarch64_gets_no_pypi_pin() -> None:
    # before: 1.28.0, a line with no aarch64 wheel at all, chosen because its kernels were "unknown"
    assert MATRIX.recommend("13", None, platform=AARCH64, gpu=ORIN) is None
    assert MATRIX.kernel_releases(ORIN, platform=AARCH64) == ()


def test_glibc_below_the_floor_skips_the_wheel() -> None:
    assert MATRIX.recommend("13", None, platform=AARCH64, glibc=(2, 31)) is None
    assert MATRIX.recommend("13", None, platform=AARCH64, glibc=(2, 35)) is not None
    # x86_64 on glibc 2.27: the newest line whose wheel it can load
    want = next(r for r in MATRIX.releases if r.cuda_major == 13 and r.has_wheel("linux_x86_64", (2, 27)))
    rec = MATRIX.recommend("13", None, glibc=(2, 27))
    assert rec is not None
    assert rec.release.line == want.line
    assert rec.release.glibc_needed("linux_x86_64") <= (2, 27)  # type: ignore[operator]
    newest13 = next(r for r in MATRIX.releases if r.cuda_major == 13 and r.pypi)
    assert newest13.glibc_needed("linux_x86_64") is not None


def test_windows_recommendation_has_a_windows_wheel() -> None:
    rec = MATRIX.recommend("12", None, platform="win_amd64")
    assert rec is not None
    assert "win_amd64" in rec.release.wheel_platforms


def test_no_feed_alternative_on_aarch64() -> None:
    rec = MATRIX.recommend("13", None, platform=AARCH64)
    assert rec is not None
    assert rec.alternative == ""
    assert rec.feed is None


# -- the matrix command -------------------------------------------------------------------------------------
@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.delenv("ORTDOCTOR_MATRIX", raising=False)
    return CliRunner()


def test_matrix_platform_table_lists_only_its_wheels(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--platform", AARCH64, "--gpu", "none"])
    assert result.exit_code == 0, result.output
    table = result.output.split("Minimum NVIDIA driver")[0]  # the release table comes first
    rows = [ln.split()[0] for ln in table.splitlines() if ln[:1].isdigit()]
    assert rows == _lines_with(AARCH64)


def test_matrix_orin_on_aarch64_names_the_jetson_route(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--platform", AARCH64, "--gpu", "sm_87"])
    assert result.exit_code == 0, result.output
    assert f"PyPI has no onnxruntime-gpu {AARCH64} wheel that runs on sm_87" in result.output
    assert MATRIX.jetson is not None
    assert MATRIX.jetson.feeds_for("6")[0].index_url in result.output
    result = runner.invoke(cli, ["matrix", "--platform", AARCH64, "--gpu", "sm_87", "--cuda", "13"])
    assert result.exit_code == 1
    assert "pip install" not in result.output
    assert "JetPack 6" in result.output


def test_matrix_cuda12_on_aarch64_says_no_wheel(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--platform", AARCH64, "--cuda", "12", "--gpu", "none"])
    assert result.exit_code == 1
    assert f"PyPI has no {AARCH64} wheel" in result.output


def test_release_view_lists_the_wheels(runner: CliRunner) -> None:
    line = _lines_with(AARCH64)[0]
    result = runner.invoke(cli, ["matrix", "--ort", line])
    assert "linux_aarch64 (glibc 2.34)" in result.output


# -- validation ---------------------------------------------------------------------------------------------
def _invalid(tmp_path: Path, edit: Any) -> str:
    data = copy.deepcopy(RAW)
    edit(data)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(MatrixError) as info:
        load_matrix(str(path))
    return str(info.value)


def test_validation_refuses_a_bad_wheel_platform(tmp_path: Path) -> None:
    def unknown(data: Any) -> None:
        data["releases"][0]["wheel_platforms"]["macosx_arm64"] = "macosx_11_0_arm64"

    def wrong_arch(data: Any) -> None:
        data["releases"][0]["wheel_platforms"]["linux_aarch64"] = "manylinux_2_28_x86_64"

    assert "unknown wheel platform" in _invalid(tmp_path, unknown)
    assert "releases[0].wheel_platforms.linux_aarch64" in _invalid(tmp_path, wrong_arch)
    assert set(WHEEL_PLATFORMS) == {"linux_x86_64", "linux_aarch64", "win_amd64"}
