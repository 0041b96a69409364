"""Indexing memories: now when the context is free, else kept pending and indexed on a
later call (never lost, never blocking an agent for long)."""

from __future__ import annotations

import sqlite3
from typing import Any

from chinvex.mcp.state import ServerState
from chinvex.memory.indexing import prepare_memories, write_prepared
from chinvex.memory.items import Memory, mark_indexed, pending_memories, redactor_for


def index_items(state: ServerState, config: Any, items: list[Memory], *, wait: float | bool) -> str | None:
    """Index stored items; None when done, else why they stay pending (they are kept either way)."""
    ids = [item.item_id for item in items]
    with state.indexing_lock:
        state.indexing.update(ids)
    try:
        return _index_items_now(state, config, items, wait=wait)
    finally:
        with state.indexing_lock:
            state.indexing.difference_update(ids)


def _index_items_now(state: ServerState, config: Any, items: list[Memory], *,
                     wait: float | bool) -> str | None:
    from chinvex.errors import ChinvexError, LockedError
    from chinvex.locking import context_lock
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    h = state.handle(config)
    try:
        embedder = state.embedder(config)
        with h.lock:
            stored = db.get_meta(h.conn, "embedder")
        if stored is not None and stored != embedder.name:
            return (f"context {config.name} holds vectors of {stored} but is configured for {embedder.name}; "
                    f"the item is stored and will be indexed after 'chinvex ingest --context {config.name} --full'")
        prepared, vectors = prepare_memories(items, embedder, redact=redactor_for(config).enabled)
    except ChinvexError as exc:
        return f"the item is stored but could not be embedded yet ({exc.message}); it will be indexed on a later call"
    try:
        with context_lock(config, wait=wait, purpose="recall_add (chinvex mcp)"):
            with h.lock:
                stored = db.get_meta(h.conn, "embedder")
                if stored is None:
                    db.set_meta(h.conn, "embedder", embedder.name)
                    db.set_meta(h.conn, "embedding_provider", embedder.provider)
                    db.set_meta(h.conn, "embedding_model", embedder.model)
                    db.set_meta(h.conn, "embedding_dimension", str(embedder.dimension))
                elif stored != embedder.name:  # an ingest --full switched models meanwhile
                    return f"context {config.name} changed embedder while the item was prepared; it will be indexed on a later call"
                try:
                    store = h.store
                    if store is None:
                        store = VectorStore.open(config, h.conn, create=True)
                        # The searcher may have noted "no vectors yet": it sees this store from now on.
                        h.store, h.store_checked, h.store_error = store, True, None
                    write_prepared(h.conn, store, prepared, vectors)
                    mark_indexed(h.conn, [item.item_id for item in items])
                except (ChinvexError, sqlite3.Error, OSError) as exc:
                    message = getattr(exc, "message", None) or str(exc)
                    return (f"the item is stored but writing it to the index failed ({message}); it will be "
                            "indexed on a later call")
    except LockedError:
        return (f"context {config.name} is being written by another process (an ingest?); the item is "
                "stored and will be indexed on a later call")
    return None


def index_pending(state: ServerState, config: Any) -> str | None:
    """Index items stored while their context was busy (or its embedder unavailable); never
    waits for a lock, and leaves alone the items another call of this server is indexing."""
    h = state.handle(config)
    with h.lock:
        pending = [item for item in pending_memories(h.conn) if item.item_id not in state.indexing]
    if not pending:
        return None
    note = index_items(state, config, pending, wait=False)
    if note is None:
        return None
    with state.indexing_lock:
        if state.indexing:  # this server is writing the context itself: retried on the next call
            return None
    return f"{len(pending)} knowledge item(s) of {config.name} are stored but not indexed yet: {note}"
