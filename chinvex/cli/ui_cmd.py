"""`chinvex ui`: serve the local web UI (`chinvex.web`).

Registered by `chinvex.cli.registration` (`app.command("ui")(ui_command)`, last in --help), so this
module must not import it back; it stays light: the web stack is imported only when the command runs.
"""

from __future__ import annotations

from typing import Optional

import typer

DEFAULT_PORT = 8765


def ui_command(
    context: Optional[str] = typer.Option(
        None, "--context", help="Context the pages open on (name or alias); default: CHINVEX_CONTEXT, else the "
        "context whose source folders contain the current directory, else the first one. Every context "
        "can be picked in the page."),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port on 127.0.0.1 (0: any free port)."),
    no_open: bool = typer.Option(False, "--no-open", help="Do not open a browser; only print the URL."),
) -> None:
    """Serve a local web UI on 127.0.0.1: contexts, documents, search with explain, conversations,
    answers with citations, memories and ingest history. The printed URL carries this run's token
    (required by every request); Ctrl-C stops it."""
    from chinvex.web.security import RunSecrets
    from chinvex.web.server import bind, serve
    from chinvex.web.state import UiState

    from chinvex.relay.handlers import start_for

    name = _opening_context(context)
    sock = bind(port)  # before any work, so a port in use fails at once
    state = UiState(run=RunSecrets.new(), default_context=name)
    relay = start_for(lambda: state.engine)  # other shells' search/answer/pack use this warm engine
    try:
        serve(state, sock, open_browser=not no_open)
    except KeyboardInterrupt:
        pass
    finally:
        if relay is not None:
            relay.close()


def _opening_context(given: str | None) -> str | None:
    """`--context` resolved now (an unknown name is the usual CONTEXT_NOT_FOUND error), else the
    default context when there is one; without either the UI opens on the first context. A
    CHINVEX_CONTEXT naming no context is still an error, as for every command."""
    from chinvex.cli.context_choice import context_config
    from chinvex.errors import UsageError

    if given is not None:
        return context_config(given, json_mode=False).name
    try:
        return context_config(None, json_mode=False).name
    except UsageError:
        return None
