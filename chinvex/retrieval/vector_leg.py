"""The vector leg's neighbour search: exhaustive for small indexes, through Chroma's graph for
large ones, and among the allowed chunks only when a filter narrows the search (by the cheapest
strategy for the allowed set's size, filters.plan_vector_leg). The cosines that rank results
are computed afterwards from the stored vectors (chinvex.retrieval.exact).

When the store's vector matrix (chinvex.storage.vector_matrix) holds exactly the store's current
content, `MatrixStore` answers instead of Chroma (within KEPT_PROCESS_LIMIT): the search is then
exhaustive, whatever the index's size, and Chroma's index is never loaded."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from chinvex.errors import StorageError
from chinvex.retrieval import exact, filters
from chinvex.retrieval.filters import SearchFilter
from chinvex.retrieval.scope import Allowed, allowed_among, every_allowed_chunk
from chinvex.storage import vector_matrix
from chinvex.storage.db import get_meta
from chinvex.storage.search_reads import has_at_most_chunks
from chinvex.storage.vector_signature import recorded_signature

EXHAUSTIVE_LIMIT = 1_000
"""Up to this many chunks the vector leg is exact: Chroma is asked for this many neighbours,
which widens its HNSW beam (ef) to the whole collection, so every vector is scored. Above it the
neighbours are the approximate graph's, and Chroma builds that graph differently every time
(a batch's vectors are inserted in parallel, in no fixed order): two stores holding the same
vectors (an imported copy, a store rebuilt by `doctor --repair`) answered weak queries with
different neighbours, and hybrid results differed between them. The exhaustive search costs more
the larger the collection, hence the limit; larger contexts pay only a bounded count."""


RESCORE_MARGIN = 10
"""An exact search rescores (chinvex.retrieval.exact) this many neighbours past the depth, in
Chroma's own (float32) order, and keeps the exact top `depth`."""


class MatrixStore:
    """The reads a search makes of a vector store, answered from the store's vector matrix:
    exhaustive neighbours (float32 candidates, then exact cosines), stored vectors by id."""

    exhaustive = True

    def __init__(self, matrix: vector_matrix.VectorMatrix):
        self.matrix = matrix

    def query(self, vector: Any, n: int, *, source_types: Sequence[str] | None = None,
              ids: Sequence[str] | None = None) -> list[tuple[str, float]]:
        """The `n` nearest chunks (among `ids` when given), by exact cosine."""
        return self.query_with_vectors(vector, n, source_types=source_types, ids=ids)[0]

    def query_with_vectors(self, vector: Any, n: int, *, source_types: Sequence[str] | None = None,
                           ids: Sequence[str] | None = None,
                           ) -> tuple[list[tuple[str, float]], dict[str, Any]]:
        """`query`, and the neighbours' stored vectors. The float32 product picks
        RESCORE_MARGIN more candidates than asked; exact cosines choose and order the `n`."""
        if n <= 0 or (ids is not None and not ids):
            return [], {}
        rows = None if ids is None else [row for _, row in self.matrix.positions(list(ids))]
        found = self.matrix.candidates(vector, n + RESCORE_MARGIN, source_types=source_types, rows=rows)
        vectors = self.matrix.rows([cid for cid, _ in found])
        best = exact.ranked(exact.scored(vector, vectors), n)
        return best, {cid: vectors[cid] for cid, _ in best}

    def embeddings(self, ids: Sequence[str]) -> dict[str, Any]:
        return self.matrix.rows(list(ids))

    def existing(self, ids: Sequence[str]) -> set[str]:
        return {cid for cid, _ in self.matrix.positions(list(ids))}

    def count(self) -> int:
        return len(self.matrix)

    def close(self) -> None:
        """Nothing to let go of: the mapping is kept per process while the file is unchanged."""


KEPT_PROCESS_LIMIT = 25_000
"""A process that keeps searching (the MCP server, the web UI, a watcher's relay, an in-process
searcher) reads the matrix only up to this many vectors; above it, it loads Chroma's index once
and queries it. Each query pays the product over every row, which beat Chroma's approximate
search at ~10k vectors but cost several times a whole warm search at ~100k (bench/RESULTS.md,
session 21). A one-shot read-only command (`chinvex search`, `answer`, `pack`:
chinvex.storage.vector_open.read_only_process) reads it up to vector_matrix.MAX_VECTORS: one
product costs far less than loading Chroma's index."""


def matrix_store(config: Any, conn: sqlite3.Connection) -> MatrixStore | None:
    """The context's vector matrix as a store, when it holds exactly the store's current vectors
    (an embedded store only) and this process reads matrices of its size (KEPT_PROCESS_LIMIT);
    None otherwise, and the search reads Chroma."""
    from chinvex.storage.vector_open import reads_only

    if config.index.chroma_url:
        return None
    matrix = vector_matrix.current(config.index.chroma_dir, config.index.sqlite_path,
                                   recorded_signature(conn), get_meta(conn, "embedder"))
    if matrix is None or (len(matrix) > KEPT_PROCESS_LIMIT and not reads_only()):
        return None
    return MatrixStore(matrix)


def neighbours(conn: sqlite3.Connection, store: Any, vector: Any, depth: int,
                source_types: Sequence[str] | None) -> list[tuple[str, float]]:
    """The nearest chunks, best first. An index of at most EXHAUSTIVE_LIMIT chunks is searched
    exhaustively (the same answer from any store holding the same vectors) and its top `depth`
    plus RESCORE_MARGIN are returned for exact rescoring; a larger one through the approximate
    graph, its top `depth`."""
    return nearest(store, vector, depth, source_types, small=is_small(conn))


def is_small(conn: sqlite3.Connection) -> bool:
    """At most EXHAUSTIVE_LIMIT chunks. The count stops at the limit (never a scan of a large
    table)."""
    return has_at_most_chunks(conn, EXHAUSTIVE_LIMIT)


def nearest(store: Any, vector: Any, depth: int, source_types: Sequence[str] | None, *,
            small: bool) -> list[tuple[str, float]]:
    """`neighbours` once the index's size is known: touches the store only, so it may run on a
    worker thread while the connection serves the lexical leg."""
    if isinstance(store, MatrixStore):
        return store.query(vector, depth + RESCORE_MARGIN, source_types=source_types)
    if not _exhaustive(small, depth):
        return store.query(vector, depth, source_types=source_types)
    return store.query(vector, EXHAUSTIVE_LIMIT, source_types=source_types)[:depth + RESCORE_MARGIN]


def nearest_with_vectors(store: Any, vector: Any, depth: int, source_types: Sequence[str] | None,
                         *, small: bool) -> tuple[list[tuple[str, float]], dict[str, Any]]:
    """`nearest`, with the neighbours' stored vectors from the same Chroma call. A small store
    is searched exhaustively and its vectors are fetched by id for the kept neighbours only."""
    if isinstance(store, MatrixStore):
        return store.query_with_vectors(vector, depth + RESCORE_MARGIN, source_types=source_types)
    if not _exhaustive(small, depth):
        return store.query_with_vectors(vector, depth, source_types=source_types)
    found = nearest(store, vector, depth, source_types, small=True)
    return found, store.embeddings([cid for cid, _ in found])


def _exhaustive(small: bool, depth: int) -> bool:
    """Whether the neighbour search asks for every vector (see EXHAUSTIVE_LIMIT)."""
    return small and depth < EXHAUSTIVE_LIMIT


def filtered_neighbours(conn: sqlite3.Connection, store: Any, vector: Any, depth: int,
                         search_filter: SearchFilter, allowed: Allowed) -> list[tuple[str, float]]:
    """The `depth` nearest chunks among those the filter allows, by the cheapest strategy for
    the allowed set's size (`filters.plan_vector_leg`)."""
    plan = filters.plan_vector_leg(len(allowed.chunk_ids), exact_limit=filters.EXACT_LIMIT,
                             restrict_limit=filters.RESTRICT_LIMIT)
    if plan == "none":
        return []
    if plan == "exact":
        return exact.ranked(exact.scored(vector, store.embeddings(allowed.chunk_ids)), depth)
    if plan == "restricted":
        return restricted_query(store, vector, depth, allowed.chunk_ids)
    requested = depth * 2
    while True:
        found = store.query(vector, requested, source_types=list(search_filter.source_types) or None)
        keep = allowed_among(conn, allowed, [cid for cid, _ in found])
        hits = [(cid, sim) for cid, sim in found if cid in keep]
        step = filters.next_fetch(requested, len(found), len(hits), depth, max_fetch=filters.OVERFETCH_MAX)
        if step == "done":
            return hits[:depth]
        if step == "restrict":
            # The filter allows many chunks but few near the query: search among all of them.
            return restricted_query(store, vector, depth, every_allowed_chunk(conn, allowed))
        requested = step


def restricted_query(store: Any, vector: Any, depth: int, chunk_ids: list[str]) -> list[tuple[str, float]]:
    """Nearest neighbours among `chunk_ids`. Chroma fails the whole query ("Error finding id")
    when one id has no vector, which happens when an ingest deleted vectors after committing the
    SQLite state this search still reads (or after a crash, until the next ingest settles it);
    then the query is repeated with the ids that are present."""
    try:
        return store.query(vector, depth, ids=chunk_ids)
    except StorageError:
        present = store.existing(chunk_ids)
        return store.query(vector, depth, ids=[cid for cid in chunk_ids if cid in present])
