"""Every printed fix command means exactly the argument vector it was built from.

Paths and versions full of what breaks a hand-joined command (spaces, quotes, ``$(...)``, backquotes,
``!``, newlines, glob characters, leading dashes, bytes that are not UTF-8) go through every builder of
fix commands; each rendered POSIX line is pasted into a sandboxed ``bash`` with history expansion on (as
an interactive shell has it) and only recording stubs on ``PATH``: each stub must get exactly the
intended argv, and no file may appear or vanish. Nothing real runs.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ortdoctor.core.facts import Finding, PackageStep
from ortdoctor.core.shell import (
    Command,
    compose,
    move_argvs,
    posix_quote,
    powershell_join,
    powershell_quote,
    render,
    render_all,
)
from ortdoctor.decide.fix_plan import plan_fix
from ortdoctor.decide.fixes import Installer, check_again, move_aside, quote, search_path, step

pytestmark = pytest.mark.skipif(os.name != "posix", reason="runs bash")

NASTY = " '\"$()`!\n\t*?[]{}~#;&|<>\\-=%:,.^@+" + "\udcff\udc80é\x01\x7f"
word = st.text(alphabet=st.sampled_from(NASTY) | st.characters(min_codepoint=48, max_codepoint=122),
               min_size=1, max_size=12)
dashed = st.one_of(word, word.map(lambda w: "-" + w), word.map(lambda w: "--" + w))
# one path component: anything but "/" and NUL, not "." or ".."
component = word.map(lambda w: w.replace("/", "_")).filter(lambda w: w not in (".", ".."))
version = st.one_of(st.just("1!13.1.0.3"), st.just("1!-2"), dashed,
                    word.map(lambda w: f"13.1.0.3{w}"), st.just("13.1.0.3$(touch INJECTED)"))

# a stub records its call: the argument count, $0, then each argument, NUL-terminated
STUB = '#!/bin/sh\nprintf \'%s\\0\' "$#" "$0" "$@" >> "$ORTDOCTOR_TEST_RECORD"\n'
STUB_NAMES = ("mkdir", "mv", "ortdoctor", "uv", "touch", "rm", "pip", "python", "python3", "ls", "cat", "id")


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.cwd = root / "cwd"
        self.record = root / "record"
        self.bin.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(exist_ok=True)
        for name in STUB_NAMES:
            self._stub(self.bin / name)

    def _stub(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STUB)
        path.chmod(0o755)

    def program(self, *parts: str) -> str:
        """A stub at an absolute path under the sandbox (the interpreter a fix names)."""
        path = self.root.joinpath("progs", *parts)
        self._stub(path)
        return str(path)

    def tree(self) -> set[str]:
        return {os.fsdecode(os.path.join(d, n)) for d, dirs, files in os.walk(os.fsencode(self.root))
                for n in (*dirs, *files)} - {str(self.record), str(self.root / "env")}

    def paste(self, text: str) -> tuple[list[list[str]], tuple[str, str], str]:
        """``text`` as a pasted script (history expansion on), then the recorded calls, the value of
        LD_LIBRARY_PATH afterwards (and whether it is set) and what bash said on stderr."""
        self.record.write_bytes(b"")
        script = ("set -o history -o histexpand\n" + text + "\n"
                  f"printf '%s\\0' \"${{LD_LIBRARY_PATH-}}\" \"${{LD_LIBRARY_PATH+set}}\" > {posix_quote(str(self.root / 'env'))}\n")
        env = {"PATH": str(self.bin), "ORTDOCTOR_TEST_RECORD": str(self.record), "LD_LIBRARY_PATH": "/orig",
               "HOME": str(self.cwd), "LC_ALL": "C.UTF-8"}
        proc = subprocess.run(["/bin/bash", "--norc", "--noprofile"], input=os.fsencode(script), env=env,
                              cwd=self.cwd, capture_output=True, check=False, timeout=60)
        raw = self.record.read_bytes().split(b"\0")
        calls: list[list[str]] = []
        i = 0
        while i + 1 < len(raw):
            n = int(raw[i])
            calls.append([os.fsdecode(a) for a in raw[i + 1:i + 2 + n]])
            i += 2 + n
        value, is_set = (os.fsdecode(x) for x in (self.root / "env").read_bytes().split(b"\0")[:2])
        return calls, (value, is_set), os.fsdecode(proc.stderr)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return Sandbox(tmp_path_factory.mktemp("paste"))


def _expected(sb: Sandbox, commands: Sequence[Command]) -> tuple[list[list[str]], str | None]:
    """The calls the stubs must see, and the LD_LIBRARY_PATH the lines must leave."""
    calls: list[list[str]] = []
    ld: str | None = "/orig"
    for c in commands:
        argvs = [list(c.argv)] if c.kind == "run" else move_argvs(c) if c.kind == "move" else []
        for argv in argvs:
            program = argv[0] if os.path.isabs(argv[0]) else str(sb.bin / argv[0])
            calls.append([program, *argv[1:]])
        if c.kind == "path":
            name, *dirs = c.argv
            assert name == "LD_LIBRARY_PATH"
            if dirs:
                ld = ":".join(dirs) + (f":{ld}" if c.keep and ld else "")
            elif not c.keep:
                ld = None
    return calls, ld


def _check(sb: Sandbox, commands: Sequence[Command], text: str) -> None:
    before = sb.tree()
    calls, (value, is_set), stderr = sb.paste(text)
    want, ld = _expected(sb, commands)
    assert calls == want, f"pasted:\n{text}\nbash said:\n{stderr}"
    assert stderr == "", f"pasted:\n{text}\nbash said:\n{stderr}"
    assert (value if is_set else None) == ld
    assert sb.tree() == before, f"pasted:\n{text}"


_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(interp_dir=component, names=st.lists(dashed, min_size=1, max_size=3), ver=version,
       base_dir=component, no_pip=st.booleans(), manager=st.sampled_from([None, "pixi", "poetry"]))
def test_package_commands(box: Sandbox, interp_dir: str, names: list[str], ver: str, base_dir: str,
                          no_pip: bool, manager: str | None) -> None:
    python = box.program("venv " + interp_dir, "bin", "python")
    base = box.program(base_dir, "python3")
    steps = [step("uninstall", "-y", *names), step("uninstall", "-y", names[0], python=base),
             step("install", f"nvidia-cublas=={ver}", f"onnxruntime-gpu[cuda,cudnn]=={ver}", "numpy<2")]
    installer = Installer(python, has_pip=False if no_pip else None, manager=manager)
    commands = installer.lines(steps)
    _check(box, commands, "\n".join(render_all(commands)))
    # the same as one `&&` line (the form a sentence quotes), and a fix text with prose as comments
    _check(box, commands, installer.commands(steps))
    text, fix_commands = installer.fix(steps, f"or the other build: {ver}\n{interp_dir}")
    _check(box, fix_commands, text)


@_SETTINGS
@given(uv_dir=component, interp_dir=component, names=st.lists(dashed, min_size=1, max_size=2))
def test_uv_commands(box: Sandbox, uv_dir: str, interp_dir: str, names: list[str]) -> None:
    uv = box.program(uv_dir, "uv")
    python = box.program(interp_dir, "python")
    installer = Installer(python, has_pip=False, uv=uv)
    commands = installer.lines([step("uninstall", "-y", *names), step("install", *names)])
    assert [c.argv[:3] for c in commands] == [(uv, "pip", "uninstall"), (uv, "pip", "install")]
    _check(box, commands, "\n".join(render_all(commands)))


@_SETTINGS
@given(parts=st.lists(component, min_size=1, max_size=3), version_=version)
def test_move_aside_of_a_target_directory(box: Sandbox, parts: list[str], version_: str) -> None:
    target = str(box.root.joinpath("targets", *parts))
    move = move_aside([os.path.join(target, "onnxruntime"), os.path.join(target, f"onnxruntime-{version_}.dist-info"
                                                                         .replace("/", "_"))], target)
    _check(box, [move], render(move))
    assert "rm " not in render(move)


@_SETTINGS
@given(dirs=st.lists(component.map(lambda c: "/opt/" + c.replace(":", "_")), min_size=0, max_size=3),
       keep=st.booleans())
def test_search_path_lines(box: Sandbox, dirs: list[str], keep: bool) -> None:
    line = search_path("LD_LIBRARY_PATH", dirs, keep=keep)
    _check(box, [line], render(line))


@_SETTINGS
@given(interp=component, prose=st.lists(word, max_size=3))
def test_check_again_and_whole_fix_texts(box: Sandbox, interp: str, prose: list[str]) -> None:
    again = check_again("/srv/" + interp + "/bin/python")
    text = compose([again], "\n".join(prose))
    _check(box, [again], text)


@_SETTINGS
@given(own_dir=component, interp=component)
def test_check_again_bound_to_ortdoctors_own_interpreter(box: Sandbox, own_dir: str, interp: str) -> None:
    """The re-check runs ``<ortdoctor's python> -m ortdoctor``, whatever that interpreter's path holds."""
    own = box.program(own_dir, "python")
    again = check_again("/srv/" + interp + "/bin/python", own)
    assert again.argv[:3] == (own, "-m", "ortdoctor")
    _check(box, [again], render(again))


@_SETTINGS
@given(interp_dir=component, target=component, ver=version, manager=st.sampled_from([None, "pixi", "poetry"]))
def test_the_merged_plan(box: Sandbox, interp_dir: str, target: str, ver: str, manager: str | None) -> None:
    """What `ortdoctor fix` and the report's first block print: the moves, then the merged pip commands, then
    (pixi, poetry) the project's note as a comment."""
    python = box.program(interp_dir, "python")
    tdir = str(box.root / "t" / target)
    move = move_aside([tdir + "/onnxruntime"], tdir)
    findings = [
        Finding("ort-multiple-packages", "error", "t", "", "x", (step("uninstall", "-y", "onnxruntime"),),
                (move,)),
        Finding("numpy-abi-mismatch", "error", "t", "", "x", (step("install", f"numpy<2{ver}"),)),
    ]
    plan = plan_fix(findings)
    installer = Installer(python, manager=manager)
    lines = plan.lines(installer)
    assert lines[0] == move
    _check(box, lines, compose(lines, plan.note(installer)))
    assert bool(plan.note(installer)) == (manager is not None)
    assert [list(c.argv) for c in lines if c.kind == "run"] == [a for a in plan.argvs(installer) if a[0] == python]


def test_the_review_cases_print_as_expected() -> None:
    """The two printed lines that went wrong, as they print now."""
    assert posix_quote("nvidia-cublas==1!13.1.0.3") == "'nvidia-cublas==1!13.1.0.3'"
    move = move_aside(["/p/my dir/tgt/onnxruntime", "/p/my dir/tgt/onnxruntime-1.31.1.dist-info"], "/p/my dir/tgt")
    assert render(move) == ("mkdir -p -- '/p/my dir/tgt/ortdoctor-backup' && mv -- '/p/my dir/tgt/onnxruntime' "
                            "'/p/my dir/tgt/onnxruntime-1.31.1.dist-info' '/p/my dir/tgt/ortdoctor-backup'")
    assert render(search_path("LD_LIBRARY_PATH", ["/sp ace/venv/lib"])) == (
        "export LD_LIBRARY_PATH='/sp ace/venv/lib'\"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"")
    assert posix_quote("a\nb\udcff") == "'a'$'\\x0a''b'$'\\xff'"
    assert posix_quote("=x") == "'=x'"  # zsh reads a bare leading "=" as a command lookup


# --------------------------------------------------------------------------------------------------
# PowerShell
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("word", "quoted"), [
    ("plain-1.2", "plain-1.2"),
    ("C:\\Program Files\\Python311\\python.exe", "'C:\\Program Files\\Python311\\python.exe'"),
    ("$(Remove-Item x)", "'$(Remove-Item x)'"),  # no expansion inside single quotes
    ("`whoami`", "'`whoami`'"),
    ("%USERPROFILE%", "'%USERPROFILE%'"),
    ("it's", "'it''s'"),
    ("it\u2019s", "'it\u2019\u2019s'"),  # PowerShell reads the typographic quotes as ' too
    ("1!13.1.0.3", "'1!13.1.0.3'"),
    ("--%", "'--%'"),  # the stop-parsing token
    ("@args", "'@args'"),  # splatting
    ("a,b", "'a,b'"),  # an array
    ("", "''"),
    ("a\nb", "('a' + [char]0x000A + 'b')"),
    ("\nb", "('' + [char]0x000A + 'b')"),
])
def test_powershell_quote(word: str, quoted: str) -> None:
    assert powershell_quote(word) == quoted
    assert quote(word, windows=True) == quoted


def test_powershell_calls_a_quoted_program_with_the_call_operator() -> None:
    assert powershell_join(["C:\\my venv\\Scripts\\python.exe", "-m", "pip", "install", "numpy<2"]) == (
        "& 'C:\\my venv\\Scripts\\python.exe' -m pip install 'numpy<2'")
    assert powershell_join(["uv", "pip", "install", "x"]) == "uv pip install x"
    assert render(search_path("PATH", ["C:\\a b", "C:\\c"]), windows=True) == "$env:PATH = 'C:\\a b;C:\\c;' + $env:PATH"
    assert render(search_path("PATH", ["C:\\c"], keep=False), windows=True) == "$env:PATH = 'C:\\c'"
    assert render(move_aside(["C:\\t\\onnxruntime"], "C:\\t"), windows=True) == (
        "New-Item -ItemType Directory -Force -Path C:\\t\\ortdoctor-backup | Out-Null; "
        "Move-Item -LiteralPath C:\\t\\onnxruntime -Destination C:\\t\\ortdoctor-backup")


def test_a_windows_installer_prints_powershell() -> None:
    installer = Installer("C:\\v e\\Scripts\\python.exe", windows=True)
    text, _ = installer.fix([PackageStep("install", ("onnxruntime-gpu==1.31.1",))], "why")
    assert text == "& 'C:\\v e\\Scripts\\python.exe' -m pip install onnxruntime-gpu==1.31.1\n# why"


@pytest.mark.skipif(not any(os.path.exists(os.path.join(d, "pwsh")) for d in os.environ.get("PATH", "").split(":")),
                    reason="PowerShell (pwsh) is not installed here")
def test_powershell_reads_each_quoted_word_back(tmp_path: Path) -> None:
    words = ["a b", "$(x)", "`y`", "it's", "it\u2019s", "%PATH%", "1!2", "a\nb", "@s", "a,b"]
    script = "; ".join(f"[Console]::Out.Write({powershell_quote(w)} + [char]0)" for w in words)
    out = subprocess.run(["pwsh", "-NoProfile", "-Command", script], capture_output=True, check=True, timeout=60)
    assert out.stdout.decode().split("\0")[:-1] == words


@_SETTINGS
@given(parts=st.lists(component, min_size=1, max_size=2), ver=st.sampled_from(["1.31.1", "1!1.31.1"]))
def test_the_diagnosis_fix_for_a_target_copy(box: Sandbox, parts: list[str], ver: str) -> None:
    """The whole fix text ``check`` prints for a --target copy on PYTHONPATH (diagnose/package.py), prose
    with the same weird path included, pasted as it stands: the two moves, nothing else."""
    from dataclasses import replace

    from ortdoctor.core.facts import OrtDistribution
    from tests.test_diagnose import healthy_env, ort_cpu, ort_gpu, run

    target = str(box.root.joinpath("tgt", *parts))
    cpu = OrtDistribution("onnxruntime", ver, target, f"{target}/onnxruntime-{ver}.dist-info")
    env = healthy_env(ort=replace(ort_cpu(), distributions=(cpu, ort_gpu().distributions[0]),
                                  package_dir=f"{target}/onnxruntime"))
    f = next(f for f in run(env) if f.id == "ort-multiple-packages")
    assert f.fix is not None
    assert [c.kind for c in f.commands] == ["move"]
    _check(box, f.commands, f.fix)
