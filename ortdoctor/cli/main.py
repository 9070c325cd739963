"""The click layer: parse options, call the library, pick the exit code. Nothing else lives here.

Subcommands live in :mod:`ortdoctor.cli` and are imported only when used, so
``ortdoctor preload`` does not pay for the modules of ``ortdoctor check``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from ortdoctor._version import __version__
from ortdoctor.cli.crash import reporting_crashes

# name -> (module under ortdoctor.cli that defines a click command called `command`, short help).
# The short help lives here so `ortdoctor --help` lists every command without importing any of them.
_COMMANDS = {
    "check": ("check", "Find what is wrong, say how to fix it, prove the CUDA EP."),
    "fix": ("fix", "Show the pip commands that fix what check finds; run them with --yes."),
    "preload": ("preload", "Load the CUDA/cuDNN libraries onnxruntime-gpu needs."),
    "explain": ("explain", "Explain a finding id, an error text or a log."),
    "matrix": ("matrix", "Show the matrix; pick a build for a CUDA/torch stack."),
    "hook": ("hook", "Install or remove the pre-session hook (.pth)."),
    "completion": ("completion", "Print the bash, zsh or fish completion script."),
    "fleet": ("fleet", "Check every node of a cluster (Ray), or merge nodes' reports."),
    "lint": ("lint", "Find onnxruntime-gpu misconfigurations in requirements, locks and Dockerfiles."),
}

_HELP = """Why is my ONNX Runtime session not using the GPU?

\b
Common uses:
  ortdoctor check                  inspect, decide and prove the CUDA EP works
  ortdoctor preload --directory "" load the right CUDA/cuDNN libraries, show which
  ortdoctor explain - < log.txt    turn an ONNX Runtime error into cause and fix
  ortdoctor fix [--yes]            the package commands that fix it, for this interpreter

In Python, `import ortdoctor.hook` before the first session preloads the right libraries.
"""


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        return importlib.import_module(f"ortdoctor.cli.{entry[0]}").command  # type: ignore[no-any-return]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_module, short) in _COMMANDS.items()])


@click.group(cls=_LazyGroup, help=_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ortdoctor")
def cli() -> None:
    pass


def run_click(args: list[str]) -> Any:
    """The click group on ``args``, as the console runs it (standalone: click prints usage errors and exits)."""
    return cli.main(args=args, prog_name="ortdoctor", standalone_mode=True)


def main(argv: list[str] | None = None) -> Any:
    """The whole CLI through click, in-process (the tests, and `ortdoctor.cli.entry` for everything but a plain
    `check`): no traceback reaches the user unless --debug was given."""
    args = sys.argv[1:] if argv is None else argv
    from ortdoctor.cli.console import make_streams_safe

    make_streams_safe()
    return reporting_crashes(lambda: run_click(args), debug="--debug" in args)
