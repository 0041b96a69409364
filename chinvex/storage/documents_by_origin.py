"""Documents found by the file they came from: the one indexed from a path, and how many were
indexed from a path or anything under it (recall_context, recall_index)."""

from __future__ import annotations

import sqlite3

from chinvex.storage.db import like_prefix


def document_for_path(conn: sqlite3.Connection, path: str) -> sqlite3.Row | None:
    """The document whose origin or source is `path`, if any."""
    return conn.execute("SELECT * FROM documents WHERE origin_uri = ? OR source_uri = ? LIMIT 1",
                        (path, path)).fetchone()


def count_documents_under(conn: sqlite3.Connection, prefix: str) -> int:
    """Documents whose origin is `prefix` itself or a path below it."""
    return conn.execute(
        "SELECT COUNT(*) FROM documents WHERE origin_uri = ? OR origin_uri LIKE ? ESCAPE '\\'",
        (prefix, like_prefix(prefix + "/"))).fetchone()[0]
