"""`ortdoctor check`'s command line parsed without click, for the console entry (:mod:`ortdoctor.cli.entry`).

:func:`parse` gives the parameters the click command (:mod:`ortdoctor.cli.check`) would pass, or None for
any command line it cannot parse exactly as click would: an unknown option, ``-h``/``--help``, combined
short flags, a positional argument, a value click would reject (or might: a value that starts with ``-``),
a malformed ``--provider-option``. Then click parses it and says what is wrong in its own words. It never
rejects what click accepts with a different answer: ``tests/test_check_argv.py`` keeps :data:`OPTIONS` equal
to the click command's options and compares both parsers on many command lines.

Importing click and what it imports costs ~20 ms of a ``check --no-smoke`` on a 2-core machine.
"""

from __future__ import annotations

import os
import stat
from collections import namedtuple
from collections.abc import Sequence

from ortdoctor.cli.check_run import MalformedProviderOption, parse_provider_options
from ortdoctor.core.execution_providers import DEFAULT_PROVIDER, PROVIDER_CHOICES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple

__all__ = ["OPTIONS", "Option", "parse"]

# The kinds of value, each the click type it stands for:
FLAG = "flag"  # is_flag=True
TEXT = "text"  # click.STRING
FILE = "file"  # click.Path(dir_okay=False)
EXISTING_FILE = "existing-file"  # click.Path(exists=True, dir_okay=False)
COUNT = "int>=0"  # click.IntRange(min=0)
POSITIVE = "float>0"  # click.FloatRange(min=0, min_open=True)
CHOICE = "choice"  # click.Choice(choices), case-sensitive


if TYPE_CHECKING:
    class Option(NamedTuple):
        opts: tuple[str, ...]  # every option string, e.g. ("--quiet", "-q")
        name: str  # the parameter name click passes
        kind: str
        default: Any = None  # the value click passes when the option is not given
        choices: tuple[str, ...] = ()
        multiple: bool = False
else:
    # The same class at run time without importing typing (typing.NamedTuple is ~5% of a check).
    Option = namedtuple("Option", ("opts", "name", "kind", "default", "choices", "multiple"),
                        defaults=(None, (), False), module=__name__)


# check's options, in the click command's order; tests/test_check_argv.py derives this table from the
# click command and fails, printing the table to paste here, when the two differ.
OPTIONS: tuple[Option, ...] = (
    Option(("--json",), "as_json", FLAG, False),
    Option(("--format",), "fmt", CHOICE, None, ("text", "json", "markdown")),
    Option(("--quiet", "-q"), "quiet", FLAG, False),
    Option(("--strict",), "strict", FLAG, False),
    Option(("--debug",), "debug", FLAG, False),
    Option(("--no-smoke",), "no_smoke", FLAG, False),
    Option(("--matrix",), "matrix_file", FILE, None),
    Option(("--directory",), "directory", TEXT, None),
    Option(("--allow-unsafe-dirs",), "allow_unsafe_dirs", FLAG, False),
    Option(("--device-id",), "device_id", COUNT, 0),
    Option(("--provider",), "provider", CHOICE, DEFAULT_PROVIDER, PROVIDER_CHOICES),
    Option(("--provider-option",), "provider_options", TEXT, (), multiple=True),
    Option(("--iobinding",), "iobinding", FLAG, False),
    Option(("--cuda-graph",), "cuda_graph", FLAG, False),
    Option(("--placement",), "placement", FLAG, False),
    Option(("--verbose", "-v"), "verbose", FLAG, False),
    Option(("--python",), "python_path", FILE, None),
    Option(("--timeout",), "timeout", POSITIVE, 60.0),
    Option(("--all-devices",), "all_devices", FLAG, False),
    Option(("--model",), "model_path", EXISTING_FILE, None),
    Option(("--input-shape",), "input_shapes", TEXT, (), multiple=True),
    Option(("--input",), "model_inputs", TEXT, (), multiple=True),
    Option(("--compare-limit",), "compare_limit", POSITIVE, None),
)

_BY_OPT = {opt: option for option in OPTIONS for opt in option.opts}
_REJECT = object()  # a value click might not accept as this parser would


def parse(argv: Sequence[str]) -> dict[str, Any] | None:
    """The parameters of `ortdoctor check ARGV...` (what follows ``check``), or None: leave it to click."""
    given: dict[str, Any] = {}
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        explicit: str | None = None
        if arg.startswith("--") and "=" in arg:
            arg, _, explicit = arg.partition("=")
        option = _BY_OPT.get(arg)
        if option is None:  # --help, -h, -qv, --, a positional argument, an unknown option
            return None
        if option.kind == FLAG:
            if explicit is not None:  # click: "Option '--json' does not take a value."
                return None
            given[option.name] = True
            continue
        if explicit is None:
            if i == len(args) or args[i].startswith("-"):  # missing, or is it an option? click decides
                return None
            explicit = args[i]
            i += 1
        if option.multiple:
            given.setdefault(option.name, []).append(explicit)
        else:
            given[option.name] = explicit  # the last one wins, as in click; only that one is converted
    params: dict[str, Any] = {}
    for option in OPTIONS:
        if option.name not in given:
            params[option.name] = option.default
        elif option.kind == FLAG:
            params[option.name] = True
        elif option.multiple:
            values = tuple(_convert(option, v) for v in given[option.name])
            if _REJECT in values:
                return None
            params[option.name] = values
        else:
            value = _convert(option, given[option.name])
            if value is _REJECT:
                return None
            params[option.name] = value
    try:
        parse_provider_options(params["provider_options"])
    except MalformedProviderOption:  # click's own usage error says so (ortdoctor.cli.check)
        return None
    return params


def _convert(option: Option, value: str) -> Any:
    """``value`` as click's type for ``option`` converts it, or _REJECT where click might refuse it."""
    kind = option.kind
    if kind == TEXT:
        return value
    if kind == CHOICE:
        return value if value in option.choices else _REJECT
    if kind == COUNT:  # plain ASCII digits only: int() also takes " 1", "+1", "1_0" and other scripts' digits
        return int(value) if value.isascii() and value.isdigit() else _REJECT
    if kind == POSITIVE:
        whole, _, fraction = value.partition(".")
        digits = whole + fraction
        if not (digits and digits.isascii() and digits.isdigit()):
            return _REJECT
        number = float(value)
        return number if number > 0 else _REJECT
    if kind in (FILE, EXISTING_FILE):
        return _file(value, must_exist=kind == EXISTING_FILE)
    return _REJECT


def _file(value: str, *, must_exist: bool) -> Any:
    """click.Path(dir_okay=False, exists=must_exist): a missing path is taken as given unless it must exist;
    a path that exists must not be a directory and must be readable."""
    try:
        st = os.stat(value)
    except OSError:
        return _REJECT if must_exist else value
    except ValueError:  # an embedded NUL byte
        return _REJECT
    if stat.S_ISDIR(st.st_mode) or not os.access(value, os.R_OK):
        return _REJECT
    return value
