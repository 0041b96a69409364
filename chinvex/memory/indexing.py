"""Indexing memories into the search index: chunk and embed outside any lock, then write their
documents through the ingest's writer, so they follow the same consistency rules as every
other document."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from chinvex.memory.items import Memory, to_document


class _Precomputed:
    """An embedder that answers from vectors computed before the index was locked, so the
    slow part of an add never holds the context's connection."""

    def __init__(self, vectors: dict[str, Any]):
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> Any:
        import numpy as np

        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


def prepare_memories(memories: Sequence[Memory], embedder: Any, *,
                     redact: bool = True) -> tuple[list[Any], dict[str, Any]]:
    """Chunk the memories' documents and embed their chunks (outside any lock). Memories were
    redacted when made; `redact` passes them through the ingest's redaction again (a no-op on
    redacted text) so that nothing indexed bypasses it, memories stored by an older version
    included."""
    from chinvex.ingest.prepare import prepare

    prepared = [prepare(to_document(memory), origin_uri=memory.uri, redact=redact) for memory in memories]
    texts = list(dict.fromkeys(c.embed_text for p in prepared for c in p.chunks))
    vectors = dict(zip(texts, embedder.embed_documents(texts))) if texts else {}
    return prepared, vectors


def write_prepared(conn: sqlite3.Connection, store: Any, prepared: Sequence[Any],
                   vectors: dict[str, Any]) -> int:
    """Write memory documents through the ingest's writer (Chroma first, then one SQLite
    transaction); returns the number of chunks written."""
    from chinvex.storage.writer import IndexWriter

    writer = IndexWriter(conn, lambda: store, lambda: _Precomputed(vectors))
    for doc in prepared:
        writer.add(doc)
    writer.flush()
    return sum(len(p.chunks) for p in prepared)
