"""Fixtures of the fault and security suites, and the summary line of how many cases ran."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from tests.faults import helpers
from tests.support import fake_nvml


@pytest.fixture(scope="session")
def built_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fake CUDA 13 / cuDNN 9 / onnxruntime libraries, compiled once per session."""
    return helpers.build_libraries(tmp_path_factory.mktemp("fault-libs"))


@pytest.fixture(scope="session")
def gpu_template(tmp_path_factory: pytest.TempPathFactory, built_libs: dict[str, Path]) -> Path:
    """A healthy onnxruntime-gpu 1.31.1 site with the CUDA 13 wheels; each case breaks a copy."""
    return helpers.install_gpu_site(tmp_path_factory.mktemp("gpu-template") / "site", built_libs)


@pytest.fixture(scope="session")
def nvml_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the fake libnvidia-ml.so.1 (answers set by FAKE_NVML)."""
    out = tmp_path_factory.mktemp("fake-nvml")
    fake_nvml.build(out)
    os.chmod(out, 0o755)
    return out


class Case:
    """One broken environment: ``base`` (traversable by other users) holds ``site`` and ``cwd``."""

    def __init__(self, base: Path, template: Path) -> None:
        self.base = base
        self.site = base / "site"
        self.cwd = base / "cwd"
        self.cwd.mkdir()
        self._template = template

    def gpu_site(self) -> Path:
        shutil.copytree(self._template, self.site, symlinks=True)
        return self.site

    def run(
        self,
        *args: str,
        sites: Sequence[str | Path] | None = None,
        env: Mapping[str, str | None] | None = None,
        as_user: tuple[int, int] | None = None,
        timeout: float = helpers.TIMEOUT,
        stdin: bytes | None = None,
        watch: Sequence[Path | str] = (),
    ) -> helpers.Result:
        """Run the CLI; assert nothing under ``base`` (and ``watch``) was written."""
        roots = [self.base, *watch]
        before = helpers.snapshot(*roots)
        result = helpers.run_cli(args, sites=[self.site] if sites is None else sites, cwd=self.cwd, env=env,
                                 as_user=as_user, timeout=timeout, stdin=stdin)
        helpers.assert_unchanged(before, helpers.snapshot(*roots))
        return result


@pytest.fixture
def case(gpu_template: Path) -> Iterator[Case]:
    base = Path(tempfile.mkdtemp(prefix="ortdoctor-fault-"))
    os.chmod(base, 0o755)  # cases that drop to `nobody` must be able to reach their tree
    try:
        yield Case(base, gpu_template)
    finally:
        helpers.remove_tree(base)


# --------------------------------------------------------------------------------------------------
# Summary line: "fault suite: N cases passed, M security cases passed"
# --------------------------------------------------------------------------------------------------
class SuiteCounter:
    """Counts passed fault and security cases. Registered as a global plugin: hooks in a conftest only
    see the items under its own directory, and the line covers tests/security too."""

    name = "ortdoctor-fault-summary"

    def __init__(self) -> None:
        self.counts = {"fault": 0, "security": 0, "failed": 0}

    @staticmethod
    def _suite(nodeid: str) -> str | None:
        path = nodeid.split("::", 1)[0].replace("\\", "/")
        if "tests/faults/" in path:
            return "fault"
        if "tests/security/" in path:
            return "security"
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        suite = self._suite(report.nodeid)
        if suite is None:
            return
        if report.when == "call" and report.passed and not hasattr(report, "wasxfail"):
            self.counts[suite] += 1
        elif report.failed:
            self.counts["failed"] += 1

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        c = self.counts
        if not any(c.values()):
            return
        line = f"fault suite: {c['fault']} cases passed, {c['security']} security cases passed"
        if c["failed"]:
            line += f" ({c['failed']} failed)"
        terminalreporter.write_line(line)


def register_summary(config: pytest.Config) -> None:
    if config.pluginmanager.get_plugin(SuiteCounter.name) is None:
        config.pluginmanager.register(SuiteCounter(), SuiteCounter.name)


def pytest_configure(config: pytest.Config) -> None:
    register_summary(config)
