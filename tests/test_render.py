"""The human report: verdict first, sections, marks, the fix under each problem, colour only when asked."""

from __future__ import annotations

import io

import pytest

from ortdoctor.cli.check_run import _use_color
from ortdoctor.core.facts import OrtInfo, SystemInfo, TorchInfo
from ortdoctor.report.text import render
from tests.test_diagnose import SITE, driver_none, full_plan, healthy_env, lib
from tests.test_report import make_report


def test_verdict_line_comes_first_and_fixes_sit_under_problems() -> None:
    text = render(make_report(healthy_env(driver=driver_none()), full_plan()))
    lines = text.splitlines()
    assert lines[0].startswith("ortdoctor ")
    assert "✘ FAIL" in lines[0]
    assert "driver-missing" in lines[0]
    for section in ("Python", "onnxruntime", "PyTorch", "Driver/GPU", "Libraries", "Smoke", "Problems"):
        assert any(line.startswith(section) for line in lines), section
    i = next(n for n, line in enumerate(lines) if "[driver-missing]" in line)
    assert any("fix: " in line for line in lines[i + 1: i + 6])
    assert "\033[" not in text


def test_libraries_show_marks_and_preload_need() -> None:
    plan = full_plan(curand=lib("curand", "libcurand.so.10", None))
    text = render(make_report(healthy_env(system=SystemInfo()), plan))
    assert "✘ curand" in text
    assert "(needs preload)" in text
    assert "…/nvidia/cu13/lib/libcudart.so.13" in text


def test_ok_report() -> None:
    text = render(make_report(healthy_env(), full_plan()))
    assert "✔ OK" in text.splitlines()[0]
    assert "No problems found." in text
    assert "✔ cudart" in text


def test_not_installed_says_what_to_install() -> None:
    rep = make_report(healthy_env(ort=OrtInfo(installed=False)), None, recommendation='pip install "onnxruntime-gpu[cuda,cudnn]"')
    text = render(rep)
    assert "not installed" in text
    assert 'for this machine: pip install "onnxruntime-gpu[cuda,cudnn]"' in text


def test_torch_row() -> None:
    torch = TorchInfo("2.11.0+cu128", "12.8", "9.10.2", f"{SITE}/torch/lib", SITE)
    text = render(make_report(healthy_env(torch=torch), full_plan()))
    assert "⚠ 2.11.0+cu128 (CUDA 12.8, cuDNN 9.10.2)" in text


def test_color_and_debug() -> None:
    rep = make_report(healthy_env(driver=driver_none()), full_plan())
    assert "\033[31m" in render(rep, color=True)
    debug = render(rep, debug=True)
    assert "candidate [nvidia-wheel]" in debug
    assert "Timings (ms)" in debug
    assert "site: " in debug


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert _use_color(_Stream(True)) is True
    assert _use_color(_Stream(False)) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert _use_color(_Stream(True)) is False


def test_timings_have_at_most_one_decimal() -> None:
    from ortdoctor.report.text import format_timings

    assert format_timings({"session": 241.113, "first_run": 55.62, "run": 0.0863, "import": 2.0}) == (
        "session 241 ms, first run 55.6 ms, steady run 0.09 ms, import 2 ms")


def test_failed_smoke_without_a_classified_cause_points_at_the_finding() -> None:
    from ortdoctor.prove.smoke.runner import SmokeResult

    error = ("RuntimeError: /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_execution_provider_info.cc:63 static "
             "onnxruntime::CUDAExecutionProviderInfo ... Invalid device ID: 1")
    smoke = SmokeResult(ran=True, ok=False, device_id=1, error=error, finding_id="smoke-failed")
    from ortdoctor.report.model import Report, verdict_of
    from tests.test_diagnose import run

    found = run(healthy_env(), full_plan(), smoke=smoke)
    text = render(Report(verdict=verdict_of(found), findings=tuple(found), env=healthy_env(), plan=full_plan(),
                         matrix_path="<test>", smoke=smoke))
    block = text.split("Smoke", 1)[1].split("\n\n", 1)[0]
    assert "ORT's error is under [smoke-failed] below" in block
    assert "RuntimeError" not in block
    assert "Invalid device ID: 1" in text  # in the finding


def test_a_failed_device_shows_its_classified_cause() -> None:
    from ortdoctor.diagnose.classify import classify
    from ortdoctor.prove.smoke.devices import DeviceSmoke
    from ortdoctor.prove.smoke.runner import SmokeResult

    log = "CUDA failure 100: no CUDA-capable device is detected ; GPU=-1 ; expr=cudaGetDeviceCount(&num_devices);"
    smoke = SmokeResult(ran=True, ok=False, device_id=1, error="RuntimeError: " + "x" * 200 + log,
                        finding_id="smoke-failed", causes=tuple(classify(log)))
    rep = make_report(healthy_env(), full_plan(), all_devices=True, device_smokes=(DeviceSmoke(1, None, smoke),))
    line = next(line for line in render(rep).splitlines() if "cuda:1" in line)
    assert line.endswith("failed: the driver loads but no GPU is visible [no-gpu-visible]")


def test_text_from_child_processes_and_paths_is_shown_not_obeyed() -> None:
    # an error the smoke child brought back and a file name, each carrying a window-title sequence, a
    # clipboard write, a carriage return and a bidi override; --debug prints the child's error in full
    from ortdoctor.prove.smoke.runner import SmokeResult
    from ortdoctor.report.model import Report, verdict_of
    from tests.test_diagnose import python_info, run

    hostile = "\x1b]0;pwned\x07\x1b]52;c;ZWNobyBoaQ==\x1b\\\rrm -rf ~\u202e"
    error = f"RuntimeError: cannot load /opt/{hostile}/libcudnn.so.9\nInvalid device ID: 1 {hostile}"
    smoke = SmokeResult(ran=True, ok=False, device_id=1, error=error, finding_id="smoke-failed")
    env = healthy_env(python=python_info(executable=f"/srv/{hostile}/bin/python"))
    found = run(env, full_plan(), smoke=smoke)
    rep = Report(verdict=verdict_of(found), findings=tuple(found), env=env, plan=full_plan(),
                 matrix_path=f"/tmp/{hostile}.yaml", smoke=smoke)
    for text in (render(rep), render(rep, debug=True)):
        assert "Invalid device ID: 1" in text
        assert "/srv/\\x1b]0;pwned\\x07" in text
        bad = sorted({c for c in text if (ord(c) < 0x20 and c not in "\n") or 0x7f <= ord(c) < 0xa0
                      or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"})
        assert bad == []
    # with colour, the only escape sequences are the report's own colours
    import re

    coloured = render(rep, color=True, debug=True)
    assert set(re.findall(r"\x1b[^m]*m", coloured)) <= {"\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m",
                                                         "\x1b[33m"}
    assert "\x07" not in coloured
    assert "\x1b]" not in coloured


def test_preload_and_short_reports_show_paths_not_obey_them() -> None:
    from ortdoctor.preloading.preloader import FailedLib, LoadedLib, PreloadResult
    from ortdoctor.report import short
    from ortdoctor.report.preload import render_text as render_preload

    hostile = "\x1b]0;pwned\x07\u202e\r"
    result = PreloadResult(directory=f"/srv/{hostile}", dry_run=False, cuda_major=13, cudnn_major=9,
                           loaded=[LoadedLib("cudart", "libcudart.so.13", f"/srv/{hostile}/libcudart.so.13",
                                             "directory", "13.0.96", mapped=f"/srv/{hostile}/libcudart.so.13")],
                           failed=[FailedLib("cudnn", "libcudnn.so.9", f"/srv/{hostile}/libcudnn.so.9: invalid ELF header",
                                             searched=(f"/srv/{hostile}",))])
    text = render_preload(result)
    assert "/srv/\\x1b]0;pwned\\x07" in text
    assert not _UNSAFE & set(text)
    from ortdoctor.core.record import replace

    rep = make_report(healthy_env(driver=driver_none()), full_plan())
    rep = replace(rep, findings=tuple(replace(f, fix=f"{f.fix}{hostile}") for f in rep.findings))
    out = short.render(rep)
    assert "\\x1b]0;pwned" in out
    assert not _UNSAFE & set(out)


_UNSAFE = set(map(chr, [*range(0x00, 0x0a), *range(0x0b, 0x20), *range(0x7f, 0xa0)])) | set(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
