"""``lint-ort-no-such-release``: an exact pin on an onnxruntime-gpu version PyPI does not have; and a
Dockerfile's ``pip uninstall``, which takes a package out of the stage before the GPU build goes in."""

from __future__ import annotations

from pathlib import Path

from ortdoctor.doctor.lint import lint_paths


def _findings(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, str, int, str | None]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    report = lint_paths([str(tmp_path)])
    assert not report.errors
    return [(f.finding.id, Path(f.where.file).name, f.where.line, f.replacement) for f in report.findings]


def test_a_withdrawn_patch_gets_the_newest_patch_of_its_line(tmp_path: Path) -> None:
    got = _findings(tmp_path / "a", {"requirements.txt": "numpy\nonnxruntime-gpu==1.20.1  # GPU\n"})
    assert got == [("lint-ort-no-such-release", "requirements.txt", 2, "onnxruntime-gpu==1.20.2  # GPU")]
    report = lint_paths([str(tmp_path / "a")])
    assert "PyPI has no onnxruntime-gpu 1.20.1 (its line 1.20 has 1.20.0, 1.20.2)" in report.findings[0].finding.detail


def test_a_line_whose_wheels_are_gone_gets_a_release_that_fits(tmp_path: Path) -> None:
    """Below 1.11 PyPI has no Linux wheel: the fix is the newest release for the base image's CUDA."""
    got = _findings(tmp_path, {"Dockerfile": "FROM nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04\n"
                                             "RUN pip install onnxruntime-gpu==1.9.0\n"})
    assert [(i, f, n) for i, f, n, _ in got] == [("lint-ort-no-such-release", "Dockerfile", 2)]
    assert got[0][3] == "RUN pip install onnxruntime-gpu==1.18.1"


def test_what_is_not_said(tmp_path: Path) -> None:
    # `==1.17` is 1.17.0; a version newer than the matrix's newest may be out since
    assert _findings(tmp_path / "pad", {"requirements.txt": "onnxruntime-gpu==1.17\n"}) == []
    assert _findings(tmp_path / "new", {"requirements.txt": "onnxruntime-gpu==9.0.0\n"}) == []
    # an index other than PyPI (a mirror, a private index, an onnxruntime feed) may have it
    assert _findings(tmp_path / "mirror", {"requirements.txt": "-i https://mirrors.example.org/pypi/simple\n"
                                                               "onnxruntime-gpu==1.20.1\n"}) == []
    # PyPI named as the index, PyTorch's beside it: still PyPI's versions
    for name, index in (("pypi", "-i https://pypi.org/simple"),
                        ("torch", "--extra-index-url https://download.pytorch.org/whl/cpu")):
        got = _findings(tmp_path / name, {"requirements.txt": f"{index}\nonnxruntime-gpu==1.20.1\n"})
        assert [f[0] for f in got] == ["lint-ort-no-such-release"]


def test_pip_uninstall_takes_the_cpu_build_out_of_the_stage(tmp_path: Path) -> None:
    """EchoMuse's GPU build: the requirements file's CPU onnxruntime, uninstalled before onnxruntime-gpu goes
    in, is no second flavour."""
    files = {"requirements.txt": "onnxruntime==1.20.1\n",
             "Dockerfile": "FROM python:3.12-slim\nRUN pip install -r requirements.txt\n"
                           "RUN pip uninstall -y onnxruntime && \\\n    pip install onnxruntime-gpu==1.20.2\n"}
    assert _findings(tmp_path / "gone", files) == []
    # installed again after the uninstall: both are there
    files["Dockerfile"] += "RUN pip install onnxruntime\n"
    assert [f[:3] for f in _findings(tmp_path / "back", files)] == [("lint-ort-cpu-and-gpu", "Dockerfile", 5)]
