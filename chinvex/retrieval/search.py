"""Hybrid search over one or several contexts (DESIGN.md §6).

`Searcher` keeps connections, vector stores and embedders warm between queries (the MCP server
holds one for its lifetime), and fuses what the contexts found. A context whose vectors are
missing or whose embedder cannot run still answers from FTS and says so in `stats.warnings`.

Why it is built this way (ARCHITECTURE, Retrieval, has the details):
- each context is searched inside one SQLite read transaction, so hits, scores and rows come
  from one committed state, while another process may be ingesting;
- filters act inside both legs, not after them, so a match below the legs' depth is still found;
- the same query on an unchanged index gives the same bytes in every process: every cosine is
  exact (chinvex/retrieval/exact.py) and every ordering ends in an exact tie-break;
- a rare term the user typed keeps its best matches (chinvex/retrieval/rare_terms.py), and
  "quoted phrases" are required in every result.

The parts: request.py (what is asked), scope.py (what the filters allow), context_handle.py (a
context's warm connection and store), context_search.py (one context's walk in its snapshot),
embed_ahead.py, lexical_leg.py and vector_leg.py (each leg's candidates), fusion.py (the blend)
and results.py (rows, freshness, explain).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from chinvex.errors import StorageError, UsageError
from chinvex.models import ContextConfig, SearchResponse, SearchStats
from chinvex.retrieval import coverage, filters
from chinvex.retrieval.context_handle import ContextHandle, vector_store
from chinvex.retrieval.context_search import search_context
from chinvex.retrieval.coverage import VectorCoverage
from chinvex.retrieval.fusion import Fused, at_most_per_document, fuse
from chinvex.retrieval.lexical import compound_terms, phrase, query_terms
from chinvex.retrieval.lexical_leg import count_cap
from chinvex.retrieval.rare_terms import RARE_DF, best_lexical, best_rare, keep_pinned, wanted_pins
from chinvex.retrieval.request import (
    GLOBAL_CONTEXT,
    MAX_K,
    InvalidFilterError,
    Mode,
    RetrievalError,
    SearchRequest,
)
from chinvex.retrieval.results import (
    Hit,
    candidate_of,
    fts_share_for,
    overall_mode,
    passes_filters,
    result_rows,
    search_result,
)
from chinvex.retrieval.roles import about_tests
from chinvex.retrieval.scope import fel_passing, phrase_passing
from chinvex.storage import db, transactions
from chinvex.storage import lexical as lexical_rows
from chinvex.storage.search_reads import indexed_source_types

__all__ = ["GLOBAL_CONTEXT", "MAX_K", "InvalidFilterError", "Mode", "RetrievalError", "SearchRequest", "Searcher",
           "prefetch_vector_store"]

def prefetch_vector_store(configs: Sequence[ContextConfig]) -> None:
    """Get a cold, read-only search process (`chinvex search`, `chinvex answer`) ready to search
    `configs`: it will read vector stores and never write one, so embedded stores are opened
    through Chroma's bindings alone (chinvex.storage.vector_open.read_only_process); and the imports
    start (chinvex.embedding.heavy_imports): the built-in embedder's stack when a context uses it, the
    store's in the background."""
    from chinvex.embedding.factory import provider_of
    from chinvex.embedding.heavy_imports import prefetch_search_stack
    from chinvex.storage import chroma_warm
    from chinvex.storage.vector_open import read_only_process

    read_only_process()
    # Chroma's bindings (a large library to load) are not needed when the cold start found every
    # store's vector matrix current; a search that finds one stale after all loads them itself.
    matrices_answer = all(not c.index.chroma_url and chroma_warm.skipped(c.index.chroma_dir) for c in configs)
    prefetch_search_stack(embedder=any(provider_of(c.embedding) == "builtin" for c in configs),
                          reader_only=not any(c.index.chroma_url for c in configs),
                          vector_store=not matrices_answer)


@dataclass
class Gathered:
    """What the contexts of one search found, before fusion: hits with their result rows (by
    context and chunk id), each context's weight tables, modes and vector coverage."""

    asks_about_tests: bool
    hits: list[Hit] = field(default_factory=list)
    meta: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    modes: set[str] = field(default_factory=set)
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    role_tables: dict[str, dict[str, float]] = field(default_factory=dict)
    coverages: list[VectorCoverage] = field(default_factory=list)
    pinned: set[str] = field(default_factory=set)
    """Candidate keys kept in the top k for a rare query term (chinvex.retrieval.rare_terms)."""


class Searcher:
    def __init__(self) -> None:
        self._handles: dict[str, ContextHandle] = {}
        self._embedders: dict[str, Any] = {}
        self._rerankers: dict[str, Any] = {}
        self._lock = threading.Lock()

    # -- warm resources ---------------------------------------------------------------------

    def handle(self, config: ContextConfig) -> ContextHandle:
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
            h = ContextHandle(config=config, conn=conn)
            self._handles[config.name] = h
            return h

    @property
    def warm(self) -> bool:
        """Some search opened a vector store (or read its vector matrix) and made an embedder:
        what a server loads once."""
        with self._lock:
            return bool(self._embedders) and any(h.store is not None or h.matrix is not None
                                                 for h in self._handles.values())

    def embedder(self, config: ContextConfig):
        from chinvex.embedding.factory import make_embedder

        key = orjson.dumps(config.embedding.model_dump(mode="json") if config.embedding else None).decode()
        with self._lock:
            if key not in self._embedders:
                self._embedders[key] = make_embedder(config.embedding)
            return self._embedders[key]

    def _store(self, h: ContextHandle):
        """The context's vector store (context_handle.vector_store)."""
        return vector_store(h)

    def close(self) -> None:
        """Close every handle. The searcher's lock is released before a handle's is taken: a
        search holds its handle's lock while it asks for the embedder (which takes the
        searcher's), so holding both here, in the other order, could deadlock with it."""
        with self._lock:
            handles = list(self._handles.values())
            self._handles.clear()
        for h in handles:
            with h.lock:
                h.close()

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
        gathered = self._gather(configs, req, warnings)
        if not gathered.hits and req.filter.phrases:  # nothing holds the phrase: its words, said so
            quoted = ", ".join(f'"{p}"' for p in req.filter.phrases)
            warnings.append(f"no chunk holds {quoted} as a phrase; these results match its words apart")
            req = replace(req, exact_phrases=False)
            gathered = self._gather(configs, req, warnings)
        hits, meta = gathered.hits, gathered.meta
        candidates = [
            candidate_of(hit, meta[(hit.context, hit.chunk_id)],
                         gathered.role_tables[hit.context] if req.role_priors else None, gathered.asks_about_tests)
            for hit in hits
        ]
        share, signals = fts_share_for(req, configs, candidates)
        by_key = {f"{hit.context}\x00{hit.chunk_id}": hit for hit in hits}
        fused = fuse(candidates, gathered.weights, fts_weight=share)

        def row_of(item: Fused) -> dict[str, Any]:
            hit = by_key[item.candidate.key]
            return meta[(hit.context, hit.chunk_id)]

        fused, rerank_scores, reranker = self._rerank(configs, req, fused, lambda item: row_of(item)["text"],
                                                      warnings)
        if req.per_doc is not None:
            fused = at_most_per_document(
                fused, req.per_doc, lambda item: (by_key[item.candidate.key].context, row_of(item)["doc_id"]))
        if gathered.pinned:
            fused = keep_pinned(fused, gathered.pinned, req.k, lambda item: item.candidate.key)
        fused = fused[: req.k]
        terms = query_terms(req.query) if req.explain else None
        results = []
        for position, item in enumerate(fused, start=1):
            hit = by_key[item.candidate.key]
            results.append(search_result(position, hit, item, meta[(hit.context, hit.chunk_id)], terms, share,
                                         signals, rerank_scores.get(item.candidate.key)))
        mode = overall_mode(gathered.modes)
        covered = coverage.total(gathered.coverages)
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

    def _gather(self, configs: Sequence[ContextConfig], req: SearchRequest, warnings: list[str]) -> Gathered:
        """Every context's hits with their result rows, each context read in one snapshot."""
        gathered = Gathered(asks_about_tests=about_tests(req.query))
        query_vectors: dict[str, Any] = {}
        search_filter = req.filter
        for config in configs:
            h = self.handle(config)
            gathered.weights[config.name] = config.effective_weights()
            gathered.role_tables[config.name] = config.effective_role_weights()
            with h.lock, transactions.read(h.conn):
                ctx_hits, ctx_modes, ctx_coverage = self._search_context(h, req, warnings, query_vectors)
                rows = result_rows(h.conn, [hit.chunk_id for hit in ctx_hits])
                if search_filter.expression:  # exact, in SQL, for the chunks that reached here
                    passing = fel_passing(h.conn, search_filter, config.name, list(rows))
                    rows = {cid: row for cid, row in rows.items() if cid in passing}
                if search_filter.phrases:  # the legs searched only chunks holding them; checked once more
                    holding = phrase_passing(h.conn, search_filter, list(rows))
                    rows = {cid: row for cid, row in rows.items() if cid in holding}
                pins, holding_rare = _rare_matches(h, req) if req.mode == "hybrid" else (0, {})
            if ctx_coverage is not None:
                gathered.coverages.append(ctx_coverage)
            for hit in ctx_hits:
                row = rows.get(hit.chunk_id)
                # No row: a vector whose chunk is not committed in this SQLite state (an ingest
                # writes Chroma first) or was deleted since; only committed chunks are results.
                # Both legs already applied the filter; checking again costs nothing and keeps
                # a leg that got it wrong from returning what the user excluded.
                if row is None or not passes_filters(row, search_filter):
                    continue
                gathered.hits.append(hit)
                gathered.meta[(config.name, hit.chunk_id)] = row
            if pins:  # a rare compound's holders, rarest first (else the best full-text hits)
                kept = [hit for hit in gathered.hits if hit.context == config.name]
                holders = [hit for hit in kept if hit.chunk_id in holding_rare]
                gathered.pinned.update(
                    best_rare(((f"{hit.context}\x00{hit.chunk_id}", hit.fts, holding_rare[hit.chunk_id])
                               for hit in holders), pins) if holders else
                    best_lexical(((f"{hit.context}\x00{hit.chunk_id}", hit.fts) for hit in kept), pins))
            gathered.modes |= ctx_modes
        return gathered

    def _rerank(self, configs: Sequence[ContextConfig], req: SearchRequest, fused: list[Fused],
                text_of: Callable[[Fused], str], warnings: list[str],
                ) -> tuple[list[Fused], dict[str, float], str | None]:
        """The reranking stage (chinvex.retrieval.rerank) over the top `top_n` fused results, as
        the first context configures it: the results, each reordered one's reranker score by
        candidate key, and the reranker's name (None when the stage did not run)."""
        settings = next((c.retrieval.rerank for c in configs if c.retrieval), None)
        if req.rerank is False or (settings is None and not req.rerank):
            return fused, {}, None
        from chinvex.retrieval.rerank import (
            RerankerError,
            checked_scores,
            make_reranker,
            reranked_order,
        )

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
                    indexed.update(indexed_source_types(h.conn))
                except sqlite3.Error as exc:
                    raise RetrievalError(f"{config.name}: reading source types failed: {exc}") from None
        unknown = filters.unknown_source_types(types, [*SOURCE_TYPES, *indexed])
        if unknown:
            raise InvalidFilterError(filters.unknown_source_types_message(unknown, SOURCE_TYPES, indexed))

    def _search_context(self, h: ContextHandle, req: SearchRequest, warnings: list[str],
                        query_vectors: dict[str, Any]) -> tuple[list[Hit], set[str], VectorCoverage | None]:
        """One context's hits, modes and coverage (context_search.search_context)."""
        return search_context(self.embedder, h, req, warnings, query_vectors)


def _rare_matches(h: ContextHandle, req: SearchRequest) -> tuple[int, dict[str, int]]:
    """How many of this context's results the rare-term rule keeps (rare_terms.wanted_pins), and
    the chunks holding a rare token typed as one (a dotted name, a path, a flag, a quoted phrase,
    whose parts may each be common) with the match count of the rarest they hold. The words are
    the lexical leg's own (same cap: their counts are remembered, not counted again); for them
    the best full-text hits are kept, which holds the quality sets' figures, while a rare
    compound's few holders would rank below chunks that repeat its common parts."""
    compounds = compound_terms(req.query)
    counts = h.term_counts.counts(h.conn, query_terms(req.query) + compounds, max(count_cap(req), RARE_DF + 1))
    pins = wanted_pins(counts, req.k)
    holding: dict[str, int] = {}
    if pins:
        for term in sorted((t for t in compounds if 1 <= counts[t] <= RARE_DF), key=lambda t: counts[t]):
            for chunk_id in lexical_rows.chunk_ids_matching(h.conn, phrase(term), RARE_DF):
                holding.setdefault(chunk_id, counts[term])
    return pins, holding
