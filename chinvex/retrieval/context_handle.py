"""One context's warm search resources: its connection, the lock that serialises its use, its
vector store (opened once, retried after a failure), and the per-connection caches a search keeps
while the index is unchanged."""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from chinvex.errors import ChinvexError
from chinvex.models import ContextConfig
from chinvex.retrieval.coverage import VectorCoverage
from chinvex.retrieval.term_counts import TermCounts

STORE_RETRY_SECONDS = 5.0
"""A store that could not be opened is tried again after this long (an ingest may create it),
not on every query (opening costs far more than a query)."""


@dataclass
class ContextHandle:
    config: ContextConfig
    conn: sqlite3.Connection
    lock: threading.Lock = field(default_factory=threading.Lock)
    store: Any = None
    store_checked: bool = False
    matrix: Any = None
    """The store's vector matrix the last search read instead of the store, if any
    (chinvex.retrieval.vector_leg.MatrixStore)."""
    store_error: str | None = None
    store_checked_at: float = 0.0
    vocabulary: Any = None
    """A per-connection cache the answer layer keeps its document frequencies in."""
    counted_coverage: tuple[Any, VectorCoverage] | None = None
    """The last counted coverage and the index state it was counted in (see context_search.coverage_of)."""
    term_counts: TermCounts = field(default_factory=TermCounts)
    """The lexical leg's term counts, kept while the index is unchanged."""

    def close(self) -> None:
        store, self.store, self.store_checked = self.store, None, False
        if store is not None:
            try:
                store.close()
            except Exception:
                pass
        try:
            self.conn.close()
        except sqlite3.Error:
            pass


def vector_store(h: ContextHandle) -> Any:
    """The context's vector store, opened once and kept (it reloads itself when another
    process writes to it). A failed open is retried after STORE_RETRY_SECONDS."""
    if h.store is None and h.store_checked and time.monotonic() - h.store_checked_at >= STORE_RETRY_SECONDS:
        h.store_checked = False
    if not h.store_checked:
        from chinvex.storage.vectors import VectorStore

        try:
            h.store = VectorStore.open(h.config, h.conn, create=False)
            if h.store is None:
                h.store_error = "no vectors yet (run 'chinvex ingest')"
        except ChinvexError as exc:
            h.store, h.store_error = None, exc.message
        h.store_checked = True
        h.store_checked_at = time.monotonic()
    return h.store


def vector_failure(context: str, what: str, message: str) -> str:
    """The warning for a vector leg that could not run. A damaged store gets the command that
    rebuilds it: nothing else (a plain ingest that changed nothing, another search) would."""
    from chinvex.storage.vector_errors import is_damage

    hint = ""
    if "--repair" not in message and is_damage(message):
        hint = f"; run 'chinvex doctor --context {context} --repair' to rebuild it from hybrid.db"
    return f"{context}: {what} ({message}){hint}; results are FTS only"
