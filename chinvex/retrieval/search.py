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
(BM25 ties by rowid, cosine ties and fusion ties by chunk id). Up to vector_leg.EXHAUSTIVE_LIMIT chunks the
vector leg is exhaustive, so any store holding the same vectors (an imported copy, a rebuilt
store) gives the same results too; above it, another build of the graph may choose slightly
different neighbours.

A search that asks for vectors also reports how many of the searched chunks have one
(chinvex/retrieval/coverage.py), and warns when not all do: it never calls itself hybrid for
chunks that only full-text search can find.

The parts: request.py (what is asked), scope.py (what the filters allow, the read snapshot),
lexical_leg.py and vector_leg.py (each leg's candidates), fusion.py (the blend) and results.py
(rows, freshness, explain). This module keeps the warm resources and runs the walk.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chinvex.errors import ChinvexError, StorageError, UsageError
from chinvex.models import ContextConfig, SearchResponse, SearchStats
from chinvex.retrieval import coverage
from chinvex.retrieval import exact
from chinvex.retrieval import filters
from chinvex.retrieval.coverage import VectorCoverage
from chinvex.retrieval.fusion import Fused, at_most_per_document, fuse
from chinvex.retrieval.lexical import query_terms
from chinvex.retrieval.lexical_leg import LexicalLeg, fts_leg, fts_scores_for
from chinvex.retrieval.request import (GLOBAL_CONTEXT, MAX_K, InvalidFilterError, Mode, RetrievalError,
                                       SearchRequest)
from chinvex.retrieval.results import (Hit, candidate_of, fts_share_for, overall_mode, passes_filters, result_rows,
                                       search_result)
from chinvex.retrieval.roles import about_tests
from chinvex.retrieval.scope import Allowed, allowed_for, fel_passing, read_snapshot
from chinvex.retrieval.term_counts import TermCounts
from chinvex.retrieval.vector_leg import filtered_neighbours, is_small, nearest_with_vectors, neighbours
from chinvex.storage import db

__all__ = ["GLOBAL_CONTEXT", "MAX_K", "InvalidFilterError", "Mode", "RetrievalError", "SearchRequest", "Searcher",
           "prefetch_vector_store"]
DEFAULT_FTS_DEPTH = 30


DEFAULT_VECTOR_DEPTH = 30


STORE_RETRY_SECONDS = 5.0
"""A store that could not be opened is tried again after this long (an ingest may create it),
not on every query (opening costs far more than a query)."""


def prefetch_vector_store(configs: Sequence[ContextConfig]) -> None:
    """Get a cold, read-only search process (`chinvex search`, `chinvex answer`) ready to search
    `configs`: it will read vector stores and never write one, so embedded stores are opened
    through Chroma's bindings alone (chinvex.storage.vector_open.read_only_process); and the imports
    start (chinvex.embedding.heavy_imports): the built-in embedder's stack when a context uses it, the
    store's in the background."""
    from chinvex.embedding.factory import provider_of
    from chinvex.embedding.heavy_imports import prefetch_search_stack
    from chinvex.storage.vector_open import read_only_process

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
    term_counts: TermCounts = field(default_factory=TermCounts)
    """The lexical leg's term counts, kept while the index is unchanged."""

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


def _embed_and_search(embedder: Any, query: str, vector: Future, store: Any, depth: int,
                      source_types: Sequence[str] | None,
                      small: bool) -> tuple[list[tuple[str, float]], dict[str, Any]]:
    """The worker's part of a warm unfiltered vector leg (Searcher._embed_ahead): the query's
    embedding (published on `vector` as soon as it exists, for other contexts and for the exact
    cosines), its neighbours, and their stored vectors."""
    try:
        embedded = embedder.embed_query(query)
    except BaseException as exc:
        vector.set_exception(exc)
        raise
    vector.set_result(embedded)
    return nearest_with_vectors(store, embedded, depth, source_types, small=small)


def _vector_failure(context: str, what: str, message: str) -> str:
    """The warning for a vector leg that could not run. A damaged store gets the command that
    rebuilds it: nothing else (a plain ingest that changed nothing, another search) would."""
    from chinvex.storage.vector_errors import is_damage

    hint = ""
    if "--repair" not in message and is_damage(message):
        hint = f"; run 'chinvex doctor --context {context} --repair' to rebuild it from hybrid.db"
    return f"{context}: {what} ({message}){hint}; results are FTS only"


class Searcher:
    def __init__(self) -> None:
        self._handles: dict[str, _ContextHandle] = {}
        self._embedders: dict[str, Any] = {}
        self._rerankers: dict[str, Any] = {}
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

    @property
    def warm(self) -> bool:
        """Some search opened a vector store and made an embedder: what a server loads once."""
        with self._lock:
            return bool(self._embedders) and any(h.store is not None for h in self._handles.values())

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
        if req.per_doc is not None and req.per_doc < 1:
            raise UsageError(f"--per-doc must be at least 1 (got {req.per_doc})")
        if req.source_types:
            self._check_source_types(configs, req.source_types)
        warnings: list[str] = []
        hits: list[Hit] = []
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
            with h.lock, read_snapshot(h.conn):
                ctx_hits, ctx_modes, ctx_coverage = self._search_context(h, req, warnings, query_vectors)
                rows = result_rows(h.conn, [hit.chunk_id for hit in ctx_hits])
                if search_filter.expression:  # exact, in SQL, for the chunks that reached here
                    passing = fel_passing(h.conn, search_filter, config.name, list(rows))
                    rows = {cid: row for cid, row in rows.items() if cid in passing}
            if ctx_coverage is not None:
                coverages.append(ctx_coverage)
            for hit in ctx_hits:
                row = rows.get(hit.chunk_id)
                # No row: a vector whose chunk is not committed in this SQLite state (an ingest
                # writes Chroma first) or was deleted since; only committed chunks are results.
                # Both legs already applied the filter; checking again costs nothing and keeps
                # a leg that got it wrong from returning what the user excluded.
                if row is None or not passes_filters(row, search_filter):
                    continue
                hits.append(hit)
                meta[(config.name, hit.chunk_id)] = row
            modes |= ctx_modes

        candidates = [
            candidate_of(hit, meta[(hit.context, hit.chunk_id)],
                         role_tables[hit.context] if req.role_priors else None, asks_about_tests)
            for hit in hits
        ]
        share, signals = fts_share_for(req, configs, candidates)
        by_key = {f"{hit.context}\x00{hit.chunk_id}": hit for hit in hits}
        fused = fuse(candidates, weights, fts_weight=share)

        def row_of(item: Fused) -> dict[str, Any]:
            hit = by_key[item.candidate.key]
            return meta[(hit.context, hit.chunk_id)]

        fused, rerank_scores, reranker = self._rerank(configs, req, fused, lambda item: row_of(item)["text"],
                                                      warnings)
        if req.per_doc is not None:
            fused = at_most_per_document(
                fused, req.per_doc, lambda item: (by_key[item.candidate.key].context, row_of(item)["doc_id"]))
        fused = fused[: req.k]
        terms = query_terms(req.query) if req.explain else None
        results = []
        for position, item in enumerate(fused, start=1):
            hit = by_key[item.candidate.key]
            results.append(search_result(position, hit, item, meta[(hit.context, hit.chunk_id)], terms, share,
                                         signals, rerank_scores.get(item.candidate.key)))
        mode = overall_mode(modes)
        covered = coverage.total(coverages)
        stats = SearchStats(
            took_ms=round((time.perf_counter() - started) * 1000, 2), candidates=len(candidates),
            fts_candidates=sum(1 for h in hits if h.fts is not None),
            vector_candidates=sum(1 for h in hits if h.vector is not None),
            mode=mode,  # type: ignore[arg-type]
            fts_share=round(share, 6) if mode == "hybrid" else None,
            warnings=list(dict.fromkeys(warnings)),
            vector_coverage=covered.as_json() if covered is not None else None,
            reranker=reranker,
        )
        return SearchResponse(query=req.query, contexts=[c.name for c in configs], k=req.k,
                              results=results, stats=stats)

    def _rerank(self, configs: Sequence[ContextConfig], req: SearchRequest, fused: list[Fused],
                text_of: Callable[[Fused], str], warnings: list[str],
                ) -> tuple[list[Fused], dict[str, float], str | None]:
        """The reranking stage (chinvex.retrieval.rerank) over the top `top_n` fused results, as
        the first context configures it: the results, each reordered one's reranker score by
        candidate key, and the reranker's name (None when the stage did not run)."""
        settings = next((c.retrieval.rerank for c in configs if c.retrieval), None)
        if req.rerank is False or (settings is None and not req.rerank):
            return fused, {}, None
        from chinvex.retrieval.rerank import RerankerError, checked_scores, make_reranker, reranked_order

        if settings is None:
            raise UsageError(f"No reranker is configured for context {configs[0].name}: set retrieval.rerank "
                             "in its context.json (provider, model, top_n), or search without --rerank.")
        head = fused[: settings.top_n]
        if not head:
            return fused, {}, None
        try:
            key = orjson.dumps(settings.model_dump(mode="json")).decode()
            with self._lock:
                reranker = self._rerankers.get(key)
                if reranker is None:
                    reranker = self._rerankers[key] = make_reranker(settings)
            name = str(getattr(reranker, "name", settings.provider))
            try:
                raw = reranker.score(req.query, [text_of(item) for item in head])
            except Exception as exc:  # a plug-in's own failure, reported in one line
                raise RerankerError(f"Reranker {name!r} failed: {type(exc).__name__}: {exc}") from None
            scores = checked_scores(raw, len(head), name)
        except RerankerError as exc:
            if req.rerank:
                raise
            warnings.append(f"{exc.message}; results are in fusion order")
            return fused, {}, None
        order = reranked_order(scores)
        return ([head[i] for i in order] + fused[len(head):],
                {head[i].candidate.key: round(scores[i], 6) for i in order}, name)

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
                        query_vectors: dict[str, Any]) -> tuple[list[Hit], set[str], VectorCoverage | None]:
        config = h.config
        retrieval = config.retrieval
        fts_depth = req.fts_depth or (retrieval.fts_depth if retrieval and retrieval.fts_depth else DEFAULT_FTS_DEPTH)
        vec_depth = req.vector_depth or (retrieval.vector_depth if retrieval and retrieval.vector_depth else DEFAULT_VECTOR_DEPTH)
        # A leg never returns fewer candidates than the caller asked results for.
        fts_depth, vec_depth = max(fts_depth, req.k), max(vec_depth, req.k)
        hits: dict[str, Hit] = {}
        legs: set[str] = set()
        # Path and date filters: what they allow is read once, in this search's snapshot, and
        # both legs search only that (no post-filter over-fetch that loses deep matches).
        allowed = allowed_for(h.conn, req.filter, h.config.name) if req.filter.narrows_documents else None

        leg: LexicalLeg | None = None
        cosines: dict[str, float] = {}
        vec: list[tuple[str, float]] | None = None
        ahead: Future | None = None
        prefetched: dict[str, Any] = {}
        if req.mode in ("hybrid", "vector"):
            ahead = self._embed_ahead(h, req, query_vectors, vec_depth, allowed)
        if req.mode in ("hybrid", "fts"):
            leg = fts_leg(h.conn, req, fts_depth, allowed, h.term_counts)
        if req.mode in ("hybrid", "vector"):
            vec = self._vector_leg(h, req, warnings, query_vectors, vec_depth, allowed, ahead,
                                   prefetched)
            if vec is not None:
                # Lexical-only candidates get their true cosine too (score completion), from the
                # same fetch of stored vectors.
                extra = [cid for cid, _ in leg.hits] if req.complete_scores and leg is not None else []
                try:
                    vec, cosines = self._exact_cosines(h, vec, extra, query_vectors, prefetched)
                except StorageError as exc:
                    # The vectors cannot be read consistently: answer from FTS alone rather than
                    # mixing exact and approximate scores.
                    warnings.append(_vector_failure(config.name, "vector search failed", exc.message))
                    vec, cosines = None, {}
            if vec is not None:
                vec = vec[:vec_depth]  # an exact search rescored RESCORE_MARGIN more
                legs.add("vector")
                for rank, (cid, sim) in enumerate(vec, start=1):
                    hits[cid] = Hit(config.name, cid, vector=sim, vector_rank=rank)
        if req.mode == "vector" and "vector" not in legs:  # no vectors: answer from FTS
            leg = fts_leg(h.conn, req, fts_depth, allowed, h.term_counts)
        if leg is not None:
            legs.add("fts")
            for cid, score in leg.hits:
                hit = hits.setdefault(cid, Hit(config.name, cid))
                hit.fts = score
                if hit.vector is None and cid in cosines:
                    hit.vector = cosines[cid]
        for hit in hits.values():
            hit.lexical = leg.plan if leg is not None else None
        if req.complete_scores and legs == {"fts", "vector"} and leg is not None:
            # Vector-only candidates that do match the query's terms (just below the FTS cut).
            missing_fts = [cid for cid, hit in hits.items() if hit.fts is None]
            for cid, score in fts_scores_for(h.conn, leg, missing_fts):
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

    def _embed_ahead(self, h: _ContextHandle, req: SearchRequest, query_vectors: dict[str, Any],
                     depth: int, allowed: Allowed | None) -> Future | None:
        """Embed the query on a worker thread while the lexical leg runs. ONNX Runtime and SQLite
        both release the GIL, so on two cores the two overlap: the embedding is ~5-10 ms of a warm
        search, and in a cold process the model loads while the FTS leg and Chroma's import run.
        Anything that fails here is left to the vector leg, which reports it.

        When the context's store is already open (a warm searcher) and no filter narrows the
        search, the worker goes on with the neighbour search and fetches the neighbours' stored
        vectors, which touch the store only (the size check that decides exhaustive or
        approximate is read here, on the search's connection); returns that job, whose result
        the vector leg takes instead of searching itself. Its failures reach the vector leg too.

        Only the built-in embedder, local CPU work that overlaps well; an Ollama embedding is a
        request to a server (retried with back-off when it is down), made only once the vector
        leg knows it needs one.

        The embedder's stack is imported here, before the worker starts, so that the worker
        imports nothing heavy: opening the vector store next imports more of chromadb on this
        thread, lazily and outside chinvex.embedding.heavy_imports' lock, and the two threads would race
        over numpy (see there why). The CLI's prefetch has done it already; an in-process
        searcher (MCP, eval) pays ~0.1 s here once."""
        try:
            embedder = self.embedder(h.config)
        except ChinvexError:
            return None
        if not embedder.name.startswith("builtin:"):
            return None
        if embedder.name in query_vectors or db.get_meta(h.conn, "embedder") != embedder.name:
            return None
        from chinvex.embedding.heavy_imports import EMBEDDER_STACK, load

        try:
            load(*EMBEDDER_STACK)
        except ImportError:
            return None
        store = h.store if allowed is None and h.store_checked else None
        if store is None:
            query_vectors[embedder.name] = _embed_pool().submit(embedder.embed_query, req.query)
            return None
        vector: Future = Future()
        query_vectors[embedder.name] = vector
        return _embed_pool().submit(_embed_and_search, embedder, req.query, vector, store, depth,
                                    req.source_types, is_small(h.conn))

    def _exact_cosines(self, h: _ContextHandle, neighbours: list[tuple[str, float]], extra: list[str],
                       query_vectors: dict[str, Any], prefetched: dict[str, Any] | None = None,
                       ) -> tuple[list[tuple[str, float]], dict[str, float]]:
        """The vector leg's neighbours re-scored from their stored vectors (chinvex.retrieval.exact),
        best first, and the cosines of `extra` candidates (the lexical leg's) from the same
        fetch (less the vectors `prefetched` holds already, see _embed_ahead). The approximate
        index only chooses the neighbours; every cosine in a result then comes from one formula
        whichever leg found it, identical in every process. A neighbour whose vector is gone by
        now keeps the store's score."""
        embedder_name = db.get_meta(h.conn, "embedder")
        query = _resolved(query_vectors.get(embedder_name or ""))
        store = h.store
        if query is None or store is None:
            return exact.ranked(dict(neighbours)), {}
        ids = list(dict.fromkeys([cid for cid, _ in neighbours] + list(extra)))
        known = prefetched or {}
        vectors = {cid: known[cid] for cid in ids if cid in known}
        missing = [cid for cid in ids if cid not in known]
        if missing:
            vectors.update(store.embeddings(missing))
        scores = exact.scored(query, vectors)
        return exact.ranked({cid: scores.get(cid, sim) for cid, sim in neighbours}), scores

    def _vector_leg(self, h: _ContextHandle, req: SearchRequest, warnings: list[str],
                    query_vectors: dict[str, Any], depth: int, allowed: Allowed | None = None,
                    ahead: Future | None = None,
                    prefetched: dict[str, Any] | None = None) -> list[tuple[str, float]] | None:
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
            warnings.append(_vector_failure(name, "vector store unavailable", h.store_error or ""))
            return None
        if allowed is not None and not allowed.doc_ids:
            return []  # nothing can match: no query embedding, no Chroma query
        try:
            if embedder.name not in query_vectors:
                query_vectors[embedder.name] = embedder.embed_query(req.query)
            vector = query_vectors[embedder.name] = _resolved(query_vectors[embedder.name])
            if ahead is not None:
                found, vectors = ahead.result()
                if prefetched is not None:
                    prefetched.update(vectors)
            elif allowed is None:
                found = neighbours(h.conn, store, vector, depth, req.source_types)
            else:
                found = filtered_neighbours(h.conn, store, vector, depth, req.filter, allowed)
        except ChinvexError as exc:
            warnings.append(_vector_failure(name, "vector search failed", exc.message))
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
            warnings.append(_vector_failure(name, "vector search failed", exc.message))
            return None
        if empty:
            warnings.append(f"{name}: the vector store is empty although {chunks} chunks are indexed "
                            "(run 'chinvex doctor --repair'); results are FTS only")
            return None
        return found
