"""preload() and `ortdoctor preload`: real loading in child processes that read their own maps.

gcc-built libraries with the CUDA sonames stand in for the wheels where the case needs a shape the
real wheels cannot have (a planted library in the current directory, a missing file); the real
NVIDIA CUDA 13 wheels and onnxruntime-gpu 1.31.1 are used for the end-to-end cases.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sharedlibs import build_so
from tests.test_preload_helpers import (
    MAPS_SNIPPET,
    ROOT,
    add_fake_ort,
    build_fake_site,
    child_json,
    run_child,
)

CUDA_NAMES = {"cudart", "cublas", "cublasLt", "curand", "cufft", "nvrtc", "cudnn"}
PRELOAD_AND_MAPS = MAPS_SNIPPET + """
import ortdoctor
r = ortdoctor.preload(directory={directory!r})
print(json.dumps({{"result": r.to_json(), "mapped": _mapped()}}))
"""


def _planted(cwd: Path) -> Path:
    return build_so(cwd, "libcudart.so.13", source="int planted_in_cwd(void) { return 666; }\n")


def test_fake_site_loads_every_library_and_never_the_planted_one(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    cwd = tmp_path / "cwd"
    planted = _planted(cwd)
    proc = run_child(PRELOAD_AND_MAPS.format(directory=""), pythonpath=[site], cwd=cwd,
                     env={"LD_LIBRARY_PATH": "::"})  # empty entries = the current directory
    got = child_json(proc)
    loaded = {x["name"]: x for x in got["result"]["loaded"]}
    assert set(loaded) == CUDA_NAMES
    assert loaded["cudart"]["path"] == str(site / "nvidia/cu13/lib/libcudart.so.13")
    assert loaded["cudart"]["version"] == "13.0.96"  # the wheel's version; the function said 13.0
    assert loaded["cudart"]["function_version"] == "13.0"
    assert loaded["cudnn"]["version"] == "9.19.0.56"
    assert all(x["mapped"] == x["path"] for x in loaded.values())
    assert str(planted) not in got["mapped"]
    assert {x["path"] for x in loaded.values()} <= set(got["mapped"])
    assert not got["result"]["failed"]
    ids = [f["id"] for f in got["result"]["findings"]]
    assert "ld-library-path-unsafe-entry" in ids


def test_missing_cudart_fails_and_the_planted_copy_is_still_not_mapped(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site", cuda_libs=("libcublasLt.so.13", "libcublas.so.13",
                                                          "libcurand.so.10"))
    cwd = tmp_path / "cwd"
    planted = _planted(cwd)
    proc = run_child(PRELOAD_AND_MAPS.format(directory=None), pythonpath=[site], cwd=cwd,
                     env={"LD_LIBRARY_PATH": ":.:lib"})
    got = child_json(proc)
    failed = {x["name"]: x for x in got["result"]["failed"]}
    loaded = {x["name"]: x for x in got["result"]["loaded"]}
    assert {"nvrtc", "cufft"} <= set(failed)
    assert failed["nvrtc"]["searched"]
    assert str(cwd) not in failed["nvrtc"]["searched"]
    # cudart: not in the site; a system CUDA toolkit may have it, the planted copy is never taken
    assert "cudart" in failed or loaded["cudart"]["source"] == "system"
    assert str(planted) not in got["mapped"]
    ids = {f["id"] for f in got["result"]["findings"]}
    assert "cuda-lib-missing" in ids


def test_strict_raises_with_the_result(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site", cuda_libs=("libcurand.so.10",), cudnn=False)
    code = """
import ortdoctor
from ortdoctor.preloading.preloader import PreloadError
try:
    ortdoctor.preload(strict=True)
except PreloadError as exc:
    print(sorted(f.name for f in exc.result.failed))
"""
    proc = run_child(code, pythonpath=[site])
    assert proc.returncode == 0, proc.stderr
    # (cudart may come from a system CUDA toolkit on the test machine)
    assert set(eval(proc.stdout.strip())) >= {"cublas", "cublasLt", "cudnn", "cufft", "nvrtc"}


def test_already_loaded_library_is_skipped_and_reported(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    other = build_so(tmp_path / "elsewhere", "libcudnn.so.9", source="#include <stddef.h>\n"
                     "size_t cudnnGetVersion(void) { return 91400; }\n")
    code = f"""
import ctypes, json, ortdoctor
ctypes.CDLL({str(other)!r})
r = ortdoctor.preload(directory="")
print(json.dumps(r.to_json()))
"""
    got = child_json(run_child(code, pythonpath=[site]))
    cudnn = next(x for x in got["loaded"] if x["name"] == "cudnn")
    assert cudnn["source"] == "loaded"
    assert cudnn["already_loaded_from"] == str(other)
    assert cudnn["version"] == "9.14.0"


def test_dry_run_loads_nothing(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    code = MAPS_SNIPPET + """
import ortdoctor
r = ortdoctor.preload(directory="", dry_run=True)
print(json.dumps({"result": r.to_json(), "mapped": _mapped()}))
"""
    got = child_json(run_child(code, pythonpath=[site]))
    assert got["result"]["dry_run"] is True
    assert {x["name"] for x in got["result"]["loaded"]} == CUDA_NAMES
    assert not any("nvidia/cu13" in p for p in got["mapped"])


def test_cpu_build_and_missing_ort(tmp_path: Path) -> None:
    cpu = tmp_path / "cpu"
    add_fake_ort(cpu)
    (cpu / "onnxruntime/capi/libonnxruntime_providers_cuda.so").unlink()
    (cpu / "onnxruntime/capi/build_and_package_info.py").write_text("package_name = 'onnxruntime'\n")
    got = child_json(run_child("import json, ortdoctor; print(json.dumps(ortdoctor.preload().to_json()))",
                               pythonpath=[cpu]))
    assert [f["id"] for f in got["findings"]] == ["ort-cpu-only"]
    got = child_json(run_child("import json, ortdoctor; print(json.dumps(ortdoctor.preload().to_json()))",
                               pythonpath=[]))
    assert [f["id"] for f in got["findings"]] == ["ort-not-installed"]


# ---------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------
def _cli(args: list[str], *, pythonpath: list[Path | str], cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = f"import sys; from ortdoctor.cli.main import main; sys.argv = ['ortdoctor', *{args!r}]; main()"
    return run_child(code, pythonpath=pythonpath, cwd=cwd, env=env)


def test_cli_nonexistent_directory_is_a_usage_error(tmp_path: Path) -> None:
    proc = _cli(["preload", "--directory", str(tmp_path / "nope")], pythonpath=[])
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_text_json_print_env_and_exit_codes(tmp_path: Path) -> None:
    site = build_fake_site(tmp_path / "site")
    proc = _cli(["preload", "--directory", "", "--print-env"], pythonpath=[site])
    assert proc.returncode == 0, proc.stderr
    assert "libcudart.so.13" in proc.stdout
    assert "Loaded (each mapped into this process, checked in /proc/self/maps):" in proc.stdout
    assert "mapped:" not in proc.stdout  # the proof is the path shown; -v prints each mapping
    assert "not Windows" not in proc.stdout
    verbose = _cli(["preload", "--directory", "", "-v"], pythonpath=[site])
    assert "mapped:" in verbose.stdout
    lib = site / "nvidia/cu13/lib"
    assert f"export LD_LIBRARY_PATH={lib}:{site / 'nvidia/cudnn/lib'}" in proc.stdout
    proc = _cli(["preload", "--json", "--no-cudnn"], pythonpath=[site])
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1
    assert data["directory"] is None
    assert data["dry_run"] is False
    assert {"name": "cudnn", "reason": "--no-cudnn"} in data["skipped"]
    broken = build_fake_site(tmp_path / "broken", cuda_libs=("libcurand.so.10",), cudnn=False)
    proc = _cli(["preload", "--json"], pythonpath=[broken])
    assert proc.returncode == 1
    assert {x["name"] for x in json.loads(proc.stdout)["failed"]} >= {"cublasLt", "cublas"}


# ---------------------------------------------------------------------------------------------------
# The real NVIDIA CUDA 13 wheels and onnxruntime-gpu 1.31.1 (installed with --target, apart)
# ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_envs() -> tuple[Path, Path]:
    from tests.support.testenvs import ensure

    return ensure("nvidia-cu13"), ensure("ort-gpu")


@pytest.mark.realwheels
def test_real_wheels_cli_json_lists_the_set_with_versions(real_envs: tuple[Path, Path], tmp_path: Path) -> None:
    nvidia, ort = real_envs
    planted = _planted(tmp_path)
    # onnxruntime-gpu lives in its own --target dir, the NVIDIA wheels in another: still found
    proc = _cli(["preload", "--directory", "", "--json"], pythonpath=[ort, nvidia], cwd=tmp_path,
                env={"LD_LIBRARY_PATH": ":"})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(proc.stdout)
    loaded = {x["name"]: x for x in data["loaded"]}
    assert CUDA_NAMES <= set(loaded)
    # anything more is a cuDNN sub-library that libcudnn.so.9 mapped itself while loading
    assert all(loaded[n]["loaded_by"] == "libcudnn.so.9" for n in set(loaded) - CUDA_NAMES)
    for x in loaded.values():
        assert x["source"] == "nvidia-wheel"
        assert x["path"].startswith(str(nvidia / "nvidia") + "/")
        assert x["mapped"] == x["path"]
        assert x["version"]
    assert loaded["cudart"]["version"] == "13.0.96"
    assert loaded["cudart"]["function_version"] == "13.0"
    assert loaded["cublas"]["function_version"] == "13.1.0"
    assert loaded["cublasLt"]["function_version"] == "13.1.0"
    assert loaded["curand"]["function_version"] == "10.4.0"
    assert loaded["cufft"]["function_version"] == "12.0.0"
    assert loaded["nvrtc"]["function_version"] == "13.0"
    assert loaded["cudnn"]["function_version"] == "9.19.0"
    assert data["failed"] == []
    assert str(planted) not in proc.stdout


@pytest.mark.realwheels
def test_real_wheels_hook_maps_exactly_the_listed_files(real_envs: tuple[Path, Path], tmp_path: Path) -> None:
    nvidia, ort = real_envs
    planted = _planted(tmp_path)
    listing = _cli(["preload", "--directory", "", "--json"], pythonpath=[ort, nvidia])
    expected = sorted(x["path"] for x in json.loads(listing.stdout)["loaded"])
    code = MAPS_SNIPPET + """
import sys, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    import ortdoctor.hook
cuda = sorted(p for p in _mapped() if os.path.basename(p).startswith(('libcu', 'libnvrtc', 'libnvJitLink')))
print(json.dumps({"cuda": cuda, "all": _mapped(),
                  "warnings": [(w.category.__name__, str(w.message)) for w in caught],
                  "modules": sorted(m for m in sys.modules if m.split('.')[0] in ('onnxruntime', 'torch', 'click',
                                                                                   'yaml'))}))
"""
    got = child_json(run_child(code, pythonpath=[ort, nvidia], cwd=tmp_path,
                               env={"ORTDOCTOR_DIRECTORY": "", "LD_LIBRARY_PATH": "::"}))
    assert got["cuda"] == expected
    assert str(planted) not in got["all"]
    assert got["modules"] == []
    # one warning, for the empty LD_LIBRARY_PATH entries, with its id and fix
    assert len(got["warnings"]) == 1
    category, message = got["warnings"][0]
    assert category == "OrtdoctorWarning"
    assert message.startswith("ortdoctor [ld-library-path-unsafe-entry]")
    assert "Fix:" in message


@pytest.mark.realwheels
def test_real_wheels_ort_session_deps_resolve_to_the_preloaded_files(real_envs: tuple[Path, Path], tmp_path: Path) -> None:
    """After preload, dlopen of the real CUDA provider (NEEDs cublasLt, cublas, curand, cudart by soname)
    finds them without any search path; only libcuda.so.1 (the driver, absent here) is missing."""
    nvidia, ort = real_envs
    provider = ort / "onnxruntime/capi/libonnxruntime_providers_cuda.so"
    code = f"""
import ctypes, ortdoctor
r = ortdoctor.preload(directory="")
try:
    ctypes.CDLL({str(provider)!r})
    print("loaded")
except OSError as exc:
    print(exc)
"""
    proc = run_child(code, pythonpath=[ort, nvidia], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    assert out == "loaded" or ("libcuda.so.1" in out and "libcudart" not in out and "libcublas" not in out)


def test_python_api_matches_preload_dlls_signature() -> None:
    import inspect

    from ortdoctor.preloading.preloader import preload

    params = list(inspect.signature(preload).parameters)
    assert params[:5] == ["directory", "cuda", "cudnn", "msvc", "strict"]
    assert sys.modules.get("onnxruntime") is None
    assert os.path.isdir(ROOT / "ortdoctor")
