"""The TensorRT and plugin-EP rules on environments built by hand, and the shipped matrix's TensorRT rows.

Every pip spec a fix prints is checked against PyPI's facts (scripts/data/package_table.yaml): the name
exists and a version matches the pin.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from ortdoctor.core.facts import (
    ElfInfo,
    Environment,
    Finding,
    PluginEpInfo,
    PluginEpPackage,
    SearchDir,
    TensorrtDistribution,
    TensorrtInfo,
    TensorrtInstall,
    TensorrtLibrary,
)
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import MatrixError
from ortdoctor.decide.matrix.validate import validate
from ortdoctor.diagnose.checklist import diagnose
from ortdoctor.diagnose.classify import finding_ids
from ortdoctor.prove.smoke.runner import SmokeResult
from tests.support.fake_tensorrt import plugin_facts
from tests.test_diagnose import CU13, SITE, full_plan, healthy_env, ids, one, ort_gpu, system_with_path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = load_matrix()
PKG = f"{SITE}/onnxruntime"
TRT_PROVIDER = ElfInfo(f"{PKG}/capi/libonnxruntime_providers_tensorrt.so", "x86_64", 64,
                       needed=("libcublas.so.13", "libnvinfer.so.10", "libnvonnxparser.so.10", "libcudart.so.13",
                               "libcudnn.so.9"))
TRT_LIBS = f"{SITE}/tensorrt_libs"
PIP = "/venv/bin/python -m pip"  # every package fix names the inspected interpreter


def trt_install(version: str, cuda: int | None = 13, *, origin: str = "pip", directory: str = TRT_LIBS,
                parser: bool = True, resource: bool = True) -> TensorrtInstall:
    major = int(version.split(".")[0])
    names = ["nvinfer", "nvinfer_plugin"] + (["nvonnxparser"] if parser else [])
    libs = tuple(TensorrtLibrary(n, f"lib{n}.so.{major}", f"{directory}/lib{n}.so.{major}",
                                 f"{directory}/lib{n}.so.{major}") for n in names)
    short = ".".join(version.split(".")[:3])
    return TensorrtInstall(directory=directory, origin=origin, major=major, libraries=libs,
                           builder_resources=(f"libnvinfer_builder_resource.so.{short}",) if resource else (),
                           version=version, version_source=f"tensorrt-cu{cuda}-libs {version}" if origin == "pip" else
                           "file names", distribution=f"tensorrt-cu{cuda}-libs" if origin == "pip" else None,
                           cuda_major=cuda, cuda_source=f"the -cu{cuda} package name" if cuda else None)


def pip_dists(version: str, cuda: int = 13) -> tuple[TensorrtDistribution, ...]:
    return tuple(TensorrtDistribution(n, version, SITE)
                 for n in (f"tensorrt-cu{cuda}", f"tensorrt-cu{cuda}-libs", f"tensorrt-cu{cuda}-bindings"))


def env_with(*installs: TensorrtInstall, dists: tuple[TensorrtDistribution, ...] = (), on_path: bool = True,
             **kw: Any) -> Environment:
    dirs = [CU13] + ([i.directory for i in installs] if on_path else [])
    return healthy_env(ort=ort_gpu(**{"tensorrt_provider": TRT_PROVIDER, **kw.pop("ort", {})}),
                       tensorrt=TensorrtInfo(installs=installs, distributions=dists),
                       system=system_with_path(*dirs), **kw)


def run(env: Environment, **kw: Any) -> list[Finding]:
    return diagnose(env, full_plan(), SHIPPED, **kw)


def trt_ids(findings: list[Finding]) -> list[str]:
    return [i for i in ids(findings) if i.startswith(("tensorrt", "plugin-ep", "cuda-plugin"))]


TRT_SMOKE = SmokeResult(ran=True, ok=False, stage="session", error="RuntimeError: x", finding_id="smoke-failed",
                        ep="TensorrtExecutionProvider")


# --------------------------------------------------------------------------------------------------
# The matrix
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("line", "minor"), [("1.18", "10.0"), ("1.19", "10.2"), ("1.20", "10.4"), ("1.21", "10.8"),
                                             ("1.22", "10.9"), ("1.24", "10.14"), ("1.17", "8.6"), ("1.16", "8.6")])
def test_documented_build_minors(line: str, minor: str) -> None:
    assert SHIPPED.tensorrt is not None
    build = SHIPPED.tensorrt.build_for(line)
    assert build is not None
    assert build.tensorrt == minor
    assert build.source.startswith("https://")


@pytest.mark.parametrize("line", ["1.23", "1.25", "1.26", "1.27", "1.28", "1.29", "1.30", "1.31"])
def test_undocumented_minors_stay_unknown(line: str) -> None:
    assert SHIPPED.tensorrt is not None
    assert SHIPPED.tensorrt.build_for(line) is None


def test_every_release_linking_tensorrt_names_a_major_the_matrix_describes() -> None:
    facts = SHIPPED.tensorrt
    assert facts is not None
    for release in SHIPPED.releases:
        majors = {int(m.group(1)) for s in release.tensorrt_needed if (m := re.match(r"libnvinfer\.so\.(\d+)$", s))}
        for major in majors:
            assert major in facts.majors, release.line
            assert {lib.soname for lib in facts.majors[major].libraries} >= {
                s for s in release.tensorrt_needed if s.startswith("libnv")}, release.line
        build = facts.build_for(release.line)
        if build is not None and majors:
            assert majors == {build.major}, release.line
        # 1.18-1.31 link TensorRT 10 whatever their CUDA major
        if (1, 18) <= tuple(int(x) for x in release.line.split(".")) <= (1, 31):
            assert majors == {10}, release.line


def test_pip_pins_per_cuda_major() -> None:
    facts = SHIPPED.tensorrt
    assert facts is not None
    cu13, cu12 = facts.pip_for(10, 13), facts.pip_for(10, 12)
    assert cu13 is not None
    assert cu12 is not None
    assert cu13.spec(10) == "tensorrt-cu13==10.*"
    assert cu12.spec(10) == "tensorrt-cu12==10.*"
    assert facts.pip_for(10, 11).spec(10) == "tensorrt-cu11==10.*"  # type: ignore[union-attr]
    assert facts.pip_for(8, 11) is None  # no pip fix is printed for TensorRT 8
    assert facts.index_url == "https://pypi.nvidia.com"


def test_pip_versions_agree_with_the_package_table() -> None:
    table = yaml.safe_load((ROOT / "scripts" / "data" / "package_table.yaml").read_text())["tensorrt"]
    facts = SHIPPED.tensorrt
    assert facts is not None
    for major, tm in facts.majors.items():
        for pip in tm.pip.values():
            listed = table[pip.package][f"versions_{major}x"]
            assert pip.first in listed, (pip.package, major)
            assert pip.last == listed[-1], (pip.package, major)
            libs = table[str(pip.libs_package)]
            assert libs["sdist_build_backend"]["downloads_from"] == "https://pypi.nvidia.com/"


def _doc(**tensorrt: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "compat_matrix.yaml").read_text())
    doc["tensorrt"].update(tensorrt)
    return doc


def test_validation_names_the_key_of_a_bad_tensorrt_row() -> None:
    doc = _doc()
    doc["tensorrt"]["builds"].append({"lines": ["1.31"], "tensorrt": "11.4", "source": "https://example.org"})
    with pytest.raises(MatrixError, match=r"tensorrt\.builds\[\d+\]\.tensorrt: TensorRT 11\.4 for 1\.31, but its "
                                          r"wheel links libnvinfer\.so\.10"):
        validate("m.yaml", doc)
    doc = _doc()
    doc["tensorrt"]["majors"][10]["libraries"][0]["soname"] = "libnvinfer.so.11"
    with pytest.raises(MatrixError, match=r"tensorrt\.majors\.10\.libraries\[0\]\.soname"):
        validate("m.yaml", doc)
    doc = _doc()
    doc["tensorrt"]["builds"][0]["source"] = ""
    with pytest.raises(MatrixError, match=r"tensorrt\.builds\[0\]\.source"):
        validate("m.yaml", doc)
    doc = _doc()
    doc["tensorrt"]["majors"][10]["pip"][13]["first"] = "11.0.0.114"
    with pytest.raises(MatrixError, match=r"not a TensorRT 10 version"):
        validate("m.yaml", doc)


# --------------------------------------------------------------------------------------------------
# TensorRT
# --------------------------------------------------------------------------------------------------
def test_tensorrt_11_beside_a_build_that_needs_10_names_both_majors_and_pins_10() -> None:
    f = one(run(env_with(trt_install("11.4.0.106"), dists=pip_dists("11.4.0.106"))), "tensorrt-major-mismatch")
    assert f.severity == "warning"
    assert "TensorRT 11" in f.title
    assert "TensorRT 10" in f.title
    assert "libnvinfer.so.10" in f.detail
    assert "libnvinfer.so.11" in f.detail
    assert f.fix is not None
    assert f.fix.startswith(f"{PIP} install 'tensorrt-cu13==10.*' --extra-index-url https://pypi.nvidia.com")
    assert "pypi.nvidia.com while installing" in f.fix  # the -libs package is an sdist that downloads from there
    assert "ortdoctor preload --tensorrt" in f.fix


def test_tensorrt_11_from_the_unsuffixed_meta_package_is_uninstalled_first() -> None:
    dists = (TensorrtDistribution("tensorrt", "11.4.0.106", SITE), *pip_dists("11.4.0.106"))
    f = one(run(env_with(trt_install("11.4.0.106"), dists=dists)), "tensorrt-major-mismatch")
    assert f.fix is not None
    assert f.fix.startswith(f"{PIP} uninstall -y tensorrt\n{PIP} install 'tensorrt-cu13==10.*'")


def test_a_cuda_12_build_is_pinned_to_tensorrt_cu12() -> None:
    ort: dict[str, Any] = {"cuda_version": "12.8", "version": "1.26.0",
           "tensorrt_provider": replace(TRT_PROVIDER, needed=("libnvinfer.so.10", "libnvonnxparser.so.10",
                                                              "libcudart.so.12"))}
    env = env_with(trt_install("11.4.0.106", 12), dists=pip_dists("11.4.0.106", 12))
    env = replace(env, ort=replace(env.ort, **ort))
    f = one(diagnose(env, replace(full_plan(), cuda_major=12), SHIPPED), "tensorrt-major-mismatch")
    assert f.fix is not None
    assert "pip install 'tensorrt-cu12==10.*'" in f.fix


def test_tensorrt_missing_is_a_note_unless_the_smoke_asks_for_it() -> None:
    f = one(run(env_with()), "tensorrt-unavailable")
    assert f.severity == "info"
    assert "libnvinfer.so.10 and libnvonnxparser.so.10 (TensorRT 10)" in f.detail
    assert f.fix is not None
    assert "pip install 'tensorrt-cu13==10.*' --extra-index-url https://pypi.nvidia.com" in f.fix
    asked = [x for x in run(env_with(), smoke=TRT_SMOKE) if x.id == "tensorrt-unavailable"]
    assert asked
    assert asked[0].severity == "error"


def test_a_matching_tensorrt_on_the_loader_path_has_no_finding() -> None:
    assert trt_ids(run(env_with(trt_install("10.16.1.11")))) == []


def test_pip_tensorrt_is_not_where_the_loader_looks() -> None:
    f = one(run(env_with(trt_install("10.16.1.11"), on_path=False)), "tensorrt-not-on-loader-path")
    assert TRT_LIBS in f.detail
    assert "onnxruntime.preload_dlls() does not load TensorRT" in f.detail
    assert f.fix is not None
    assert "ORTDOCTOR_TENSORRT=1" in f.fix
    assert "ortdoctor preload --tensorrt" in f.fix
    assert f"LD_LIBRARY_PATH={TRT_LIBS}" in f.fix


def test_an_ld_so_cache_install_is_found_by_the_loader() -> None:
    apt = trt_install("10.14.1.48", 13, origin="ld.so.cache", directory="/usr/lib/x86_64-linux-gnu")
    env = env_with(apt, on_path=False)
    env = replace(env, system=replace(env.system, ldconfig={
        "libnvinfer.so.10": ("/usr/lib/x86_64-linux-gnu/libnvinfer.so.10",)}))
    assert trt_ids(run(env)) == []


def test_tensorrt_for_cuda_12_beside_a_cuda_13_build() -> None:
    f = one(run(env_with(trt_install("10.16.1.11", 12), dists=pip_dists("10.16.1.11", 12))),
            "tensorrt-cuda-major-mismatch")
    assert "built for CUDA 13" in f.detail
    assert "CUDA 12 (the -cu12 package name)" in f.detail
    assert f.fix is not None
    assert f.fix.startswith(f"{PIP} uninstall -y tensorrt-cu12 tensorrt-cu12-libs "
                            f"tensorrt-cu12-bindings\n{PIP} install 'tensorrt-cu13==10.*'")


def test_the_matching_cuda_major_is_preferred_when_both_are_installed() -> None:
    env = env_with(trt_install("10.16.1.11", 12, directory="/a/tensorrt_libs"),
                   trt_install("10.16.1.11", 13, directory="/b/tensorrt_libs"))
    assert trt_ids(run(env)) == []


def test_no_onnx_parser_and_no_builder_resource() -> None:
    f = one(run(env_with(trt_install("10.16.1.11", parser=False, resource=False))), "tensorrt-incomplete")
    assert "lacks libnvonnxparser.so.10; libnvinfer_builder_resource.so.10.16.1 " in f.detail
    assert f.fix is not None
    assert f.fix.startswith(f"{PIP} install --force-reinstall 'tensorrt-cu13==10.*'")
    g = one(run(env_with(trt_install("10.16.1.11", resource=False))), "tensorrt-incomplete")
    assert "lacks libnvinfer_builder_resource.so.10.16.1 " in g.detail
    assert "Unable to load library" in g.detail


def test_an_incomplete_apt_install_is_reinstalled_with_apt() -> None:
    apt = trt_install("10.14.1.48", 12, origin="ld.so.cache", directory="/usr/lib/x86_64-linux-gnu", parser=False)
    env = env_with(apt)
    env = replace(env, ort=replace(env.ort, cuda_version="12.8", version="1.26.0"))
    f = one(diagnose(env, replace(full_plan(), cuda_major=12), SHIPPED), "tensorrt-incomplete")
    assert f.fix is not None
    assert "apt-get install --reinstall libnvinfer10 libnvinfer-plugin10 libnvonnxparsers10" in f.fix


def test_older_than_the_documented_build() -> None:
    ort = {"version": "1.24.4", "cuda_version": "12.8",
           "tensorrt_provider": replace(TRT_PROVIDER, needed=("libnvinfer.so.10", "libnvonnxparser.so.10"))}
    env = env_with(trt_install("10.4.0.26", 12), ort=ort)
    f = one(diagnose(env, replace(full_plan(), cuda_major=12), SHIPPED), "tensorrt-older-than-build")
    assert f.severity == "info"
    assert "TensorRT 10.14" in f.detail
    assert "10.4.0.26" in f.detail
    newer = env_with(trt_install("10.16.1.11", 12), ort=ort)
    assert "tensorrt-older-than-build" not in ids(diagnose(newer, replace(full_plan(), cuda_major=12), SHIPPED))


def test_an_undefined_tensorrt_symbol_is_not_a_missing_tensorrt() -> None:
    text = ("[E:onnxruntime:Default, provider_bridge_ort.cc:2430 operator()] ... Failed to load library "
            "/x/onnxruntime/capi/libonnxruntime_providers_tensorrt.so with error: "
            "/x/onnxruntime/capi/libonnxruntime_providers_tensorrt.so: undefined symbol: "
            "createNvOnnxParserRefitter_INTERNAL\n"
            "RuntimeError: ... RegisterTensorRTPluginsAsCustomOps(...) Please install TensorRT libraries as "
            "mentioned in the GPU requirements page")
    assert finding_ids(text) == ["tensorrt-ep-create-failed"]


def test_no_tensorrt_provider_no_tensorrt_findings() -> None:
    assert trt_ids(run(healthy_env(tensorrt=TensorrtInfo(installs=(trt_install("11.4.0.106"),))))) == []


# --------------------------------------------------------------------------------------------------
# Plugin EPs
# --------------------------------------------------------------------------------------------------
def plugin_package(*, variant: str = "cu13", cudart_named: bool = False, **kw: Any) -> PluginEpPackage:
    facts = plugin_facts()
    base = f"{SITE}/onnxruntime_ep_nv_tensorrt_rtx"
    libs = []
    for e in facts["shared_libraries"]:  # type: ignore[attr-defined]
        needed = tuple(n.replace(".so.13", f".so.{variant[2:]}") if n.startswith("libcudart") else n
                       for n in e["needed"])
        soname = e["soname"].replace(".so.13", f".so.{variant[2:]}")
        libs.append(ElfInfo(f"{SITE}/{e['file']}".replace("13.4.36", "12.9.79" if variant == "cu12" else "13.4.36"),
                            "x86_64", 64, soname=soname, needed=needed, runpath=tuple(e.get("runpath", ())),
                            search_path_has_cwd=bool(e.get("runpath_has_cwd"))))
    named = tuple(facts["named_in_python"]) + (("libcudart.so.13.4.36",) if cudart_named else ())  # type: ignore[arg-type]
    pkg = PluginEpPackage(name=f"onnxruntime-ep-nv-tensorrt-rtx-{variant}", version="0.5.0", location=SITE,
                          import_name="onnxruntime_ep_nv_tensorrt_rtx", libraries=tuple(libs),
                          provider_library=f"{base}/libonnxruntime_providers_nv_tensorrt_rtx.so",
                          ep_names=("NvTensorRTRTXExecutionProvider",),
                          import_effects=tuple(facts["import_effects"]),  # type: ignore[arg-type]
                          named_in_python=named)
    return replace(pkg, **kw)


def test_the_bundled_cudart_is_flagged_with_what_was_measured() -> None:
    env = healthy_env(plugins=PluginEpInfo(packages=(plugin_package(),)))
    f = one(run(env), "plugin-ep-bundled-cuda-library")
    assert f.title == "onnxruntime-ep-nv-tensorrt-rtx-cu13 bundles its own libcudart.so.13"
    assert "ships libcudart.so.13.4.36 (soname libcudart.so.13)" in f.detail
    assert f"a second libcudart file in the process's search space beside the chosen {CU13}/libcudart.so.13" in f.detail
    assert "its Python code does not name it" in f.detail
    assert "libonnxruntime_providers_nv_tensorrt_rtx.so (DT_NEEDED libcudart.so.13, no RUNPATH)" in f.detail
    assert "RUNPATH names /usr/local/cuda-13.4/lib64" in f.detail
    assert "empty entry, which the loader searches as the current directory" in f.detail
    assert "sets LD_LIBRARY_PATH" in f.detail
    assert f.severity == "warning"  # the empty RUNPATH entry: the working directory is searched
    assert f.fix is not None
    assert "import ortdoctor.hook" in f.fix


def test_without_the_cwd_runpath_the_unused_copy_is_a_note() -> None:
    pkg = plugin_package()
    pkg = replace(pkg, libraries=tuple(replace(lib, search_path_has_cwd=False) for lib in pkg.libraries
                                       if isinstance(lib, ElfInfo)))
    f = one(run(healthy_env(plugins=PluginEpInfo(packages=(pkg,)))), "plugin-ep-bundled-cuda-library")
    assert f.severity == "info"


def test_a_package_that_names_its_cudart_may_load_a_second_copy() -> None:
    pkg = plugin_package(cudart_named=True)
    f = one(run(healthy_env(plugins=PluginEpInfo(packages=(pkg,)))), "plugin-ep-bundled-cuda-library")
    assert f.severity == "warning"
    assert "Its Python code names libcudart.so.13.4.36" in f.detail


def test_with_no_other_cudart_registration_fails_although_the_package_ships_one() -> None:
    env = healthy_env(ort=replace(ort_gpu(), is_gpu_build=False, cuda_provider=None, cuda_version=None,
                                  active="onnxruntime", package_name="onnxruntime"),
                      plugins=PluginEpInfo(packages=(plugin_package(),)), system=system_with_path())
    f = one(diagnose(env, None, SHIPPED), "plugin-ep-bundled-cuda-library")
    assert f.severity == "warning"
    assert "registering the plugin fails with `libcudart.so.13: cannot open shared object file`" in f.detail
    assert f.fix is not None
    assert f.fix.startswith(f"{PIP} install 'nvidia-cuda-runtime==13.*'")


def test_a_cuda_12_plugin_beside_a_cuda_13_build() -> None:
    env = healthy_env(plugins=PluginEpInfo(packages=(plugin_package(variant="cu12"),)))
    f = one(run(env), "plugin-ep-cuda-major-mismatch")
    assert "libcudart.so.12" in f.detail
    assert "CUDA 13" in f.detail
    assert f.fix == (f"{PIP} uninstall -y onnxruntime-ep-nv-tensorrt-rtx-cu12\n"
                     f"{PIP} install onnxruntime-ep-nv-tensorrt-rtx-cu13==0.5.0")


def test_a_cuda_plugin_ep_build_is_a_note() -> None:
    info = "ORT Build Info: git-branch=main, cuda-plugin-ep=1, build type=Release"
    env = healthy_env(plugins=PluginEpInfo(build_info=info, build_info_path=f"{PKG}/capi/x.so", cuda_plugin_ep=True))
    f = one(run(env), "cuda-plugin-ep-build")
    assert f.severity == "info"
    assert "cuda-plugin-ep=1" in f.detail
    assert f.fix is None
    assert "cuda-plugin-ep-build" not in ids(run(healthy_env(plugins=PluginEpInfo(cuda_plugin_ep=False))))


# What the smoke child saw on the H200 (scripts/tensorrt_gpu.sh, docs/validation.md): the TensorRT-RTX plugin
# registered, get_ep_devices() listed only the CPU, NVML one H200.
H200_PLUGIN = {"package": "onnxruntime-ep-nv-tensorrt-rtx-cu13", "version": "0.5.0",
               "library": f"{SITE}/onnxruntime_ep_nv_tensorrt_rtx/libonnxruntime_providers_nv_tensorrt_rtx.so",
               "ep_name": "NvTensorRTRTXExecutionProvider", "preloaded": [], "registered": True, "error": None}
H200_DEVICES = ({"ep_name": "CPUExecutionProvider", "ep_vendor": "Microsoft", "type": "CPU", "vendor": "Intel",
                 "vendor_id": 0x8086, "device_id": 0, "metadata": {}, "ep_metadata": {}},)


def test_a_plugin_that_onnxruntime_offers_no_device_cannot_run_a_session() -> None:
    smoke = SmokeResult(ran=True, ok=True, providers=("CUDAExecutionProvider", "CPUExecutionProvider"),
                        plugin_eps=(H200_PLUGIN,), ep_devices=H200_DEVICES)
    f = one(run(healthy_env(plugins=PluginEpInfo(packages=(plugin_package(),))), smoke=smoke), "plugin-ep-no-device")
    assert f.severity == "warning"
    assert "NvTensorRTRTXExecutionProvider) registered, but onnxruntime offers it no device" in f.detail
    assert "CPUExecutionProvider on CPU (Intel)" in f.detail
    assert "lists no GPU at all here" in f.detail
    offered = SmokeResult(ran=True, ok=True, plugin_eps=(H200_PLUGIN,), ep_devices=(
        *H200_DEVICES, {**H200_DEVICES[0], "ep_name": "NvTensorRTRTXExecutionProvider", "type": "GPU"}))
    assert "plugin-ep-no-device" not in ids(run(healthy_env(plugins=PluginEpInfo(packages=(plugin_package(),))),
                                                smoke=offered))


def test_a_plugin_registration_that_failed_is_reported_with_its_error() -> None:
    failed = {**H200_PLUGIN, "registered": False, "error": "OSError: libcudart.so.13: cannot open shared object file"}
    smoke = SmokeResult(ran=True, ok=True, plugin_eps=(failed,), ep_devices=H200_DEVICES)
    f = one(run(healthy_env(plugins=PluginEpInfo(packages=(plugin_package(),))), smoke=smoke), "plugin-ep-no-device")
    assert "failed: OSError: libcudart.so.13: cannot open shared object file" in f.detail

# --------------------------------------------------------------------------------------------------
# Every printed package spec exists
# --------------------------------------------------------------------------------------------------
def tensorrt_findings() -> list[Finding]:
    """Every TensorRT and plugin-EP finding with a package fix, for CUDA 11, 12 and 13 builds (also used by
    tests/test_fix_specs.py, which checks every spec any fix prints)."""
    cases = [
        run(env_with(trt_install("11.4.0.106"), dists=pip_dists("11.4.0.106"))),
        run(env_with(trt_install("11.4.0.106"), dists=(TensorrtDistribution("tensorrt", "11.4.0.106", SITE),
                                                       *pip_dists("11.4.0.106")))),
        run(env_with()),
        run(env_with(trt_install("10.16.1.11", 12), dists=pip_dists("10.16.1.11", 12))),
        run(env_with(trt_install("10.16.1.11", parser=False, resource=False))),
        run(healthy_env(plugins=PluginEpInfo(packages=(plugin_package(variant="cu12"),)))),
        diagnose(healthy_env(ort=replace(ort_gpu(), is_gpu_build=False, cuda_provider=None, cuda_version=None),
                             plugins=PluginEpInfo(packages=(plugin_package(),)), system=system_with_path()),
                 None, SHIPPED),
    ]
    for cuda, version in ((12, "1.26.0"), (11, "1.18.1"), (12, "1.24.4")):
        provider = replace(TRT_PROVIDER, needed=("libnvinfer.so.10", "libnvonnxparser.so.10"))
        env = env_with(trt_install("11.4.0.106", cuda), dists=pip_dists("11.4.0.106", cuda),
                       ort={"cuda_version": f"{cuda}.8", "version": version, "tensorrt_provider": provider})
        cases.append(diagnose(env, replace(full_plan(), cuda_major=cuda), SHIPPED))
        older = env_with(trt_install("10.4.0.26", cuda),
                         ort={"cuda_version": f"{cuda}.8", "version": version, "tensorrt_provider": provider})
        cases.append(diagnose(older, replace(full_plan(), cuda_major=cuda), SHIPPED))
    return [f for findings in cases for f in findings if f.id.startswith(("tensorrt", "plugin-ep"))]


def test_every_pip_spec_the_tensorrt_and_plugin_fixes_print_exists() -> None:
    from tests.support.pypi import spec_problem, specs_of

    findings = tensorrt_findings()
    specs = {spec for f in findings for s in f.steps if s.verb == "install" for spec in specs_of(s.args)}
    assert specs >= {"tensorrt-cu13==10.*", "tensorrt-cu12==10.*", "tensorrt-cu11==10.*",
                     "onnxruntime-ep-nv-tensorrt-rtx-cu13==0.5.0", "nvidia-cuda-runtime==13.*"}
    assert [spec_problem(s) for s in sorted(specs) if spec_problem(s)] == []
    # every tensorrt-cuNN pin keeps the major (an unpinned install is TensorRT 11), from NVIDIA's index
    for f in findings:
        for s in f.steps:
            if s.verb == "install" and any(a.startswith("tensorrt-") for a in s.args):
                assert any(a.endswith("==10.*") for a in s.args), (f.id, s.args)
                assert s.args[-2:] == ("--extra-index-url", "https://pypi.nvidia.com"), (f.id, s.args)
        if f.steps:
            assert f.fix is not None
            assert f"{PIP} " in f.fix, (f.id, f.fix)  # the inspected interpreter's pip, never a bare `pip`
            assert "\npip " not in "\n" + f.fix, (f.id, f.fix)
            assert " && pip " not in f.fix, (f.id, f.fix)


def test_the_catalog_fixes_name_only_existing_specs() -> None:
    from ortdoctor.core.catalog import CATALOG
    from ortdoctor.diagnose.fixes import pip_specs
    from tests.support.pypi import spec_problem

    for fid in ("tensorrt-unavailable", "tensorrt-major-mismatch", "tensorrt-cuda-major-mismatch",
                "tensorrt-incomplete", "tensorrt-older-than-build", "plugin-ep-cuda-major-mismatch"):
        for spec in pip_specs(CATALOG[fid].fix):
            assert spec_problem(spec) is None, (fid, spec)


def test_ld_library_path_entries_that_are_relative_are_not_searched_for_tensorrt() -> None:
    env = env_with(trt_install("10.16.1.11"), on_path=False)
    env = replace(env, system=replace(env.system, ld_library_path=(*env.system.ld_library_path,
                                                                   SearchDir("tensorrt_libs", "LD_LIBRARY_PATH",
                                                                             relative=True))))
    assert "tensorrt-not-on-loader-path" in ids(run(env))


def test_the_explain_table_reads_the_matrix_for_lines_the_documentation_left_out() -> None:
    from ortdoctor.decide.tensorrt_versions import tensorrt_for

    assert tensorrt_for("1.24.4") == "10.14"  # v1.24.1 release notes, via the matrix
    assert tensorrt_for("1.31.1") == "10.x"  # the wheel links libnvinfer.so.10; the minor is not published
    assert tensorrt_for("1.22.0") == "10.9"
    assert tensorrt_for("9.9.0") is None


def test_a_refused_tensorrt_is_named_with_where_and_why(tmp_path: Path) -> None:
    """TensorRT found only in a directory others can write: `check` says where and why it was refused (as
    `preload --tensorrt` does), not that TensorRT is missing."""
    shared = tmp_path / "shared" / "tensorrt_libs"
    shared.mkdir(parents=True)
    for name in ("libnvinfer.so.10", "libnvinfer_plugin.so.10", "libnvonnxparser.so.10"):
        (shared / name).write_bytes(b"\x7fELF")
    shared.chmod(0o777)
    f = one(run(env_with(trt_install("10.16.1.11", directory=str(shared)))), "tensorrt-unavailable")
    assert f.title == "TensorRT 10 was found only in places ortdoctor refuses to load from"
    assert f"{shared} (world-writable directory {shared})" in f.detail
    assert "which is not installed" not in f.detail
    assert f.severity == "info"  # only matters when the TensorRT EP is asked for
    assert f.fix is not None
    assert f.fix.splitlines()[0] == shlex.join(["chmod", "o-w", str(shared)])  # the directory made safe
    assert "pip install 'tensorrt-cu13==10.*'" in f.fix  # or installed where only you or root can write
    asked = [x for x in run(env_with(trt_install("10.16.1.11", directory=str(shared))), smoke=TRT_SMOKE)
             if x.id == "tensorrt-unavailable"]
    assert asked[0].severity == "error"


def test_a_scoped_override_lets_through_only_the_tensorrt_under_its_directory(tmp_path: Path) -> None:
    from ortdoctor.decide.tensorrt import judge_installs
    from ortdoctor.native import gate

    installs = []
    for name in ("a", "b"):
        shared = tmp_path / name / "tensorrt_libs"
        shared.mkdir(parents=True)
        for so in ("libnvinfer.so.10", "libnvinfer_plugin.so.10", "libnvonnxparser.so.10"):
            (shared / so).write_bytes(b"\x7fELF")
        shared.chmod(0o777)
        installs.append(trt_install("10.16.1.11", directory=str(shared)))
    env = env_with(*installs)
    ok, refused, allowed = judge_installs(env, allow_unsafe=gate.allowance([str(tmp_path / "a")]))
    assert [i.directory for i in ok] == [installs[0].directory]
    assert [r.install.directory for r in allowed] == [installs[0].directory]
    assert [r.install.directory for r in refused] == [installs[1].directory]
    ok, refused, _allowed = judge_installs(env, allow_unsafe=True)  # the broad form: both
    assert len(ok) == 2
    assert refused == []
