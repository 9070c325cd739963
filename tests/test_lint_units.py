"""`ortdoctor lint`'s readers, rules and renderers on small inputs written for each rule."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ortdoctor.cli.main import main
from ortdoctor.doctor.lint import lint_paths
from ortdoctor.formats.conda_env import read_conda_env
from ortdoctor.formats.dockerfile import read_dockerfile
from ortdoctor.formats.requirements_txt import read_requirements
from ortdoctor.formats.toml_lines import TomlError, read_toml
from ortdoctor.report.lint import to_github, to_sarif
from tests.fuzz.bounds import FUZZ, within


def _ids(tmp_path: Path, files: dict[str, str], **kw: object) -> list[tuple[str, str, int]]:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    report = lint_paths([str(tmp_path)], **kw)  # type: ignore[arg-type]
    assert not report.errors
    return [(f.finding.id, Path(f.where.file).name, f.where.line) for f in report.findings]


def test_requirements_reader_lines_includes_feeds() -> None:
    text = "# c\n-r base.txt\n--extra-index-url https://x/simple\nonnxruntime-gpu==1.20.2 \\\n  --hash=sha256:aa\ntorch  # t\n"
    r = read_requirements(text)
    assert [(x.line, x.text) for x in r.requirements] == [(4, "onnxruntime-gpu==1.20.2"), (6, "torch")]
    assert [(i.line, i.kind, i.target) for i in r.includes] == [(2, "r", "base.txt")]
    assert [(f.line, f.kind, f.url) for f in r.feeds] == [(3, "extra-index-url", "https://x/simple")]


def test_toml_reader_matches_tomllib_and_keeps_lines() -> None:
    tomllib = pytest.importorskip("tomllib")
    text = Path(__file__).parents[1].joinpath("pyproject.toml").read_text(encoding="utf-8")
    # numbers and booleans come back as their text
    def plain(v: object) -> object:
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v if isinstance(v, str) else str(v).lower()
    assert plain(read_toml(text)) == plain(tomllib.loads(text))
    doc = read_toml('[[package]]\nname = "a"\ndeps = [\n  { name = "b" },\n  "c",\n]\n')
    assert doc["package"][0]["deps"][1].line == 5
    with pytest.raises(TomlError):
        read_toml('a = "unterminated\n')


def test_conda_and_dockerfile_readers() -> None:
    env = read_conda_env("name: x\ndependencies:\n  - python=3.10\n  - pip\n  - pip:\n    - onnxruntime-gpu==1.18.0\n")
    assert [(i.line, i.text, i.pip) for i in env.items] == [(3, "python=3.10", False), (4, "pip", False),
                                                            (6, "onnxruntime-gpu==1.18.0", True)]
    stages = read_dockerfile("ARG V=1.20.2\nFROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04 AS b\n"
                             "RUN apt-get update && pip install \\\n    onnxruntime-gpu==${V} torch\n")
    assert stages[0].name == "b"
    conda = read_dockerfile("FROM nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04\nRUN conda create -y -n x python=3.10\n")
    assert [(p.line, p.value) for p in conda[0].pythons] == [(2, "3.10")]
    assert [(w.line, w.word) for w in stages[0].pip_installs[0].words] == [(4, "onnxruntime-gpu==1.20.2"),
                                                                          (4, "torch")]


def test_both_flavours_markers_and_dependents(tmp_path: Path) -> None:
    assert _ids(tmp_path / "a", {"requirements.txt": "onnxruntime-gpu==1.20.2\noptimum[onnxruntime]\n"}) == [
        ("lint-ort-cpu-and-gpu", "requirements.txt", 2)]
    # exclusive markers: never both on one machine
    assert _ids(tmp_path / "b", {"requirements.txt": "onnxruntime-gpu==1.20.2; sys_platform == 'linux'\n"
                                                     "onnxruntime==1.20.1; sys_platform == 'darwin'\n"}) == []
    # a CPU requirements file beside a GPU one is no conflict
    assert _ids(tmp_path / "c", {"requirements-gpu.txt": "onnxruntime-gpu==1.20.2\n",
                                 "requirements-cpu.txt": "onnxruntime==1.20.1\n"}) == []


def test_cuda_sources_image_wheels_conda(tmp_path: Path) -> None:
    assert _ids(tmp_path / "a", {"Dockerfile": "FROM nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04\n"
                                               "RUN pip install onnxruntime-gpu==1.20.2\n"}) == [
        ("lint-ort-cuda-mismatch", "Dockerfile", 2)]
    assert _ids(tmp_path / "b", {"requirements.txt": "onnxruntime-gpu==1.31.1\nnvidia-cublas-cu12==12.4.5.8\n"}) == [
        ("lint-ort-cuda-mismatch", "requirements.txt", 1)]
    assert _ids(tmp_path / "c", {"environment.yml": "dependencies:\n  - python=3.10\n  - cudatoolkit=11.8\n"
                                                    "  - pip:\n    - onnxruntime-gpu==1.20.2\n"}) == [
        ("lint-ort-cuda-mismatch", "environment.yml", 5)]
    assert _ids(tmp_path / "d", {"requirements.txt": "--index-url https://aiinfra.pkgs.visualstudio.com/PublicPackages"
                                                     "/_packaging/onnxruntime-cuda-12/pypi/simple/\n"
                                                     "onnxruntime-gpu==1.31.1\ntorch==2.5.1+cu124\n"}) == []


def test_a_dependency_that_pulls_onnxruntime_gpu(tmp_path: Path) -> None:
    report_dir = tmp_path / "a"
    assert _ids(report_dir, {"requirements.txt": "torch==2.0.1+cu118\nsilero-vad[onnx-gpu]\n"}) == [
        ("lint-ort-cuda-mismatch", "requirements.txt", 2), ("lint-ort-unpinned", "requirements.txt", 2)]
    fix = lint_paths([str(report_dir)]).findings[0]
    assert fix.replacement == "silero-vad[onnx-gpu]\nonnxruntime-gpu==1.18.1"


def test_a_direct_reference_is_not_unpinned(tmp_path: Path) -> None:
    url = "https://example.org/onnxruntime_gpu-1.20.2-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert _ids(tmp_path, {"requirements.txt": f"onnxruntime-gpu @ {url}\nonnxruntime\n"}) == [
        ("lint-ort-cpu-and-gpu", "requirements.txt", 2)]


def test_an_unpinned_torch_takes_the_pytorch_index_only_when_it_is_the_only_one(tmp_path: Path) -> None:
    ort = "onnxruntime-gpu==1.31.1\n"
    assert _ids(tmp_path / "a", {"requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu121\n"
                                                     "torch\n" + ort}) == []
    assert _ids(tmp_path / "b", {"requirements.txt": "--index-url https://download.pytorch.org/whl/cu121\n"
                                                     "torch\n" + ort}) == [
        ("lint-ort-cuda-mismatch", "requirements.txt", 3)]


def test_python_driver_and_pinning(tmp_path: Path) -> None:
    assert _ids(tmp_path / "a", {"pyproject.toml": '[project]\nname = "x"\nrequires-python = ">=3.10"\n'
                                                   'dependencies = [\n  "onnxruntime-gpu==1.24.1",\n]\n'}) == [
        ("lint-ort-python-unsupported", "pyproject.toml", 5)]
    assert _ids(tmp_path / "b", {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["onnxruntime-gpu==1.31.1"]\n'
                                                   '[tool.ortdoctor]\nmin-driver = "535.104.05"\ngpus = ["sm_70"]\n'}) == [
        ("lint-cuda-needs-newer-driver", "pyproject.toml", 3), ("lint-gpu-arch-unsupported", "pyproject.toml", 3)]
    assert _ids(tmp_path / "c", {"requirements.txt": "onnxruntime-gpu>=1.17\n"}) == [
        ("lint-ort-unpinned", "requirements.txt", 1)]


def test_compose_gpu_service_image_against_the_driver_floor(tmp_path: Path) -> None:
    compose = ("services:\n  app:\n    image: nvidia/cuda:13.0.1-runtime-ubuntu24.04\n    deploy:\n"
               "      resources:\n        reservations:\n          devices:\n            - driver: nvidia\n"
               "              capabilities: [gpu]\n  db:\n    image: nvidia/cuda:13.0.1-runtime-ubuntu24.04\n")
    assert _ids(tmp_path / "a", {"compose.yaml": compose}, min_driver="535.104.05") == [
        ("lint-cuda-needs-newer-driver", "compose.yaml", 3)]
    assert _ids(tmp_path / "b", {"compose.yaml": compose}) == []


def test_lock_files(tmp_path: Path) -> None:
    uv = ('version = 1\nrequires-python = ">=3.11"\n\n[[package]]\nname = "app"\nversion = "0.1"\n'
          'source = { virtual = "." }\ndependencies = [\n  { name = "onnxruntime-gpu" },\n  { name = "optimum" },\n]\n\n'
          '[package.optional-dependencies]\ncpu = [{ name = "onnxruntime" }]\n\n'
          '[[package]]\nname = "onnxruntime-gpu"\nversion = "1.31.1"\nsource = { registry = "https://pypi.org/simple" }\n\n'
          '[[package]]\nname = "optimum"\nversion = "2.3.0"\nsource = { registry = "https://pypi.org/simple" }\n\n'
          '[[package]]\nname = "onnxruntime"\nversion = "1.31.1"\nsource = { registry = "https://pypi.org/simple" }\n')
    assert _ids(tmp_path / "a", {"uv.lock": uv}) == [("lint-ort-cpu-and-gpu", "uv.lock", 27)]
    pylock = ('lock-version = "1.0"\nrequires-python = ">=3.11"\n[[packages]]\nname = "onnxruntime-gpu"\n'
              'version = "1.26.0"\n[[packages]]\nname = "torch"\nversion = "2.15.0"\n')
    assert _ids(tmp_path / "b", {"pylock.toml": pylock}) == [("lint-ort-cuda-mismatch", "pylock.toml", 4)]


def test_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "requirements.txt")
    report = lint_paths([str(tmp_path)])
    assert report.errors == (f"{tmp_path / 'requirements.txt'}: not a regular file",)


def test_renderers_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "requirements.txt").write_text("onnxruntime-gpu==1.20.2\nonnxruntime\n", encoding="utf-8")
    report = lint_paths([str(tmp_path)])
    gh = to_github(report.files, report.findings)
    assert gh.startswith("::error file=")
    assert ",line=2," in gh
    sarif = json.loads(to_sarif(report.files, report.findings))
    result = sarif["runs"][0]["results"][0]
    assert sarif["version"] == "2.1.0"
    assert result["ruleId"] == "lint-ort-cpu-and-gpu"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert "insertedContent" not in result["fixes"][0]["artifactChanges"][0]["replacements"][0]
    with pytest.raises(SystemExit) as e:
        main(["lint", "--json", str(tmp_path)])
    assert e.value.code == 1
    assert json.loads(capsys.readouterr().out)["verdict"] == "fail"
    with pytest.raises(SystemExit) as e:
        main(["lint", str(tmp_path / "missing.txt")])
    assert e.value.code == 2
    out = tmp_path / "out" / "lint.sarif"
    out.parent.mkdir()
    with pytest.raises(SystemExit) as e:
        main(["lint", "--format", "sarif", "--output", str(out), str(tmp_path / "requirements.txt")])
    assert e.value.code == 1
    assert json.loads(out.read_text(encoding="utf-8"))["runs"][0]["results"]
    (tmp_path / "requirements.txt").write_text("onnxruntime-gpu>=1.17\n", encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        main(["lint", str(tmp_path / "requirements.txt")])
    assert e.value.code == 0  # a warning passes
    with pytest.raises(SystemExit) as e:
        main(["lint", "--strict", str(tmp_path / "requirements.txt")])
    assert e.value.code == 1


def _fixes(tmp_path: Path, files: dict[str, str]) -> dict[tuple[str, int], str | None]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    report = lint_paths([str(tmp_path)])
    assert not report.errors
    return {(f.finding.id, f.where.line): f.replacement for f in report.findings}


def _specifier(replacement: str) -> str:
    return replacement.split("onnxruntime-gpu[cuda,cudnn]", 1)[1].split('"', 1)[0]


def _installable_on_every_python(spec: str, pythons: list[str]) -> bool:
    """Some release the specifier admits, of one CUDA major, has a wheel for each Python (the package table)."""
    from packaging.specifiers import SpecifierSet

    from ortdoctor.decide.matrix.load import load_matrix
    matrix = load_matrix()
    admitted = [r for v in matrix.versions_of("onnxruntime-gpu") if SpecifierSet(spec).contains(v)
                for m in [matrix.release_for(v)] if m is not None and m.exact for r in [m.release] if r.pypi]
    return len({r.cuda_major for r in admitted}) == 1 and all(any(p in r.python for r in admitted) for p in pythons)


LIBRARY = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "lib"
version = "1"
requires-python = ">=3.10"

[project.optional-dependencies]
gpu = ["onnxruntime-gpu[cuda,cudnn]"]

[dependency-groups]
dev = ["onnxruntime-gpu[cuda,cudnn]"]
"""


def test_a_library_extra_gets_a_range_installable_on_every_declared_python(tmp_path: Path) -> None:
    """A package's optional extra (this repository's own `gpu`) is resolved by its users' installers: the fix
    is a range of one CUDA major that has wheels for every Python requires-python admits (3.10 has none
    after 1.23, 3.14 none before 1.24), not the one release the lowest Python gets."""
    fixes = _fixes(tmp_path, {"pyproject.toml": LIBRARY})
    extra = fixes[("lint-ort-unpinned", 11)]
    assert extra is not None
    assert extra.startswith('gpu = ["onnxruntime-gpu[cuda,cudnn]>=')
    assert _installable_on_every_python(_specifier(extra), ["3.10", "3.11", "3.12", "3.13", "3.14"])
    # the development group is the project's own environment: one release, on every Python it admits,
    # or the range where no one release covers them all
    dev = fixes[("lint-ort-unpinned", 14)]
    assert dev is not None
    assert _installable_on_every_python(_specifier(dev), ["3.10", "3.11", "3.12", "3.13", "3.14"])


def test_an_application_pins_one_release_every_declared_python_installs(tmp_path: Path) -> None:
    app = ('[project]\nname = "app"\nversion = "1"\nrequires-python = ">=3.11,<3.14"\n'
           'dependencies = ["onnxruntime-gpu[cuda,cudnn]>=1.20", "torch==2.5.1"]\n')
    fixes = _fixes(tmp_path, {"pyproject.toml": app})
    line = fixes[("lint-ort-unpinned", 5)]
    assert line is not None
    spec = _specifier(line)
    assert spec.startswith("==")
    assert _installable_on_every_python(spec, ["3.11", "3.12", "3.13"])
    # the same requirements in a package: a range, the torch pin's CUDA 12
    lib = '[build-system]\nrequires = ["hatchling"]\n' + app.replace('"app"', '"lib"')
    line = _fixes(tmp_path, {"pyproject.toml": lib})[("lint-ort-unpinned", 7)]
    assert line is not None
    assert _specifier(line) == ">=1.21.0,<1.27"


def test_a_fix_in_a_requirements_file_keeps_a_wheel_for_every_python_that_installs_it(tmp_path: Path) -> None:
    """The requirements file declares no Python; the Dockerfiles that install it do, and the line the fix
    writes is installed under each of them (1.24 and later have no 3.10 wheel, 1.20 and later no 3.8 one)."""
    req = "torch==2.5.1\nonnxruntime-gpu==1.18.0\n"
    image = ("FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04\nRUN apt-get install -y python3.10\n"
             "COPY requirements.txt .\nRUN pip install -r requirements.txt\n")
    old = image.replace("python3.10", "python3.8").replace("COPY requirements.txt .", "COPY . .").replace(
        "-r requirements.txt", "-r ../requirements.txt")
    cases = [({}, ()), ({"Dockerfile": image}, ("3.10",)),
             ({"Dockerfile": image, "docker/old.Dockerfile": old}, ("3.8", "3.10"))]
    for n, (more, pythons) in enumerate(cases):
        root = tmp_path / str(n)
        for name, text in {"requirements.txt": req, **more}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        fixes = {(f.finding.id, f.where.file.rsplit("/", 1)[-1], f.where.line): f for f in
                 lint_paths([str(root)]).findings}
        fix = fixes[("lint-ort-cuda-mismatch", "requirements.txt", 2)]
        assert fix.replacement is not None
        assert fix.replacement.startswith("onnxruntime-gpu==")
        wheels = _release_pythons(fix.replacement.split("==", 1)[1])
        assert all(p in wheels for p in pythons), (fix.replacement, pythons)
        assert ("Python 3.10 the image installs" in (fix.finding.fix or "")) == bool(pythons)
    assert "3.10" not in _release_pythons(
        lint_paths([str(tmp_path / "0")]).findings[0].replacement.split("==", 1)[1])  # type: ignore[union-attr]



def test_a_poetry_python_key_is_a_marker(tmp_path: Path) -> None:
    """`python = "<3.13"` in a Poetry dependency table installs that entry only there: 1.19 has wheels for
    3.9 (the declared floor) and 1.20 has them for 3.13, so neither entry is unsupported where it installs."""
    poetry = ('[tool.poetry]\nname = "x"\nversion = "1"\n\n[tool.poetry.dependencies]\npython = ">=3.9,<3.14"\n'
              'onnxruntime-gpu = [{version = "1.19.*", python = "<3.13"},\n'
              '  {version = "1.20.2", python = ">=3.13"}]\n')
    assert _ids(tmp_path / "a", {"pyproject.toml": poetry}) == []
    # without the keys both entries install on 3.9: 1.20.2 has no 3.9 wheel
    plain = poetry.replace(', python = "<3.13"', "").replace(', python = ">=3.13"', "")
    assert _ids(tmp_path / "b", {"pyproject.toml": plain}) == [("lint-ort-python-unsupported", "pyproject.toml", 8)]

def _release_pythons(version: str) -> tuple[str, ...]:
    from ortdoctor.decide.matrix.load import load_matrix
    match = load_matrix().release_for(version)
    assert match is not None
    return match.release.python


WORKFLOW = """name: ci
on:
  push:
    branches: [main]   # a comment
jobs:
  gpu-tests:
    runs-on: ${{ matrix.runner }}
    strategy:
      matrix:
        runner: [ubuntu-latest, "gpu-t4-4-core"]
        python: ["3.10",
                 "3.12"]
        include:
          - runner: self-hosted
            gpu: sm_35
    steps:
      - uses: actions/checkout@v4
      - name: a script is text, not keys
        run: |
          echo "runs-on: [a100]"
          - gpu: sm_50
      - uses: ortdoctor/ortdoctor@v0.1.0
        with:
          gpus: "8.6"
          min-driver: 525.60.13
  lint:
    runs-on: [self-hosted, linux, A100]
    steps:
    - run: >-
        ortdoctor lint
"""


def test_workflow_reader_lines_matrix_and_action_inputs() -> None:
    from ortdoctor.formats.github_workflow import read_workflow
    jobs = {j.name: j for j in read_workflow(WORKFLOW)}
    gpu = jobs["gpu-tests"]
    assert [(label, label.line) for label in gpu.runs_on] == [("ubuntu-latest", 10), ("gpu-t4-4-core", 10),
                                                             ("self-hosted", 14)]
    assert dict(gpu.matrix)["gpu"] == ("sm_35",)
    assert dict(gpu.matrix)["gpu"][0].line == 15
    assert [(k, v, v.line) for k, v in gpu.ortdoctor_inputs] == [("gpus", "8.6", 24), ("min-driver", "525.60.13", 25)]
    assert [(label, label.line) for label in jobs["lint"].runs_on] == [("self-hosted", 27), ("linux", 27),
                                                                      ("A100", 27)]


def test_gpus_and_driver_floor_from_a_github_workflow(tmp_path: Path) -> None:
    """The machines a workflow declares hold for every file linted with it: the T4 of a runner label, the
    matrix's sm_35 (no release has kernels for it), the Action's driver floor (CUDA 12's 525.60.13: a CUDA
    13 pin needs 580)."""
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    got = _ids(tmp_path, {".github/workflows/ci.yml": WORKFLOW, "requirements.txt": "onnxruntime-gpu==1.31.1\n"})
    assert got == [("lint-cuda-needs-newer-driver", "requirements.txt", 1),
                   ("lint-gpu-arch-unsupported", "requirements.txt", 1)]
    report = lint_paths([str(tmp_path)])
    related = {(f.finding.id, f.related[0].file.rsplit("/", 3)[-1], f.related[0].line) for f in report.findings}
    assert related == {("lint-cuda-needs-newer-driver", "ci.yml", 25), ("lint-gpu-arch-unsupported", "ci.yml", 15)}
    # --min-driver replaces the workflow's floor
    assert _ids(tmp_path, {}, min_driver="580.65.06") == [("lint-gpu-arch-unsupported", "requirements.txt", 1)]


_WORKFLOW_PARTS = ["jobs:", "  a:", "    runs-on: [", "    runs-on: ${{ matrix.r }}", "    strategy:",
                   "      matrix:", "        r: [x, 'y', {k: [", "        include:", "          - r: a100",
                   "    steps:", "      - uses: o/ortdoctor@v1", "        with:", "          gpus: '8.6 sm_9'",
                   "      - run: |", "- ", "-", "  - - [", "key: {a: b, c", "\t", "'", '"', "#", ": :", "]", "}"]


@FUZZ
@given(st.lists(st.sampled_from(_WORKFLOW_PARTS) | st.text(max_size=12), max_size=40))
def test_workflow_reader_never_raises(parts: list[str]) -> None:
    from ortdoctor.formats.github_workflow import read_workflow
    with within():
        for job in read_workflow("\n".join(parts)):
            assert all(isinstance(label.line, int) for label in job.runs_on)


def test_a_file_that_names_no_package_a_rule_reads_is_read_not_parsed(tmp_path: Path) -> None:
    """Most files of a monorepo name no onnxruntime, torch or NVIDIA package: they are listed as read and
    skip the parse, but an include (`-r`) or `[tool.ortdoctor]` still counts."""
    got = _ids(tmp_path, {"requirements.txt": "requests==2.31.0\n-r gpu/requirements-gpu.txt\n",
                          "gpu/requirements-gpu.txt": "onnxruntime\nonnxruntime-gpu==1.20.2\n",
                          "svc/requirements.txt": "numpy>=1.26\n",
                          "pyproject.toml": '[project]\nname = "x"\n[tool.ortdoctor]\nmin-driver = "470.57.02"\n'})
    assert ("lint-ort-cpu-and-gpu", "requirements-gpu.txt", 1) in got
    assert ("lint-cuda-needs-newer-driver", "requirements-gpu.txt", 2) in got
    report = lint_paths([str(tmp_path)])
    assert len(report.files) == 4
