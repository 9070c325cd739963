"""scripts/read_wheel.py on a wheel built here from real gcc-compiled shared objects."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

from tests.support.sharedlibs import build_so

REPO = Path(__file__).resolve().parent.parent

METADATA = """\
Metadata-Version: 2.1
Name: onnxruntime-gpu
Version: 1.99.0
Requires-Dist: flatbuffers
Requires-Dist: numpy>=1.21.6
Requires-Dist: nvidia-cuda-runtime~=13.0; extra == "cuda"
Requires-Dist: nvidia-cudnn-cu13~=9.0; extra == "cudnn"
"""


def _wheel(tmp_path: Path) -> Path:
    libs = tmp_path / "libs"
    cudart = build_so(libs, "libcudart.so.13")
    cublas = build_so(libs, "libcublas.so.13")
    cudnn_graph = build_so(libs, "libcudnn_graph.so.9")
    provider = build_so(libs, "libonnxruntime_providers_cuda.so", needed=(cublas, cudart, cudnn_graph))
    pybind = build_so(libs, "onnxruntime_pybind11_state.so", needed=(cudart,),
                      filename="onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so")
    wheel = tmp_path / "onnxruntime_gpu-1.99.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("onnxruntime/capi/build_and_package_info.py",
                    "package_name = 'onnxruntime-gpu'\n__version__ = '1.99.0'\ncuda_version = '13.0'\n")
        zf.writestr("onnxruntime_gpu-1.99.0.dist-info/METADATA", METADATA)
        zf.write(provider, "onnxruntime/capi/libonnxruntime_providers_cuda.so")
        zf.write(pybind, f"onnxruntime/capi/{pybind.name}")
    return wheel


def test_read_wheel_prints_the_matrix_facts(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "read_wheel.py"), str(wheel)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    facts = yaml.safe_load(proc.stdout)
    assert facts["wheel"] == wheel.name
    assert facts["python_tag"] == "cp311"
    assert facts["build_info"]["cuda_version"] == "13.0"
    assert facts["requires_plain"] == ["flatbuffers", "numpy>=1.21.6"]
    assert facts["extras"] == {"cuda": ["nvidia-cuda-runtime~=13.0"], "cudnn": ["nvidia-cudnn-cu13~=9.0"]}
    assert facts["provider_needed_cuda"] == ["libcublas.so.13", "libcudart.so.13", "libcudnn_graph.so.9"]
    assert facts["pybind_needed_cuda"] == ["libcudart.so.13"]
    assert facts["tensorrt_needed_cuda"] is None
    # nothing extracted is left behind next to the wheel
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["libs", wheel.name])
