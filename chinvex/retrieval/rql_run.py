"""Running an RQL plan (chinvex.retrieval.rql) against one context.

A statement without USING is one SQL query. With USING, the context's hybrid search
(chinvex.retrieval.search) ranks the plan's `SEARCH_DEPTH` best chunks, with the FILTER applied
inside both legs, and the same SQL then orders and pages those hits (joined with their chunks
and documents, the FILTER checked once more). The search and the SQL read one SQLite snapshot
(the search reuses an open read transaction), so an ingest that commits in between cannot make
the rows disagree with the scores. The search is deterministic on an unchanged index and the
plan's order is total, so the same statement gives the same rows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson

from chinvex.models import ContextConfig
from chinvex.retrieval import fel, rql
from chinvex.retrieval.search import Searcher, SearchRequest
from chinvex.storage import rql_sql, transactions
from chinvex.storage.search_reads import statement_rows


class _QueryFor:
    """An embedder that embeds one fixed text whatever query it is given.

    `semantic(a), lexical(b)` may carry two texts while a search request has one query: the
    request carries the lexical text (the FTS leg and the blend read it) and the vector leg's
    embedder, this wrapper, embeds the semantic one. Everything else is the wrapped embedder's,
    including `name`, so the index's embedder check still applies."""

    def __init__(self, inner: Any, text: str):
        self._inner = inner
        self._text = text

    def embed_query(self, _query: str) -> Any:
        return self._inner.embed_query(self._text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class RqlSearcher(Searcher):
    """A Searcher whose vector leg can search a different text than its lexical leg (see
    `_QueryFor`). Warm between statements like any Searcher; one statement at a time."""

    def __init__(self) -> None:
        super().__init__()
        self._semantic: str | None = None
        self._statement_lock = threading.Lock()

    def embedder(self, config: ContextConfig):
        inner = super().embedder(config)
        return inner if self._semantic is None else _QueryFor(inner, self._semantic)

    def search_plan(self, config: ContextConfig, plan: rql.Plan) -> Any:
        """The search a plan's USING asks for: the SearchResponse of its `SEARCH_DEPTH` best
        chunks that satisfy its FILTER."""
        query = plan.lexical if plan.lexical is not None else plan.semantic
        if query is None:
            raise ValueError("the plan has no USING clause")
        request = SearchRequest(query=query, k=rql.SEARCH_DEPTH, mode=plan.mode,  # type: ignore[arg-type]
                                filter_expression=plan.filter_text)
        with self._statement_lock:
            self._semantic = plan.semantic if plan.mode == "hybrid" and plan.semantic != plan.lexical else None
            try:
                return self.search([config], request)
            finally:
                self._semantic = None


@dataclass
class RqlResult:
    context: str
    plan: rql.Plan
    rows: list[dict[str, Any]]
    mode: str
    """"sql", or the mode the search ran in (hybrid, fts, vector; fts when vectors were missing)."""
    search_hits: int | None = None
    """How many chunks the search ranked (at most SEARCH_DEPTH) before ORDER BY and LIMIT."""
    warnings: list[str] = field(default_factory=list)
    took_ms: float = 0.0

    def as_json(self, *, explain: bool = False) -> dict[str, Any]:
        plan = self.plan
        out: dict[str, Any] = {
            "schema_version": 1,
            "context": self.context,
            "query": {"rql": plan.statement, "table": plan.table, "mode": plan.mode, "filter": plan.filter_text,
                      "limit": plan.limit, "offset": plan.offset},
            "columns": list(plan.columns),
            "rows": self.rows,
            "stats": {"rows": len(self.rows), "mode": self.mode, "search_hits": self.search_hits,
                      "took_ms": self.took_ms, "warnings": self.warnings},
        }
        if explain:
            out["explain"] = rql.explain(plan, self.context)
        return out


def run(config: ContextConfig, plan: rql.Plan, searcher: RqlSearcher | None = None) -> RqlResult:
    """The rows of `plan` in `config`'s index. A searcher passed in stays open (warm embedder and
    connections for the next statement); otherwise one is opened and closed here."""
    started = time.perf_counter()
    own = searcher is None
    searcher = searcher or RqlSearcher()
    try:
        handle = searcher.handle(config)
        conn = handle.conn
        fel.register(conn)
        query = rql_sql.select(plan, config.name)
        warnings: list[str] = []
        hits: list[list[Any]] | None = None
        mode = "sql"
        with _snapshot(handle.lock, conn):
            if plan.searches:
                response = searcher.search_plan(config, plan)
                hits = [[r.chunk_id, r.scores.rank] for r in response.results]
                warnings, mode = list(response.stats.warnings), response.stats.mode
            params = [orjson.dumps(hits).decode() if p is rql_sql.HITS else p for p in query.params]
            with handle.lock:
                rows = [_row(query.columns, values) for values in statement_rows(conn, query.sql, params)]
    finally:
        if own:
            searcher.close()
    return RqlResult(context=config.name, plan=plan, rows=rows, mode=mode,
                     search_hits=len(hits) if hits is not None else None, warnings=warnings,
                     took_ms=round((time.perf_counter() - started) * 1000, 2))


@contextmanager
def _snapshot(lock: threading.Lock, conn: Any) -> Iterator[None]:
    """One read transaction around the search and the SQL (released, not held, while the search
    runs: the search takes the handle's lock itself and reuses the open transaction)."""
    with lock:
        opened = not conn.in_transaction
        if opened:
            transactions.begin_read(conn)
    try:
        yield
    finally:
        with lock:
            if opened:
                transactions.commit(conn)


def _row(columns: tuple[str, ...], values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for column, value in zip(columns, values):
        kind = fel.FIELDS[column].kind if column in fel.FIELDS else None
        if kind == "tags":
            value = orjson.loads(value) if value else []
        elif kind == "bool":
            value = None if value is None else bool(value)
        row[column] = value
    return row
