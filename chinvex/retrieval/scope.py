"""What a search may return in one context: its read snapshot, and the documents and chunks a
path, date or FEL filter allows, read once per search so that both legs search only those (no
post-filter over-fetch that loses deep matches)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson

from chinvex.retrieval import filters
from chinvex.retrieval.filters import SearchFilter
from chinvex.retrieval.request import InvalidFilterError, RetrievalError

@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction (WAL: it never blocks the writer), so every read of a context's
    search sees the same committed state even while an ingest commits batches."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


@dataclass
class Allowed:
    """What a path/date filter allows in one context, read once per search in its snapshot:
    every allowed document, and its chunks up to `filters.RESTRICT_LIMIT + 1` (more than that
    and the vector leg over-fetches instead of listing them)."""

    doc_ids: list[str]
    chunk_ids: list[str]
    chunk_rowids: list[int]

    @property
    def all_chunks(self) -> bool:
        return len(self.chunk_ids) <= filters.RESTRICT_LIMIT

    def doc_ids_json(self) -> str:
        return orjson.dumps(self.doc_ids).decode()


def fel_where(conn: sqlite3.Connection, search_filter: SearchFilter, context: str) -> tuple[str, list[Any]]:
    from chinvex.retrieval import fel

    fel.register(conn)
    try:
        return fel.to_sql(fel.parse(search_filter.expression or ""), context)
    except fel.FilterError as exc:
        raise InvalidFilterError(str(exc)) from None


def fel_passing(conn: sqlite3.Connection, search_filter: SearchFilter, context: str,
                 chunk_ids: list[str]) -> set[str]:
    """Those of `chunk_ids` whose chunk and document satisfy the filter expression."""
    where, params = fel_where(conn, search_filter, context)
    found: set[str] = set()
    for start in range(0, len(chunk_ids), 500):
        part = chunk_ids[start:start + 500]
        found.update(row[0] for row in conn.execute(
            f"SELECT c.chunk_id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
            f"WHERE c.chunk_id IN (SELECT value FROM json_each(?)) AND {where}",
            [orjson.dumps(part).decode(), *params]))
    return found


def allowed_for(conn: sqlite3.Connection, search_filter: SearchFilter, context: str = "") -> Allowed:
    """One scan of `documents` (the path test runs once per document, not once per FTS match),
    then their chunks through the doc_id index. A filter expression may test chunk fields, so
    it selects chunks (joined with their documents) and the documents holding any of them."""
    conds, params = filters.sql_conditions(search_filter)
    if search_filter.expression:
        where, fel_params = fel_where(conn, search_filter, context)
        doc_conds = " AND ".join(conds) if conds else "1"
        join = f"FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE {doc_conds} AND {where}"
        try:
            doc_ids = [row[0] for row in conn.execute(f"SELECT DISTINCT c.doc_id {join}", [*params, *fel_params])]
            rows = conn.execute(f"SELECT c.chunk_id, c.rowid {join} LIMIT ?",
                                [*params, *fel_params, filters.RESTRICT_LIMIT + 1]).fetchall() if doc_ids else []
        except sqlite3.OperationalError as exc:
            raise RetrievalError(f"filtering documents failed: {exc}") from None
        return Allowed(doc_ids, [row[0] for row in rows], [row[1] for row in rows])
    try:
        doc_ids = [row[0] for row in conn.execute(
            f"SELECT d.doc_id FROM documents d WHERE {' AND '.join(conds)}", params)]
        if not doc_ids:
            return Allowed([], [], [])
        rows = conn.execute(
            "SELECT c.chunk_id, c.rowid FROM chunks c WHERE c.doc_id IN (SELECT value FROM json_each(?)) "
            "LIMIT ?", [orjson.dumps(doc_ids).decode(), filters.RESTRICT_LIMIT + 1]).fetchall()
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"filtering documents failed: {exc}") from None
    return Allowed(doc_ids, [row[0] for row in rows], [row[1] for row in rows])


def every_allowed_chunk(conn: sqlite3.Connection, allowed: Allowed) -> list[str]:
    if allowed.all_chunks:
        return allowed.chunk_ids
    return [row[0] for row in conn.execute(
        "SELECT c.chunk_id FROM chunks c WHERE c.doc_id IN (SELECT value FROM json_each(?))",
        [allowed.doc_ids_json()])]


def allowed_among(conn: sqlite3.Connection, allowed: Allowed, chunk_ids: Sequence[str]) -> set[str]:
    """Those of `chunk_ids` that are committed in this snapshot and belong to allowed documents."""
    docs = set(allowed.doc_ids)
    found: set[str] = set()
    for start in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[start:start + 500])
        marks = ",".join("?" * len(part))
        found.update(row[0] for row in conn.execute(
            f"SELECT c.chunk_id, c.doc_id FROM chunks c WHERE c.chunk_id IN ({marks})", part)
            if row[1] in docs)
    return found
