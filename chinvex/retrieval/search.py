"""Hybrid search over one or several contexts (DESIGN.md §6).

`Searcher` keeps connections, vector stores and embedders warm between queries (the MCP server
holds one for its lifetime). A context whose vectors are missing or whose embedder cannot run
still answers from FTS, and says so in `stats.warnings`: it never pretends to be hybrid.

Searches run while another process ingests. Each context is searched inside one SQLite read
transaction, so FTS hits, scores and result rows all come from one committed state; a vector
hit whose chunk is not in that state (Chroma is written before SQLite) is dropped. The vector
store reloads itself when another process wrote to it (see chinvex/storage/vectors.py), so a
warm searcher sees what a later ingest committed.

Path and date filters are applied inside both legs, not after them (chinvex/retrieval/filters.py):
the documents they allow are read once per context search, the FTS leg restricts its matches to
them in SQL and the vector leg searches only their chunks, so a match ranked below the legs'
depth is still found. Result rows are checked against the same rules once more at the end.

The same query on an unchanged index gives the same bytes in every process: Chroma's approximate
index (saved after every write, so that every process searches the same graph: SYNC_THRESHOLD
in chinvex/storage/vectors.py) only chooses the vector neighbours, every cosine is computed from
the stored vectors by chinvex/retrieval/exact.py, and every ordering ends in an exact tie-break
(BM25 ties by rowid, cosine ties and fusion ties by chunk id). Up to EXHAUSTIVE_LIMIT chunks the
vector leg is exhaustive, so any store holding the same vectors (an imported copy, a rebuilt
store) gives the same results too; above it, another build of the graph may choose slightly
different neighbours.

A search that asks for vectors also reports how many of the searched chunks have one
(chinvex/retrieval/coverage.py), and warns when not all do: it never calls itself hybrid for
chunks that only full-text search can find.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from chinvex.errors import ChinvexError, StorageError, UsageError
from chinvex.models import ContextConfig, Freshness, Range, Scores, SearchResponse, SearchResult, SearchStats
from chinvex.retrieval import coverage
from chinvex.retrieval import exact
from chinvex.retrieval import filters
from chinvex.retrieval.coverage import VectorCoverage
from chinvex.retrieval.filters import SearchFilter
from chinvex.retrieval.fusion import FTS_WEIGHT, Candidate, fts_share, fuse, query_signals
from chinvex.retrieval.lexical import or_expression, phrase, query_terms, rare_terms
from chinvex.retrieval.roles import about_tests, role_of
from chinvex.storage import db

DEFAULT_FTS_DEPTH = 30
DEFAULT_VECTOR_DEPTH = 30
EXHAUSTIVE_LIMIT = 1_000
"""Up to this many chunks the vector leg is exact: Chroma is asked for this many neighbours,
which widens its HNSW beam (ef) to the whole collection, so every vector is scored. Above it the
neighbours are the approximate graph's, and Chroma builds that graph differently every time
(a batch's vectors are inserted in parallel, in no fixed order): two stores holding the same
vectors (an imported copy, a store rebuilt by `doctor --repair`) answered weak queries with
different neighbours, and hybrid results differed between them. Costs ~2 ms more per search at
650 chunks, ~3 ms at 1,000 (~5 ms at 2,000, hence the limit); larger contexts pay a 12 us count."""
RESCORE_MARGIN = 10
"""An exact search rescores (chinvex.retrieval.exact) this many neighbours past the depth, in
Chroma's own (float32) order, and keeps the exact top `depth`."""
FTS_SCORE_BUDGET = 10_000
"""Chunks the lexical leg may rank with BM25 for one query before it takes its candidates from
the rarer terms only (see lexical.rare_terms): ~10 ms of FTS5 ranking on the bench machine."""
FTS_COUNT_CAP = 1_000
"""Each term's matches are counted up to this many (counting is ~10x cheaper than scoring, but
not free); a term at the cap is "common"."""
MAX_K = 200
STORE_RETRY_SECONDS = 5.0
"""A store that could not be opened is tried again after this long (an ingest may create it),
not on every query (opening costs far more than a query)."""
Mode = Literal["hybrid", "fts", "vector"]


GLOBAL_CONTEXT = "global"
"""The context RECALL calls the global scope (cross-project knowledge)."""


class RetrievalError(ChinvexError):
    code = "RETRIEVAL_ERROR"


class InvalidFilterError(UsageError):
    """A filter value no searched context can match (an unknown source type): a usage error
    listing the valid values, not an empty answer."""


@dataclass
class SearchRequest:
    query: str
    k: int = 8
    source_types: list[str] | None = None
    path_glob: str | None = None
    since: str | None = None
    until: str | None = None
    explain: bool = False
    mode: Mode = "hybrid"
    fts_depth: int | None = None
    vector_depth: int | None = None
    complete_scores: bool = True
    """Score every candidate of the union on both signals (its true cosine and BM25) instead of
    treating the leg that did not retrieve it as 0."""
    fts_budget: int | None = None
    fts_count_cap: int | None = None
    """Overrides of FTS_SCORE_BUDGET / FTS_COUNT_CAP (benchmarks and tuning)."""
    fusion: str | None = None
    """"adaptive" or "seed" leg weights (chinvex.retrieval.fusion.fts_share); None: the first
    context's `retrieval.fusion`."""
    filter_expression: str | None = None
    """`--filter`: a Filter Expression Language predicate (chinvex.retrieval.fel)."""
    role_priors: bool = True
    """Weigh repository files by their role (chinvex.retrieval.roles); off: every role 1.0
    (benchmarks, and `chinvex eval --no-role-priors`)."""

    @property
    def filter(self) -> SearchFilter:
        return SearchFilter.of(self.source_types, self.path_glob, self.since, self.until,
                               self.filter_expression)


def prefetch_vector_store(configs: Sequence[ContextConfig]) -> None:
    """Get a cold, read-only search process (`chinvex search`, `chinvex answer`) ready to search
    `configs`: it will read vector stores and never write one, so embedded stores are opened
    through Chroma's bindings alone (chinvex.storage.vectors.read_only_process); and the imports
    start (chinvex.heavy_imports): the built-in embedder's stack when a context uses it, the
    store's in the background."""
    from chinvex.embedding.factory import provider_of
    from chinvex.heavy_imports import prefetch_search_stack
    from chinvex.storage.vectors import read_only_process

    read_only_process()
    prefetch_search_stack(embedder=any(provider_of(c.embedding) == "builtin" for c in configs),
                          reader_only=not any(c.index.chroma_url for c in configs))


@dataclass
class _ContextHandle:
    config: ContextConfig
    conn: sqlite3.Connection
    lock: threading.Lock = field(default_factory=threading.Lock)
    store: Any = None
    store_checked: bool = False
    store_error: str | None = None
    store_checked_at: float = 0.0
    vocabulary: Any = None
    """A per-connection cache the answer layer keeps its document frequencies in."""
    counted_coverage: tuple[Any, VectorCoverage] | None = None
    """The last counted coverage and the index state it was counted in (see _coverage)."""

    def close(self) -> None:
        store, self.store, self.store_checked = self.store, None, False
        if store is not None:
            try:
                store.close()
            except Exception:
                pass
        try:
            self.conn.close()
        except sqlite3.Error:
            pass


@dataclass
class _Hit:
    context: str
    chunk_id: str
    fts: float | None = None
    vector: float | None = None
    vector_rank: int | None = None
    lexical: "_Lexical | None" = None


@dataclass(frozen=True)
class _Lexical:
    """How the lexical leg searches one query in one context (see lexical.rare_terms)."""

    terms: list[str]
    rare: list[str]
    """All of `terms`, unless the query would match more chunks than the budget: then the rarest,
    and only chunks containing one of them are candidates."""

    @property
    def expression(self) -> str | None:
        return or_expression(self.terms)

    @property
    def common(self) -> list[str]:
        return [t for t in self.terms if t not in self.rare]

    @property
    def rare_expression(self) -> str | None:
        return or_expression(self.rare)

    @property
    def candidate_expression(self) -> str | None:
        """Chunks with a rare term, scored by every term. FTS5's bm25() sums one term per phrase
        of the expression, so the rare terms count twice here; subtracting the BM25 of
        `rare_expression` leaves exactly the BM25 of `expression`."""
        rare = or_expression(self.rare)
        return f"({rare}) AND ({rare} OR {or_expression(self.common)})" if self.common else rare


def _lexical_plan(conn: sqlite3.Connection, req: SearchRequest) -> _Lexical:
    terms = query_terms(req.query)
    if len(terms) <= 1:
        return _Lexical(terms, terms)
    budget = req.fts_budget or FTS_SCORE_BUDGET
    cap = min(req.fts_count_cap or FTS_COUNT_CAP, budget)
    try:
        counts = {t: conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
            (phrase(t), cap)).fetchone()[0] for t in terms}
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    return _Lexical(terms, rare_terms(counts, cap, budget))


_EMBED_POOL: ThreadPoolExecutor | None = None
_EMBED_POOL_LOCK = threading.Lock()


def _embed_pool() -> ThreadPoolExecutor:
    global _EMBED_POOL
    with _EMBED_POOL_LOCK:
        if _EMBED_POOL is None:
            _EMBED_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chinvex-embed")
        return _EMBED_POOL


def _resolved(value: Any) -> Any:
    return value.result() if isinstance(value, Future) else value


class Searcher:
    def __init__(self) -> None:
        self._handles: dict[str, _ContextHandle] = {}
        self._embedders: dict[str, Any] = {}
        self._lock = threading.Lock()

    # -- warm resources ---------------------------------------------------------------------

    def handle(self, config: ContextConfig) -> _ContextHandle:
        with self._lock:
            h = self._handles.get(config.name)
            if h is not None and h.config.index == config.index:
                h.config = config
                return h
            if h is not None:  # the context was moved or re-pointed: let go of the old index
                with h.lock:
                    h.close()
            try:
                conn = db.connect(Path(config.index.sqlite_path))
            except StorageError as exc:
                raise RetrievalError(exc.message) from None
            filters.register_sql_functions(conn)
            h = _ContextHandle(config=config, conn=conn)
            self._handles[config.name] = h
            return h

    def embedder(self, config: ContextConfig):
        from chinvex.embedding.factory import make_embedder

        key = orjson.dumps(config.embedding.model_dump(mode="json") if config.embedding else None).decode()
        with self._lock:
            if key not in self._embedders:
                self._embedders[key] = make_embedder(config.embedding)
            return self._embedders[key]

    def _store(self, h: _ContextHandle):
        """The context's vector store, opened once and kept (it reloads itself when another
        process writes to it). A failed open is retried after STORE_RETRY_SECONDS."""
        if h.store is None and h.store_checked and time.monotonic() - h.store_checked_at >= STORE_RETRY_SECONDS:
            h.store_checked = False
        if not h.store_checked:
            from chinvex.storage.vectors import VectorStore

            try:
                h.store = VectorStore.open(h.config, h.conn, create=False)
                if h.store is None:
                    h.store_error = "no vectors yet (run 'chinvex ingest')"
            except ChinvexError as exc:
                h.store, h.store_error = None, exc.message
            h.store_checked = True
            h.store_checked_at = time.monotonic()
        return h.store

    def close(self) -> None:
        with self._lock:
            for h in self._handles.values():
                with h.lock:
                    h.close()
            self._handles.clear()

    # -- search -----------------------------------------------------------------------------

    def search(self, configs: Sequence[ContextConfig], req: SearchRequest) -> SearchResponse:
        started = time.perf_counter()
        if not 1 <= req.k <= MAX_K:
            raise UsageError(f"--k must be between 1 and {MAX_K} (got {req.k})")
        if req.source_types:
            self._check_source_types(configs, req.source_types)
        warnings: list[str] = []
        hits: list[_Hit] = []
        meta: dict[tuple[str, str], dict[str, Any]] = {}
        modes: set[str] = set()
        weights: dict[str, dict[str, float]] = {}
        role_tables: dict[str, dict[str, float]] = {}
        asks_about_tests = about_tests(req.query)
        query_vectors: dict[str, Any] = {}
        coverages: list[VectorCoverage] = []
        search_filter = req.filter
        for config in configs:
            h = self.handle(config)
            weights[config.name] = config.effective_weights()
            role_tables[config.name] = config.effective_role_weights()
            with h.lock, _read_snapshot(h.conn):
                ctx_hits, ctx_modes, ctx_coverage = self._search_context(h, req, warnings, query_vectors)
                rows = _rows(h.conn, [hit.chunk_id for hit in ctx_hits])
                if search_filter.expression:  # exact, in SQL, for the chunks that reached here
                    passing = _fel_passing(h.conn, search_filter, config.name, list(rows))
                    rows = {cid: row for cid, row in rows.items() if cid in passing}
            if ctx_coverage is not None:
                coverages.append(ctx_coverage)
            for hit in ctx_hits:
                row = rows.get(hit.chunk_id)
                # No row: a vector whose chunk is not committed in this SQLite state (an ingest
                # writes Chroma first) or was deleted since; only committed chunks are results.
                # Both legs already applied the filter; checking again costs nothing and keeps
                # a leg that got it wrong from returning what the user excluded.
                if row is None or not _passes_filters(row, search_filter):
                    continue
                hits.append(hit)
                meta[(config.name, hit.chunk_id)] = row
            modes |= ctx_modes

        candidates = [
            candidate_of(hit, meta[(hit.context, hit.chunk_id)],
                         role_tables[hit.context] if req.role_priors else None, asks_about_tests)
            for hit in hits
        ]
        share = _fts_share(req, configs, candidates)
        by_key = {f"{hit.context}\x00{hit.chunk_id}": hit for hit in hits}
        fused = fuse(candidates, weights, fts_weight=share)[: req.k]
        terms = query_terms(req.query) if req.explain else []
        results: list[SearchResult] = []
        for position, item in enumerate(fused, start=1):
            hit = by_key[item.candidate.key]
            row = meta[(hit.context, hit.chunk_id)]
            scores = Scores(fts=hit.fts, vector=hit.vector, fts_norm=round(item.fts_norm, 6),
                            vector_norm=round(item.vector_norm, 6), blended=round(item.blended, 6),
                            weight=item.weight, role_weight=item.role_weight,
                            rank=round(item.rank_score, 6))
            results.append(SearchResult(
                rank=position, chunk_id=hit.chunk_id, doc_id=row["doc_id"], context=hit.context,
                source_type=row["source_type"], source_uri=row["source_uri"], title=row["title"],
                text=row["text"],
                range=Range(char_start=row["char_start"], char_end=row["char_end"],
                            line_start=row["line_start"], line_end=row["line_end"]),
                updated_at=row["updated_at"], scores=scores, metadata=row["metadata"],
                freshness=_freshness(row),
                explain=_explain(hit, item, row, terms, share) if req.explain else None,
                scope="global" if hit.context == GLOBAL_CONTEXT else "project",
            ))
        if len(modes) == 1:
            mode = modes.pop()
        elif not modes:
            mode = "none"
        else:
            mode = "hybrid" if "hybrid" in modes else sorted(modes)[0]
        covered = coverage.total(coverages)
        stats = SearchStats(
            took_ms=round((time.perf_counter() - started) * 1000, 2), candidates=len(candidates),
            fts_candidates=sum(1 for h in hits if h.fts is not None),
            vector_candidates=sum(1 for h in hits if h.vector is not None),
            mode=mode,  # type: ignore[arg-type]
            fts_share=round(share, 6) if mode == "hybrid" else None,
            warnings=list(dict.fromkeys(warnings)),
            vector_coverage=covered.as_json() if covered is not None else None,
        )
        return SearchResponse(query=req.query, contexts=[c.name for c in configs], k=req.k,
                              results=results, stats=stats)

    def _check_source_types(self, configs: Sequence[ContextConfig], types: Sequence[str]) -> None:
        """Refuse a source type that neither chinvex nor any searched index knows (a typo would
        otherwise filter everything out and answer "No results"). Types of third-party adapters
        are valid once their documents are in an index. Built-in types cost nothing; others one
        indexed DISTINCT per context."""
        from chinvex.models.documents import SOURCE_TYPES

        if not filters.unknown_source_types(types, SOURCE_TYPES):
            return
        indexed: set[str] = set()
        for config in configs:
            h = self.handle(config)
            with h.lock:
                try:
                    indexed.update(row[0] for row in h.conn.execute(
                        "SELECT DISTINCT source_type FROM documents"))
                except sqlite3.Error as exc:
                    raise RetrievalError(f"{config.name}: reading source types failed: {exc}") from None
        unknown = filters.unknown_source_types(types, [*SOURCE_TYPES, *indexed])
        if unknown:
            raise InvalidFilterError(filters.unknown_source_types_message(unknown, SOURCE_TYPES, indexed))

    def _search_context(self, h: _ContextHandle, req: SearchRequest, warnings: list[str],
                        query_vectors: dict[str, Any]) -> tuple[list[_Hit], set[str], VectorCoverage | None]:
        config = h.config
        retrieval = config.retrieval
        fts_depth = req.fts_depth or (retrieval.fts_depth if retrieval and retrieval.fts_depth else DEFAULT_FTS_DEPTH)
        vec_depth = req.vector_depth or (retrieval.vector_depth if retrieval and retrieval.vector_depth else DEFAULT_VECTOR_DEPTH)
        # A leg never returns fewer candidates than the caller asked results for.
        fts_depth, vec_depth = max(fts_depth, req.k), max(vec_depth, req.k)
        hits: dict[str, _Hit] = {}
        legs: set[str] = set()
        # Path and date filters: what they allow is read once, in this search's snapshot, and
        # both legs search only that (no post-filter over-fetch that loses deep matches).
        allowed = _allowed(h.conn, req.filter, h.config.name) if req.filter.narrows_documents else None

        lexical: _Lexical | None = None
        lexical_hits: list[tuple[str, float]] = []
        cosines: dict[str, float] = {}
        vec: list[tuple[str, float]] | None = None
        if req.mode in ("hybrid", "vector"):
            self._embed_ahead(h, req, query_vectors)
        if req.mode in ("hybrid", "fts"):
            lexical, lexical_hits = _fts_leg(h.conn, req, fts_depth, allowed)
        if req.mode in ("hybrid", "vector"):
            vec = self._vector_leg(h, req, warnings, query_vectors, vec_depth, allowed)
            if vec is not None:
                # Lexical-only candidates get their true cosine too (score completion), from the
                # same fetch of stored vectors.
                complete = req.complete_scores and lexical is not None
                try:
                    vec, cosines = self._exact_cosines(
                        h, vec, [cid for cid, _ in lexical_hits] if complete else [], query_vectors)
                except StorageError as exc:
                    # The vectors cannot be read consistently: answer from FTS alone rather than
                    # mixing exact and approximate scores.
                    warnings.append(f"{config.name}: vector search failed ({exc.message}); results are FTS only")
                    vec, cosines = None, {}
            if vec is not None:
                vec = vec[:vec_depth]  # an exact search rescored RESCORE_MARGIN more
                legs.add("vector")
                for rank, (cid, sim) in enumerate(vec, start=1):
                    hits[cid] = _Hit(config.name, cid, vector=sim, vector_rank=rank)
        if req.mode == "vector" and "vector" not in legs:  # no vectors: answer from FTS
            lexical, lexical_hits = _fts_leg(h.conn, req, fts_depth, allowed)
        if lexical is not None:
            legs.add("fts")
            for cid, score in lexical_hits:
                hit = hits.setdefault(cid, _Hit(config.name, cid))
                hit.fts = score
                if hit.vector is None and cid in cosines:
                    hit.vector = cosines[cid]
        for hit in hits.values():
            hit.lexical = lexical
        if req.complete_scores and legs == {"fts", "vector"} and lexical is not None:
            # Vector-only candidates that do match the query's terms (just below the FTS cut).
            missing_fts = [cid for cid, hit in hits.items() if hit.fts is None]
            for cid, score in _fts_scores_for(h.conn, lexical, missing_fts):
                hits[cid].fts = score
        mode = "hybrid" if legs == {"fts", "vector"} else ("fts" if "fts" in legs else "vector")
        counted = self._coverage(h, vector_leg_ran=vec is not None) if req.mode != "fts" else None
        if counted is not None:
            text = coverage.warning(config.name, counted, vector_leg_ran=vec is not None)
            if text is not None:
                warnings.append(text)
        return list(hits.values()), {mode}, counted

    def _coverage(self, h: _ContextHandle, *, vector_leg_ran: bool) -> VectorCoverage:
        """This context's vector coverage for the search (chinvex.retrieval.coverage). Read in
        the search's snapshot; a count, when needed, is cached until the index or the store
        changes (`PRAGMA data_version` moves when another connection commits; the store's write
        token with every write to it)."""
        from chinvex.locking import lock_path
        from chinvex.storage.coverage import current_coverage, gate_token

        try:
            recorded = current_coverage(h.config, h.conn)
        except (sqlite3.Error, OSError):
            recorded = None
        # The holder note exists while a writer holds the context's lock (locking.context_lock).
        writing = lock_path(h.config).with_suffix(".holder").exists()
        token = gate_token(h.config)
        found = coverage.from_record(recorded, vector_leg_ran=vector_leg_ran, token_now=token, writer_active=writing)
        if found is not None:
            return found
        state = (h.conn.execute("PRAGMA data_version").fetchone()[0], id(h.store), token, vector_leg_ran)
        if h.counted_coverage is not None and h.counted_coverage[0] == state:
            return h.counted_coverage[1]
        chunks = int(h.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        vectors: int | None = None
        if vector_leg_ran and h.store is not None:
            try:
                vectors = h.store.count()
            except ChinvexError:
                vectors = None
        found = coverage.counted(chunks, vectors, vector_leg_ran=vector_leg_ran)
        h.counted_coverage = (state, found)
        return found

    def _embed_ahead(self, h: _ContextHandle, req: SearchRequest, query_vectors: dict[str, Any]) -> None:
        """Embed the query on a worker thread while the lexical leg runs. ONNX Runtime and SQLite
        both release the GIL, so on two cores the two overlap: the embedding is ~10 ms of a warm
        search, and in a cold process the model loads while the FTS leg and Chroma's import run.
        Anything that fails here is left to the vector leg, which reports it.

        Only the built-in embedder, local CPU work that overlaps well; an Ollama embedding is a
        request to a server (retried with back-off when it is down), made only once the vector
        leg knows it needs one.

        The embedder's stack is imported here, before the worker starts, so that the worker
        imports nothing heavy: opening the vector store next imports more of chromadb on this
        thread, lazily and outside chinvex.heavy_imports' lock, and the two threads would race
        over numpy (see there why). The CLI's prefetch has done it already; an in-process
        searcher (MCP, eval) pays ~0.1 s here once."""
        try:
            embedder = self.embedder(h.config)
        except ChinvexError:
            return
        if not embedder.name.startswith("builtin:"):
            return
        if embedder.name in query_vectors or db.get_meta(h.conn, "embedder") != embedder.name:
            return
        from chinvex.heavy_imports import EMBEDDER_STACK, load

        try:
            load(*EMBEDDER_STACK)
        except ImportError:
            return
        query_vectors[embedder.name] = _embed_pool().submit(embedder.embed_query, req.query)

    def _exact_cosines(self, h: _ContextHandle, neighbours: list[tuple[str, float]], extra: list[str],
                       query_vectors: dict[str, Any]) -> tuple[list[tuple[str, float]], dict[str, float]]:
        """The vector leg's neighbours re-scored from their stored vectors (chinvex.retrieval.exact),
        best first, and the cosines of `extra` candidates (the lexical leg's) from the same
        fetch. The approximate index only chooses the neighbours; every cosine in a result then
        comes from one formula whichever leg found it, identical in every process. A neighbour
        whose vector is gone by now keeps the store's score."""
        embedder_name = db.get_meta(h.conn, "embedder")
        query = _resolved(query_vectors.get(embedder_name or ""))
        store = h.store
        if query is None or store is None:
            return exact.ranked(dict(neighbours)), {}
        ids = list(dict.fromkeys([cid for cid, _ in neighbours] + list(extra)))
        scores = exact.scored(query, store.embeddings(ids))
        return exact.ranked({cid: scores.get(cid, sim) for cid, sim in neighbours}), scores

    def _vector_leg(self, h: _ContextHandle, req: SearchRequest, warnings: list[str],
                    query_vectors: dict[str, Any], depth: int,
                    allowed: _Allowed | None = None) -> list[tuple[str, float]] | None:
        name = h.config.name
        stored = db.get_meta(h.conn, "embedder")
        try:
            embedder = self.embedder(h.config)
        except ChinvexError as exc:
            warnings.append(f"{name}: vector search unavailable ({exc.message}); results are FTS only")
            return None
        if stored is None:
            warnings.append(f"{name}: no vectors yet (run 'chinvex ingest'); results are FTS only")
            return None
        if stored != embedder.name:
            warnings.append(
                f"{name}: index vectors come from {stored} but the context is configured for "
                f"{embedder.name}; results are FTS only (run 'chinvex ingest --full')")
            return None
        store = self._store(h)
        if store is None:
            warnings.append(f"{name}: vector store unavailable ({h.store_error}); results are FTS only")
            return None
        if allowed is not None and not allowed.doc_ids:
            return []  # nothing can match: no query embedding, no Chroma query
        try:
            if embedder.name not in query_vectors:
                query_vectors[embedder.name] = embedder.embed_query(req.query)
            vector = query_vectors[embedder.name] = _resolved(query_vectors[embedder.name])
            if allowed is None:
                found = _neighbours(h.conn, store, vector, depth, req.source_types)
            else:
                found = _filtered_neighbours(h.conn, store, vector, depth, req.filter, allowed)
        except ChinvexError as exc:
            warnings.append(f"{name}: vector search failed ({exc.message}); results are FTS only")
            return None
        except Exception as exc:
            warnings.append(f"{name}: vector search failed ({type(exc).__name__}: {exc}); results are FTS only")
            return None
        if found:
            return found
        # Nothing found: an empty store beside indexed chunks is damage, not an answer. (Only
        # counted here: COUNT(*) scans the table, too slow for every query at 100k chunks.)
        chunks = h.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        try:
            empty = bool(chunks) and store.count() == 0
        except ChinvexError as exc:
            warnings.append(f"{name}: vector search failed ({exc.message}); results are FTS only")
            return None
        if empty:
            warnings.append(f"{name}: the vector store is empty although {chunks} chunks are indexed "
                            "(run 'chinvex doctor --repair'); results are FTS only")
            return None
        return found


@contextmanager
def _read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
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
class _Allowed:
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


def _fel_where(conn: sqlite3.Connection, search_filter: SearchFilter, context: str) -> tuple[str, list[Any]]:
    from chinvex.retrieval import fel

    fel.register(conn)
    try:
        return fel.to_sql(fel.parse(search_filter.expression or ""), context)
    except fel.FilterError as exc:
        raise InvalidFilterError(str(exc)) from None


def _fel_passing(conn: sqlite3.Connection, search_filter: SearchFilter, context: str,
                 chunk_ids: list[str]) -> set[str]:
    """Those of `chunk_ids` whose chunk and document satisfy the filter expression."""
    where, params = _fel_where(conn, search_filter, context)
    found: set[str] = set()
    for start in range(0, len(chunk_ids), 500):
        part = chunk_ids[start:start + 500]
        found.update(row[0] for row in conn.execute(
            f"SELECT c.chunk_id FROM chunks c JOIN documents d ON d.doc_id = c.doc_id "
            f"WHERE c.chunk_id IN (SELECT value FROM json_each(?)) AND {where}",
            [orjson.dumps(part).decode(), *params]))
    return found


def _allowed(conn: sqlite3.Connection, search_filter: SearchFilter, context: str = "") -> _Allowed:
    """One scan of `documents` (the path test runs once per document, not once per FTS match),
    then their chunks through the doc_id index. A filter expression may test chunk fields, so
    it selects chunks (joined with their documents) and the documents holding any of them."""
    conds, params = filters.sql_conditions(search_filter)
    if search_filter.expression:
        where, fel_params = _fel_where(conn, search_filter, context)
        doc_conds = " AND ".join(conds) if conds else "1"
        join = f"FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE {doc_conds} AND {where}"
        try:
            doc_ids = [row[0] for row in conn.execute(f"SELECT DISTINCT c.doc_id {join}", [*params, *fel_params])]
            rows = conn.execute(f"SELECT c.chunk_id, c.rowid {join} LIMIT ?",
                                [*params, *fel_params, filters.RESTRICT_LIMIT + 1]).fetchall() if doc_ids else []
        except sqlite3.OperationalError as exc:
            raise RetrievalError(f"filtering documents failed: {exc}") from None
        return _Allowed(doc_ids, [row[0] for row in rows], [row[1] for row in rows])
    try:
        doc_ids = [row[0] for row in conn.execute(
            f"SELECT d.doc_id FROM documents d WHERE {' AND '.join(conds)}", params)]
        if not doc_ids:
            return _Allowed([], [], [])
        rows = conn.execute(
            "SELECT c.chunk_id, c.rowid FROM chunks c WHERE c.doc_id IN (SELECT value FROM json_each(?)) "
            "LIMIT ?", [orjson.dumps(doc_ids).decode(), filters.RESTRICT_LIMIT + 1]).fetchall()
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"filtering documents failed: {exc}") from None
    return _Allowed(doc_ids, [row[0] for row in rows], [row[1] for row in rows])


def _every_allowed_chunk(conn: sqlite3.Connection, allowed: _Allowed) -> list[str]:
    if allowed.all_chunks:
        return allowed.chunk_ids
    return [row[0] for row in conn.execute(
        "SELECT c.chunk_id FROM chunks c WHERE c.doc_id IN (SELECT value FROM json_each(?))",
        [allowed.doc_ids_json()])]


def _allowed_among(conn: sqlite3.Connection, allowed: _Allowed, chunk_ids: Sequence[str]) -> set[str]:
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


def _neighbours(conn: sqlite3.Connection, store: Any, vector: Any, depth: int,
                source_types: Sequence[str] | None) -> list[tuple[str, float]]:
    """The nearest chunks, best first. An index of at most EXHAUSTIVE_LIMIT chunks is searched
    exhaustively (the same answer from any store holding the same vectors) and its top `depth`
    plus RESCORE_MARGIN are returned for exact rescoring; a larger one through the approximate
    graph, its top `depth`. The count stops at the limit (never a scan of a large table)."""
    small = conn.execute("SELECT 1 FROM chunks LIMIT 1 OFFSET ?", (EXHAUSTIVE_LIMIT,)).fetchone() is None
    if not small or depth >= EXHAUSTIVE_LIMIT:
        return store.query(vector, depth, source_types=source_types)
    return store.query(vector, EXHAUSTIVE_LIMIT, source_types=source_types)[:depth + RESCORE_MARGIN]


def _filtered_neighbours(conn: sqlite3.Connection, store: Any, vector: Any, depth: int,
                         search_filter: SearchFilter, allowed: _Allowed) -> list[tuple[str, float]]:
    """The `depth` nearest chunks among those the filter allows, by the cheapest strategy for
    the allowed set's size (`filters.plan_vector_leg`)."""
    plan = filters.plan_vector_leg(len(allowed.chunk_ids), exact_limit=filters.EXACT_LIMIT,
                             restrict_limit=filters.RESTRICT_LIMIT)
    if plan == "none":
        return []
    if plan == "exact":
        return exact.ranked(exact.scored(vector, store.embeddings(allowed.chunk_ids)), depth)
    if plan == "restricted":
        return _restricted_query(store, vector, depth, allowed.chunk_ids)
    requested = depth * 2
    while True:
        found = store.query(vector, requested, source_types=list(search_filter.source_types) or None)
        keep = _allowed_among(conn, allowed, [cid for cid, _ in found])
        hits = [(cid, sim) for cid, sim in found if cid in keep]
        step = filters.next_fetch(requested, len(found), len(hits), depth, max_fetch=filters.OVERFETCH_MAX)
        if step == "done":
            return hits[:depth]
        if step == "restrict":
            # The filter allows many chunks but few near the query: search among all of them.
            return _restricted_query(store, vector, depth, _every_allowed_chunk(conn, allowed))
        requested = step


def _restricted_query(store: Any, vector: Any, depth: int, chunk_ids: list[str]) -> list[tuple[str, float]]:
    """Nearest neighbours among `chunk_ids`. Chroma fails the whole query ("Error finding id")
    when one id has no vector, which happens when an ingest deleted vectors after committing the
    SQLite state this search still reads (or after a crash, until the next ingest settles it);
    then the query is repeated with the ids that are present."""
    try:
        return store.query(vector, depth, ids=chunk_ids)
    except StorageError:
        present = store.existing(chunk_ids)
        return store.query(vector, depth, ids=[cid for cid in chunk_ids if cid in present])


def _fts_leg(conn: sqlite3.Connection, req: SearchRequest, depth: int,
             allowed: _Allowed | None = None) -> tuple[_Lexical, list[tuple[str, float]]]:
    """The query's lexical plan, and its BM25 top `depth` among the chunks the filters allow (in
    the SQL, so the depth counts only allowed chunks). Scores are higher-is-better (FTS5's bm25()
    is negative)."""
    lexical = _lexical_plan(conn, req)
    if lexical.expression is None or (allowed is not None and not allowed.doc_ids):
        return lexical, []
    # A pruned query ranks its candidates with the rare terms counted twice: a pool twice the
    # depth, then exact BM25 (see _Lexical.candidate_expression) decides.
    pool = _ranked(conn, req, lexical.candidate_expression or "", 2 * depth if lexical.common else depth,
                   allowed)
    scores = _without_doubled_rare(conn, lexical, dict(pool))
    # Equal BM25 scores (a text indexed twice) are ordered by rowid, here and in the SQL that
    # chose the pool, so the depth cut never depends on the order rows came in.
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:depth]
    names = _chunk_ids_of(conn, [rowid for rowid, _ in ranked])
    return lexical, [(names[rowid], score) for rowid, score in ranked if rowid in names]


def _without_doubled_rare(conn: sqlite3.Connection, lexical: _Lexical,
                          doubled: dict[int, float]) -> dict[int, float]:
    """Exact BM25 of `lexical.expression` from scores under `candidate_expression`: subtract the
    rare terms' second count (see _Lexical.candidate_expression). An unpruned query counts each
    term once already."""
    if not lexical.common:
        return doubled
    rare = _bm25_of(conn, lexical.rare_expression or "", list(doubled))
    return {rowid: score - rare.get(rowid, 0.0) for rowid, score in doubled.items()}


def _ranked(conn: sqlite3.Connection, req: SearchRequest, expression: str, limit: int,
            allowed: _Allowed | None) -> list[tuple[int, float]]:
    """(FTS rowid, -bm25) of the best `limit` matches of `expression` the filters allow."""
    params: list[Any] = [expression]
    if allowed is None and not req.source_types:
        # Rank inside FTS5 alone: joining `chunks` before the LIMIT would look up every
        # matching row (twice the cost of ranking them).
        sql = "SELECT rowid AS rid, bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
    else:
        sql = ("SELECT chunks_fts.rowid AS rid, bm25(chunks_fts) AS score FROM chunks_fts "
               "JOIN chunks c ON c.rowid = chunks_fts.rowid ")
        where = "WHERE chunks_fts MATCH ?"
        if allowed is not None:
            # Source types are part of `allowed`. A few chunks: FTS5 looks up each rowid (~0.2 ms
            # apiece); otherwise every match is checked against the allowed documents (~the cost
            # of an unfiltered query). See filters.FTS_ROWID_LIMIT.
            if len(allowed.chunk_rowids) <= filters.FTS_ROWID_LIMIT:
                where += " AND chunks_fts.rowid IN (SELECT value FROM json_each(?))"
                params.append(orjson.dumps(allowed.chunk_rowids).decode())
            else:
                where += " AND c.doc_id IN (SELECT value FROM json_each(?))"
                params.append(allowed.doc_ids_json())
        else:
            types = req.source_types or []
            sql += "JOIN documents d ON d.doc_id = c.doc_id "
            where += f" AND d.source_type IN ({','.join('?' * len(types))})"
            params.extend(types)
        sql += where
    params.append(limit)
    try:
        rows = conn.execute(sql + " ORDER BY score, rid LIMIT ?", params).fetchall()
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    return [(rowid, -float(score)) for rowid, score in rows]


def _bm25_of(conn: sqlite3.Connection, expression: str, rowids: list[int]) -> dict[int, float]:
    """-bm25 of `expression` for the given rows (those that match it). The test is written
    `+rowid` so that FTS5 walks the matches once while SQLite filters them: with a plain
    `rowid IN`, FTS5 starts over for every id and recounts every term's matches."""
    if not rowids:
        return {}
    try:
        rows = conn.execute(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
            "AND +rowid IN (SELECT value FROM json_each(?))",
            (expression, orjson.dumps(rowids).decode())).fetchall()
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    return {rowid: -float(score) for rowid, score in rows}


def _chunk_ids_of(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, str]:
    if not rowids:
        return {}
    return dict(conn.execute(
        "SELECT rowid, chunk_id FROM chunks WHERE rowid IN (SELECT value FROM json_each(?))",
        (orjson.dumps(rowids).decode(),)).fetchall())


def _fts_scores_for(conn: sqlite3.Connection, lexical: _Lexical,
                    chunk_ids: list[str]) -> list[tuple[str, float]]:
    """BM25 of the given chunks (vector-only candidates) under the lexical leg's rules: exact
    for every chunk that could have been a lexical candidate; a chunk with none of the rare
    terms of a pruned query has no lexical score, as if it matched nothing."""
    if lexical.expression is None or not chunk_ids:
        return []
    names = dict(conn.execute(
        "SELECT rowid, chunk_id FROM chunks WHERE chunk_id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(chunk_ids).decode(),)).fetchall())
    if not names:
        return []
    candidates = _bm25_of(conn, lexical.candidate_expression or "", list(names))
    scores = _without_doubled_rare(conn, lexical, candidates)
    return [(names[rowid], score) for rowid, score in scores.items() if rowid in names]


def candidate_of(hit: _Hit, row: dict[str, Any], role_table: Mapping[str, float] | None,
                 asks_about_tests: bool) -> Candidate:
    """What fusion needs of one hit: its scores, source type and date, and for a repository
    file its role and that role's weight in `role_table` (1.0 when the table is None, role
    priors off, or the query is about tests)."""
    path = row.get("rel_path") if row["source_type"] == "repo" else None
    role = role_of(path) if path else None
    weight = 1.0 if role is None or role_table is None or asks_about_tests else float(role_table[role])
    return Candidate(key=f"{hit.context}\x00{hit.chunk_id}", chunk_id=hit.chunk_id,
                     source_type=row["source_type"], updated_at=row["updated_at"], fts=hit.fts,
                     vector=hit.vector, weight_table=hit.context, role=role, role_weight=weight,
                     kind=(row["metadata"] or {}).get("kind"))


def _rows(conn: sqlite3.Connection, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Result rows by chunk id, with the document's relative path (`rel_path`) that the path
    filter and the role priors read."""
    out: dict[str, dict[str, Any]] = {}
    rel = ", " + filters.REL_PATH_SQL.format(d="d") + " AS rel_path"
    for start in range(0, len(chunk_ids), 500):
        part = chunk_ids[start:start + 500]
        marks = ",".join("?" * len(part))
        for row in conn.execute(
            f"""SELECT c.chunk_id, c.doc_id, c.chunk_index, c.text, c.search_text, c.char_start,
                       c.char_end, c.line_start, c.line_end, c.metadata_json, d.source_type,
                       d.source_uri, d.title, d.updated_at, d.created_at, d.indexed_at,
                       d.origin_uri, f.size_bytes, f.mtime_unix, f.state_json{rel}
                FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
                LEFT JOIN source_fingerprints f ON f.source_uri = d.origin_uri
                WHERE c.chunk_id IN ({marks})""",
            part,
        ):
            item = dict(row)
            item["metadata"] = orjson.loads(item.pop("metadata_json") or "{}")
            out[item["chunk_id"]] = item
    return out


def _passes_filters(row: dict[str, Any], search_filter: SearchFilter) -> bool:
    if not search_filter.active:
        return True
    return filters.passes(search_filter, source_type=row["source_type"], source_uri=row["source_uri"],
                    rel_path=row.get("rel_path"), updated_at=row["updated_at"],
                    created_at=row["created_at"])


def _freshness(row: dict[str, Any]) -> Freshness:
    """Cheap stat check of the result's source, so agents never present deleted code as current."""
    origin = row["origin_uri"] or ""
    indexed_at = row["indexed_at"]
    if not origin.startswith("/") and not re.match(r"^[A-Za-z]:[\\/]", origin):
        return Freshness(indexed_at=indexed_at)
    path = origin.split("#", 1)[0]
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        # NotADirectoryError: a folder on the way to the file is now something else (a file),
        # so the file itself is gone, which is not the same as being there but unreadable.
        return Freshness(indexed_at=indexed_at, stale=True, reason="deleted")
    except OSError:
        return Freshness(indexed_at=indexed_at, stale=True, reason="unreadable")
    if stat.S_ISDIR(st.st_mode):
        # The indexed file was replaced by a folder of the same name: the file is gone.
        return Freshness(indexed_at=indexed_at, stale=True, reason="deleted")
    if row["size_bytes"] is not None and st.st_size != row["size_bytes"]:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    state = orjson.loads(row["state_json"]) if row.get("state_json") else {}
    mtime_ns = state.get("_mtime_ns") if isinstance(state, dict) else None
    if mtime_ns is not None and st.st_mtime_ns != mtime_ns:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    if mtime_ns is None and row["mtime_unix"] is not None and int(st.st_mtime) != row["mtime_unix"]:
        return Freshness(indexed_at=indexed_at, stale=True, reason="modified")
    return Freshness(indexed_at=indexed_at)


def _fts_share(req: SearchRequest, configs: Sequence[ContextConfig], candidates: list[Candidate]) -> float:
    """The lexical leg's weight in this query's blend: the seed's 0.6, or adapted to the query
    and its candidates (fusion.fts_share)."""
    fusion = req.fusion or next((c.retrieval.fusion for c in configs if c.retrieval), "adaptive")
    if fusion == "seed":
        return FTS_WEIGHT
    return fts_share(query_signals(req.query, candidates))


def _explain(hit: _Hit, item: Any, row: dict[str, Any], terms: list[str], share: float) -> dict[str, Any]:
    haystack = (row.get("search_text") or row["text"]).lower()
    matched = [t for t in terms if re.search(r"(?<!\w)" + re.escape(t), haystack)]
    reasons = []
    if hit.fts is not None:
        reasons.append(f"matched terms: {', '.join(matched) or '(stemmed forms)'}")
    if hit.vector is not None:
        reasons.append(f"vector neighbour #{hit.vector_rank} (cosine {hit.vector:.3f})")
    fts: dict[str, Any] = {"raw_bm25": hit.fts, "normalized": item.fts_norm, "weight": round(share, 6),
                           "matched_terms": matched}
    if hit.lexical is not None and hit.lexical.common:
        fts["candidate_terms"] = hit.lexical.rare
        reasons.append("lexical candidates were chunks with one of the rarer terms "
                       f"({', '.join(hit.lexical.rare)}); the query's words matched more chunks "
                       "than the scoring budget")
    role = item.candidate.role
    if role is not None and item.role_weight != 1.0:
        reasons.append(f"{role} file weighed {item.role_weight:g}")
    return {
        "fts": fts,
        "vector": {"raw_cosine": hit.vector, "normalized": item.vector_norm, "weight": round(1 - share, 6),
                   "neighbour_rank": hit.vector_rank},
        "blended": item.blended,
        "source_weight": item.weight,
        "role": role,
        "role_weight": item.role_weight,
        "rank": item.rank_score,
        "formula": f"rank = ({share:g} * fts_norm + {1 - share:g} * vector_norm) * source_weight * role_weight",
        "why": "; ".join(reasons) or "no signal",
    }
