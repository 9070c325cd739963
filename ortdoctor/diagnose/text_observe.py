"""What each line of an error text says: the observations the classifier decides on at the end.

A line records only what it says (a soname that could not be opened, a CUDA error code, a provider list
without CUDA, ORT's ``Require cuDNN 9.* and CUDA 12.*``); what that means is decided by
:mod:`.text_meaning` with everything the whole text showed. Each rule has cheap needles (lower-case
substrings, one must be in the line) before its regular expression runs; a needle search over the line
picks the rules to run. Memory stays bounded: a repeated observation is kept once, and at most
``MAX_HITS`` of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ortdoctor.core.ep_names import CUDA_EP
from ortdoctor.core.execution_providers import EXECUTION_PROVIDERS
from ortdoctor.core.record import record
from ortdoctor.diagnose.stack import StackScanner
from ortdoctor.diagnose.text_evidence import EvidenceScanner
from ortdoctor.diagnose.text_normalise import wrap_joiner
from ortdoctor.diagnose.textlines import normalise, windows

__all__ = ["KNOWN_CODES", "MAX_HITS", "Facts", "Hit", "Scanner"]

_MAX_EVIDENCE = 600
MAX_HITS = 2_000  # distinct observations kept; a log repeating one error a million times keeps one
_JOIN_TAIL = 300  # characters of the previous line a wrapped message may start in
_JOIN_HEAD = 600  # and of the next line it may end in
_STACK_LINES = 2_000  # every line up to here tells the stack; after it, the lines near an error do
_STACK_AFTER = 30  # lines after an error line whose binding markers are read (its stack trace)
_STACK_MAX = 10_000  # and no more lines than this in all: the verdict is long settled by then
# Binary input: a text whose first _SNIFF characters hold more than 1 in _BINARY_SHARE control characters
# (other than NUL, tab, line breaks, backspace and ESC, which logs hold: UTF-16 text shown as 8-bit, colour
# codes, progress bars) is not a log. Random bytes hold about 1 in 11; a log, a GBK or Shift-JIS text read
# as UTF-8 none. The rest of such a text is not scanned: 100 MB of it took 24 s to say nothing.
_SNIFF = 64 * 1024
_BINARY_SHARE = 33
_CONTROLS = "".join(chr(c) for c in range(32) if chr(c) not in "\0\b\t\n\v\f\r\x1b")

# --------------------------------------------------------------------------------------------------
# Observations
# --------------------------------------------------------------------------------------------------
@dataclass
class Hit:
    kind: str  # what the line said: "so_missing", "cuda_code", "dll_missing", ...
    subject: str  # the soname, the code, the DLL: with kind, the key that folds repeats
    evidence: str
    order: int
    data: dict[str, str] = field(default_factory=dict)
    rank: int = 0  # a weak observation (a generic message) ranks below a specific one


@dataclass
class Facts:
    """Whole-text facts the decisions need (each bounded: flags, counts, a few short strings)."""

    require: tuple[int, int] | None = None  # (cudnn, cuda) from "Require cuDNN 9.* and CUDA 12.*"
    cuda_path_set: bool = False
    banners: list[tuple[str, str]] = field(default_factory=list)  # ("when using [...]", "falling back to [...]")
    pending_when: str | None = None
    repl: bool = False  # a Python prompt (">>>") is in the text
    gpu_package_named: bool = False  # "onnxruntime-gpu==1.20.1" / "onnxruntime-gpu  1.20.1" listed
    cpu_package_named: bool = False
    cudnn_init_dirs: dict[str, str] = field(default_factory=dict)  # LD_DEBUG "calling init": dir -> a soname


class Scanner:
    def __init__(self) -> None:
        self.hits: dict[tuple[str, str], Hit] = {}
        self.facts = Facts()
        self.stack = StackScanner()
        self.evidence = EvidenceScanner()
        self.order = 0
        self._prev_tail = ""
        self._prev_len = 0  # the previous line's length as pasted: a line cut at a terminal's width
        self._stack_fed = 0
        self._stack_after = 0
        self._sniffed = 0  # characters of the text's start counted for the binary sniff
        self._controls = 0
        self.binary = False  # the text is not a log (see _SNIFF): the rest of it is not scanned

    def seen(self, kind: str, subject: str) -> bool:
        """Whether this observation is already recorded (an observer skips its costlier work then)."""
        return (kind, subject) in self.hits or len(self.hits) >= MAX_HITS

    def add(self, kind: str, subject: str, line: str, data: dict[str, str] | None = None, *, rank: int = 0,
            at: int = 0) -> None:
        key = (kind, subject)
        if key in self.hits or len(self.hits) >= MAX_HITS:
            return
        self.hits[key] = Hit(kind, subject, _evidence(line, at), self.order, dict(data or {}), rank)

    def feed(self, raw: str) -> None:
        if self._sniffed < _SNIFF:
            self._sniffed += len(raw)
            self._controls += sum(map(raw.count, _CONTROLS))
            self.binary = self._controls * _BINARY_SHARE > self._sniffed and self._sniffed >= _SNIFF
        if self.binary:
            return
        for piece in windows(raw):
            line = normalise(piece)
            self.order += 1
            low = line.lower()
            found = _needles_in(low)
            if found:
                self._stack_after = _STACK_AFTER
                self._scan(line, found)
            if self._stack_fed < _STACK_MAX and (self.order <= _STACK_LINES or self._stack_after > 0):
                self._stack_fed += 1
                self.stack.feed(line)
                self.evidence.feed(line)
            self._stack_after -= 1
            if self._prev_tail and line[:1] not in ("", "["):
                self._scan_join(line, low, found)
            self._prev_tail = line[-_JOIN_TAIL:].rstrip() if line.strip() else ""
            self._prev_len = len(raw)

    def _scan_join(self, line: str, low: str, found: dict[str, int]) -> None:
        """Read the previous line's end and this line's start as one, for a message a terminal wrapped:
        only the rules whose needle spans the join, or opens this line, can add anything."""
        rest = line.lstrip(" >")
        offset = len(line) - len(rest)
        head = [n for n, i in found.items() if i - offset < 40]
        edge = f"{self._prev_tail[-_NEEDLE_MAX:]}{wrap_joiner(self._prev_len)}{rest[:_NEEDLE_MAX]}".lower()
        cut = min(len(self._prev_tail), _NEEDLE_MAX)
        spanning = {n: i for n, i in _needles_in(edge).items() if i < cut < i + len(n)}
        spanning.update((n, 0) for n in head)
        if spanning:
            joined = f"{self._prev_tail}{wrap_joiner(self._prev_len)}{rest[:_JOIN_HEAD]}"
            self._scan(joined, spanning, boundary=len(self._prev_tail))

    def _scan(self, line: str, found: dict[str, int], boundary: int | None = None) -> None:
        rules: set[int] = set()
        for needle in found:
            rules.update(_RULES_BY_NEEDLE[needle])
        for index in sorted(rules):
            rule = _RULES[index]
            for m in rule.pattern.finditer(line):
                if boundary is not None and not (m.start() < boundary < m.end()):
                    continue  # a joined line only adds what spans the join
                rule.observe(self, m, line)


Observer = Callable[[Scanner, "re.Match[str]", str], None]


@record
class Rule:
    needles: tuple[str, ...]  # cheap lower-case prefilter: one must occur in the line
    pattern: re.Pattern[str]
    observe: Observer


def _evidence(line: str, at: int = 0) -> str:
    line = line.strip()
    if len(line) <= _MAX_EVIDENCE:
        return line
    start = max(0, min(at - 200, len(line) - _MAX_EVIDENCE + 3))
    cut = line[start : start + _MAX_EVIDENCE - 6]
    return ("..." if start else "") + cut + "..."


def _simple(kind: str, *, rank: int = 0, subject: int | str = 0) -> Observer:
    def observe(s: Scanner, m: re.Match[str], line: str) -> None:
        subj = m.group(subject) if isinstance(subject, int) else subject
        s.add(kind, subj or "", line, rank=rank, at=m.start())

    return observe


# -- library loading --------------------------------------------------------------------------------
_REQUESTERS = (
    ("tensorrt", re.compile(r"providers_tensorrt|TryGetProviderInfo_TensorRT", re.IGNORECASE)),
    ("shared", re.compile(r"providers_shared|ProviderSharedLibrary", re.IGNORECASE)),
    ("genai", re.compile(r"onnxruntime_genai|Cuda interface not available|CreateOgaModel", re.IGNORECASE)),
    ("provider", re.compile(r"providers_cuda|ProviderLibrary::Get|TryGetProviderInfo_CUDA|Failed to load library",
                            re.IGNORECASE)),
    ("import", re.compile(r"\b(?:ImportError|OSError|ModuleNotFoundError)\b|Error while finding module")),
)


def _requester(line: str, at: int = 0) -> str:
    """Who asked for a library, from the message around it (the provider bridge, an import, genai)."""
    near = line[max(0, at - 600) : at + 200]
    return next((name for name, pattern in _REQUESTERS if pattern.search(near)), "")


def _so_missing(s: Scanner, m: re.Match[str], line: str) -> None:
    soname = m.group(1).rsplit("/", 1)[-1]
    if not s.seen("so_missing", soname):
        s.add("so_missing", soname, line, {"requester": _requester(line, m.start())}, at=m.start())


#: glibc's "cannot open shared object file" and its translations, as machines with another LANG print them
#: (each seen in public logs: zh_CN in two wordings, ja, de, fr, es, ru, ko).
_DLERROR_OPEN = ("cannot open shared object file", "无法打开共享对象文件", "无法打开共享目标文件",
                 "共有オブジェクトファイルを開けません", "Kann die Shared-Object-Datei nicht öffnen",
                 "Ne peut ouvrir le fichier d'objet partagé", "no se puede abrir el archivo del objeto compartido",
                 "невозможно открыть разделяемый объектный файл", "공유 객체 파일을 열 수 없습니다")

#: Words with which people say a library is missing, in prose rather than in a loader's message.
_PROSE_MISSING = ("lost of", "is missing", "are missing", "missing ", "not found", "cannot find", "can't find",
                  "could not find", "couldn't find", "unable to find", "does not have", "doesn't have",
                  "no such file", "not exist", "searches for", "looks for", "looking for",
                  # the same in Chinese and Japanese: "can't find", "lacking", "missing", "not found", "look for"
                  "找不到", "缺少", "缺失", "未找到", "寻找", "見つかりません", "見つからない")
_PROSE_LIBRARY = re.compile(
    r"(?<!\w)((?:lib)?(?:cudnn|cublas|cudart|cufft|curand|cusparse|cusolver|nvinfer|nvonnxparser|nvrtc"
    r"|nvJitLink)[\w+-]{0,40}(?:\.so(?:\.\d{1,6}){1,3}|\.dll))\b", re.IGNORECASE)


#: A loader's own message on the line: it says which library is missing (often not the one it was loading).
_LOADER_WORDING = (*(p.lower() for p in _DLERROR_OPEN), "error code", "which depends on", "loadlibrary", "load library",
                   "unable to load", "failed to dlopen")


def _prose_missing(s: Scanner, m: re.Match[str], line: str) -> None:
    name = m.group(1)
    low = line.lower()
    kind = "dll_missing" if name.lower().endswith(".dll") else "so_missing"
    if kind == "so_missing" and not name.lower().startswith("lib"):
        return
    # one library on the line, and no loader message: otherwise which of them is missing is the loader's to say
    if any(w in low for w in _LOADER_WORDING) or {x.lower() for x in _PROSE_LIBRARY.findall(line)} != {name.lower()}:
        return
    if not s.seen("so_missing", name) and not s.seen("dll_missing", name):
        s.add(kind, name, line, {"requester": _requester(line, m.start()), "prose": "1"}, at=m.start())


def _trt_part_missing(s: Scanner, m: re.Match[str], line: str) -> None:
    # the file is there but the kernel refused to map it ("cannot enable executable stack", a hardened kernel or
    # glibc 2.41): another cause than a missing part
    if "executable stack" not in line:
        s.add("trt_part_missing", m.group(1), line, at=m.start())


def _torch_archs(s: Scanner, m: re.Match[str], line: str) -> None:
    """The architectures a PyTorch build carries, one observation each (data for ``torch_arch``, no finding)."""
    # (PyTorch before 2.8 names only its minimum for a GPU that is too old: that is the oldest it carries)
    for sm in re.findall(r"sm_(\d{2,3})", m.group(1)) if m.group(1) else [
            f"{m.group(2)}{m.group(3)}" if m.group(2) else f"{m.group(4)}{m.group(5)}"]:
        s.add("torch_archs", sm, line, at=m.start())


def _so_dlopen(s: Scanner, m: re.Match[str], line: str) -> None:
    if not s.seen("so_missing", m.group(1)):
        s.add("so_missing", m.group(1), line, {"requester": _requester(line, m.start())}, at=m.start())


def _undefined_symbol(s: Scanner, m: re.Match[str], line: str) -> None:
    lib = m.group(1).rsplit("/", 1)[-1]
    low = line.lower()
    if "tensorrt" in low or lib.startswith("libnvinfer") or lib.startswith("libnvonnxparser"):
        s.add("trt_create_failed", lib, line, {"symbol": m.group(2)}, at=m.start())


def _dll_missing(s: Scanner, m: re.Match[str], line: str) -> None:
    dll = next((g for g in m.groups() if g), "").rsplit("\\", 1)[-1]
    if not dll.lower().endswith(".dll"):
        dll += ".dll"
    if not s.seen("dll_missing", dll):
        s.add("dll_missing", dll, line, {"requester": _requester(line, m.start())}, at=m.start())


def _dll_error_code(s: Scanner, m: re.Match[str], line: str) -> None:
    dll, code = m.group(1), m.group(2)
    if code == "127":
        s.add("procedure_missing", dll, line, at=m.start())
    else:
        s.add("dll_missing", dll, line, {"requester": _requester(line, m.start())}, at=m.start())


def _loadlibrary(s: Scanner, m: re.Match[str], line: str) -> None:
    code = m.group(1)
    target = (m.group(2) or "").strip().rsplit("\\", 1)[-1].rsplit("/", 1)[-1]
    low = target.lower()
    if "providers_tensorrt" in low:
        s.add("trt_unavailable", "", line, {"dll": target}, at=m.start())
    elif "providers_shared" in low:
        s.add("shared_missing", target, line, at=m.start())
    elif code == "127":
        s.add("procedure_missing", target, line, at=m.start())
    else:
        s.add("provider_126", target or "onnxruntime_providers_cuda.dll", line,
              {"java_temp": "1" if "onnxruntime-java" in line else ""}, at=m.start())


def _dll_load_failed(s: Scanner, m: re.Match[str], line: str) -> None:
    module, why = m.group(1), m.group(2).lower()
    if "initiali" in why or "初始化" in why:
        s.add("dll_init_failed", module, line, at=m.start())
    elif "procedure" in why:
        s.add("procedure_import", module, line, at=m.start())
    elif module == "onnxruntime_genai":
        s.add("genai_dll_missing", module, line, at=m.start())
    else:
        s.add("msvc_missing", module, line, at=m.start())


# -- CUDA errors -------------------------------------------------------------------------------------
#: The CUDA runtime error codes (cudaError_t) :mod:`.text_meaning` has a finding for.
KNOWN_CODES = frozenset({2, 3, 35, 46, 100, 101, 209, 222, 700, 803, 804, 999})

_NAMED_ERRORS: dict[str, int] = {
    "cudaErrorInsufficientDriver": 35,
    "CUDA driver version is insufficient for CUDA runtime version": 35,
    "cudaErrorUnsupportedPtxVersion": 222,
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": 222,
    "the provided PTX was compiled with an unsupported toolchain": 222,
    "cudaErrorNoDevice": 100,
    "no CUDA-capable device is detected": 100,
    "cudaErrorInvalidDevice": 101,
    "invalid device ordinal": 101,
    "cudaErrorNoKernelImageForDevice": 209,
    "no kernel image is available for execution on the device": 209,
    "forward compatibility was attempted on non supported HW": 804,
    "cudaErrorCompatNotSupportedOnDevice": 804,
    "cudaErrorSystemDriverMismatch": 803,
    "cudaErrorMemoryAllocation": 2,
    "cudaErrorIllegalAddress": 700,
    "an illegal memory access was encountered": 700,
    "CUDA failed with error initialization error": 3,
    "cuInit failed: initialization error": 3,
    "CUDA error executing cudaSetDevice(GetDeviceId())": 3,
}
_GPU_ID = re.compile(r"\bGPU=(-?\d{1,12})")
_DEVICE_ID_MINUS_ONE = re.compile(r"device ?id\S*\s*(?:is\s*)?(?:equal to|=|==)\s*-1", re.IGNORECASE)


#: A TensorRT engine build timing its tactics: an allocation failing there is the build running out of memory.
_TRT_BUILDING = ("autotuning", "skipping tactic", "tactic ")


def _cuda_code(s: Scanner, m: re.Match[str], line: str) -> None:
    code = int(m.group(1))
    if code == 2 and any(w in line.lower() for w in _TRT_BUILDING):
        s.add("trt_build", "memory", line, at=m.start())
        return
    if code in KNOWN_CODES or code == 77:
        _add_code(s, 700 if code == 77 and "illegal memory" in line.lower() else code, line, m.start())


def _named_error(s: Scanner, m: re.Match[str], line: str) -> None:
    text = m.group(0).lower()
    code = next((c for name, c in _NAMED_ERRORS.items() if name.lower() == text), None)
    if code is not None:
        _add_code(s, code, line, m.start())


def _invalid_device_id(s: Scanner, m: re.Match[str], line: str) -> None:
    """onnxruntime checks the ``device_id`` provider option itself before CUDA is asked (seen with 1.31.1):
    ``Invalid device ID: 1, must be between 0 (inclusive) and 1 (exclusive).`` It is CUDA's error 101."""
    s.add("cuda_code", "101", line, {"gpu": m.group(1), "visible": m.group(2)}, at=m.start())


def _add_code(s: Scanner, code: int, line: str, at: int) -> None:
    data: dict[str, str] = {}
    gpu = _GPU_ID.search(line)
    if gpu:
        data["gpu"] = gpu.group(1)
    elif _DEVICE_ID_MINUS_ONE.search(line):
        data["gpu"] = "-1"
    s.add("cuda_code", str(code), line, data, at=at)


# -- providers ---------------------------------------------------------------------------------------
_GPU_EPS = tuple(dict.fromkeys(p.name for p in EXECUTION_PROVIDERS))  # the GPU providers of the EP table


def _provider_list(s: Scanner, m: re.Match[str], line: str) -> None:
    listed = m.group(1) or ""
    if "Applied providers" in line:  # insightface's per-model banner: a symptom, read by its own rule
        return
    if "ExecutionProvider" in listed and not any(ep in listed for ep in _GPU_EPS):
        s.add("cpu_only_list", "", line, {"form": "list"}, at=m.start())


def _cpu_only(form: str) -> Observer:
    def observe(s: Scanner, m: re.Match[str], line: str) -> None:
        s.add("cpu_only_list", "", line, {"form": form}, at=m.start())

    return observe


def _choice_without_cuda(s: Scanner, m: re.Match[str], line: str) -> None:
    if "cuda" not in m.group(1).lower():
        s.add("cpu_only_list", "", line, {"form": "choices"}, at=m.start())


def _optimum_available(s: Scanner, m: re.Match[str], line: str) -> None:
    if CUDA_EP not in m.group(0).split("are [", 1)[-1]:
        s.add("cpu_only_list", "", line, {"form": "optimum"}, at=m.start())


def _banner_when(s: Scanner, m: re.Match[str], line: str) -> None:
    s.facts.pending_when = m.group(1)


def _banner_fallback(s: Scanner, m: re.Match[str], line: str) -> None:
    when = s.facts.pending_when or ""
    if len(s.facts.banners) < 50:
        s.facts.banners.append((when, m.group(1)))
    s.facts.pending_when = None
    if CUDA_EP not in m.group(1) and (CUDA_EP in when or not when):
        s.add("fell_back_to_cpu", "", line, {"when": when}, rank=3, at=m.start())


def _require(s: Scanner, m: re.Match[str], line: str) -> None:
    if s.facts.require is None:
        s.facts.require = (int(m.group(1)), int(m.group(2)))
    s.add("ep_not_created", "", line, rank=3, at=m.start())


def _cuda_path(s: Scanner, m: re.Match[str], line: str) -> None:
    s.facts.cuda_path_set = True
    s.add("cuda_path_set", "", line, rank=2, at=m.start())


def _repl(s: Scanner, m: re.Match[str], line: str) -> None:
    s.facts.repl = True


def _package_listed(s: Scanner, m: re.Match[str], line: str) -> None:
    if m.group(1):
        s.facts.gpu_package_named = True
    else:
        s.facts.cpu_package_named = True


def _both_named(s: Scanner) -> None:
    s.facts.gpu_package_named = True
    s.facts.cpu_package_named = True


def _ld_debug_init(s: Scanner, m: re.Match[str], line: str) -> None:
    directory, soname = m.group(1), m.group(2)
    if directory not in s.facts.cudnn_init_dirs and len(s.facts.cudnn_init_dirs) < 20:
        s.facts.cudnn_init_dirs[directory] = soname
        s.add("cudnn_init_dir", directory, line, {"soname": soname}, rank=0, at=m.start())


def _kernel_not_found(s: Scanner, m: re.Match[str], line: str) -> None:
    op = m.group(1)
    kind = "quantized_op_on_cpu" if op.startswith(("QLinear", "QGemm")) or op.endswith("Integer") else "op_no_kernel"
    s.add(kind, op, line, {"where": "CUDA"}, at=m.start())


def _no_implementation(s: Scanner, m: re.Match[str], line: str) -> None:
    s.add("op_no_kernel", f"{m.group(1)}({m.group(2)})", line, {"op": m.group(1), "opset": m.group(2)}, at=m.start())


_RULES: tuple[Rule, ...] = (
    # glibc's dlerror: "<soname>: cannot open shared object file", wherever it appears, in the languages its
    # translations print it in (a machine with another LANG pastes those)
    Rule(tuple(p.lower() for p in _DLERROR_OPEN),
          re.compile(r"([\w+.-]{1,200}\.so(?:\.\d{1,6}){0,4})\s*[:：]\s*(?:"
                     + "|".join(re.escape(p) for p in _DLERROR_OPEN) + ")", re.IGNORECASE), _so_missing),
    # cuDNN 9's own loader, when a sub-library it opens by name is not there
    Rule(("unable to load any of {",),
          re.compile(r"Unable to load any of \{(lib[\w+.-]{1,100}?\.so\.\d{1,3})\b"), _so_dlopen),
    Rule(("failed to dlopen",), re.compile(r"Failed to dlopen (lib[\w+.-]{1,100}\.so(?:\.\d{1,6}){0,4})"),
          _so_dlopen),
    Rule(("undefined symbol",), re.compile(r"([\w+./-]{1,300}\.so(?:\.\d{1,6}){0,4}): undefined symbol: (\S{1,200})"),
          _undefined_symbol),
    Rule(("not found (required by", "not found"),
          re.compile(r"version [`'‘\"]?((?:GLIBCXX|CXXABI|GLIBC)_[\d.]{1,12})[`'’\"]? not found"),
          _simple("glibcxx", subject=1)),
    # Windows DLL loading
    Rule(("which is missing",), re.compile(r"([\w.-]{1,80}\.dll)\"? which is missing", re.IGNORECASE), _dll_missing),
    Rule(("could not locate",), re.compile(r"Could not locate ([\w.-]{1,80}\.dll)", re.IGNORECASE), _dll_missing),
    Rule(("error code",), re.compile(r"Could not load library ([\w.-]{1,80}\.dll)\. Error code (\d{1,4})",
                                      re.IGNORECASE), _dll_error_code),
    Rule(("not found",), re.compile(r"LoadLibrary\(\)\s*:\s*'([\w.-]{1,80}\.dll)' not found", re.IGNORECASE),
          _dll_missing),
    # .NET names the DLL as the DllImport does, often without its extension ("Unable to load DLL 'onnxruntime'")
    Rule(("unable to load dll",), re.compile(r"Unable to load DLL '([\w.-]{1,80}?)(?:\.dll)?'", re.IGNORECASE),
          _dll_missing),
    Rule(("loadlibrary failed with error",),
          # also as people retell it, in Markdown code: "`LoadLibrary failed with error 126` when trying to use
          # `onnxruntime_providers_cuda.dll`"
          re.compile(r"LoadLibrary failed with error (\d{1,5})`?(?:\s*\"[^\"]{0,200}\")?\s*when trying to (?:load|use)"
                     r"\s*[\"`]?([^\"`\n]{1,400}?\.dll)?", re.IGNORECASE), _loadlibrary),
    Rule(("ensure", "providers_shared"),
          re.compile(r"ProviderSharedLibrary::Ensure\]? Failed to load library, error code: (\d+)"
                     r"|Failed to load library (?:\S*/)?(libonnxruntime_providers_shared\.so)"),
          _simple("shared_missing", subject="libonnxruntime_providers_shared")),
    Rule(("dll load failed while importing",),
          re.compile(r"DLL load failed while importing (\w{1,80}):\s*(.{0,120})", re.IGNORECASE), _dll_load_failed),
    Rule(("winerror 1114", "error 1114"), re.compile(r"WinError 1114|error 1114", re.IGNORECASE),
          _simple("dll_init_failed", subject="")),
    Rule(("visual c++ redistributable is not installed",),
          re.compile(r"Visual C\+\+ Redistributable is not installed", re.IGNORECASE),
          _simple("msvc_missing", subject="")),
    Rule(("winerror 127", "procedure could not be found"),
          re.compile(r"WinError 127|The specified procedure could not be found", re.IGNORECASE),
          lambda s, m, line: None if "while importing" in line else s.add("procedure_missing", "", line,
                                                                           at=m.start())),
    Rule(("could not find the cuda libraries",),
          re.compile(r"Could not find the CUDA libraries\. Please set the CUDA_PATH", re.IGNORECASE),
          _simple("genai_dll_missing", rank=2, subject="cuda_path")),
    Rule(("cannot import name",),
          re.compile(r"cannot import name [`'‘’\"]?(get_all_providers|get_available_providers|RunOptions|"
                     r"InferenceSession|SessionOptions)\b"), _simple("native_import_failed", rank=2, subject="")),
    Rule(("has no attribute",),
          re.compile(r"module 'onnxruntime' has no attribute '(\w{1,60})'"), _simple("install_damaged", subject=1)),
    # CUDA, cuBLAS, cuDNN
    Rule(("cuda failure", "cuda error"), re.compile(r"CUDA (?:failure|error)\s+(\d{1,4})\b", re.IGNORECASE),
          _cuda_code),
    Rule(("invalid device id",),
          re.compile(r"Invalid device ID: (-?\d{1,12}), must be between 0 \(inclusive\) and (\d{1,6}) \(exclusive\)"),
          _invalid_device_id),
    Rule(tuple(k.lower() for k in _NAMED_ERRORS),
          re.compile("|".join(re.escape(k) for k in _NAMED_ERRORS), re.IGNORECASE), _named_error),
    Rule(("cublas_status_",), re.compile(r"(CUBLAS_STATUS_[A-Z_]{2,40})"), _simple("cublas_status", subject=1)),
    Rule(("cudnn_status_", "cudnn failure"),
          re.compile(r"(CUDNN_STATUS_[A-Z_]{2,40})|CUDNN failure (\d{1,4})(?!\d|: CUDNN_STATUS)"),
          lambda s, m, line: s.add(
              "cudnn_sublibrary" if m.group(1) == "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH" else "cudnn_status",
              m.group(1) or f"CUDNN failure {m.group(2)}", line, at=m.start())),
    Rule(("calling init:",), re.compile(r"calling init: (\S{0,300}/)(libcudnn\w{0,40}\.so\.\d{1,3})"), _ld_debug_init),
    Rule(("with link time reference",),
          re.compile(r"symbol \S+ version (\S+) not defined in file (\S+) with link time reference"),
          _simple("link_time_reference", subject=2)),
    Rule(("driver/library version mismatch", "nvml_error_lib_rm_version_mismatch"),
          re.compile(r"Driver/library version mismatch|NVML_ERROR_LIB_RM_VERSION_MISMATCH", re.IGNORECASE),
          _simple("driver_library_mismatch", subject="")),
    Rule(("nvml shared library not found", "libnvidia-ml.so.1 not found"),
          re.compile(r"NVML Shared Library Not Found|libnvidia-ml\.so\.1 not found", re.IGNORECASE),
          lambda s, m, line: s.add("so_missing", "libnvidia-ml.so.1", line, {"requester": ""}, at=m.start())),
    Rule(("is not a symbolic link",), re.compile(r"/usr/lib/wsl/lib/libcuda\.so(?:\.1)? is not a symbolic link"),
          lambda s, m, line: s.add("so_missing", "libcuda.so", line, {"requester": "", "symlink": "1"},
                                   at=m.start())),
    Rule(("failed to allocate memory",),
          re.compile(r"Failed to allocate memory for requested buffer of size (\d{1,20})", re.IGNORECASE),
          _simple("arena_oom", subject="")),
    Rule(("typeinfo_ptr", "graph replay fails"),
          re.compile(r"expected [`'\"]?typeinfo_ptr[`'\"]? to not be null|graph replay fails", re.IGNORECASE),
          _simple("cuda_graph_bug", subject="")),
    Rule(("cuda graph",),
          re.compile(r"cannot use the CUDA Graph feature|CUDA Graphs?\b.{0,80}(?:not supported|cannot|fail)",
                     re.IGNORECASE), _simple("cuda_graph", subject="")),
    # providers
    Rule(("not in available provider",),
          re.compile(r"Specified provider '(?:CUDA|Tensorrt)ExecutionProvider' is not in available provider"),
          _cpu_only("warning")),
    Rule(("does not contain a subset of available providers",),
          re.compile(r"does not contain a subset of available providers \[([^\]]{0,300})\]"), _provider_list),
    Rule(("executionprovider'",),
          re.compile(r"(?:^|providers:?|[•*>]\s*)\s*\[((?:\s*'\w{1,40}ExecutionProvider',?){1,8}\s*)\]"),
          _provider_list),
    Rule(("cudaexecutionprovider not available",), re.compile(r"CUDAExecutionProvider not available"),
          _cpu_only("missing")),
    Rule(("invalid choice",), re.compile(r"invalid choice: 'cuda' \(choose from ([^)]{0,200})\)"),
          _choice_without_cuda),
    Rule(("not enabled in this build",), re.compile(r"CUDA execution provider is not enabled in this build"),
          _cpu_only("build")),
    Rule(("compile onnxruntime with cuda",), re.compile(r"Please compile ONNXRuntime with CUDA", re.IGNORECASE),
          _cpu_only("dylib")),
    Rule(("asked to use cudaexecutionprovider",),
          re.compile(r"Asked to use CUDAExecutionProvider as an ONNX Runtime execution provider, but the available "
                     r"execution providers are \[[^\]]{0,300}\]"), _optimum_available),
    Rule(("entry point named",),
          re.compile(r"Unable to find an entry point named 'OrtSessionOptionsAppendExecutionProvider_CUDA'"),
          _simple("both_packages", subject="csharp")),
    Rule(("gpu dependencies are not loaded", "multiple onnxruntime packages are installed"),
          re.compile(r"GPU dependencies are not loaded|multiple onnxruntime packages are installed", re.IGNORECASE),
          _simple("both_packages", subject="optimum")),
    Rule(("onnxruntime==", "onnxruntime-gpu==", "onnxruntime ", "onnxruntime-gpu "),
          re.compile(r"(?:^|[\s+|`])onnxruntime(-gpu)?(?:==|\s{1,30})v?1\.\d{1,2}\.\d"), _package_listed),
    # both packages named as installed in one breath: "pip install onnxruntime onnxruntime-gpu", "I install both
    # `onnxruntime` and `onnxruntime-gpu`" (they share one import package, the last one installed wins its files)
    Rule(("install",),
          re.compile(r"\binstall(?:ed|ing|s)?\b[^.\n]{0,40}?(?<![\w-])[`'\"]?onnxruntime[`'\"]?(?![\w-])[^.\n]{0,40}?"
                     r"onnxruntime-gpu|\binstall(?:ed|ing|s)?\b[^.\n]{0,40}?onnxruntime-gpu[`'\"]?[^.\n]{0,40}?"
                     r"(?<![\w-])[`'\"]?onnxruntime[`'\"]?(?![\w-])", re.IGNORECASE),
          lambda s, m, line: _both_named(s)),
    Rule((">>>",), re.compile(r"^[\s>`]*>>>"), _repl),
    Rule(("explicitly set the providers parameter",),
          re.compile(r"required to explicitly set the providers parameter"), _simple("providers_not_set", subject="")),
    # conda-forge builds onnxruntime per variant; the build string names it ("onnxruntime-1.20.1-py312h414cfab_0_cpu",
    # or `conda list`'s "onnxruntime  1.20.1  py312h..._cpu  conda-forge"): the _cpu one has no CUDA provider
    Rule(("_cpu",), re.compile(r"\bonnxruntime-1\.\d{1,2}\.\d{1,2}-[\w.]{1,60}?_cpu\b"
                               r"|^\s*onnxruntime\s+1\.\d{1,2}\.\d{1,2}\s+[\w.]{1,60}?_cpu\b"), _cpu_only("conda")),
    # TensorRT's own loader, for a part of TensorRT it opens on demand (the builder resource, plugins): TensorRT
    # itself loaded, so the install is incomplete ("createInferBuilder: Error Code 6: API Usage Error (Unable to load
    # library: nvinfer_builder_resource_10.dll)")
    Rule(("unable to load library",),
          re.compile(r"Unable to load library:?\s*((?:lib)?nvinfer_[\w-]{1,40}?(?:_\d{1,2})?\.(?:dll|so(?:\.\d{1,3}){0,3}))",
                     re.IGNORECASE), _trt_part_missing),
    Rule(("applied providers:",), re.compile(r"Applied providers: \['CPUExecutionProvider'\]"),
          _simple("cpu_applied", rank=3, subject="")),
    Rule(("were not assigned to the preferred execution providers",),
          re.compile(r"Some nodes were not assigned to the preferred execution providers"),
          _simple("nodes_not_assigned", rank=3, subject="")),
    # TensorRT
    Rule(("tensorrtexecutionprovider", "tensorrt libraries", "registertensorrtplugins"),
          re.compile(r"Failed to create TensorrtExecutionProvider|Please install TensorRT libraries"
                     r"|RegisterTensorRTPluginsAsCustomOps", re.IGNORECASE),
          _simple("trt_unavailable", subject="")),
    # TensorRT building an engine (the provider compiles one per subgraph): why the build failed
    Rule(("cuda error in allocate", "could not be allocated", "cuda runtime (out of memory)", "unsupported sm",
          "sufficient workspace", "could not find any implementation for node",
          "is not supported by this tensorrt release", "failed to create engine from network",
          "failed to build tensorrt engine", "failed to create tensorrt engine", "engine could not be created"),
          re.compile(r"(Cuda Error in allocate: 2|Requested amount of GPU memory \(\d{1,20} bytes\) could not be "
                     r"allocated)|(Error Code \d{1,3}: Cuda Runtime \(out of memory\))"
                     r"|(Unsupported SM|Target GPU SM \d{2,3} is not supported by this TensorRT release)"
                     r"|(?:insufficient|not have sufficient) (workspace)|Could not find any (implementation) for node"
                     r"|(failed to create engine from network|Failed to build TensorRT engine"
                     r"|Failed to create TensorRT engine|Engine could not be created from network)", re.IGNORECASE),
          # TensorRT's allocator failing ("Error Code 1: Cuda Runtime (out of memory)") happens building an engine
          # or loading one: "allocator", not "memory"
          lambda s, m, line: s.add("trt_build", "memory" if m.group(1) else "allocator" if m.group(2) else
                                   "sm" if m.group(3) else "workspace" if m.group(4) or m.group(5) else "engine", line,
                                   at=m.start())),
    # the loader's wording before 1.8: "ProviderLibrary] Failed to load library, error code: 126" and then
    # the C API function that asked for it
    Rule(("failed to load shared library",),
          re.compile(r"OrtSessionOptionsAppendExecutionProvider_(Tensorrt|CUDA|Cuda): Failed to load shared library"),
          lambda s, m, line: s.add("trt_unavailable", "", line, {"dll": "onnxruntime_providers_tensorrt"},
                                   at=m.start()) if m.group(1) == "Tensorrt" else
          s.add("provider_126", "onnxruntime_providers_cuda", line, at=m.start())),
    Rule(("engine", "serializ", "version tag"),
          re.compile(r"engine plan file is not compatible|Version tag does not match|Serialization assertion"
                     r"|Engine deserialization failed|could not deserialize engine|Serialization Error in verifyHeader",
                     re.IGNORECASE), _simple("trt_engine", subject="")),
    Rule(("when using",), re.compile(r"when using \[([^\]]{0,300})\]"), _banner_when),
    Rule(("falling back to",), re.compile(r"Falling back to \[([^\]]{0,300})\]"), _banner_fallback),
    # kernels and ops
    Rule(("kernel not found in registries",), re.compile(r"CUDA kernel not found in registries for Op type: (\w{1,60})"),
          _kernel_not_found),
    Rule(("could not find an implementation for",),
          re.compile(r"Could not find an implementation for (?:the node )?(\w{1,60})\((\d{1,3})\)"),
          _no_implementation),
    # Python packages
    Rule(("numpy 1.x", "_array_api not found", "numpy.core.multiarray failed to import"),
          re.compile(r"compiled using NumPy 1\.x cannot be run in|_ARRAY_API not found"
                     r"|numpy\.core\.multiarray failed to import", re.IGNORECASE), _simple("numpy_abi", subject="")),
    Rule(("is deprecated",), re.compile(r"THIS PROJECT '(nvidia-[\w-]+-cu13)' IS DEPRECATED", re.IGNORECASE),
          _simple("nvidia_stub", subject=1)),
    Rule(("no matching distribution found for onnxruntime", "not a supported wheel on this platform"),
          re.compile(r"No matching distribution found for onnxruntime|is not a supported wheel on this platform",
                     re.IGNORECASE), _simple("no_wheel", subject="")),
    Rule(("cudnn is not available",), re.compile(r"cuDNN is not available\. Install cuDNN"),
          _simple("cudnn_unavailable", subject="")),
    # ORT's own summary lines: the build's majors, and consequences
    Rule(("require cudnn",), re.compile(r"Require cuDNN (\d{1,2})\.\* and CUDA (\d{1,2})\.\*"), _require),
    Rule(("failed to create cudaexecutionprovider", "fallback to cpu ep has been explicitly disabled"),
          re.compile(r"Failed to create\s+CUDAExecutionProvider|fallback to CPU EP has been explicitly disabled",
                     re.IGNORECASE), _simple("ep_not_created", rank=3, subject="")),
    Rule(("cuda_path is set but cuda",),
          re.compile(r"CUDA_PATH is set but CUDA wasn'?t\s+able to be loaded", re.IGNORECASE), _cuda_path),
    # NVIDIA's container images check the host driver at start: "This container was built for NVIDIA Driver
    # Release 535.86 or later, but version 510.85.02 was detected and compatibility mode is UNAVAILABLE."
    Rule(("this container was built for nvidia driver release",),
          re.compile(r"This container was built for NVIDIA Driver Release (\d{3}(?:\.\d{1,3}){0,2}) or later",
                     re.IGNORECASE), _simple("container_driver", subject=1)),
    # ... and the GPU: "WARNING: Detected NVIDIA GeForce RTX 3090 GPU, which is not yet supported in this version of
    # the container" (then "ERROR: No supported GPU(s) detected to run this container")
    Rule(("not yet supported in this version of the container",),
          re.compile(r"Detected (?:NVIDIA )*(.{1,60}?) GPU, which is not yet supported in this version of the container",
                     re.IGNORECASE), _simple("container_gpu", subject=1)),
    # PyTorch's own check of the GPU against the architectures its build carries, in its two wordings: "<GPU> with
    # CUDA capability sm_61 is not compatible with the current PyTorch installation." then "The current PyTorch
    # install supports CUDA capabilities sm_50 sm_70 ...", and (2.8 on) "Found GPU0 <GPU> which is of compute
    # capability (CC) 6.1." then one "- 7.5 which supports hardware CC >=7.5,<8.0" line per architecture
    Rule(("is not compatible with the current pytorch", "which is of compute capability", "which is of cuda capability"),
          re.compile(r"with CUDA capability sm_(\d{2,3}) is not compatible with the current PyTorch"
                     r"|which is of (?:compute|cuda) capability (?:\(CC\) )?(\d{1,2})\.(\d)", re.IGNORECASE),
          lambda s, m, line: s.add("torch_arch", m.group(1) or f"{m.group(2)}{m.group(3)}", line, at=m.start())),
    Rule(("pytorch install supports cuda capabilities", "which supports hardware cc", "minimum cuda capability"),
          re.compile(r"PyTorch install supports CUDA capabilities((?:\s+sm_\d{2,3}[a-z]?)+)"
                     r"|-\s*(\d{1,2})\.(\d) which supports hardware CC"
                     r"|minimum cuda capability (?:that we support|supported by this library) is (\d{1,2})\.(\d)",
                     re.IGNORECASE),
          _torch_archs),
    # a person's own words about a missing library ("it will report lost of libcudnn.so.9", "file not found
    # libcublas.so.11", ldd's "libcudnn.so.8 => not found"): only the CUDA, cuDNN and TensorRT libraries count
    # (onnxruntime's provider failing to load is the consequence), one on the line, and no loader message on it
    # or before it naming the same library (so it comes last)
    Rule(_PROSE_MISSING, _PROSE_LIBRARY, _prose_missing),
)


def _needle_index() -> tuple[tuple[str, ...], dict[str, tuple[int, ...]]]:
    """Every rule's needles, and for each needle the rules it stands for (a needle also stands for the
    rules of every needle inside it: where "not found (required by" occurs, "not found" does too)."""
    needles = tuple(sorted({n for rule in _RULES for n in rule.needles}, key=len, reverse=True))
    by_needle = {n: tuple(i for i, rule in enumerate(_RULES) if any(m in n for m in rule.needles))
                 for n in needles}
    return needles, by_needle


_NEEDLES, _RULES_BY_NEEDLE = _needle_index()
_NEEDLE_MAX = max(len(n) for n in _NEEDLES)


def _needles_in(low: str) -> dict[str, int]:
    """The needles in a lower-cased line, each with its first position (plain substring search: a few
    dozen of them cost less than one regular expression over the line)."""
    return {n: low.find(n) for n in _NEEDLES if n in low}
