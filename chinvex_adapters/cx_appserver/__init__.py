"""Adapter `cx_appserver`: Codex threads read through `codex app-server` (JSON-RPC over stdio).

The primary Codex source; the rollout-file adapter (`cx_sessions_jsonl`) is the fallback for
threads the server cannot give (see `source.ThreadReadOutcome.reason`) and for machines
without the Codex binary (`client.AppServerUnavailable`).

- `client`: `AppServerClient`, a small synchronous JSON-RPC client of the child process.
- `schemas`: pydantic models of the v2 responses (codex 0.169.0).
- `normalize`: `thread_to_conversation(thread, turns) -> (ConversationDoc, counts)`.
- `source`: `AppServerSource.list_threads()` / `.read_thread()` for the ingest pipeline.
"""

from .client import (
    AppServerClient,
    AppServerClientError,
    AppServerDied,
    AppServerError,
    AppServerTimeout,
    AppServerUnavailable,
    ClientConfig,
    StreamTransport,
)
from .normalize import NormalizeOptions, thread_to_conversation
from .source import (
    DEFAULT_SOURCE_KINDS,
    AppServerSource,
    AppServerSourceOptions,
    ThreadReadError,
    ThreadReadOutcome,
    ThreadSummary,
    client_factory_from,
    resolve_rollout_path,
)

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
