"""The ctypes NVML binding answers as pynvml does, function by function, on the compiled fake library.

Each binding runs the same script of calls in its own child interpreter (NVML's state is per process),
against the fake libnvidia-ml.so.1 (tests/support/fake_nvml.c) in one of its modes; the two transcripts
must be equal: values, return types, error codes and error texts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ortdoctor.core.facts import DriverError
from tests.support import fake_nvml

H200 = "dev=NVIDIA H200,9.0,143771,140000,GPU-uuid-0"
A10 = "dev=NVIDIA A10,8.6,24000,1000,GPU-1,3"

# One transcript: every function the binding has, before init, after it, on each device and one past the
# last, then shutdown twice. A value is recorded with its type's name, an error as its code and text.
_TRANSCRIPT = r"""
import ctypes, json, os, sys

if sys.argv[1] == "pynvml":
    import pynvml as nvml
else:
    from ortdoctor.probes.nvml import bind
    nvml = bind(ctypes.CDLL(os.path.join(sys.argv[2], "libnvidia-ml.so.1")))

out = []

def record(label, fn, *args):
    try:
        value = fn(*args)
    except Exception as exc:
        out.append([label, "error", type(exc).__name__ if not hasattr(exc, "value") else "NVMLError",
                    getattr(exc, "value", None), str(exc)])
        return None
    shown = value
    if hasattr(value, "total"):
        shown = [value.total, value.free, value.used]
    elif not isinstance(value, (str, int, tuple, type(None))):
        shown = "handle"
    out.append([label, type(value).__name__ if shown != "handle" else "handle", shown])
    return value

record("early nvmlSystemGetDriverVersion", nvml.nvmlSystemGetDriverVersion)
record("early nvmlDeviceGetCount", nvml.nvmlDeviceGetCount)
record("nvmlInit", nvml.nvmlInit)
for code in (0, 1, 2, 3, 9, 13, 15, 18, 999, 12345):  # after nvmlInit: before it pynvml has no library
    record(f"nvmlErrorString({code})", nvml.nvmlErrorString, code)
record("nvmlSystemGetDriverVersion", nvml.nvmlSystemGetDriverVersion)
record("nvmlSystemGetCudaDriverVersion", nvml.nvmlSystemGetCudaDriverVersion)
record("nvmlSystemGetCudaDriverVersion_v2", nvml.nvmlSystemGetCudaDriverVersion_v2)
count = record("nvmlDeviceGetCount", nvml.nvmlDeviceGetCount)
for i in range((count or 0) + 1):
    h = record(f"nvmlDeviceGetHandleByIndex({i})", nvml.nvmlDeviceGetHandleByIndex, i)
    if h is None:
        continue
    for name in ("nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetCudaComputeCapability",
                 "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeMode"):
        record(f"{name}({i})", getattr(nvml, name), h)
record("nvmlShutdown", nvml.nvmlShutdown)
record("nvmlShutdown again", nvml.nvmlShutdown)
record("nvmlInitWithFlags(0)", nvml.nvmlInitWithFlags, 0)
record("nvmlShutdown last", nvml.nvmlShutdown)
print(json.dumps(out))
"""

MODES = {
    "healthy": f"init=0;driver=580.159.04;cuda=13000;{H200};{A10}",
    "no-devices": "init=0;driver=535.54.03;cuda=12020",
    "driver-not-loaded": f"init=9;{H200}",
    "lib-rm-mismatch": f"init=18;{H200}",
    "no-permission": f"init=4;{H200}",
    "unknown-init-error": f"init=999;{H200}",
    "count-fails": f"init=0;count_err=15;{H200}",
    "system-queries-fail": f"init=0;{H200};fail=nvmlSystemGetDriverVersion:3;"
                           "fail=nvmlSystemGetCudaDriverVersion_v2:13;fail=nvmlSystemGetCudaDriverVersion:999",
    "device-queries-fail": f"init=0;{H200};{A10};fail=nvmlDeviceGetName:3;fail=nvmlDeviceGetUUID:3;"
                           "fail=nvmlDeviceGetCudaComputeCapability:15;fail=nvmlDeviceGetMemoryInfo:2;"
                           "fail=nvmlDeviceGetComputeMode:3",
    "handle-fails": f"init=0;{H200};fail=nvmlDeviceGetHandleByIndex_v2:15",
    "odd-error-code": f"init=0;{H200};fail=nvmlDeviceGetName:77",
}


@pytest.fixture(scope="module")
def nvml_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_nvml.build(tmp_path_factory.mktemp("fake_nvml")).parent


def _transcript(nvml_dir: Path, binding: str, spec: str) -> list[Any]:
    env = fake_nvml.env_for(nvml_dir, spec)
    proc = subprocess.run([sys.executable, "-c", _TRANSCRIPT, binding, str(nvml_dir)], env=env,
                          capture_output=True, text=True, timeout=60, cwd=fake_nvml.ROOT)
    assert proc.returncode == 0, proc.stderr
    got: list[Any] = json.loads(proc.stdout)
    return got


@pytest.mark.parametrize("mode", list(MODES))
def test_ctypes_binding_answers_as_pynvml(nvml_dir: Path, mode: str) -> None:
    ours = _transcript(nvml_dir, "ctypes", MODES[mode])
    theirs = _transcript(nvml_dir, "pynvml", MODES[mode])
    assert ours == theirs


def test_the_transcript_covers_what_it_claims(nvml_dir: Path) -> None:
    """Guard against two equally empty transcripts: the healthy fake answers every query, typed."""
    got = {row[0]: row[1:] for row in _transcript(nvml_dir, "ctypes", MODES["healthy"])}
    assert got["nvmlInit"] == ["NoneType", None]
    assert got["nvmlSystemGetDriverVersion"] == ["str", "580.159.04"]
    assert got["nvmlSystemGetCudaDriverVersion_v2"] == ["int", 13000]
    assert got["nvmlDeviceGetCount"] == ["int", 2]
    assert got["nvmlDeviceGetHandleByIndex(1)"] == ["handle", "handle"]
    assert got["nvmlDeviceGetName(1)"] == ["str", "NVIDIA A10"]
    assert got["nvmlDeviceGetUUID(0)"] == ["str", "GPU-uuid-0"]
    assert got["nvmlDeviceGetCudaComputeCapability(0)"] == ["tuple", [9, 0]]
    mib = 1024 * 1024
    assert got["nvmlDeviceGetMemoryInfo(1)"] == ["c_nvmlMemory_t", [24000 * mib, 1000 * mib, 23000 * mib]]
    assert got["nvmlDeviceGetComputeMode(1)"] == ["int", 3]
    assert got["nvmlDeviceGetHandleByIndex(2)"][:3] == ["error", "NVMLError", 2]
    assert got["early nvmlDeviceGetCount"][:3] == ["error", "NVMLError", 1]
    assert got["nvmlShutdown again"][:3] == ["error", "NVMLError", 1]
    assert got["nvmlErrorString(999)"] == ["str", "Fake NVML error"]


def test_pynvml_texts_are_pynvmls() -> None:
    """str(error) reads as pynvml's for every code pynvml names (its table, as imported)."""
    code = ("import json, pynvml\n"
            "print(json.dumps(pynvml.NVMLError._errcode_to_string))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    from ortdoctor.probes.nvml import _PYNVML_TEXTS

    assert {int(k): v for k, v in json.loads(proc.stdout).items()} == _PYNVML_TEXTS


_PROBE_AND_MODULES = """
import json, sys
from ortdoctor.core.facts import to_jsonable
from ortdoctor.probes.driver import probe_driver
info = to_jsonable(probe_driver())
print(json.dumps({"info": info, "pynvml": "pynvml" in sys.modules}))
"""


def _probe(lib_dir: Path, spec: str) -> dict[str, Any]:
    env = fake_nvml.env_for(lib_dir, spec)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run([sys.executable, "-c", _PROBE_AND_MODULES], env=env, capture_output=True, text=True,
                          timeout=60, cwd=fake_nvml.ROOT)
    assert proc.returncode == 0, proc.stderr
    got: dict[str, Any] = json.loads(proc.stdout)
    return got


def test_probe_uses_the_binding_without_importing_pynvml(nvml_dir: Path) -> None:
    got = _probe(nvml_dir, f"init=0;driver=580.159.04;cuda=13000;{H200};fail=nvmlDeviceGetUUID:3")
    assert got["pynvml"] is False
    info = got["info"]
    assert (info["available"], info["version"], info["cuda_version"]) == (True, "580.159.04", "13.0")
    (dev,) = info["devices"]
    assert (dev["name"], dev["uuid"], dev["compute_capability"]) == ("NVIDIA H200", None, "9.0")


@pytest.mark.parametrize("code", ["9", "999"])
def test_probe_errors_through_the_binding(nvml_dir: Path, code: str) -> None:
    got = _probe(nvml_dir, f"init={code};{H200}")
    assert got["pynvml"] is False
    assert got["info"]["available"] is False
    if code == "9":
        assert got["info"]["error_kind"] == DriverError.DRIVER_NOT_LOADED.value
    else:  # the code and pynvml's text for it, as before
        assert got["info"]["error"] == "NVML error 999: Unknown Error"


def test_a_library_missing_a_symbol_falls_back_to_pynvml(tmp_path: Path) -> None:
    """An older driver without nvmlSystemGetCudaDriverVersion_v2: the binding refuses the library,
    pynvml answers every query the library has, and the probe takes the unversioned CUDA query."""
    lib_dir = fake_nvml.build(tmp_path / "old-driver", defines=("FAKE_NVML_NO_CUDA_VERSION_V2",)).parent
    got = _probe(lib_dir, f"init=0;driver=450.51.06;cuda=11000;{H200}")
    assert got["pynvml"] is True
    info = got["info"]
    assert (info["available"], info["version"], info["cuda_version"]) == (True, "450.51.06", "11.0")
    assert info["devices"][0]["name"] == "NVIDIA H200"


def test_bind_names_the_missing_symbol(tmp_path: Path) -> None:
    # in a child: a library mapped into this process would change what later probes here find
    lib = fake_nvml.build(tmp_path / "old-driver", defines=("FAKE_NVML_NO_CUDA_VERSION_V2",), libcuda=False)
    code = ("import ctypes, sys\n"
            "from ortdoctor.probes.nvml import NvmlBindingError, bind\n"
            "try:\n    bind(ctypes.CDLL(sys.argv[1]))\n"
            "except NvmlBindingError as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(lib)], capture_output=True, text=True, timeout=60,
                          check=True, cwd=fake_nvml.ROOT)
    assert proc.stdout.strip() == "nvmlSystemGetCudaDriverVersion_v2 is not exported by the NVML library"


@pytest.mark.parametrize("spec", [MODES["healthy"], MODES["device-queries-fail"], MODES["driver-not-loaded"]])
def test_compare_script_finds_no_difference_on_the_fake(nvml_dir: Path, spec: str) -> None:
    """scripts/nvml_compare.py (for real GPU hosts) on the fake: every call compared, none different."""
    env = fake_nvml.env_for(nvml_dir, spec)
    proc = subprocess.run([sys.executable, str(fake_nvml.ROOT / "scripts" / "nvml_compare.py"), "--json",
                           "--repeat", "1"], env=env, capture_output=True, text=True, timeout=120, cwd=fake_nvml.ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = json.loads(proc.stdout)
    assert got["differences"] == []
    assert got["calls"] >= 39  # init, 4 system queries, 32 error texts, shutdown, the probe
    assert got["libraries"] == [str(nvml_dir / "libnvidia-ml.so.1")]


def test_compare_script_says_when_the_binding_cannot_be_set_up(tmp_path: Path) -> None:
    lib_dir = fake_nvml.build(tmp_path / "old-driver", defines=("FAKE_NVML_NO_CUDA_VERSION_V2",)).parent
    proc = subprocess.run([sys.executable, str(fake_nvml.ROOT / "scripts" / "nvml_compare.py")],
                          env=fake_nvml.env_for(lib_dir, "init=0"), capture_output=True, text=True, timeout=120,
                          cwd=fake_nvml.ROOT)
    assert proc.returncode == 2
    assert "nvmlSystemGetCudaDriverVersion_v2" in proc.stdout
