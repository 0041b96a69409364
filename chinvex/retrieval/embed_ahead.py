"""The query's embedding computed on a worker thread while the lexical leg runs, and for a warm
unfiltered search the vector neighbours with it. ONNX Runtime and SQLite both release the GIL,
so on two cores the two overlap."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from chinvex.errors import ChinvexError
from chinvex.models import ContextConfig
from chinvex.retrieval.context_handle import ContextHandle
from chinvex.retrieval.request import SearchRequest
from chinvex.retrieval.scope import Allowed
from chinvex.retrieval.vector_leg import is_small, nearest_with_vectors
from chinvex.storage import db

_EMBED_POOL: ThreadPoolExecutor | None = None
_EMBED_POOL_LOCK = threading.Lock()


def embed_pool() -> ThreadPoolExecutor:
    """The process's two embedding workers, started on first use."""
    global _EMBED_POOL
    with _EMBED_POOL_LOCK:
        if _EMBED_POOL is None:
            _EMBED_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chinvex-embed")
        return _EMBED_POOL


def resolved(value: Any) -> Any:
    """A query vector, waiting for it if a worker is still computing it."""
    return value.result() if isinstance(value, Future) else value


def embed_and_search(embedder: Any, query: str, vector: Future, store: Any, depth: int,
                     source_types: Sequence[str] | None,
                     small: bool) -> tuple[list[tuple[str, float]], dict[str, Any]]:
    """The worker's part of a warm unfiltered vector leg (embed_ahead): the query's embedding
    (published on `vector` as soon as it exists, for other contexts and for the exact cosines),
    its neighbours, and their stored vectors."""
    try:
        embedded = embedder.embed_query(query)
    except BaseException as exc:
        vector.set_exception(exc)
        raise
    vector.set_result(embedded)
    return nearest_with_vectors(store, embedded, depth, source_types, small=small)


def embed_ahead(embedder_of: Callable[[ContextConfig], Any], h: ContextHandle, req: SearchRequest,
                query_vectors: dict[str, Any], depth: int, allowed: Allowed | None,
                matrix: Any = None) -> Future | None:
    """Embed the query on a worker thread while the lexical leg runs. Anything that fails here
    is left to the vector leg, which reports it.

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
    searcher (MCP, eval) pays for it here once."""
    try:
        embedder = embedder_of(h.config)
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
    # `matrix`: the store's vector matrix, searched instead (chinvex.retrieval.vector_leg)
    store = (matrix if matrix is not None else h.store if h.store_checked else None) if allowed is None else None
    if store is None:
        query_vectors[embedder.name] = embed_pool().submit(embedder.embed_query, req.query)
        return None
    vector: Future = Future()
    query_vectors[embedder.name] = vector
    return embed_pool().submit(embed_and_search, embedder, req.query, vector, store, depth,
                               req.source_types, is_small(h.conn))
