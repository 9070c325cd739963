"""``ortdoctor lint``'s rules: a declared stack (:mod:`ortdoctor.decide.lint_stack`) -> findings at lines.

Pure: a :class:`~ortdoctor.decide.lint_stack.Stack` and the matrix in, :class:`LintFinding` out. Each
finding is built from the catalog (``core/catalog.py``, the ``lint-*`` ids) and carries the place it is
about and, where one can be written, the replacement for that line: a fix that edits the file, with
versions chosen from the matrix's package table (the same table ``check``'s fixes pin from).

What each rule compares (one stack at a time, so a CPU requirements file beside a GPU one is no conflict):

* both ORT flavours: onnxruntime-gpu and a CPU flavour that pip would install together on Linux x86_64
  (markers read), also through a dependency's metadata (:mod:`ortdoctor.decide.ort_dependents`);
* CUDA and cuDNN majors: the builds the onnxruntime-gpu requirement can install (its PyPI wheel, the
  feeds named) against torch's build, the base image, conda's CUDA and pinned NVIDIA wheels;
* Python: the releases the requirement admits against the declared Python;
* the driver floor, the declared GPUs' kernels, and a requirement that admits more than one CUDA major.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from ortdoctor.core.catalog import make
from ortdoctor.core.facts import Finding
from ortdoctor.core.record import record
from ortdoctor.decide.kernels import coverage, describe_archs, parse_compute_capability, sm_name
from ortdoctor.decide.lint_stack import (
    CPU_FLAVOURS,
    GPU_PACKAGE,
    PYTHONS,
    Declared,
    OrtBuild,
    Pin,
    Stack,
    Where,
    applies,
    exact_version,
    image_majors,
    matching_versions,
    ort_builds,
    release_match,
    torch_majors,
    wheel_major,
)
from ortdoctor.decide.matrix.model import Matrix, Release, ReleaseMatch
from ortdoctor.decide.ort_dependents import dependents, gpu_spec_of, ort_package_of

__all__ = ["LintFinding", "Suppressed", "lint_stack"]


@record
class LintFinding:
    finding: Finding
    where: Where
    replacement: str | None = None  # the new text of `where.line` ("" : delete the line); None: no edit
    related: tuple[Where, ...] = ()  # the other lines the finding is about (the torch pin, the FROM line)
    stack: str = ""


@record
class Suppressed:
    """A finding the files silence on purpose: it leaves the verdict and the exit code alone."""

    finding: LintFinding
    kind: str  # SARIF's word: "inSource" (a comment at the line), "external" ([tool.ortdoctor] ignore)
    by: Where  # the comment's line, or the ignore entry


@record
class _Source:
    """Something in the stack that fixes a CUDA or cuDNN major."""

    cuda: int | None
    cudnn: int | None
    what: str  # "torch==2.3.1+cu121 (requirements.txt:4)"
    where: Where
    system: bool = False  # libraries of the image or conda, not wheels


def _at(where: Where) -> str:
    return f"{where.file}:{where.line}" if where.line else "the command line"


@lru_cache(maxsize=4096)
def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:4])


_ORDERED: dict[int, tuple[Matrix, tuple[str, ...]]] = {}


def _oldest_first(matrix: Matrix) -> tuple[str, ...]:
    """The matrix's onnxruntime-gpu versions, oldest first: sorted once per matrix, not per fix (a monorepo
    asks for hundreds)."""
    hit = _ORDERED.get(id(matrix))
    if hit is None or hit[0] is not matrix:
        hit = _ORDERED[id(matrix)] = (matrix, tuple(sorted(matrix.versions_of(GPU_PACKAGE), key=_vkey)))
    return hit[1]


def _match(matrix: Matrix, version: str) -> ReleaseMatch | None:
    return release_match(matrix, version)


def _release(matrix: Matrix, version: str) -> Release | None:
    match = _match(matrix, version)
    return match.release if match is not None and not match.unverified else None


# -- which onnxruntime-gpu a requirement installs --------------------------------------------------
def _resolved(matrix: Matrix, pin: Pin, python: str | None) -> tuple[str | None, list[str]]:
    """(the version pip installs today, every version the requirement admits)."""
    exact = exact_version(pin.spec)
    if exact is not None:
        return exact, [exact]
    versions = matching_versions(matrix, GPU_PACKAGE, pin.spec)
    if python:
        fit = [v for v in versions if _python_ok(matrix, v, python)]
        versions = fit or versions
    return (versions[-1] if versions else None), versions


def _python_ok(matrix: Matrix, version: str, python: str) -> bool:
    release = _release(matrix, version)
    return release is None or not release.python or python in release.python


# a monorepo asks the same few questions hundreds of times: (id(matrix), question) -> (matrix, answer);
# the matrix is kept and compared, so a new matrix at a freed one's address is never answered for it
_ANSWERS: dict[tuple[object, ...], tuple[Matrix, str | None]] = {}


def _remembered(matrix: Matrix, key: tuple[object, ...], compute: Callable[[], str | None]) -> str | None:
    hit = _ANSWERS.get(key)
    if hit is None or hit[0] is not matrix:
        if len(_ANSWERS) > 4096:
            _ANSWERS.clear()
        hit = _ANSWERS[key] = (matrix, compute())
    return hit[1]


def _pick(matrix: Matrix, *, cuda: int | None = None, cudnn: int | None = None, python: str | None = None,
          driver: str | None = None, gpus: Sequence[tuple[int, int]] = (), pythons: Sequence[str] = (),
          within: Sequence[str] | None = None) -> str | None:
    """The newest onnxruntime-gpu on PyPI (not known to be bad) whose wheel fits every given constraint:
    ``pythons``: a wheel for each of them; ``within``: one of these versions."""
    among = frozenset(within) if within is not None else None
    key = ("pick", id(matrix), cuda, cudnn, python, driver, tuple(gpus), tuple(pythons), among)
    return _remembered(matrix, key, lambda: _pick_now(matrix, cuda, cudnn, python, driver, gpus, pythons, among))


def _pick_now(matrix: Matrix, cuda: int | None, cudnn: int | None, python: str | None, driver: str | None,
              gpus: Sequence[tuple[int, int]], pythons: Sequence[str], within: frozenset[str] | None) -> str | None:
    for v in reversed(_oldest_first(matrix)):
        match = _match(matrix, v)
        if match is None or not match.exact or (within is not None and v not in within):
            continue
        r = match.release
        if not r.pypi or _bad_here(r, v, gpus):
            continue
        if python and r.python and python not in r.python:
            continue
        if pythons and r.python and not set(pythons) <= set(r.python):
            continue
        if _fits(matrix, r, cuda=cuda, cudnn=cudnn, driver=driver, gpus=gpus):
            return v
    return None


def _fits(matrix: Matrix, r: Release, *, cuda: int | None, cudnn: int | None, driver: str | None,
          gpus: Sequence[tuple[int, int]], extras: Sequence[str] = ()) -> bool:
    """Whether a release's PyPI wheel meets the CUDA/cuDNN majors, the driver floor, the GPUs and has the
    extras asked for."""
    return ((cuda is None or r.cuda_major == cuda) and (cudnn is None or r.cudnn_major == cudnn)
            and (driver is None or _driver_ok(matrix, r.cuda_major, driver))
            and all(_runs(r, cc) for cc in gpus) and all(e in r.extras for e in extras))


def _span(matrix: Matrix, pin: Pin, *, cuda: int | None = None, cudnn: int | None = None,
          driver: str | None = None, gpus: Sequence[tuple[int, int]] = (), pythons: Sequence[str] = (),
          within: Sequence[str] | None = None) -> str | None:
    among = frozenset(within) if within is not None else None
    key = ("span", id(matrix), pin.extras, cuda, cudnn, driver, tuple(gpus), tuple(pythons), among)
    return _remembered(matrix, key, lambda: _span_now(matrix, pin.extras, cuda, cudnn, driver, gpus, pythons, among))


def _span_now(matrix: Matrix, extras: tuple[str, ...], cuda: int | None, cudnn: int | None, driver: str | None,
              gpus: Sequence[tuple[int, int]], pythons: Sequence[str], within: frozenset[str] | None) -> str | None:
    """A version range of onnxruntime-gpu that stays on one CUDA and cuDNN major: every PyPI release in it
    meets the constraints, and together they have a wheel for each of ``pythons``. The newest such run of
    releases, as ``>=FIRST,<NEXT`` where NEXT is the release line that leaves the run (another major, a
    driver or GPU it does not meet); for the newest run, the line after today's newest (the next release's
    CUDA is not known yet). A known-bad release inside is excluded with ``!=``. None when no run covers
    every Python."""
    rows: list[tuple[str, Release, bool]] = []
    for v in _oldest_first(matrix):
        match = _match(matrix, v)
        if match is None or not match.exact or not match.release.pypi:
            continue
        r = match.release
        ok = (within is None or v in within) and _fits(matrix, r, cuda=cuda, cudnn=cudnn, driver=driver,
                                                         gpus=gpus, extras=extras)
        rows.append((v, r, ok))
    runs: list[tuple[list[tuple[str, Release]], Release | None]] = []
    current: list[tuple[str, Release]] = []
    for v, r, ok in rows:
        last = current[-1][1] if current else None
        if last is not None and (not ok or (r.cuda_major, r.cudnn_major) != (last.cuda_major, last.cudnn_major)):
            runs.append((current, r))
            current = []
        if ok:
            current.append((v, r))
    if current:
        runs.append((current, None))
    for run, stop in reversed(runs):
        good = [(v, r) for v, r in run if not _bad_here(r, v, gpus)]
        covered = {p for _, r in good for p in r.python}
        if not good or (pythons and any(r.python for _, r in good) and not set(pythons) <= covered):
            continue
        if stop is None:
            nums = _vkey(run[-1][1].line)
            upper = f"{nums[0]}.{nums[1] + 1}" if len(nums) > 1 else str(nums[0] + 1)
        else:
            upper = stop.line
        fine = {v for v, _ in good}
        excluded = [v for v, _ in run if _vkey(v) > _vkey(good[0][0]) and v not in fine]
        return f">={good[0][0]},<{upper}" + "".join(f",!={v}" for v in excluded)
    return None


def _fix_pythons(matrix: Matrix, stack: Stack, pin: Pin) -> tuple[str, ...]:
    """Every Python a fix must install on: the one the stack names exactly, else each minor its
    requires-python (or Poetry's ``python``) admits that onnxruntime-gpu has ever had a wheel for, and the
    pin's marker admits; with them, every Python another stack that installs the pin's file declares (the
    edited line is installed there too); () where nothing is declared."""
    known = {p for r in matrix.releases if r.pypi for p in r.python}
    exact = {d.value for d in _pythons(stack) if d.exact}
    ranges = [set(d.admits) for d in stack.declared if d.kind == "python" and not d.exact and d.admits]
    own = exact or ({p for p in PYTHONS if all(p in r for r in ranges) and p in known and applies(pin, p)}
                    if ranges else set())
    return tuple(p for p in PYTHONS if p in own or p in _elsewhere(stack, pin, known))


def _under(stack: Stack, pin: Pin) -> list[Declared]:
    """The Python declarations of the other stacks that install the pin's file."""
    return [d for file, d in stack.installed_under if file == pin.where.file and d.value in PYTHONS]


def _elsewhere(stack: Stack, pin: Pin, known: set[str]) -> set[str]:
    """The Pythons the other stacks that install the pin's file declare (each minor of a range that
    onnxruntime-gpu has had wheels for), where the pin's marker admits them."""
    out: set[str] = set()
    for d in _under(stack, pin):
        out |= {d.value} if d.exact else {p for p in d.admits if p in known}
    return {p for p in out if applies(pin, p)}


def _installed_exactly(stack: Stack, pin: Pin) -> tuple[str, ...]:
    """The Pythons other stacks install the pin's file under, by their exact version (an image's, the one
    a Dockerfile installs): even the last resort of a fix keeps a wheel for them."""
    return tuple(sorted({d.value for d in _under(stack, pin) if d.exact and applies(pin, d.value)}, key=_vkey))


def _target(matrix: Matrix, stack: Stack, pin: Pin, *, cuda: int | None = None, cudnn: int | None = None,
            python: str | None = None, driver: str | None = None, gpus: Sequence[tuple[int, int]] = (),
            within: Sequence[str] | None = None) -> str | None:
    """The requirement's new version specifier. An application pins one release (``==X``) that installs on
    every Python it declares; a library's requirement (and an application whose Pythons no one release
    covers) gets a range of one CUDA major (:func:`_span`): a package's users resolve it beside their own
    pins, and an exact pin there would fight theirs. Falls back to the newest release for ``python``."""
    pythons = _fix_pythons(matrix, stack, pin)
    if not stack.library:
        v = _pick(matrix, cuda=cuda, cudnn=cudnn, python=python, driver=driver, gpus=gpus, pythons=pythons,
                  within=within)
        if v is not None:
            return "==" + v
    for wanted in (pythons, (python,) if python else ()):
        span = _span(matrix, pin, cuda=cuda, cudnn=cudnn, driver=driver, gpus=gpus, pythons=wanted,
                     within=within)
        if span is not None:
            return span
    v = _pick(matrix, cuda=cuda, cudnn=cudnn, python=python, driver=driver, gpus=gpus, within=within,
              pythons=_installed_exactly(stack, pin))
    return "==" + v if v is not None else None


def _bad_here(release: Release, version: str, gpus: Sequence[tuple[int, int]]) -> bool:
    """A known-bad release is never picked, unless its fault is one GPU's (``affects: sm_120``) and that GPU
    is not declared."""
    bad = release.bad(version)
    if bad is None:
        return False
    if bad.affects and bad.affects.startswith("sm_"):
        return any(sm_name(cc) == bad.affects for cc in gpus)
    return True


def _pick_feed(matrix: Matrix, cuda: int, cudnn: int, python: str | None) -> tuple[str, str] | None:
    """(version, index URL): the newest build on an onnxruntime feed for these majors, where PyPI has none
    (CUDA 12 with cuDNN 8: 1.17 and 1.18 on the CUDA 12 feed)."""
    for release in matrix.releases:  # newest first
        if python and release.python and python not in release.python:
            continue
        for feed in release.feeds:
            if feed.cuda_major != cuda or feed.cudnn_major != cudnn or not feed.index_url:
                continue
            candidates = [v for v in (feed.versions or release.versions) if not _bad_here(release, v, ())]
            if candidates:
                return max(candidates, key=_vkey), matrix.feeds.get(feed.index_url, feed.index_url)
    return None


def _feed_fix(pin: Pin, version: str, url: str, matrix: Matrix, what: str) -> tuple[str, str | None]:
    """The fix that takes a feed's build: in a requirements file the feed line goes above the pin."""
    fix, line = _pin_fix(pin, "==" + version, matrix, "")
    why = f"no PyPI wheel is built for {what}; the onnxruntime feed has {version}"
    if line is not None and not pin.where.file.endswith((".toml", ".lock")) and pin.where.text.strip() == pin.requirement:
        return f"{fix}  ({why}: the line `--extra-index-url {url}` goes above it)", f"--extra-index-url {url}\n{line}"
    return f"{fix}  ({why}, from --extra-index-url {url})", line


def _driver_ok(matrix: Matrix, cuda_major: int, floor: str) -> bool:
    need = matrix.cuda_majors.get(cuda_major)
    return need is None or _vkey(need.min_driver_linux) <= _vkey(floor)


def _runs(release: Release, cc: tuple[int, int]) -> bool:
    k = release.kernels_for()
    if k is None:
        return True  # unknown: never claim a wheel lacks kernels without having read it
    return coverage(cc, k.archs, ptx_isa=k.ptx_isa, isolated=k.isolated).runs


def _new_requirement(pin: Pin, spec: str, matrix: Matrix) -> str:
    """``onnxruntime-gpu[extras]SPEC; marker``: the pin's extras that the (lowest) release named has."""
    m = re.search(r"[\d][\w.]*", spec)
    release = _release(matrix, m.group(0)) if m else None
    extras = [e for e in pin.extras if release is not None and e in release.extras]
    head = GPU_PACKAGE + (f"[{','.join(extras)}]" if extras else "")
    return f"{head}{spec}" + (f"; {pin.marker}" if pin.marker else "")


def _replace(pin: Pin, new_requirement: str) -> str | None:
    """The pin's line with the requirement replaced; None when the line does not spell it out."""
    text = pin.where.text
    if pin.requirement:
        # the requirement as a whole word: not a prefix of a longer name or spec
        m = re.search(r"(?<![\w.-])" + re.escape(pin.requirement) + r"(?![\w.\[=<>~!*-])", text)
        if m:
            return text[:m.start()] + new_requirement + text[m.end():]
    # `name = "spec"` / `name = {version = "spec", ...}` (Poetry, PDM tables): replace the spec string
    head = re.match(r"[A-Za-z0-9_.-]+(?:\[[^\]]*\])?\s*([^;]*)", new_requirement)
    spec = head.group(1).strip() if head else ""
    m = re.match(r"""(\s*["']?[A-Za-z0-9_.-]+["']?\s*=\s*)(["'])[^"']*\2(.*)$""", text)
    if m and spec:
        return f"{m.group(1)}{m.group(2)}{spec}{m.group(2)}{m.group(3)}"
    m = re.search(r"""(version\s*=\s*)(["'])[^"']*\2""", text)
    if m and spec:
        return text[:m.start()] + f"{m.group(1)}{m.group(2)}{spec}{m.group(2)}" + text[m.end():]
    return None


def _delete(pin: Pin) -> str | None:
    """The pin's line without the requirement: "" (delete the line) when it holds nothing else."""
    text = pin.where.text
    if text.strip().rstrip(",").strip().strip("\"'") == pin.requirement:
        return ""
    m = re.search(r"""(["'])""" + re.escape(pin.requirement) + r"""\1\s*,?\s*""", text)
    if m is None:
        return None
    out = text[:m.start()] + text[m.end():]
    return re.sub(r",\s*\]", "]", out)


def _add_after(pin: Pin, new_requirement: str) -> str | None:
    """The line of the requirement that pulls onnxruntime-gpu in, with a pin of it added: a line of its
    own in a requirements file, one more list item in a TOML array, one more word on a pip command."""
    text = pin.where.text
    if text.split(" #", 1)[0].strip() == pin.requirement:
        return f"{text}\n{new_requirement}"
    for quote in ('"', "'"):
        quoted = f"{quote}{pin.requirement}{quote}"
        if quoted in text:
            joiner = ", " if pin.where.file.endswith(".toml") else " "
            return text.replace(quoted, f"{quoted}{joiner}{quote}{new_requirement}{quote}", 1)
    m = re.search(r"(?<![\w.-])" + re.escape(pin.requirement) + r"(?![\w.\[=<>~!*-])", text)
    if m:
        return text[:m.end()] + f" {new_requirement}" + text[m.end():]
    return None


def _is_lock(file: str) -> bool:
    name = file.replace("\\", "/").rsplit("/", 1)[-1]
    return name in ("uv.lock", "poetry.lock") or (name.startswith("pylock.") and name.endswith(".toml"))


def _pin_fix(pin: Pin, spec: str | None, matrix: Matrix, why: str,
             stack: Stack | None = None) -> tuple[str, str | None]:
    """(fix text, replacement line) giving the requirement the version specifier ``spec`` (``==X`` or a
    range from :func:`_target`)."""
    if spec is None:
        return why, None
    if not spec.startswith("==") and stack is not None:
        why = (f"{why}; " if why else "") + (
            "a range of one CUDA major: the package's users resolve it beside their own pins" if stack.library
            else "a range of one CUDA major: no one release has wheels for every Python the file admits")
    if stack is not None:
        under = [d for d in _under(stack, pin) if applies(pin, d.value)]
        if under:
            why = (f"{why}; " if why else "") + "with a wheel for " + ", ".join(
                f"{d.origin} ({_at(d.where)}), where {d.where.file} installs {pin.where.file}" for d in under)
    if _is_lock(pin.where.file):
        # a lock file is written by its tool: the pin goes where the project declares its requirements
        text = f"pin {GPU_PACKAGE}{spec} in the project's requirements and lock again"
        return (f"{text}  ({why})" if why else text), None
    new = _new_requirement(pin, spec, matrix)
    if pin.via is not None:
        new = f"{GPU_PACKAGE}{spec}"
        line = _add_after(pin, new)
        text = f"{_at(pin.where)}: pin {new} beside `{pin.via}`, which requires onnxruntime-gpu{pin.spec}"
        return (f"{text}  ({why})" if why else text), line
    line = _replace(pin, new)
    text = f"{_at(pin.where)}: {line.strip() if line is not None else new}"
    return (f"{text}  ({why})" if why else text), line


# -- what else the stack declares -------------------------------------------------------------------
def _sources(stack: Stack, matrix: Matrix) -> list[_Source]:
    feeds = [(kind, url) for kind, url, _ in stack.feeds]
    out: list[_Source] = []
    for pin in stack.pins:
        if not applies(pin, None) or pin.optional:
            continue
        if pin.name == "torch":
            majors = torch_majors(matrix, pin, feeds)
            if majors is not None:
                cuda, cudnn, how = majors
                out.append(_Source(cuda, cudnn, f"torch {how} ({_at(pin.where)})", pin.where))
        elif pin.name.startswith("nvidia-"):
            cuda = wheel_major(matrix, pin.name)
            cudnn = None
            if pin.name.startswith("nvidia-cudnn"):
                m = re.match(r"(?:==|~=|>=)\s*(\d+)", pin.spec)
                cudnn = int(m.group(1)) if m else None
            if cuda is not None or cudnn is not None:
                out.append(_Source(cuda, cudnn, f"{_label(pin)} ({_at(pin.where)})", pin.where))
    for d in stack.declared:
        if d.kind == "cuda":
            m = re.match(r"(\d+)", d.value)
            if m:
                out.append(_Source(int(m.group(1)), None, f"{d.origin} ({_at(d.where)})", d.where, True))
        elif d.kind == "cudnn":
            m = re.match(r"(\d+)", d.value)
            if m:
                out.append(_Source(None, int(m.group(1)), f"{d.origin} ({_at(d.where)})", d.where, True))
    return out


def _pin_python(stack: Stack, pin: Pin) -> str | None:
    """The Python a pin is installed under: the stack's, else the lowest its marker (``python_full_version
    >= '3.11'``, as a lock file writes it) and the declared floor admit."""
    one = _one_python(stack)
    if one is None or not pin.marker or any(d.exact for d in _pythons(stack)):
        return one
    return next((p for p in PYTHONS if _vkey(p) >= _vkey(one) and applies(pin, p)), one)


def _pythons(stack: Stack) -> list[Declared]:
    return [d for d in stack.declared if d.kind == "python" and d.value in PYTHONS]


def _one_python(stack: Stack) -> str | None:
    """The Python the stack runs: the one it names exactly, else the lowest it admits."""
    exact = {d.value for d in _pythons(stack) if d.exact}
    if len(exact) == 1:
        return next(iter(exact))
    floors = sorted({d.value for d in _pythons(stack) if not d.exact}, key=_vkey)
    return floors[-1] if floors and not exact else None


# -- the rules ----------------------------------------------------------------------------------------
def lint_stack(stack: Stack, matrix: Matrix) -> list[LintFinding]:
    """Every finding of one stack, in file order."""
    out: list[LintFinding] = []
    out += _both_flavours(stack)
    sources = _sources(stack, matrix)
    feeds = [(kind, url) for kind, url, _ in stack.feeds]
    for pin in [*stack.pins, *_implied(stack)]:
        if pin.name != GPU_PACKAGE or pin.optional:
            continue
        python = _pin_python(stack, pin)
        if not applies(pin, python):
            continue
        out += _no_such_release(stack, matrix, pin, python, sources)
        version, admitted = _resolved(matrix, pin, python)
        if version is None:
            continue
        builds = ort_builds(matrix, version, feeds, index=pin.index)
        if not builds:
            continue
        floats = not stack.locked and exact_version(pin.spec) is None
        out += _unpinned(stack, matrix, pin, admitted, sources, python)
        out += _cuda(stack, matrix, pin, version, builds, sources, python, floats)
        out += _python(stack, matrix, pin, admitted, builds)
        out += _driver(stack, matrix, pin, builds)
        out += _kernels(stack, matrix, pin, version, builds, sources)
    out += _image_driver(stack, matrix)
    return sorted(out, key=lambda f: (f.where.file, f.where.line))


def _label(pin: Pin) -> str:
    if pin.via is not None:
        return f"`{pin.via}` (its metadata requires onnxruntime-gpu{pin.spec})"
    return f"`{pin.requirement}`"


def _implied(stack: Stack) -> list[Pin]:
    """onnxruntime-gpu as the metadata of another requirement pulls it in (``audio-separator[gpu]``),
    where the stack does not name it itself."""
    if any(p.name == GPU_PACKAGE and not p.optional for p in stack.pins):
        return []
    out: list[Pin] = []
    for p in stack.pins:
        if p.optional or p.name == GPU_PACKAGE:
            continue
        spec = gpu_spec_of(p.name, p.extras, p.spec)
        if spec is not None:
            out.append(Pin(GPU_PACKAGE, spec, (), p.marker, p.where, p.requirement, None, False, p.requirement))
    return out


def _ort_side(stack: Stack) -> tuple[list[tuple[Pin, str]], list[tuple[Pin, str]]]:
    """(GPU, CPU): the pins that bring each flavour, each with how."""
    gpu: list[tuple[Pin, str]] = []
    cpu: list[tuple[Pin, str]] = []
    for pin in stack.pins:
        if pin.optional:
            continue
        if pin.name == GPU_PACKAGE:
            gpu.append((pin, ""))
        elif pin.name in CPU_FLAVOURS:
            cpu.append((pin, ""))
        else:
            hit = ort_package_of(pin.name, pin.extras, pin.spec)
            if hit is not None:
                package, row = hit
                (gpu if package == GPU_PACKAGE else cpu).append((pin, f"{package} (its metadata requires it: "
                                                                      f"{row.source.split(' ')[0]})"))
    return gpu, cpu


def _both_flavours(stack: Stack) -> list[LintFinding]:
    gpu, cpu = _ort_side(stack)
    exact = [d.value for d in _pythons(stack) if d.exact]
    pythons: Iterable[str | None] = exact or PYTHONS
    out: list[LintFinding] = []
    for pin, how in cpu:
        together = [g for g, _ in gpu if any(applies(g, p) and applies(pin, p) for p in pythons)]
        if not together:
            continue
        g = together[0]
        brings = how or pin.name
        detail = (f"{_at(pin.where)} installs {brings} and {_at(g.where)} installs onnxruntime-gpu "
                  f"({stack.name}); both write the same onnxruntime/ directory")
        row = dependents().get(pin.name) if how else None
        if row is not None and row.gpu:
            head = re.match(r"\s*[A-Za-z0-9._-]+\s*(\[[^\]]*\])?", pin.requirement)
            new = row.gpu + pin.requirement[head.end():] if head else row.gpu
            line = pin.where.text.replace(pin.requirement, new, 1) if pin.requirement in pin.where.text else None
            fix = f"{_at(pin.where)}: {new}  (the GPU variant pulls onnxruntime-gpu instead)"
        elif row is not None:
            line = None
            fix = (f"{pin.name} has no GPU variant: install it in a later step with `--no-deps`, after "
                   f"onnxruntime-gpu, and list its other requirements yourself")
        elif _is_lock(pin.where.file):
            line = None
            fix = (f"remove {pin.name} from the project's requirements (or what pulls it in) and lock again "
                   f"(onnxruntime-gpu has the CPU execution provider too)")
        else:
            line = _delete(pin)
            fix = f"{_at(pin.where)}: remove `{pin.requirement}` (onnxruntime-gpu has the CPU execution provider too)"
        out.append(LintFinding(make("lint-ort-cpu-and-gpu", detail, fix), pin.where, line, (g.where,),
                               stack.name))
    return out


def _unpinned(stack: Stack, matrix: Matrix, pin: Pin, admitted: list[str], sources: list[_Source],
              python: str | None) -> list[LintFinding]:
    if stack.locked or exact_version(pin.spec) is not None:
        return []
    # over every Python the file admits (a library's users run any of them), else the one it runs
    pythons = _fix_pythons(matrix, stack, pin)
    every = matching_versions(matrix, GPU_PACKAGE, pin.spec)
    if len(pythons) > 1:
        admitted = [v for v in every if any(_python_ok(matrix, v, p) for p in pythons)] or admitted
    majors = sorted({r.cuda_major for r in (_release(matrix, v) for v in admitted) if r is not None and r.pypi})
    upper = re.search(r"<|~=|==", pin.spec)
    if len(majors) < 2 and (upper or not majors):
        return []
    if len(majors) < 2 and not upper:
        return []  # one major up to now; the matrix cannot say when the next one comes
    want = next((s.cuda for s in sources if s.cuda is not None), None)
    # the releases the requirement admits, where one fits (the fix keeps its lower bound)
    within = every if _pick(matrix, cuda=want, within=every) else None
    spec = _target(matrix, stack, pin, cuda=want, python=python, within=within)
    if spec is None and within is not None:
        # none of the releases it admits has a wheel for the declared Python (phocr's `>=1.20.0` under
        # python_requires ">=3.8"): the fix moves the lower bound, as lint-ort-python-unsupported's does
        spec = _target(matrix, stack, pin, cuda=want, python=python)
    detail = (f"{_label(pin)} admits releases built for CUDA "
              f"{', '.join(str(m) for m in majors)}; today it installs {admitted[-1]}")
    if spec is not None and not spec.startswith("=="):
        first = _release(matrix, spec[2:].split(",")[0])
        why = f"the CUDA {first.cuda_major} releases" if first is not None else ""
    else:
        why = f"the newest CUDA {want} release" if want is not None else "today's release, pinned"
    fix, line = _pin_fix(pin, spec, matrix, why, stack)
    return [LintFinding(make("lint-ort-unpinned", detail, fix), pin.where, line, (), stack.name)]


def _cuda(stack: Stack, matrix: Matrix, pin: Pin, version: str, builds: list[OrtBuild],
          sources: list[_Source], python: str | None, floats: bool) -> list[LintFinding]:
    out: list[LintFinding] = []
    cudas = sorted({b.cuda_major for b in builds})
    cudnns = {b.cudnn_major for b in builds if b.cudnn_major is not None}
    installs = f"installs {version}" if floats else f"pins {version}"
    # a place whose CUDA major is already wrong gets no second finding for its cuDNN (the fix picks both)
    wrong = {s.where for s in sources if s.cuda is not None and s.cuda not in cudas}
    # Libraries of the build's own major on the system (the image, conda) are what it loads: wheels of
    # another major beside them (torch's) have other sonames and do not stand in its way.
    system_cuda = {s.cuda for s in sources if s.system and s.cuda in cudas}
    system_cudnn = {s.cudnn for s in sources if s.system and s.cudnn in cudnns}
    cuda_bad: dict[int, list[_Source]] = {}
    cudnn_bad: dict[int, list[_Source]] = {}
    for s in sources:
        if s.cuda is None and s.where in wrong:
            continue
        if not s.system and (system_cuda if s.cuda is not None else system_cudnn):
            continue
        if s.cuda is not None and s.cuda not in cudas:
            cuda_bad.setdefault(s.cuda, []).append(s)
        elif s.cudnn is not None and cudnns and s.cudnn not in cudnns:
            cudnn_bad.setdefault(s.cudnn, []).append(s)
    for major, group in cuda_bad.items():
        detail = (f"{_label(pin)} {installs}, built for CUDA {'/'.join(map(str, cudas))}; "
                  f"{' and '.join(x.what for x in group)} {'bring' if len(group) > 1 else 'brings'} CUDA {major}")
        want_cudnn = next((x.cudnn for x in sources if x.cudnn is not None and x.cuda in (None, major)), None)
        target = _target(matrix, stack, pin, cuda=major, cudnn=want_cudnn, python=python)
        feed = None if target is not None or want_cudnn is None else _pick_feed(matrix, major, want_cudnn, python)
        if feed is not None:
            fix, line = _feed_fix(pin, feed[0], feed[1], matrix, f"CUDA {major} and cuDNN {want_cudnn}")
        else:
            target = target or _target(matrix, stack, pin, cuda=major, python=python)
            fix, line = _pin_fix(pin, target, matrix, f"the newest release built for CUDA {major}" if target else
                                 f"no onnxruntime-gpu release on PyPI is built for CUDA {major}"
                                 + (f" with wheels for Python {python}" if python else "")
                                 + f": move the stack to CUDA {'/'.join(map(str, cudas))}", stack)
        out.append(LintFinding(make("lint-ort-cuda-mismatch", detail, fix), pin.where, line,
                               tuple(x.where for x in group), stack.name))
    for major, group in cudnn_bad.items():
        detail = (f"{_label(pin)} {installs}, built for cuDNN {'/'.join(map(str, sorted(cudnns)))}; "
                  f"{' and '.join(x.what for x in group)} {'bring' if len(group) > 1 else 'brings'} cuDNN {major}")
        stack_cuda = next((x.cuda for x in sources if x.cuda is not None), None)
        want_cuda = stack_cuda if stack_cuda is not None else cudas[0]
        target = _target(matrix, stack, pin, cuda=want_cuda, cudnn=major, python=python)
        feed = None if target is not None else _pick_feed(matrix, want_cuda, major, python)
        if feed is not None:
            fix, line = _feed_fix(pin, feed[0], feed[1], matrix, f"CUDA {want_cuda} and cuDNN {major}")
        else:
            fix, line = _pin_fix(pin, target, matrix, f"the newest CUDA {want_cuda} release built for cuDNN "
                                 f"{major}" if target else f"no onnxruntime-gpu release for CUDA {want_cuda} "
                                 f"is built for cuDNN {major}: change {group[0].what}", stack)
        out.append(LintFinding(make("lint-ort-cudnn-mismatch", detail, fix), pin.where, line,
                               tuple(x.where for x in group), stack.name))
    return out


def _python(stack: Stack, matrix: Matrix, pin: Pin, admitted: list[str],
            builds: list[OrtBuild]) -> list[LintFinding]:
    out: list[LintFinding] = []
    seen: set[str] = set()
    for d in _pythons(stack):
        if d.value in seen or not applies(pin, d.value):
            continue
        seen.add(d.value)
        # only releases whose patch the matrix lists: another patch of the line may have other wheels
        known = [(v, m.release) for v in admitted for m in [_match(matrix, v)]
                 if m is not None and m.exact and m.release.python]
        if not known or any(d.value in r.python for _, r in known):
            continue
        versions = admitted[0] if len(admitted) == 1 else f"{admitted[0]}...{admitted[-1]}"
        supported = sorted({p for _, r in known for p in r.python}, key=_vkey)
        detail = (f"{_label(pin)} ({versions}) has wheels for Python {', '.join(supported)}; "
                  f"{d.origin} ({_at(d.where)}) is Python {d.value}")
        cuda = builds[0].cuda_major
        target = _target(matrix, stack, pin, cuda=cuda, python=d.value) or _target(matrix, stack, pin,
                                                                                    python=d.value)
        fix, line = _pin_fix(pin, target, matrix, f"the newest release with Python {d.value} wheels"
                             if target else f"no onnxruntime-gpu release has Python {d.value} wheels", stack)
        out.append(LintFinding(make("lint-ort-python-unsupported", detail, fix), pin.where, line, (d.where,),
                               stack.name))
    return out


def _padded(v: str) -> tuple[int, ...]:
    key = list(_vkey(v))
    while key and key[-1] == 0:
        key.pop()
    return tuple(key)


# PyPI, and PyTorch's index (torch's builds, never onnxruntime-gpu's): an index beside them changes nothing here
_PYPI_HOSTS = ("pypi.org/", "pypi.python.org/", "files.pythonhosted.org/", "download.pytorch.org/")


def _no_such_release(stack: Stack, matrix: Matrix, pin: Pin, python: str | None,
                     sources: list[_Source]) -> list[LintFinding]:
    """An exact pin on a version PyPI does not have: withdrawn (onnxruntime-gpu 1.20.1), or of a line whose
    Linux wheels are gone (below 1.11). A fresh build stops at it; one built before goes on working, so
    the pin goes unnoticed. Not said of a version newer than the matrix's newest (it may be out since),
    nor where an index other than PyPI is named: a mirror or a private index may have it."""
    exact = exact_version(pin.spec)
    if exact is None or not re.fullmatch(r"\d+(?:\.\d+)+", exact):
        return []
    indexes = [url for kind, url, _ in stack.feeds if kind in ("index-url", "extra-index-url")]
    indexes += [pin.index] if pin.index else []
    if any(not any(host in url.lower() for host in _PYPI_HOSTS) for url in indexes):
        return []  # an onnxruntime feed, a mirror, a private index: their versions are not PyPI's
    known = _oldest_first(matrix)
    # `==1.17` is 1.17.0 (PEP 440 pads with zeros)
    if not known or _vkey(exact) >= _vkey(known[-1]) or any(_padded(v) == _padded(exact) for v in known):
        return []
    match = _match(matrix, exact)
    line = match.release if match is not None else None
    pythons = [d.value for d in _pythons(stack) if applies(pin, d.value)]
    # the newest patch of the same line with a wheel for the declared Pythons: the smallest change
    same = [v for v in known if line is not None and v in line.versions
            and all(_python_ok(matrix, v, p) for p in pythons)]
    # else the newest release of the CUDA major the pin meant (its line's, else the stack's)
    cuda = line.cuda_major if line is not None else next((s.cuda for s in sources if s.cuda is not None), None)
    spec = ("==" + same[-1]) if same else (_target(matrix, stack, pin, cuda=cuda, python=python)
                                           or _target(matrix, stack, pin, python=python))
    where = (f"the newest {line.line} patch PyPI has" if same and line is not None
             else "the newest release that fits the stack")
    gone = f"its line {line.line} has {', '.join(line.versions)}" if line is not None and line.versions else (
        f"its Linux x86_64 wheels start at {known[0]}")
    detail = f"{_label(pin)}: PyPI has no onnxruntime-gpu {exact} ({gone}); a fresh install stops at this line"
    fix, replacement = _pin_fix(pin, spec, matrix, where, stack)
    return [LintFinding(make("lint-ort-no-such-release", detail, fix), pin.where, replacement, (), stack.name)]


def _floor(stack: Stack) -> Declared | None:
    return next((d for d in stack.declared if d.kind == "driver"), None)


def _driver(stack: Stack, matrix: Matrix, pin: Pin, builds: list[OrtBuild]) -> list[LintFinding]:
    floor = _floor(stack)
    if floor is None or any(_driver_ok(matrix, b.cuda_major, floor.value) for b in builds):
        return []
    b = builds[0]
    need = matrix.cuda_majors[b.cuda_major].min_driver_linux
    detail = (f"{_label(pin)} is built for CUDA {b.cuda_major}, which needs driver {need} or newer; "
              f"{floor.origin} ({_at(floor.where)}) declares {floor.value}")
    target = _target(matrix, stack, pin, driver=floor.value, python=_one_python(stack))
    fix, line = _pin_fix(pin, target, matrix, f"the newest release driver {floor.value} runs", stack)
    return [LintFinding(make("lint-cuda-needs-newer-driver", detail, fix), pin.where, line, (floor.where,),
                        stack.name)]


def _image_driver(stack: Stack, matrix: Matrix) -> list[LintFinding]:
    floor = _floor(stack)
    if floor is None:
        return []
    out: list[LintFinding] = []
    for d in stack.declared:
        if d.kind != "cuda":
            continue
        need = matrix.min_driver(d.value, "linux")
        if need is None or _vkey(need) <= _vkey(floor.value):
            continue
        runs = [m for m in sorted(matrix.cuda_majors) if _driver_ok(matrix, m, floor.value)]
        detail = (f"{d.origin} is CUDA {d.value}, which needs driver {need} or newer; {floor.origin} "
                  f"({_at(floor.where)}) declares {floor.value}")
        fix = (f"{_at(d.where)}: use a base image of CUDA {runs[-1]}.x" if runs else
               f"{_at(d.where)}: no CUDA the matrix knows runs on driver {floor.value}")
        out.append(LintFinding(make("lint-cuda-needs-newer-driver", detail, fix), d.where, None, (floor.where,),
                               stack.name))
    return out


def _kernels(stack: Stack, matrix: Matrix, pin: Pin, version: str, builds: list[OrtBuild],
             sources: list[_Source]) -> list[LintFinding]:
    out: list[LintFinding] = []
    pypi = [b for b in builds if b.feed is None]
    if not pypi:
        return out  # the kernels of feed builds were not read
    release = pypi[0].release
    k = release.kernels_for()
    if k is None:
        return out
    for d in stack.declared:
        if d.kind != "gpu":
            continue
        cc = parse_compute_capability(d.value)
        if cc is None:
            continue
        cov = coverage(cc, k.archs, ptx_isa=k.ptx_isa, isolated=k.isolated)
        if cov.runs:
            continue
        detail = (f"{_label(pin)} ({version}) carries {describe_archs(k.archs, k.ptx_isa)}; "
                  f"{d.origin} ({_at(d.where)}) names {sm_name(cc)}")
        cuda = next((s.cuda for s in sources if s.cuda is not None), None)
        target = (_target(matrix, stack, pin, cuda=cuda, gpus=[cc], python=_one_python(stack))
                  if cuda is not None else None) or _target(matrix, stack, pin, gpus=[cc], python=_one_python(stack))
        fix, line = _pin_fix(pin, target, matrix, f"the newest release with kernels for {sm_name(cc)}" if target
                             else f"no onnxruntime-gpu release on PyPI has kernels for {sm_name(cc)}", stack)
        out.append(LintFinding(make("lint-gpu-arch-unsupported", detail, fix), pin.where, line, (d.where,),
                               stack.name))
    return out


def image_declarations(image: str, where: Where) -> list[Declared]:
    """What a base image's tag declares: its CUDA version and cuDNN major."""
    hit = image_majors(image)
    if hit is None:
        return []
    cuda, cudnn = hit
    origin = f"the base image {image}"
    out = [Declared("cuda", cuda, origin, where)]
    if cudnn is not None:
        out.append(Declared("cudnn", str(cudnn), origin, where))
    return out
