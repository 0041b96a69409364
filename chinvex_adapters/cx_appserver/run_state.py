"""What the `cx_appserver` adapter keeps per ingest run: one app-server session per CODEX_HOME,
the run-level warnings, counts and per-thread paths that `end_run` hands over.

A run is identified by the `AdapterOptions` object the pipeline hands to every `enumerate` of
one run (see `adapter.py`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chinvex.files.excludes import is_excluded

from .client import AppServerClient
from .reader_choice import READER_APPSERVER, AppServerSettings
from .source import AppServerSource, client_factory_from
from .threads import ThreadSummary

log = logging.getLogger(__name__)


def one_line(exc: BaseException | str, limit: int = 400) -> str:
    """An exception as one summary line (the client's messages append stderr tails on
    further lines; they are kept, joined, up to `limit` characters)."""
    parts = [part.strip() for part in str(exc).splitlines() if part.strip()]
    text = " | ".join(parts) if parts else (type(exc).__name__ if isinstance(exc, BaseException) else "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def real_path(path: str | Path) -> str:
    """The path with every symlink resolved: how files are compared across readers."""
    return os.path.realpath(path)


def excluded_under_root(real: str, root_real: str, spec: Any) -> bool:
    """Whether the context excludes drop this file under the root, itself or through a folder
    above it (the walk does not enter an excluded folder, so its files are never reported)."""
    if spec is None:
        return False
    parts = Path(os.path.relpath(real, root_real)).parts
    for depth in range(1, len(parts)):
        if is_excluded("/".join(parts[:depth]), spec, is_dir=True):
            return True
    return is_excluded("/".join(parts), spec)


# -- per-run state ------------------------------------------------------------------------------


@dataclass
class HomeSession:
    """One CODEX_HOME during one run: its app-server source and what it listed."""

    home: str
    source: AppServerSource | None = None
    summaries: dict[str, ThreadSummary] = field(default_factory=dict)
    unavailable: str | None = None
    """Why the server could not list this home in this run (it is not tried again)."""
    gave_up: str | None = None
    """Set when the server died more often than the restart budget allows: later threads of
    this run go straight to their rollout files."""

    def close(self) -> None:
        if self.source is not None:
            try:
                self.source.close()
            except Exception as exc:  # noqa: BLE001 - stopping a child must never fail a run
                log.debug("closing app-server for %s: %s", self.home, exc)
            self.source = None


@dataclass
class RunState:
    """One run of the adapter: its app-server sessions and what only the run can report."""

    sessions: dict[str, HomeSession] = field(default_factory=dict)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    """Run-level failures of a CODEX_HOME's server (it kept dying): the threads still came from
    their rollout files, but the primary path is broken and the run must not look clean."""
    counts: Counter[str] = field(default_factory=Counter)
    paths: dict[str, dict[str, Any]] = field(default_factory=dict)
    readers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Include root -> {"reader", "why", "mode", "codex_home"}: which reader read it."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def close(self) -> None:
        with self.lock:
            sessions = list(self.sessions.values())
        for session in sessions:
            session.close()

    def note(self, uri: str, thread_id: str | None, path: str, reason: str, **extra: Any) -> None:
        entry: dict[str, Any] = {"thread_id": thread_id, "path": path, "reason": reason}
        entry.update({k: v for k, v in extra.items() if v is not None})
        self.paths[uri] = entry

    def report(self) -> dict[str, Any]:
        return {"warnings": list(self.warnings), "errors": list(self.errors),
                "counts": dict(self.counts), "paths": dict(self.paths),
                "readers": {root: dict(entry) for root, entry in self.readers.items()}}

    def stopped(self, home: str, detail: str) -> None:
        """The server of `home` gave up mid-run: the roots it read say so."""
        with self.lock:
            for entry in self.readers.values():
                if entry.get("codex_home") == home and entry.get("reader") == READER_APPSERVER:
                    entry["stopped"] = detail


def close_run(runs: dict[int, RunState], finalizers: dict[int, Any], key: int) -> None:
    finalizers.pop(key, None)
    state = runs.pop(key, None)
    if state is not None:
        state.close()


ClientFactoryBuilder = Callable[[AppServerSettings, Path], Callable[[], AppServerClient]]


def default_client_factory(settings: AppServerSettings, home: Path) -> Callable[[], AppServerClient]:
    return client_factory_from(settings.config, codex_home=str(home), binary=settings.binary)


# -- the adapter --------------------------------------------------------------------------------
