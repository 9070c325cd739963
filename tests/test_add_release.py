"""scripts/add_release.py: a new release is one command and a data diff.

It runs on a copy of the real data (the matrix, the package table, the wheel facts) with wheels built here
(tests/support/release_wheels.py), for the line after the newest the matrix knows: the same test holds
after every release without an edit.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ortdoctor.decide.matrix.load import load_matrix, snapshot_bytes
from ortdoctor.decide.matrix.model import Matrix
from tests.support.release_wheels import (
    CUDA_NEEDED,
    TENSORRT_NEEDED,
    WINDOWS_NEEDED,
    WINDOWS_TENSORRT_NEEDED,
    build_release,
)
from tests.support.releases import NEWEST, SHIPPED, next_line

REPO = Path(__file__).resolve().parent.parent
LINE = next_line()  # a line the matrix does not know yet
DATA = ("compat_matrix.yaml", "scripts/data/package_table.yaml", "scripts/data/wheel_facts.json")


def _copy(out: Path) -> Path:
    for rel in DATA:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, out / rel)
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the data add_release.py writes."""
    return _copy(tmp_path / "root")


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the libraries every built wheel shares are compiled, once."""
    return tmp_path_factory.mktemp("libs")


@pytest.fixture(scope="module")
def added(tmp_path_factory: pytest.TempPathFactory, build: Path) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """A copy of the data with the next line's first release added: (root, wheels, the run)."""
    tmp = tmp_path_factory.mktemp("added")
    root = _copy(tmp / "root")
    wheels = build_release(tmp / "wheels", f"{LINE}.0", build=build)
    return root, wheels, add_release(root, f"{LINE}.0", wheels)


def add_release(root: Path, version: str, wheels: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "add_release.py"), version, "--wheels", str(wheels),
                           "--root", str(root), "--snapshot", str(root / "snapshot.marshal")],
                          capture_output=True, text=True, timeout=300, check=False)


def _files(root: Path) -> dict[str, bytes]:
    return {rel: (root / rel).read_bytes() for rel in (*DATA, "snapshot.marshal") if (root / rel).exists()}


def _matrix(root: Path) -> Matrix:
    return load_matrix(root / "compat_matrix.yaml")


def test_a_new_line_is_one_command_and_a_data_diff(
        added: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    version = f"{LINE}.0"
    root, wheels, proc = added
    before = (REPO / "compat_matrix.yaml").read_text()
    assert proc.returncode == 0, proc.stderr
    assert "review:" in proc.stdout

    matrix = _matrix(root)  # the YAML is validated: the snapshot does not cover the copy
    row = matrix.releases[0]
    assert (row.line, row.versions, row.cuda, row.cudnn_major, row.cudnn) == (LINE, (version,), "13.0", 9, "9.x")
    assert row.source_ref == f"onnxruntime_gpu-{version}-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert row.wheels == {version: row.source_ref}
    assert row.python == ("3.11", "3.12", "3.13", "3.14")  # free-threaded wheels are not a row's Python
    assert row.requires == ("flatbuffers", "numpy", "packaging", "protobuf")
    assert row.extras == {"cuda": ("nvidia-cuda-runtime~=13.0", "nvidia-curand~=10.0"),
                          "cudnn": ("nvidia-cudnn-cu13~=9.0",)}
    assert (row.provider_needed, row.tensorrt_needed) == (CUDA_NEEDED, TENSORRT_NEEDED)
    assert (row.archs, row.ptx_isa) == (("sm_75", "sm_86", "compute_86"), "9.0")
    win, arm = row.platform_archs["win_amd64"], row.platform_archs["linux_aarch64"]
    assert (win.archs, win.ptx_isa, win.source) == (("sm_90a", "sm_120a", "compute_90a"), "9.0",
                                                    f"onnxruntime_gpu-{version}-cp311-cp311-win_amd64.whl")
    assert arm.archs == ("sm_75", "sm_80")
    # the platform tag of each wheel read, and the CUDA/cuDNN/TensorRT DLLs of the Windows providers' imports
    assert row.wheel_platforms == {"linux_x86_64": "manylinux_2_28_x86_64", "linux_aarch64": "manylinux_2_34_aarch64",
                                   "win_amd64": "win_amd64"}
    assert (row.windows_needed, row.windows_tensorrt_needed) == (WINDOWS_NEEDED, WINDOWS_TENSORRT_NEEDED)
    assert row.windows_source == win.source
    assert row.torch == NEWEST.torch  # same CUDA and cuDNN majors as the line before
    assert row.notes == ()
    # the feeds (other CUDA majors' builds) carry over for the same majors, for every version of the line
    assert row.feeds == tuple(dataclasses.replace(f, versions=()) for f in NEWEST.feeds)
    assert row.known_bad == ()
    assert (root / "snapshot.marshal").read_bytes() == snapshot_bytes(root / "compat_matrix.yaml")

    # the package table and the matrix's packages section know the release, the CPU package's too
    assert matrix.versions_of("onnxruntime-gpu")[-1] == version
    assert version in matrix.versions_of("onnxruntime")
    table = yaml.safe_load((root / DATA[1]).read_text())
    gpu_row = table["onnxruntime_gpu"]["releases"][-1]
    assert (gpu_row["version"], gpu_row["requires_python"], gpu_row["cuda_version"]) == (version, ">=3.11", "13.0")
    assert gpu_row["platforms"] == ["linux_aarch64", "linux_x86_64", "win_amd64"]
    cpu_row = next(r for r in table["onnxruntime"]["releases"] if r["version"] == version)
    assert cpu_row["platforms"] == ["linux_x86_64", "macos_arm64", "win_amd64"]
    facts = [d for d in yaml.safe_load((root / DATA[2]).read_text()) if d["version"] == version]
    assert sorted(d["platform"] for d in facts) == ["linux_aarch64", "linux_x86_64", "win_amd64"]

    # a data diff: outside the generated packages section nothing was removed but the header's newest line
    after = (root / "compat_matrix.yaml").read_text()
    removed = [line[1:] for line in difflib.unified_diff(_outside_packages(before), _outside_packages(after),
                                                          lineterm="", n=0)
               if line.startswith("-") and not line.startswith("---")]
    assert removed == [next(x for x in before.splitlines() if "release line (1.0 ..." in x)]
    assert f"(1.0 ... {LINE})" in after
    # written as the rows before it are: the platforms on one line, right after the versions
    assert (f"  versions: [{version}]\n  wheel_platforms: {{linux_x86_64: manylinux_2_28_x86_64, linux_aarch64: "
            "manylinux_2_34_aarch64, win_amd64: win_amd64}\n  windows_needed: [") in after

    # idempotent
    written = _files(root)
    again = add_release(root, version, wheels)
    assert again.returncode == 0, again.stderr
    assert _files(root) == written


def _outside_packages(text: str) -> list[str]:
    head, rest = text.split("# --- packages:", 1)
    return [*head.splitlines(), *rest.split("# --- end of packages ---", 1)[1].splitlines()]


def test_the_new_line_is_recommended_and_resolved(added: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    version = f"{LINE}.0"
    root, _wheels, proc = added
    assert proc.returncode == 0, proc.stderr
    matrix = _matrix(root)
    match = matrix.release_for(version)
    assert match is not None
    assert match.exact
    assert not match.unverified
    assert matrix.release_for(f"{LINE}.7") is not None  # an unknown patch uses the line's facts
    rec = matrix.recommend("13", None)
    assert rec is not None
    assert rec.version == version
    assert f"onnxruntime-gpu[cuda,cudnn]=={version}" in rec.command
    # a CUDA 12 user still gets the newest CUDA 12 wheel PyPI has (the new line's CUDA 12 build is on a feed)
    rec12, shipped12 = matrix.recommend("12", None), SHIPPED.recommend("12", None)
    assert rec12 is not None
    assert shipped12 is not None
    assert (rec12.version, rec12.feed) == (shipped12.version, shipped12.feed)
    # kernels: the built wheel carries sm_75/sm_86 SASS and compute_86 PTX for Linux x86_64
    assert [k.release.line for k in matrix.kernel_releases((8, 6))][:1] == [LINE]
    # the libraries to preload are the matrix's rows for its CUDA/cuDNN majors
    libs = {lib.soname for lib in matrix.libraries_for_release(matrix.releases[0])}
    assert {"libcudart.so.13", "libcublas.so.13", "libcudnn.so.9"} <= libs


def test_a_patch_release_adds_to_its_line_and_keeps_what_a_person_wrote(root: Path, tmp_path: Path,
                                                                         build: Path) -> None:
    first, second = f"{LINE}.0", f"{LINE}.1"
    assert add_release(root, first, build_release(tmp_path / "w0", first, build=build)).returncode == 0
    path = root / "compat_matrix.yaml"
    text = path.read_text()
    at = text.index(f"- line: '{LINE}'")
    note = "  notes:\n  - 'Reviewed: the release notes say nothing new.'\n  # a comment a person wrote\n"
    path.write_text(text[:at] + text[at:].replace("  notes: []\n", note, 1))
    proc = add_release(root, second, build_release(tmp_path / "w1", second, build=build))
    assert proc.returncode == 0, proc.stderr
    row = _matrix(root).releases[0]
    assert row.line == LINE
    assert row.versions == (first, second)
    assert row.source_ref == f"onnxruntime_gpu-{second}-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert set(row.wheels) == {first, second}
    assert set(row.wheel_platforms) == {"linux_x86_64", "linux_aarch64", "win_amd64"}  # both versions have all
    assert row.windows_source == f"onnxruntime_gpu-{second}-cp311-cp311-win_amd64.whl"
    assert row.notes == ("Reviewed: the release notes say nothing new.",)
    assert "  # a comment a person wrote\n" in path.read_text()
    assert _matrix(root).versions_of("onnxruntime-gpu")[-2:] == (first, second)


_FROM_RECORDS = """
import json, sys
sys.path.insert(0, sys.argv[1])
import add_release
text = open(sys.argv[2], encoding="utf-8").read()
known = add_release._windows_dlls(text)
out, tags = {}, {}
for record in json.load(open(sys.argv[3], encoding="utf-8")):
    tags.setdefault(record["version"], {})[record["platform"]] = add_release._platform_tag(record["wheel"])
    if record["platform"] == "win_amd64":
        release = add_release.Release(record["version"], {}, {}, surveyed=[record], known_dlls=known)
        out[record["wheel"]] = add_release.windows_facts(release)
platforms = {}
for versions in json.loads(sys.argv[4]):
    if all(v in tags for v in versions):
        line = add_release._Flow({p: t for p, t in tags[versions[0]].items()})
        for v in versions[1:]:
            line = add_release._line_platforms(line, tags[v])
        platforms[versions[-1]] = dict(line)
print(json.dumps({"windows": out, "platforms": platforms}))
"""


def test_the_rows_platforms_and_windows_imports_are_what_the_command_reads_from_their_wheels() -> None:
    # the recorded survey of each wheel (scripts/data/wheel_facts.json), read as the command reads a new one's,
    # gives the rows' wheel_platforms (every version of the line surveyed) and windows_needed /
    # windows_tensorrt_needed as shipped
    lines = json.dumps([list(r.versions) for r in SHIPPED.releases if r.wheel_platforms])
    proc = subprocess.run([sys.executable, "-c", _FROM_RECORDS, str(REPO / "scripts"),
                           str(REPO / DATA[0]), str(REPO / DATA[2]), lines],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    read = json.loads(proc.stdout)
    surveyed = [r for r in SHIPPED.releases if r.versions and r.versions[-1] in read["platforms"]]
    assert len(surveyed) >= 9  # 1.31 too once 1.31.0 is surveyed
    for r in surveyed:
        assert read["platforms"][r.versions[-1]] == r.wheel_platforms, r.line
    rows = [r for r in SHIPPED.releases if r.windows_source]
    assert NEWEST in rows
    for r in rows:
        assert read["windows"][r.windows_source] == {"windows_needed": list(r.windows_needed),
                                          "windows_tensorrt_needed": list(r.windows_tensorrt_needed),
                                          "windows_source": r.windows_source}, r.line


def test_nothing_is_written_for_a_release_the_matrix_cannot_hold(root: Path, tmp_path: Path, build: Path) -> None:
    version = f"{LINE}.0"
    wheels = build_release(tmp_path / "wheels", version, cuda_version="99.0", build=build)  # no cuda_majors row for 99
    before = _files(root)
    proc = add_release(root, version, wheels)
    assert proc.returncode != 0
    assert "does not validate" in proc.stderr
    assert "CUDA major 99" in proc.stderr
    assert _files(root) == before
