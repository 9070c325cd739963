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
            strictest = glibc_floor(recorded)
            if len(r.versions) > 1 and tag != recorded:  # the strictest patch stands for the line
                assert floor is not None
                assert strictest is not None
                assert strictest >= floor, (r.line, wheel)
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
    need = rec.release.glibc_needed("linux_x86_64")
    assert need is not None
    assert need <= (2, 27)
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


# -- the glibc check ----------------------------------------------------------------------------------------
def _diag(env: Any) -> list[Any]:
    from ortdoctor.diagnose.checklist import diagnose
    from tests.test_diagnose import full_plan

    return diagnose(env, full_plan(), MATRIX)


def _one(found: list[Any], fid: str) -> Any:
    hits = [f for f in found if f.id == fid]
    assert len(hits) == 1, [f.id for f in found]
    return hits[0]


def _none(found: list[Any], fid: str) -> None:
    assert fid not in [f.id for f in found]


def test_glibc_below_the_installed_wheels_floor() -> None:
    from tests.test_diagnose import healthy_env, python_info

    newest = MATRIX.releases[0]
    need = newest.glibc_needed("linux_x86_64")
    assert need is not None
    old = f"glibc {need[0]}.{need[1] - 1}"
    f = _one(_diag(healthy_env(python=python_info(libc=old))), "glibc-below-wheel-floor")
    assert f.severity == "error"
    assert f"needs glibc {need[0]}.{need[1]}" in f.detail
    # the fix pins the newest line the old glibc loads, never the installed one's
    pinned = [a for s in f.steps for a in s.args if "onnxruntime-gpu" in a]
    assert pinned
    line = next(r for r in MATRIX.releases if r.has_wheel("linux_x86_64", (need[0], need[1] - 1))
                and r.cuda_major == newest.cuda_major)
    assert any(f"=={line.versions[-1]}" in a for a in pinned), pinned
    _none(_diag(healthy_env(python=python_info(libc=f"glibc {need[0]}.{need[1]}"))), "glibc-below-wheel-floor")
    _none(_diag(healthy_env(python=python_info(libc="musl"))), "glibc-below-wheel-floor")


def test_aarch64_glibc_too_old_for_every_wheel() -> None:
    from ortdoctor.core.facts import OrtInfo
    from tests.test_diagnose import driver_ok, healthy_env, python_info

    py = python_info(platform="linux-aarch64", machine="aarch64", libc="glibc 2.31")
    f = _one(_diag(healthy_env(python=py, ort=OrtInfo(installed=False), driver=driver_ok())),
             "glibc-below-wheel-floor")
    assert "need glibc 2.34 or newer; this system has glibc 2.31" in f.detail
    assert not f.steps  # nothing on PyPI installs here
    # and no onnxruntime-gpu pin in the install advice either
    g = _one(_diag(healthy_env(python=py, ort=OrtInfo(installed=False), driver=driver_ok())), "ort-not-installed")
    assert not any(a.startswith("onnxruntime-gpu") and "==" in a for s in g.steps for a in s.args
                   if not MATRIX.releases[0].has_wheel(AARCH64, (2, 31)))


# -- Jetson -------------------------------------------------------------------------------------------------
def _jetson_root(tmp_path: Path, *, release: bool = True, dpkg: bool = False) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    tree = root / "proc" / "device-tree"
    tree.mkdir(parents=True)
    if release:  # the first line of Jetson Linux 36.4.3's /etc/nv_tegra_release
        (root / "etc" / "nv_tegra_release").write_text(
            "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: Wed Jan  8 "
            "01:49:37 UTC 2025\n")
    (tree / "model").write_bytes(b"NVIDIA Jetson AGX Orin Developer Kit\0")
    (tree / "compatible").write_bytes(b"nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0")
    if dpkg:
        status = root / "var" / "lib" / "dpkg"
        status.mkdir(parents=True)
        (status / "status").write_text(
            "Package: libc6\nStatus: install ok installed\nVersion: 2.35-0ubuntu3.8\n\n"
            "Package: nvidia-l4t-core\nStatus: install ok installed\nArchitecture: arm64\n"
            "Version: 36.4.3-20250107174145\n\n")
    return root


def test_probe_jetson_reads_l4t_and_the_soc(tmp_path: Path) -> None:
    from ortdoctor.probes.jetson import probe_jetson

    info = probe_jetson(str(_jetson_root(tmp_path)))
    assert info is not None
    assert (info.l4t, info.soc, info.model) == ("36.4.3", "tegra234", "NVIDIA Jetson AGX Orin Developer Kit")
    # a container without /etc/nv_tegra_release: the device tree, then dpkg's record of nvidia-l4t-core
    other = probe_jetson(str(_jetson_root(tmp_path / "b", release=False, dpkg=True)))
    assert other is not None
    assert other.l4t == "36.4.3"
    assert "/var/lib/dpkg/status (nvidia-l4t-core)" in other.evidence
    assert probe_jetson(str(tmp_path / "nothing")) is None


def test_probe_jetson_ignores_another_boards_device_tree(tmp_path: Path) -> None:
    from ortdoctor.probes.jetson import probe_jetson

    tree = tmp_path / "proc" / "device-tree"
    tree.mkdir(parents=True)
    (tree / "model").write_bytes(b"Raspberry Pi 5 Model B Rev 1.0\0")
    (tree / "compatible").write_bytes(b"raspberrypi,5-model-b\0brcm,bcm2712\0")
    assert probe_jetson(str(tmp_path)) is None


def _orin_env(**kw: Any) -> Any:
    from ortdoctor.core.facts import JetsonInfo
    from tests.test_diagnose import driver_none, healthy_env, python_info

    jet = JetsonInfo(l4t="36.4.3", model="NVIDIA Jetson AGX Orin Developer Kit", soc="tegra234",
                     evidence=("/etc/nv_tegra_release",))
    py = python_info(platform="linux-aarch64", machine="aarch64", libc="glibc 2.35")
    base = healthy_env(python=py, driver=driver_none(libcuda=("/usr/lib/aarch64-linux-gnu/tegra/libcuda.so.1",)),
                       jetson=jet)
    from dataclasses import replace

    return replace(base, **kw)


def test_jetson_with_the_pypi_aarch64_wheel_gets_the_jetpack_index() -> None:
    from tests.test_diagnose import ort_gpu

    # before: "driver-missing" (no NVML) and nothing about the wheel, whose kernels Orin cannot run
    found = _diag(_orin_env(ort=ort_gpu()))
    _none(found, "driver-missing")
    info = _one(found, "jetson-integrated-gpu")
    assert info.severity == "info"
    assert "integrated GPU sm_87" in info.detail
    f = _one(found, "jetson-needs-jetpack-wheel")
    assert "L4T 36.4.3, JetPack 6" in f.detail
    assert "nothing a Tegra sm_87 runs" in f.detail
    assert MATRIX.jetson is not None
    url = MATRIX.jetson.feeds_for("6")[0].index_url
    assert [(s.verb, s.args) for s in f.steps] == [("uninstall", ("-y", "onnxruntime-gpu")),
                                                   ("install", ("onnxruntime-gpu", "--index-url", url))]


def test_jetson_without_onnxruntime_installs_the_jetpack_build() -> None:
    from ortdoctor.core.facts import OrtInfo

    found = _diag(_orin_env(ort=OrtInfo(installed=False)))
    f = _one(found, "ort-not-installed")
    assert MATRIX.jetson is not None
    url = MATRIX.jetson.feeds_for("6")[0].index_url
    assert [(s.verb, s.args) for s in f.steps] == [("install", ("onnxruntime-gpu", "--index-url", url))]
    _one(found, "jetson-needs-jetpack-wheel")
    _none(found, "glibc-below-wheel-floor")


def test_jetpack5_is_pointed_at_the_jetson_zoo() -> None:
    from dataclasses import replace as dc_replace

    from ortdoctor.core.facts import OrtInfo

    env = _orin_env(ort=OrtInfo(installed=False))
    env = dc_replace(env, jetson=dc_replace(env.jetson, l4t="35.4.1"))
    found = _diag(env)
    f = _one(found, "jetson-needs-jetpack-wheel")
    assert "JetPack 5" in (f.fix or "")
    assert "https://elinux.org/Jetson_Zoo#ONNX_Runtime" in (f.fix or "")
    assert not f.steps
    # nor does the install advice pin a PyPI wheel: it names the page
    g = _one(found, "ort-not-installed")
    assert not g.steps
    assert "https://elinux.org/Jetson_Zoo#ONNX_Runtime" in (g.fix or "")


# -- check on the real Linux aarch64 wheel (read here on x86_64, as check reads any platform's files) ----------
def _aarch64_env(fs_root: Path, libc: str = "glibc 2.39") -> Any:
    from dataclasses import replace as dc_replace

    from ortdoctor.probes.environment import collect_environment
    from ortdoctor.probes.ort import add_kernels
    from tests.support import testenvs

    site = str(testenvs.ensure("ort-gpu-aarch64"))
    env = collect_environment(sys_path=[site], site_dirs=[site], query_driver=False, fs_root=str(fs_root),
                              environ={"PATH": "/usr/bin"}, plugins=False)
    python = dc_replace(env.python, platform="linux-aarch64", machine="aarch64", libc=libc)
    return dc_replace(env, python=python, ort=add_kernels(env.ort))


def _check(env: Any) -> list[Any]:
    from ortdoctor.decide.resolve import resolve
    from ortdoctor.diagnose.checklist import diagnose

    return diagnose(env, resolve(env, MATRIX), MATRIX)


@pytest.mark.realwheels
def test_real_aarch64_wheel_on_gb10_gives_its_rows(tmp_path: Path) -> None:
    from dataclasses import replace as dc_replace

    from ortdoctor.core.facts import Device
    from ortdoctor.diagnose.package import recommended_install
    from tests.test_diagnose import driver_ok

    env = _aarch64_env(tmp_path)
    ort = env.ort
    assert ort.is_gpu_build
    assert ort.cuda_provider is not None
    assert ort.cuda_provider.machine == "aarch64"
    match = MATRIX.release_for(ort.version or "")
    assert match is not None
    assert match.exact
    # the provider's own fatbin is the matrix's linux_aarch64 row of the line
    row = match.release.kernels_for(AARCH64)
    assert row is not None
    assert ort.kernels is not None
    assert ort.kernels.archs == row.archs
    gb10 = Device(0, "NVIDIA GB10", uuid="GPU-gb10", compute_capability="12.1", memory_total_mib=122502,
                  memory_free_mib=120000, compute_mode="default")
    env = dc_replace(env, driver=driver_ok(devices=(gb10,), libcuda=("/usr/lib/aarch64-linux-gnu/libcuda.so.1",)))
    found = _check(env)
    _none(found, "gpu-arch-unsupported")
    _none(found, "glibc-below-wheel-floor")
    _none(found, "jetson-needs-jetpack-wheel")
    # what check would install here: an aarch64 wheel of a line PyPI has for this platform
    command = recommended_install(env, MATRIX)
    pinned = command.split("onnxruntime-gpu[cuda,cudnn]==")[1].split("'")[0]
    assert pinned in [v for r in MATRIX.releases if r.has_wheel(AARCH64, (2, 39)) for v in r.versions]
    for finding in found:  # no fix pins a line without an aarch64 wheel
        for s in finding.steps:
            for arg in s.args:
                if arg.startswith("onnxruntime-gpu") and "==" in arg and "--index-url" not in s.args:
                    version = arg.split("==")[1]
                    line = MATRIX.release_for(version)
                    assert line is not None
                    assert line.release.has_wheel(AARCH64), (finding.id, arg)


@pytest.mark.realwheels
def test_real_aarch64_wheel_on_an_old_glibc(tmp_path: Path) -> None:
    f = _one(_check(_aarch64_env(tmp_path, libc="glibc 2.31")), "glibc-below-wheel-floor")
    assert "linux_aarch64 wheel is manylinux_2_34_aarch64: it needs glibc 2.34" in f.detail
    assert not f.steps  # no PyPI aarch64 wheel loads on glibc 2.31


@pytest.mark.realwheels
def test_real_aarch64_wheel_on_a_jetson_orin(tmp_path: Path) -> None:
    env = _aarch64_env(_jetson_root(tmp_path), libc="glibc 2.35")
    assert env.jetson is not None
    assert env.jetson.soc == "tegra234"
    found = _check(env)
    _none(found, "driver-missing")
    _one(found, "jetson-integrated-gpu")
    f = _one(found, "jetson-needs-jetpack-wheel")
    assert env.ort.cuda_provider is not None
    assert f"read from {env.ort.cuda_provider.path}" in f.detail
    assert "nothing a Tegra sm_87 runs" in f.detail
    assert MATRIX.jetson is not None
    assert MATRIX.jetson.feeds_for("6")[0].index_url in (f.fix or "")


# -- Windows: the DLLs each line's providers import -------------------------------------------------------------
def test_windows_imports_are_the_wheels_import_tables() -> None:
    import json

    facts = json.loads((Path(__file__).resolve().parents[1] / "scripts" / "data" / "wheel_facts.json").read_text())
    read = {e["wheel"]: e for e in facts if e["wheel"].endswith("win_amd64.whl") and "imports" in
            (e.get("cuda_provider") or {})}
    lines = [r for r in MATRIX.releases if r.windows_needed]
    assert lines
    for r in lines:
        entry = read[r.windows_source]
        imports = {d.lower() for d in entry["cuda_provider"]["imports"]}
        assert {d.lower() for d in r.windows_needed} <= imports, r.line
        # every CUDA/cuDNN/TensorRT DLL the TensorRT provider imports is a DLL the matrix can name
        known = {(lib.windows_dll or "").lower() for m in MATRIX.cuda_majors.values() for lib in m.libraries}
        known |= {(lib.windows_dll or "").lower() for m in MATRIX.cudnn_majors.values() for lib in m.libraries}
        assert MATRIX.tensorrt is not None
        known |= {(lib.windows_dll or "").lower() for m in MATRIX.tensorrt.majors.values() for lib in m.libraries}
        assert {d.lower() for d in r.windows_tensorrt_needed} <= known, r.line


def test_windows_provider_needs_come_from_the_windows_wheel() -> None:
    from dataclasses import replace as dc_replace

    from ortdoctor.decide.resolve import provider_needs
    from tests.test_diagnose import healthy_env, ort_gpu, python_info

    newest = MATRIX.releases[0]
    version = newest.versions[-1]
    ort = ort_gpu(cuda_provider=None, version=version)
    linux = healthy_env(ort=ort)
    windows = dc_replace(linux, python=python_info(os="windows", platform="win-amd64", machine="AMD64", libc=None))
    # before: None on Windows (every library taken as the matrix's default load kind, cudart required)
    assert provider_needs(windows, MATRIX, newest.cuda_major) == newest.windows_needed
    assert provider_needs(linux, MATRIX, newest.cuda_major) == newest.provider_needed
    cudart = next(lib for lib in MATRIX.cuda_majors[newest.cuda_major].libraries if lib.name == "cudart")
    if cudart.windows_dll not in newest.windows_needed:  # 1.27 on: no cudart DLL in the Windows import table
        assert cudart.soname in newest.provider_needed


def test_explain_no_wheel_names_the_aarch64_wheels_and_the_jetson_route() -> None:
    from ortdoctor.diagnose.classify import classify

    text = (Path(__file__).resolve().parent / "data" / "errors" / "mode17_no_wheel.txt").read_text()
    match = next(m for m in classify(text) if m.finding_id == "platform-no-cuda")
    # before: "published for Linux x86_64 and Windows x64 only", and a source build for DGX Spark
    assert "x86_64 and Windows x64 only" not in match.fix
    lines = _lines_with(AARCH64)
    assert f"Linux aarch64 ({lines[-1]}-{lines[0]}, glibc 2.34 or newer" in match.fix
    assert MATRIX.jetson is not None
    assert MATRIX.jetson.feeds_for("6")[0].index_url in match.fix


def test_the_report_json_carries_the_jetson() -> None:
    import json

    import jsonschema

    from ortdoctor.report.json_report import _system
    from tests.test_diagnose import healthy_env

    schema = json.loads((Path(__file__).resolve().parents[1] / "ortdoctor" / "report" / "check.schema.json")
                        .read_text(encoding="utf-8"))["properties"]["system"]
    data = _system(_orin_env())
    assert data["jetson"] == {"l4t": "36.4.3", "model": "NVIDIA Jetson AGX Orin Developer Kit", "soc": "tegra234",
                              "evidence": ["/etc/nv_tegra_release"]}
    jsonschema.validate(data, schema)
    other = _system(healthy_env())
    assert other["jetson"] is None
    jsonschema.validate(other, schema)


def test_matrix_auto_on_a_jetson_uses_its_integrated_gpu(runner: CliRunner, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    from ortdoctor.core.facts import DriverInfo
    from ortdoctor.probes import driver, jetson

    root = _jetson_root(tmp_path)
    real_probe = jetson.probe_jetson
    monkeypatch.setattr(driver, "probe_driver", lambda *a, **k: DriverInfo(available=False, error="no NVML"))
    monkeypatch.setattr(jetson, "probe_jetson", lambda fs_root="/": real_probe(str(root)))
    result = runner.invoke(cli, ["matrix", "--cuda", "13", "--platform", AARCH64])
    # before: no GPU seen (no NVML), so the PyPI aarch64 wheel, which has no kernels for Orin
    assert result.exit_code == 1, result.output
    assert "sm_87 (detected: Jetson tegra234)" in result.output
    assert "pip install" not in result.output
