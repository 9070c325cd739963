"""probe_tensorrt and probe_plugin_eps on gcc-built stand-ins laid out as pip, a tarball and apt install them,
and on the real TensorRT-RTX plugin wheel."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest

from ortdoctor.core.facts import ElfInfo, OrtInfo, SearchDir, SystemInfo
from ortdoctor.formats import elf_rodata
from ortdoctor.formats.elf_rodata import find_marked_string
from ortdoctor.probes.plugin_eps import BUILD_INFO_MARKER, import_effects, probe_plugin_eps
from ortdoctor.probes.tensorrt import parse_dpkg_tensorrt, probe_tensorrt, scan_directory
from tests.support import plugin_wheels, testenvs
from tests.support.fake_tensorrt import (
    build_tensorrt,
    install_plugin,
    install_tensorrt_pip,
    install_tensorrt_tarball,
    plugin_facts,
)
from tests.support.sharedlibs import build_so

# A stanza as dpkg writes it for NVIDIA's TensorRT packages (the version string of the ORT v1.24.1
# Dockerfile, microsoft/onnxruntime#27843).
DPKG_STATUS = """Package: libc6
Status: install ok installed
Version: 2.36-9

Package: libnvinfer10
Status: install ok installed
Priority: optional
Architecture: amd64
Version: 10.14.1.48-1+cuda12.9
Description: TensorRT runtime libraries

Package: libnvonnxparsers10
Status: install ok installed
Version: 10.14.1.48-1+cuda12.9

Package: libnvinfer8
Status: deinstall ok config-files
Version: 8.6.1.6-1+cuda12.0
"""


@pytest.fixture(scope="module")
def trt10(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_tensorrt(tmp_path_factory.mktemp("trt10"), "10.16.1.11")


@pytest.fixture(scope="module")
def trt11(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_tensorrt(tmp_path_factory.mktemp("trt11"), "11.4.0.106")


def test_pip_tensorrt_libs_with_its_version_and_cuda_major(tmp_path: Path, trt10: dict[str, Path]) -> None:
    site = tmp_path / "site"
    libdir = install_tensorrt_pip(site, trt10, "10.16.1.11", 13)
    info = probe_tensorrt([str(site)], os_name="linux")
    (inst,) = info.installs
    assert inst.directory == str(libdir)
    assert (inst.origin, inst.major, inst.version, inst.cuda_major) == ("pip", 10, "10.16.1.11", 13)
    assert inst.distribution == "tensorrt-cu13-libs"
    assert inst.version_source == "tensorrt-cu13-libs 10.16.1.11"
    assert [lib.soname for lib in inst.libraries] == ["libnvinfer.so.10", "libnvinfer_plugin.so.10",
                                                      "libnvonnxparser.so.10"]
    assert inst.builder_resources == ("libnvinfer_builder_resource.so.10.16.1",)
    assert {d.name for d in info.distributions} == {"tensorrt-cu13", "tensorrt-cu13-libs", "tensorrt-cu13-bindings"}


def test_tensorrt_11_is_its_own_major(tmp_path: Path, trt11: dict[str, Path]) -> None:
    site = tmp_path / "site"
    install_tensorrt_pip(site, trt11, "11.4.0.106", 13)
    (inst,) = probe_tensorrt([str(site)], os_name="linux").installs
    assert (inst.major, inst.version) == (11, "11.4.0.106")
    nvinfer = inst.library("nvinfer")
    assert nvinfer is not None
    assert nvinfer.soname == "libnvinfer.so.11"


def test_a_partial_install_lacks_the_parser_and_the_builder_resource(tmp_path: Path, trt10: dict[str, Path]) -> None:
    site = tmp_path / "site"
    install_tensorrt_pip(site, trt10, "10.16.1.11", 13, parser=False, builder_resource=False)
    (inst,) = probe_tensorrt([str(site)], os_name="linux").installs
    assert inst.library("nvonnxparser") is None
    assert inst.builder_resources == ()


def test_tarball_on_ld_library_path_version_from_the_real_file(tmp_path: Path, trt10: dict[str, Path]) -> None:
    lib = install_tensorrt_tarball(tmp_path, trt10, "10.9.0.34")
    system = SystemInfo(ld_library_path=(SearchDir(str(lib), "LD_LIBRARY_PATH"),))
    (inst,) = probe_tensorrt([], system=system, os_name="linux").installs
    assert (inst.origin, inst.version, inst.version_source) == ("LD_LIBRARY_PATH", "10.9.0", "file names")
    nvinfer = inst.library("nvinfer")
    assert nvinfer is not None
    assert nvinfer.realpath.endswith("libnvinfer.so.10.9.0")
    assert inst.cuda_major is None  # a tarball's libnvinfer names no CUDA library here: unknown, not guessed


def test_tarball_cuda_major_from_libnvinfer_dt_needed(tmp_path: Path) -> None:
    cudart = build_so(tmp_path / "cuda", "libcudart.so.12")
    libs = build_tensorrt(tmp_path / "build", "10.9.0.34", cuda_needed=cudart)
    lib = install_tensorrt_tarball(tmp_path / "opt", libs, "10.9.0.34")
    (inst,) = scan_directory(str(lib), "LD_LIBRARY_PATH")
    assert (inst.cuda_major, inst.cuda_source) == (12, "DT_NEEDED libcudart.so.12")


def test_apt_install_in_the_cache_with_dpkg_version_and_cuda(tmp_path: Path, trt10: dict[str, Path]) -> None:
    libdir = tmp_path / "usr" / "lib" / "x86_64-linux-gnu"
    lib = install_tensorrt_tarball(tmp_path / "unpacked", trt10, "10.14.1.48")
    libdir.mkdir(parents=True)
    for f in lib.iterdir():
        target = libdir / f.name
        if f.is_symlink():
            target.symlink_to(f.readlink())
        else:
            target.write_bytes(f.read_bytes())
    (tmp_path / "var" / "lib" / "dpkg").mkdir(parents=True)
    (tmp_path / "var" / "lib" / "dpkg" / "status").write_text(DPKG_STATUS)
    cache: dict[str, tuple[str, ...]] = {"libnvinfer.so.10": (str(libdir / "libnvinfer.so.10"),),
             "libnvonnxparser.so.10": (str(libdir / "libnvonnxparser.so.10"),)}
    (inst,) = probe_tensorrt([], system=SystemInfo(ldconfig=cache), fs_root=str(tmp_path), os_name="linux").installs
    assert (inst.origin, inst.version, inst.cuda_major) == ("ld.so.cache", "10.14.1.48", 12)
    assert inst.cuda_source == "dpkg libnvinfer10 10.14.1.48-1+cuda12.9"


def test_parse_dpkg_keeps_installed_tensorrt_only() -> None:
    assert parse_dpkg_tensorrt(DPKG_STATUS) == {10: ("10.14.1.48", "libnvinfer10", 12, "10.14.1.48-1+cuda12.9")}
    assert parse_dpkg_tensorrt("garbage\n\n\nPackage:\n") == {}


def test_one_directory_reached_twice_is_one_install(tmp_path: Path, trt10: dict[str, Path]) -> None:
    site = tmp_path / "site"
    libdir = install_tensorrt_pip(site, trt10, "10.16.1.11", 13)
    system = SystemInfo(ld_library_path=(SearchDir(str(libdir), "LD_LIBRARY_PATH"),))
    (inst,) = probe_tensorrt([str(site)], system=system, os_name="linux").installs
    assert inst.origin == "pip"


def test_nothing_on_windows_and_nothing_without_tensorrt(tmp_path: Path, trt10: dict[str, Path]) -> None:
    site = tmp_path / "site"
    install_tensorrt_pip(site, trt10, "10.16.1.11", 13)
    assert probe_tensorrt([str(site)], os_name="windows").installs == ()
    assert probe_tensorrt([str(tmp_path / "empty")], os_name="linux").installs == ()


# --------------------------------------------------------------------------------------------------
# Plugin EP packages
# --------------------------------------------------------------------------------------------------
def _facts_of(pkg_libraries: tuple[object, ...]) -> list[dict[str, object]]:
    out = []
    for lib in pkg_libraries:
        assert isinstance(lib, ElfInfo)
        needed = [n for n in lib.needed if not n.startswith(("libc.so", "libm.so", "libdl.so", "libpthread.so",
                                                             "librt.so", "libstdc++", "libgcc_s", "ld-linux"))]
        entry: dict[str, object] = {"soname": lib.soname, "needed": needed}
        if lib.runpath:
            entry["runpath"] = list(lib.runpath)
        if lib.search_path_has_cwd:
            entry["runpath_has_cwd"] = True
        out.append(entry)
    return sorted(out, key=lambda e: str(e["soname"]))


def _committed() -> list[dict[str, object]]:
    libs = plugin_facts()["shared_libraries"]
    assert isinstance(libs, list)
    return sorted(({k: v for k, v in e.items() if k != "file"} for e in libs), key=lambda e: str(e["soname"]))


def test_plugin_stand_in_carries_the_real_wheels_elf_facts(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, tmp_path / "build")
    (pkg,) = probe_plugin_eps([str(site)]).packages
    facts = plugin_facts()
    assert (pkg.name, pkg.version, pkg.import_name) == (facts["name"], facts["version"], facts["import_name"])
    assert list(pkg.ep_names) == facts["ep_names"]
    assert list(pkg.import_effects) == facts["import_effects"]
    assert sorted(pkg.named_in_python) == sorted(facts["named_in_python"])  # type: ignore[call-overload]
    assert pkg.provider_library is not None
    assert pkg.provider_library.endswith(
        "libonnxruntime_providers_nv_tensorrt_rtx.so")
    assert _facts_of(pkg.libraries) == _committed()


@pytest.mark.realwheels
def test_the_real_trt_rtx_plugin_wheel_matches_the_committed_facts() -> None:
    site = plugin_wheels.ensure_trt_rtx_cu13()
    (pkg,) = probe_plugin_eps([str(site)]).packages
    facts = plugin_facts()
    assert list(pkg.import_effects) == facts["import_effects"]
    assert sorted(pkg.named_in_python) == sorted(facts["named_in_python"])  # type: ignore[call-overload]
    assert "libcudart.so.13.4.36" not in pkg.named_in_python  # measured: nothing names the bundled cudart
    assert _facts_of(pkg.libraries) == _committed()


def test_import_effects_read_from_text() -> None:
    text = ('import ctypes, os\nos.environ["LD_LIBRARY_PATH"] = "x"\nctypes.CDLL("a", mode=ctypes.RTLD_GLOBAL)\n'
            "os.symlink('a', 'b')\nimport onnxruntime as _ort\n")
    assert import_effects(text) == ("sets LD_LIBRARY_PATH (child processes inherit it)",
                                    "dlopens libraries with RTLD_GLOBAL", "creates symlinks in its own directory",
                                    "imports onnxruntime")
    assert import_effects("x = 'LD_LIBRARY_PATH'\n") == ()


def _pybind_with(tmp_path: Path, build_info: str) -> ElfInfo:
    path = build_so(tmp_path, "onnxruntime_pybind11_state.so",
                    source=f'const char ort_build_info[] = "{build_info}";\n'
                           "const char *get_build_info(void) { return ort_build_info; }\n")
    return ElfInfo(str(path), "x86_64", 64)


def test_a_cuda_plugin_ep_build_is_told_by_its_build_info(tmp_path: Path) -> None:
    info = "ORT Build Info: git-branch=main, git-commit-id=abc, cuda-plugin-ep=1, build type=Release"
    ort = OrtInfo(installed=True, is_gpu_build=True, pybind=_pybind_with(tmp_path / "a", info))
    plugins = probe_plugin_eps([], ort=ort)
    assert plugins.build_info == info
    assert plugins.cuda_plugin_ep is True
    legacy = "ORT Build Info: git-branch=HEAD, git-commit-id=6af1a932e, build type=Release"
    ort = OrtInfo(installed=True, is_gpu_build=True, pybind=_pybind_with(tmp_path / "b", legacy))
    assert probe_plugin_eps([], ort=ort).cuda_plugin_ep is False


@pytest.mark.realwheels
def test_onnxruntime_gpu_1_31_1_is_not_a_cuda_plugin_build() -> None:
    pybind = next((testenvs.ensure("ort-gpu") / "onnxruntime" / "capi").glob("onnxruntime_pybind11_state*.so"))
    text = find_marked_string(pybind, BUILD_INFO_MARKER)
    assert text == ("ORT Build Info: git-branch=HEAD, git-commit-id=6af1a932e, int4-kv-cache=1, fp8-kv-cache=1, "
                    "fp4-qmoe=1, build type=Release")  # scripts/data/SOURCES.md, read from the same wheel


@pytest.mark.parametrize("content", [b"", b"\x7fELF", b"\x7fELF" + b"\x02\x01\x01" + b"\0" * 100, b"not elf" * 100,
                                     b"\x7fELF\x02\x01\x01" + b"\xff" * 200])
def test_find_marked_string_never_raises(tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "x.so"
    f.write_bytes(content)
    assert find_marked_string(f, BUILD_INFO_MARKER) is None


def test_committed_facts_name_their_source() -> None:
    data = json.loads(Path(plugin_wheels.__file__).resolve().parents[1].joinpath(
        "data", "plugin_eps", "nv_tensorrt_rtx_cu13_0_5_0.json").read_text())
    assert data["sha256"] == "32f575c633d171b4edf4b53d3bb22b72a6c9c0a850d2982ce9a788a5d40d3298"  # package_table.yaml
    assert data["source"].startswith("pip download")


def _marked_string_reference(data: bytes, offset: int, length: int, marker: bytes) -> str | None:
    """The first marked string of the section read whole: up to its NUL, at most _MAX_STRING bytes, not past
    the section."""
    section = data[offset:offset + length]
    at = section.find(marker)
    if at < 0:
        return None
    text = section[at:at + elf_rodata._MAX_STRING]
    stop = text.find(b"\0")
    return text[:stop if stop >= 0 else len(text)].decode("utf-8", "replace")


@pytest.mark.parametrize("seed", range(40))
def test_scan_finds_what_reading_the_whole_section_finds(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """The section is read in chunks into one buffer: a marker or a string cut by a chunk's end, a string
    cut by the section's end and a marker in the last bytes give what reading it whole gives."""
    monkeypatch.setattr(elf_rodata, "_CHUNK", 64)  # boundaries every few dozen bytes
    rng = random.Random(seed)
    marker = BUILD_INFO_MARKER
    for _ in range(50):
        size = rng.randrange(0, 400)
        data = bytearray(rng.choice(b"OR \0x") for _ in range(size))
        for _ in range(rng.randrange(0, 3)):
            at = rng.randrange(0, size + 1)
            piece = marker[:rng.randrange(len(marker) - 3, len(marker) + 1)] + b"git-branch=main" + \
                (b"\0" if rng.random() < 0.7 else b"")
            data[at:at + len(piece)] = piece
        offset = rng.randrange(0, len(data) + 1)
        length = rng.randrange(0, len(data) - offset + 1)
        got = elf_rodata._scan(io.BytesIO(bytes(data)), offset, length, marker)
        assert got == _marked_string_reference(bytes(data), offset, length, marker)
