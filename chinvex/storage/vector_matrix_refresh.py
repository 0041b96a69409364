"""Bringing an embedded store's vector matrix (chinvex.storage.vector_matrix) up to date at the
end of a writer's run: an ingest, `doctor --repair`, an import.

When the run's store object knows what the store held before its first write (the matrix that
was current then, or an empty store) and no other process wrote since its last write (the gate's
token is still the one it left), the new matrix is the old one's rows for the ids that survive
plus the vectors the run wrote (read back by id), and its row count is checked against the store's. Otherwise every
vector is read back from the store, under an unchanged stamp. A store above
`vector_matrix.MAX_VECTORS` vectors gets no matrix (the file is removed). A search never writes
the file, and a failure here never fails the run: a missing or stale matrix is not used.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from chinvex.models import ContextConfig
from chinvex.storage import vector_matrix
from chinvex.storage.coverage import vector_coverage
from chinvex.storage.db import get_meta
from chinvex.storage.vector_signature import record_signature, recorded_signature


def refresh(config: ContextConfig, conn: sqlite3.Connection, store: Any, *, sign: bool = False) -> str:
    """Rewrite the matrix after a run whose store object (None: it opened none) is `store`;
    `sign`: record the store's file signature first (the caller's run wrote it and, unlike an
    ingest, does not sign it itself). Returns what was done, for tests and logs: "server",
    "current", "merged", "read", "too large", "unsigned" or "failed: ..."."""
    if config.index.chroma_url:
        return "server"
    try:
        if sign:
            record_signature(config, conn)
        return _refresh(config, conn, store)
    except Exception as exc:  # a matrix not written is only not used
        return f"failed: {type(exc).__name__}: {exc}"


def _refresh(config: ContextConfig, conn: sqlite3.Connection, store: Any) -> str:
    chroma_dir, sqlite_path = config.index.chroma_dir, config.index.sqlite_path
    embedder = get_meta(conn, "embedder")
    recorded = recorded_signature(conn)
    stamp = vector_matrix.store_stamp(chroma_dir)
    if stamp is None or recorded is None or recorded != stamp.signature:
        return "unsigned"  # a search would not trust it: files not as chinvex recorded them
    changes = getattr(store, "changes", None)
    if changes is None and vector_matrix.current(chroma_dir, sqlite_path, recorded, embedder) is not None:
        return "current"
    path = vector_matrix.matrix_path(sqlite_path)
    if changes is not None and changes.known and changes.token == stamp.token:
        written = store.embeddings(list(changes.written))  # as the store keeps them
        if len(written) != len(changes.written):
            return _read_back(config, conn, store, stamp, embedder)
        added = {cid: (written[cid], kind) for cid, kind in changes.written.items()}
        ids, vectors, types = vector_matrix.merged(changes.base, changes.deleted, added)
        if len(ids) > vector_matrix.MAX_VECTORS:
            vector_matrix.remove(sqlite_path)
            return "too large"
        if len(ids) == store.count():
            vector_matrix.write(path, ids, vectors, types, stamp, embedder)
            return "merged"
    return _read_back(config, conn, store, stamp, embedder)


def _read_back(config: ContextConfig, conn: sqlite3.Connection, store: Any, stamp: vector_matrix.Stamp,
               embedder: str | None) -> str:
    """Every vector read from the store, written only when the stamp held throughout."""
    from chinvex.storage.vectors import VectorStore

    recorded = vector_coverage(conn)
    if recorded is not None and recorded.with_vector > vector_matrix.MAX_VECTORS:
        vector_matrix.remove(config.index.sqlite_path)
        return "too large"
    opened = store if store is not None else VectorStore.open(config, conn, create=False)
    if opened is None:
        return "unsigned"
    try:
        if opened.count() > vector_matrix.MAX_VECTORS:
            vector_matrix.remove(config.index.sqlite_path)
            return "too large"
        ids, vectors, types = opened.all_vectors()
    finally:
        if store is None:
            opened.close()
    if vector_matrix.store_stamp(config.index.chroma_dir) != stamp:
        return "unsigned"  # written meanwhile: the next writer's run tries again
    vector_matrix.write(vector_matrix.matrix_path(config.index.sqlite_path), ids, vectors, types, stamp, embedder)
    return "read"
