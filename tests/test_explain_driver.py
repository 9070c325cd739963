"""Never a fix the evidenced driver cannot run: the CUDA major of every pin, library set or build a fix names is
checked against the matrix's ``cuda_majors[N].min_driver`` for the driver and OS the text shows.

The rule is written once, in the fix planner (:func:`ortdoctor.decide.fix_plan.driver_first`, over
:func:`ortdoctor.decide.fixes.driver_gate`); ``explain`` asks it of the fixes it prints. Tested here on the
planner directly, on the fixes the classifier prints for the working part of the real corpus, and on every
corpus text that shows a driver. The driver lines are quoted from real texts of the corpus.
"""

from __future__ import annotations

import pytest

from ortdoctor.core.facts import Finding
from ortdoctor.decide.fix_plan import driver_first, plan_fix
from ortdoctor.decide.fixes import driver_floor, driver_gate, newest_cuda, spec_cuda_major, step
from ortdoctor.decide.matrix.load import load_matrix
from ortdoctor.decide.matrix.model import Matrix
from ortdoctor.diagnose import fixes
from ortdoctor.diagnose.classify import classify, classify_with_stack
from ortdoctor.diagnose.text_evidence import Evidence, EvidenceScanner
from ortdoctor.diagnose.text_normalise import normalise_line
from ortdoctor.diagnose.textlines import iter_lines
from tests.support.explain_corpus import load_corpus, load_split

MATRIX = load_matrix()
ENTRIES = load_corpus()
SPLIT = load_split()
WORKING = [e for e in ENTRIES if SPLIT.part(e) == "working"]


def _below(version: str) -> str:
    """A driver one step older than ``version`` (same branch, a lower minor)."""
    head, _, rest = version.partition(".")
    return f"{int(head) - 1}.99" if not rest else f"{head}.{max(int(rest.split('.')[0]) - 1, 0)}"


def _finding(*specs: str) -> Finding:
    return Finding("cuda-major-mismatch", "error", "t", "d", "f", (step("install", *specs),))


# -- the decide layer -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "major"), [
    ("onnxruntime-gpu[cuda,cudnn]==1.26.0", 12),  # a pin: its release line's PyPI build
    ("onnxruntime-gpu==1.18.1", 11),
    ("onnxruntime-gpu", None),  # set below: the newest line, what pip picks
    ("nvidia-cublas-cu12", 12),  # the package table's CUDA of the wheel
    ("nvidia-cudnn-cu12==9.*", 12),
    ("numpy<2", None),
])
def test_the_cuda_major_a_spec_installs(spec: str, major: int | None) -> None:
    if spec == "onnxruntime-gpu":
        major = MATRIX.releases[0].cuda_major
    assert spec_cuda_major(MATRIX, spec) == major


def test_the_floor_is_the_matrix_min_driver_of_the_os() -> None:
    for major, row in MATRIX.cuda_majors.items():
        assert driver_floor(MATRIX, major, "linux") == row.min_driver_linux
        assert driver_floor(MATRIX, major, "windows") == row.min_driver_windows
        assert driver_floor(MATRIX, major, "wsl") == row.min_driver_windows  # WSL runs the Windows driver


@pytest.mark.parametrize("os_name", ["linux", "windows"])
def test_a_driver_below_every_floor_runs_none_and_the_first_floor_is_named(os_name: str) -> None:
    majors = sorted(m for m in MATRIX.cuda_majors if m >= 11)
    lowest = driver_floor(MATRIX, majors[0], os_name)
    assert lowest is not None
    gate = driver_gate(MATRIX, _below(lowest), os_name, majors)
    assert gate is not None
    assert gate.none_runs
    assert gate.runs == ()
    assert gate.floors[0] == (majors[0], lowest)


def test_a_driver_at_the_floor_runs_that_major_and_not_a_newer_one() -> None:
    floor12, floor13 = driver_floor(MATRIX, 12, "linux"), driver_floor(MATRIX, 13, "linux")
    assert floor12 is not None
    assert floor13 is not None
    assert driver_gate(MATRIX, floor12, "linux", [12]) is None  # runs it all: nothing to say
    gate = driver_gate(MATRIX, floor12, "linux", [12, 13])
    assert gate is not None
    assert gate.runs == (12,)
    assert gate.blocked == (13,)
    assert gate.floor(13) == floor13


def test_an_unknown_driver_or_os_floor_says_nothing() -> None:
    assert driver_gate(MATRIX, None, "linux", [13]) is None
    assert driver_gate(MATRIX, "not a version", "linux", [13]) is None
    # an unknown OS: below both OS floors is below, whichever it is
    low = _below(min(driver_floor(MATRIX, 12, o) or "" for o in ("linux", "windows")))
    gate = driver_gate(MATRIX, low, None, [12])
    assert gate is not None
    assert gate.none_runs


def test_the_newest_cuda_a_driver_runs_follows_the_per_minor_floors() -> None:
    row = MATRIX.cuda_majors[10]
    for minor, floor in row.min_driver_by_minor_windows.items():
        assert newest_cuda(MATRIX, floor, "windows") == minor  # exactly at a minor's floor
    assert newest_cuda(MATRIX, row.min_driver_windows, "windows") == "10.0"
    floor12 = driver_floor(MATRIX, 12, "linux")
    assert floor12 is not None
    assert newest_cuda(MATRIX, floor12, "linux") == "12.x"  # minor version compatibility from CUDA 11 on
    assert newest_cuda(MATRIX, "300.1", "linux") is None
    assert newest_cuda(MATRIX, floor12, None) is None


# -- the fix planner ----------------------------------------------------------------------------------------
def test_the_plan_says_the_driver_comes_first_when_it_runs_none_of_its_installs() -> None:
    floor = driver_floor(MATRIX, 12, "windows")
    assert floor is not None
    plan = plan_fix([_finding("onnxruntime-gpu[cuda,cudnn]==1.26.0")], windows=True, matrix=MATRIX,
                    driver=_below(floor), os_name="windows")
    assert plan.driver is not None
    assert plan.driver.none_runs
    assert plan.driver.floors == ((12, floor),)
    # the same plan for a driver at the floor, or with no driver known, has nothing to say
    assert plan_fix([_finding("onnxruntime-gpu[cuda,cudnn]==1.26.0")], matrix=MATRIX, driver=floor,
                    os_name="windows").driver is None
    assert plan_fix([_finding("onnxruntime-gpu[cuda,cudnn]==1.26.0")]).driver is None


def test_the_plan_names_the_installs_the_driver_cannot_run() -> None:
    floor12 = driver_floor(MATRIX, 12, "linux")
    assert floor12 is not None
    findings = [_finding("nvidia-cublas-cu12"), _finding("onnxruntime-gpu==1.31.1")]
    plan = plan_fix(findings, matrix=MATRIX, driver=floor12, os_name="linux")
    assert plan.driver is not None
    assert plan.driver.runs == (12,)
    assert plan.driver.blocked == (13,)
    # uninstalls bring no CUDA major
    gate = driver_first(MATRIX, [step("uninstall", "-y", "onnxruntime-gpu")], "400.1", "linux")
    assert gate is None


# -- the working part's printed fixes, through the planner ------------------------------------------------------
def _fix_majors(text: str) -> list[int]:
    matches = classify(text)
    if not matches:
        return []
    return [m for s in fixes.pip_specs(matches[0].fix) if (m := spec_cuda_major(MATRIX, s)) is not None]


def test_working_part_fixes_that_pin_a_cuda_major_are_checked_against_its_driver_floor() -> None:
    checked = 0
    for entry in WORKING:
        majors = _fix_majors(entry.text)
        if not majors:
            continue
        specs = fixes.pip_specs(classify(entry.text)[0].fix)
        steps = [step("install", *specs)]
        for os_name in ("linux", "windows"):
            floors = [f for m in majors if (f := driver_floor(MATRIX, m, os_name))]
            top = max(floors, key=lambda f: tuple(int(p) for p in f.split(".")))
            low = min(floors, key=lambda f: tuple(int(p) for p in f.split(".")))
            assert driver_first(MATRIX, steps, top, os_name) is None, entry.name
            below = driver_first(MATRIX, steps, _below(low), os_name)
            assert below is not None, entry.name
            assert below.none_runs, entry.name
        checked += 1
    assert checked >= 20  # most working-part fixes pin a build or a library set


def test_working_part_fixes_do_not_change_without_a_driver_in_the_text() -> None:
    for entry in WORKING:
        ev = EvidenceScanner()
        for line in iter_lines(entry.text):
            ev.feed(normalise_line(line))
        if any(e.fact == "driver.version" for e in ev.items):
            continue
        matches = classify(entry.text)
        assert not matches or "Update the NVIDIA driver" not in matches[0].fix, entry.name


# -- every corpus text that shows a driver -----------------------------------------------------------------------
def _recommended_runs(matrix: Matrix, fix: str, driver: str, os_name: str) -> bool:
    specs = fixes.pip_specs(fix)
    first = next((m for s in specs if (m := spec_cuda_major(matrix, s)) is not None), None)
    return first is None or driver_gate(matrix, driver, os_name, [first]) is None


def test_no_text_with_a_driver_gets_a_first_pin_its_driver_cannot_run() -> None:
    seen = 0
    for entry in ENTRIES:
        evidence: list[Evidence] = []
        matches, stack = classify_with_stack(iter_lines(entry.text), evidence=evidence)
        drivers = {e.value for e in evidence if e.fact == "driver.version"}
        if len(drivers) != 1 or not matches:
            continue
        seen += 1
        fix = matches[0].fix
        driver = drivers.pop()
        if fix.startswith("Update the NVIDIA driver to >= "):
            continue  # the driver comes first, with its floor
        assert _recommended_runs(MATRIX, fix, driver, stack.os), entry.name
    assert seen >= 4


@pytest.mark.parametrize(("name", "line", "driver"), [
    ("188", "- Nvidia driver 419.67", "419.67"),
    ("099", "Driver: 595.71.05 / CUDA 13.2", "595.71.05"),
    ("203", "| NVIDIA-SMI 535.54.03              Driver Version: 535.54.03    CUDA Version: 12.3     |", "535.54.03"),
])
def test_the_driver_as_users_write_it(name: str, line: str, driver: str) -> None:
    entry = next(e for e in ENTRIES if e.name.startswith(name))
    assert line in entry.text  # quoted from that real text
    scanner = EvidenceScanner()
    scanner.feed(normalise_line(line))
    assert [e.value for e in scanner.items if e.fact == "driver.version"] == [driver]
