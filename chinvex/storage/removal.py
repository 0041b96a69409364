"""What `chinvex rm` and `chinvex compact` read and run on hybrid.db (and on an embedded Chroma
store's SQLite file): the documents a target names, and the statements that give space back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from chinvex.storage.db import like_prefix

_DOCS = "SELECT doc_id, origin_uri, content_hash, title FROM documents WHERE "


def docs_with_id(conn: sqlite3.Connection, doc_id: str) -> list[sqlite3.Row]:
    return conn.execute(_DOCS + "doc_id = ?", (doc_id,)).fetchall()


def docs_read_from(conn: sqlite3.Connection, path: str, sep: str) -> list[sqlite3.Row]:
    """Documents read from the file or folder `path` (`sep`: the path separator)."""
    return conn.execute(_DOCS + "origin_uri = ? OR source_uri = ? OR origin_uri LIKE ? ESCAPE '\\' "
                        "ORDER BY doc_id", (path, path, like_prefix(path + sep))).fetchall()


def compact_index(conn: sqlite3.Connection) -> None:
    """FTS5 optimize, then VACUUM between WAL checkpoints (the caller holds the context's lock)."""
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def vacuum_file(path: Path, timeout: float) -> None:
    """VACUUM of another SQLite file (an embedded Chroma store's), its WAL checkpointed first."""
    store_conn = sqlite3.connect(str(path), isolation_level=None, timeout=timeout)
    try:
        store_conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store_conn.execute("VACUUM")
    finally:
        store_conn.close()
