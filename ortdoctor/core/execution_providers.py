"""The GPU execution providers ortdoctor can prove, one row each: the table the rest derives from.

``check --provider`` offers the rows' ``choice`` values; the smoke request is built from the chosen row (the
provider's name, the options its session gets, whether it is a plugin EP and where its library lies); the
preload loads the row's ``preload`` families in order; the report names the provider by its ``label``.
A new provider is a new row here, plus whatever is new about it (its probe, its findings).

Each row's facts come from onnxruntime's own sources and documentation:

* The CUDA EP: ``libonnxruntime_providers_cuda.so`` / ``onnxruntime_providers_cuda.dll`` in the wheel's
  ``capi/``, loaded by onnxruntime when a session asks for ``CUDAExecutionProvider``.
* The TensorRT EP: ``libonnxruntime_providers_tensorrt.so`` beside it; it links TensorRT (``libnvinfer``),
  which no wheel of onnxruntime-gpu bundles.
* The CUDA plugin EP: the CUDA EP built on the plugin EP interface (``onnxruntime_BUILD_CUDA_EP_AS_PLUGIN``,
  microsoft/onnxruntime#27816). Since microsoft/onnxruntime#29544 it registers as ``CUDAExecutionProvider``
  and keeps the library name ``onnxruntime_providers_cuda``; a wheel whose build info says
  ``cuda-plugin-ep=1`` registers it when onnxruntime is imported. A plugin EP is registered with
  ``onnxruntime.register_execution_provider_library(name, path)`` and put on a session for the devices
  ``onnxruntime.get_ep_devices()`` lists for it (``SessionOptions.add_provider_for_devices``), not through
  ``providers=[...]`` (https://onnxruntime.ai/docs/execution-providers/plugin-ep-libraries/usage.html).
* The TensorRT-RTX plugin: ``libonnxruntime_providers_nv_tensorrt_rtx.so`` in the
  ``onnxruntime-ep-nv-tensorrt-rtx-cu12`` / ``-cu13`` distributions, which bundle TensorRT-RTX; it registers as
  ``NvTensorRTRTXExecutionProvider`` (the measured 0.5.0 wheel, tests/data/plugin_eps/).
"""

from __future__ import annotations

from ortdoctor.core.ep_names import CUDA_EP, TENSORRT_EP, TENSORRT_RTX_EP
from ortdoctor.core.record import record

#: Where a plugin EP's library is: in onnxruntime's own ``capi/`` directory, or in an ``onnxruntime-ep-*``
#: distribution (the smoke child registers it as :mod:`ortdoctor.prove.smoke.plugins` does).
PLUGIN_IN_ONNXRUNTIME = "onnxruntime"
PLUGIN_IN_PACKAGE = "package"


@record
class ExecutionProvider:
    choice: str  # the value of `check --provider`
    name: str  # onnxruntime's name of the provider
    label: str  # how the report names it
    library: str  # the provider library, Linux
    windows_library: str  # the provider library, Windows
    # The library families it loads: "cuda" and "cudnn" (the matrix's cuda_majors / cudnn_majors rows),
    # "tensorrt" (the matrix's tensorrt section), "tensorrt-rtx" (bundled by its plugin distribution).
    families: tuple[str, ...]
    # The families ortdoctor's preload loads before the session, in this order (the rest the provider or its
    # plugin distribution brings itself).
    preload: tuple[str, ...]
    # The smoke session's provider options, before the user's --provider-option values.
    smoke_options: tuple[tuple[str, str], ...] = ()
    device_option: str | None = "device_id"  # the option that picks the GPU; None: a plugin EP's device
    cuda_graph_option: str | None = "enable_cuda_graph"  # what --cuda-graph sets to "1"; None: not offered
    # The option naming the smoke session's engine cache directory (a temporary one, reused by a second
    # session to show what building the engine cost); None: the provider builds no engine.
    engine_cache_option: str | None = None
    plugin: str | None = None  # a plugin EP: PLUGIN_IN_ONNXRUNTIME or PLUGIN_IN_PACKAGE; None: built in
    docs: str = ""

    def library_for(self, windows: bool) -> str:
        return self.windows_library if windows else self.library


EXECUTION_PROVIDERS: tuple[ExecutionProvider, ...] = (
    ExecutionProvider(
        choice="cuda",
        name=CUDA_EP,
        label="the CUDA EP",
        library="libonnxruntime_providers_cuda.so",
        windows_library="onnxruntime_providers_cuda.dll",
        families=("cuda", "cudnn"),
        preload=("cuda", "cudnn"),
        docs="https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html",
    ),
    ExecutionProvider(
        choice="tensorrt",
        name=TENSORRT_EP,
        label="the TensorRT EP",
        library="libonnxruntime_providers_tensorrt.so",
        windows_library="onnxruntime_providers_tensorrt.dll",
        families=("cuda", "cudnn", "tensorrt"),
        preload=("cuda", "cudnn", "tensorrt"),
        smoke_options=(("trt_engine_cache_enable", "1"),),
        cuda_graph_option=None,
        engine_cache_option="trt_engine_cache_path",
        docs="https://onnxruntime.ai/docs/execution-providers/TensorRT-ExecutionProvider.html",
    ),
    ExecutionProvider(
        choice="cuda-plugin",
        name=CUDA_EP,
        label="the CUDA plugin EP",
        library="libonnxruntime_providers_cuda.so",
        windows_library="onnxruntime_providers_cuda.dll",
        families=("cuda", "cudnn"),  # cuDNN only for the operators that use it (microsoft/onnxruntime#29252)
        preload=("cuda", "cudnn"),
        device_option=None,
        cuda_graph_option=None,
        plugin=PLUGIN_IN_ONNXRUNTIME,
        docs="https://github.com/microsoft/onnxruntime/pull/29544",
    ),
    ExecutionProvider(
        choice="tensorrt-rtx",
        name=TENSORRT_RTX_EP,
        label="the TensorRT-RTX plugin EP",
        library="libonnxruntime_providers_nv_tensorrt_rtx.so",
        windows_library="onnxruntime_providers_nv_tensorrt_rtx.dll",
        families=("cuda", "tensorrt-rtx"),
        preload=("cuda", "cudnn"),
        device_option=None,
        cuda_graph_option=None,
        plugin=PLUGIN_IN_PACKAGE,
        docs="https://nvidia.github.io/TensorRT-RTX-EP-ABI/installation.html",
    ),
)

#: The values of `check --provider`, in the table's order (the first is the default).
PROVIDER_CHOICES: tuple[str, ...] = tuple(p.choice for p in EXECUTION_PROVIDERS)
DEFAULT_PROVIDER = PROVIDER_CHOICES[0]


def provider_for(choice: str) -> ExecutionProvider:
    """The row of a `--provider` choice. Raises KeyError for a value not in the table (a bug in the caller)."""
    for p in EXECUTION_PROVIDERS:
        if p.choice == choice:
            return p
    raise KeyError(choice)


def smoke_provider(smoke: object) -> ExecutionProvider | None:
    """The row of the provider a smoke result was asked to prove (its ``provider`` choice, else its ``ep``
    name); None for the CPU EP, or no result."""
    if smoke is None:
        return None
    choice = getattr(smoke, "provider", None)
    if isinstance(choice, str) and choice in PROVIDER_CHOICES:
        return provider_for(choice)
    return provider_named(str(getattr(smoke, "ep", None) or CUDA_EP))


def provider_named(name: str) -> ExecutionProvider | None:
    """The built-in row of an onnxruntime provider name (a plugin row shares its name with the built-in
    CUDA EP), or the plugin's when only a plugin has it; None for a provider not in the table (the CPU EP)."""
    rows = [p for p in EXECUTION_PROVIDERS if p.name == name]
    return next((p for p in rows if p.plugin is None), rows[0] if rows else None)
