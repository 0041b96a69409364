"""Reads that decide a search's scope: the documents and chunks a path/date/source filter or a
filter expression allows, and which of some chunks are still committed in allowed documents.

The filter's WHERE text comes from the retrieval layer's filter compilers (`filters`, `fel`)
with its parameters; id lists travel as one JSON array parameter or in batches of 500.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

BATCH = 500
"""Chunk ids per statement where they are listed as `?` marks or one JSON array."""


def chunks_passing(conn: sqlite3.Connection, chunk_ids_json: str, where: str, params: Sequence[Any]) -> list[str]:
    """Those of the chunks (a JSON array of ids) whose chunk `c` and document `d` satisfy `where`."""
    return [row[0] for row in conn.execute(
        f"SELECT c.chunk_id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
        f"WHERE c.chunk_id IN (SELECT value FROM json_each(?)) AND {where}",
        [chunk_ids_json, *params])]


def expression_scope(conn: sqlite3.Connection, where: str, params: Sequence[Any],
                     limit: int) -> tuple[list[str], list[tuple[str, int]]]:
    """Documents holding a chunk that satisfies `where` (over chunk `c` and document `d`), and
    up to `limit` of those chunks as (chunk id, rowid); no chunk read when no document qualifies."""
    join = f"FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE {where}"
    doc_ids = [row[0] for row in conn.execute(f"SELECT DISTINCT c.doc_id {join}", list(params))]
    rows = conn.execute(f"SELECT c.chunk_id, c.rowid {join} LIMIT ?",
                        [*params, limit]).fetchall() if doc_ids else []
    return doc_ids, [(row[0], row[1]) for row in rows]


def documents_where(conn: sqlite3.Connection, where: str, params: Sequence[Any]) -> list[str]:
    """Ids of the documents `d` satisfying `where` (one scan of `documents`)."""
    return [row[0] for row in conn.execute(f"SELECT d.doc_id FROM documents d WHERE {where}", list(params))]


def chunks_of_documents(conn: sqlite3.Connection, doc_ids_json: str, limit: int) -> list[tuple[str, int]]:
    """Up to `limit` (chunk id, rowid) of the given documents (a JSON array), through the doc_id index."""
    return [(row[0], row[1]) for row in conn.execute(
        "SELECT c.chunk_id, c.rowid FROM chunks c WHERE c.doc_id IN (SELECT value FROM json_each(?)) "
        "LIMIT ?", [doc_ids_json, limit]).fetchall()]


def chunk_ids_of_documents(conn: sqlite3.Connection, doc_ids_json: str) -> list[str]:
    """Every chunk id of the given documents (a JSON array)."""
    return [row[0] for row in conn.execute(
        "SELECT c.chunk_id FROM chunks c WHERE c.doc_id IN (SELECT value FROM json_each(?))",
        [doc_ids_json])]


def documents_of_chunks(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(chunk id, doc id) of those of at most BATCH chunk ids that exist."""
    marks = ",".join("?" * len(chunk_ids))
    return [(row[0], row[1]) for row in conn.execute(
        f"SELECT c.chunk_id, c.doc_id FROM chunks c WHERE c.chunk_id IN ({marks})", list(chunk_ids))]


def phrase_scope(conn: sqlite3.Connection, expression: str,
                 limit: int) -> tuple[list[str], list[tuple[str, int, str]]]:
    """Documents holding a chunk that the FTS5 `expression` matches, and up to `limit` of those
    chunks as (chunk id, rowid, doc id)."""
    matched = "c.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)"
    doc_ids = [row[0] for row in conn.execute(f"SELECT DISTINCT c.doc_id FROM chunks c WHERE {matched}", [expression])]
    rows = conn.execute(f"SELECT c.chunk_id, c.rowid, c.doc_id FROM chunks c WHERE {matched} LIMIT ?",
                        [expression, limit]).fetchall() if doc_ids else []
    return doc_ids, [(row[0], row[1], row[2]) for row in rows]


def chunks_matching(conn: sqlite3.Connection, chunk_ids_json: str, expression: str) -> list[str]:
    """Those of the given chunk ids (a JSON array) that the FTS5 `expression` matches."""
    return [row[0] for row in conn.execute(
        "SELECT c.chunk_id FROM chunks c WHERE c.chunk_id IN (SELECT value FROM json_each(?)) "
        "AND c.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)", [chunk_ids_json, expression])]
