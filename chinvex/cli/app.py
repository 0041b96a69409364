"""The typer application every command module registers on. Its own module, so that command
modules import it without importing the module that imports them (`chinvex.cli.registration`
imports the command modules, in the order `--help` lists them)."""

from __future__ import annotations

import typer

from chinvex import __version__

app = typer.Typer(
    name="chinvex",
    help="Local-first knowledge engine: index repos, notes, chats and agent sessions; "
    "search them and get grounded, cited answers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"chinvex {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Local-first knowledge engine for developers who work with AI coding agents."""
