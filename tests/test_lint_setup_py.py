"""``ortdoctor lint`` on setuptools projects: ``setup.py`` (read with ``ast``, never run) and ``setup.cfg``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ortdoctor.doctor.lint import lint_paths
from ortdoctor.formats.setup_py import read_setup_cfg, read_setup_py
from tests.fuzz.bounds import FUZZ, within

SETUP_PY = '''\
import re
from setuptools import setup

PATTERN = re.compile("\\d+")  # an escape a plain string warns about: still read
GPU = [
    "onnxruntime-gpu==1.20.2",
]
CPU = ["onnxruntime"]
CPU = ["onnxruntime>=1.20"]  # bound twice: either could be it, so neither counts


def read_requirements():
    return open("requirements.txt").read().splitlines()


setup(
    name="x",
    python_requires=">=3.8",
    install_requires=["numpy", "torch>=2.4"] + read_requirements(),
    extras_require={"gpu": GPU, "cpu": CPU, "dev": ("pytest",), "docs": "sphinx\\nfuro"},
)
'''


def test_setup_py_reads_literals_and_names_bound_once() -> None:
    spec = read_setup_py(SETUP_PY)
    assert spec.python_requires is not None
    assert (spec.python_requires.line, spec.python_requires.text) == (18, ">=3.8")
    assert spec.install_requires == ()  # a list plus a call's result: computed, says nothing
    extras = {name: [(r.line, r.text) for r in reqs] for name, reqs in spec.extras_require}
    assert extras == {"gpu": [(6, "onnxruntime-gpu==1.20.2")], "cpu": [], "dev": [(20, "pytest")],
                      "docs": [(20, "sphinx"), (20, "furo")]}
    plain = read_setup_py('from setuptools import setup\nsetup(install_requires=[\n  "onnxruntime-gpu",\n])\n')
    assert [(r.line, r.text) for r in plain.install_requires] == [(3, "onnxruntime-gpu")]
    block = read_setup_py('setup(install_requires="""\n    numpy\n    # GPU\n    onnxruntime-gpu\n""")\n')
    assert [(r.line, r.text) for r in block.install_requires] == [(2, "numpy"), (4, "onnxruntime-gpu")]
    assert read_setup_py("print(") == read_setup_py("x = 1\n")  # not Python, no setup(): nothing


def test_setup_cfg_reads_options_and_extras() -> None:
    spec = read_setup_cfg("[metadata]\nname = x\n\n[options]\npython_requires = >=3.9\ninstall_requires =\n"
                          "    numpy\n    # a comment\n    onnxruntime-gpu==1.20.2  # the GPU build\n"
                          "packages = find:\n\n[options.extras_require]\ngpu = onnxruntime-gpu>=1.20\n"
                          "dev =\n    pytest\n")
    assert spec.python_requires is not None
    assert (spec.python_requires.line, spec.python_requires.text) == (5, ">=3.9")
    assert [(r.line, r.text) for r in spec.install_requires] == [(7, "numpy"), (9, "onnxruntime-gpu==1.20.2")]
    assert [(name, [(r.line, r.text) for r in reqs]) for name, reqs in spec.extras_require] == [
        ("gpu", [(13, "onnxruntime-gpu>=1.20")]), ("dev", [(15, "pytest")])]


def _findings(tmp_path: Path, name: str, text: str) -> list[tuple[str, int, str | None]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(text, encoding="utf-8")
    report = lint_paths([str(tmp_path)])
    assert not report.errors
    return [(f.finding.id, f.where.line, f.replacement) for f in report.findings]


def test_a_pin_python_requires_cannot_install(tmp_path: Path) -> None:
    """1.20 has wheels from Python 3.10: the extra that pins it cannot install on the 3.8 python_requires
    admits. A package's users resolve it beside their own pins: the fix is a range of one CUDA major with
    a wheel for every Python it admits."""
    got = _findings(tmp_path / "py", "setup.py", SETUP_PY)
    assert got == [("lint-ort-python-unsupported", 6, '    "onnxruntime-gpu>=1.19.0,<1.27",')]
    report = lint_paths([str(tmp_path / "py")])
    assert report.findings[0].finding.detail.endswith('python_requires ">=3.8" (' + str(tmp_path / "py" / "setup.py") + ':18) is Python 3.8')
    cfg = _findings(tmp_path / "cfg", "setup.cfg", "[options]\npython_requires = >=3.8\ninstall_requires =\n"
                                                   "    onnxruntime-gpu==1.20.2\n")
    assert cfg == [("lint-ort-python-unsupported", 4, "    onnxruntime-gpu>=1.19.0,<1.27")]
    # the Pythons the pin has wheels for: nothing to say
    assert _findings(tmp_path / "ok", "setup.py", SETUP_PY.replace('">=3.8"', '">=3.10,<3.14"')) == []


def test_a_setup_script_that_names_no_package_a_rule_reads_is_not_parsed(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(install_requires=['numpy'])\n",
                                       encoding="utf-8")

    def parsed(text: str) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr("ortdoctor.doctor.lint.read_setup_py", parsed)
    report = lint_paths([str(tmp_path)])
    assert [Path(f).name for f in report.files] == ["setup.py"]
    assert not report.findings


_PARTS = ["setup(", ")", "install_requires=[", "extras_require={", "'gpu': [", "]", "}", "'onnxruntime-gpu'",
          "python_requires='>=3.8'", "X = [", "X", ",", "(", "[options]", "[options.extras_require]",
          "install_requires =", "    onnxruntime-gpu", "gpu = onnxruntime-gpu", "\t", "#", "\\", "'", '"""']


@FUZZ
@given(st.lists(st.sampled_from(_PARTS) | st.text(max_size=12), max_size=40))
def test_setup_readers_never_raise(parts: list[str]) -> None:
    with within():
        for text in ("".join(parts), "\n".join(parts)):
            for spec in (read_setup_py(text), read_setup_cfg(text)):
                assert all(isinstance(r.line, int) for r in spec.install_requires)
