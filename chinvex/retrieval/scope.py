"""What a search may return in one context: the documents and chunks a path, date or FEL
filter allows, read once per search so that both legs search only those (no
post-filter over-fetch that loses deep matches)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from chinvex.retrieval import filters
from chinvex.retrieval.filters import SearchFilter
from chinvex.retrieval.lexical import phrase
from chinvex.retrieval.request import InvalidFilterError, RetrievalError
from chinvex.storage import filter_sql, scope_rows


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
        return filter_sql.expression_where(fel.parse(search_filter.expression or ""), context)
    except fel.FilterError as exc:
        raise InvalidFilterError(str(exc)) from None


def _passing_in_batches(chunk_ids: list[str], lookup: Callable[[str], Iterable[str]]) -> set[str]:
    """The union of `lookup` over `chunk_ids` 500 at a time, each batch as one JSON array."""
    found: set[str] = set()
    for start in range(0, len(chunk_ids), 500):
        found.update(lookup(orjson.dumps(chunk_ids[start:start + 500]).decode()))
    return found


def fel_passing(conn: sqlite3.Connection, search_filter: SearchFilter, context: str,
                 chunk_ids: list[str]) -> set[str]:
    """Those of `chunk_ids` whose chunk and document satisfy the filter expression."""
    where, params = fel_where(conn, search_filter, context)
    return _passing_in_batches(chunk_ids, lambda part: scope_rows.chunks_passing(conn, part, where, params))


def phrase_expression(phrases: Sequence[str]) -> str:
    """The FTS5 query a chunk holding every one of `phrases` matches."""
    return " AND ".join(phrase(p) for p in phrases)


def phrase_passing(conn: sqlite3.Connection, search_filter: SearchFilter, chunk_ids: list[str]) -> set[str]:
    """Those of `chunk_ids` that hold every quoted phrase of the query."""
    expression = phrase_expression(search_filter.phrases)
    return _passing_in_batches(chunk_ids, lambda part: scope_rows.chunks_matching(conn, part, expression))


def _holding_phrases(conn: sqlite3.Connection, search_filter: SearchFilter, context: str) -> Allowed:
    """The chunks holding every quoted phrase (found by the full-text index), within what the
    rest of the filter allows."""
    try:
        doc_ids, rows = scope_rows.phrase_scope(conn, phrase_expression(search_filter.phrases),
                                                filters.RESTRICT_LIMIT + 1)
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"matching quoted phrases failed: {exc}") from None
    rest = replace(search_filter, phrases=())
    if rest.active:
        other = allowed_for(conn, rest, context)
        docs = set(other.doc_ids)
        chunks = set(other.chunk_ids) if other.all_chunks else None
        doc_ids = [d for d in doc_ids if d in docs]
        rows = [r for r in rows if r[2] in docs and (chunks is None or r[0] in chunks)]
    return Allowed(doc_ids, [row[0] for row in rows], [row[1] for row in rows])


def allowed_for(conn: sqlite3.Connection, search_filter: SearchFilter, context: str = "") -> Allowed:
    """One scan of `documents` (the path test runs once per document, not once per FTS match),
    then their chunks through the doc_id index. A filter expression may test chunk fields, so
    it selects chunks (joined with their documents) and the documents holding any of them."""
    if search_filter.phrases:
        return _holding_phrases(conn, search_filter, context)
    conds, params = filter_sql.search_conditions(
        source_types=search_filter.source_types, path_glob=search_filter.path_glob,
        since=search_filter.since, until=search_filter.until)
    if search_filter.expression:
        where, fel_params = fel_where(conn, search_filter, context)
        doc_conds = " AND ".join(conds) if conds else "1"
        try:
            doc_ids, rows = scope_rows.expression_scope(conn, f"{doc_conds} AND {where}", [*params, *fel_params],
                                                        filters.RESTRICT_LIMIT + 1)
        except sqlite3.OperationalError as exc:
            raise RetrievalError(f"filtering documents failed: {exc}") from None
        return Allowed(doc_ids, [row[0] for row in rows], [row[1] for row in rows])
    try:
        doc_ids = scope_rows.documents_where(conn, " AND ".join(conds), params)
        if not doc_ids:
            return Allowed([], [], [])
        rows = scope_rows.chunks_of_documents(conn, orjson.dumps(doc_ids).decode(), filters.RESTRICT_LIMIT + 1)
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"filtering documents failed: {exc}") from None
    return Allowed(doc_ids, [row[0] for row in rows], [row[1] for row in rows])


def every_allowed_chunk(conn: sqlite3.Connection, allowed: Allowed) -> list[str]:
    if allowed.all_chunks:
        return allowed.chunk_ids
    return scope_rows.chunk_ids_of_documents(conn, allowed.doc_ids_json())


def allowed_among(conn: sqlite3.Connection, allowed: Allowed, chunk_ids: Sequence[str]) -> set[str]:
    """Those of `chunk_ids` that are committed in this snapshot and belong to allowed documents."""
    docs = set(allowed.doc_ids)
    found: set[str] = set()
    for start in range(0, len(chunk_ids), 500):
        found.update(chunk_id for chunk_id, doc_id in scope_rows.documents_of_chunks(conn, chunk_ids[start:start + 500])
                     if doc_id in docs)
    return found
