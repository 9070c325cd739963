"""What a pasted text shows about the machine it came from: evidence, each item with the line it came from.

``check`` inspects an environment into facts (:mod:`ortdoctor.core.facts`); a pasted text holds a few
of the same facts, partly: the onnxruntime version and the majors its build requires (ORT's
``Require cuDNN 9.* and CUDA 12.*``), the CUDA and cuDNN the machine has, the GPU and its compute
capability, the driver and the highest CUDA it supports (``nvidia-smi``'s header), TensorRT, Python
(from a ``pythonX.Y/site-packages`` path), two onnxruntime copies, conda/Docker/WSL/Jetson. The names
of the facts follow the records ``check`` fills (``python.version``, ``ort.cuda_version``, ...).

Unknowns stay unknown: a fact the text does not show is absent, never guessed. The rules of
:mod:`.text_meaning` decide with this evidence, and ``explain --json`` shows it.
"""

from __future__ import annotations

import re

from ortdoctor.core.record import record
from ortdoctor.decide import gpu_names

__all__ = ["Evidence", "EvidenceScanner", "TextEvidence"]

_MAX_ITEMS = 200
_LINE_CHARS = 300  # of the line an item came from, kept with it


@record
class Evidence:
    fact: str  # "python.version", "ort.cudnn_major", "gpu.compute_capability", ...
    value: str
    line: str  # the line (cut to _LINE_CHARS) it was read from
    line_no: int

    def to_json(self) -> dict[str, object]:
        return {"fact": self.fact, "value": self.value, "line": self.line, "line_no": self.line_no}


# (fact, needles (lower case, one must be in the line), pattern, the group that holds the value)
_ORT_DIR = r"[\\/](?:site|dist)-packages[\\/](?:([\w.-]{1,80})[\\/](?:[\w.-]{1,80}[\\/])?)?"
_RULES: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    ("python.version", ("python3", "python2", "python 3", "python: 3", "python version", "\\python3"),
     re.compile(r"[\\/][Pp]ython(3\.\d{1,2}|2\.7)[\\/](?:site|dist)-packages|[\\/][Pp]ython(3\d{1,2})[\\/]"
                r"|\bPython(?:\s+version)?[:\s]+(3\.\d{1,2})(?:\.\d{1,3})?\b")),
    # nvidia-smi's header ("Driver Version: 535.54.03"), and the driver as users write it ("Nvidia driver 419.67",
    # "driver version 470.82", "Driver: 595.71.05"); a driver version has a three-digit branch
    ("driver.version", ("driver",),
     re.compile(r"\bdriver(?:\s+version)?\s*[:=]?\s*[vR]?(\d{3}\.\d{1,3}(?:\.\d{1,3})?)(?![\d.]*\d)", re.IGNORECASE)),
    ("driver.cuda", ("cuda version:",), re.compile(r"CUDA Version:\s*(\d{2}\.\d)")),
    # an NVIDIA container's start-up check: "... but version 510.85.02 was detected and compatibility mode is ..."
    ("driver.version", ("was detected",), re.compile(r"version\s+(\d{3}\.\d{1,3}(?:\.\d{1,3})?) was detected")),
    ("cuda.version", ("cuda", "nvcc", "cu1"),
     re.compile(r"(?<![A-Za-z0-9_.])(?:CUDA(?:[ _-]?(?:tool\s?kit|runtime))?(?:\s*\(?version)?(?!\s*Version:)[\s:=_\\/(-]{0,3}v?"
                r"|cuda-|nvidia/cuda:|release\s)((?:1[0-3]|[89])\.\d)(?!\.\*)\b|\bcu(1[1-3])(\d)\b", re.IGNORECASE)),
    # environment dumps people paste: torch's collect_env ("CUDA used to build PyTorch: 12.1"), torch.version.cuda,
    # and `pip list`'s CUDA runtime wheel ("nvidia-cuda-runtime-cu12   12.4.127": the wheel's version is the runtime's)
    ("cuda.version", ("cuda used to build", "version.cuda", "nvidia-cuda-runtime-cu"),
     re.compile(r"(?:CUDA used to build PyTorch|torch\.version\.cuda\W{0,6})\s*:?\s*((?:1[0-3]|[89])\.\d)\b"
                r"|nvidia-cuda-runtime-cu1\d[=\s]{1,40}((?:1[0-3])\.\d)\b", re.IGNORECASE)),
    # a CUDA major named without its minor ("CUDA 12", "cuda13", "CUDA 12.x", a cu13 image): the machine's major
    ("cuda.major", ("cuda", "cu1"),
     re.compile(r"(?<![A-Za-z0-9_.])(?:CUDA[ _-]?|cu)(1[1-3])(?:\.[x*])?(?!\w|\.\d)(?!\s*(?:Version|toolkit)\b)",
                re.IGNORECASE)),
    ("cudnn.version", ("cudnn",),
     re.compile(r"\bcu[Dd][Nn][Nn][\s_-]?v?(?:\(?version\s*)?[:=]?\s?((?:[789]|1\d)(?:\.\d{1,2}){1,3})\b"
                r"|nvidia-cudnn-cu1\d[=\s]{1,40}((?:[89]|1\d)\.\d{1,2})|\bcudnn(8|9)\b"
                # the integer torch.backends.cudnn.version() prints (CUDNN_VERSION): 8907 is 8.9.7, 90100 is 9.1.0
                r"|\bcu[Dd][Nn][Nn](?:\s*(?:version|ver\.?))?\s*[:=]?\s*([89]\d{3}|[19]\d{4})\b", re.IGNORECASE)),
    ("tensorrt.version", ("tensorrt", "trt"),
     re.compile(r"\b(?:TensorRT|TRT)(?:\s*version)?[\s:=_-]{0,3}v?(\d{1,2}\.\d{1,2}(?:\.\d{1,3}){0,2})\b"
                r"|tensorrt-cu1\d[=\s]{1,3}(\d{1,2}\.\d{1,2})", re.IGNORECASE)),
    ("ort.copies", ("-packages",), re.compile(_ORT_DIR + r"onnxruntime[\\/]capi")),
    ("env.jetson", ("jetson", "jetpack", "tegra", "l4t"), re.compile(r"\b(Jetson|JetPack|Tegra|L4T)\b", re.IGNORECASE)),
    ("env.docker", ("docker", "nvcr.io", "container"),
     re.compile(r"\b(docker run|Dockerfile|docker compose|nvcr\.io/\S+|FROM \S+)")),
    ("env.wsl", ("wsl",), re.compile(r"\b(WSL2?)\b|(/usr/lib/wsl)\b")),
    ("env.conda", ("conda", "miniforge", "mambaforge"), re.compile(r"(anaconda3|miniconda3?|miniforge3|mambaforge"
                                                                     r"|conda install|[\\/]envs[\\/][\w.-]+)")),
    ("env.pixi", (".pixi",), re.compile(r"(\.pixi[\\/]envs)")),
    ("env.uv", ("uv pip", "uv add", "uv sync", "\\.venv", "/.venv"), re.compile(r"\b(uv (?:pip|add|sync))\b")),
)
_NEEDLES = tuple(sorted({n for _, needles, _ in _RULES for n in needles}))
# One digit too: T4, P4, L4 and A2 are data-centre GPUs of the name table (decide/gpu_names.py), which
# decides whether a match is a GPU at all.
_GPU_NAME = re.compile(
    r"\b(?:NVIDIA\s+)?(?:GeForce\s+|Quadro\s+|Tesla\s+)?(?:RTX\s?(?:PRO\s)?[A-Z]?\d{3,4}(?:\s?(?:Ti|SUPER|Laptop))?"
    r"|GTX\s?\d{3,4}(?:\s?Ti)?|GT\s?\d{3,4}\b|[PMKTV]\d{1,4}\b|[AHLB]\d{1,3}\b|Titan\s?\w+|Jetson\s\w+|GB10\b)", re.IGNORECASE)
_GPU_HINTS = ("rtx", "gtx", "gt ", "quadro", "tesla", "titan", "jetson", "nvidia", "gpu", "a100", "h100", "v100", "t4",
              "p100", "p40", "p4", "l4", "gb10")
_CC = re.compile(r"(?:compute capability|CUDA capability|capability)(?: major/minor version number)?:?\s*"
                 r"(\d{1,2})\.(\d)|\bsm_?(\d{2,3})\b", re.IGNORECASE)
# TensorRT names the GPU it refuses by its SM in hex, major and minor: "Unsupported SM: 0x601" is sm_61
_TRT_SM = re.compile(r"Unsupported SM:?\s*0x([1-9a-c])0([0-9])\b")
_PAIRED = re.compile(r"CUDA\s*/\s*cuDNN(?:\s*versions?)?\s*[:=]?\s*v?((?:1[0-3]|[89])\.\d{1,2}(?:\.\d{1,3})?)\s*/\s*v?"
                     r"(\d{1,2}(?:\.\d{1,3}){0,3})\b", re.IGNORECASE)
_FORM_SINGLE = re.compile(r"CUDA\s*/\s*cuDNN(?:\s*versions?)?\s*[:=]\s*v?((?:1[0-3]|[89])\.\d)(?:\.\d{1,3})?\s*$",
                          re.IGNORECASE)
_REQUIRE = re.compile(r"Require cuDNN (\d{1,2})\.\* and CUDA (\d{1,2})\.\*")
# What a program asks for is not what the machine has: "sherpa-onnx is looking for CUDA 11 file", "it searches
# for CUDA 11.x dependencies", "needs CUDA 11" name the build's CUDA, and "(supports CUDA 13.0)" a driver's
# ceiling, so they are not read as the machine's.
_ASKED = re.compile(r"\b(?:looking|looks|look|searching|searches|search|asks|asking|ask)\s+for\s+(?:the\s+|a\s+)?$"
                    # a driver's highest CUDA ("Driver: 580.126.18 (supports CUDA 13.0)") is not an installed one
                    r"|\bsupports?\s+(?:up\s+to\s+)?$"
                    # what a build links is the build's ("is built against CUDA 12.x", "links against CUDA 13")
                    r"|\b(?:requires?|requiring|needs?|needing|wants?|expects?|(?:built|compiled)\s+(?:for|with|against)"
                    r"|(?:links?|linked|linking)\s+against)"
                    r"\s+(?:the\s+|a\s+)?$"
                    # a question about what to do ("Should I install cuda 12", "do I need to downgrade to CUDA 11"):
                    # a CUDA the person considers, not one they have
                    r"|\b(?:should|shall|do|can|could|must|would)\s+(?:I|we)\s+(?:also\s+|just\s+|then\s+)?"
                    r"(?:need\s+to\s+)?(?:install|use|get|downgrade\s+to|upgrade\s+to|switch\s+to|go\s+back\s+to)\s+"
                    r"(?:the\s+|a\s+)?$", re.IGNORECASE)
# A library file the machine has: the target ldd resolved a soname to ("libcudnn.so.8 => /usr/lib/.../libcudnn.so.8"),
# or a path in a listing (ls, find, locate) with the file's full version ("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.6.0";
# a loader's message names a soname, never a path with three version numbers). Only the libraries whose major
# is the CUDA (cudart, cuBLAS) or cuDNN major count.
_PRESENT = re.compile(r"=>\s*/\S*?/(lib(?:cudnn|cudart|cublas|cublasLt)\.so\.\d{1,2}(?:\.\d{1,3}){0,3})\b"
                      r"|(?<![A-Za-z0-9_.])/(?:[\w.+-]{1,80}/){1,20}(lib(?:cudnn|cudart|cublas|cublasLt)\.so\.\d{1,2}(?:\.\d{1,3}){2,3})\b")


# A CUDA a person says the machine has ("I have cuda 13", "the image ships CUDA 12.x", "my system has CUDA version
# 11.8"): where a text also names other CUDA majors (what a build wants, what was tried), this one is the machine's.
_INSTALLED = re.compile(
    r"(?:\b(?:i|we)\s+(?:have|had|got|'ve\s+got|have\s+installed|installed|am\s+using|'m\s+using|am\s+running"
    r"|'m\s+running|am\s+on|'m\s+on)"
    r"|\b(?:image|container|system|machine|box|server|host|laptop|pc|computer|distro)\s+(?:has|had|ships(?:\s+with)?"
    r"|comes\s+with|uses|runs|is\s+on)"
    r"|\bmy\s+cuda(?:\s+version)?\s+is)"
    r"\s+(?:only\s+)?(?:the\s+|a\s+)?(?:nvidia\s+)?(?:cuda[\s_-]?(?:toolkit\s*)?(?:version\s*)?v?)?"
    r"((?:1[0-3]|[89])(?:\.\d)?)(?![\d.]*\d)", re.IGNORECASE)


# A machine without an NVIDIA GPU, as people say it ("I do not have an nvidia card", "no NVIDIA GPU") or as an issue
# template's ticked answer to "Are you using a GPU?" ("- [x] Intel", "- [+] AMD"): the CUDA provider finds no driver.
_NOT_NVIDIA = re.compile(r"\b(?:(?:do\s*n[o']t|does\s*n[o']t|don't)\s+have\s+(?:an?\s+)?|\bno\s+)nvidia\s+(?:card|gpu|graphics)"
                         r"|^\s*[-*+]\s+\[[xX+]\]\s+(Intel|AMD|Mac|No\b)", re.IGNORECASE)


class EvidenceScanner:
    """Fed each (normalised) line; keeps the first item of each (fact, value), at most _MAX_ITEMS."""

    def __init__(self) -> None:
        self.items: list[Evidence] = []
        self._seen: set[tuple[str, str]] = set()
        self._line_no = 0

    def _add(self, fact: str, value: str, line: str) -> None:
        key = (fact, value)
        if key in self._seen or len(self.items) >= _MAX_ITEMS:
            return
        self._seen.add(key)
        self.items.append(Evidence(fact, value, line.strip()[:_LINE_CHARS], self._line_no))

    def feed(self, line: str) -> None:
        self._line_no += 1
        low = line.lower()
        if "require cudnn" in low:
            m = _REQUIRE.search(line)
            if m:
                self._add("ort.cudnn_major", m.group(1), line)
                self._add("ort.cuda_major", m.group(2), line)
            return  # the build's majors, not the machine's: no other rule reads this line
        form = "/cudnn" in low.replace(" ", "")
        paired = _PAIRED.search(line) if form else None
        if paired:  # an issue form's "CUDA/cuDNN version: 11.0.3 / 8.0.2.39": the first is CUDA's, the second cuDNN's
            self._add("cuda.version", ".".join(paired.group(1).split(".")[:2]), line)
            self._add("cudnn.version", paired.group(2), line)
        elif form and (single := _FORM_SINGLE.search(line)) is not None:
            # the same field answered with one version ("CUDA/cuDNN version: 10.1"): CUDA's, not a cuDNN 10.1
            self._add("cuda.version", single.group(1), line)
            paired = single
        for fact, needles, pattern in _RULES:
            if not any(n in low for n in needles) or (fact.startswith("cuda.") and "driver version" in low):
                continue  # nvidia-smi's "CUDA Version" is the driver's highest CUDA, not an installed one
            if paired and fact in ("cuda.version", "cudnn.version"):
                continue
            for m in pattern.finditer(line):
                value = _value(fact, m)
                if value and not (fact.startswith("cuda.") and _ASKED.search(line, max(0, m.start() - 40), m.start())):
                    self._add(fact, value, line)
        if "cuda" in low and "driver version" not in low:
            for m in _INSTALLED.finditer(line):
                if "cuda" in m.group(0).lower():
                    self._add("cuda.installed", m.group(1).split(".")[0], line)
        if ("nvidia" in low or "[" in low) and (nn := _NOT_NVIDIA.search(line)) is not None:
            self._add("gpu.not_nvidia", (nn.group(1) or "no NVIDIA GPU").strip(), line)
        if ".so." in low and ("=>" in low or "/lib" in low):
            self._present(line)
        if "unsupported sm" in low:
            m = _TRT_SM.search(line)
            if m:
                self._add("gpu.compute_capability", f"sm_{int(m.group(1), 16)}{m.group(2)}", line)
        if any(h in low for h in _GPU_HINTS):
            self._gpu(line)

    def _present(self, line: str) -> None:
        for m in _PRESENT.finditer(line):
            name = m.group(1) or m.group(2)
            stem, _, version = name.partition(".so.")
            parts = version.split(".")
            if stem == "libcudnn":
                self._add("cudnn.version", version if len(parts) >= 3 else parts[0], line)
            elif stem == "libcudart" and len(parts) >= 2:
                self._add("cuda.version", ".".join(parts[:2]), line)
            else:
                self._add("cuda.major", parts[0], line)

    def _gpu(self, line: str) -> None:
        cc = _CC.search(line)
        if cc:
            sm = f"sm_{cc.group(1)}{cc.group(2)}" if cc.group(1) else f"sm_{cc.group(3)}"
            self._add("gpu.compute_capability", sm, line)
        for m in _GPU_NAME.finditer(line):
            name = m.group(0).strip()
            known = gpu_names.sm_of_name(name)
            if known is None:
                continue
            self._add("gpu.name", name, line)
            self._add("gpu.compute_capability", known[0], line)

    def evidence(self) -> TextEvidence:
        return TextEvidence(tuple(self.items))


def _value(fact: str, m: re.Match[str]) -> str | None:
    groups = [g for g in m.groups() if g]
    if not groups and fact != "ort.copies":
        return None
    if fact == "cuda.version" and m.re.groups == 3 and m.group(2):
        return f"{m.group(2)}.{m.group(3)}"  # cu124 -> 12.4
    if fact == "cudnn.version" and m.group(4):  # CUDNN_VERSION as an integer: major*1000 (8.x), major*10000 (9.x)
        n = int(m.group(4))
        major, rest = (n // 10000, n % 10000) if n >= 10000 else (n // 1000, n % 1000)
        return f"{major}.{rest // 100}.{rest % 100}"
    if fact == "python.version" and groups[0].startswith("3") and "." not in groups[0]:
        return f"3.{groups[0][1:]}"  # \Python310\ -> 3.10
    if fact == "ort.copies":  # the package whose directory holds an onnxruntime/capi (onnxruntime's own)
        return m.group(1) or "onnxruntime"
    return groups[0]


@record
class TextEvidence:
    """The evidence of one text, with the questions the rules ask of it."""

    items: tuple[Evidence, ...] = ()

    def values(self, fact: str) -> list[str]:
        return [e.value for e in self.items if e.fact == fact]

    def first(self, fact: str) -> Evidence | None:
        return next((e for e in self.items if e.fact == fact), None)

    def majors(self, fact: str) -> set[int]:
        return {int(v.split(".")[0]) for v in self.values(fact) if v.split(".")[0].isdigit()}

    def python(self) -> str | None:
        values = self.values("python.version")
        return values[0] if len(set(values)) == 1 else None

    def sms(self) -> set[int]:
        """The compute capabilities of the GPUs the text shows, as numbers (86 for sm_86)."""
        return {int(v[3:].rstrip("abf")) for v in self.values("gpu.compute_capability") if v[3:].rstrip("abf").isdigit()}

    def sm(self) -> int | None:
        """The GPU's compute capability as a number (86 for sm_86), when the text shows one GPU."""
        sms = self.sms()
        return sms.pop() if len(sms) == 1 else None

    def ort_owners(self) -> list[str]:
        """The site-packages directories that hold an onnxruntime/capi: ``onnxruntime`` itself, and any
        other package that bundles its own copy."""
        return self.values("ort.copies")

    def cuda_versions(self, fact: str = "cuda.version") -> list[tuple[int, int]]:
        out = []
        for v in self.values(fact):
            head, _, minor = v.partition(".")
            if head.isdigit() and minor.isdigit():
                out.append((int(head), int(minor)))
        return out

    def about(self, *facts: str) -> list[Evidence]:
        return [e for e in self.items if e.fact in facts]
