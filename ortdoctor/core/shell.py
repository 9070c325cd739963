"""Every command ortdoctor prints, as data, and the one place it is turned into shell text.

A fix is printed for a person to paste, so its text must mean exactly the argument vector it was built
from, whatever the paths and versions hold: spaces, quotes, ``$(...)``, backquotes, ``!``, newlines, glob
characters, leading dashes, bytes that are not UTF-8. Nothing outside this module joins words into a
command line.

* :class:`Command` is one line of a fix: a program and its arguments (``run``), directories moved into a
  backup folder (``move``), or a search-path variable set (``path``).
* :func:`posix_quote` is :func:`shlex.quote` with two changes. A word is single-quoted, so ``!`` stays
  inside single quotes, where interactive bash and zsh do no history expansion (a double-quoted
  ``"nvidia-cublas==1!13.1.0.3"`` reads ``!13`` as a history event). Control characters and bytes that
  are not UTF-8 (``os.fsdecode``'s surrogates) are written as ``$'\\xHH'`` pieces, so every printed
  command is one line of printable text that a terminal shows as it is.
* :func:`powershell_quote` writes PowerShell words: single quotes, in which PowerShell expands nothing
  (no ``$var``, ``$(...)`` or backquote escapes), with the quote characters doubled. A quoted program is
  called with ``&``. cmd.exe has no quoting that stops ``%VAR%`` expansion, so the Windows commands are
  for PowerShell; in cmd.exe run them through ``powershell -Command`` or type them by hand. Before
  PowerShell 7.3, PowerShell drops empty arguments and mangles ``"`` inside arguments it passes to a
  program; no argument ortdoctor prints is empty, and paths on Windows cannot hold ``"``.

:func:`compose` writes a fix's text: its commands, one per line, then its prose with each line made a
shell comment, so a whole fix pasted into a shell runs the commands and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ortdoctor.core.record import record

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a check's start-up: only for the type checker
    from typing import Literal

    Kind = Literal["run", "move", "path"]

__all__ = ["BACKUP_DIR", "Command", "add_note", "compose", "move_argvs", "posix_join", "posix_quote",
           "powershell_join", "powershell_quote", "powershell_string", "render", "render_all", "split_fix"]

# shlex.quote's safe characters: a word made of these alone means itself in every POSIX shell
_POSIX_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-")
# PowerShell: no ``@`` (splatting), ``,`` (arrays) or ``%`` (``--%`` stops its parsing)
_PS_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+=:./\\-")
# PowerShell reads each of these as a single quote
_PS_QUOTES = "'\u2018\u2019\u201a\u201b"
# the backup folder a ``move`` creates beside the directories it moves (not importable: it has a dash)
BACKUP_DIR = "ortdoctor-backup"


@record
class Command:
    """One line of a fix, built from its words and quoted only when rendered.

    ``run``: ``argv`` is the program and its arguments. ``move``: ``argv`` is the paths to move, then the
    folder to move them into (created first). ``path``: ``argv`` is the variable's name, then the
    directories to put first; ``keep`` appends the variable's current value.
    """

    argv: tuple[str, ...]
    kind: Kind = "run"
    keep: bool = True

    def to_json(self, *, windows: bool = False) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "argv": list(self.argv), "text": render(self, windows=windows)}
        if self.kind == "path":
            out["keep"] = self.keep
        return out


def _ansi(ch: str) -> str:
    """``$'\\xHH...'`` for a control character or a byte that is not UTF-8 (a surrogate of ``os.fsdecode``)."""
    code = ord(ch)
    raw = bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else ch.encode("utf-8", "surrogatepass")
    return "$'" + "".join(f"\\x{b:02x}" for b in raw) + "'"


def _needs_ansi(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF


def posix_quote(word: str) -> str:
    """One POSIX shell word that means ``word`` exactly, also in interactive bash and zsh (see the module)."""
    if not word:
        return "''"
    if word[0] not in "=~" and all(ch in _POSIX_SAFE for ch in word):  # zsh expands a leading "="
        return word
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append("'" + "".join(run) + "'")
            run.clear()

    for ch in word:
        if ch == "'":
            flush()
            out.append("\\'")
        elif _needs_ansi(ch):
            flush()
            out.append(_ansi(ch))
        else:
            run.append(ch)
    flush()
    return "".join(out)


def posix_join(argv: Iterable[str]) -> str:
    return " ".join(posix_quote(a) for a in argv)


def powershell_quote(word: str) -> str:
    """One PowerShell word that means ``word`` exactly: bare when plain, else single-quoted; a word with
    control characters as a ``('...' + [char]0x0A + '...')`` expression, so the line stays one line."""
    if word and word != "--%" and all(ch in _PS_SAFE for ch in word):
        return word
    return powershell_string(word)


def powershell_string(word: str) -> str:
    """A PowerShell string expression for ``word``, always quoted (the value of an assignment, where a
    bare word would be run as a command)."""
    parts: list[str] = []
    run: list[str] = []
    for ch in word:
        if _needs_ansi(ch):
            parts += ["'" + "".join(run) + "'"] if run else []
            run.clear()
            parts.append(f"[char]0x{ord(ch):04X}")
        else:
            run.append(ch * 2 if ch in _PS_QUOTES else ch)
    if run or not parts:
        parts.append("'" + "".join(run) + "'")
    if parts[0].startswith("[char]"):  # a string first, so that + joins strings
        parts.insert(0, "''")
    return parts[0] if len(parts) == 1 else "(" + " + ".join(parts) + ")"


def powershell_join(argv: Sequence[str]) -> str:
    """A PowerShell command line; a quoted program is called with ``&`` (else it is a string, not a call)."""
    words = [powershell_quote(a) for a in argv]
    if words and words[0] != argv[0]:
        words.insert(0, "&")
    return " ".join(words)


def move_argvs(command: Command) -> list[list[str]]:
    """The POSIX argument vectors of a ``move``: create the folder, then move every path into it."""
    *paths, into = command.argv
    return [["mkdir", "-p", "--", into], ["mv", "--", *paths, into]]


def render(command: Command, *, windows: bool = False) -> str:
    """The command as one line for a POSIX shell (bash, zsh, sh) or, with ``windows``, for PowerShell."""
    if command.kind == "run":
        return powershell_join(command.argv) if windows else posix_join(command.argv)
    if command.kind == "move":
        *paths, into = command.argv
        if windows:
            return (f"New-Item -ItemType Directory -Force -Path {powershell_quote(into)} | Out-Null; "
                    f"Move-Item -LiteralPath {','.join(powershell_quote(p) for p in paths)} "
                    f"-Destination {powershell_quote(into)}")
        return " && ".join(posix_join(argv) for argv in move_argvs(command))
    name, *dirs = command.argv
    if windows:
        value = powershell_string(";".join(dirs) + (";" if command.keep and dirs else ""))
        if not dirs:
            return f"$env:{name} = ''" if not command.keep else f"$env:{name} = $env:{name}"
        return f"$env:{name} = {value}" + (f" + $env:{name}" if command.keep else "")
    if not dirs:
        return ":" if command.keep else f"unset {name}"  # nothing to put first: leave it as it is
    value = ":".join(posix_quote(d) for d in dirs)
    return f"export {name}={value}" + (f'"${{{name}:+:${name}}}"' if command.keep else "")


def render_all(commands: Iterable[Command], *, windows: bool = False) -> list[str]:
    return [render(c, windows=windows) for c in commands]


def compose(commands: Sequence[Command], prose: str | None = None, *, windows: bool = False) -> str:
    """A fix's text: the commands, one per line, then the prose, each line a comment (``# ...``), so the
    whole text can be pasted into a shell. Without commands, the prose as it is."""
    lines = render_all(commands, windows=windows)
    if not lines:
        return prose or ""
    notes = [line for line in (prose or "").splitlines() if line.strip()]
    return "\n".join([*lines, *("# " + line.removeprefix("# ") for line in notes)])


def add_note(fix: str, note: str, has_commands: bool) -> str:
    """``fix`` with one more line of prose (a comment where the fix has commands)."""
    if not note:
        return fix
    return f"{fix}\n{'# ' if has_commands else ''}{note}" if fix else note


def split_fix(text: str, has_commands: bool) -> tuple[list[str], list[str]]:
    """A composed fix back into its command lines and its prose lines (the comment marks removed)."""
    lines = text.splitlines()
    if not has_commands:
        return [], lines
    commands = [line for line in lines if not line.startswith("# ")]
    prose = [line[2:] for line in lines if line.startswith("# ")]
    return commands, prose
