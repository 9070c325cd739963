"""`ortdoctor check` without click: the click-free parser agrees with click, the console entry never imports
click on a plain check, and both ways to run a check write the same bytes and exit with the same code.

The click command (ortdoctor/cli/check.py) is the one definition of check's options; the fast parser's
table (ortdoctor/cli/check_argv.py: OPTIONS) is derived from it here, so the two cannot drift apart.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ortdoctor.cli import check_argv
from ortdoctor.cli.check import command
from ortdoctor.cli.check_argv import OPTIONS, Option, parse
from ortdoctor.cli.echo import echo
from tests.support import testenvs

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------
# (a) the table is the click command's options
# ------------------------------------------------------------------------------------------------
def _kind(p: click.Option) -> tuple[str, tuple[str, ...]]:
    t = p.type
    if p.is_flag:
        assert isinstance(t, click.types.BoolParamType), p.name
        assert command.make_context("check", [p.opts[0]]).params[p.name] is True, p.name  # a plain on-flag
        return check_argv.FLAG, ()
    if type(t) is click.Choice:
        assert t.case_sensitive, p.name
        return check_argv.CHOICE, tuple(t.choices)
    if type(t) is click.IntRange:
        assert (t.min, t.max, t.min_open, t.max_open, t.clamp) == (0, None, False, False, False), p.name
        return check_argv.COUNT, ()
    if type(t) is click.FloatRange:
        assert (t.min, t.max, t.min_open, t.max_open, t.clamp) == (0, None, True, False, False), p.name
        return check_argv.POSITIVE, ()
    if type(t) is click.Path:
        shape = (t.file_okay, t.dir_okay, t.readable, t.writable, t.executable, t.resolve_path, t.allow_dash,
                 t.type)
        assert shape == (True, False, True, False, False, False, False, None), (p.name, shape)
        return (check_argv.EXISTING_FILE if t.exists else check_argv.FILE), ()
    assert t is click.STRING, f"{p.name}: teach ortdoctor/cli/check_argv.py the type {t!r}"
    return check_argv.TEXT, ()


def _derived_table() -> tuple[Option, ...]:
    defaults = command.make_context("check", []).params
    out = []
    for p in command.params:
        assert isinstance(p, click.Option), p
        # what the table cannot express: a --x/--no-x flag, several values, an environment variable, a
        # callback, a prompt, a count, an eager or hidden-value option
        assert p.secondary_opts == [], p.name
        assert (p.nargs, p.required, p.count, p.prompt) == (1, False, False, None), p.name
        assert (p.envvar, p.callback, p.expose_value, p.is_eager) == (None, None, True, False), p.name
        assert all(re.fullmatch(r"--[a-z][a-z-]*|-[a-z]", o) for o in p.opts), p.opts
        assert p.name is not None
        kind, choices = _kind(p)
        out.append(Option(tuple(p.opts), p.name, kind, defaults[p.name], choices, p.multiple))
    return tuple(out)


def test_the_table_is_the_click_commands_options() -> None:
    derived = _derived_table()
    source = "\n".join(f"    {o!r}," for o in derived)
    assert derived == OPTIONS, ("ortdoctor/cli/check_argv.py: OPTIONS differs from the click command "
                                f"(ortdoctor/cli/check.py); it should read:\n{source}")
    for o in OPTIONS:  # the same types too (click gives 60.0, not 60)
        assert type(o.default) is type(dict(command.make_context("check", []).params)[o.name])


# ------------------------------------------------------------------------------------------------
# (b) where the fast parser answers, it answers as click does
# ------------------------------------------------------------------------------------------------
def _click_params(argv: Sequence[str]) -> dict[str, Any] | None:
    try:
        return dict(command.make_context("check", list(argv)).params)
    except (click.ClickException, click.exceptions.Exit):
        return None


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("argv")
    (base / "model.onnx").write_bytes(b"\x08\x07")
    (base / "matrix.yaml").write_text("schema: 1\n")
    unreadable = base / "unreadable.onnx"
    unreadable.write_bytes(b"")
    unreadable.chmod(0)
    return {"file": str(base / "model.onnx"), "matrix": str(base / "matrix.yaml"), "dir": str(base),
            "missing": str(base / "missing.onnx"), "unreadable": str(unreadable)}


def _corpus(p: dict[str, str]) -> list[list[str]]:
    return [
        [], ["--no-smoke"], ["--no-smoke", "--json"], ["--json", "--no-smoke"], ["-q"], ["-v"], ["--quiet", "-v"],
        ["--format", "json"], ["--format=markdown"], ["--format", "text", "--json"], ["--format", "JSON"],
        ["--format"], ["--format="], ["--strict", "--debug", "--verbose"], ["--device-id", "1"],
        ["--device-id=0"], ["--device-id", "007"], ["--device-id", "-1"], ["--device-id", "x"],
        ["--device-id", "1_0"], ["--device-id", " 1"], ["--device-id", "x", "--device-id", "2"],
        ["--device-id", "2", "--device-id", "3"], ["--timeout", "2.5"], ["--timeout=1"], ["--timeout", ".5"],
        ["--timeout", "1."], ["--timeout", "0"], ["--timeout", "0.0"], ["--timeout", "nan"], ["--timeout", "inf"],
        ["--timeout", "1e3"], ["--timeout", "-2"], ["--provider", "tensorrt"], ["--provider", "TensorRT"],
        ["--provider-option", "a=b"], ["--provider-option", "a=b", "--provider-option=c = d"],
        ["--provider-option", "novalue"], ["--provider-option", "=v"], ["--iobinding", "--cuda-graph", "--placement"],
        ["--all-devices"], ["--allow-unsafe-dirs"], ["--directory", ""], ["--directory="], ["--directory", "/x"],
        ["--directory", "-x"], ["--directory=-x"], ["--directory", "--json"], ["--matrix", p["matrix"]],
        ["--matrix", p["missing"]], ["--matrix", p["dir"]], ["--matrix", ""], ["--matrix", p["unreadable"]],
        ["--python", "/usr/bin/python3"], ["--python", p["dir"]], ["--python=nope"],
        ["--model", p["file"]], ["--model", p["missing"]], ["--model", p["dir"]], ["--model", ""],
        ["--model", p["unreadable"]], ["--model", p["file"], "--input-shape", "x=1x3", "--input", "x=a.npy"],
        ["--input-shape", "x=1"], ["--input", "x=a.npy", "--input", "y=b.npy"],
        ["--model", p["file"], "--compare-limit", "8"], ["--compare-limit", "0.5"], ["--compare-limit", "0"],
        ["--compare-limit", "-1"], ["--compare-limit", "x"],
        ["-h"], ["--help"], ["--json", "--help"], ["-qv"], ["-q=1"], ["--json=1"], ["--json="], ["--"], ["--", "--json"],
        ["extra"], ["--unknown"], ["--no-smok"], ["-"], ["--no-smoke", "-x"], ["--debug", "--debug"],
    ]


def test_the_fast_parser_agrees_with_click_on_a_corpus(paths: dict[str, str]) -> None:
    for argv in _corpus(paths):
        fast, slow = parse(argv), _click_params(argv)
        if fast is not None:
            assert fast == slow, argv
            assert [type(v) for v in fast.values()] == [type(slow[k]) for k in fast], argv
        if slow is None:
            assert fast is None, argv


def test_the_fast_parser_takes_the_usual_command_lines(paths: dict[str, str]) -> None:
    usual = [[], ["--no-smoke"], ["--no-smoke", "--json"], ["-q"], ["--format", "markdown"], ["--format=json"],
             ["--strict", "-v"], ["--device-id", "1", "--timeout", "30"], ["--provider", "tensorrt"],
             ["--provider-option", "trt_fp16_enable=1", "--provider-option", "a=b"], ["--directory", ""],
             ["--matrix", paths["matrix"]], ["--python", "/usr/bin/python3"],
             ["--model", paths["file"], "--input-shape", "x=1x3x224x224", "--input", "x=a.npy"],
             ["--model", paths["file"], "--compare-limit", "8"]]
    for argv in usual:
        assert parse(argv) is not None, argv
    for doubtful in (["-h"], ["--help"], ["-qv"], ["--provider-option", "novalue"], ["--model", paths["missing"]],
                     ["--timeout", "1e3"], ["--directory", "-x"], ["extra"]):
        assert parse(doubtful) is None, doubtful


_TOKENS = [o for option in OPTIONS for o in option.opts] + ["-h", "--help", "-qv", "--", "--nope", "extra"]
_VALUES = ["", "-", "0", "1", "-1", "01", "1_0", " 1", "٣", "1.5", ".5", "1.", ".", "0.0", "nan", "1e3", "json",
           "JSON", "text", "markdown", "cuda", "tensorrt", "k=v", " k = v ", "novalue", "=v", "x=1x3", "--json",
           "-q", "/nonexistent/file", "/", "/usr/bin/python3", "a=b=c"]


@st.composite
def _argvs(draw: st.DrawFn) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        token = draw(st.sampled_from(_TOKENS))
        form = draw(st.integers(0, 3))
        if form == 0:
            out.append(token)
        elif form == 1:
            out += [token, draw(st.sampled_from(_VALUES))]
        else:
            out.append(f"{token}={draw(st.sampled_from(_VALUES))}")
    return out


@settings(max_examples=400, deadline=None, database=None)
@given(_argvs())
def test_the_fast_parser_agrees_with_click_on_generated_command_lines(argv: list[str]) -> None:
    fast = parse(argv)
    slow = _click_params(argv)
    if fast is not None:
        assert fast == slow
    if slow is None:
        assert fast is None


# ------------------------------------------------------------------------------------------------
# echo writes what click.echo writes
# ------------------------------------------------------------------------------------------------
def _stream(encoding: str, errors: str = "strict") -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors=errors, write_through=False)


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", "ascii", "cp1252"])
@pytest.mark.parametrize("message", ["plain", "ortdoctor: inspecting…", "", "\x1b[31mred\x1b[0m ✘", "a\nb\n"])
@pytest.mark.parametrize("nl", [True, False])
def test_echo_writes_what_click_echo_writes(monkeypatch: pytest.MonkeyPatch, encoding: str, message: str,
                                            nl: bool) -> None:
    written = []
    for writer in (echo, click.echo):
        out, err = _stream(encoding, "replace"), _stream(encoding, "replace")
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        writer(message, nl=nl)
        writer(message, err=True, nl=nl)
        written.append((out.buffer.getvalue(), err.buffer.getvalue()))  # type: ignore[attr-defined]
    assert written[0] == written[1]


# ------------------------------------------------------------------------------------------------
# (c) the console entry: no click on a plain check, the same output either way
# ------------------------------------------------------------------------------------------------
def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "ORTDOCTOR_NO_FAST_EXIT", "_ORTDOCTOR_COMPLETE"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _console_script() -> str:
    """The `ortdoctor` script pip writes for [project.scripts], as a -c program."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    target = re.search(r'^\[project\.scripts\]\s*\nortdoctor = "([\w.]+):(\w+)"', text, re.M)
    assert target, "pyproject.toml: [project.scripts] ortdoctor"
    module, func = target.groups()
    return f"import sys\nfrom {module} import {func}\nsys.argv[0] = 'ortdoctor'\nsys.exit({func}())\n"


ENTRIES = {
    "python -m ortdoctor": [sys.executable, "-m", "ortdoctor"],
    "console script": [sys.executable, "-c", _console_script()],
}
CLICK = [sys.executable, "-c", "import sys\nfrom ortdoctor.cli.main import main\nmain(sys.argv[1:])\n"]


def _imported(stderr: str) -> set[str]:
    return {m.group(1).strip().split(".")[0] for m in re.finditer(r"^import time:[^|]*\|[^|]*\|(.*)$", stderr, re.M)}


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_plain_check_never_imports_click(entry: str) -> None:
    _assert_no_click(entry, _env())


@pytest.mark.realwheels
def test_a_plain_check_never_imports_click_with_onnxruntime_gpu() -> None:
    # the benchmark's environment: onnxruntime-gpu and the CUDA 13 wheels (the probes read more there)
    site = os.pathsep.join(str(testenvs.ensure(e)) for e in ("ort-gpu", "nvidia-cu13"))
    _assert_no_click("python -m ortdoctor", _env(PYTHONPATH=os.pathsep.join([str(ROOT), site])))


def _assert_no_click(entry: str, env: dict[str, str]) -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", *ENTRIES[entry][1:], "check", "--no-smoke", "--json"],
                          env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr[-3000:]  # no driver here (nor, by default, onnxruntime): fail
    assert json.loads(proc.stdout)["verdict"] == "fail"
    imported = _imported(proc.stderr)
    assert {"ortdoctor", "json"} <= imported  # the importtime lines were read
    assert imported.isdisjoint(NOT_ON_THE_CHECK_PATH), sorted(imported & NOT_ON_THE_CHECK_PATH)


# What a plain check must not import, each a measured share of its time on a 2-core machine (see
# CHANGELOG.md and docs/performance.md): click and what it brings; dataclasses with inspect, ast, dis and
# tokenize (@record does without); typing and packaging (TYPE_CHECKING-only names, plain versions read
# without packaging, as the wheels here have); what probes/stdlib_answers.py answers instead.
NOT_ON_THE_CHECK_PATH = frozenset({
    "click", "traceback", "gettext", "datetime", "uuid", "dataclasses", "inspect", "ast", "dis", "tokenize",
    "typing", "packaging", "platform", "sysconfig", "subprocess", "shutil", "glob", "csv", "threading",
    "textwrap", "ntpath",
})


# A text check with the ORT GPU wheel and the CUDA 13 wheels, spying on re's compiler: which patterns
# did ortdoctor's own code compile, and was json imported? (atexit runs: ORTDOCTOR_NO_FAST_EXIT)
_COMPILE_SPY = """
import atexit, os, re, re._compiler, sys
package = os.path.join(sys.argv.pop(1), "ortdoctor") + os.sep
compiled = []
real = re._compiler.compile
def spy(pattern, flags=0):
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.startswith(package):
            compiled.append(str(pattern))
            break
        frame = frame.f_back
    return real(pattern, flags)
re._compiler.compile = spy
atexit.register(lambda: print("SPY", compiled, "json" in sys.modules, file=sys.stderr))
sys.argv[0] = "ortdoctor"
from ortdoctor.cli.entry import main
main()
"""


@pytest.mark.realwheels
def test_a_plain_text_check_compiles_no_pattern_and_imports_no_json() -> None:
    """Compiling patterns was a tenth of a check (core/patterns.py): the probes read names by hand."""
    site = os.pathsep.join(str(testenvs.ensure(e)) for e in ("ort-gpu", "nvidia-cu13"))
    env = _env(PYTHONPATH=os.pathsep.join([str(ROOT), site]), ORTDOCTOR_NO_FAST_EXIT="1")
    proc = subprocess.run([sys.executable, "-c", _COMPILE_SPY, str(ROOT), "check", "--no-smoke"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "onnxruntime-gpu 1.31.1" in proc.stdout
    spy = next(line for line in proc.stderr.splitlines() if line.startswith("SPY "))
    assert spy == "SPY [] False"


@pytest.mark.parametrize("entry", ENTRIES)
def test_other_command_lines_still_go_through_click(entry: str) -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", *ENTRIES[entry][1:], "check", "--no-smoke", "-h"],
                          env=_env(), capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: ortdoctor check [OPTIONS]")
    assert "click" in _imported(proc.stderr)


def test_shell_completion_still_goes_to_click() -> None:
    # click answers completion requests before parsing; bash passes the words in the environment
    env = {"_ORTDOCTOR_COMPLETE": "bash_complete", "COMP_WORDS": "ortdoctor check --fo", "COMP_CWORD": "2"}
    got = _run(ENTRIES["python -m ortdoctor"], ("check",), **env)
    assert got == _run(CLICK, ("check",), **env)
    assert "plain,--format" in got[1].decode().splitlines()


def _run(cmd: list[str], args: Sequence[str], **env: str) -> tuple[int, bytes, bytes]:
    proc = subprocess.run([*cmd, *args], env=_env(**env), capture_output=True, timeout=120, cwd=ROOT)
    return proc.returncode, proc.stdout, proc.stderr


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        # timings and the time the report was taken differ between any two runs
        return {k: _without_timings(v) for k, v in value.items() if "timing" not in k and k != "taken_at"}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


@pytest.mark.parametrize("args", [
    ("--no-smoke",), ("--no-smoke", "-q"), ("--no-smoke", "--format", "markdown"), ("--no-smoke", "--strict"),
    ("--no-smoke", "--input-shape", "x=1"),  # a usage error of the command itself
    ("--json", "--format", "text"),
    ("--no-smoke", "--provider-option", "novalue"),  # click's usage error, through click either way
    ("--no-smoke", "--device-id", "-1"), ("--no-smoke", "--model", "/nonexistent.onnx"), ("--nope",), ("-h",),
])
def test_the_entry_writes_what_click_writes(args: tuple[str, ...]) -> None:
    got = _run(ENTRIES["python -m ortdoctor"], ("check", *args))
    want = _run(CLICK, ("check", *args))
    assert got == want
    assert "Traceback" not in got[2].decode()


def test_the_entry_writes_the_same_json() -> None:
    code, out, err = _run(ENTRIES["python -m ortdoctor"], ("check", "--no-smoke", "--json"))
    want = _run(CLICK, ("check", "--no-smoke", "--json"))
    assert (code, err) == (want[0], want[2])
    assert _without_timings(json.loads(out)) == _without_timings(json.loads(want[1]))


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_the_entry_writes_what_click_writes_on_a_console_that_is_not_utf8(encoding: str) -> None:
    # click re-wraps an ASCII stdout as UTF-8; make_streams_safe() gives latin-1 ASCII marks
    env = {"PYTHONIOENCODING": encoding, "PYTHONUTF8": "0"}
    got = _run(ENTRIES["python -m ortdoctor"], ("check", "--no-smoke"), **env)
    assert got == _run(CLICK, ("check", "--no-smoke"), **env)


def test_a_closed_pipe_ends_as_it_did(tmp_path: Path) -> None:
    # stdout a pipe whose reader is gone: click exits 1 quietly (its own EPIPE handling)
    results = []
    for cmd in (ENTRIES["python -m ortdoctor"], CLICK):
        r, w = os.pipe()
        os.close(r)
        proc = subprocess.run([*cmd, "check", "--no-smoke", "--json"], env=_env(), stdout=w, stderr=subprocess.PIPE,
                              timeout=120, cwd=ROOT)
        os.close(w)
        results.append((proc.returncode, proc.stderr))
    assert results[0] == results[1]
    assert results[0][0] == 1


def test_a_full_disk_is_an_internal_error_as_it_was() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    results = []
    for cmd in (ENTRIES["python -m ortdoctor"], CLICK):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run([*cmd, "check", "--no-smoke", "--json"], env=_env(), stdout=full,
                                  stderr=subprocess.PIPE, timeout=120, cwd=ROOT)
        results.append((proc.returncode, proc.stderr))
    assert results[0] == results[1]
    assert results[0][0] == 3
    assert b"internal error: OSError" in results[0][1]


# ------------------------------------------------------------------------------------------------
# the fast exit: what the interpreter's teardown would do still happens
# ------------------------------------------------------------------------------------------------
_EXIT = """import atexit, sys, threading, time
from ortdoctor.cli import entry
class Teardown:
    def __del__(self):
        sys.stderr.write("torn down\\n")
kept = Teardown()
atexit.register(lambda: sys.stdout.write("atexit ran\\n"))
if sys.argv[2] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.3), sys.stdout.write("thread finished\\n"))).start()
code = eval(sys.argv[1])
if sys.argv[2] == "plain":
    sys.exit(code)
entry._exit(code)
"""


@pytest.mark.parametrize("code", ["None", "0", "1", "2", "5", "'a message'", "True", "300", "-1", "3", "130"])
def test_the_fast_exit_ends_as_sys_exit_would(code: str) -> None:
    fast = subprocess.run([sys.executable, "-c", _EXIT, code, "fast"], env=_env(), capture_output=True, text=True,
                          timeout=60)
    plain = subprocess.run([sys.executable, "-c", _EXIT, code, "plain"], env=_env(), capture_output=True, text=True,
                           timeout=60)
    assert fast.returncode == plain.returncode
    assert fast.stdout == plain.stdout == "atexit ran\n"
    assert fast.stderr.replace("torn down\n", "") == plain.stderr.replace("torn down\n", "")
    if code in ("None", "0", "1", "2", "5"):
        assert "torn down" not in fast.stderr  # the teardown was skipped
        assert "torn down" in plain.stderr


def test_the_fast_exit_waits_for_a_thread_by_leaving_it_to_the_interpreter() -> None:
    proc = subprocess.run([sys.executable, "-c", _EXIT, "0", "thread"], env=_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    assert proc.stdout == "thread finished\natexit ran\n"


def test_the_fast_exit_can_be_switched_off() -> None:
    proc = subprocess.run([sys.executable, "-c", _EXIT, "0", "fast"], env=_env(ORTDOCTOR_NO_FAST_EXIT="1"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "torn down" in proc.stderr



@pytest.mark.parametrize("raised", [KeyboardInterrupt, EOFError, BrokenPipeError])
def test_an_interrupt_or_a_broken_pipe_ends_the_fast_path_as_click_ends_a_command(
        monkeypatch: pytest.MonkeyPatch, raised: type[BaseException]) -> None:
    from ortdoctor.cli.entry import _as_click_runs_it

    def body() -> int:
        raise raised(32, "Broken pipe") if raised is BrokenPipeError else raised()

    @click.command()
    def cmd() -> None:
        body()

    def ending(run: Any) -> tuple[Any, str, str, bool]:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        try:
            code = run()
        except SystemExit as exc:
            code = exc.code
        # after a broken pipe both streams are wrapped so that the final flush ignores it
        wrapped = getattr(sys.stdout, "wrapped", None) is out and getattr(sys.stderr, "wrapped", None) is err
        return code, out.getvalue(), err.getvalue(), wrapped

    want = ending(lambda: cmd.main([], standalone_mode=True))
    assert ending(lambda: _as_click_runs_it(body)) == want
    assert want[0] == 1
    assert want[2] == ("" if raised is BrokenPipeError else "\nAborted!\n")
    assert want[3] is (raised is BrokenPipeError)
