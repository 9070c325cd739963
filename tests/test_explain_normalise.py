"""What copy-paste does to an error text is undone before any rule reads it (ortdoctor.diagnose.text_normalise).

Each kind of damage is tested on its own, and then end to end: the damaged text gets the finding the
clean text gets. The clean lines are ORT's and CUDA's own messages as the corpus stores them.
"""

from __future__ import annotations

import io

import pytest

from ortdoctor.diagnose.classify import finding_ids
from ortdoctor.diagnose.text_normalise import decode_line, normalise_line, wrap_joiner
from ortdoctor.diagnose.textlines import iter_stream

CLEAN = ("Specified provider 'CUDAExecutionProvider' is not in available provider names."
         "Available providers: 'AzureExecutionProvider, CPUExecutionProvider'")
SONAME = ("Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared "
          "object file: No such file or directory")


def test_typographic_quotes_and_dashes() -> None:
    assert normalise_line(CLEAN.replace("'", "\u2018", 1).replace("'", "\u2019", 1)) == CLEAN
    assert normalise_line("onnxruntime\u2013gpu \u2014 1.20") == "onnxruntime-gpu - 1.20"
    assert normalise_line("GPU\u00a0requirements\u200b page") == "GPU requirements page"


def test_ansi_colour_codes() -> None:
    assert normalise_line(f"\x1b[1;31m{SONAME}\x1b[m") == SONAME


@pytest.mark.parametrize("damaged", [
    "```", "```text", "~~~", "> " + SONAME, "> > " + SONAME, "$ " + SONAME, "`" + SONAME + "`",
    "(venv) $ " + SONAME,
])
def test_markdown_debris(damaged: str) -> None:
    assert normalise_line(damaged) in ("", SONAME)


def test_a_python_prompt_is_not_a_quote_marker() -> None:
    assert normalise_line(">>> import onnxruntime") == ">>> import onnxruntime"


def test_mojibake_utf8_read_as_cp1252_and_latin1() -> None:
    original = "CUDA_PATH is set but CUDA wasn\u2019t able to be loaded \u2013 caf\u00e9"
    for codec in ("cp1252", "latin-1"):
        try:
            damaged = original.encode("utf-8").decode(codec)
        except UnicodeDecodeError:
            continue
        assert normalise_line(damaged) == "CUDA_PATH is set but CUDA wasn't able to be loaded - caf\u00e9"


def test_windows_code_pages() -> None:
    gbk = "\u627e\u4e0d\u5230\u6307\u5b9a\u7684\u6a21\u5757\u3002"  # "The specified module could not be found."
    assert decode_line(gbk.encode("gbk")) == gbk
    assert decode_line("caf\u00e9 \u2013".encode("cp1252")) == "caf\u00e9 \u2013"
    assert decode_line(SONAME.encode("utf-8")) == SONAME
    utf16 = "LoadLibrary failed with error 126".encode("utf-16")
    assert decode_line(utf16) == "LoadLibrary failed with error 126"


def test_a_stream_in_a_code_page_keeps_its_other_lines() -> None:
    data = "\u627e\u4e0d\u5230\u6307\u5b9a\u7684\u6a21\u5757\u3002\n".encode("gbk") + SONAME.encode() + b"\n"
    assert list(iter_stream(io.BytesIO(data)))[1] == SONAME


def test_utf16_shown_as_8bit_text() -> None:
    assert normalise_line(" ".join("LoadLibrary failed with error 126")) == "LoadLibrary failed with error 126"


def test_wrapped_lines_join_without_a_space_at_a_terminal_width() -> None:
    assert wrap_joiner(80) == ""
    assert wrap_joiner(57) == " "


def test_a_message_wrapped_mid_word_at_80_columns_is_read_whole() -> None:
    # how a Windows console at 80 columns shows ORT's warning (onnxruntime#22930 pastes it so)
    text = ("[W:onnxruntime:Default, onnxruntime_pybind_state.cc:\n"
            "965 onnxruntime::python::CreateExecutionProviderInstance] Failed to create CUDAE\n"
            "xecutionProvider. Require cuDNN 9.* and CUDA 12.*, and the latest MSVC runtime.\n")
    assert len(text.splitlines()[1]) == 80
    assert "cuda-ep-fell-back-to-cpu" in finding_ids(text)


@pytest.mark.parametrize("damage", [
    lambda t: t.replace("'", "\u2019"),
    lambda t: "```\n" + t + "\n```",
    lambda t: "\n".join("> " + line for line in t.splitlines()),
    lambda t: "\x1b[33m" + t + "\x1b[0m",
    lambda t: t.replace("'", "\u2019").encode("utf-8").decode("cp1252"),
])
def test_damaged_text_gets_the_finding_the_clean_text_gets(damage: object) -> None:
    clean = finding_ids(CLEAN)
    assert clean == ["ort-cpu-only"]
    assert finding_ids(damage(CLEAN)) == clean  # type: ignore[operator]


def test_markdown_bold_of_an_issue_form() -> None:
    # onnx/onnx-tensorrt#982
    assert normalise_line("**TensorRT Version**: 10.2.0.19") == "TensorRT Version: 10.2.0.19"


def test_a_stream_keeps_blank_lines_so_line_numbers_match_the_text() -> None:
    assert list(iter_stream(io.BytesIO(b"a\n\nb\r\nc"))) == ["a", "", "b", "c"]
