"""A Dockerfile read as stages: the base image, the ``pip install`` words of each ``RUN``, ``ENV`` values.

Standard library only, no shell: lines continued with the escape character are joined (the first line
is the instruction's line), ``ARG``/``ENV`` values are substituted where ``$VAR``, ``${VAR}`` or
``${VAR:-default}`` appear (the shell of ``RUN`` would do the same), and each ``RUN`` is split at ``&&``,
``||``, ``;`` and ``|`` into commands. A command that runs pip's ``install`` or ``uninstall`` (``pip``,
``pip3``, ``pythonX -m pip``, ``uv pip``) gives a :class:`PipInstall` whose words keep the physical line
they are written on. Heredocs and JSON-form ``RUN`` are read as plain words.
"""

from __future__ import annotations

import re

from ortdoctor.core.record import record

__all__ = ["DockerStage", "EnvValue", "PipInstall", "PipWord", "pip_commands", "read_dockerfile"]


@record
class PipWord:
    line: int
    word: str


@record
class PipInstall:
    line: int
    words: tuple[PipWord, ...]  # everything after `install`, variables substituted, quotes removed
    uninstall: bool = False  # `pip uninstall -y onnxruntime`: what it names is gone from then on


@record
class EnvValue:
    line: int
    name: str
    value: str


@record
class DockerStage:
    line: int  # the FROM line
    image: str  # the base image, variables substituted: "nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04"
    name: str | None  # FROM ... AS name
    pip_installs: tuple[PipInstall, ...]
    env: tuple[EnvValue, ...]  # ENV and ARG values of the stage, in order
    pythons: tuple[EnvValue, ...] = ()  # CPython versions a RUN installs (apt python3.11, uv python install,
    # conda create python=3.10)


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+]([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
_PYTHON_INSTALL = re.compile(r"(?:\bapt(?:-get)?\s+(?:-\S+\s+)*install\b[^&;|]*?\bpython(3\.\d+)\b"
                             r"|\buv\s+python\s+install\s+(?:cpython-)?(3\.\d+)"
                             r"|\b(?:conda|mamba|micromamba)\s+(?:create|install)\b[^&;|]*?\bpython==?(3\.\d+))")
_SPLIT = re.compile(r"&&|\|\||;|\|")
_PIP = re.compile(r"(?:^|\s)(?:\S*/)?(?:(?:python[0-9.]*\s+-m\s+pip)|pip[0-9.]*|uv\s+pip)\s+(un)?install(?=\s|$)")


def _substitute(text: str, values: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in values:
            return values[name]
        if m.group(2) is not None:
            return m.group(2)
        return m.group(0)
    return _VAR.sub(one, text)


def _instructions(text: str) -> list[tuple[int, str, str, list[tuple[int, str]]]]:
    """``(line, KEYWORD, arguments, [(physical line, text)])`` for each instruction."""
    escape = "\\"
    out: list[tuple[int, str, str, list[tuple[int, str]]]] = []
    lines = text.splitlines()
    i = 0
    head = True
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        m = re.match(r"#\s*escape\s*=\s*(\S)", stripped) if head else None
        if m:
            escape = m.group(1)
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        head = False
        start = i + 1
        parts: list[tuple[int, str]] = []
        while True:
            current = lines[i].rstrip()
            if current.strip().startswith("#") and parts:
                i += 1  # a comment line inside a continued instruction
                if i >= len(lines):
                    break
                continue
            if current.endswith(escape):
                parts.append((i + 1, current[:-1]))
                i += 1
                if i >= len(lines):
                    break
                continue
            parts.append((i + 1, current))
            i += 1
            break
        joined = " ".join(p.strip() for _, p in parts)
        keyword, _, args = joined.partition(" ")
        out.append((start, keyword.upper(), args.strip(), parts))
    return out


def _env_pairs(args: str) -> list[tuple[str, str]]:
    """``ENV A=1 B="x y"`` and the old ``ENV A value`` form."""
    words = _words(args)
    if words and "=" not in words[0]:
        return [(words[0], args.split(None, 1)[1].strip() if len(args.split(None, 1)) > 1 else "")]
    return [(w.split("=", 1)[0], w.split("=", 1)[1]) for w in words if "=" in w]


def _words(text: str) -> list[str]:
    out: list[str] = []
    for m in re.finditer(r"\"((?:[^\"\\]|\\.)*)\"|'([^']*)'|(\S+)", text):
        if m.group(3) is not None and ('"' in m.group(3) or "'" in m.group(3)):
            out.append(m.group(3).replace('"', "").replace("'", ""))
        else:
            out.append(m.group(1) if m.group(1) is not None else m.group(2) if m.group(2) is not None
                       else m.group(3))
    return out


def pip_commands(parts: list[tuple[int, str]], values: dict[str, str] | None = None) -> list[PipInstall]:
    """The pip install/uninstall commands of one shell command line, given as its physical lines (the
    escape character removed), with ``values`` substituted for ``$VAR``."""
    out: list[PipInstall] = []
    values = values or {}
    # each physical line's commands, so that every word keeps its line
    command: list[PipWord] | None = None
    command_line = 0
    removes = False
    for number, text in parts:
        text = _substitute(text, values)
        pieces = _SPLIT.split(text)
        for k, piece in enumerate(pieces):
            if k > 0 and command is not None:  # a separator ended the pip command
                out.append(PipInstall(command_line, tuple(command), removes))
                command = None
            m = _PIP.search(piece)
            if m:
                if command is not None:
                    out.append(PipInstall(command_line, tuple(command), removes))
                command = []
                command_line = number
                removes = m.group(1) is not None
                piece = piece[m.end():]
            if command is not None:
                command.extend(PipWord(number, w) for w in _words(piece))
    if command is not None:
        out.append(PipInstall(command_line, tuple(command), removes))
    return out


def read_dockerfile(text: str, build_args: dict[str, str] | None = None) -> tuple[DockerStage, ...]:
    """The stages of a Dockerfile (an empty tuple when it has no FROM)."""
    global_args: dict[str, str] = dict(build_args or {})
    stages: list[DockerStage] = []
    current: dict[str, object] | None = None
    values: dict[str, str] = {}

    def close() -> None:
        if current is not None:
            stages.append(DockerStage(current["line"], current["image"], current["name"],  # type: ignore[arg-type]
                                      tuple(current["pip"]), tuple(current["env"]),  # type: ignore[arg-type]
                                      tuple(current["pythons"])))  # type: ignore[arg-type]

    for line, keyword, args, parts in _instructions(text):
        if keyword == "ARG":
            for name, value in _env_pairs(args):
                if current is None:
                    global_args.setdefault(name, _substitute(value, global_args))  # --build-arg wins
                    continue
                # an ARG in a stage takes the global value of that name, else its own default
                values[name] = global_args.get(name) or _substitute(value, values)
                current["env"].append(EnvValue(line, name, values[name]))  # type: ignore[attr-defined]
        elif keyword == "FROM":
            close()
            words = [w for w in _words(args) if not w.startswith("--")]
            image = _substitute(words[0], global_args) if words else ""
            stage_name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            inherited = next((s for s in reversed(stages) if s.name and s.name == image), None)
            values = dict(global_args)
            env: list[EnvValue] = []
            if inherited is not None:
                env = list(inherited.env)
                values.update({e.name: e.value for e in inherited.env})
                image = inherited.image
            current = {"line": line, "image": image, "name": stage_name, "pip": [], "env": env, "pythons": []}
        elif current is not None and keyword == "ENV":
            for name, value in _env_pairs(args):
                value = _substitute(value.strip('"').strip("'"), values)
                values[name] = value
                current["env"].append(EnvValue(line, name, value))  # type: ignore[attr-defined]
        elif current is not None and keyword == "RUN":
            current["pip"].extend(pip_commands(parts, values))  # type: ignore[attr-defined]
            for number, text in parts:
                for m in _PYTHON_INSTALL.finditer(_substitute(text, values)):
                    version = m.group(1) or m.group(2) or m.group(3)
                    current["pythons"].append(EnvValue(number, "python", version))  # type: ignore[attr-defined]
    close()
    return tuple(stages)
