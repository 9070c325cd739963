#!/usr/bin/env python3
"""Add one onnxruntime-gpu release to the data: one command, a data diff and nothing else.

Usage:
    python scripts/add_release.py 1.32.0                    # download the wheels from PyPI, read, delete
    python scripts/add_release.py 1.32.0 --wheels DIR       # read the wheel files already in DIR, offline
    python scripts/add_release.py 1.32.0 --keep-downloads DIR   # download into DIR and keep them there

It reads the release's wheels (Linux x86_64, Windows, Linux aarch64 where PyPI has them; the file names of
the CPU ``onnxruntime`` wheels of the same version too) with the readers the other scripts use, and writes:

  * ``compat_matrix.yaml``: the release row (a new line is inserted newest first; a patch release of a known
    line is added to its row, and when it is the line's newest patch the row's wheel facts are re-read from
    it), ``wheel_platforms`` and the Windows providers' imports (``windows_needed``) included. The YAML
    is edited as text: comments, notes, known_bad, torch and feeds are kept as written;
  * the ``packages:`` section of the matrix (``scripts/gen_package_section.py``), after adding the release
    to ``scripts/data/package_table.yaml`` (onnxruntime-gpu and onnxruntime);
  * ``scripts/data/wheel_facts.json`` (``scripts/survey_wheel_facts.py``'s record of each wheel);
  * the matrix snapshot (``scripts/gen_matrix_snapshot.py``).

Nothing is written unless the new matrix validates. Running it twice changes nothing the second time. It
prints what a person must still review (facts no wheel carries: torch, feeds, notes). CONTRIBUTING.md has
the release checklist.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run from a source checkout without installing ortdoctor.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "data"))

import collect_package_table as collect  # noqa: E402
import gen_package_section  # noqa: E402
import pypi_remote  # noqa: E402
import survey_wheel_facts as survey  # noqa: E402
from read_wheel import _platform_of, read_platform_archs, read_wheel  # noqa: E402

from ortdoctor.decide.matrix.load import snapshot_bytes, snapshot_path  # noqa: E402
from ortdoctor.decide.matrix.model import WHEEL_PLATFORMS, MatrixError, glibc_floor  # noqa: E402

GPU = "onnxruntime-gpu"
CPU = "onnxruntime"
#: Every platform whose onnxruntime-gpu wheel is read: the row's own facts, then its ``platform_archs``.
PLATFORMS = ("linux_x86_64", "win_amd64", "linux_aarch64")
#: The row keys read from the Linux x86_64 wheel, in the order the matrix writes them. A newer patch of a
#: line rewrites exactly these; every other key of a row (notes, known_bad, torch, feeds, ...) is kept.
WHEEL_KEYS = ("cuda", "cudnn_major", "cudnn", "source", "source_ref", "python", "requires", "extras",
              "provider_needed", "pybind_needed_cuda", "tensorrt_needed", "archs", "ptx_isa", "isolated",
              "platform_archs")
#: The row keys that come before ``cuda``: the platform tag of each wheel read and the Windows provider DLLs'
#: PE imports (the win_amd64 wheel's equivalents of provider_needed and tensorrt_needed).
HEAD_KEYS = ("wheel_platforms", "windows_needed", "windows_tensorrt_needed", "windows_source")
#: The Python the reference wheel is read for, as the existing rows were (cp311 from 1.15 on).
REFERENCE_PYTHON = "cp311"
_ROW_START = re.compile(r"^- line: '?(\d+)\.(\d+)'?\s*$", re.MULTILINE)


@dataclass
class Paths:
    """Where the data lives: the repository by default, a copy of it in the tests."""

    root: Path = ROOT
    snapshot: Path | None = None

    @property
    def matrix(self) -> Path:
        return self.root / "compat_matrix.yaml"

    @property
    def table(self) -> Path:
        return self.root / "scripts" / "data" / "package_table.yaml"

    @property
    def wheel_facts(self) -> Path:
        return self.root / "scripts" / "data" / "wheel_facts.json"

    def snapshot_file(self) -> Path:
        if self.snapshot is not None:
            return self.snapshot
        return Path(snapshot_path()) if self.root == ROOT else self.root / "matrix_snapshot.marshal"


@dataclass
class Release:
    """What was read of one release's wheels."""

    version: str
    files: dict[str, list[str]]  # package -> every file name of this version (the PyPI index, or DIR)
    wheels: dict[str, Path]  # platform -> the onnxruntime-gpu wheel read
    facts: dict[str, Any] = field(default_factory=dict)  # read_wheel() of the Linux x86_64 wheel
    platform_archs: dict[str, dict[str, Any]] = field(default_factory=dict)
    surveyed: list[dict[str, Any]] = field(default_factory=list)  # survey_wheel_facts records
    known_dlls: frozenset[str] = frozenset()  # lower-cased windows_dll of every library the matrix names
    requires_python: str | None = None
    json_api_requires_dist: Any = None  # as the package table records it; None: not asked

    @property
    def line(self) -> str:
        return ".".join(self.version.split(".")[:2])


# ------------------------------------------------------------------------------------------ the wheels

def _version_of(name: str) -> str | None:
    tags = collect._wheel_tags(name)
    return tags[1] if tags else None


def _project_of(name: str) -> str:
    return name.split("-", 1)[0].lower().replace("_", "-")


def _pick(names: list[str], platform: str) -> str | None:
    """The wheel of ``platform`` to read: cp311's as the existing rows, else the oldest CPython's."""
    mine = [n for n in names if n.endswith(".whl") and _platform_of(Path(n)) == platform
            and (platform != "linux_x86_64" or collect._is_linux_x86_wheel(n))
            and not re.search(r"-cp3\d+t-", n)]
    if not mine:
        return None

    def key(n: str) -> tuple[int, int, str]:
        py = n[:-4].split("-")[-3]
        minor = int(py[3:]) if re.fullmatch(r"cp3\d+", py) else 99
        return (py != REFERENCE_PYTHON, minor, n)

    return sorted(mine, key=key)[0]


def from_directory(version: str, directory: Path) -> Release:
    """The release's wheels as files in ``directory`` (the offline way; tests build small ones)."""
    files: dict[str, list[str]] = {GPU: [], CPU: []}
    for path in sorted(directory.iterdir()):
        if path.name.endswith(".whl") and _version_of(path.name) == version and _project_of(path.name) in files:
            files[_project_of(path.name)].append(path.name)
    wheels = {p: directory / n for p in PLATFORMS if (n := _pick(files[GPU], p)) is not None}
    return Release(version, files, wheels)


def from_pypi(version: str, keep: Path) -> Release:
    """The file lists from PyPI's index, then each platform's wheel downloaded into ``keep``."""
    # a fresh answer from PyPI: the collector's cache keeps the index of the day it was first asked, before
    # this release existed
    pypi_remote._CACHE = Path(tempfile.mkdtemp(prefix="ortdoctor-index-"))
    try:
        return _from_pypi(version, keep)
    finally:
        shutil.rmtree(pypi_remote._CACHE, ignore_errors=True)


def _from_pypi(version: str, keep: Path) -> Release:
    files = {name: [f["filename"] for f in collect._files_by_version(name).get(version, [])] for name in (GPU, CPU)}
    if not files[GPU]:
        raise SystemExit(f"PyPI has no {GPU} {version}")
    wheels: dict[str, Path] = {}
    for platform in PLATFORMS:
        name = _pick(files[GPU], platform)
        if name is None:
            continue
        target = keep / platform
        target.mkdir(parents=True, exist_ok=True)
        if not (target / name).is_file():
            for stale in target.glob("*.whl"):
                stale.unlink()
            survey._pip_download(version, platform, target)
        wheels[platform] = target / name
    release = Release(version, files, wheels)
    api = pypi_remote.release_json(GPU, version)
    if (api or {}).get("info", {}).get("requires_dist") is None:
        release.json_api_requires_dist = "empty"  # as collect_package_table.py records it
    rp = sorted({n for n in (f.get("requires-python") for f in collect._files_by_version(GPU)[version]) if n})
    release.requires_python = rp[0] if len(rp) == 1 else None
    return release


def read(release: Release) -> Release:
    """Read every wheel of ``release`` with read_wheel.py and survey_wheel_facts.py."""
    if "linux_x86_64" not in release.wheels:
        raise SystemExit(f"no Linux x86_64 {GPU} {release.version} wheel: the row's facts come from it")
    for platform, wheel in release.wheels.items():
        if platform == "linux_x86_64":
            release.facts = read_wheel(wheel)
        else:
            release.platform_archs[platform] = read_platform_archs(wheel)["platform_archs"][platform]
        release.surveyed.append(survey.read(wheel, platform, survey.pip_command(release.version, platform)))
    if release.requires_python is None:
        release.requires_python = release.facts.get("requires_python")
    return release


# -------------------------------------------------------------------------------------- the matrix row

def _name(requirement: str) -> str:
    m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    return m.group(0) if m else requirement


def _cudnn_major(facts: dict[str, Any]) -> int | None:
    """cuDNN major: build info (old wheels), else the [cudnn] extra, else a libcudnn the providers link."""
    info = facts.get("build_info") or {}
    if info.get("cudnn_version"):
        return int(str(info["cudnn_version"]).split(".")[0])
    for spec in (facts.get("extras") or {}).get("cudnn", []):
        m = re.search(r"~=\s*(\d+)|==\s*(\d+)|>=\s*(\d+)", spec)
        if m:
            return int(next(g for g in m.groups() if g))
    for soname in [*(facts.get("provider_needed_cuda") or []), *(facts.get("tensorrt_needed_cuda") or [])]:
        m = re.fullmatch(r"libcudnn\.so\.(\d+)", soname)
        if m:
            return int(m.group(1))
    return None


def _pythons(names: list[str]) -> list[str]:
    tags = collect._cp_tags([{"filename": n} for n in names])
    return [t for t in tags if not t.endswith("t") and t != "any"]


class _Flow(dict[str, str]):
    """A mapping the matrix writes on one line (``wheel_platforms``)."""


def _platform_tag(wheel: str) -> str:
    return wheel[: -len(".whl")].split("-")[-1]


def _windows_dlls(text: str) -> frozenset[str]:
    """The windows_dll of every CUDA, cuDNN and TensorRT library the matrix ``text`` names: what a provider
    DLL imports besides these is Windows' own or onnxruntime's (KERNEL32.dll, onnxruntime_providers_shared.dll)."""
    data = _load(text) or {}
    majors = [*(data.get("cuda_majors") or {}).values(), *(data.get("cudnn_majors") or {}).values(),
              *((data.get("tensorrt") or {}).get("majors") or {}).values()]
    return frozenset(str(lib["windows_dll"]).lower() for m in majors for lib in (m or {}).get("libraries") or []
                     if lib.get("windows_dll"))


def windows_facts(release: Release) -> dict[str, Any]:
    """windows_needed / windows_tensorrt_needed / windows_source: the CUDA, cuDNN and TensorRT DLLs the
    win_amd64 wheel's providers import (survey_wheel_facts.py's PE import tables), in import-table order."""
    record = next((r for r in release.surveyed if r.get("platform") == "win_amd64"), None)
    if record is None:
        return {}
    out: dict[str, Any] = {}
    for key, provider in (("windows_needed", "cuda_provider"), ("windows_tensorrt_needed", "tensorrt_provider")):
        imports = (record.get(provider) or {}).get("imports")
        if imports is not None:
            out[key] = [d for d in imports if d.lower() in release.known_dlls]
    if out:
        out["windows_source"] = record["wheel"]
    return out


def wheel_facts(release: Release) -> dict[str, Any]:
    """The row keys the wheels tell (HEAD_KEYS and WHEEL_KEYS), in the matrix's spelling."""
    facts = release.facts
    cuda = (facts.get("build_info") or {}).get("cuda_version")
    if not cuda:
        raise SystemExit(f"{facts['wheel']} names no cuda_version in its build info: write the row by hand")
    cudnn = _cudnn_major(facts)
    row: dict[str, Any] = {
        "wheel_platforms": _Flow({p: _platform_tag(release.wheels[p].name) for p in WHEEL_PLATFORMS
                                  if p in release.wheels}),
        **windows_facts(release),
        "cuda": ".".join(str(cuda).split(".")[:2]),
        "cudnn_major": cudnn,
        "cudnn": f"{cudnn}.x" if cudnn is not None else None,
        "source": "wheel",
        "source_ref": facts["wheel"],
        "python": _pythons(release.files[GPU]),
        "requires": sorted({_name(r) for r in facts.get("requires_plain") or []}),
        "extras": {k: v for k, v in (facts.get("extras") or {}).items() if k in ("cuda", "cudnn")},
        "provider_needed": facts.get("provider_needed_cuda") or [],
        "pybind_needed_cuda": facts.get("pybind_needed_cuda") or [],
    }
    if facts.get("tensorrt_needed_cuda") is not None:
        row["tensorrt_needed"] = facts["tensorrt_needed_cuda"]
    for key in ("archs", "ptx_isa", "isolated"):
        if facts.get(key):
            row[key] = facts[key]
    if release.platform_archs:
        row["platform_archs"] = {p: release.platform_archs[p] for p in PLATFORMS if p in release.platform_archs}
    if not row["extras"]:
        del row["extras"]
    return row


def _load(text: str) -> Any:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml's: the table is large


class _Dumper(yaml.SafeDumper):  # type: ignore[misc]
    """The matrix's style: lists of scalars in flow style (``[sm_75, sm_80]``), every mapping in block style."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = all(isinstance(x, (str, int, float)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_flow(dumper: yaml.SafeDumper, data: _Flow) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", dict(data), flow_style=True)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(_Flow, _represent_flow)


def _dump(value: Any, width: int = 120) -> str:
    text: str = yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=width,
                     allow_unicode=True)
    return text


def _render(key: str, value: Any) -> str:
    """One row key as the matrix writes it, two spaces in from the row's dash."""
    # a one-line mapping stays on one line, however long its tags (manylinux_2_27_x86_64.manylinux_2_28_x86_64)
    width = 1 << 16 if isinstance(value, _Flow) else 120
    return "".join("  " + line for line in _dump({key: value}, width).splitlines(True))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def _rows(text: str) -> list[tuple[tuple[int, int], int, int]]:
    """((major, minor), start, end) of every release row's text, in file order."""
    starts = list(_ROW_START.finditer(text))
    out = []
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        out.append(((int(m.group(1)), int(m.group(2))), m.start(), end))
    return out


def _key_spans(block: str) -> dict[str, tuple[int, int]]:
    """Each top-level key of one row's text -> (start, end): its line and the lines that continue it (more
    indented, or a block list's ``  - `` items). A comment or blank line ends a key, so it is kept."""
    spans: dict[str, tuple[int, int]] = {}
    pos = 0
    current: str | None = None
    for line in block.splitlines(True):
        m = re.match(r"(?:- |  )([a-z_]+):", line)
        if m:
            current = m.group(1)
            spans[current] = (pos, pos + len(line))
        elif current is not None and (line.startswith("    ") or line.startswith("  - ")):
            spans[current] = (spans[current][0], pos + len(line))
        else:
            current = None
        pos += len(line)
    return spans


_REMOVE = object()


def _set_key(block: str, key: str, value: Any, after: str) -> str:
    """``block`` with ``key`` set to ``value`` (``_REMOVE``: removed), in place, or after the key ``after``."""
    spans = _key_spans(block)
    text = "" if value is _REMOVE else _render(key, value)
    if key in spans:
        start, end = spans[key]
        return block[:start] + text + block[end:]
    if not text:
        return block
    order = list(spans)
    anchor = after if after in spans else order[-1]
    at = spans[anchor][1]
    return block[:at] + text + block[at:]


def _previous_key(key: str, keys: tuple[str, ...]) -> str:
    i = keys.index(key)
    return keys[i - 1] if i else "line"


def _same_build(older: dict[str, Any], facts: dict[str, Any]) -> bool:
    """The older row's build has the same CUDA and cuDNN majors as the wheel's."""
    same_cuda = str(older["cuda"]).split(".")[0] == facts["cuda"].split(".")[0]
    return same_cuda and bool(older.get("cudnn_major") == facts["cudnn_major"])


def new_row(release: Release, older: dict[str, Any] | None) -> str:
    """The text of a new line's row. When the next older row has the same CUDA and cuDNN majors, its torch
    (a specifier about those majors) and its feeds (the other CUDA majors' builds, which each line has had
    on the same feeds: the review names them) carry over; notes and known_bad are left to a person."""
    facts = wheel_facts(release)
    row: dict[str, Any] = {"line": release.line, "versions": [release.version]}
    for key in HEAD_KEYS[1:]:
        if key in facts:
            row[key] = facts[key]
    for key in ("cuda", "cudnn_major", "cudnn", "source", "source_ref"):
        row[key] = facts[key]
    row["wheels"] = {release.version: facts["source_ref"]}
    for key in WHEEL_KEYS[5:]:
        if key in facts:
            row[key] = facts[key]
    row["notes"] = []
    if older is not None and _same_build(older, facts):
        for key in ("torch", "feeds"):
            if older.get(key):
                row[key] = older[key]
                if key == "feeds":  # a feed's own version list names the older line's versions
                    row[key] = [{k: v for k, v in feed.items() if k != "versions"} for feed in older[key]]
    return _set_key(_dump([row]), "wheel_platforms", facts["wheel_platforms"], "versions") + "\n"


def _line_platforms(recorded: dict[str, str], read: dict[str, str]) -> _Flow:
    """wheel_platforms after one more version of the line: the platforms every version has, each with the
    strictest tag (the highest glibc floor) where the versions' tags differ."""
    out = _Flow()
    for platform in WHEEL_PLATFORMS:
        if platform in recorded and platform in read:
            old, new = recorded[platform], read[platform]
            out[platform] = old if (glibc_floor(old) or (0, 0)) > (glibc_floor(new) or (0, 0)) else new
    return out


def update_row(block: str, release: Release) -> str:
    """A known line's row with ``release`` added: versions and wheels always; the wheel facts too when it is
    the line's newest patch (the row describes its reference wheel, source_ref)."""
    row = _load(block)[0]
    versions = sorted({*(row.get("versions") or []), release.version}, key=_version_key)
    block = _set_key(block, "versions", versions, "line")
    facts = wheel_facts(release)
    wheels = {**(row.get("wheels") or {}), release.version: facts["source_ref"]}
    block = _set_key(block, "wheels", dict(sorted(wheels.items(), key=lambda kv: _version_key(kv[0]))),
                     "source_ref")
    platforms = facts["wheel_platforms"]
    if row.get("wheel_platforms"):
        platforms = _line_platforms(row["wheel_platforms"], platforms)
    block = _set_key(block, "wheel_platforms", platforms, "versions")
    if versions[-1] != release.version:
        return block
    keys = ("versions", *HEAD_KEYS, *WHEEL_KEYS[:5], "wheels", *WHEEL_KEYS[5:])
    for key in (*HEAD_KEYS[1:], *WHEEL_KEYS):
        block = _set_key(block, key, facts.get(key, _REMOVE), _previous_key(key, keys))
    return block


def add_row(text: str, release: Release) -> str:
    """The matrix text with ``release`` in its row (edited) or in a new row (inserted newest first)."""
    want = tuple(int(x) for x in release.line.split("."))
    rows = _rows(text)
    for line, start, end in rows:
        if line == want:
            return text[:start] + update_row(text[start:end], release) + text[end:]
    newer_end = [s for line, s, _ in rows if line < want]
    at = newer_end[0] if newer_end else len(text)
    older = next((_load(text[s:e])[0] for line, s, e in rows if line < want), None)
    text = text[:at] + new_row(release, older) + text[at:]
    newest = max(line for line, _, _ in _rows(text))
    # the header's "one row per onnxruntime-gpu release line (1.0 ... 1.31)" names the newest line
    return re.sub(r"(release line \(1\.0 \.\.\. )\d+\.\d+\)", rf"\g<1>{newest[0]}.{newest[1]})", text, count=1)


# ---------------------------------------------------------------------------------- the package table

def _section_span(text: str, name: str) -> tuple[int, int]:
    m = re.search(rf"^{re.escape(name)}:\n", text, re.MULTILINE)
    if m is None:
        raise SystemExit(f"the package table has no {name}: section")
    nxt = re.compile(r"^[A-Za-z_]+:", re.MULTILINE).search(text, m.end())
    return m.start(), nxt.start() if nxt else len(text)


def _put(section: dict[str, Any], row: dict[str, Any]) -> None:
    old: dict[str, Any] = next((r for r in section["releases"] if r["version"] == row["version"]), {})
    if "json_api_requires_dist" in old and "json_api_requires_dist" not in row:
        row["json_api_requires_dist"] = old["json_api_requires_dist"]  # only PyPI's JSON API tells it
    rows = [r for r in section["releases"] if r["version"] != row["version"]] + [row]
    section["releases"] = sorted(rows, key=lambda r: Version(r["version"]))  # 1.24.0.dev... before 1.24.1
    section["versions"] = [r["version"] for r in section["releases"]]


def table_rows(release: Release) -> dict[str, dict[str, Any]]:
    """The package table's row of the release per section, as collect_package_table.py writes them."""
    facts = release.facts
    gpu: dict[str, Any] = {"version": release.version,
                           "python_linux_x86_64": collect._cp_tags([{"filename": n} for n in release.files[GPU]]),
                           "platforms": collect._platforms([{"filename": n} for n in release.files[GPU]])}
    if release.requires_python:
        gpu["requires_python"] = release.requires_python
    gpu["requires_dist"] = list(facts.get("requires_plain") or [])
    if facts.get("extras"):
        gpu["extras"] = facts["extras"]
    gpu["extras_declared"] = sorted(facts.get("extras") or {})
    info = facts.get("build_info") or {}
    for key in ("cuda_version", "cudnn_version"):
        if info.get(key):
            gpu[key] = info[key]
    gpu["read_from"] = facts["wheel"]
    if release.json_api_requires_dist is not None:
        gpu["json_api_requires_dist"] = release.json_api_requires_dist
    out = {"onnxruntime_gpu": gpu}
    if release.files[CPU]:
        out["onnxruntime"] = {"version": release.version,
                              "python_linux_x86_64": collect._cp_tags([{"filename": n} for n in release.files[CPU]]),
                              "platforms": collect._platforms([{"filename": n} for n in release.files[CPU]])}
    return out


def add_to_table(text: str, release: Release) -> str:
    """The package table with the release's rows; only its onnxruntime_gpu and onnxruntime sections are
    re-dumped (by collect_package_table.py's dumper), every other byte is kept."""
    for name, row in table_rows(release).items():
        start, end = _section_span(text, name)
        section = _load(text[start:end])[name]
        _put(section, row)
        text = text[:start] + collect.dump({name: section}) + text[end:]
    return text


# ---------------------------------------------------------------------------------------------- all

def apply(release: Release, paths: Paths) -> list[str]:
    """Write every file; return what a person should review. Nothing is written for an invalid matrix."""
    before = paths.matrix.read_text(encoding="utf-8")
    release.known_dlls = _windows_dlls(before)
    new_line = not any(f"{a}.{b}" == release.line for (a, b), _, _ in _rows(before))
    matrix = add_row(before, release)
    table = add_to_table(paths.table.read_text(encoding="utf-8"), release)
    with tempfile.TemporaryDirectory(prefix="ortdoctor-release-") as tmp:
        Path(tmp, "package_table.yaml").write_text(table, encoding="utf-8")
        matrix = gen_package_section.replace_section(matrix, gen_package_section.render(Path(tmp, "package_table.yaml")))
        check = Path(tmp, "compat_matrix.yaml")
        check.write_text(matrix, encoding="utf-8")
        try:
            snapshot = snapshot_bytes(check)
        except MatrixError as exc:
            raise SystemExit(f"not writing: the matrix with {release.version} does not validate: {exc}") from None
    done = survey.load(paths.wheel_facts)
    for facts in release.surveyed:
        done = survey.merge(done, facts)
    paths.table.write_text(table, encoding="utf-8")
    paths.matrix.write_text(matrix, encoding="utf-8")
    survey.write(done, paths.wheel_facts)
    paths.snapshot_file().write_bytes(snapshot)
    return review(matrix, release, new_line=new_line)


def review(matrix: str, release: Release, *, new_line: bool) -> list[str]:
    row = next(_load(matrix[s:e])[0] for line, s, e in _rows(matrix)
               if f"{line[0]}.{line[1]}" == release.line)
    out = [f"the {release.line} row of compat_matrix.yaml (git diff): every fact is read from the wheels above"]
    missing = [p for p in PLATFORMS if p not in release.wheels]
    if missing:
        out.append(f"no {GPU} {release.version} wheel read for {', '.join(missing)}")
    if not row.get("torch"):
        out.append("torch: no row with the same CUDA and cuDNN majors to take it from; write the specifier")
    if row.get("feeds") and new_line:
        out.append("feeds: carried over from the line before; check each feed has this release's build "
                   "(" + ", ".join(str(f.get("index_url")) for f in row["feeds"]) + ")")
    elif not row.get("feeds"):
        out.append("feeds: builds for other CUDA majors (the CUDA 12 feed) are not on PyPI; add them when published")
    out.append("notes and known_bad: the release notes (a changed [cuda] extra, a provider that links less, ...)")
    out.append("tensorrt.builds: the TensorRT version the TensorRT EP was built with (release notes)")
    out.append("prose that names the newest line: README.md, docs/architecture.md, scripts/data/README.md")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("version", help="the onnxruntime-gpu release, e.g. 1.32.0")
    ap.add_argument("--wheels", metavar="DIR", type=Path, help="read the wheel files in DIR instead of PyPI's")
    ap.add_argument("--keep-downloads", metavar="DIR", type=Path, help="download into DIR and keep the wheels")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose data is written (default: this one)")
    ap.add_argument("--snapshot", type=Path, help="where the matrix snapshot goes (default: the package's)")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"\d+\.\d+\.\d+", args.version):
        ap.error(f"expected a release version such as 1.32.0, got {args.version!r}")
    paths = Paths(args.root.resolve(), args.snapshot)
    if args.wheels is not None:
        release = read(from_directory(args.version, args.wheels))
        notes = apply(release, paths)
    else:
        keep = args.keep_downloads or Path(tempfile.mkdtemp(prefix="ortdoctor-dl-"))
        try:
            release = read(from_pypi(args.version, keep))
            notes = apply(release, paths)
        finally:
            if args.keep_downloads is None:
                shutil.rmtree(keep, ignore_errors=True)
    out = io.StringIO()
    out.write(f"added {GPU} {args.version} from {', '.join(w.name for w in release.wheels.values())}\n")
    out.write("review:\n" + "".join(f"  - {n}\n" for n in notes))
    sys.stdout.write(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
