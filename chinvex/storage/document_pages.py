"""Reads of the web UI's document pages: one document with its chunks, and a page of the
document list filtered by source type and path, newest first."""

from __future__ import annotations

import sqlite3
from typing import Any


def document(conn: sqlite3.Connection, doc_id: str) -> sqlite3.Row | None:
    """Every column of one document, or None."""
    return conn.execute("SELECT * FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()


def document_chunks(conn: sqlite3.Connection, doc_id: str) -> list[sqlite3.Row]:
    """A document's chunks in order: id, index, text and line span."""
    return conn.execute("SELECT chunk_id, chunk_index, text, line_start, line_end FROM chunks "
                        "WHERE doc_id = ? ORDER BY chunk_index", (doc_id,)).fetchall()


def document_list(conn: sqlite3.Connection, *, source_type: str | None, path_pattern: str | None,
                  limit: int, offset: int) -> tuple[int, list[sqlite3.Row]]:
    """How many documents match, and `limit` of them from `offset`, newest first (ties by id),
    each with its thread id, document type and chunk count. `path_pattern` is a LIKE pattern
    (backslash escapes) tested against the source URI."""
    where: list[str] = ["1"]
    params: list[Any] = []
    if source_type:
        where.append("d.source_type = ?")
        params.append(source_type)
    if path_pattern:
        where.append("d.source_uri LIKE ? ESCAPE '\\'")
        params.append(path_pattern)
    clause = " AND ".join(where)
    total = conn.execute(f"SELECT COUNT(*) FROM documents d WHERE {clause}", params).fetchone()[0]
    rows = conn.execute(
        "SELECT d.doc_id, d.source_type, d.source_uri, d.title, d.updated_at, "
        "json_extract(d.metadata_json, '$.thread_id') AS thread_id, "
        "json_extract(d.metadata_json, '$.doc_type') AS doc_type, "
        "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id) AS chunks "
        f"FROM documents d WHERE {clause} ORDER BY d.updated_at DESC, d.doc_id LIMIT ? OFFSET ?",
        [*params, limit, offset]).fetchall()
    return total, rows
