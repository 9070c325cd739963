"""The preload loads every library the installed CUDA provider lists in DT_NEEDED, cuDNN sub-libraries
included: onnxruntime-gpu 1.20.x's provider links libcudnn_adv.so.9 and the other cuDNN 9 sub-libraries,
which libcudnn otherwise maps only on first use, so a preload that left them to cuDNN left a provider
that cannot load.

The real onnxruntime-gpu 1.20.2 wheel (tests/support/testenvs.py) beside gcc-built stand-ins with the
CUDA 12 / cuDNN 9 sonames, laid out as the -cu12 NVIDIA wheels lay them out.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
from pathlib import Path

import pytest

from tests.support.sharedlibs import build_so
from tests.test_preload_helpers import MAPS_SNIPPET, run_child

# the -cu12 wheels' directories (compat_matrix.yaml)
CUDA12_DIRS = {
    "libcublasLt.so.12": "nvidia/cublas/lib",
    "libcublas.so.12": "nvidia/cublas/lib",
    "libcudart.so.12": "nvidia/cuda_runtime/lib",
    "libcurand.so.10": "nvidia/curand/lib",
    "libcufft.so.11": "nvidia/cufft/lib",
    "libnvrtc.so.12": "nvidia/cuda_nvrtc/lib",
    "libcudnn.so.9": "nvidia/cudnn/lib",
}
# cuDNN 9.19's sub-libraries (no engines_tensor_ir, no ext: those came with 9.21 and 9.22)
CUDNN9_SUBS = ("libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9", "libcudnn_engines_runtime_compiled.so.9",
               "libcudnn_heuristic.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9")


@pytest.fixture(scope="module")
def ort120() -> Path:
    from tests.support.testenvs import ensure

    return ensure("ort-gpu-1.20")


def _provider(ort: Path) -> Path:
    return ort / "onnxruntime/capi/libonnxruntime_providers_cuda.so"


WHEELS = ("nvidia_cublas_cu12-12.9.3.13", "nvidia_cuda_runtime_cu12-12.9.79", "nvidia_curand_cu12-10.3.10.19",
          "nvidia_cufft_cu12-11.4.1.4", "nvidia_cuda_nvrtc_cu12-12.9.86", "nvidia_cudnn_cu12-9.19.0.56")


def _stand_ins(site: Path, *, leave_out: tuple[str, ...] = (), libcuda: Path | None = None) -> Path:
    """The stand-ins; with ``libcuda``, libcudnn_engines_runtime_compiled.so.9 NEEDS libcuda.so.1, as the
    real one does (the driver's library: this machine has none)."""
    for soname, rel in CUDA12_DIRS.items():
        build_so(site / rel, soname)
    for wheel in WHEELS:  # the dist-infos say which site directory holds NVIDIA wheels
        (site / f"{wheel}.dist-info").mkdir(parents=True, exist_ok=True)
    for soname in CUDNN9_SUBS:
        if soname not in leave_out:
            needs = (libcuda,) if libcuda is not None and soname == "libcudnn_engines_runtime_compiled.so.9" else ()
            build_so(site / "nvidia/cudnn/lib", soname, needed=needs)
    return site


def _cli(args: list[str], *, pythonpath: list[Path | str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = f"import sys; from ortdoctor.cli.main import main; sys.argv = ['ortdoctor', *{args!r}]; main()"
    return run_child(code, pythonpath=pythonpath, cwd=cwd)


@pytest.mark.realwheels
def test_every_cuda_library_the_1_20_provider_needs_is_preloaded(ort120: Path, tmp_path: Path) -> None:
    from ortdoctor.formats.elf import read_elf

    site = _stand_ins(tmp_path / "site")
    needed = [n for n in read_elf(str(_provider(ort120))).needed if n.startswith(("libcu", "libnvrtc"))]
    assert "libcudnn_adv.so.9" in needed  # the reason for this test: the real wheel links the sub-libraries
    code = MAPS_SNIPPET + f"""
import ctypes, ortdoctor
r = ortdoctor.preload()
try:
    ctypes.CDLL({str(_provider(ort120))!r})
    provider = "loaded"
except OSError as exc:
    provider = str(exc)
print(json.dumps({{"result": r.to_json(), "mapped": _mapped(), "provider": provider}}))
"""
    proc = run_child(code, pythonpath=[ort120, site], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    loaded = {x["soname"]: x for x in got["result"]["loaded"]}
    assert set(needed) <= set(loaded), sorted(set(needed) - set(loaded))
    for soname in needed:
        assert loaded[soname]["mapped"] == str(site / CUDA12_DIRS.get(soname, "nvidia/cudnn/lib") / soname)
        assert loaded[soname]["required"] is True
    assert got["result"]["failed"] == []
    # every file the provider NEEDS is in the process: dlopen gets past finding them and stops only at
    # the stand-ins' missing symbols (before the change: "libcudnn_adv.so.9: cannot open shared object file")
    assert "cannot open shared object file" not in got["provider"], got["provider"]


@pytest.mark.realwheels
def test_a_missing_required_sub_library_fails_the_preload_and_the_hook_warns(ort120: Path, tmp_path: Path) -> None:
    site = _stand_ins(tmp_path / "site", leave_out=("libcudnn_adv.so.9",))
    proc = _cli(["preload", "--json"], pythonpath=[ort120, site], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    failed = {x["soname"]: x for x in data["failed"]}
    assert set(failed) == {"libcudnn_adv.so.9"}
    assert failed["libcudnn_adv.so.9"]["required"] is True
    assert "cuda-lib-missing" in {f["id"] for f in data["findings"] if f["severity"] == "error"}
    hook = run_child("""
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    import ortdoctor.hook
print([str(w.message) for w in caught])
""", pythonpath=[ort120, site], cwd=tmp_path)
    assert hook.returncode == 0, hook.stderr
    assert "libcudnn_adv.so.9" in hook.stdout


@pytest.mark.realwheels
def test_a_required_library_that_needs_the_absent_driver_is_the_drivers_finding(ort120: Path, tmp_path: Path) -> None:
    """cuDNN 9's runtime-compiled engines link libcuda.so.1: without a driver the 1.20 provider cannot
    load. The preload fails, and says it is the driver, not a damaged file to reinstall."""
    libcuda = build_so(tmp_path / "driver", "libcuda.so.1")
    site = _stand_ins(tmp_path / "site", libcuda=libcuda)
    libcuda.unlink()  # linked against it, then the machine has none
    proc = _cli(["preload", "--json"], pythonpath=[ort120, site], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert [x["soname"] for x in data["failed"]] == ["libcudnn_engines_runtime_compiled.so.9"]
    ids = [f["id"] for f in data["findings"]]
    assert "driver-missing" in ids
    assert "lib-load-failed" not in ids  # no reinstall of a whole file
    driver = next(f for f in data["findings"] if f["id"] == "driver-missing")
    assert "libcuda.so.1" in driver["detail"]
    assert driver["steps"] == []


@pytest.mark.realwheels
def test_check_calls_a_missing_required_sub_library_an_error(ort120: Path, tmp_path: Path) -> None:
    site = _stand_ins(tmp_path / "site", leave_out=("libcudnn_adv.so.9",))
    proc = _cli(["check", "--json", "--no-smoke"], pythonpath=[ort120, site], cwd=tmp_path)
    data = json.loads(proc.stdout)
    # the 1.20.2 wheel has no build info: its CUDA version is the one the matrix read from that wheel
    assert data["ort"]["cuda_version"] == "12.2"
    errors = [f for f in data["findings"] if f["severity"] == "error"]
    missing = next(f for f in errors if f["id"] == "cuda-lib-missing")
    assert "libcudnn_adv.so.9" in missing["detail"]
    # nvidia-cudnn-cu12 is installed: `pip install "nvidia-cudnn-cu12==9.*"` would change nothing, so
    # the finding says what blocks the file instead, and reinstalls the wheel that lacks it
    assert "nvidia-cudnn-cu12 9.19.0.56 already installed, yet libcudnn_adv.so.9 is not in" in missing["detail"]
    assert "==9.*" not in missing["fix"]
    assert missing["steps"] == [{"verb": "install",
                                 "args": ["--force-reinstall", "--no-deps", "nvidia-cudnn-cu12==9.19.0.56"]}]


def test_the_stand_ins_load(tmp_path: Path) -> None:
    """The stand-ins themselves are loadable libraries (what the tests above rely on)."""
    lib = build_so(tmp_path, "libcudnn_adv.so.9")
    ctypes.CDLL(str(lib))
