"""Import the TensorRT-RTX plugin package and register its library, printing what happens."""

import os

print("LD_LIBRARY_PATH before:", os.environ.get("LD_LIBRARY_PATH"))
import onnxruntime as ort  # noqa: E402

print("onnxruntime", ort.__version__, ort.get_available_providers())
import onnxruntime_ep_nv_tensorrt_rtx as trt_ep  # noqa: E402

print("LD_LIBRARY_PATH after import:", os.environ.get("LD_LIBRARY_PATH"))
print("ep name:", trt_ep.get_ep_name(), "lib:", trt_ep.get_library_path())
print("dir now:", sorted(os.listdir(os.path.dirname(trt_ep.__file__))))
with open("/proc/self/maps") as maps:
    mapped = {line.split()[-1].rsplit("/", 1)[-1] for line in maps
              if "cudart" in line or "tensorrt" in line or "libonnxruntime" in line}
print("mapped:", sorted(mapped))
try:
    ort.register_execution_provider_library(trt_ep.get_ep_name(), trt_ep.get_library_path())
    print("registered")
    print([(d.ep_name, d.device.type) for d in ort.get_ep_devices()])
except Exception as e:  # print whatever registration raises
    print("register failed:", type(e).__name__, e)
print("has get_build_info:", hasattr(ort, "get_build_info"), getattr(ort, "get_build_info", lambda: None)())
