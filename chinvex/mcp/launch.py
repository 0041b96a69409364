"""Start the stdio MCP server: shared by the console script's fast path (`chinvex.entry`) and the
typer command (`chinvex mcp`), so both behave the same way. The session starts at the front door
(`chinvex.mcp.front`), which answers the handshake while the SDK loads."""

from __future__ import annotations

import os
import sys

from chinvex.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK


def run_server(default_context: str | None) -> int:
    """Serve until the client closes stdin; the exit status of the process."""
    from chinvex.mcp.profiles import UnknownToolsError, profile_name, selected

    try:
        selected(profile_name(os.environ))
    except UnknownToolsError as exc:
        sys.stderr.write(f"chinvex mcp: {exc}\n")
        return 2
    if sys.stdin.isatty():
        sys.stderr.write("chinvex mcp: serving MCP on stdin/stdout (a client such as Claude Code or Codex "
                         "starts this; 'chinvex mcp config --client claude|codex' prints the set-up). "
                         "Ctrl-C to stop.\n")
    try:
        from chinvex.mcp.front import serve

        serve(default_context=default_context)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: one line for the client's log, the traceback on request
        if os.environ.get("CHINVEX_DEBUG"):
            raise
        sys.stderr.write(f"chinvex mcp: internal error ({type(exc).__name__}: {exc}); rerun with "
                         "CHINVEX_DEBUG=1 for a traceback and please report it\n")
        return EXIT_FAILURE
    return EXIT_OK
