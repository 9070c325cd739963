"""`ortdoctor lint` on real files from public repositories that use onnxruntime-gpu.

Each directory of tests/data/lint/ holds files as one repository had them at one commit (`source.json`:
repository, commit, paths) and `expected.json`: every file lint reads there and every finding it must
report, as [id, file, line, replacement line]; a replacement that pins the newest release says
``{newest}`` (its newest good patch) and ``{next_line}`` (the line after it, an upper bound), so a new
release changes no expectation. Nothing more may be reported: a finding not listed is a
false alarm. Some commits are the ones before a fix upstream (roop 2165394, CosyVoice 2511a49), whose
next commit shows the problem happened.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from ortdoctor.doctor.lint import lint_paths
from tests.support.releases import NEWEST_VERSION, next_line

DATA = Path(__file__).parent / "data" / "lint"
CASES = sorted(p.name for p in DATA.iterdir() if p.is_dir())


def _run(case: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path | None = None, **kw: object) -> object:
    """lint in the case's directory; a case with a gzip'd file (a lock of a megabyte) runs in a copy with
    it expanded."""
    where = DATA / case
    if any(where.rglob("*.gz")):
        assert tmp_path is not None
        where = tmp_path / case
        shutil.copytree(DATA / case, where)
        for packed in where.rglob("*.gz"):
            packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
            packed.unlink()
    monkeypatch.chdir(where)
    return lint_paths(["."], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES)
def test_real_files(case: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text = (DATA / case / "expected.json").read_text(encoding="utf-8")
    expected = json.loads(text.replace("{newest}", NEWEST_VERSION).replace("{next_line}", next_line()))
    report = _run(case, monkeypatch, tmp_path)
    assert not report.errors  # type: ignore[attr-defined]
    assert sorted(report.files) == expected["files"]  # type: ignore[attr-defined]
    got = [[f.finding.id, f.where.file, f.where.line, f.replacement] for f in report.findings]  # type: ignore[attr-defined]
    assert got == expected["findings"]


def test_every_case_names_its_source() -> None:
    files = 0
    for case in CASES:
        source = json.loads((DATA / case / "source.json").read_text(encoding="utf-8"))
        assert source["repository"].startswith("https://github.com/")
        assert len(source["commit"]) == 40
        assert case.endswith("@" + source["commit"][:12])
        for path in source["paths"]:
            assert (DATA / case / path).is_file() or (DATA / case / (path + ".gz")).is_file()
        files += len(source["paths"])
    assert files >= 40


def test_failure_classes_are_found_in_real_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every finding class, each on a real file; the driver floor and the GPUs given as the command line
    would give them (a real repository that declares them was not found)."""
    ids = set()
    for case in CASES:
        expected = json.loads((DATA / case / "expected.json").read_text(encoding="utf-8"))
        ids |= {f[0] for f in expected["findings"]}
    assert {"lint-ort-cpu-and-gpu", "lint-ort-cuda-mismatch", "lint-ort-cudnn-mismatch",
            "lint-ort-python-unsupported", "lint-ort-no-such-release", "lint-ort-unpinned"} <= ids
    # the CUDA major against each kind of source, on real files: torch (hallo), a base image (the
    # onnxruntime-gpu that audio-separator[gpu] pulls onto nvidia/cuda:11.8.0), pinned NVIDIA wheels
    # (Step-Audio-EditX's nvidia-cuda-nvrtc-cu12 beside torch)
    report = _run("nomadkaraoke__python-audio-separator@0a644dbb07d9", monkeypatch)
    base = [f for f in report.findings if f.finding.id == "lint-ort-cuda-mismatch"]  # type: ignore[attr-defined]
    assert [(f.where.file, [(r.file, r.line) for r in f.related]) for f in base] == [
        ("Dockerfile.cuda11", [("Dockerfile.cuda11", 2)])]
    report = _run("stepfun-ai__Step-Audio-EditX@aacb90a2a4f4", monkeypatch)
    wheels = [f for f in report.findings if f.finding.id == "lint-ort-cuda-mismatch"]  # type: ignore[attr-defined]
    assert [(r.file, r.line) for r in wheels[0].related] == [("requirements.txt", 1), ("requirements.txt", 22)]
    # leimao's image: CUDA 12.8.1 with cuDNN, onnxruntime-gpu==1.21.0 (CUDA 12, cuDNN 9): healthy as it is
    case = "leimao__ONNX-Runtime-Inference@45c11d029447"
    report = _run(case, monkeypatch, min_driver="520.61.05", gpus=("3.7",))
    got = {(f.finding.id, f.where.file, f.where.line) for f in report.findings}  # type: ignore[attr-defined]
    assert ("lint-cuda-needs-newer-driver", "docker/onnxruntime-cuda-python.Dockerfile", 1) in got
    assert ("lint-cuda-needs-newer-driver", "docker/onnxruntime-cuda-python.Dockerfile", 40) in got
    assert ("lint-gpu-arch-unsupported", "docker/onnxruntime-cuda-python.Dockerfile", 40) in got


def test_the_fix_is_what_upstream_did_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """CosyVoice 2511a49 pinned onnxruntime-gpu==1.18.0 (CUDA 11 on PyPI) beside torch from the cu121 index;
    its next change to requirements.txt (6b9cebe) added the onnxruntime CUDA 12 feed, which has 1.18.0
    for CUDA 12 with cuDNN 8, as torch 2.3 has. lint's replacement says the same."""
    report = _run("FunAudioLLM__CosyVoice@2511a49a72af", monkeypatch)
    (finding,) = report.findings  # type: ignore[attr-defined]
    assert finding.replacement is not None
    upstream = (DATA / "FunAudioLLM__CosyVoice@6b9cebea1403" / "requirements.txt").read_text(encoding="utf-8")
    lines = [line.split(" #", 1)[0].strip() for line in upstream.splitlines()]
    for line in finding.replacement.splitlines():
        assert line.strip() in lines


def test_a_conda_pip_section_and_a_pylock_from_real_repositories(monkeypatch: pytest.MonkeyPatch) -> None:
    """The formats the other cases lack: a conda environment file whose `pip:` section installs
    onnxruntime-gpu (bioimage-io), a PEP 751 pylock.toml (maia3: torch and its NVIDIA wheels, no onnxruntime;
    read whole and healthy)."""
    report = _run("bioimage-io__core-bioimage-io-python@d75806ce042f", monkeypatch)
    (finding,) = report.findings  # type: ignore[attr-defined]
    assert (finding.finding.id, finding.where.line) == ("lint-ort-unpinned", 48)
    assert finding.where.text.strip() == "- onnxruntime-gpu"
    report = _run("CSSLab__maia3@4885538e04fc", monkeypatch)
    assert report.files == ("pylock.toml",)  # type: ignore[attr-defined]
    assert report.stacks == 1  # type: ignore[attr-defined]
    assert not report.findings  # type: ignore[attr-defined]


def test_step_audio_before_and_after_its_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Step-Audio 2b04762 pinned onnxruntime-gpu==1.17.0 (CUDA 11 on PyPI) beside torch 2.3.1 (CUDA 12); after
    issue #48 its next change (c7f4b33) added a Dockerfile that reinstalls 1.17.0 from the onnxruntime CUDA 12
    feed. lint finds the pin in both requirements files and nothing in the image that repairs it."""
    for case in ("stepfun-ai__Step-Audio@2b0476240873", "stepfun-ai__Step-Audio@c7f4b3334a21"):
        (finding,) = _run(case, monkeypatch).findings  # type: ignore[attr-defined]
        assert (finding.finding.id, finding.where.file, finding.where.line) == (
            "lint-ort-cuda-mismatch", "requirements.txt", 7)
        assert "onnxruntime-cuda-12" in (finding.replacement or "")
    monkeypatch.chdir(DATA / "stepfun-ai__Step-Audio@c7f4b3334a21")
    report = lint_paths(["Dockerfile"])
    assert report.files == ("Dockerfile", "requirements.txt")
    assert not report.findings


def test_the_fix_has_a_wheel_for_the_python_the_image_installs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Step-Audio-EditX's requirements.txt declares no Python; its Dockerfile installs Python 3.10 and then
    the file. The newest CUDA 12 release (1.24 and later: Python 3.11-3.14) would not install there; the fix
    is the newest with a 3.10 wheel, 1.23.2, the release issue #3 reports working."""
    report = _run("stepfun-ai__Step-Audio-EditX@aacb90a2a4f4", monkeypatch)
    (finding,) = [f for f in report.findings if f.finding.id == "lint-ort-cuda-mismatch"]  # type: ignore[attr-defined]
    assert finding.replacement == "onnxruntime-gpu==1.23.2"
    assert "the Python 3.10 the image installs (Dockerfile:20)" in finding.finding.fix
    # the file linted alone: nothing says which Python runs it
    monkeypatch.chdir(DATA / "stepfun-ai__Step-Audio-EditX@aacb90a2a4f4")
    alone = [f for f in lint_paths(["requirements.txt"]).findings if f.finding.id == "lint-ort-cuda-mismatch"]
    assert [f.replacement for f in alone] == ["onnxruntime-gpu==1.26.0"]  # the newest CUDA 12 release


def test_a_poetry_entry_for_some_pythons_is_judged_on_those(monkeypatch: pytest.MonkeyPatch) -> None:
    """infinity's pyproject (branch 313-support) gives onnxruntime-gpu one entry per Python range: `1.19.*`
    below 3.13, `>=1.21` from 3.13 (1.19 has no 3.13 wheel, 1.21 none for 3.9). Each entry is installed only
    on its own Pythons: neither is held against Poetry's `python = ">=3.9,<3.14"` floor, and the fix of the
    3.13 entry keeps its `python` key."""
    report = _run("michaelfeil__infinity@e308fee985f2", monkeypatch)
    assert [f.finding.id for f in report.findings] == ["lint-ort-unpinned"]  # type: ignore[attr-defined]
    (finding,) = report.findings  # type: ignore[attr-defined]
    assert 'python_full_version >= "3.13"' in finding.finding.detail
    assert (finding.replacement or "").endswith('python = ">=3.13"}')


def test_a_setup_py_extra_its_python_requires_cannot_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """phocr f793cd6 raised its `cuda` extra to onnxruntime-gpu>=1.20.0 (wheels from Python 3.10) and kept
    python_requires=">=3.8"; two days later issue #12 reported `pip install phocr[cuda]` failing on Python
    3.9.23. lint reads setup.py without running it and finds the line; the fix is a range of CUDA 12
    releases that has a wheel for each Python the package admits, 3.8 included."""
    report = _run("puhuilab__phocr@8b64a57c6f16", monkeypatch)
    (finding,) = [f for f in report.findings if f.finding.id == "lint-ort-python-unsupported"]  # type: ignore[attr-defined]
    assert (finding.where.file, finding.where.line) == ("setup.py", 77)
    assert [(r.file, r.line) for r in finding.related] == [("setup.py", 63)]
    assert 'python_requires ">=3.8" (setup.py:63) is Python 3.8' in finding.finding.detail
    assert finding.where.text.strip() == '"onnxruntime-gpu>=1.20.0",'


def test_a_withdrawn_release_and_the_fix_upstream_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """EchoMuse 7ee61e1's GPU build pinned onnxruntime-gpu==1.20.1, withdrawn from PyPI since; pull request #131
    (bf46f09) reports the failed fresh build and pins 1.20.2. lint finds the line and writes the line upstream
    wrote. Both commits uninstall the CPU build before the GPU one goes in: no second flavour."""
    (finding,) = _run("wilbowes__EchoMuse@7ee61e1e1d62", monkeypatch).findings  # type: ignore[attr-defined]
    assert (finding.finding.id, finding.where.file, finding.where.line) == (
        "lint-ort-no-such-release", "controller/Dockerfile", 18)
    after = (DATA / "wilbowes__EchoMuse@bf46f0908704" / "controller" / "Dockerfile").read_text(encoding="utf-8")
    assert finding.replacement == after.splitlines()[25]
    assert not _run("wilbowes__EchoMuse@bf46f0908704", monkeypatch).findings  # type: ignore[attr-defined]
