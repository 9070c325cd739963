"""The onnxruntime family, inspected on disk without importing it.

Every wheel of the family (onnxruntime, onnxruntime-gpu, -directml, -openvino, -training,
ort-nightly*, ...) installs into the same ``onnxruntime/`` import package, so the distributions are
found by what their RECORD lists, and the one whose files are actually on disk is told by the RECORD
size and, when two distributions share the directory, the RECORD hash of the pybind module. ``build_and_package_info.py`` is parsed as text with :mod:`ast`; it is
never executed, so a hostile file cannot run.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections import Counter
from collections.abc import Iterable, Sequence

from ortdoctor.core.execution_providers import provider_for
from ortdoctor.core.facts import ElfInfo, OrtDistribution, OrtInfo, PeInfo, ProviderKernels
from ortdoctor.core.package_names import ORT_CPU, ORT_NIGHTLY
from ortdoctor.core.patterns import digits_end, lazy
from ortdoctor.core.record import replace
from ortdoctor.formats.distinfo import DistIndex, Distribution, file_sha256, normalize, open_regular
from ortdoctor.formats.elf import ElfError, read_elf
from ortdoctor.probes.platform import find_site_dirs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ortdoctor.formats.fatbin import FatbinInfo

__all__ = ["add_kernels", "isolated_targets", "parse_literal_assignments", "probe_ort", "read_binary",
           "read_kernels"]

PACKAGE = ORT_CPU  # the import package every flavour installs
GENAI_PACKAGE = "onnxruntime_genai"

# Only these names are parsed (the scanner must stay cheap with thousands of distributions); the
# RECORD then decides whether a candidate really owns files under onnxruntime/.
_FAMILY_PREFIXES = (ORT_CPU, ORT_NIGHTLY)

# The rule; _is_pybind_path reads it by hand (see core/patterns.py)
_PYBIND_RE = lazy(r"^onnxruntime/capi/onnxruntime_pybind11_state[^/]*\.(so|pyd)$")
_PYBIND_PREFIX = "onnxruntime/capi/onnxruntime_pybind11_state"
# the provider libraries of the execution-provider table (Linux, Windows)
_CUDA_PROVIDERS = (provider_for("cuda").library, provider_for("cuda").windows_library)
_TRT_PROVIDERS = (provider_for("tensorrt").library, provider_for("tensorrt").windows_library)
_CUDNN_EXTRA_RE = lazy(r"^\s*nvidia[-_.]cudnn[-_.]cu\d+\s*(?:\[[^\]]*\])?\s*(?:~=|==|>=|===)\s*v?(\d+)", re.I)
_CUDNN_SONAME_RE = lazy(r"^(?:libcudnn\.so\.(\d+)|cudnn64_(\d+)\.dll)$", re.I)
_CUDA_LIB_RE = lazy(r"cuda[^/]*\.(so(\.[0-9.]+)?|dll)$", re.I)
_MAX_BUILD_INFO = 256 * 1024
_MAX_OTHER_LIBS = 32


def read_binary(path: str) -> tuple[ElfInfo | PeInfo | None, str | None]:
    """ELF or PE headers of ``path`` (by its suffix); (None, why) when it cannot be read."""
    if path.lower().endswith((".dll", ".pyd")):
        from ortdoctor.formats.pe import PeError, read_pe  # a Windows build: the PE reader is imported then

        try:
            return read_pe(path), None
        except PeError as exc:
            return None, str(exc)
    try:
        return read_elf(path), None
    except ElfError as exc:
        return None, str(exc)


def read_kernels(path: str) -> ProviderKernels:
    """The kernel architectures of a CUDA library, from its fatbin headers (a few thousand small reads:
    ~10 ms for the 600 MB CUDA provider of onnxruntime-gpu 1.31 with a warm page cache).

    Read only when NVML lists GPUs, so the fatbin reader is imported here: a GPU-less check skips it."""
    from ortdoctor.formats.fatbin import FatbinError, read_fatbin

    try:
        info = read_fatbin(path)
    except FatbinError as exc:
        return ProviderKernels(path=path, error=str(exc))
    isas = info.ptx_isas
    carried: Counter[str] = Counter()
    for targets, count in info.target_sets:
        carried.update(dict.fromkeys(targets, count))
    uneven = {name: n for name, n in sorted(carried.items()) if n < info.containers}
    return ProviderKernels(path=path, archs=info.archs, ptx_isa=f"{isas[-1][0]}.{isas[-1][1]}" if isas else None,
                           containers=info.containers, uneven=uneven, isolated=isolated_targets(info))


def isolated_targets(info: FatbinInfo) -> tuple[str, ...]:
    """Targets found only in containers that hold nothing but arch-specific (``a``) targets, in ``archs``
    order: kernels for one GPU alone, which the build's general kernels do not back. Empty for a build
    without general kernels (every container arch-specific: a build for those GPUs only)."""
    general: set[str] = set()
    for targets, _count in info.target_sets:
        if not all(t.endswith("a") for t in targets):
            general.update(targets)
    return tuple(a for a in info.archs if a not in general) if general else ()


def add_kernels(ort: OrtInfo) -> OrtInfo:
    """``ort`` with the kernel architectures of its CUDA provider read (unchanged without a provider)."""
    if ort.cuda_provider is None or ort.kernels is not None:
        return ort
    return replace(ort, kernels=read_kernels(ort.cuda_provider.path))


# ``name = 'text'`` and nothing else on the line: what every build_and_package_info.py holds. The rule;
# _simple_assignment reads it by hand (see core/patterns.py).
_SIMPLE_ASSIGNMENT = lazy(r"""([A-Za-z_][A-Za-z0-9_]*) = (?:'([^'\\\n]*)'|"([^"\\\n]*)")""")


def _simple_assignment(line: str) -> tuple[str, str] | None:
    """``_SIMPLE_ASSIGNMENT.fullmatch(line)`` as (name, text)."""
    name, sep, value = line.partition(" = ")  # a name holds no space: the first " = " ends it
    if not sep or not (name.isascii() and name.isidentifier()):  # ASCII identifiers: [A-Za-z_][A-Za-z0-9_]*
        return None
    quote = value[:1]
    if quote not in ("'", '"') or len(value) < 2 or value[-1] != quote:
        return None
    text = value[1:-1]
    if quote in text or "\\" in text or "\n" in text:
        return None
    return name, text


def parse_literal_assignments(source: str) -> dict[str, object]:
    """``name = <literal>`` (and ``name: T = <literal>``) at module level; nothing is evaluated.

    A file of plain ``name = 'text'`` lines (and blank or comment lines) is read line by line; any other
    file goes through :mod:`ast` (whose import, ~3 ms, the common case saves).

    Raises:
        SyntaxError: the source does not parse as Python (a NUL, or nesting deeper than the parser or
            the literal reader can hold, included); nothing else.
    """
    simple: dict[str, object] = {}
    for line in source.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        assignment = _simple_assignment(line)
        if assignment is None:
            return _parse_with_ast(source)
        simple[assignment[0]] = assignment[1]
    return simple


def _parse_with_ast(source: str) -> dict[str, object]:
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        raise
    except (ValueError, MemoryError, RecursionError) as exc:
        # ValueError: a NUL (Python 3.11; 3.12 says SyntaxError); MemoryError, RecursionError: nesting the
        # parser cannot hold. One error type for the callers: the file does not parse.
        raise SyntaxError(f"{type(exc).__name__}: {exc}") from None
    out: dict[str, object] = {}
    for node in tree.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if not isinstance(target, ast.Name) or value is None:
            continue
        try:
            out[target.id] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue  # not a literal: skipped, never evaluated
    return out


def _read_build_info(path: str) -> tuple[dict[str, object], str | None]:
    try:
        with open_regular(path) as f:
            raw = f.read(_MAX_BUILD_INFO + 1)
    except FileNotFoundError:
        return {}, _BUILD_INFO_MISSING
    except (OSError, ValueError) as exc:  # ValueError: not a regular file (a FIFO would block)
        return {}, f"build_and_package_info.py unreadable: {exc}"
    if len(raw) > _MAX_BUILD_INFO:
        return {}, f"build_and_package_info.py larger than {_MAX_BUILD_INFO} bytes"
    try:
        return parse_literal_assignments(raw.decode("utf-8", "replace")), None
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        return {}, f"build_and_package_info.py does not parse: {exc}"


_BUILD_INFO_MISSING = "build_and_package_info.py missing"
_BUILD_INFO_RECORD = f"{PACKAGE}/capi/build_and_package_info.py"


def _records_build_info(dists: Iterable[Distribution], location: str) -> bool:
    """A distribution in ``location`` lists the build info in its RECORD (the file should be there); the
    wheels before 1.21 do not ship it, and a distribution without a RECORD cannot tell (so it counts)."""
    here = [d for d in dists if os.path.abspath(d.location) == os.path.abspath(location)]
    return not here or any(d.record is None or _BUILD_INFO_RECORD in d.files() for d in here)


def _owns_family_files(dist: Distribution, package: str) -> bool:
    prefix = package + "/"
    return any(p.startswith(prefix) for p in dist.files())


def _owns_pybind(dist: Distribution, *, shared: bool) -> bool | None:
    """Is the pybind module on disk the one this distribution's RECORD describes?

    ``shared``: another distribution of the family is installed in the same site directory, so the
    file may be either one's. Only then is the ~30 MB file hashed (tens of milliseconds); alone in its
    directory a distribution owns the file when RECORD lists it and its size is RECORD's size.
    """
    for entry in dist.record or ():
        if _is_pybind_path(entry.path):
            if not entry.hash or not entry.hash.startswith("sha256="):
                return None
            path = dist.abspath(entry.path)
            try:
                st = os.stat(path)
            except OSError:
                return False  # RECORD names it, the file is gone: its files are not on disk
            if not stat.S_ISREG(st.st_mode):
                return False  # a FIFO, a device, a directory: not the file any wheel installed
            if entry.size is not None and entry.size != st.st_size:
                return False  # another file of another size: cheaper than a hash and as certain
            if not shared:
                return True
            on_disk = file_sha256(path)
            if on_disk is None:
                return False
            return on_disk == entry.hash
    return None


def _to_ort_distribution(dist: Distribution, *, shared: bool) -> OrtDistribution:
    return OrtDistribution(
        name=dist.name,
        version=dist.version,
        location=dist.location,
        dist_info=dist.dist_info,
        owns_files_on_disk=_owns_pybind(dist, shared=shared) if dist.record is not None else None,
        requires=dist.requires,
        installer=dist.installer,
        index_url=dist.index_url,
        problems=dist.problems,
    )


def _find_package_dir(import_path: Iterable[str]) -> str | None:
    """The ``onnxruntime/`` that ``import onnxruntime`` gets: the first one on the path."""
    for entry in import_path:
        if not entry:
            continue
        candidate = os.path.join(os.path.abspath(entry), PACKAGE)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    return None


def _first_existing(capi: str, names: Sequence[str]) -> str | None:
    for name in names:
        path = os.path.join(capi, name)
        if os.path.isfile(path):
            return path
    return None


def _pybind_path(capi: str) -> str | None:
    try:
        with os.scandir(capi) as it:
            names = sorted(e.name for e in it if e.name.startswith("onnxruntime_pybind11_state"))
    except OSError:
        return None
    for name in names:
        if name.endswith((".so", ".pyd")):
            return os.path.join(capi, name)
    return None


def _is_pybind_path(path: str) -> bool:
    """``_PYBIND_RE.match(path)``: the pybind module's RECORD path."""
    if not path.startswith(_PYBIND_PREFIX):
        return False
    rest = path[len(_PYBIND_PREFIX):]
    rest = rest[:-1] if rest.endswith("\n") else rest  # "$" also matches before a final newline
    return "/" not in rest and rest.endswith((".so", ".pyd"))


def _cudnn_major_from_requires(requires: Iterable[str]) -> int | None:
    for req in requires:
        major = _cudnn_extra_major(req)
        if major is not None:
            return major
    return None


def _cudnn_extra_major(req: str) -> int | None:
    """``_CUDNN_EXTRA_RE.match(req)``'s number: 9 for ``nvidia-cudnn-cu13~=9.0; extra == "cudnn"``."""
    if not req.isascii():
        m = _CUDNN_EXTRA_RE.match(req)
        return int(m.group(1)) if m else None
    s = req.lower()  # the pattern ignores case
    at = _after_space(s, 0)
    for word in ("nvidia", "cudnn"):
        if not s.startswith(word, at) or s[at + len(word):at + len(word) + 1] not in ("-", "_", "."):
            return None
        at += len(word) + 1
    if not s.startswith("cu", at) or digits_end(s, at + 2) == at + 2:
        return None
    at = _after_space(s, digits_end(s, at + 2))
    if s.startswith("[", at):  # an extra, "[...]"; without its "]" no operator can follow
        close = s.find("]", at + 1)
        if close == -1:
            return None
        at = _after_space(s, close + 1)
    for op in ("~=", "==", ">=", "==="):  # the pattern's order: "===" only where "==" leads nowhere
        if s.startswith(op, at):
            start = _after_space(s, at + len(op))
            start += s.startswith("v", start)
            end = digits_end(s, start)
            if end > start:
                return int(s[start:end])
    return None


def _after_space(s: str, at: int) -> int:
    """Past the whitespace (``\\s*``) at ``s[at:]``."""
    while at < len(s) and s[at].isspace():
        at += 1
    return at


def _cudnn_major_from_binary(info: ElfInfo | PeInfo | None) -> int | None:
    if info is None:
        return None
    names = info.needed if isinstance(info, ElfInfo) else info.imports
    for name in names:
        m = _CUDNN_SONAME_RE.match(name)
        if m:
            return int(m.group(1) or m.group(2))
    return None


def _pick_active(
    dists: Sequence[OrtDistribution], package_dir: str | None, package_name: str | None
) -> str | None:
    if package_dir is None:
        return None
    location = os.path.dirname(package_dir)
    here = [d for d in dists if os.path.abspath(d.location) == location]
    owners = [d for d in here if d.owns_files_on_disk]
    if len(owners) == 1:
        return owners[0].name
    if package_name:
        named = [d for d in here if d.name.lower() == package_name.lower()]
        if len(named) == 1:
            return named[0].name
    if len(here) == 1:
        return here[0].name
    return None


def probe_ort(
    site_dirs: Iterable[str] | None = None,
    *,
    import_path: Iterable[str] | None = None,
    index: DistIndex | None = None,
    kernels: bool = True,
) -> OrtInfo:
    """Inspect the installed onnxruntime family.

    ``site_dirs`` are searched for distributions; ``import_path`` (default: ``site_dirs``) decides
    which ``onnxruntime/`` package an ``import onnxruntime`` would get. ``index`` shares one
    distribution scan between probes. ``kernels`` also reads the CUDA provider's kernel architectures
    (:func:`add_kernels`; False leaves that to the caller, or skips it where no GPU is compared).
    """
    if index is None:
        index = DistIndex(find_site_dirs(sys.path) if site_dirs is None else site_dirs)
    problems: list[str] = []

    family = [index.load(r) for r in index.starting_with(_FAMILY_PREFIXES)]
    ort_dists: list[Distribution] = []
    genai_dists: list[Distribution] = []
    for dist in family:
        if dist.record is None:
            # No RECORD to go by: a family name is evidence enough, with the problem noted.
            if not normalize(dist.name).startswith("onnxruntime-genai"):
                ort_dists.append(dist)
            continue
        if _owns_family_files(dist, PACKAGE):
            ort_dists.append(dist)
        if _owns_family_files(dist, GENAI_PACKAGE):
            genai_dists.append(dist)

    per_location = Counter(os.path.abspath(d.location) for d in ort_dists)
    distributions = tuple(_to_ort_distribution(d, shared=per_location[os.path.abspath(d.location)] > 1)
                          for d in ort_dists)
    package_dir = _find_package_dir(index.site_dirs if import_path is None else import_path)
    if package_dir is None and not distributions:
        return OrtInfo(installed=False, other_cuda_libraries=_other_cuda_libraries(genai_dists, problems),
                       problems=tuple(problems))
    if package_dir is None:
        problems.append("onnxruntime distributions are installed but no onnxruntime/ package is on the path")
    elif not any(os.path.abspath(d.location) == os.path.dirname(package_dir) for d in distributions):
        problems.append(f"{package_dir} belongs to no installed distribution (copied in or built locally?)")

    build: dict[str, object] = {}
    build_info_path: str | None = None
    build_info_error: str | None = None
    cuda_provider = tensorrt_provider = pybind = None
    is_gpu_build = False
    if package_dir is not None:
        capi = os.path.join(package_dir, "capi")
        build_info_path = os.path.join(capi, "build_and_package_info.py")
        build, build_info_error = _read_build_info(build_info_path)
        cuda_path = _first_existing(capi, _CUDA_PROVIDERS)
        is_gpu_build = cuda_path is not None
        for path, slot in ((cuda_path, "cuda"), (_first_existing(capi, _TRT_PROVIDERS), "trt"),
                           (_pybind_path(capi), "pybind")):
            if path is None:
                continue
            info, why = read_binary(path)
            if why:
                problems.append(why)
            if slot == "cuda":
                cuda_provider = info
            elif slot == "trt":
                tensorrt_provider = info
            else:
                pybind = info

    def text(key: str) -> str | None:
        value = build.get(key)
        return value if isinstance(value, str) and value else None

    package_name = text("package_name")
    active = _pick_active(distributions, package_dir, package_name)
    active_dist = next((d for d in distributions if d.name == active), None)
    version = text("__version__") or (active_dist.version if active_dist else None)
    if build_info_error == _BUILD_INFO_MISSING and package_dir is not None and not _records_build_info(
            ort_dists, os.path.dirname(package_dir)):
        build_info_error = None  # a wheel from before 1.21 never had the file: nothing is damaged
    cudnn_major = _cudnn_major_from_requires(active_dist.requires if active_dist else ())
    if cudnn_major is None and is_gpu_build:
        cudnn_major = _cudnn_major_from_binary(cuda_provider) or _cudnn_major_from_binary(tensorrt_provider)

    result = OrtInfo(
        installed=True,
        distributions=distributions,
        package_dir=package_dir,
        active=active,
        version=version,
        package_name=package_name,
        cuda_version=text("cuda_version"),
        cudnn_major=cudnn_major,
        is_gpu_build=is_gpu_build,
        cuda_provider=cuda_provider,
        tensorrt_provider=tensorrt_provider,
        pybind=pybind,
        build_info_path=build_info_path,
        build_info_error=build_info_error,
        other_cuda_libraries=_other_cuda_libraries(genai_dists, problems),
        problems=tuple(problems),
    )
    return add_kernels(result) if kernels else result


def _other_cuda_libraries(dists: Iterable[Distribution], problems: list[str]) -> tuple[ElfInfo | PeInfo, ...]:
    """CUDA-linked libraries shipped by ORT-family packages beside onnxruntime (genai, ...)."""
    out: list[ElfInfo | PeInfo] = []
    for dist in dists:
        for rel in dist.files():
            if rel.startswith(PACKAGE + "/") or not _CUDA_LIB_RE.search(rel.rsplit("/", 1)[-1]):
                continue
            path = dist.abspath(rel)
            if not os.path.isfile(path):
                continue
            info, why = read_binary(path)
            if info is not None:
                out.append(info)
            elif why:
                problems.append(why)
            if len(out) >= _MAX_OTHER_LIBS:
                return tuple(out)
    return tuple(out)
