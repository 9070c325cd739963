"""``ortdoctor lint``: find the files, read them, build the stacks they declare, run the rules.

Nothing is installed and no index is asked: requirement files, pyproject.toml, uv.lock, poetry.lock,
pylock.toml, conda environment files and Dockerfiles are read as text (the readers of ``formats/``), each
environment they describe becomes a :class:`~ortdoctor.decide.lint_stack.Stack`, and
:func:`ortdoctor.diagnose.lint_rules.lint_stack` judges it against the matrix.

Target GPUs and a driver floor come from ``[tool.ortdoctor]`` of a pyproject.toml (``gpus = ["sm_70"]``,
``min-driver = "535.104.05"``), GitHub Actions workflows (runner labels, matrix keys, the ortdoctor
Action's inputs), a Dockerfile's ``TORCH_CUDA_ARCH_LIST``, or the caller (``--gpu``, ``--min-driver``). A file that cannot be read is an input error of the report, never an exception.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from ortdoctor.core.catalog import CATALOG
from ortdoctor.core.record import field, record
from ortdoctor.decide.gpu_names import sm_from_text, sm_of_name
from ortdoctor.decide.kernels import parse_compute_capability, sm_name
from ortdoctor.decide.lint_stack import (
    CPU_FLAVOURS,
    PYTHONS,
    Declared,
    Pin,
    Stack,
    Where,
    admitted_pythons,
    applies,
    lowest_python,
    names_relevant,
    parse_pin,
    relevant,
)
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import Matrix
from ortdoctor.decide.ort_dependents import dependents
from ortdoctor.diagnose.lint_rules import LintFinding, Suppressed, image_declarations, lint_stack
from ortdoctor.formats.compose import read_compose
from ortdoctor.formats.conda_env import read_conda_env
from ortdoctor.formats.dockerfile import PipInstall, read_dockerfile
from ortdoctor.formats.github_workflow import read_workflow
from ortdoctor.formats.regular_file import NotRegularFile, open_regular
from ortdoctor.formats.requirements_txt import ReqFile, read_requirements
from ortdoctor.formats.setup_py import SetupRequirement, SetupSpec, read_setup_cfg, read_setup_py
from ortdoctor.formats.toml_lines import LocatedStr, TomlError, read_toml

__all__ = ["LintReport", "Suppressed", "kind_of", "lint_paths"]

_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", ".tox", ".nox", "__pycache__",
                        "site-packages", ".mypy_cache", ".ruff_cache", ".pytest_cache", "build", "dist", ".eggs"})
_REQ_NAME = re.compile(r"(?:^|.*[-_.])(?:requirements?|reqs|constraints?)(?:[-_.].*)?\.(?:txt|in)$", re.I)
_DOCKER_NAME = re.compile(r"^(?:Dockerfile|Containerfile)(?:[._-].*)?$|.*\.(?:Dockerfile|dockerfile)$")
_COMPOSE_NAME = re.compile(r"^(?:docker-)?compose(?:[-_.].*)?\.ya?ml$", re.I)
_CONDA_NAME = re.compile(r"^(?:environment|conda|env)(?:[-_.].*)?\.ya?ml$", re.I)
_MAX_INCLUDE_DEPTH = 16
_MAX_FILE_BYTES = 8 * 1024 * 1024


@record
class LintReport:
    files: tuple[str, ...]  # every file read, in order
    stacks: int  # how many environments were judged
    findings: tuple[LintFinding, ...]  # what counts: the suppressed ones are not here
    errors: tuple[str, ...] = ()  # inputs that could not be read: "path: why"
    skipped: tuple[str, ...] = field(default_factory=tuple)  # paths given that are no file lint reads
    suppressed: tuple[Suppressed, ...] = field(default_factory=tuple)


def kind_of(path: Path) -> str | None:
    """Which reader a file name calls for: requirements, pyproject, setup.py, setup.cfg, uv.lock,
    poetry.lock, pylock, conda, dockerfile, compose; None for any other file."""
    name = path.name
    if path.parent.name == "workflows" and path.parent.parent.name == ".github" and name.endswith((".yml", ".yaml")):
        return "workflow"
    if name == "pyproject.toml":
        return "pyproject"
    if name in ("setup.py", "setup.cfg"):
        return name
    if name == "uv.lock":
        return "uv.lock"
    if name == "poetry.lock":
        return "poetry.lock"
    if name == "pylock.toml" or (name.startswith("pylock.") and name.endswith(".toml")):
        return "pylock"
    if _DOCKER_NAME.match(name):
        return "dockerfile"
    if _COMPOSE_NAME.match(name):
        return "compose"
    if _CONDA_NAME.match(name):
        return "conda"
    if _REQ_NAME.match(name) or (path.parent.name in ("requirements", "reqs") and name.endswith((".txt", ".in"))):
        return "requirements"
    return None


def _discover(paths: Sequence[str]) -> tuple[list[tuple[Path, str, str]], list[str], list[str]]:
    """([(path, shown name, kind)], errors, skipped)."""
    found: list[tuple[Path, str, str]] = []
    errors: list[str] = []
    skipped: list[str] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            for file in sorted(_walk(p)):
                kind = kind_of(file)
                if kind is not None:
                    found.append((file, os.path.relpath(file) if not p.is_absolute() else str(file), kind))
        elif p.is_file():
            kind = kind_of(p) or _sniff(p)
            if kind is None:
                skipped.append(given)
            else:
                found.append((p, given, kind))
        else:
            errors.append(f"{given}: no such file or directory")
    return found, errors, skipped


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info")]
        for name in filenames:
            yield Path(dirpath, name)


def _sniff(path: Path) -> str | None:
    """A file given by name whose name says nothing: a requirements file or a conda file by its text."""
    if path.suffix in (".yml", ".yaml"):
        return "conda"
    if path.suffix in (".txt", ".in"):
        return "requirements"
    return None


def _read(path: Path) -> str:
    # a FIFO or a device named like a requirements file would block or never end: refused
    with open_regular(path) as fh:
        data = fh.read(_MAX_FILE_BYTES + 1)
    if len(data) > _MAX_FILE_BYTES:
        raise ValueError(f"larger than {_MAX_FILE_BYTES // (1024 * 1024)} MiB")
    return data.decode("utf-8-sig", errors="replace")


class _Reader:
    """Reads each file once; builds the stacks."""

    def __init__(self) -> None:
        self.texts: dict[str, str | None] = {}  # by the path as opened
        self.lines: dict[str, list[str]] = {}
        self.parsed: dict[str, ReqFile] = {}
        self.errors: list[str] = []
        self.read_order: list[str] = []
        self.keys: dict[str, str] = {}  # the path as shown -> as opened

    def text(self, path: Path, shown: str) -> str | None:
        key = os.fspath(path)
        self.keys.setdefault(shown, key)
        if key not in self.texts:
            try:
                text: str | None = _read(path)
            except NotRegularFile:
                self.errors.append(f"{shown}: not a regular file")
                text = None
            except (OSError, ValueError) as e:
                self.errors.append(f"{shown}: {getattr(e, 'strerror', None) or e}")
                text = None
            else:
                self.read_order.append(shown)
            self.texts[key] = text
        return self.texts[key]

    def real(self, shown: str) -> str:
        """The real path of a file as shown: one file a Dockerfile and the command line name apart."""
        return os.path.realpath(self.keys.get(shown, shown))

    def line(self, path: Path, number: int) -> str:
        key = os.fspath(path)
        lines = self.lines.get(key)
        if lines is None:
            lines = self.lines[key] = (self.texts.get(key) or "").splitlines()
        return lines[number - 1] if 0 < number <= len(lines) else ""

    # -- requirement files --------------------------------------------------------------------
    def requirements(self, path: Path, shown: str, depth: int = 0,
                     seen: frozenset[Path] = frozenset()) -> tuple[list[Pin], list[tuple[str, str, Where]]]:
        text = self.text(path, shown)
        real = Path(os.path.realpath(path))
        if text is None or depth > _MAX_INCLUDE_DEPTH or real in seen:
            return [], []
        # a requirements file a Dockerfile or another file includes is read once, parsed once
        parsed = self.parsed.get(os.fspath(path))
        if parsed is None:
            parsed = self.parsed[os.fspath(path)] = read_requirements(text)
        pins: list[Pin] = []
        feeds = [(f.kind, f.url, Where(shown, f.line, self.line(path, f.line))) for f in parsed.feeds]
        for r in parsed.requirements:
            if not names_relevant(r.text):
                continue
            pin = parse_pin(r.text, Where(shown, r.line, self.line(path, r.line)))
            if pin is not None:
                pins.append(pin)
        constraints: list[Pin] = []
        for inc in parsed.includes:
            target = path.parent / inc.target
            sub_shown = os.path.normpath(os.path.join(os.path.dirname(shown), inc.target))
            if not target.is_file():
                continue
            sub_pins, sub_feeds = self.requirements(target, sub_shown, depth + 1, seen | {real})
            feeds += sub_feeds
            (pins if inc.kind == "r" else constraints).extend(sub_pins)
        return _constrained(pins, constraints), feeds

    # -- stacks per kind ----------------------------------------------------------------------
    def stacks(self, path: Path, shown: str, kind: str) -> list[Stack]:
        if kind == "requirements":
            text = self.text(path, shown)
            if text is not None and not _may_matter(text, kind):
                return [Stack(shown, ())]
            pins, feeds = self.requirements(path, shown)
            return [Stack(shown, tuple(pins), tuple(feeds))]
        text = self.text(path, shown)
        if text is None:
            return []
        if not _may_matter(text, kind):
            return [Stack(shown, ())]
        if kind == "dockerfile":
            return self.dockerfile(path, shown, text)
        if kind == "conda":
            return self.conda(path, shown, text)
        if kind == "compose":
            return self.compose(path, shown, text)
        if kind == "workflow":
            return self.workflow(path, shown, text)
        if kind in ("setup.py", "setup.cfg"):
            return self.setup(path, shown, read_setup_py(text) if kind == "setup.py" else read_setup_cfg(text))
        try:
            if kind == "pyproject":
                doc = _read_pyproject(text)
            else:
                doc = read_toml(_lock_subset(text, kind) if kind in ("uv.lock", "poetry.lock", "pylock") else text)
        except TomlError as e:
            self.errors.append(f"{shown}: {e}")
            return []
        if kind == "pyproject":
            return _pyproject(doc, shown, self, path)
        if kind == "uv.lock":
            return _uv_lock(doc, shown, self, path)
        if kind == "poetry.lock":
            return _poetry_lock(doc, shown, self, path)
        return _pylock(doc, shown, self, path)

    def where(self, path: Path, shown: str, value: Any) -> Where:
        line = value.line if isinstance(value, LocatedStr) else 0
        return Where(shown, line, self.line(path, line))

    def dockerfile(self, path: Path, shown: str, text: str) -> list[Stack]:
        out: list[Stack] = []
        stages = read_dockerfile(text)
        for n, stage in enumerate(stages):
            here = Where(shown, stage.line, self.line(path, stage.line))
            declared = image_declarations(stage.image, here)
            m = re.match(r"(?:docker\.io/)?(?:library/)?python:(3\.\d+)", stage.image)
            if m:
                declared.append(Declared("python", m.group(1), f"the base image {stage.image}", here))
            for py in stage.pythons[-1:]:  # the last Python the stage installs is the one it uses
                where = Where(shown, py.line, self.line(path, py.line))
                declared.append(Declared("python", py.value, f"the Python {py.value} the image installs", where))
            for e in stage.env:
                where = Where(shown, e.line, self.line(path, e.line))
                if e.name == "LD_LIBRARY_PATH":
                    for cuda in sorted(set(re.findall(r"/cuda-(\d+\.\d+)", e.value))):
                        declared.append(Declared("cuda", cuda, f"LD_LIBRARY_PATH's /usr/local/cuda-{cuda}", where))
                elif e.name == "TORCH_CUDA_ARCH_LIST":
                    for arch in re.split(r"[;\s,]+", e.value):
                        arch = arch.replace("+PTX", "").strip()
                        if re.fullmatch(r"\d+\.\d", arch):
                            declared.append(Declared("gpu", arch, "TORCH_CUDA_ARCH_LIST", where))
            pins, feeds = self.pip_pins(path, shown, stage.pip_installs, lambda value: _docker_path(path, value))
            name = f"{shown} (stage {stage.name or n + 1}: FROM {stage.image})" if len(stages) > 1 else shown
            out.append(Stack(name, tuple(pins), tuple(feeds), tuple(declared)))
        return out

    def pip_pins(self, path: Path, shown: str, installs: Iterable[PipInstall], locate: Callable[[str], Path | None],
                 before: Sequence[Pin] = ()) -> tuple[list[Pin], list[tuple[str, str, Where]]]:
        """What a sequence of pip commands leaves installed (a Dockerfile stage's, a workflow job's) on top of
        ``before``: the requirements they name, with the files their ``-r`` names (``locate`` finds them),
        less what a later ``pip uninstall`` takes out; and the index URLs they name."""
        pins: list[Pin] = list(before)
        feeds: list[tuple[str, str, Where]] = []
        for install in installs:
            if install.uninstall:
                # `pip uninstall -y onnxruntime` before the GPU build goes in: the CPU one is gone
                gone = {canonicalize_name(w.word) for w in install.words if not w.word.startswith("-")}
                pins = [p for p in pins if p.name not in gone]
                continue
            words = list(install.words)
            i = 0
            while i < len(words):
                w = words[i]
                where = Where(shown, w.line, self.line(path, w.line))
                option, value, i = _pip_option(words, i)
                if option in ("-r", "--requirement", "-c", "--constraint") and value:
                    target = locate(value)
                    if target is not None:
                        sub_shown = os.path.normpath(os.path.relpath(target) if not target.is_absolute()
                                                     else str(target))
                        sub, sub_feeds = self.requirements(target, sub_shown)
                        pins += sub if option in ("-r", "--requirement") else []
                        feeds += sub_feeds
                elif option in ("-i", "--index-url") and value:
                    feeds.append(("index-url", value, where))
                elif option == "--extra-index-url" and value:
                    feeds.append(("extra-index-url", value, where))
                elif option is None and not w.word.startswith("-"):
                    pin = parse_pin(w.word, where)
                    if pin is not None and "$" not in w.word:
                        pins.append(pin)
        return pins, feeds

    def compose(self, path: Path, shown: str, text: str) -> list[Stack]:
        """A service that asks for GPUs and names a CUDA image: its CUDA against the driver floor."""
        out: list[Stack] = []
        for service in read_compose(text):
            if not service.gpus or not service.image:
                continue
            where = Where(shown, service.image_line, self.line(path, service.image_line))
            declared = image_declarations(service.image, where)
            if declared:
                out.append(Stack(f"{shown} (service {service.name})", (), (), tuple(declared)))
        return out

    def workflow(self, path: Path, shown: str, text: str) -> list[Stack]:
        """The machines a GitHub Actions workflow runs on: GPUs named by runner labels (``gpu-t4-4-core``,
        ``[self-hosted, a100]``) and by matrix keys about GPUs (``gpu: [sm_86, H100]``), and the ``gpus``
        and ``min-driver`` inputs of the ortdoctor Action: what it declares holds for every file linted
        with it, as ``[tool.ortdoctor]`` does. A job whose ``run:`` steps pip-install a package a rule reads
        (by name, or in a ``-r`` file of the repository) is a stack of its own, under each Python its
        ``actions/setup-python`` step sets up."""
        declared: list[Declared] = []
        jobs: list[Stack] = []
        root = path.parent.parent.parent  # the repository: .github/workflows/ci.yml
        for job in read_workflow(text):
            origin = f"{_WORKFLOW} `{job.name}`"
            pins: list[Pin] = []
            feeds: list[tuple[str, str, Where]] = []
            for directory, command in job.pip:
                # one command at a time: each step runs in its own working directory
                pins, added = self.pip_pins(path, shown, [command], functools.partial(_repo_path, root, directory),
                                            pins)
                feeds += added
            if pins:
                # not a machine of the repository's (an origin of _MACHINE_ORIGINS): this job's own Python
                pythons = [Declared("python", m.group(1), f"actions/setup-python's {v} (job `{job.name}`)",
                                    self.where(path, shown, v))
                           for v in dict.fromkeys(job.pythons) for m in [_SETUP_PYTHON.match(v)] if m]
                jobs.append(Stack(f"{shown} (job {job.name})", tuple(pins), tuple(feeds), tuple(pythons)))
            for label in job.runs_on:
                hit = sm_of_name(label)
                if hit is not None:
                    declared.append(Declared("gpu", hit[0], f"{origin}: runner label {label}",
                                             self.where(path, shown, label)))
            for key, values in job.matrix:
                if _GPU_KEY.search(key):
                    for v in values:
                        sm = _gpu_value(v)
                        if sm is not None:
                            declared.append(Declared("gpu", sm, f"{origin}: matrix {key} {v}",
                                                     self.where(path, shown, v)))
                elif _DRIVER_KEY.fullmatch(key):
                    declared += [Declared("driver", str(v), f"{origin}: matrix {key}", self.where(path, shown, v))
                                 for v in values if re.fullmatch(r"\d+(?:\.\d+)*", v)]
            for key, value in job.ortdoctor_inputs:
                where = self.where(path, shown, value)
                if key == "gpus":
                    declared += [Declared("gpu", g, f"{origin}: the ortdoctor Action's gpus", where)
                                 for g in str(value).split() if _gpu_value(g) is not None]
                elif key == "min-driver" and re.fullmatch(r"\d+(?:\.\d+)*", value):
                    declared.append(Declared("driver", str(value), f"{origin}: the ortdoctor Action's min-driver",
                                             where))
        return ([Stack(shown, (), (), tuple(declared))] if declared else []) + jobs

    def setup(self, path: Path, shown: str, spec: SetupSpec) -> list[Stack]:
        """A setuptools package: its ``install_requires`` and each ``extras_require`` extra with them, under
        its ``python_requires``. What its users install, so a library as a pyproject with a build system."""
        declared: list[Declared] = []
        rp = spec.python_requires
        low = lowest_python(rp.text) if rp is not None else None
        if rp is not None and low:
            declared.append(Declared("python", low, f'python_requires "{rp.text}"',
                                     Where(shown, rp.line, self.line(path, rp.line)), exact=False,
                                     admits=admitted_pythons(rp.text)))

        def pins_of(values: Iterable[SetupRequirement]) -> list[Pin]:
            return [pin for r in values if names_relevant(r.text)
                    for pin in [parse_pin(r.text, Where(shown, r.line, self.line(path, r.line)))] if pin is not None]

        base = pins_of(spec.install_requires)
        stacks = [Stack(shown, tuple(base), (), tuple(declared), library=True)]
        for extra, values in spec.extras_require:
            pins = pins_of(values)
            if pins:
                stacks.append(Stack(f"{shown} (extra {extra})", tuple(base + pins), (), tuple(declared), library=True))
        return stacks

    def conda(self, path: Path, shown: str, text: str) -> list[Stack]:
        env = read_conda_env(text)
        pins: list[Pin] = []
        feeds: list[tuple[str, str, Where]] = []
        declared: list[Declared] = []
        for item in env.items:
            where = Where(shown, item.line, self.line(path, item.line))
            if item.pip:
                if item.text.startswith("-"):
                    parsed = read_requirements(item.text)
                    feeds += [(f.kind, f.url, where) for f in parsed.feeds]
                    for inc in parsed.includes:
                        target = path.parent / inc.target
                        if inc.kind == "r" and target.is_file():
                            sub, sub_feeds = self.requirements(
                                target, os.path.normpath(os.path.join(os.path.dirname(shown), inc.target)))
                            pins += sub
                            feeds += sub_feeds
                    continue
                pin = parse_pin(item.text, where)
                if pin is not None:
                    pins.append(pin)
                continue
            declared += _conda_declared(item.text, where)
        return [Stack(shown, tuple(pins), tuple(feeds), tuple(declared))]


def _relevant_tokens() -> tuple[str, ...]:
    """The package names a rule reads, lower case, in each spelling of their separators."""
    out: set[str] = set()
    for name in ("onnxruntime", "torch", "nvidia", "ort-nightly", *dependents()):
        parts = re.split(r"[-_.]", name.lower())
        out |= {sep.join(parts) for sep in "-_."}
    return tuple(sorted(out))


_TOKENS: list[tuple[str, ...]] = []
_INCLUDES = re.compile(r"(?:^|\s)(?:-[rc]|--requirement|--constraint)", re.MULTILINE)


def _may_matter(text: str, kind: str) -> bool:
    """Whether a file can hold anything a rule reads: a package name a rule reads, an include (a
    requirements file), ``[tool.ortdoctor]`` (a pyproject). Most files of a monorepo name none, and skip
    the parse. Dockerfiles, conda and Compose files always count (a base image says enough alone)."""
    if kind not in ("requirements", "pyproject", "setup.py", "setup.cfg", "uv.lock", "poetry.lock", "pylock"):
        return True
    if not _TOKENS:
        _TOKENS.append(_relevant_tokens())
    lowered = text.lower()  # substring tests: an alternation of names with IGNORECASE is 50 times slower
    if any(token in lowered for token in _TOKENS[0]):
        return True
    return (kind == "requirements" and _INCLUDES.search(text) is not None) or (kind == "pyproject"
                                                                               and "ortdoctor" in text)


_WORKFLOW = "the GitHub Actions job"
#: where the repository's machines are declared: they hold for every stack linted with them
_MACHINE_ORIGINS = ("[tool.ortdoctor]", _WORKFLOW)
_SETUP_PYTHON = re.compile(r"(3\.\d+)(?:\.\d+)?$")  # "3.10", "3.9.18"; not "3.x", "pypy3.9", "3.13t"
_GPU_KEY = re.compile(r"gpu|cuda[-_]?arch|compute[-_]?cap|\bsm\b|\barch", re.IGNORECASE)
_DRIVER_KEY = re.compile(r"(?:min[-_]?|nvidia[-_]?)?driver(?:[-_]version)?", re.IGNORECASE)


def _gpu_value(value: str) -> str | None:
    """``sm_86`` for ``8.6``, ``sm_86``, ``86``, ``A10G``, ``nvidia-a10g``; None for anything else."""
    cc = parse_compute_capability(value)
    if cc is not None:
        return sm_name(cc)
    hit = sm_of_name(value)
    return hit[0] if hit is not None else sm_from_text(value)


_UNREAD_TABLES = {"uv.lock": ("[package.metadata",), "poetry.lock": ("[package.dependencies]", "[package.extras]"),
                  "pylock": ("[[packages.wheels]]", "[packages.sdist]")}
_BLOCK_NAME = re.compile(r'name = "([^"]+)"')
_ROOT_SOURCE = re.compile(r"source = \{ *(editable|virtual|directory) *=")


# the tables of a pyproject.toml a rule reads; the rest ([tool.ruff], [tool.mypy], [tool.pytest...], often
# most of the file) is blanked before parsing, its lines kept so every line number stays
_PYPROJECT_TABLES = re.compile(r"^\[\[?\s*(?:project|build-system|dependency-groups|tool\.(?:poetry|uv|pdm|ortdoctor))"
                               r"\s*[\].]")
_HEADER = re.compile(r"^\[\[?\s*[A-Za-z0-9_\"'-][^\]]*\]\]?\s*(?:#.*)?$")


def _read_pyproject(text: str) -> dict[str, Any]:
    lines = text.split("\n")
    keep = True
    out: list[str] = []
    blanked = False
    for line in lines:
        if line.startswith("[") and _HEADER.match(line):
            keep = _PYPROJECT_TABLES.match(line) is not None
        out.append(line if keep else "")
        blanked = blanked or not keep
    if not blanked:
        return read_toml(text)
    try:
        return read_toml("\n".join(out))
    except TomlError:
        # a line inside a multi-line string or array taken for a header: the whole file, as written
        return read_toml(text)


def _lock_subset(text: str, kind: str) -> str:
    """A lock file with the package entries no rule reads blanked out (their lines kept, so every line
    number stays): a lock of a few hundred packages needs a handful. The whole file where the dependency
    graph decides (a uv.lock with both onnxruntime flavours, or more than one torch, reached through extras)."""
    header = "[[packages]]" if kind == "pylock" else "[[package]]"
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if line.strip() == header]
    if not starts:
        return text
    blocks = [(a, b) for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    names = []
    for a, b in blocks:
        m = next((m for m in map(_BLOCK_NAME.match, lines[a + 1:min(b, a + 4)]) if m is not None), None)
        names.append(canonicalize_name(m.group(1)) if m else "")
    if kind == "uv.lock":
        flavours = {n for n in names if n == "onnxruntime-gpu" or n in CPU_FLAVOURS or n in dependents()}
        if len(flavours) > 1 or names.count("torch") > 1:
            return text
    keep = [False] * len(lines)
    for i in range(starts[0]):
        keep[i] = True
    for (a, b), name in zip(blocks, names, strict=True):
        root = kind == "uv.lock" and any(_ROOT_SOURCE.match(line) for line in lines[a:b])
        if relevant(name) or root:
            inside = False
            skipped_table = False
            for i in range(a, b):
                line = lines[i]
                if line.startswith("["):
                    # tables no rule reads: the metadata uv keeps, Poetry's dependencies and extras
                    skipped_table = line.startswith(_UNREAD_TABLES[kind])
                if skipped_table:
                    continue
                # the list of every wheel file with its hash: most of a lock, read by no rule
                if not inside and line.startswith(("files = [", "wheels = [")) and not line.rstrip().endswith("]"):
                    inside = True
                elif inside and line.strip() == "]":
                    inside = False
                else:
                    keep[i] = not inside
    return "\n".join([line if k else "" for line, k in zip(lines, keep, strict=True)])


def _constrained(pins: list[Pin], constraints: list[Pin]) -> list[Pin]:
    """A constraint's exact pin stands in for an unpinned requirement of the same name."""
    exact = {c.name: c for c in constraints if c.spec.startswith("==")}
    return [exact[p.name] if not p.spec and p.name in exact else p for p in pins]


def _pip_option(words: list[Any], i: int) -> tuple[str | None, str | None, int]:
    w: str = words[i].word
    if w.startswith("--") and "=" in w:
        name, _, value = w.partition("=")
        return name, value, i + 1
    if w in ("-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url",
             "-f", "--find-links", "--target", "-t", "--prefix", "--root", "--python-version", "--platform",
             "--trusted-host", "--cache-dir", "--log", "--timeout", "--retries", "-e", "--editable",
             "--default-timeout"):
        return w, (words[i + 1].word if i + 1 < len(words) else None), i + 2
    if len(w) > 2 and w[:2] in ("-r", "-c", "-i") and not w.startswith("--"):
        return w[:2], w[2:], i + 1
    if w.startswith("-"):
        return w, None, i + 1
    return None, None, i + 1


def _repo_path(root: Path, directory: str, target: str) -> Path | None:
    """A requirements file a workflow's ``pip install -r`` names: from the step's working directory, the
    repository's root unless ``working-directory`` says otherwise."""
    if "$" in target or "$" in directory or target.startswith("/") or directory.startswith("/"):
        return None
    candidate = root / directory / target
    return candidate if ".." not in candidate.relative_to(root).parts and candidate.is_file() else None


def _docker_path(dockerfile: Path, target: str) -> Path | None:
    """A requirements file a Dockerfile installs: next to the Dockerfile, else where the build context
    usually is (the directories above it), by its path as written and by its name."""
    target = target.lstrip("./") if target.startswith("./") else target
    name = Path(target).name
    for base in [dockerfile.parent, *dockerfile.parent.parents][:4]:
        for candidate in (base / target.lstrip("/"), base / name):
            if candidate.is_file():
                return candidate
    return None


_CONDA_CUDA = re.compile(r"^(cudatoolkit|cuda-version|pytorch-cuda|cuda-toolkit|cuda-runtime|cuda-cudart|cuda)"
                         r"\s*[=<>~!]*\s*(\d+\.\d+)")


def _conda_declared(text: str, where: Where) -> list[Declared]:
    spec = text.split("::")[-1].strip()
    m = re.match(r"^python\s*(==?|>=|~=)?\s*(3\.\d+)", spec)
    if m:
        return [Declared("python", m.group(2), f"conda's `{spec}`", where, exact=m.group(1) in (None, "=", "=="))]
    m = _CONDA_CUDA.match(spec)
    if m:
        return [Declared("cuda", m.group(2), f"conda's `{spec}`", where)]
    m = re.match(r"^cudnn\s*[=<>~]*\s*(\d+)", spec)
    if m:
        return [Declared("cudnn", m.group(1), f"conda's `{spec}`", where)]
    return []


# -- pyproject.toml ---------------------------------------------------------------------------------
def _strings(value: Any) -> list[LocatedStr]:
    return [v for v in value if isinstance(v, LocatedStr)] if isinstance(value, list) else []


def _poetry_spec(constraint: str) -> str:
    """A Poetry version constraint as a PEP 440 specifier (``^1.18`` -> ``>=1.18,<2``)."""
    out: list[str] = []
    for part in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", constraint.strip()):
        part = part.strip()
        if not part or part == "*":
            continue
        if part.startswith("^"):
            nums = [int(x) for x in re.findall(r"\d+", part)] or [0]
            bump = next((i for i, n in enumerate(nums) if n != 0), len(nums) - 1)
            upper = [*nums[:bump], nums[bump] + 1]
            out += [f">={part[1:]}", "<" + ".".join(map(str, upper))]
        elif part.startswith("~") and not part.startswith("~="):
            nums = [int(x) for x in re.findall(r"\d+", part)]
            upper = [nums[0], nums[1] + 1] if len(nums) > 1 else [nums[0] + 1]
            out += [f">={part[1:]}", "<" + ".".join(map(str, upper))]
        elif re.match(r"^\d", part):
            out.append("==" + part)
        else:
            out.append(part)
    return ",".join(out)


def _poetry_python_marker(constraint: str) -> str | None:
    """A Poetry dependency's ``python`` constraint as a PEP 508 marker (``">=3.13"`` ->
    ``python_full_version >= "3.13"``; ``||`` alternatives joined with ``or``); None for ``*``."""
    alternatives: list[str] = []
    for part in constraint.split("||"):
        clauses = [m.groups() for c in _poetry_spec(part).split(",") if c
                   for m in [re.fullmatch(r"\s*(===?|!=|<=|>=|<|>|~=)\s*([\d.*]+)\s*", c)] if m is not None]
        if clauses:
            alternatives.append(" and ".join(_python_clause(op, v) for op, v in clauses))
    if not alternatives:
        return None
    return alternatives[0] if len(alternatives) == 1 else " or ".join(f"({a})" for a in alternatives)


def _python_clause(op: str, version: str) -> str:
    """One clause of a Python constraint as a marker: ``3.11`` is every 3.11.x, as Poetry reads it, and a
    wildcard after an ordering (``<=3.9.*``, which PEP 440 does not allow) is the bound it means."""
    if version.endswith(".*") and op not in ("==", "!="):
        nums = [int(n) for n in version[:-2].split(".")]
        above = ".".join(map(str, [*nums[:-1], nums[-1] + 1]))
        op, version = {"<=": ("<", above), ">": (">=", above)}.get(op, (op, version[:-2]))
    elif op in ("==", "===") and version.count(".") == 1:
        version += ".*"
    return f'python_full_version {"==" if op == "===" else op} "{version}"'


def _table_pins(deps: Any, shown: str, reader: _Reader, path: Path, sources: dict[str, str]) -> tuple[
        list[Pin], list[Declared]]:
    """Poetry's ``name = "constraint"`` / ``name = {version = ..., extras = [...], markers = ...}`` tables."""
    pins: list[Pin] = []
    declared: list[Declared] = []
    if not isinstance(deps, dict):
        return pins, declared
    for name, value in deps.items():
        if name != "python" and not names_relevant(name):
            continue
        entries = value if isinstance(value, list) else [value]
        for entry in entries:
            if isinstance(entry, LocatedStr):
                version, extras, marker, index, optional = entry, [], None, None, False
                anchor: Any = entry
            elif isinstance(entry, dict):
                version = entry.get("version", "")
                extras = _strings(entry.get("extras", []))
                marker = entry.get("markers")
                # `python = ">=3.13"`: Poetry installs this entry only on those Pythons (one entry per range
                # is how a project gives each Python its own constraint)
                only = _poetry_python_marker(str(entry["python"])) if "python" in entry else None
                if only:
                    marker = f"({marker}) and {only}" if marker else only
                index = sources.get(str(entry.get("source", "")))
                optional = str(entry.get("optional", "false")).lower() == "true"
                anchor = next((v for v in entry.values() if isinstance(v, LocatedStr)), None)
            else:
                continue
            where = reader.where(path, shown, anchor)
            if name == "python":
                spec = _poetry_spec(str(version))
                low = lowest_python(spec)
                if low:
                    declared.append(Declared("python", low, f"Poetry's python = \"{version}\"", where, exact=False,
                                             admits=admitted_pythons(spec)))
                continue
            text = name + (f"[{','.join(extras)}]" if extras else "") + _poetry_spec(str(version))
            if marker:
                text += f"; {marker}"
            pin = parse_pin(text, where, index=index, optional=optional)
            if pin is not None:
                pins.append(pin)
    return pins, declared


def _requires_python(rp: object, shown: str, reader: _Reader, path: Path) -> list[Declared]:
    """The lowest Python a ``requires-python`` value admits, as a declared fact (none for another value)."""
    if not isinstance(rp, LocatedStr):
        return []
    low = lowest_python(rp)
    return [Declared("python", low, f"requires-python \"{rp}\"", reader.where(path, shown, rp), exact=False,
                     admits=admitted_pythons(rp))] if low else []


def _pyproject(doc: dict[str, Any], shown: str, reader: _Reader, path: Path) -> list[Stack]:
    project = doc.get("project", {}) if isinstance(doc.get("project"), dict) else {}
    tool = doc.get("tool", {}) if isinstance(doc.get("tool"), dict) else {}
    declared: list[Declared] = []
    declared += _requires_python(project.get("requires-python"), shown, reader, path)
    declared += _config(tool.get("ortdoctor"), shown, reader, path)

    # the indexes the packages come from (uv, Poetry, PDM)
    uv = tool.get("uv", {}) if isinstance(tool.get("uv"), dict) else {}
    indexes = {str(i.get("name")): str(i.get("url")) for i in uv.get("index", []) if isinstance(i, dict)}
    feeds: list[tuple[str, str, Where]] = []
    for i in uv.get("index", []) if isinstance(uv.get("index"), list) else []:
        if isinstance(i, dict) and isinstance(i.get("url"), LocatedStr) and str(i.get("default", "")) == "true":
            feeds.append(("index-url", i["url"], reader.where(path, shown, i["url"])))
    per_package: dict[str, str] = {}
    for name, src in (uv.get("sources", {}) or {}).items() if isinstance(uv.get("sources"), dict) else []:
        for s in src if isinstance(src, list) else [src]:
            if isinstance(s, dict) and "index" in s and str(s["index"]) in indexes and "extra" not in s:
                per_package[name] = indexes[str(s["index"])]
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    poetry_sources = {str(s.get("name")): str(s.get("url")) for s in poetry.get("source", [])
                      if isinstance(s, dict)}

    def pins_of(values: Any) -> list[Pin]:
        out: list[Pin] = []
        for v in _strings(values):
            if not names_relevant(v):
                continue
            pin = parse_pin(v, reader.where(path, shown, v))
            if pin is not None:
                out.append(Pin(pin.name, pin.spec, pin.extras, pin.marker, pin.where, pin.requirement,
                               per_package.get(pin.name)) if pin.name in per_package else pin)
        return out

    base = pins_of(project.get("dependencies", []))
    p_pins, p_declared = _table_pins(poetry.get("dependencies"), shown, reader, path, poetry_sources)
    optional_poetry = [p for p in p_pins if p.optional]
    base += [p for p in p_pins if not p.optional]
    declared += p_declared
    groups: dict[str, list[Pin]] = {}
    for name, values in (project.get("optional-dependencies") or {}).items():
        groups[f"[project.optional-dependencies] {name}"] = pins_of(values)
    for name, values in (doc.get("dependency-groups") or {}).items() if isinstance(doc.get("dependency-groups"),
                                                                                   dict) else []:
        groups[f"[dependency-groups] {name}"] = pins_of(values)
    for name, group in (poetry.get("group") or {}).items() if isinstance(poetry.get("group"), dict) else []:
        if isinstance(group, dict):
            g_pins, _ = _table_pins(group.get("dependencies"), shown, reader, path, poetry_sources)
            groups[f"[tool.poetry.group.{name}]"] = g_pins
    for name, members in (poetry.get("extras") or {}).items() if isinstance(poetry.get("extras"), dict) else []:
        wanted = {str(m) for m in _strings(members)}
        groups[f"[tool.poetry.extras] {name}"] = [
            Pin(p.name, p.spec, p.extras, p.marker, p.where, p.requirement, p.index, False)
            for p in optional_poetry if p.name in wanted]
    pdm = tool.get("pdm", {}) if isinstance(tool.get("pdm"), dict) else {}
    for name, values in (pdm.get("dev-dependencies") or {}).items() if isinstance(pdm.get("dev-dependencies"),
                                                                                  dict) else []:
        groups[f"[tool.pdm.dev-dependencies] {name}"] = pins_of(values)
    if isinstance(uv.get("dev-dependencies"), list):
        groups["[tool.uv] dev-dependencies"] = pins_of(uv["dev-dependencies"])
    library = _is_library(doc, poetry, uv)
    # what a package's users install: its dependencies and its extras; the development groups
    # (PEP 735, Poetry groups, PDM and uv dev-dependencies) stay in the project's own environment
    published = ("[project.optional-dependencies]", "[tool.poetry.extras]")
    stacks = [Stack(shown, tuple(base), tuple(feeds), tuple(declared), library=library)]
    for label, pins in groups.items():
        if pins:
            stacks.append(Stack(f"{shown} {label}", tuple(base + pins), tuple(feeds), tuple(declared),
                                library=library and label.startswith(published)))
    return stacks


def _is_library(doc: dict[str, Any], poetry: dict[str, Any], uv: dict[str, Any]) -> bool:
    """Whether a pyproject.toml is built into a package others install (a library, a tool on PyPI): a
    build system that is not switched off (Poetry's ``package-mode = false``, uv's ``package = false``).
    An application's pyproject without one (``uv init``'s default) pins what it runs."""
    if str(poetry.get("package-mode", "true")).lower() == "false" or str(uv.get("package", "")).lower() == "false":
        return False
    return isinstance(doc.get("build-system"), dict) or str(uv.get("package", "")).lower() == "true"


def _config(table: Any, shown: str, reader: _Reader, path: Path) -> list[Declared]:
    """``[tool.ortdoctor]``: ``gpus``, ``min-driver`` and ``ignore``."""
    if not isinstance(table, dict):
        return []
    out: list[Declared] = []
    for rid in _strings(table.get("ignore", [])):
        out.append(Declared("ignore", str(rid).strip(), _IGNORE_ORIGIN, reader.where(path, shown, rid)))
    for gpu in _strings(table.get("gpus", [])):
        out.append(Declared("gpu", str(gpu), "[tool.ortdoctor] gpus", reader.where(path, shown, gpu)))
    floor = table.get("min-driver")
    if isinstance(floor, LocatedStr):
        out.append(Declared("driver", str(floor), "[tool.ortdoctor] min-driver", reader.where(path, shown, floor)))
    return out


# -- lock files ---------------------------------------------------------------------------------------
def _lock_pin(name: Any, version: Any, shown: str, reader: _Reader, path: Path, index: str | None,
              optional: bool = False) -> Pin | None:
    if not isinstance(name, str) or not isinstance(version, str):
        return None
    where = reader.where(path, shown, name)
    return parse_pin(f"{name}=={version}", where, index=index, optional=optional)


def _uv_lock(doc: dict[str, Any], shown: str, reader: _Reader, path: Path) -> list[Stack]:
    packages = [p for p in doc.get("package", []) if isinstance(p, dict)]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for p in packages:
        by_name.setdefault(str(p.get("name", "")), []).append(p)
    declared = _requires_python(doc.get("requires-python"), shown, reader, path)
    roots = [p for p in packages if isinstance(p.get("source"), dict)
             and any(k in p["source"] for k in ("editable", "virtual", "directory"))]

    markers: dict[int, str | None] = {}  # package -> the marker of the edges that reach it (None: any)

    def reach(start: Iterable[Any]) -> list[dict[str, Any]]:
        seen: set[int] = set()
        order: list[dict[str, Any]] = []
        todo = list(start)
        while todo:
            dep = todo.pop()
            if not isinstance(dep, dict) or not _marker_linux(dep.get("marker")):
                continue
            version = dep.get("version")
            for p in by_name.get(str(dep.get("name", "")), []):
                if version is not None and str(p.get("version")) != str(version):
                    continue  # an edge that names the version reaches that entry only
                edge = str(dep["marker"]) if isinstance(dep.get("marker"), str) else None
                markers[id(p)] = edge if markers.get(id(p), edge) == edge else None
                if id(p) in seen:
                    continue
                seen.add(id(p))
                order.append(p)
                todo += list(p.get("dependencies", []))
                for extra in _strings(dep.get("extra", [])):
                    todo += list((p.get("optional-dependencies") or {}).get(str(extra), []))
        return order

    def stack(label: str, members: list[dict[str, Any]]) -> Stack:
        pins: list[Pin] = []
        for p in members:
            pin = None if p in roots else _lock_pin(p.get("name"), p.get("version"), shown, reader, path,
                                                    _registry(p.get("source")))
            if pin is not None:
                marker = markers.get(id(p))
                pins.append(Pin(pin.name, pin.spec, pin.extras, marker, pin.where, pin.requirement, pin.index)
                            if marker else pin)
        return Stack(label, tuple(pins), (), tuple(declared), locked=True)

    if not roots:
        return [stack(shown, packages)]
    base_deps = [d for r in roots for d in r.get("dependencies", [])]
    dev = [d for r in roots for group in (r.get("dev-dependencies") or {}).values() for d in group]
    stacks = [stack(shown, reach(base_deps + dev))]
    for r in roots:
        for extra, deps in (r.get("optional-dependencies") or {}).items():
            stacks.append(stack(f"{shown} (extra {extra})", reach(base_deps + dev + list(deps))))
    return stacks


def _registry(source: Any) -> str | None:
    if isinstance(source, dict):
        url = source.get("registry") or source.get("url")
        return str(url) if url else None
    return None


def _marker_linux(marker: Any) -> bool:
    if not isinstance(marker, str) or not marker:
        return True
    pin = parse_pin(f"x; {marker}", Where("", 0), every=True)
    return pin is None or applies(pin, None)


def _poetry_lock(doc: dict[str, Any], shown: str, reader: _Reader, path: Path) -> list[Stack]:
    pins: list[Pin] = []
    for p in doc.get("package", []):
        if not isinstance(p, dict):
            continue
        optional = str(p.get("optional", "false")).lower() == "true"
        source = p.get("source")
        index = str(source.get("url")) if isinstance(source, dict) and source.get("url") else None
        pin = _lock_pin(p.get("name"), p.get("version"), shown, reader, path, index, optional)
        if pin is not None:
            pins.append(pin)
    return [Stack(shown, tuple(pins), (), (), locked=True)]


def _pylock(doc: dict[str, Any], shown: str, reader: _Reader, path: Path) -> list[Stack]:
    pins: list[Pin] = []
    declared = _requires_python(doc.get("requires-python"), shown, reader, path)
    for p in doc.get("packages", []):
        if not isinstance(p, dict):
            continue
        pin = _lock_pin(p.get("name"), p.get("version"), shown, reader, path,
                        str(p["index"]) if isinstance(p.get("index"), str) else None)
        if pin is None:
            continue
        marker = p.get("marker")
        if isinstance(marker, str) and marker:
            pin = Pin(pin.name, pin.spec, pin.extras, str(marker), pin.where, pin.requirement, pin.index)
        pins.append(pin)
    return [Stack(shown, tuple(pins), (), tuple(declared), locked=True)]


# -- the use case -------------------------------------------------------------------------------------
def lint_paths(paths: Sequence[str] = (".",), *, gpus: Sequence[str] = (), min_driver: str | None = None,
               matrix: Matrix | None = None) -> LintReport:
    """Lint every recognised file under ``paths`` (files or directories)."""
    matrix = matrix or load_matrix()
    found, errors, skipped = _discover(paths)
    reader = _Reader()
    stacks: list[Stack] = []
    for path, shown, kind in found:
        stacks += reader.stacks(path, shown, kind)
    extra = [Declared("gpu", g, "--gpu", Where("--gpu", 0)) for g in gpus]
    if min_driver:
        extra.append(Declared("driver", min_driver, "--min-driver", Where("--min-driver", 0)))
    # [tool.ortdoctor] of any pyproject read holds for every stack (the repository's machines)
    config = [d for s in stacks for d in s.declared if d.kind in ("gpu", "driver")
              and d.origin.startswith(_MACHINE_ORIGINS)]
    # the oldest driver any of them declares is the floor
    drivers = sorted((d for d in config if d.kind == "driver"), key=lambda d: _version_key(d.value))
    config = [d for d in config if d.kind != "driver"] + drivers[:1]
    shared = extra + [d for d in config if not (d.kind == "driver" and min_driver)]
    under = _installed_under(stacks, reader)
    findings: list[LintFinding] = []
    seen: set[tuple[str, str, int, tuple[Where, ...]]] = set()
    for s in stacks:
        own = [d for d in s.declared if not d.origin.startswith(_MACHINE_ORIGINS)]
        if shared or config:
            own += _dedupe(shared)
        files = dict.fromkeys(p.where.file for p in s.pins)
        elsewhere = tuple((f, d) for f in files for d in under.get(reader.real(f), ()) if d not in s.declared)
        s = Stack(s.name, s.pins, s.feeds, tuple(own), s.locked, s.library, elsewhere)
        for f in lint_stack(s, matrix):
            key = (f.finding.id, f.where.file, f.where.line, f.related)
            if key not in seen:
                seen.add(key)
                findings.append(f)
    findings.sort(key=lambda f: (f.where.file, f.where.line, f.finding.id))
    ignored: dict[str, Where] = {}
    for d in (d for s in stacks for d in s.declared if d.kind == "ignore"):
        if _is_lint_id(d.value):
            ignored.setdefault(d.value, d.where)
        else:
            errors.append(f"{d.where.file}:{d.where.line}: {_IGNORE_ORIGIN} names no lint finding id: {d.value!r}")
    kept: list[LintFinding] = []
    quiet: list[Suppressed] = []
    for f in findings:
        by = _comment(reader, f)
        if by is not None:
            quiet.append(Suppressed(f, "inSource", by))
        elif f.finding.id in ignored:
            quiet.append(Suppressed(f, "external", ignored[f.finding.id]))
        else:
            kept.append(f)
    return LintReport(tuple(reader.read_order), len(stacks), tuple(kept),
                      tuple(errors + reader.errors), tuple(skipped), tuple(quiet))


_IGNORE_ORIGIN = "[tool.ortdoctor] ignore"
_IGNORE_COMMENT = re.compile(r"#.*?\bortdoctor:\s*ignore\[([^\]]*)\]")


def _is_lint_id(value: str) -> bool:
    return value.startswith("lint-") and value in CATALOG


def _comment(reader: _Reader, f: LintFinding) -> Where | None:
    """The ``# ortdoctor: ignore[ID, ...]`` comment naming the finding: at the end of its line, or alone
    on the line above (a comment after another requirement there speaks for that one)."""
    key = reader.keys.get(f.where.file)
    if key is None or f.where.line < 1:
        return None
    for number in (f.where.line, f.where.line - 1):
        text = reader.line(Path(key), number)
        if number != f.where.line and not text.lstrip().startswith("#"):
            break
        for m in _IGNORE_COMMENT.finditer(text):
            if f.finding.id in {x.strip() for x in m.group(1).split(",")}:
                return Where(f.where.file, number, text)
    return None


def _installed_under(stacks: Sequence[Stack], reader: _Reader) -> dict[str, list[Declared]]:
    """file (its real path) -> the Pythons declared by the stacks that install it (a Dockerfile's image or the Python it
    installs, a conda file's `python=`, with the requirement files they include): a line of that file is
    installed under each of them, whichever stack a finding about it comes from."""
    out: dict[str, list[Declared]] = {}
    for s in stacks:
        pythons = [d for d in s.declared if d.kind == "python" and d.value in PYTHONS]
        for f in dict.fromkeys(p.where.file for p in s.pins):
            known = out.setdefault(reader.real(f), [])
            known += [d for d in pythons if d not in known]
    return out


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def _dedupe(declared: list[Declared]) -> list[Declared]:
    def same(a: Declared, b: Declared) -> bool:
        if a.kind == b.kind == "gpu":  # `8.6` from one place and `sm_86` from another
            return (parse_compute_capability(a.value) or a.value) == (parse_compute_capability(b.value) or b.value)
        return a.kind == b.kind and a.value == b.value

    out: list[Declared] = []
    for d in declared:
        if not any(same(o, d) for o in out):
            out.append(d)
    return out

