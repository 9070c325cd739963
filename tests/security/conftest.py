"""The security cases build their trees with the fault suite's fixtures, and count in its summary line."""

from __future__ import annotations

import pytest

from tests.faults.conftest import built_libs, case, gpu_template, nvml_dir, register_summary

__all__ = ["built_libs", "case", "gpu_template", "nvml_dir"]


def pytest_configure(config: pytest.Config) -> None:
    register_summary(config)
