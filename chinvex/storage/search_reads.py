"""Reads a search makes besides its two legs: index state (data version, chunk counts), the
source types indexed, result rows for fused hits, and the rows of a compiled RQL statement."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

REL_PATH_SQL = "json_extract({d}.metadata_json, '$.path')"
"""A repository document's path relative to its root, for document alias `{d}`."""


def data_version(conn: sqlite3.Connection) -> int:
    """`PRAGMA data_version`: moves when another connection commits."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def chunk_count(conn: sqlite3.Connection) -> int:
    """Chunks in the index (COUNT(*) scans the table: not for every query of a large index)."""
    return int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])


def has_at_most_chunks(conn: sqlite3.Connection, limit: int) -> bool:
    """At most `limit` chunks. Stops at the limit (never a scan of a large table)."""
    return conn.execute("SELECT 1 FROM chunks LIMIT 1 OFFSET ?", (limit,)).fetchone() is None


def indexed_source_types(conn: sqlite3.Connection) -> set[str]:
    """Every source type of an indexed document (one indexed DISTINCT)."""
    return {row[0] for row in conn.execute("SELECT DISTINCT source_type FROM documents")}


def result_rows(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> list[sqlite3.Row]:
    """Chunk, document and fingerprint columns of at most 500 chunks, with the document's
    relative path as `rel_path` (needs a connection whose rows are sqlite3.Row)."""
    rel = ", " + REL_PATH_SQL.format(d="d") + " AS rel_path"
    marks = ",".join("?" * len(chunk_ids))
    return conn.execute(
        f"""SELECT c.chunk_id, c.doc_id, c.chunk_index, c.text, c.search_text, c.char_start,
                   c.char_end, c.line_start, c.line_end, c.metadata_json, d.source_type,
                   d.source_uri, d.title, d.updated_at, d.created_at, d.indexed_at,
                   d.origin_uri, f.size_bytes, f.mtime_unix, f.state_json{rel}
            FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
            LEFT JOIN source_fingerprints f ON f.source_uri = d.origin_uri
            WHERE c.chunk_id IN ({marks})""",
        list(chunk_ids),
    ).fetchall()


def statement_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[Any]:
    """Every row of one compiled, parameterised read statement (an RQL plan's SELECT)."""
    return conn.execute(sql, list(params)).fetchall()


def first_chunk_text(conn: sqlite3.Connection, doc_id: str) -> str | None:
    """The text of a document's first chunk, if it has any."""
    row = conn.execute("SELECT text FROM chunks WHERE doc_id = ? ORDER BY chunk_index LIMIT 1",
                       (doc_id,)).fetchone()
    return row[0] if row else None


def created_at_of(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> dict[str, str | None]:
    """Each given document's created_at (absent documents left out)."""
    rows = conn.execute(f"SELECT doc_id, created_at FROM documents WHERE doc_id IN ({','.join('?' * len(doc_ids))})",
                        list(doc_ids)).fetchall()
    return {row[0]: row[1] for row in rows}
