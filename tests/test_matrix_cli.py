"""`ortdoctor matrix`: output, JSON shape and exit codes, through click and through a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ortdoctor.cli.main import cli
from ortdoctor.decide.matrix.load import default_matrix_path
from tests.support.releases import NEWEST, SHIPPED, next_line

REPO = Path(__file__).resolve().parent.parent
CUDA12_FEED = "https://aiinfra.pkgs.visualstudio.com/PublicPackages/_packaging/onnxruntime-cuda-12/pypi/simple/"


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.delenv("ORTDOCTOR_MATRIX", raising=False)
    return CliRunner()


def test_table(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("1.31  ") and "13.0" in line and "wheel" in line for line in lines)
    assert any(line.startswith("1.0   ") and "10.0" in line and "doc" in line for line in lines)
    assert "1.27.0 (linux)" in result.output
    assert "CUDA 13  580" in result.output
    assert "cu130*" in result.output


def test_one_release_text(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--ort", "1.20.1"])  # not on PyPI: the line, with a note
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("onnxruntime-gpu 1.20 (1.20.0, 1.20.2)")
    assert "not a patch release" in out
    assert "CUDA 12.2, cuDNN 9" in out
    assert "onnxruntime_gpu-1.20.2-" in out
    assert "libcudnn_graph.so.9" in out
    assert "Linux 525.60.13" in out


def test_known_bad_release_text(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--ort", "1.27.0"])
    assert result.exit_code == 0
    assert "KNOWN BAD 1.27.0" in result.output
    assert "libcudart.so.13" in result.output


def test_one_release_json(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--ort", "1.31.1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"matrix", "query", "exact", "unverified", "note", "release", "libraries", "min_driver"}
    assert data["query"] == {"ort": "1.31.1"}
    assert data["exact"] is True
    assert data["unverified"] is False
    release = data["release"]
    assert release["cuda"] == "13.0"
    assert release["cuda_major"] == 13
    assert release["cudnn_major"] == 9
    assert release["source"] == "wheel"
    assert release["source_ref"] == "onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert data["min_driver"] == {"linux": "580", "windows": "580"}
    libs = {lib["soname"]: lib for lib in data["libraries"]}
    assert libs["libcudart.so.13"]["load"] == "required"
    assert libs["libcudart.so.13"]["linux_dirs"] == ["nvidia/cu13/lib"]
    assert libs["libcudnn.so.9"]["package"] == "nvidia-cudnn-cu13"


def test_newer_version_json_is_unverified(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--ort", f"{next_line(2)}.0", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["unverified"] is True
    assert data["release"]["line"] == NEWEST.line


def test_recommend_text(runner: CliRunner) -> None:
    # --gpu none: a GPU detected here would drop the feed build, whose kernels the matrix does not know
    result = runner.invoke(cli, ["matrix", "--cuda", "12", "--torch", "2.4", "--gpu", "none"])
    assert result.exit_code == 0, result.output
    assert "pip install onnxruntime-gpu==1.26.0" in result.output
    assert f"--index-url {CUDA12_FEED}" in result.output  # the newer feed build, as the alternative


def test_recommend_json(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--torch", "2.3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rec = data["recommendation"]
    assert data["query"] == {"cuda": None, "torch": "2.3"}
    assert rec["cuda"] == "12.x"
    assert rec["cudnn_major"] == 8
    assert rec["index_url"] == CUDA12_FEED
    assert rec["command"].endswith(f"pip install onnxruntime-gpu==1.18.0 --index-url {CUDA12_FEED}")
    assert rec["torch_variant"]["tag"] == "cu121"


def test_recommend_nothing_fits_exits_1(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--cuda", "13", "--torch", "2.3"])
    assert result.exit_code == 1
    assert "no onnxruntime-gpu build" in result.output
    result = runner.invoke(cli, ["matrix", "--cuda", "13", "--torch", "2.3", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.output)["recommendation"] is None


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--cuda", "twelve"], "--cuda 'twelve' is not a CUDA version"),
        (["--torch", "latest"], "--torch 'latest' is not a torch version"),
        (["--ort", "banana"], "--ort 'banana' is not a PEP 440 version"),
        (["--ort", "1.20", "--cuda", "12"], "use --ort on its own"),
    ],
)
def test_bad_options_exit_2(runner: CliRunner, args: list[str], text: str) -> None:
    result = runner.invoke(cli, ["matrix", *args])
    assert result.exit_code == 2
    assert text in result.output
    assert "Traceback" not in result.output


def test_torch_versions_beyond_the_matrix(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--torch", "2.13"])
    assert result.exit_code == 0, result.output
    assert "torch 2.13 cu130" in result.output
    result = runner.invoke(cli, ["matrix", "--torch", "2.99"])
    assert result.exit_code == 0, result.output  # the newest line stands in, as --ort does
    assert "newer than every torch line" in result.output
    result = runner.invoke(cli, ["matrix", "--torch", "1.13"])
    assert result.exit_code == 1
    assert "torch 1.13 is older than every torch line" in result.output


def test_the_examples_name_releases_that_exist(runner: CliRunner) -> None:
    """The --help and README example is a version pip can install (1.20.1 never existed)."""
    help_text = runner.invoke(cli, ["matrix", "--help"]).output
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    table = runner.invoke(cli, ["matrix"]).output
    for text in (help_text, readme, table):
        assert "--ort 1.20.1" not in text
    assert "--ort 1.20.2" in help_text


def test_too_old_version_exits_1(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--ort", "0.4.0"])
    assert result.exit_code == 1
    assert "older than every release line" in result.output


def _broken_matrix(tmp_path: Path) -> Path:
    data = yaml.safe_load(Path(default_matrix_path()).read_text(encoding="utf-8"))
    data["releases"][4]["cuda"] = "14.0"
    p = tmp_path / "mine.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")
    return p


def test_invalid_matrix_file_exits_2_with_key_path(runner: CliRunner, tmp_path: Path) -> None:
    p = _broken_matrix(tmp_path)
    result = runner.invoke(cli, ["matrix", "--matrix", str(p)])
    assert result.exit_code == 2
    assert f"invalid matrix: {p}: releases[4].cuda: CUDA major 14" in result.output
    assert "Traceback" not in result.output


def test_env_var_selects_the_matrix(runner: CliRunner, tmp_path: Path) -> None:
    p = _broken_matrix(tmp_path)
    result = runner.invoke(cli, ["matrix"], env={"ORTDOCTOR_MATRIX": str(p)})
    assert result.exit_code == 2
    assert str(p) in result.output


def test_full_json_shape(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["matrix", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert set(data) == {"matrix", "schema", "feeds", "releases", "cuda_majors", "cudnn_majors", "torch",
                         "tensorrt"}
    assert len(data["releases"]) == len(SHIPPED.releases)
    assert data["releases"][0]["line"] == NEWEST.line
    assert set(data["cuda_majors"]) == {"10", "11", "12", "13"}


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "ORTDOCTOR_MATRIX"}
    return subprocess.run([sys.executable, "-m", "ortdoctor", "matrix", *args], cwd=REPO, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=120, check=False)


def test_subprocess_ok_json() -> None:
    proc = _run("--ort", "1.31.1", "--json")
    assert proc.returncode == 0, proc.stderr
    release = json.loads(proc.stdout)["release"]
    assert (release["cuda"], release["cudnn_major"], release["source"]) == ("13.0", 9, "wheel")


def test_subprocess_recommend() -> None:
    proc = _run("--cuda", "12", "--torch", "2.4")
    assert proc.returncode == 0, proc.stderr
    assert "pip install onnxruntime-gpu==1.26.0" in proc.stdout


def test_subprocess_invalid_matrix_exits_2(tmp_path: Path) -> None:
    not_yaml = tmp_path / "x.yaml"
    not_yaml.write_text("releases: [\n", encoding="utf-8")
    proc = _run("--matrix", str(not_yaml))
    assert proc.returncode == 2
    assert f"{not_yaml}: not valid YAML" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = _run(env={"ORTDOCTOR_MATRIX": str(_broken_matrix(tmp_path))})
    assert proc.returncode == 2
    assert "releases[4].cuda" in proc.stderr
