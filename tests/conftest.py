"""Refuse to run from an interpreter that has onnxruntime installed.

The tests build their own onnxruntime environments (tests/support/testenvs.py) and run the CLI with the
test interpreter; ortdoctor inspects every site directory of it, so an onnxruntime-gpu in the test venv
(the README's first command installs one into `.venv`) turns up in every report and some fifty tests
fail for a reason they do not name. One clear message instead.
"""

from __future__ import annotations

import site
import sys
from pathlib import Path

import pytest


def _installed_onnxruntime() -> list[str]:
    dirs = [*site.getsitepackages(), site.getusersitepackages()] if hasattr(site, "getsitepackages") else []
    out = []
    for d in dict.fromkeys(dirs):
        path = Path(d)
        if not path.is_dir():
            continue
        for info in path.glob("*.dist-info"):
            name = info.name.rsplit("-", 1)[0].lower().replace("-", "_")
            if name.startswith(("onnxruntime", "ort_nightly")):
                out.append(str(info))
    return out


def pytest_configure(config: pytest.Config) -> None:
    found = _installed_onnxruntime()
    if found:
        raise pytest.UsageError(
            f"the test interpreter {sys.executable} has onnxruntime installed ({', '.join(found)}).\n"
            "The tests build their own onnxruntime environments and must not see one in their own venv: run "
            "them from a venv of their own, as the README says:\n"
            '  python3 -m venv .venv-test && .venv-test/bin/pip install -e ".[test]" && .venv-test/bin/python -m pytest')
