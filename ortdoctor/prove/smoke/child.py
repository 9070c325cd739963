"""The smoke child: one real session on the CUDA execution provider, in a process of its own.

Run by :mod:`ortdoctor.prove.smoke.runner` as a fresh interpreter (never forked: CUDA does not survive fork
after initialisation, and a fresh loader state is what a user's program starts with). It reads one JSON
request (stdin, or the first argument), then:

1. applies ortdoctor's preload (if that module is there; its result is recorded, a failure is not fatal)
   with the built-in library rows, as ``import ortdoctor.hook`` does, unless a matrix file is named
   (the request's ``matrix`` or ``$ORTDOCTOR_MATRIX``),
2. imports onnxruntime (timed; an ImportError is reported, not raised),
3. creates a session with ``providers=[("CUDAExecutionProvider", options)]`` ONLY and the session config
   ``session.disable_cpu_ep_fallback=1``: a CUDA EP that cannot be created then makes session creation
   fail instead of silently running on the CPU. ``enable_fallback=0`` stops the Python wrapper from
   retrying with ``['CPUExecutionProvider']``, which would hide ORT's real error behind a configuration
   conflict,
4. checks ``get_providers()[0] == "CUDAExecutionProvider"``, runs the model (optionally through IOBinding
   with CUDA OrtValues, optionally as a CUDA graph that is captured, replayed and fed new data in place),
   and compares with numpy.

The provider is the request's (``check --provider``): its name, the options of its session, its engine
cache and whether it is a plugin EP come from the parent's table (:mod:`ortdoctor.core.execution_providers`);
this module knows none. On the TensorRT EP the preload also loads TensorRT, CPU fallback stays disabled, the
engine cache goes to a temporary directory (``trt_engine_cache_enable``, ``trt_engine_cache_path``), and a
second session on the same cache shows what the engine build cost (``session`` + ``first_run`` against
``session_cached`` + ``first_run_cached``). A plugin EP is registered and the session put on its device
(:mod:`ortdoctor.prove.smoke.plugin_session`).

Last, after the result is printed once (a crash costs only this stage), every installed plugin EP
library is registered and ``onnxruntime.get_ep_devices()`` listed (:mod:`ortdoctor.prove.smoke.plugins`).

With ``verbose``, the per-node placement is read from ORT itself (:mod:`ortdoctor.prove.ort_placement`,
shared with ``check --model``) and reported as ``node_placement``; on releases without that API the
parent reads ORT's verbose log instead.

The imports are kept to what the work needs: this process's start-up is part of what ``check`` costs.

ORT's C++ log goes to this process's stderr, where the parent captures it. Progress lines
``ORTDOCTOR-SMOKE-STAGE: <stage>`` and, last, ``ORTDOCTOR-SMOKE-RESULT: <json>`` go to stdout, so the parent
knows how far a child that crashed or hung got.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings

from ortdoctor.core.ep_names import CUDA_EP

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RESULT_PREFIX = "ORTDOCTOR-SMOKE-RESULT: "
STAGE_PREFIX = "ORTDOCTOR-SMOKE-STAGE: "
FALLBACK_CONFIG = "session.disable_cpu_ep_fallback"
STEADY_RUNS = 10
_TEMP_DIRS: list[str] = []  # the TensorRT engine cache, removed before the child exits
RTOL = 1e-2  # TF32 (on by default on Ampere+) keeps 10 mantissa bits: ~1e-3 relative per product
ATOL_SCALE = 1e-2  # ... times the largest reference value: sums of N products stay well inside


def _stage(name: str) -> None:
    sys.stdout.write(STAGE_PREFIX + name + "\n")
    sys.stdout.flush()


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def _preload(request: dict[str, Any]) -> dict[str, Any]:
    """ortdoctor's preload, when that module exists; never raises."""
    try:
        from ortdoctor.preloading import preloader
    except ImportError as exc:
        return {"available": False, "error": f"ortdoctor.preloading.preloader not importable: {exc}"}
    try:
        from ortdoctor.decide.matrix.load import load_matrix

        result = preloader.preload(directory=request.get("directory"), matrix=load_matrix(request.get("matrix")),
                                   tensorrt=bool(request.get("tensorrt")), provider=request.get("provider"),
                                   allow_unsafe_dirs=bool(request.get("allow_unsafe_dirs")))
    except Exception as exc:  # the preload is a help, not the subject: record and carry on
        return {"available": True, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
    summary: dict[str, Any] = {"available": True, "ok": True}
    for name in ("loaded", "skipped", "failed"):
        items = getattr(result, name, None)
        if items is not None:
            summary[name] = [_jsonable(i) for i in items]
    if summary.get("failed"):
        summary["ok"] = False
    return summary


def _ort_placement() -> Any:
    from ortdoctor.prove import ort_placement  # only for --verbose

    return ort_placement


def _jsonable(value: Any) -> Any:
    try:
        from ortdoctor.core.facts import to_jsonable

        value = to_jsonable(value)
    except Exception:
        pass
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def run(request: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ran": True,
        "ok": False,
        "stage": "start",
        "error": None,
        "error_type": None,
        "providers": [],
        "available_providers": [],
        "device_id": int(request.get("device_id", 0)),
        "timings_ms": {},
        "max_abs_error": None,
        "preload": None,
        "ort_version": None,
        "ort_file": None,
        "warnings": [],
        "checks": {},
    }
    timings = result["timings_ms"]

    if request.get("preload", True):
        _stage("preload")
        t0 = time.perf_counter()
        result["preload"] = _preload(request)
        timings["preload"] = _ms(time.perf_counter() - t0)

    _stage("import")
    result["stage"] = "import"
    t0 = time.perf_counter()
    try:
        import numpy as np
        import onnxruntime as ort
    except BaseException as exc:  # ImportError, OSError from a dlopen, SystemExit from a broken wheel
        timings["import"] = _ms(time.perf_counter() - t0)
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["error_type"] = type(exc).__name__
        return result
    timings["import"] = _ms(time.perf_counter() - t0)
    result["ort_version"] = getattr(ort, "__version__", None)
    result["ort_file"] = getattr(ort, "__file__", None)

    from ortdoctor.prove.smoke.model import INPUT_NAME, OUTPUT_NAME, build_model

    n = int(request.get("n", 256))
    model = build_model(n)
    w = np.frombuffer(model.weights, dtype="<f4").reshape(n, n).astype(np.float64)
    b = np.frombuffer(model.bias, dtype="<f4").astype(np.float64)
    rng = np.random.default_rng(int(request.get("seed", 20261202)))
    x = rng.uniform(-1.0, 1.0, size=(n, n)).astype(np.float32)

    def reference(inp: Any) -> Any:
        return np.maximum(inp.astype(np.float64) @ w + b, 0.0)

    def compare(got: Any, inp: Any) -> tuple[bool, float]:
        ref = reference(inp)
        got64 = np.asarray(got, dtype=np.float64)
        if got64.shape != ref.shape or not np.all(np.isfinite(got64)):
            return False, math.inf
        err = float(np.max(np.abs(got64 - ref)))
        atol = ATOL_SCALE * max(1.0, float(np.max(np.abs(ref))))
        return bool(np.all(np.abs(got64 - ref) <= atol + RTOL * np.abs(ref))), err

    verbose = bool(request.get("verbose"))
    iobinding = bool(request.get("iobinding")) or bool(request.get("cuda_graph"))
    device_id = result["device_id"]
    # `ep` exists for tests and benchmarks on machines without a GPU: the same child, model and checks on
    # another provider (the CPU EP). Only a GPU provider gets the no-CPU-fallback config, which ORT rejects
    # beside an explicit CPU EP. What the provider's session needs (its options, its engine cache, whether it
    # is a plugin EP) comes with the request, from the parent's table (core/execution_providers.py).
    ep = str(request.get("ep") or CUDA_EP)
    gpu = bool(request.get("gpu"))
    options = {str(k): str(v) for k, v in (request.get("smoke_options") or {}).items()}
    if gpu and request.get("device_option"):
        options = {str(request["device_option"]): str(device_id), **options}
    cache_option = request.get("engine_cache_option")
    if cache_option:  # the engine cache in a directory of its own, removed at the end
        import tempfile

        cache_dir = tempfile.mkdtemp(prefix="ortdoctor-trt-")
        _TEMP_DIRS.append(cache_dir)
        options[str(cache_option)] = cache_dir
    options.update({str(k): str(v) for k, v in (request.get("provider_options") or {}).items()})
    if request.get("cuda_graph") and request.get("cuda_graph_option"):
        options[str(request["cuda_graph_option"])] = "1"
    result["provider_options"] = options
    result["ep"] = ep

    _stage("session")
    result["stage"] = "session"
    try:
        result["available_providers"] = list(ort.get_available_providers())
    except Exception as exc:
        result["warnings"].append(f"get_available_providers() failed: {exc}")
    so = ort.SessionOptions()
    so.log_severity_level = 0 if verbose else 2
    if verbose:
        try:
            ort.set_default_logger_severity(0)
        except Exception:
            pass
    if gpu:
        so.add_session_config_entry(FALLBACK_CONFIG, "1")
    # --verbose: ORT records where each node went; a release that cannot leaves it to the verbose log,
    # which the parent reads
    record = verbose and _ort_placement().can_record(ort)
    if record:
        _ort_placement().enable_recording(so)
    caught: list[Any] = []
    t0 = time.perf_counter()
    try:
        # Python warnings (the CPU build's "Specified provider ... is not in available provider names")
        # are recorded whatever PYTHONWARNINGS says, and echoed to stderr beside ORT's own log.
        with warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always")
            try:
                sess = _session(ort, model.data, so, ep, options, request, result)
            finally:
                caught = list(recorded or [])
    except Exception as exc:
        timings["session"] = _ms(time.perf_counter() - t0)
        _flush_warnings(result, caught)
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["error_type"] = type(exc).__name__
        return result
    _flush_warnings(result, caught)
    timings["session"] = _ms(time.perf_counter() - t0)
    try:
        sess.disable_fallback()  # no silent retry on the CPU at run time either
    except Exception:
        pass
    result["providers"] = list(sess.get_providers())
    if record:
        nodes = _ort_placement().assignment(sess)
        if nodes:
            result["node_placement"] = _ort_placement().nodes_by_provider(nodes)
            result["placement_source"] = _ort_placement().SOURCE_API
    try:
        effective = sess.get_provider_options().get(ep, {})
        if "device_id" in effective:
            result["device_id"] = int(effective["device_id"])
    except Exception:
        pass
    if not result["providers"] or result["providers"][0] != ep:
        result["error"] = (
            f"the session runs on {result['providers']}, not on {ep}: onnxruntime fell back to the CPU"
        )
        result["error_type"] = "FellBackToCPU"
        return result

    _stage("run")
    result["stage"] = "run"
    try:
        if iobinding:
            device = "cuda" if gpu else "cpu"
            ok, err = _run_bound(ort, np, sess, x, request, result, compare, INPUT_NAME, OUTPUT_NAME, device, device_id)
        else:
            t0 = time.perf_counter()
            got = sess.run([OUTPUT_NAME], {INPUT_NAME: x})[0]
            timings["first_run"] = _ms(time.perf_counter() - t0)
            steady = []
            for _ in range(int(request.get("runs", STEADY_RUNS))):
                t0 = time.perf_counter()
                got = sess.run([OUTPUT_NAME], {INPUT_NAME: x})[0]
                steady.append(time.perf_counter() - t0)
            timings["run"] = _ms(sorted(steady)[len(steady) // 2]) if steady else timings["first_run"]
            ok, err = compare(got, x)
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["error_type"] = type(exc).__name__
        return result
    result["max_abs_error"] = err if math.isfinite(err) else None
    result["stage"] = "done"
    if not ok:
        result["error"] = (
            f"wrong numbers: the CUDA result differs from numpy by up to {err:.3g} "
            f"(allowed: rtol {RTOL}, atol {ATOL_SCALE} x max|reference|)"
            if math.isfinite(err)
            else "wrong numbers: the CUDA result has NaN/Inf or the wrong shape"
        )
        result["error_type"] = "WrongNumbers"
        return result
    if result["checks"].get("cuda_graph_replay") is False:
        result["error"] = result["checks"].get("cuda_graph_error") or "the CUDA graph replay check failed"
        result["error_type"] = "CudaGraphReplay"
        return result
    if cache_option:
        _cached_session(ort, model.data, so, ep, options, str(cache_option), x, result, compare, INPUT_NAME,
                        OUTPUT_NAME)
        if result.get("error"):
            return result
    result["ok"] = True
    return result


def _session(ort: Any, data: bytes, so: Any, ep: str, options: dict[str, str], request: dict[str, Any],
             result: dict[str, Any]) -> Any:
    """The session on ``ep`` alone. A plugin EP is registered first (unless onnxruntime registered it when
    it was imported) and the session put on the device ORT lists for it; a built-in one is named in
    ``providers``."""
    if not request.get("plugin"):
        return ort.InferenceSession(data, so, providers=[(ep, options)], enable_fallback=0)
    result["plugin"] = request["plugin"]
    from ortdoctor.prove.smoke.plugin_session import plugin_device

    device = plugin_device(ort, ep, request, int(result["device_id"]), result)
    so.add_provider_for_devices([device], options)
    return ort.InferenceSession(data, so, enable_fallback=0)


def _cached_session(ort: Any, data: bytes, so: Any, ep: str, options: dict[str, str], cache_option: str, x: Any,
                    result: dict[str, Any], compare: Any, input_name: str, output_name: str) -> None:
    """A second session on the same engine cache: what loading the engine costs instead of building it."""
    timings = result["timings_ms"]
    cache = options.get(cache_option)
    try:
        result["checks"]["engine_cache_files"] = len(os.listdir(cache)) if cache else None
    except OSError:
        result["checks"]["engine_cache_files"] = None
    t0 = time.perf_counter()
    try:
        # a plugin EP's device is already in `so`; a built-in provider is named again
        sess = (ort.InferenceSession(data, so, enable_fallback=0) if result.get("plugin")
                else ort.InferenceSession(data, so, providers=[(ep, options)], enable_fallback=0))
        timings["session_cached"] = _ms(time.perf_counter() - t0)
        t0 = time.perf_counter()
        got = sess.run([output_name], {input_name: x})[0]
        timings["first_run_cached"] = _ms(time.perf_counter() - t0)
    except Exception as exc:
        result["error"] = f"the session on the engine cache failed: {type(exc).__name__}: {exc}"
        result["error_type"] = type(exc).__name__
        return
    ok, _err = compare(got, x)
    result["checks"]["engine_cache_reused"] = bool(ok)


def _remove_temp_dirs() -> None:
    import shutil

    while _TEMP_DIRS:
        shutil.rmtree(_TEMP_DIRS.pop(), ignore_errors=True)


def _flush_warnings(result: dict[str, Any], caught: Any) -> None:
    for wmsg in caught or ():
        text = f"{wmsg.category.__name__}: {wmsg.message}"
        result["warnings"].append(text)
        sys.stderr.write(text + "\n")


def _run_bound(
    ort: Any,
    np: Any,
    sess: Any,
    x: Any,
    request: dict[str, Any],
    result: dict[str, Any],
    compare: Any,
    input_name: str,
    output_name: str,
    device: str,
    device_id: int,
) -> tuple[bool, float]:
    """IOBinding with CUDA OrtValues; with a CUDA graph: capture, replay, new input in place, replay."""
    timings = result["timings_ms"]
    x_dev = ort.OrtValue.ortvalue_from_numpy(x, device, device_id)
    y_dev = ort.OrtValue.ortvalue_from_shape_and_type(list(x.shape), np.float32, device, device_id)
    binding = sess.io_binding()
    binding.bind_ortvalue_input(input_name, x_dev)
    binding.bind_ortvalue_output(output_name, y_dev)
    result["checks"]["iobinding"] = True

    t0 = time.perf_counter()
    sess.run_with_iobinding(binding)
    timings["first_run"] = _ms(time.perf_counter() - t0)
    steady = []
    for _ in range(int(request.get("runs", STEADY_RUNS))):
        t0 = time.perf_counter()
        sess.run_with_iobinding(binding)
        steady.append(time.perf_counter() - t0)
    timings["run"] = _ms(sorted(steady)[len(steady) // 2]) if steady else timings["first_run"]
    first = y_dev.numpy().copy()
    ok, err = compare(first, x)
    if not request.get("cuda_graph") or device != "cuda":
        return ok, err

    # The graph replays the captured kernels on the same device addresses: new data must be copied into
    # the bound input in place. A replay that still returns the first result means the update was lost.
    x2 = (-x[::-1]).copy()
    x_dev.update_inplace(x2)
    sess.run_with_iobinding(binding)
    second = y_dev.numpy().copy()
    ok2, err2 = compare(second, x2)
    changed = bool(np.max(np.abs(second - first)) > 0)
    result["checks"]["cuda_graph_replay"] = bool(ok2 and changed)
    result["checks"]["cuda_graph_max_abs_error"] = err2 if math.isfinite(err2) else None
    if not changed:
        result["checks"]["cuda_graph_error"] = (
            "the replayed CUDA graph returned the first run's result after the input was updated in place"
        )
    elif not ok2:
        result["checks"]["cuda_graph_error"] = (
            f"the replayed CUDA graph's result differs from numpy by up to {err2:.3g}"
        )
    return ok, max(err, err2) if math.isfinite(err2) else math.inf


def _read_request(argv: list[str]) -> dict[str, Any]:
    raw = argv[0] if argv else sys.stdin.read()
    data = json.loads(raw or "{}")
    if not isinstance(data, dict):
        raise ValueError("the smoke request must be a JSON object")
    return data


def _plugin_stage(request: dict[str, Any], result: dict[str, Any]) -> None:
    """Register the installed plugin EPs and list ORT's devices; the result is printed first, so a crash
    here leaves the session's proof behind. Never raises."""
    ort = sys.modules.get("onnxruntime")
    if ort is None or not request.get("plugins", True):
        return
    _emit(result)
    _stage("plugins")
    try:
        from ortdoctor.probes.plugin_eps import probe_plugin_eps
        from ortdoctor.prove.smoke import plugins

        packages = probe_plugin_eps().packages
        result["plugin_eps"] = plugins.register_plugins(ort, packages)
        result["ep_devices"] = plugins.ep_devices(ort)
    except Exception as exc:
        result["warnings"] = [*result.get("warnings", []), f"plugin EP stage: {type(exc).__name__}: {exc}"]


def _emit(result: dict[str, Any]) -> None:
    sys.stderr.flush()
    sys.stdout.write("\n" + RESULT_PREFIX + json.dumps(result, default=repr) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        request = _read_request(argv)
    except (ValueError, OSError) as exc:
        result: dict[str, Any] = {"ran": True, "ok": False, "stage": "request", "error": f"bad request: {exc}"}
    else:
        try:
            result = run(request)
        except Exception as exc:  # a bug here must still produce a result line
            import traceback

            result = {
                "ran": True,
                "ok": False,
                "stage": "internal",
                "error": f"{type(exc).__name__}: {exc}",
                "error_type": type(exc).__name__,
                "traceback_tail": traceback.format_exc()[-2000:],
            }
    result["pid"] = os.getpid()
    _remove_temp_dirs()
    if result.get("stage") not in ("request", "internal"):
        _plugin_stage(request, result)
    _emit(result)
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
