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
from dataclasses import dataclass

__all__ = ["BINDINGS", "Stack", "StackScanner"]

BINDINGS = ("python", "java", "csharp", "rust", "node", "cpp")

# (binding, pattern, weight): a strong marker (weight 3) names the binding outright; weaker ones add up.
_BINDING_MARKERS: tuple[tuple[str, re.Pattern[str], int], ...] = tuple(
    (b, re.compile(p), w)
    for b, p, w in (
        ("java", r"\bai\.onnxruntime\b|\bOrtException\b|onnxruntime-java|:ort-java\b|com\.microsoft\.onnxruntime", 3),
        ("java", r"\bjava\.lang\.\w+|\bat [\w.$]+\(\w+\.java:\d+\)|\(Native Method\)", 2),
        ("csharp", r"Microsoft\.ML\.OnnxRuntime|\bOnnxRuntimeException\b|\bOnnxRuntimeGenAIException\b", 3),
        ("csharp", r"\bSystem\.\w*(?:Exception|NotFound\w*)\b|\bnet\d\.\d(?:-windows)?\b|\.csproj\b|HResult=0x", 2),
        ("csharp", r"runtimes[\\/]win-x64[\\/]native|\bNuGet\b|Unable to load DLL '", 3),
        ("rust", r"\bort::|\bort-artifacts\b|crates\.io|\bcargo\b|panicked at|\.rs:\d+|Result::unwrap\(\)", 3),
        ("rust", r"\bORT_DYLIB_PATH\b|\bort-2\.\d|\bort = |\b(?:INFO|WARN|ERROR) ort(?:::[\w:]+)?:", 3),
        ("node", r"onnxruntime-node|node_modules|onnxruntime_binding\.node", 3),
        ("cpp", r"\bOrt::\w+|terminate called after throwing|\bwhat\(\):|\[dnn_onnxruntime @", 3),
        # the C API by name: C and C++ programs (Java's and C#'s messages carry their own stronger markers)
        ("cpp", r"\bOrtSessionOptionsAppendExecutionProvider_\w+|\bSessionOptionsAppendExecutionProvider_\w+[(:]",
         2),
        ("cpp", r"onnxruntime-(?:linux|win)-x64-gpu-\d|\bmodel_repository_manager\.cc\b|\.cpp:\d+", 2),
        ("python", r"Traceback \(most recent call last\)|onnxruntime_pybind11_state|onnxruntime\.capi\b", 3),
        # onnxruntime_pybind_state.cc logs "Failed to create CUDAExecutionProvider" and the EP Error banner: the
        # Python binding's own C++ layer; insightface's "Applied providers" / "find model:" lines
        ("python", r"onnxruntime_pybind_state\.cc|Falling back to \[.{0,200}\] and retrying|Applied providers: \[|"
         r"^find model: ", 3),
        ("python", r"File \"[^\"]+\.py\", line \d+|^\s*>>> |\bimport onnxruntime\b|\bpip3? install\b", 3),
        ("python", r"\.py:\d+|site-packages|dist-packages|\bUserWarning\b|\bImportError\b|\bModuleNotFoundError\b", 2),
        ("python", r"\bInferenceSession\(|\bpython(?:3(?:\.\d+)?)?\b|EP Error", 1),
        ("python", r"\bonnxruntime_genai\b|\bimport torch\b|\bconda\b", 1),
    )
)

_OS_MARKERS: tuple[tuple[str, re.Pattern[str], int], ...] = tuple(
    (o, re.compile(p, re.IGNORECASE), w)
    for o, p, w in (
        ("wsl", r"/usr/lib/wsl\b|\bWSL2?\b", 3),
        ("windows", r"\b[A-Z]:\\|\.dll\b|LoadLibrary|WinError|\\a\\_work\\|\\_work\\1\\s\\|win-x64|\.exe\b", 2),
        ("linux", r"\.so(?:\.\d+)*\b|/usr/|/home/|/opt/|/root/|/lib64?/|onnxruntime_src|ld\.so|\bldconfig\b", 2),
        ("linux", r"\bubuntu\b|\bdebian\b|\bcentos\b|\bdocker\b|\bjetson\b|\bcolab\b", 1),
        ("macos", r"\.dylib\b|/Users/|\bdarwin\b|\bmacOS\b", 3),
    )
)

_ORT_VERSION = re.compile(
    r"(?<!Since )(?:\bonnxruntime(?:[-_]gpu)?(?:-(?:linux|win)-x64-gpu)?|\bONNX\s?Runtime|Microsoft\.ML\.OnnxRuntime(?:\.Gpu)?"
    r"|\bORT)(?:\s*version)?[\s=:v-]{0,3}(1\.\d{1,2}(?:\.\d{1,2})?)\b",
    re.IGNORECASE,
)
# A CUDA the machine has (not the build's: ORT's own "Require ... CUDA 12.*" line is read apart).
_MACHINE_CUDA = re.compile(
    r"\bCUDA(?:[ _-]?(?:toolkit|runtime))?(?:\s*version)?[\s:_-]{0,3}(\d{2})(?:\.\d)?\b(?!\.\*)"
    r"|\bcu(1[1-3])\d\b",
    re.IGNORECASE,
)
_GPU_NAME = re.compile(r"\b(?:NVIDIA\s+)?(?:GeForce\s+|Tesla\s+|Quadro\s+)?(?:RTX|GTX|Tesla|Jetson|A\d{2,3}|"
                       r"H\d00|V100|T4|L4|L40S?|GB10|Orin)[\w -]{0,30}", re.IGNORECASE)


@dataclass(frozen=True)
class Stack:
    """What a text says about where it came from. ``binding``/``os`` are ``"unknown"`` when it is silent."""

    binding: str = "unknown"  # one of BINDINGS, or "unknown"
    os: str = "unknown"  # "linux", "windows", "wsl", "macos", "unknown"
    ort_version: str | None = None  # the first onnxruntime version the text names
    machine_cuda_major: int | None = None  # a CUDA major the text says is installed
    gpu: str | None = None  # a GPU name the text shows
    genai: bool = False  # onnxruntime-genai is in the picture
    conda: bool = False  # a conda environment

    @property
    def python(self) -> bool:
        return self.binding == "python"

    @property
    def windows(self) -> bool:
        return self.os == "windows"

    @property
    def known(self) -> bool:
        return self.binding != "unknown"


class StackScanner:
    """Accumulates binding and OS evidence line by line; :meth:`stack` gives the verdict."""

    def __init__(self) -> None:
        self._binding: Counter[str] = Counter()
        self._os: Counter[str] = Counter()
        self._ort_version: str | None = None
        self._machine_cuda: Counter[int] = Counter()
        self._gpu: str | None = None
        self._genai = False
        self._conda = False

    def feed(self, line: str) -> None:
        for binding, pattern, weight in _BINDING_MARKERS:
            if pattern.search(line):
                self._binding[binding] += weight
        for os_name, pattern, weight in _OS_MARKERS:
            if pattern.search(line):
                self._os[os_name] += weight
        if self._ort_version is None:
            m = _ORT_VERSION.search(line)
            if m:
                self._ort_version = m.group(1)
        if "Require cuDNN" not in line:
            for m in _MACHINE_CUDA.finditer(line):
                major = int(m.group(1) or m.group(2))
                if 9 <= major <= 13:
                    self._machine_cuda[major] += 1
        if self._gpu is None:
            g = _GPU_NAME.search(line)
            if g:
                self._gpu = g.group(0).strip()
        low = line.lower()
        self._genai = self._genai or "onnxruntime_genai" in low or "onnxruntimegenai" in low or "og.model" in low
        self._conda = self._conda or "conda" in low

    def stack(self) -> Stack:
        return Stack(
            binding=_winner(self._binding, prefer_other_than="python"),
            os=_os_winner(self._os),
            ort_version=self._ort_version,
            machine_cuda_major=self._machine_cuda.most_common(1)[0][0] if len(self._machine_cuda) == 1 else None,
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
