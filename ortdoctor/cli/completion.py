"""`ortdoctor completion SHELL`: print the shell completion script (click's own mechanism)."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

_SHELLS = ("bash", "zsh", "fish")
_INSTALL = {
    "bash": 'eval "$(ortdoctor completion bash)"          # add to ~/.bashrc',
    "zsh": 'eval "$(ortdoctor completion zsh)"           # add to ~/.zshrc',
    "fish": "ortdoctor completion fish > ~/.config/fish/completions/ortdoctor.fish",
}


@click.command(name="completion")
@click.argument("shell", type=click.Choice(_SHELLS))
def command(shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    bash: eval "$(ortdoctor completion bash)"   (in ~/.bashrc)
    zsh:  eval "$(ortdoctor completion zsh)"    (in ~/.zshrc)
    fish: ortdoctor completion fish > ~/.config/fish/completions/ortdoctor.fish
    """
    from ortdoctor.cli.main import cli

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        raise click.UsageError(f"no completion support for {shell}")
    completer = cls(cli, {}, "ortdoctor", "_ORTDOCTOR_COMPLETE")
    click.echo(completer.source())
