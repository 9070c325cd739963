"""probe_python, the maps reader, and collect_environment (inspect without importing; scale)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ortdoctor.formats.distinfo import DistIndex
from ortdoctor.formats.procmaps import mapped_objects, mapped_paths
from ortdoctor.probes.environment import collect_environment
from ortdoctor.probes.nvidia_wheels import probe_nvidia_wheels
from ortdoctor.probes.ort import probe_ort
from ortdoctor.probes.platform import find_site_dirs, probe_python
from ortdoctor.probes.torch import probe_torch
from tests.support import testenvs
from tests.support.fake_site import add_plain_dists, install_dist

ROOT = Path(__file__).resolve().parents[1]


def test_site_dirs_are_path_entries_holding_dist_info(tmp_path: Path) -> None:
    a, b, empty = tmp_path / "a", tmp_path / "b", tmp_path / "empty"
    install_dist(a, "x", "1", {})
    install_dist(b, "y", "1", {})
    empty.mkdir()
    path = ["", str(a), str(empty), str(tmp_path / "missing"), str(tmp_path / "a.zip"), str(b), str(a)]
    assert find_site_dirs(path) == (str(a), str(b))


def test_probe_python_with_a_fake_root(tmp_path: Path) -> None:
    (tmp_path / ".dockerenv").write_text("")
    (tmp_path / "proc/1").mkdir(parents=True)
    (tmp_path / "proc/1/cgroup").write_text("0::/kubepods/besteffort/pod1/abc\n")
    (tmp_path / "proc/version").write_text("Linux version 5.15.153.1-microsoft-standard-WSL2\n")
    info = probe_python(sys_path=[], environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "CONDA_PREFIX": "/opt/conda"},
                        fs_root=str(tmp_path))
    if info.os == "linux":
        assert info.container == ("/.dockerenv", "cgroup:kubepods", "KUBERNETES_SERVICE_HOST")
        assert info.wsl is True
        assert info.libc is not None
    assert info.conda_prefix == "/opt/conda"
    assert info.site_dirs == ()
    assert info.version == ".".join(map(str, sys.version_info[:3]))
    assert info.venv == (sys.prefix if sys.prefix != sys.base_prefix else None)


def test_wsl_from_environment_and_clean_root(tmp_path: Path) -> None:
    info = probe_python(sys_path=[], environ={"WSL_DISTRO_NAME": "Ubuntu"}, fs_root=str(tmp_path))
    assert info.wsl is (info.os == "linux")
    assert probe_python(sys_path=[], environ={}, fs_root=str(tmp_path)).container == ()


def test_start_method_does_not_import_multiprocessing() -> None:
    code = ("import sys, json; from ortdoctor.probes.platform import probe_python; i = probe_python(); "
            "print(json.dumps([i.multiprocessing_start_method, 'multiprocessing' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    method, imported = json.loads(out.stdout)
    assert method in ("fork", "spawn", "forkserver")
    assert imported is False


def test_maps_of_this_process() -> None:
    paths = mapped_paths()
    if not os.path.exists("/proc/self/maps"):
        assert paths == ()
        return
    assert any(os.path.basename(p).startswith("libc.so") or "libc-" in p for p in paths)
    assert all(os.path.isabs(p) for p in paths)
    assert len(paths) == len(set(paths))


def test_maps_file_parsing(tmp_path: Path) -> None:
    lib = tmp_path / "libreal.so.1"
    lib.write_text("")
    link = tmp_path / "libreal.so"
    link.symlink_to(lib)
    maps = tmp_path / "maps"
    maps.write_text(
        f"7f00-7f01 r--p 00000000 fd:01 111 {link}\n"
        f"7f01-7f02 r-xp 00001000 fd:01 111 {link}\n"
        "7f02-7f03 r--p 00000000 fd:01 222 /opt/with space/libsp.so.2\n"
        "7f03-7f04 r--p 00000000 fd:01 333 /usr/lib/libold.so.9 (deleted)\n"
        "7f04-7f05 rw-p 00000000 00:00 0 [heap]\n"
        "7f05-7f06 r--p 00000000 fd:01 444 /usr/share/locale/locale-archive\n"
        "7f06-7f07 r--p 00000000 00:00 0 \n"
        "garbage\n"
    )
    objs = mapped_objects(str(maps))
    assert [(o.path, o.inode, o.deleted) for o in objs] == [
        (str(lib), 111, False), ("/opt/with space/libsp.so.2", 222, False), ("/usr/lib/libold.so.9", 333, True)]
    assert mapped_paths(str(tmp_path / "absent")) == ()


def test_scan_parses_only_the_distributions_it_needs(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_dist(site, "onnxruntime-gpu", "1.31.1", {"onnxruntime/__init__.py": b""})
    install_dist(site, "nvidia-cuda-runtime", "13.0.96", {"nvidia/cu13/lib/libcudart.so.13": b"x"})
    add_plain_dists(site, 1000)
    index = DistIndex([str(site)])
    assert len(index.refs) == 1002
    probe_ort(index=index)
    probe_torch(index=index)
    probe_nvidia_wheels(index=index)
    assert sorted(Path(p).name for p in index._parsed) == ["nvidia_cuda_runtime-13.0.96.dist-info",
                                                           "onnxruntime_gpu-1.31.1.dist-info"]


def test_collect_environment_on_a_fake_tree(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_dist(site, "onnxruntime", "1.31.1", {"onnxruntime/__init__.py": b"raise SystemExit(1)\n"})
    env = collect_environment(sys_path=[str(site)], environ={"LD_LIBRARY_PATH": "::"}, fs_root=str(tmp_path),
                              query_driver=False)
    assert env.python.site_dirs == (str(site),)
    assert env.ort.active == "onnxruntime"
    assert env.torch is None
    assert env.nvidia_wheels == ()
    assert [e.note for e in env.system.ld_library_path] == ["empty entry = current directory"] * 3
    assert "does not exist" in env.system.problems[0]  # no <fs_root>/etc/ld.so.cache
    assert env.driver.error == "not queried"


_NO_IMPORT = """
import json, sys
from ortdoctor.probes.environment import collect_environment
from ortdoctor.core.facts import to_jsonable
env = collect_environment()
maps = open('/proc/self/maps').read()
print(json.dumps({
    "onnxruntime_imported": "onnxruntime" in sys.modules,
    "torch_imported": "torch" in sys.modules,
    "ort_mapped": "onnxruntime" in maps or "libcudart" in maps,
    "env": to_jsonable(env),
}))
"""


@pytest.mark.realwheels
def test_collect_environment_never_imports_or_loads_onnxruntime() -> None:
    sites = [str(testenvs.ensure("ort-gpu")), str(testenvs.ensure("nvidia-cu13"))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*sites, str(ROOT)]))
    proc = subprocess.run([sys.executable, "-c", _NO_IMPORT], capture_output=True, text=True, env=env,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["onnxruntime_imported"] is False
    assert got["torch_imported"] is False
    assert got["ort_mapped"] is False
    ort = got["env"]["ort"]
    assert (ort["active"], ort["cuda_version"], ort["is_gpu_build"]) == ("onnxruntime-gpu", "13.0", True)
    assert "libcudart.so.13" in ort["cuda_provider"]["needed"]
    assert ort["package_dir"] == os.path.join(sites[0], "onnxruntime")
    wheels = {w["name"]: w for w in got["env"]["nvidia_wheels"]}
    assert wheels["nvidia-cuda-runtime"]["lib_dirs"] == [os.path.join(sites[1], "nvidia", "cu13", "lib")]
    assert wheels["nvidia-cudnn-cu13"]["lib_dirs"] == [os.path.join(sites[1], "nvidia", "cudnn", "lib")]
    assert wheels["nvidia-cuda-runtime"]["cuda_major"] == 13
