"""Which stack a pasted error text comes from: the language binding, the operating system, the versions.

A fix is only useful in the user's own terms: ``pip install`` and ``import ortdoctor.hook`` mean
nothing to a C# program that references the ``Microsoft.ML.OnnxRuntime.Gpu`` NuGet package, and a
Windows user needs DLL folders on ``PATH``, not ``LD_LIBRARY_PATH``. :class:`StackScanner` is fed the
lines of a text one by one (the classifier streams them) and keeps only counts and a few short
strings, so its memory does not grow with the text.

The markers are what each binding's own messages and stack traces look like in the corpus of real
texts (``tests/data/explain_corpus``): ``ai.onnxruntime.OrtException`` and ``.java:`` frames for Java,
``Microsoft.ML.OnnxRuntime`` and ``System.*Exception`` for C#, ``ort::`` / ``panicked at`` /
``ort-artifacts`` for the Rust ``ort`` crate, ``Ort::Exception`` and ``terminate called`` for C++,
``Traceback`` and ``onnxruntime_pybind11_state`` for Python.
"""

from __future__ import annotations

import re
from collections import Counter

from ortdoctor.core.bindings import BINDINGS
from ortdoctor.core.record import record

__all__ = ["BINDINGS", "Stack", "StackScanner"]


# (binding, weight, the strings any of which marks it). A strong marker (3) names the binding outright;
# weaker ones add up. Plain substrings, matched case-sensitively as the messages spell them: a few dozen
# `in` tests cost less than one regular expression over the line.
_BINDING_MARKERS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    # JavaCPP's presets (org.bytedeco) bring ONNX Runtime, CUDA and cuDNN to Java as Maven artifacts
    ("java", 3, ("ai.onnxruntime.Ort", "OrtException", "onnxruntime-java", ":ort-java", "com.microsoft.onnxruntime",
                 "org.bytedeco")),
    ("java", 2, ("java.lang.", ".java:", "(Native Method)", "<artifactId>onnxruntime", "Maven", ".jar")),
    ("csharp", 3, ("Microsoft.ML.OnnxRuntime", "OnnxRuntimeException", "OnnxRuntimeGenAIException",
                   "runtimes\\win-x64\\native", "runtimes/win-x64/native", "NuGet", "Unable to load DLL '")),
    ("csharp", 2, ("System.DllNotFoundException", "System.EntryPointNotFoundException", "System.TypeInitialization",
                   "net6.0", "net7.0", "net8.0", "net9.0", ".csproj", "HResult=0x")),
    ("rust", 3, ("ort::", "ort-artifacts", "ort-sys", "crates.io", "cargo", "panicked at", "Result::unwrap()", "ORT_DYLIB_PATH",
                 "/ort-2.", " INFO ort:", " WARN ort:", " ERROR ort:")),
    # npm's own error prefix; onnxruntime-node's installer fetches the NuGet packages, so their paths appear too
    ("node", 3, ("onnxruntime-node", "node_modules", "onnxruntime_binding.node", "npm ERR!", "npm error ")),
    ("cpp", 3, ("Ort::", "terminate called after throwing", "what():", "[dnn_onnxruntime @",
                # TensorRT's C++ tools and samples, and glibc's assert() in a C/C++ program
                "&&&& RUNNING TensorRT", "&&&& FAILED TensorRT", "&&&& PASSED TensorRT", "): Assertion `")),
    # the C API by name: C and C++ programs (Java's and C#'s messages carry their own stronger markers)
    ("cpp", 2, ("SessionOptionsAppendExecutionProvider_", "onnxruntime-linux-x64-gpu-", "onnxruntime-win-x64-gpu-",
                "model_repository_manager.cc")),
    ("python", 3, ("Traceback (most recent call last)", "onnxruntime_pybind11_state", "onnxruntime.capi",
                   # the Python binding's own C++ layer logs these; insightface prints the last two
                   "onnxruntime_pybind_state.cc", "] and retrying", "Applied providers: [", "find model: ",
                   '.py", line ', ">>> ", "import onnxruntime", "pip install ", "pip3 install ")),
    ("python", 2, (".py:", "site-packages", "dist-packages", "UserWarning", "ImportError", "ModuleNotFoundError")),
    ("python", 1, ("InferenceSession(", "python", "EP Error", "onnxruntime_genai", "import torch", "conda")),
)

# (os, weight, lower-case strings); a few need a check beyond the substring (see _os_confirmed).
_OS_MARKERS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("wsl", 3, ("/usr/lib/wsl", "wsl")),
    ("windows", 2, (":\\", ".dll", "loadlibrary", "winerror", "\\a\\_work\\", "\\_work\\1\\s\\", "win-x64",
                    ".exe")),
    ("linux", 2, (".so", "/usr/", "/home/", "/opt/", "/root/", "/lib/", "/lib64/", "onnxruntime_src", "ld.so",
                  "ldconfig")),
    ("linux", 1, ("ubuntu", "debian", "centos", "docker", "jetson", "colab")),
    ("macos", 3, (".dylib", "/users/", "darwin", "macos")),
)
_SO = re.compile(r"\.so(?:\.\d+)*\b")
_DRIVE = re.compile(r"\b[A-Za-z]:\\")
_WSL = re.compile(r"\bWSL2?\b|/usr/lib/wsl\b")
_STACK_CHARS = 4096  # of a line, the part read for markers (they sit near the start of a message)

_ORT_VERSION = re.compile(
    r"(?<!Since )(?:\bonnxruntime(?:[-_]gpu)?(?:-(?:linux|win|osx)-(?:x64|aarch64|arm64)(?:-gpu)?(?:-cuda1\d)?)?"
    r"|\bONNX\s?Runtime|Microsoft\.ML\.OnnxRuntime(?:\.Gpu(?:\.Linux|\.Windows)?)?"
    # a name in Markdown code or quotes ("`onnxruntime-gpu` 1.27") names its version too, and so does a note in
    # brackets ("Microsoft.ML.OnnxRuntime.GPU (nuget package VERSION 1.16.0)")
    r"|\bORT)[`'\"]?(?:\s*\(?(?:nuget\s+)?(?:package\s+)?(?:version|ver\.?))?[\s=:v-]{0,3}(1\.\d{1,2}(?:\.\d{1,2})?)\b",
    re.IGNORECASE,
)
# An issue form's version field as a list item or a line of its own ("- ONNX Runtime version: 1.5.2", "ONNX Runtime
# version: 1.16"): the reporter's answer about what runs, so it outweighs versions named in prose ("I migrated from
# 1.4.0 to 1.5.2").
_FORM_LINE_VERSION = re.compile(r"^[-*\s]*(?:\*\*)?ONNX\s?Runtime(?:\s+\w+)?\s+version(?:\*\*)?\s*[:：]\s*v?"
                                r"(1\.\d{1,2}(?:\.\d{1,2})?)\b", re.IGNORECASE)
# ONNX Runtime's issue form: a "### <field>" heading, its answer on the next non-empty line. The API field names
# the binding, the version field the release (whatever the answer's spelling: "onnxrumtime 1.16.2", "1.13").
_FORM_API = {"python": "python", "c++": "cpp", "c": "cpp", "c#": "csharp", "java": "java", "javascript": "node",
             "rust": "rust"}
_FORM_VERSION = re.compile(r"\b(1\.\d{1,2}(?:\.\d{1,2})?)\b")
_GPU_HINTS = ("rtx", "gtx", "tesla", "jetson", "a100", "h100", "h200", "v100", "t4", "l4", "l40", "gb10", "orin",
              "a10", "a30", "a40", "quadro")
_GPU_NAME = re.compile(r"\b(?:NVIDIA\s+)?(?:GeForce\s+|Tesla\s+|Quadro\s+)?(?:RTX|GTX|Tesla|Jetson|A\d{2,3}|"
                       r"H\d00|V100|T4|L4|L40S?|GB10|Orin)[\w -]{0,30}", re.IGNORECASE)


@record
class Stack:
    """What a text says about where it came from. ``binding``/``os`` are ``"unknown"`` when it is silent."""

    binding: str = "unknown"  # one of BINDINGS, or "unknown"
    os: str = "unknown"  # "linux", "windows", "wsl", "macos", "unknown"
    ort_version: str | None = None  # the first onnxruntime version the text names
    machine_cuda_major: int | None = None  # a CUDA major the text says is installed (set from the evidence)
    gpu: str | None = None  # a GPU name the text shows
    genai: bool = False  # onnxruntime-genai is in the picture
    conda: bool = False  # a conda environment
    python_version: str | None = None  # "3.9", from a pythonX.Y/site-packages path or a version line
    gpu_sm: int | None = None  # the GPU's compute capability (86 for sm_86) when the text shows one GPU

    @property
    def python(self) -> bool:
        return self.binding == "python"

    @property
    def windows(self) -> bool:
        return self.os == "windows"

    @property
    def known(self) -> bool:
        return self.binding != "unknown"


# Python's own answer to onnxruntime.__version__: ">>> onnxruntime.__version__" (or a print of it, "ort" as the
# usual alias), then the version alone on the next line, quoted in a REPL
_ASKS_VERSION = re.compile(r"^(?:>>>\s*)?(?:print\()?(?:onnxruntime|ort)\.__version__\)?\s*$")
_REPL_VERSION = re.compile(r"""['"]?(1\.\d{1,2}\.\d{1,2})['"]?""")


class StackScanner:
    """Accumulates binding and OS evidence line by line; :meth:`stack` gives the verdict."""

    def __init__(self) -> None:
        self._binding: Counter[str] = Counter()
        self._os: Counter[str] = Counter()
        self._ort_version: str | None = None
        self._form_version: str | None = None  # the issue form's answer, which outweighs prose
        self._gpu: str | None = None
        self._genai = False
        self._conda = False
        self._form_field = ""  # the issue-form heading whose answer comes next

    def feed(self, line: str) -> None:
        line = line[:_STACK_CHARS]
        self._form(line)
        for binding, weight, marks in _BINDING_MARKERS:
            if any(m in line for m in marks):
                self._binding[binding] += weight
        low = line.lower()
        for os_name, weight, marks in _OS_MARKERS:
            if any(m in low for m in marks) and _os_confirmed(os_name, line, low):
                self._os[os_name] += weight
        if self._form_version is None and "version" in low and (f := _FORM_LINE_VERSION.search(line)) is not None:
            self._form_version = f.group(1)
        if self._ort_version is None and ("onnx" in low or "ort " in low):
            m = _ORT_VERSION.search(line)
            if m:
                self._ort_version = m.group(1)
        if self._gpu is None and any(h in low for h in _GPU_HINTS):
            g = _GPU_NAME.search(line)
            if g:
                self._gpu = g.group(0).strip()
        self._genai = self._genai or "onnxruntime_genai" in low or "onnxruntimegenai" in low or "og.model" in low
        self._conda = self._conda or "conda" in low

    def _form(self, line: str) -> None:
        text = line.strip()
        if not text:
            return
        field, self._form_field = self._form_field, ""
        if text.startswith("#"):
            heading = text.lstrip("#").strip().lower()
            if heading in ("onnx runtime api", "onnx runtime version or commit id"):
                self._form_field = heading
            return
        if field == "__version__" and self._ort_version is None:
            m = _REPL_VERSION.fullmatch(text)
            if m:
                self._ort_version = m.group(1)
            return
        if _ASKS_VERSION.search(text):  # a REPL or print() of onnxruntime.__version__: its answer is the next line
            self._form_field = "__version__"
            return
        if field == "onnx runtime api" and text.lower() in _FORM_API:
            self._binding[_FORM_API[text.lower()]] += 3
        elif field and self._form_version is None:
            m = _FORM_VERSION.search(text)
            if m:
                self._form_version = m.group(1)

    def stack(self) -> Stack:
        return Stack(
            binding=_winner(self._binding, prefer_other_than="python"),
            os=_os_winner(self._os),
            ort_version=self._form_version or self._ort_version,
            gpu=self._gpu,
            genai=self._genai,
            conda=self._conda,
        )


def _winner(scores: Counter[str], *, prefer_other_than: str) -> str:
    """The binding with the most evidence. A strong marker of another binding beats Python's weak ones:
    C# and Java programs print ORT's C++ messages too, but a Python one never prints ``ai.onnxruntime``."""
    if not scores:
        return "unknown"
    others = {b: s for b, s in scores.items() if b != prefer_other_than and s >= 3}
    if others:
        return max(others, key=lambda b: others[b])
    best, score = scores.most_common(1)[0]
    return best if score >= 2 else "unknown"


def _os_winner(scores: Counter[str]) -> str:
    if scores.get("wsl"):
        return "wsl"
    if scores.get("macos", 0) >= 3:
        return "macos"
    if not scores:
        return "unknown"
    best, score = max(((o, s) for o, s in scores.items() if o in ("windows", "linux")), key=lambda t: t[1],
                      default=("unknown", 0))
    return best if score >= 2 else "unknown"


def _os_confirmed(os_name: str, line: str, low: str) -> bool:
    """The substrings that also occur in ordinary words ("also", "wsl" in a path) checked in full."""
    if os_name == "linux" and ".so" in low and not any(m in low for m in _OS_MARKERS[2][2][1:]):
        return _SO.search(line) is not None
    if os_name == "windows" and ":\\" in low and not any(m in low for m in _OS_MARKERS[1][2][1:]):
        return _DRIVE.search(line) is not None
    if os_name == "wsl":
        return _WSL.search(line) is not None
    return True
