"""Adapter `cx_appserver`: Codex threads read through `codex app-server` (JSON-RPC over stdio).

The primary Codex source; the rollout-file adapter (`cx_sessions_jsonl`) is the fallback for
threads the server cannot give (see `source.ThreadReadOutcome.reason`) and for machines
without the Codex binary (`client.AppServerUnavailable`).

- `client`: `AppServerClient`, a small synchronous JSON-RPC client of the child process
  (`launch`: how the child is started; `transport`: its pipes; `errors`: what fails).
- `schemas`: pydantic models of the v2 responses (codex 0.169.0).
- `normalize`: `thread_to_conversation(thread, turns) -> (ConversationDoc, counts)`
  (`turn_builder`: items → turns; `item_text`: their text, clipped and scrubbed).
- `source`: `AppServerSource.list_threads()` / `.read_thread()` for the ingest pipeline.
"""

from .client import AppServerClient
from .errors import (
    AppServerClientError,
    AppServerDied,
    AppServerError,
    AppServerTimeout,
    AppServerUnavailable,
)
from .item_text import NormalizeOptions
from .launch import ClientConfig
from .normalize import thread_to_conversation
from .source import (
    DEFAULT_SOURCE_KINDS,
    AppServerSource,
    AppServerSourceOptions,
    client_factory_from,
)
from .threads import (
    ThreadReadError,
    ThreadReadOutcome,
    ThreadSummary,
    resolve_rollout_path,
)
from .transport import StreamTransport

__all__ = [
    "DEFAULT_SOURCE_KINDS",
    "AppServerClient",
    "AppServerClientError",
    "AppServerDied",
    "AppServerError",
    "AppServerSource",
    "AppServerSourceOptions",
    "AppServerTimeout",
    "AppServerUnavailable",
    "ClientConfig",
    "NormalizeOptions",
    "StreamTransport",
    "ThreadReadError",
    "ThreadReadOutcome",
    "ThreadSummary",
    "client_factory_from",
    "resolve_rollout_path",
    "thread_to_conversation",
]
