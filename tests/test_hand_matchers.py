"""Each pattern a check reads by hand (core/patterns.py says why) against the pattern itself.

The pattern stays in its module as the rule's definition; the hand-written reader must give its answer,
match or no match and the same groups, on any text. Hypothesis builds the text from the characters each
pattern cares about, plus a newline (``$`` also matches before a final one), Unicode digits and letters
that case folding equates with ASCII ones ("ſ" with "s", "ı" with "i", the Kelvin sign with "k").
"""

from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ortdoctor.core.patterns import digits_end
from ortdoctor.decide import names, resolve
from ortdoctor.decide.fixes import quote
from ortdoctor.decide.matrix import model
from ortdoctor.diagnose import context
from ortdoctor.formats.distinfo import normalize
from ortdoctor.probes import nvidia_wheels, ort, system, tensorrt
from ortdoctor.report.wrap import _chunks

# Characters that make the patterns' corner cases: separators, digits (ASCII and not), letters case folding
# equates with ASCII ones, whitespace the \s class holds.
_ODD = "\n ٣٤ſıİKx\t\x1c"


def _text(alphabet: str, max_size: int = 24) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet + _ODD, max_size=max_size)


def _pieces(*parts: str, alphabet: str = "", max_size: int = 8) -> st.SearchStrategy[str]:
    """Text stitched from the pattern's own words and random filler, so that near misses are common."""
    word = st.sampled_from(parts) if parts else st.nothing()
    filler = _text(alphabet, max_size=3)
    return st.lists(st.one_of(word, filler), max_size=max_size).map("".join)


def _near(valid: st.SearchStrategy[str], alphabet: str) -> st.SearchStrategy[str]:
    """Text the pattern matches, then up to three random edits (insert, delete, replace): about half of it
    still matches, and what does not fails just beside a match, where hand-written readers go wrong."""
    pool = alphabet + _ODD

    @st.composite
    def edited(draw: st.DrawFn) -> str:
        text = draw(valid)
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(text)))
            kind = draw(st.sampled_from(("insert", "delete", "replace")))
            char = draw(st.sampled_from(pool))
            if kind == "insert":
                text = text[:at] + char + text[at:]
            elif kind == "delete":
                text = text[:at] + text[at + 1:]
            else:
                text = text[:at] + char + text[at + 1:]
        return text

    return edited()


def _num(max_digits: int = 3) -> st.SearchStrategy[str]:
    return st.text(alphabet="0123456789", min_size=1, max_size=max_digits)


def _groups(m: re.Match[str] | None) -> tuple[str | None, ...] | None:
    return m.groups() if m else None


# --- decide/names.py ---------------------------------------------------------------------------------
_SONAMES = st.builds(lambda stem, vers, nl: f"{stem}.so.{'.'.join(vers)}{nl}",
                     _pieces("lib", "cudnn", ".so", ".", "x", alphabet="ab.so"), st.lists(_num(), min_size=1, max_size=3),
                     st.sampled_from(("", "", "\n")))


@given(st.one_of(_near(_SONAMES, "ab.so19"), _pieces("lib", "cudnn", ".so", ".so.", ".", "9", "\n", alphabet="ab.so19")))
@example("libcudnn.so.9.19.0")
@example("a.so.so.1")
@example("x.so.1\n")
@example("x\n.so.1")
@example(".so.1")
def test_split_soname(name: str) -> None:
    m = names._SONAME_RE.match(name)
    assert names.split_soname(name) == ((m.group("stem"), m.group("ver")) if m else None)


@given(_text("0123456789. v"))
@example(" 13.0")
@example("\x1c7")
@example("٣")
def test_major_of(text: str) -> None:
    m = names._MAJOR_RE.match(text)
    assert names.major_of(text) == (int(m.group(1)) if m else None)


def test_major_of_none_and_empty() -> None:
    assert names.major_of(None) is None
    assert names.major_of("") is None


@given(_pieces("nvrtc64_", "cudart", "64", "_", "13", "0", "_0", ".dll", ".DLL", ".so.1", alphabet="ab_6"))
@example("nvrtc64_130_0.dll")
@example("CUDART64_13.DLL")
@example("libcudart.so.13")
def test_stem_major_dll_guard(name: str) -> None:
    """The ".dll" test in front of the DLL pattern only skips names the pattern would refuse."""
    if ".dll" not in name.lower():
        assert names._DLL_RE.match(name) is None


# --- decide/matrix/model.py ----------------------------------------------------------------------------
_LOCAL_SEGMENT = st.one_of(_num(), st.text(alphabet="abz019", min_size=1, max_size=4))
_PLAIN = st.builds(lambda v, rel, local: v + ".".join(rel) + ("+" + ".".join(local) if local else ""),
                   st.sampled_from(("", "v")), st.lists(_num(), min_size=1, max_size=4),
                   st.lists(_LOCAL_SEGMENT, max_size=3))


@given(_near(_PLAIN, "0123456789.+avA-"))
@example("2.11.0+cu130")
@example("v1.2")
@example("1.2+")
@example("1.2+ubuntu.1")
@example("1.2+01")
@example("1.2+٣")
@example("١.2")
def test_plain_version(text: str) -> None:
    m = model._PLAIN_VERSION.fullmatch(text)
    assert model._plain_parts(text) == ((m[1], m[2]) if m else None)


_CUDA = st.one_of(st.builds(lambda d: "cu" + d, _num(4)),
                  st.builds(lambda parts: ".".join(parts), st.lists(st.one_of(_num(), st.just("x")), min_size=1,
                                                                    max_size=4)))


@given(_near(_CUDA, "0123456789.xcu "))
@example("cu124")
@example("12.345")
@example("12.x.3")
@example("12.345.6")
@example("12.5.")
@example("cu١٢٤")
def test_parse_cuda_request(text: str) -> None:
    t = text.strip().lower()
    m = model._CUDA_TAG.fullmatch(t)
    if m:
        expected: tuple[int, int | None] | None = (int(m.group(1)), int(m.group(2)))
    else:
        v = model._CUDA_VERSION.fullmatch(t)
        minor = v.group(2) if v else None
        expected = (int(v.group(1)), int(minor) if minor and minor != "x" else None) if v else None
    assert model.parse_cuda_request(text) == expected


# --- formats/distinfo.py, decide/fixes.py, report/wrap.py -------------------------------------------------
@given(_text("-_.aZ"))
def test_normalize(name: str) -> None:
    assert normalize(name) == re.sub(r"[-_.]+", "-", name).lower()


_SAFE = re.compile(r"[A-Za-z0-9._=/:@+%,-]+")


@given(_text('aZ09._=/:@+%,-"$`\\\' '))
@example("abc\n")
def test_quote(arg: str) -> None:
    # the pattern this replaced ended in "$", which let "abc\n" through unquoted: a word is plain only when
    # every character is a safe one (and it does not start with zsh's "=")
    plain = bool(arg) and _SAFE.fullmatch(arg) is not None and not arg.startswith("=")
    assert (quote(arg) == arg) == plain
    if arg.isprintable():  # shlex reads no $'...' pieces (control characters)
        assert shlex.split(quote(arg)) == [arg]


@given(st.text(alphabet=" ab", max_size=30))
def test_wrap_chunks(text: str) -> None:
    assert _chunks(text) == [c for c in re.split("( +)", text) if c]


# --- probes ----------------------------------------------------------------------------------------------
_TOOLKITS = st.builds(lambda a, b, c, d: f"{a}cuda-{b}.{c}{d}", _pieces("/usr/local/", "cuda-", "x", alphabet="/c"),
                      _num(), _num(), _pieces("/lib64", ".", "cuda-1", alphabet="/1"))


@given(_near(_TOOLKITS, "cuda-13./"))
@example("/usr/local/cuda-13.0/lib64")
@example("cuda-13.cuda-12.4")
@example("cuda-١٣.0")
def test_toolkit_version(path: str) -> None:
    assert system._toolkit_version(path) == _groups(system._TOOLKIT_RE.search(path))


@given(_near(st.builds(lambda a, d, nl: f"{a}-cu{d}{nl}", _pieces("nvidia-", "cudnn", "-cu1", alphabet="cu-"), _num(),
                       st.sampled_from(("", "\n"))), "cu-13"))
@example("nvidia-cudnn-cu13")
@example("x-cu12-cu13")
@example("x-cu12\n")
def test_suffix_cuda(name: str) -> None:
    m = nvidia_wheels._SUFFIX_RE.search(name)
    assert nvidia_wheels._suffix_cuda(name) == (int(m.group(1)) if m else None)


@given(_near(st.builds(lambda a, d, b: f"{a}nvidia/cu{d}/{b}", _pieces("x", "/", "nvidia/cu", alphabet="/n"), _num(),
                       _pieces("lib", "/", alphabet="x")), "nvidia/cu13"))
@example("nvidia/cu13/lib/libcublas.so.13")
@example("xnvidia/cu13/nvidia/cu12/")
def test_layout_cuda(rel: str) -> None:
    m = nvidia_wheels._LAYOUT_RE.search(rel)
    assert nvidia_wheels._layout_cuda(rel) == (int(m.group(1)) if m else None)


@given(st.one_of(_pieces(".so", ".SO", ".so.", ".dll", ".DlL", "1", "13", "a", ".", "\n", alphabet="so.dl1aZ"),
                _near(st.builds(lambda a, b: f"{a}.so.{b}", _pieces("lib", ".so", alphabet="x"),
                                _pieces("1", "a", ".", alphabet="1aZ")), "so.1aZ")))
@example("libcudnn.so.9")
@example("libx.so.1a.b")
@example("libx.so.a")
@example("x.so\n")
@example("x.ſo")
def test_is_shared_library(name: str) -> None:
    assert nvidia_wheels._is_shared_library(name) == (nvidia_wheels._SHARED_RE.search(name) is not None)


@given(_near(st.builds(lambda mid, ext, nl: f"onnxruntime/capi/onnxruntime_pybind11_state{mid}{ext}{nl}",
                       _pieces(".cpython-311", ".so", "/", "\n", alphabet="x."), st.sampled_from((".so", ".pyd")),
                       st.sampled_from(("", "", "\n"))), "x./\n"))
@example("onnxruntime/capi/onnxruntime_pybind11_state.cpython-311-x86_64-linux-gnu.so")
@example("onnxruntime/capi/onnxruntime_pybind11_state.so\n")
@example("onnxruntime/capi/onnxruntime_pybind11_state.so\n\n")
@example("onnxruntime/capi/onnxruntime_pybind11_state\n.pyd")
def test_pybind_path(path: str) -> None:
    assert ort._is_pybind_path(path) == (ort._PYBIND_RE.match(path) is not None)


@given(_near(st.builds(lambda name, q, text: f"{name} = {q}{text}{q}", st.sampled_from(("__version__", "x1", "a")),
                       st.sampled_from(("'", '"')), _pieces("1.31", "'", '"', "\\", " = ", alphabet="a1 ")),
             "a_1 ='\"\\"))
@example("__version__ = '1.31.1'")
@example('cuda_version = "13.0"')
@example("a = 'b' = 'c'")
@example("a = '''")
@example("é = 'x'")
@example("x = 'é'")
def test_simple_assignment(line: str) -> None:
    m = ort._SIMPLE_ASSIGNMENT.fullmatch(line)
    assert ort._simple_assignment(line) == ((m[1], m[2] if m[2] is not None else m[3]) if m else None)


_SEP = st.sampled_from(("-", "_", "."))
_SPACE = st.sampled_from(("", " ", "  ", "\t"))
_CUDNN_REQS = st.builds(
    lambda s1, nv, a, cud, b, d, s2, extra, s3, op, s4, v, major, tail:
    f"{s1}{nv}{a}{cud}{b}cu{d}{s2}{extra}{s3}{op}{s4}{v}{major}{tail}",
    _SPACE, st.sampled_from(("nvidia", "NVIDIA")), _SEP, st.sampled_from(("cudnn", "CuDNN")), _SEP, _num(2), _SPACE,
    st.sampled_from(("", "[x]", "[]", "[a,b]")), _SPACE, st.sampled_from(("~=", "==", ">=", "===")), _SPACE,
    st.sampled_from(("", "v", "V")), _num(2), st.sampled_from(("", ".0", '; extra == "cudnn"')))


@given(_near(_CUDNN_REQS, "nvidacu9=-[] "))
@example('nvidia-cudnn-cu13~=9.0; extra == "cudnn"')
@example("nvidia-cudnn-cu12 [x] === v9")
@example("nvidia-cudnn-cu12==v")
@example("nvidia-cudnn-cu12[x==9")
@example("nvıdia-cudnn-cu12==9")
def test_cudnn_extra_major(req: str) -> None:
    m = ort._CUDNN_EXTRA_RE.match(req)
    assert ort._cudnn_extra_major(req) == (int(m.group(1)) if m else None)


@given(_near(st.builds(lambda comp, major, nl: f"lib{comp}.so.{major}{nl}",
                       st.sampled_from(("nvinfer", "nvinfer_plugin", "nvonnxparser")), _num(2),
                       st.sampled_from(("", "", "\n"))), "lib.so10_"))
@example("libnvinfer_plugin.so.10")
@example("libnvinfer.so.10\n")
@example("libnvinfer.so.١٠")
def test_tensorrt_component(name: str) -> None:
    m = tensorrt._SONAME_RE.match(name)
    assert tensorrt.tensorrt_component(name) == ((m.group(1), int(m.group(2))) if m else None)


# --- decide/resolve.py, diagnose/context.py --------------------------------------------------------------
@given(_near(st.builds(lambda lib, name: lib + name, st.sampled_from(("", "lib", "LIB", "Lib")),
                       st.sampled_from(("cu", "CU", "nvrtc", "nvJitLink", "NVJITLINK", "cudnn", "x"))), "libcunvrtJk"))
@example("libcudart.so.13")
@example("NVJITLINK")
@example("lıbcudart.so")
@example("nvJıtLink")
def test_cuda_like(name: str) -> None:
    assert resolve._cuda_like(name) == (resolve._CUDA_LIKE.match(name) is not None)


@given(_near(st.one_of(
    st.builds(lambda c, d: f"lib{c}.so.{d}", st.sampled_from(("cudart", "cublasLt", "CUBLAS", "nvrtc", "cudnn")), _num(2)),
    st.builds(lambda c, d: f"{c}64_{d}.dll", st.sampled_from(("cudart", "cublasLt", "nvrtc")), _num(3)),
    _pieces("libstdc++", ".so.", "6", alphabet="lib")), "libcu.so6_"))
@example("libcudart.so.13")
@example("cublasLt64_13.dll")
@example("libstdc++.so.6")
def test_cuda_soname_guard(name: str) -> None:
    assert _groups(context.cuda_soname(name)) == _groups(context.CUDA_SONAME.match(name))


# --- core/patterns.py --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "start", "end"), [("", 0, 0), ("12a", 0, 2), ("a12", 1, 3), ("٣", 0, 0),
                                                    ("x9", 2, 2)])
def test_digits_end(text: str, start: int, end: int) -> None:
    assert digits_end(text, start) == end


@settings(max_examples=50)
@given(st.text(max_size=12))
def test_any_text_at_all(text: str) -> None:
    """Arbitrary Unicode, not just the characters above, through every reader at once."""
    test_split_soname.hypothesis.inner_test(text)  # type: ignore[attr-defined]
    test_plain_version.hypothesis.inner_test(text)  # type: ignore[attr-defined]
    test_is_shared_library.hypothesis.inner_test(text)  # type: ignore[attr-defined]
    test_cudnn_extra_major.hypothesis.inner_test(text)  # type: ignore[attr-defined]
    test_cuda_like.hypothesis.inner_test(text)  # type: ignore[attr-defined]
    test_simple_assignment.hypothesis.inner_test(text)  # type: ignore[attr-defined]
    test_toolkit_version.hypothesis.inner_test(text)  # type: ignore[attr-defined]
