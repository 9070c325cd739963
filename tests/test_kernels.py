"""The kernel rule (ortdoctor.decide.kernels): which GPUs run which builds, from the targets a build carries.

The targets are those read from the real wheels (compat_matrix.yaml's `archs`, from scripts/data/wheel_facts.json);
the GPUs are the issue's: B200 (10.0), V100 (7.0), H200 (9.0), RTX 5090 (12.0), GB10 (12.1), Jetson Orin (8.7).
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from ortdoctor.decide.kernels import (
    Target,
    cmake_arch,
    coverage,
    describe_archs,
    parse_compute_capability,
    parse_target,
    ptx_isa_cuda,
    sm_name,
)
from ortdoctor.decide.matrix.model import MatrixError, PlatformArchs, wheel_platform
from ortdoctor.decide.matrix.validate import validate
from tests.support.fatbins import fatbin_containers, library, make_pe
from tests.support.releases import SHIPPED, as_of, lines_carrying, newest_version

REPO = Path(__file__).resolve().parents[1]

MATRIX = as_of("1.31")  # the logic below reasons about the releases up to 1.31

B200, B300, V100, H200, RTX5090, GB10, ORIN, T4, A100, P100, GTX1080 = (
    (10, 0), (10, 3), (7, 0), (9, 0), (12, 0), (12, 1), (8, 7), (7, 5), (8, 0), (6, 0), (6, 1))


def row(line: str, platform: str = "linux_x86_64") -> tuple[tuple[str, ...], str | None]:
    release = next(r for r in MATRIX.releases if r.line == line)
    k = release.kernels_for(platform)
    assert k is not None, (line, platform)
    return k.archs, k.ptx_isa


def verdict(cc: tuple[int, int], line: str, platform: str = "linux_x86_64", driver: str | None = "13.0") -> str:
    archs, isa = row(line, platform)
    return coverage(cc, archs, ptx_isa=isa, driver_cuda=driver).verdict


# --------------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------------
def test_targets_parse_as_nvcc_spells_them() -> None:
    assert parse_target("sm_90a") == Target(9, 0, "sass", "a", "sm_90a")
    assert parse_target("compute_120") == Target(12, 0, "ptx", "", "compute_120")
    assert parse_target("sm_100f") == Target(10, 0, "sass", "f", "sm_100f")
    assert parse_target("SM_52") == Target(5, 2, "sass", "", "sm_52")
    assert parse_target("lto_90") is None
    assert parse_target("sm_9") is None
    assert parse_target("<unreadable: x>") is None


@pytest.mark.parametrize(("text", "cc"), [("9.0", (9, 0)), ("10.0", (10, 0)), ("sm_100", (10, 0)), ("sm100", (10, 0)),
                                          ("100", (10, 0)), ("90", (9, 0)), ("sm_121a", (12, 1)), (" 8.7 ", (8, 7))])
def test_compute_capabilities_parse_in_every_spelling(text: str, cc: tuple[int, int]) -> None:
    assert parse_compute_capability(text) == cc


@pytest.mark.parametrize("text", ["", "ampere", "9", "9.0.1", None])
def test_other_texts_are_no_compute_capability(text: str | None) -> None:
    assert parse_compute_capability(text) is None


def test_names() -> None:
    assert sm_name(B200) == "sm_100"
    assert cmake_arch(GB10) == "121"
    assert ptx_isa_cuda("8.7") == (12, 8)
    assert ptx_isa_cuda("8.5") == (12, 5)  # CUDA 12.6 still writes 8.5
    assert ptx_isa_cuda("9.0") == (13, 0)
    assert ptx_isa_cuda("99.0") is None
    assert describe_archs(("sm_75", "sm_90a")) == "SASS sm_75, sm_90a; no PTX"
    assert describe_archs(("sm_80", "compute_90", "sm_90"), "8.2") == "SASS sm_80, sm_90; PTX compute_90 (ISA 8.2, CUDA 12.2)"


def test_wheel_platforms_from_sysconfig() -> None:
    assert wheel_platform("linux-x86_64") == "linux_x86_64"
    assert wheel_platform("linux-aarch64") == "linux_aarch64"
    assert wheel_platform("win-amd64") == "win_amd64"
    assert wheel_platform("linux", "aarch64") == "linux_aarch64"


# --------------------------------------------------------------------------------------------------
# The rule, on hand-written target lists
# --------------------------------------------------------------------------------------------------
def test_sass_runs_on_later_minors_of_its_major_only() -> None:
    assert coverage((8, 9), ["sm_80", "sm_86"]).sass == ("sm_80", "sm_86")
    assert coverage((8, 6), ["sm_89"]).verdict == "none"  # not on an earlier minor
    assert coverage((9, 0), ["sm_80", "sm_86", "sm_89"]).verdict == "none"  # not across majors
    assert coverage((7, 5), ["sm_70"]).verdict == "sass"


def test_arch_specific_sass_runs_on_exactly_its_compute_capability() -> None:
    assert coverage((9, 0), ["sm_90a"]).verdict == "sass"
    assert coverage((12, 1), ["sm_120a"]).verdict == "none"
    assert coverage((10, 3), ["sm_100a"]).verdict == "none"


def test_family_sass_runs_across_its_family() -> None:
    assert coverage((10, 3), ["sm_100f"]).verdict == "sass"
    assert coverage((10, 0), ["sm_103f"]).verdict == "none"
    assert coverage((12, 0), ["sm_100f"]).verdict == "none"


def test_tegra_sass_runs_only_on_its_own_compute_capability() -> None:
    assert coverage(ORIN, ["sm_80", "sm_86"]).verdict == "none"
    assert coverage(ORIN, ["sm_87"]).verdict == "sass"
    assert coverage(ORIN, ["sm_80", "compute_80"], ptx_isa="7.8").verdict == "ptx"  # PTX still JITs there
    assert coverage((8, 9), ["sm_86"], tegra=True).verdict == "none"


def test_ptx_jits_for_its_architecture_and_later_ones() -> None:
    cov = coverage(H200, ["sm_80", "compute_80"], ptx_isa="8.2", driver_cuda="13.0")
    assert (cov.verdict, cov.ptx, cov.jit_cuda, cov.runs) == ("ptx", ("compute_80",), "12.2", True)
    assert coverage((7, 5), ["compute_80"], ptx_isa="8.2").verdict == "none"  # never for an earlier one
    assert coverage(B200, ["compute_100a"], ptx_isa="8.8").verdict == "ptx"
    assert coverage(B300, ["compute_100a"], ptx_isa="8.8").verdict == "none"
    assert coverage(B300, ["compute_100f"], ptx_isa="8.8").verdict == "ptx"
    assert coverage(RTX5090, ["compute_100f"], ptx_isa="8.8").verdict == "none"


def test_ptx_needs_a_driver_that_knows_its_isa() -> None:
    too_old = coverage(RTX5090, ["sm_90a", "compute_90"], ptx_isa="8.7", driver_cuda="12.4")
    assert (too_old.verdict, too_old.runs, too_old.jit_cuda) == ("ptx-driver-too-old", False, "12.8")
    assert coverage(RTX5090, ["compute_90"], ptx_isa="8.7", driver_cuda="12.8").verdict == "ptx"
    # an unknown driver or ISA gives the PTX the benefit of the doubt
    assert coverage(RTX5090, ["compute_90"], ptx_isa="8.7", driver_cuda=None).verdict == "ptx"
    assert coverage(RTX5090, ["compute_90"], ptx_isa="42.0", driver_cuda="12.0").verdict == "ptx"


def test_native_code_wins_over_ptx_and_nothing_is_none() -> None:
    cov = coverage(H200, ["sm_90", "compute_90"], ptx_isa="8.2", driver_cuda="12.0")
    assert (cov.verdict, cov.sass, cov.ptx) == ("sass", ("sm_90",), ("compute_90",))
    assert coverage(H200, []).verdict == "none"
    assert coverage(H200, ["garbage"]).verdict == "none"


# --------------------------------------------------------------------------------------------------
# The rule on the real wheels' targets (the matrix)
# --------------------------------------------------------------------------------------------------
def test_onnxruntime_gpu_1_31_on_the_issue_gpus() -> None:
    assert row("1.31") == (("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"), None)
    assert verdict(B200, "1.31") == "none"
    assert verdict(B300, "1.31") == "none"
    assert verdict(V100, "1.31") == "none"
    assert verdict(H200, "1.31") == "sass"
    assert verdict(RTX5090, "1.31") == "sass"
    assert verdict(T4, "1.31") == "sass"
    assert verdict(GB10, "1.31") == "none"  # sm_120a is for 12.0 only; the x86_64 wheel has no sm_121
    assert verdict(GB10, "1.31", "linux_aarch64") == "sass"  # the aarch64 wheel carries sm_121a
    assert verdict(ORIN, "1.31", "linux_aarch64") == "none"
    assert verdict(H200, "1.31", "win_amd64") == "sass"


def test_old_releases_run_new_gpus_through_ptx() -> None:
    for line in ("1.15", "1.18", "1.20"):
        assert verdict(H200, line) == "ptx"
        assert verdict(B200, line) == "ptx"
        assert verdict(RTX5090, line) == "ptx"
        assert verdict(V100, line) == "sass"
    archs, isa = row("1.20")
    cov = coverage(H200, archs, ptx_isa=isa, driver_cuda="13.0")
    assert (cov.ptx[-1], cov.ptx_isa, cov.jit_cuda) == ("compute_80", "8.2", "12.2")
    assert verdict(RTX5090, "1.26", driver="12.4") == "ptx-driver-too-old"  # compute_90, ISA 8.7
    assert verdict(RTX5090, "1.26", driver="12.8") == "ptx"


def test_b200_has_native_code_in_1_27_and_1_28_only() -> None:
    native = [r.line for r in MATRIX.releases if r.kernels_for() and verdict(B200, r.line) == "sass"]
    assert native == ["1.28", "1.27"]
    assert verdict(B300, "1.28") == "none"  # sm_100a is for 10.0 only, compute_120 is above 10.3


def test_windows_1_21_to_1_26_have_no_native_code_for_6_0_7_0_8_0() -> None:
    for line in ("1.21", "1.26"):
        assert verdict(P100, line, "win_amd64") == "none"
        assert verdict(V100, line, "win_amd64") == "none"
        assert verdict(A100, line, "win_amd64") == "none"
        assert verdict(GTX1080, line, "win_amd64") == "sass"
        assert verdict(A100, line) == "sass"  # the Linux wheel has sm_80


# --------------------------------------------------------------------------------------------------
# The matrix's queries
# --------------------------------------------------------------------------------------------------
def test_kernel_releases_for_b200() -> None:
    found = MATRIX.kernel_releases(B200, driver_cuda="13.0")
    # 1.27.0 is known bad on Linux: its line has no good patch to offer
    assert [(k.release.line, k.version, k.coverage.verdict) for k in found][:3] == [
        ("1.28", "1.28.0", "sass"), ("1.26", "1.26.0", "ptx"), ("1.25", "1.25.1", "ptx")]
    assert found[0].command == "pip install 'onnxruntime-gpu[cuda,cudnn]==1.28.0'"
    # a driver too old for ISA 8.7 cannot JIT 1.24-1.26's PTX (and 1.23 has no patch that is not known bad)
    assert [k.release.line for k in MATRIX.kernel_releases(B200, driver_cuda="12.4")][:2] == ["1.28", "1.22"]


def test_kernel_releases_are_per_platform() -> None:
    assert MATRIX.kernel_releases(ORIN, platform="linux_aarch64") == ()
    # the aarch64 wheels (1.29 on) carry sm_121a
    gb10 = [k.release.line for k in SHIPPED.kernel_releases(GB10, platform="linux_aarch64")]
    assert gb10 == lines_carrying("sm_121a", "linux_aarch64")
    assert gb10[-3:] == ["1.31", "1.30", "1.29"]
    assert [k.release.line for k in MATRIX.kernel_releases(GB10, platform="linux_aarch64")] == ["1.31", "1.30", "1.29"]


def test_recommend_never_picks_a_wheel_without_kernels_for_the_gpu() -> None:
    plain = MATRIX.recommend("13", None)
    assert plain is not None
    assert plain.version == newest_version(13, matrix=MATRIX)
    assert plain.kernels is None
    b200 = MATRIX.recommend("13", None, gpu=B200, driver_cuda="13.0")
    assert b200 is not None
    assert (b200.version, b200.kernels.verdict if b200.kernels else None) == ("1.28.0", "sass")
    assert "native code for sm_100 (sm_100a)" in b200.reason
    assert b200.alternative == ""  # a feed build's kernels are unknown: never offered for a GPU
    h200 = MATRIX.recommend("13", None, gpu=H200)
    assert h200 is not None
    assert h200.version == newest_version(13, carrying="sm_90a", matrix=MATRIX)
    # CUDA 12 on an RTX 5090: no CUDA 12 wheel has sm_120 SASS; 1.26's PTX is JIT-compiled
    rtx = MATRIX.recommend("12", None, gpu=RTX5090, driver_cuda="12.8")
    assert rtx is not None
    assert rtx.version == "1.26.0"
    assert rtx.kernels is not None
    assert rtx.kernels.verdict == "ptx"
    assert "JIT-compiles its PTX (compute_90)" in rtx.reason
    # ...and with a driver too old to JIT ISA 8.7, the newest CUDA 12 wheel with ISA 8.2 (1.23 is known bad)
    old = MATRIX.recommend("12", None, gpu=RTX5090, driver_cuda="12.4")
    assert old is not None
    assert old.version == "1.22.0"
    # CUDA 13 has nothing for a V100
    assert MATRIX.recommend("13", None, gpu=V100) is None
    v100 = MATRIX.recommend("12", None, gpu=V100)
    assert v100 is not None
    assert v100.version == "1.26.0"


def test_recommend_with_torch_keeps_to_the_gpu() -> None:
    rec = MATRIX.recommend(None, "2.11", gpu=B200, driver_cuda="13.0")
    assert rec is not None
    assert rec.version == "1.28.0"


def test_builds_with_unknown_kernels_come_last_and_say_so() -> None:
    bare = replace(MATRIX, releases=tuple(replace(r, archs=(), ptx_isa=None, platform_archs={})
                                          for r in MATRIX.releases))
    rec = bare.recommend("13", None, gpu=H200)
    assert rec is not None
    assert rec.version == newest_version(13, matrix=MATRIX)
    assert rec.kernels is None
    assert "does not record which GPUs this build has kernels for" in rec.reason
    # a CUDA 13 build has no kernels below sm_75, whatever the matrix knows
    assert bare.recommend("13", None, gpu=V100) is None
    # torch 2.3 (cuDNN 8, CUDA 12) is served only by a feed build, whose kernels are not recorded
    feed = MATRIX.recommend(None, "2.3", gpu=H200)
    assert feed is not None
    assert feed.feed is not None
    assert feed.kernels is None


# --------------------------------------------------------------------------------------------------
# Targets the general kernels lack: the Windows wheels of 1.29-1.31 carry sm_90a only in Hopper-only kernels
# --------------------------------------------------------------------------------------------------
def test_isolated_targets_do_not_cover_the_general_kernels() -> None:
    archs = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a")
    lone = coverage(H200, archs, isolated=("sm_90a",))
    assert (lone.verdict, lone.sass, lone.runs) == ("isolated", ("sm_90a",), False)
    assert coverage(H200, archs).verdict == "sass"  # the union alone says it runs
    assert coverage(RTX5090, archs, isolated=("sm_90a",)).verdict == "sass"
    assert coverage(B200, archs, isolated=("sm_90a",)).verdict == "none"


def test_windows_1_29_to_1_31_have_sm_90a_in_hopper_only_kernels() -> None:
    for line in ("1.29", "1.30", "1.31"):
        release = next(r for r in MATRIX.releases if r.line == line)
        assert release.platform_archs["win_amd64"].isolated == ("sm_90a",)
        assert release.kernels_for().isolated == ()  # type: ignore[union-attr]  # Linux: every kernel has sm_90a
        k = release.kernels_for("win_amd64")
        assert k is not None
        assert coverage(H200, k.archs, ptx_isa=k.ptx_isa, isolated=k.isolated).verdict == "isolated"
    assert MATRIX.kernel_releases(H200, platform="win_amd64")[0].version == "1.28.0"
    assert MATRIX.kernel_releases(H200)[0].version == newest_version(13, carrying="sm_90a", matrix=MATRIX)


# --------------------------------------------------------------------------------------------------
# The matrix's schema for them, and scripts/read_wheel.py's output pasted into it
# --------------------------------------------------------------------------------------------------
def _document() -> dict[str, Any]:
    from ortdoctor.decide.matrix.load import default_matrix_path

    doc: dict[str, Any] = yaml.safe_load(Path(default_matrix_path()).read_text(encoding="utf-8"))
    return doc


def _row(doc: dict[str, Any], line: str) -> dict[str, Any]:
    row: dict[str, Any] = next(r for r in doc["releases"] if r["line"] == line)
    return row


@pytest.mark.parametrize(("line", "change", "message"), [
    ("1.31", {"archs": ["sm_75", "sm90"]}, "archs[1]: expected a kernel target"),
    ("1.31", {"archs": ["sm_75", "sm_75"]}, "duplicate target sm_75"),
    ("1.31", {"archs": ["sm_75", "compute_75"]}, "ptx_isa: missing"),
    ("1.31", {"ptx_isa": "9.0"}, "ptx_isa: given, but the archs list no PTX"),
    ("1.26", {"ptx_isa": 8.7}, "expected a quoted string"),
    ("1.31", {"isolated": ["sm_100a"]}, "isolated[0]: 'sm_100a' is not an arch-specific target"),
    ("1.31", {"platform_archs": {"macos_arm64": {"archs": [], "source": "x.whl"}}}, "unknown wheel platform"),
    ("1.31", {"platform_archs": {"win_amd64": {"archs": ["sm_75"]}}}, "win_amd64.source: missing required key"),
    ("1.31", {"platform_archs": {"win_amd64": {"archs": ["sm_75"], "source": "x.zip"}}}, "must name the .whl"),
    ("1.10", {"archs": ["sm_75"]}, "name it in archs_source"),
])
def test_the_validator_refuses_bad_architecture_facts(line: str, change: dict[str, Any], message: str) -> None:
    doc = _document()
    _row(doc, line).update(change)
    with pytest.raises(MatrixError, match=re.escape(message)):
        validate("<test>", doc)


def _wheel(tmp: Path, name: str, member: str, data: bytes) -> Path:
    wheel = tmp / name
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"onnxruntime_gpu-{name.split('-')[1]}.dist-info/METADATA", "Metadata-Version: 2.1\n")
        zf.writestr(member, data)
    return wheel


def _read_wheel(wheel: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "read_wheel.py"), str(wheel)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    facts: dict[str, Any] = yaml.safe_load(proc.stdout)
    return facts


def test_read_wheel_output_pastes_into_the_matrix(tmp_path: Path) -> None:
    linux = _wheel(tmp_path, "onnxruntime_gpu-1.99.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                   "onnxruntime/capi/libonnxruntime_providers_cuda.so", library("sass_ptx_zstd").read_bytes())
    facts = _read_wheel(linux)
    assert (facts["archs"], facts["ptx_isa"]) == (["sm_75", "sm_86", "compute_86"], "9.0")
    body = b"".join(fatbin_containers(library("arch_specific").read_bytes()))
    dll = make_pe([(b".text", b"\xc3" * 64), (b".nv_fatb", body)])
    win = _wheel(tmp_path, "onnxruntime_gpu-1.99.0-cp311-cp311-win_amd64.whl",
                 "onnxruntime/capi/onnxruntime_providers_cuda.dll", dll)
    win_facts = _read_wheel(win)
    assert win_facts["platform_archs"] == {"win_amd64": {
        "archs": ["sm_90a", "sm_120a", "compute_90a"], "ptx_isa": "9.0", "source": win.name}}
    doc = _document()
    row = _row(doc, "1.31")
    row.update({k: facts[k] for k in ("archs", "ptx_isa")})
    row["platform_archs"] = win_facts["platform_archs"]
    release = next(r for r in validate("<test>", doc).releases if r.line == "1.31")
    assert release.kernels_for() == PlatformArchs(("sm_75", "sm_86", "compute_86"), "9.0", release.source_ref)
    win_archs = release.kernels_for("win_amd64")
    assert win_archs is not None
    assert coverage(H200, win_archs.archs, ptx_isa=win_archs.ptx_isa).verdict == "sass"
    assert coverage(RTX5090, win_archs.archs, ptx_isa=win_archs.ptx_isa).verdict == "sass"
    assert coverage(B200, win_archs.archs, ptx_isa=win_archs.ptx_isa).verdict == "none"
