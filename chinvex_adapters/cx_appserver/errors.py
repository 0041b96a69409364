"""The errors of the app-server client, and the JSON-RPC error codes codex 0.169.0 answers with."""

from __future__ import annotations

from typing import Any

# JSON-RPC error codes seen from codex 0.169.0 (FORMATS.md §1.3, §1.5).
INVALID_REQUEST = -32600  # "Not initialized", "Already initialized", "thread not loaded: <id>"
METHOD_NOT_FOUND = -32601  # also "thread/items/list is not supported yet" on legacy threads
INTERNAL_ERROR = -32603  # e.g. "failed to read thread: ..."
SERVER_OVERLOADED = -32001


class AppServerClientError(Exception):
    """Base class of everything this client raises."""


class AppServerError(AppServerClientError):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None, method: str | None = None):
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}app-server error {code}: {message}")


class AppServerUnavailable(AppServerClientError):
    """The app-server could not be started or handshaken (binary or CODEX_HOME missing, ...).

    The ingest pipeline treats this as "use the rollout-file adapter instead".
    """


class AppServerDied(AppServerUnavailable):
    """The connection ended (child exited or closed stdout) while requests were pending."""


class AppServerTimeout(AppServerClientError):
    """A request got no answer within its timeout."""
