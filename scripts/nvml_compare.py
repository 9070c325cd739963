"""Compare ortdoctor's ctypes NVML binding with pynvml on this machine's driver, function by function.

For a GPU host, with nvidia-ml-py installed:

    python scripts/nvml_compare.py [--json] [--repeat N]

The driver library is loaded as ``ortdoctor check`` loads it (by absolute path, from trusted places) and
bound with :mod:`ortdoctor.probes.nvml`; pynvml, imported after, gets the same mapped library. Both are
initialised together (NVML counts initialisations) and each function is called through both back to back
(every device, one index past the last, nvmlErrorString for codes 0-30 and 999); then ``probe_driver()``
runs through each. Prints both answers side by side and the time each takes to be ready and to probe
(medians of ``--repeat`` interleaved runs). Exits 0 when every answer is the same, 1 on any difference,
2 when the binding cannot be set up here (then ``check`` falls back to pynvml) or pynvml is missing.
Memory free/used are live values: a job allocating on a GPU meanwhile shows up as a difference.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ortdoctor.core.facts import to_jsonable  # noqa: E402
from ortdoctor.formats.ldcache import read_ld_cache  # noqa: E402
from ortdoctor.probes.driver import _map_nvml_by_path, probe_driver  # noqa: E402
from ortdoctor.probes.nvml import NvmlBindingError, bind  # noqa: E402
from ortdoctor.probes.system import default_lib_dirs  # noqa: E402

DEVICE_FUNCTIONS = ("nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetCudaComputeCapability",
                    "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeMode")
SYSTEM_FUNCTIONS = ("nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion",
                    "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetCount")


def outcome(fn: Any, *args: Any) -> tuple[Any, Any]:
    """(comparable answer, the native object or None): values with their type, errors as code and text."""
    try:
        value = fn(*args)
    except Exception as exc:
        return ["error", getattr(exc, "value", type(exc).__name__), str(exc)], None
    if hasattr(value, "total"):
        return [type(value).__name__, {"total": value.total, "free": value.free, "used": value.used}], value
    if isinstance(value, (str, bytes, int, tuple, type(None))):
        return [type(value).__name__, value.decode() if isinstance(value, bytes) else value], value
    return ["handle", "handle"], value  # device handles: opaque, compared by what they answer


def os_name() -> str:
    return "windows" if sys.platform == "win32" else ("linux" if sys.platform.startswith("linux") else sys.platform)


class NoLibrary(Exception):
    pass


def load_binding() -> Any:
    cache: dict[str, Any] = {}
    if os_name() == "linux":
        try:
            cache = dict(read_ld_cache("/etc/ld.so.cache", platform.machine()))
        except Exception as exc:
            print(f"(ld.so.cache unreadable: {exc})", file=sys.stderr)
    lib, refused = _map_nvml_by_path(os_name(), cache, default_lib_dirs(), os.environ)
    if refused is not None or lib is None:
        raise NoLibrary(f"no NVML library loaded by path: {refused}")
    return bind(lib)


def mapped_nvml() -> list[str]:
    try:
        with open("/proc/self/maps") as f:
            return sorted({line.split()[-1] for line in f if "libnvidia-ml" in line})
    except OSError:
        return []


def compare(ours: Any, pynvml: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def both(label: str, name: str, ours_args: tuple[Any, ...] = (), theirs_args: tuple[Any, ...] = ()) -> tuple[Any, Any]:
        a, a_obj = outcome(getattr(pynvml, name), *theirs_args)
        b, b_obj = outcome(getattr(ours, name), *ours_args)
        rows.append({"call": label, "pynvml": a, "ctypes": b, "same": a == b})
        return a_obj, b_obj

    both("nvmlInit", "nvmlInit")
    try:
        for name in SYSTEM_FUNCTIONS:
            both(name, name)
        try:
            count = int(pynvml.nvmlDeviceGetCount())
        except Exception:
            count = -1  # init failed or no count: the rows above already compare the errors
        for i in range(count + 1):  # one past the last: both must answer INVALID_ARGUMENT
            h_theirs, h_ours = both(f"nvmlDeviceGetHandleByIndex({i})", "nvmlDeviceGetHandleByIndex", (i,), (i,))
            if h_theirs is None or h_ours is None:
                continue
            for name in DEVICE_FUNCTIONS:
                both(f"{name}({i})", name, (h_ours,), (h_theirs,))
        for code in (*range(31), 999):
            both(f"nvmlErrorString({code})", "nvmlErrorString", (code,), (code,))
    finally:
        both("nvmlShutdown", "nvmlShutdown")
    # the whole probe through each binding: what `ortdoctor check` reports
    theirs_probe = to_jsonable(probe_driver(pynvml))
    ours_probe = to_jsonable(probe_driver())
    rows.append({"call": "probe_driver()", "pynvml": theirs_probe, "ctypes": ours_probe,
                 "same": theirs_probe == ours_probe})
    return rows


def timings(repeat: int) -> dict[str, float]:
    """Medians in ms: probe_driver() through the binding (the default path) and through pynvml."""
    import pynvml

    ours, theirs = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        probe_driver()
        ours.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        probe_driver(pynvml)
        theirs.append((time.perf_counter() - t) * 1000)
    return {"probe_driver_ctypes_ms": statistics.median(ours), "probe_driver_pynvml_ms": statistics.median(theirs)}


def show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--repeat", type=int, default=5, help="probe_driver() runs per binding for the timings")
    args = parser.parse_args()

    t = time.perf_counter()
    try:
        ours = load_binding()
    except NvmlBindingError as exc:
        print(f"the ctypes binding cannot be set up here: {exc}")
        return 2
    except NoLibrary as exc:
        print(exc)
        return 2
    bind_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    try:
        import pynvml
    except ImportError as exc:
        print(f"pynvml is not importable: {exc}")
        return 2
    import_ms = (time.perf_counter() - t) * 1000

    rows = compare(ours, pynvml)
    # load_and_bind: the ld.so cache read, the path search, dlopen and bind(), as in `check`
    times = {"load_and_bind_ms": bind_ms, "import_pynvml_ms": import_ms, **timings(args.repeat)}
    differences = [r["call"] for r in rows if not r["same"]]
    try:
        from importlib.metadata import version

        nvml_py = version("nvidia-ml-py")
    except Exception:
        nvml_py = "unknown"
    summary = {"libraries": mapped_nvml(), "nvidia_ml_py": nvml_py, "python": sys.version.split()[0],
               "calls": len(rows), "differences": differences, "times": times}
    if args.json:
        print(json.dumps({"rows": rows, **summary}, indent=1, default=str))
    else:
        width = max(len(r["call"]) for r in rows)
        for r in rows:
            mark = "  " if r["same"] else "!="
            if r["call"] == "probe_driver()" and r["same"]:
                print(f"{r['call']:<{width}}  {mark} same facts ({len(r['ctypes']['devices'])} devices)")
                continue
            print(f"{r['call']:<{width}}  {mark} pynvml {show(r['pynvml'])}  ctypes {show(r['ctypes'])}")
        print(json.dumps(summary, indent=1))
    if differences:
        print(f"{len(differences)} difference(s): {', '.join(differences)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
