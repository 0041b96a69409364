"""FTS5 reads of the lexical leg: BM25 scores of `chunks_fts` matches, and the rowid ↔ chunk id
mapping between the FTS index and `chunks`.

Every statement returns raw `bm25()` values (lower is better); the retrieval layer negates and
ranks them. Id lists travel as one JSON array parameter (`json_each`), so a statement's text
never depends on how many ids it carries.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def bm25_of_all(conn: sqlite3.Connection, expression: str) -> list[tuple[int, float]]:
    """(rowid, bm25) of every row matching `expression`, unordered (the caller sorts)."""
    return conn.execute("SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?",
                        (expression,)).fetchall()


def bm25_best(conn: sqlite3.Connection, expression: str, limit: int, *, rowids_json: str | None = None,
              doc_ids_json: str | None = None, source_types: Sequence[str] | None = None,
              ) -> list[tuple[int, float]]:
    """(rowid, bm25) of the best `limit` matches of `expression`, ties by rowid. At most one
    restriction: FTS rowids (`rowids_json`), documents (`doc_ids_json`) or source types. With
    none, the ranking happens inside FTS5 alone: joining `chunks` before the LIMIT would look
    up every matching row."""
    params: list[object] = [expression]
    if rowids_json is None and doc_ids_json is None and not source_types:
        sql = "SELECT rowid AS rid, bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
    else:
        sql = ("SELECT chunks_fts.rowid AS rid, bm25(chunks_fts) AS score FROM chunks_fts "
               "JOIN chunks c ON c.rowid = chunks_fts.rowid ")
        where = "WHERE chunks_fts MATCH ?"
        if rowids_json is not None:
            where += " AND chunks_fts.rowid IN (SELECT value FROM json_each(?))"
            params.append(rowids_json)
        elif doc_ids_json is not None:
            where += " AND c.doc_id IN (SELECT value FROM json_each(?))"
            params.append(doc_ids_json)
        else:
            types = list(source_types or [])
            sql += "JOIN documents d ON d.doc_id = c.doc_id "
            where += f" AND d.source_type IN ({','.join('?' * len(types))})"
            params.extend(types)
        sql += where
    params.append(limit)
    return conn.execute(sql + " ORDER BY score, rid LIMIT ?", params).fetchall()


def bm25_among(conn: sqlite3.Connection, expression: str, rowids_json: str) -> list[tuple[int, float]]:
    """(rowid, bm25) of those of the given rows that match `expression`. The test is written
    `+rowid` so that FTS5 walks the matches once while SQLite filters them: with a plain
    `rowid IN`, FTS5 starts over for every id and recounts every term's matches."""
    return conn.execute(
        "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
        "AND +rowid IN (SELECT value FROM json_each(?))",
        (expression, rowids_json)).fetchall()


def count_matches(conn: sqlite3.Connection, expression: str, cap: int) -> int:
    """Rows matching `expression`, counted up to `cap` (FTS5 stops walking at the cap)."""
    return int(conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
        (expression, cap)).fetchone()[0])


def chunk_ids_by_rowid(conn: sqlite3.Connection, rowids_json: str) -> dict[int, str]:
    """Chunk id of each of the given chunk rowids (a JSON array) that exists."""
    return dict(conn.execute(
        "SELECT rowid, chunk_id FROM chunks WHERE rowid IN (SELECT value FROM json_each(?))",
        (rowids_json,)).fetchall())


def rowids_by_chunk_id(conn: sqlite3.Connection, chunk_ids_json: str) -> dict[int, str]:
    """Rowid → chunk id of each of the given chunk ids (a JSON array) that exists."""
    return dict(conn.execute(
        "SELECT rowid, chunk_id FROM chunks WHERE chunk_id IN (SELECT value FROM json_each(?))",
        (chunk_ids_json,)).fetchall())


def chunk_ids_matching(conn: sqlite3.Connection, expression: str, limit: int) -> set[str]:
    """Ids of up to `limit` chunks the FTS5 `expression` matches."""
    return {row[0] for row in conn.execute(
        "SELECT c.chunk_id FROM chunks c WHERE c.rowid IN "
        "(SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", (expression, limit))}
