"""One context's part of a search, inside its read snapshot: the filters' scope, the lexical
and vector legs (the embedding computed ahead on a worker), exact cosines for the vector
candidates, score completion, and the context's vector coverage."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from chinvex.errors import ChinvexError, StorageError
from chinvex.models import ContextConfig
from chinvex.retrieval import coverage, exact
from chinvex.retrieval.context_handle import ContextHandle, vector_failure, vector_store
from chinvex.retrieval.coverage import VectorCoverage
from chinvex.retrieval.embed_ahead import embed_ahead, resolved
from chinvex.retrieval.lexical_leg import LexicalLeg, fts_leg, fts_scores_for
from chinvex.retrieval.request import SearchRequest
from chinvex.retrieval.results import Hit
from chinvex.retrieval.scope import Allowed, allowed_for
from chinvex.retrieval.vector_leg import filtered_neighbours, matrix_store, neighbours
from chinvex.storage import db
from chinvex.storage.search_reads import chunk_count, data_version

HOLDER_NOTE = "chinvex.holder"
"""The note a writer leaves beside hybrid.db while it holds the context's lock
(`locking.lock_path(config).with_suffix(".holder")`), named here so that a search does not import
chinvex.locking and its file-lock library for one path (tests/retrieval/test_cold_start.py
checks they agree)."""
DEFAULT_FTS_DEPTH = 30
DEFAULT_VECTOR_DEPTH = 30


def search_context(embedder_of: Callable[[ContextConfig], Any], h: ContextHandle, req: SearchRequest, warnings: list[str],
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
    # The store's vector matrix, when it holds exactly the store's vectors, answers instead of
    # Chroma (chinvex.retrieval.vector_leg.MatrixStore).
    matrix = matrix_store(h.config, h.conn) if req.mode in ("hybrid", "vector") else None
    h.matrix = matrix if matrix is not None else h.matrix
    if req.mode in ("hybrid", "vector"):
        ahead = embed_ahead(embedder_of, h, req, query_vectors, vec_depth, allowed, matrix)
    if req.mode in ("hybrid", "fts"):
        leg = fts_leg(h.conn, req, fts_depth, allowed, h.term_counts)
    if req.mode in ("hybrid", "vector"):
        vec = vector_leg(embedder_of, h, req, warnings, query_vectors, vec_depth, allowed, ahead,
                               prefetched, matrix)
        if vec is not None:
            # Lexical-only candidates get their true cosine too (score completion), from the
            # same fetch of stored vectors.
            extra = [cid for cid, _ in leg.hits] if req.complete_scores and leg is not None else []
            try:
                vec, cosines = exact_cosines(h, vec, extra, query_vectors, prefetched, matrix)
            except StorageError as exc:
                # The vectors cannot be read consistently: answer from FTS alone rather than
                # mixing exact and approximate scores.
                warnings.append(vector_failure(config.name, "vector search failed", exc.message))
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
    counted = coverage_of(h, vector_leg_ran=vec is not None) if req.mode != "fts" else None
    if counted is not None:
        text = coverage.warning(config.name, counted, vector_leg_ran=vec is not None)
        if text is not None:
            warnings.append(text)
    return list(hits.values()), {mode}, counted


def coverage_of(h: ContextHandle, *, vector_leg_ran: bool) -> VectorCoverage:
    """This context's vector coverage for the search (chinvex.retrieval.coverage). Read in
    the search's snapshot; a count, when needed, is cached until the index or the store
    changes (`PRAGMA data_version` moves when another connection commits; the store's write
    token with every write to it)."""
    from chinvex.storage.coverage import current_coverage, gate_token

    try:
        recorded = current_coverage(h.config, h.conn)
    except (sqlite3.Error, OSError):
        recorded = None
    # The holder note exists while a writer holds the context's lock (locking.context_lock).
    writing = (Path(h.config.index.sqlite_path).parent / HOLDER_NOTE).exists()
    token = gate_token(h.config)
    found = coverage.from_record(recorded, vector_leg_ran=vector_leg_ran, token_now=token, writer_active=writing)
    if found is not None:
        return found
    state = (data_version(h.conn), id(h.store), token, vector_leg_ran)
    if h.counted_coverage is not None and h.counted_coverage[0] == state:
        return h.counted_coverage[1]
    chunks = chunk_count(h.conn)
    vectors: int | None = None
    if vector_leg_ran and h.store is not None:
        try:
            vectors = h.store.count()
        except ChinvexError:
            vectors = None
    found = coverage.counted(chunks, vectors, vector_leg_ran=vector_leg_ran)
    h.counted_coverage = (state, found)
    return found


def exact_cosines(h: ContextHandle, neighbours: list[tuple[str, float]], extra: list[str],
                   query_vectors: dict[str, Any], prefetched: dict[str, Any] | None = None,
                   store: Any = None) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """The vector leg's neighbours re-scored from their stored vectors (chinvex.retrieval.exact),
    best first, and the cosines of `extra` candidates (the lexical leg's) from the same
    fetch (less the vectors `prefetched` holds already, see embed_ahead). The approximate
    index only chooses the neighbours; every cosine in a result then comes from one formula
    whichever leg found it, identical in every process. A neighbour whose vector is gone by
    now keeps the store's score. `store`: the store the vector leg read (its matrix), else
    the context's."""
    embedder_name = db.get_meta(h.conn, "embedder")
    query = resolved(query_vectors.get(embedder_name or ""))
    store = store if store is not None else h.store
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


def vector_leg(embedder_of: Callable[[ContextConfig], Any], h: ContextHandle, req: SearchRequest, warnings: list[str],
                query_vectors: dict[str, Any], depth: int, allowed: Allowed | None = None,
                ahead: Future | None = None, prefetched: dict[str, Any] | None = None,
                matrix: Any = None) -> list[tuple[str, float]] | None:
    name = h.config.name
    stored = db.get_meta(h.conn, "embedder")
    try:
        embedder = embedder_of(h.config)
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
    store = matrix if matrix is not None else vector_store(h)
    if store is None:
        warnings.append(vector_failure(name, "vector store unavailable", h.store_error or ""))
        return None
    if allowed is not None and not allowed.doc_ids:
        return []  # nothing can match: no query embedding, no Chroma query
    try:
        if embedder.name not in query_vectors:
            query_vectors[embedder.name] = embedder.embed_query(req.query)
        vector = query_vectors[embedder.name] = resolved(query_vectors[embedder.name])
        if ahead is not None:
            found, vectors = ahead.result()
            if prefetched is not None:
                prefetched.update(vectors)
        elif allowed is None:
            found = neighbours(h.conn, store, vector, depth, req.source_types)
        else:
            found = filtered_neighbours(h.conn, store, vector, depth, req.filter, allowed)
    except ChinvexError as exc:
        warnings.append(vector_failure(name, "vector search failed", exc.message))
        return None
    except Exception as exc:
        warnings.append(f"{name}: vector search failed ({type(exc).__name__}: {exc}); results are FTS only")
        return None
    if found:
        return found
    # Nothing found: an empty store beside indexed chunks is damage, not an answer. (Only
    # counted here: COUNT(*) scans the table, too slow for every query at 100k chunks.)
    chunks = chunk_count(h.conn)
    try:
        empty = bool(chunks) and store.count() == 0
    except ChinvexError as exc:
        warnings.append(vector_failure(name, "vector search failed", exc.message))
        return None
    if empty:
        warnings.append(f"{name}: the vector store is empty although {chunks} chunks are indexed "
                        "(run 'chinvex doctor --repair'); results are FTS only")
        return None
    return found
