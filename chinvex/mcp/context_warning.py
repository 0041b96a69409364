"""The one line `chinvex mcp` writes on stderr (the client's log) when the context it was named
(`--context`, else CHINVEX_CONTEXT) does not exist.

The server keeps serving: clients start it before the context may have been created, and every
tool that needs the context reports it. The check runs off the thread that answers the
handshake, so the handshake never waits for the registry.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TextIO


class ContextCheck:
    """Check once, in the background; `wait` lets a short session finish the check before the
    process exits (a client that closes stdin at once still sees the warning in its log)."""

    def __init__(self, default_context: str | None):
        self.default_context = default_context
        self.done = threading.Event()

    def run(self, stream: TextIO | None = None) -> None:
        try:
            message = unknown_context_message(self.default_context)
            if message:
                out = stream or sys.stderr
                out.write(message + "\n")
                out.flush()
        except Exception:  # noqa: BLE001  (a broken registry is reported by the first tool call)
            pass
        finally:
            self.done.set()

    def start(self) -> None:
        threading.Thread(target=self.run, name="chinvex-mcp-context-check", daemon=True).start()

    def wait(self, timeout: float = 5.0) -> None:
        self.done.wait(timeout)


def unknown_context_message(default_context: str | None) -> str | None:
    """The warning when the named context does not resolve; None when it does or none was named
    (then the working directory decides, at each call)."""
    from chinvex.context.default import ENV_CONTEXT, resolve_default
    from chinvex.context.registry import Registry
    from chinvex.mcp.state import NAME_ADVICE

    found = resolve_default(Registry(), given=default_context, env=os.environ, cwd=os.getcwd(),
                            advice=NAME_ADVICE)
    if found.problem != "unknown":
        return None
    from chinvex.errors import ContextNotFoundError

    named = (default_context or "").strip() or os.environ.get(ENV_CONTEXT, "").strip()
    if isinstance(found.cause, ContextNotFoundError):
        problem = f"context {named!r} (given by {found.via}) does not exist"
    else:
        problem = found.error
    return (f"chinvex mcp: warning: {problem}; serving anyway: tools called without a context fail "
            "until it is created ('chinvex context list' shows the contexts)")
