"""Options shared by every command."""

import typer

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON document on stdout.")
CONTEXT_HELP = ("Context name or alias (default: CHINVEX_CONTEXT, else the context whose source "
                "folders contain the current directory).")
