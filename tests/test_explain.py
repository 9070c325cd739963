"""`ortdoctor explain`: ids, error texts and logs on stdin, and its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ortdoctor.cli.main import cli
from ortdoctor.core.catalog import CATALOG
from tests.test_classify import CORPUS, load_case


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["explain", *args], input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _first_block(out: str) -> str:
    """The output from the first match on (a "Read as: ..." line about the text's stack may come first)."""
    return out[out.index("\n[") + 1:] if not out.startswith("[") and "\n[" in out else out


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_each_corpus_text_on_stdin_is_explained(path: Path) -> None:
    expect, text = load_case(path)
    code, out, _ = _run("-", "--no-here", stdin=text)
    assert code == 0
    assert _first_block(out).startswith(f"[{expect}]")
    assert "Why:" in out
    assert "Fix:" in out
    assert "Seen:" in out


@pytest.mark.parametrize("path", CORPUS[:5], ids=[p.stem for p in CORPUS[:5]])
def test_json_output(path: Path) -> None:
    expect, text = load_case(path)
    code, out, _ = _run("-", "--no-here", "--json", stdin=text)
    data = json.loads(out)
    assert code == 0
    assert data["input"] == "text"
    assert data["matches"][0]["id"] == expect


def test_text_as_an_argument() -> None:
    code, out, _ = _run("--no-here", "CUDA failure 101: invalid device ordinal")
    assert code == 0
    assert _first_block(out).startswith("[invalid-device-ordinal]")


@pytest.mark.parametrize("fid", sorted(CATALOG))
def test_every_catalog_id_is_documented(fid: str) -> None:
    code, out, _ = _run(fid, "--no-here")
    assert code == 0
    assert out.startswith(f"{fid}: ")
    assert "Fix:" in out


def test_local_id_is_documented() -> None:
    code, out, _ = _run("cuda-ep-fell-back-to-cpu", "--no-here")
    assert code == 0
    assert "Fix:" in out


def test_nothing_recognised_exits_1_and_says_what_to_paste() -> None:
    code, out, err = _run("-", "--no-here", stdin="everything is fine\n")
    assert code == 1
    assert out == ""
    assert "nothing in this text was recognised" in err
    assert "Paste the whole output" in err
    assert "ortdoctor explain -" in err


@pytest.mark.parametrize("stdin", ["", "\n\n  \t\n"])
def test_empty_stdin_is_an_input_error(stdin: str) -> None:
    code, out, err = _run("-", "--no-here", stdin=stdin)
    assert code == 2
    assert out == ""
    assert "stdin was empty" in err


def test_an_unknown_id_says_so_with_the_nearest_ids() -> None:
    code, out, err = _run("driver-mising", "--no-here")
    assert code == 2
    assert out == ""
    assert "'driver-mising' is not a known finding id" in err
    assert "driver-missing" in err
    assert "explain --list" in err


def test_list_gives_every_id_with_its_title() -> None:
    code, out, _ = _run("--list")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == len(CATALOG)
    for fid, entry in CATALOG.items():
        assert any(ln.split()[0] == fid and ln.rstrip().endswith(entry.title) for ln in lines), fid
    code, out, _ = _run("--list", "--json")
    assert code == 0
    assert {row["id"] for row in json.loads(out)} == set(CATALOG)


def test_the_stack_the_text_shows_is_said_and_in_the_json() -> None:
    text = ("Microsoft.ML.OnnxRuntime.OnnxRuntimeException: [ErrorCode:RuntimeException] LoadLibrary failed with "
            'error 126 "" when trying to load "D:\\app\\runtimes\\win-x64\\native\\onnxruntime_providers_cuda.dll"')
    code, out, _ = _run("--no-here", text)
    assert code == 0
    assert out.startswith("Read as: C# (Microsoft.ML.OnnxRuntime), Windows")
    assert "pip install" not in out
    code, out, _ = _run("--no-here", "--json", text)
    data = json.loads(out)
    assert data["stack"]["binding"] == "csharp"
    assert data["stack"]["os"] == "windows"
    assert data["matches"][0]["packages"] == []


def test_a_log_longer_than_any_old_cap_is_read_to_its_end() -> None:
    # 17 MB in 2,100 long lines (the old reader stopped at 16 MB of stdin and 20,000 lines): the cause is last
    filler = ("x" * 8_000 + "\n") * 2_100
    cause = "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file"
    code, out, _ = _run("-", "--no-here", stdin=filler + cause + "\n")
    assert code == 0
    assert "[cuda-lib-missing]" in out
    assert "libcudnn.so.9" in out


def test_no_argument_is_a_usage_error() -> None:
    code, _, err = _run()
    assert code == 2
    assert "finding id" in err


def test_here_says_something_about_this_environment() -> None:
    # Inspection only (no smoke session); whatever the environment, the answer is a sentence, not a crash.
    code, out, _ = _run("CUDA failure 100: no CUDA-capable device is detected")
    assert code == 0
    assert "This environment" in out


def test_a_hostile_log_line_is_shown_not_obeyed() -> None:
    # a pasted log whose matched line carries a clipboard write (OSC 52), a window title (OSC 0, ended by
    # BEL and by ST), a DCS string, a bidi override, a lone ESC, a carriage return and a bell
    line = ("libcudnn.so.9: cannot open shared object file \x1b]52;c;ZWNobyBoaQ==\x07 \x1b]0;title\x1b\\ "
            "\x1bP1$r\x1b\\ \u202eelif\x1b\x1b \x07 no such file\r\n")
    code, out, _ = _run("-", "--no-here", stdin=line)
    assert code == 0
    seen = next(ln for ln in out.splitlines() if ln.startswith("  Seen: "))
    assert "libcudnn.so.9" in seen
    bad = [c for c in out if (ord(c) < 0x20 and c not in "\n") or 0x7f <= ord(c) < 0xa0
           or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]
    assert bad == [], repr(seen)


def test_this_environments_paths_are_shown_not_obeyed() -> None:
    # `explain` says whether this machine has the problem now, with the finding's detail and fix: both
    # name paths, which another user may have chosen
    from ortdoctor.cli.explain import _here_lines
    from ortdoctor.core.record import replace
    from tests.test_diagnose import driver_none, full_plan, healthy_env
    from tests.test_report import make_report

    rep = make_report(healthy_env(driver=driver_none()), full_plan())
    hostile = "\x1b]0;pwned\x07\u202e\r"
    rep = replace(rep, findings=tuple(replace(f, detail=f.detail + hostile, fix=f"{f.fix}{hostile}")
                                      for f in rep.findings))
    lines, data = _here_lines(["driver-missing"], rep, None)
    text = "\n".join(lines)
    assert "YES" in text
    assert "\\x1b]0;pwned\\x07" in text
    assert not any((ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0 or c == "\u202e" for c in text)
    assert data["driver-missing"]["detail"].endswith(hostile)  # the JSON keeps it as it was


def test_json_carries_the_evidence_of_every_finding() -> None:
    # onnxruntime#22809 (corpus 171): the build's own requirement against the cuDNN the text shows
    text = ("I try to infer an onnx model in jetson agx orin with Jetpack 6.1.\n"
            "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:965 CreateExecutionProviderInstance] Failed to "
            "create CUDAExecutionProvider. Require cuDNN 8.* and CUDA 12.*. Please install all dependencies\n"
            "cuda 12.6, cudnn 9.3, jetpack 6.1\n")
    code, out, _ = _run("--no-here", "--json", text)
    data = json.loads(out)
    assert code == 0
    assert data["matches"][0]["id"] == "cudnn-major-mismatch"
    facts = {(e["fact"], e["value"]) for e in data["matches"][0]["evidence_used"]}
    assert {("ort.cudnn_major", "8"), ("cudnn.version", "9.3")} <= facts
    assert all(e["line"] for m in data["matches"] for e in m["evidence_used"])
    assert ("env.jetson", "Jetpack") in {(e["fact"], e["value"]) for e in data["evidence"]}


def test_a_log_file_is_read_with_file(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    # microsoft/onnxruntime#21684 (the error line the issue pasted)
    log.write_bytes(b"FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.11: "
                    b"cannot open shared object file: No such file or directory\n")
    code, out, _ = _run("--no-here", "--file", str(log))
    assert code == 0
    assert "libcublasLt.so.11" in out
    code, out, _ = _run("--no-here", "--json", "-f", str(log))
    assert code == 0
    assert json.loads(out)["matches"]


def test_file_errors_are_usage_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert _run("--no-here", "--file", str(empty))[0] == 2
    assert _run("--no-here", "--file", str(tmp_path / "absent.log"))[0] == 2
    assert _run("--no-here", "--file", str(tmp_path))[0] == 2  # a directory
    assert _run("--no-here", "--file", str(empty), "driver-missing")[0] == 2


def test_a_file_name_given_as_the_text_gets_a_hint(tmp_path: Path) -> None:
    import shlex

    log = tmp_path / "it's $(touch pwned) my app.log"
    log.write_text("nothing to see\n", encoding="utf-8")
    code, _, err = _run("--no-here", str(log))
    assert code == 1
    command = err.split("to read the file: ", 1)[1].splitlines()[0]
    # the printed command, split as a POSIX shell splits it, is the argument list with the path unharmed
    assert shlex.split(command) == ["ortdoctor", "explain", "--file", str(log)]
    assert not (tmp_path / "pwned").exists()
