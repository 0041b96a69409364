"""The Chroma side of an index: one vector per chunk_id, cosine space, filterable metadata.

Chroma is derived data: hybrid.db decides which chunks exist. Embedded `PersistentClient` by
default; `index.chroma_url` points the same code at a `chroma run` server. Vectors are always
passed explicitly (`embedding_function=None`): Chroma never embeds or downloads anything.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlparse

from chinvex.errors import StorageError
from chinvex.models import ContextConfig
from chinvex.storage.db import get_meta, set_meta

COLLECTION_META_KEY = "chroma_collection"
_GET_PAGE = 5000


def _settings():
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def _client(config: ContextConfig):
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import chromadb

    url = config.index.chroma_url
    try:
        if url:
            parsed = urlparse(url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise StorageError(f"index.chroma_url {url!r}: expected http(s)://host:port")
            return chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=_settings(),
            )
        return chromadb.PersistentClient(path=config.index.chroma_dir, settings=_settings())
    except StorageError:
        raise
    except Exception as exc:
        where = url or config.index.chroma_dir
        raise StorageError(f"Chroma store at {where} is not available: {exc}") from None


def collection_name(conn: sqlite3.Connection, *, create: bool) -> str | None:
    """The collection's name is fixed at first use and kept in hybrid.db, so renaming a context
    never orphans its vectors on a shared Chroma server."""
    name = get_meta(conn, COLLECTION_META_KEY)
    if name is None and create:
        name = f"chinvex_{uuid.uuid4().hex[:16]}"
        set_meta(conn, COLLECTION_META_KEY, name)
    return name


class VectorStore:
    def __init__(self, config: ContextConfig, name: str, *, create: bool = True):
        self.config = config
        self.name = name
        self._client = _client(config)
        try:
            if create:
                self._collection = self._client.get_or_create_collection(
                    name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
                )
            else:
                self._collection = self._client.get_collection(name, embedding_function=None)
        except Exception as exc:
            raise StorageError(f"Chroma collection {name!r} is not available: {exc}") from None
        self._max_batch = self._client.get_max_batch_size() if hasattr(self._client, "get_max_batch_size") else 5000

    @classmethod
    def open(cls, config: ContextConfig, conn: sqlite3.Connection, *, create: bool = True) -> "VectorStore | None":
        name = collection_name(conn, create=create)
        if name is None:
            return None
        return cls(config, name, create=create)

    def _batches(self, n: int) -> Iterable[slice]:
        step = max(1, min(self._max_batch, 1000))
        for start in range(0, n, step):
            yield slice(start, min(n, start + step))

    def upsert(self, ids: Sequence[str], embeddings: Any, metadatas: Sequence[dict[str, Any]]) -> None:
        if not ids:
            return
        for part in self._batches(len(ids)):
            self._collection.upsert(
                ids=list(ids[part]), embeddings=embeddings[part], metadatas=list(metadatas[part])
            )

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for part in self._batches(len(ids)):
            self._collection.delete(ids=ids[part])

    def existing(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for part in self._batches(len(ids)):
            found.update(self._collection.get(ids=list(ids[part]), include=[])["ids"])
        return found

    def embeddings(self, ids: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for part in self._batches(len(ids)):
            got = self._collection.get(ids=list(ids[part]), include=["embeddings"])
            for cid, vec in zip(got["ids"], got["embeddings"]):
                out[cid] = vec
        return out

    def ids_for_docs(self, doc_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(doc_ids), 200):
            part = list(doc_ids[start:start + 200])
            where = {"doc_id": part[0]} if len(part) == 1 else {"doc_id": {"$in": part}}
            found.update(self._collection.get(where=where, include=[])["ids"])
        return found

    def all_ids(self) -> set[str]:
        found: set[str] = set()
        offset = 0
        while True:
            got = self._collection.get(include=[], limit=_GET_PAGE, offset=offset)["ids"]
            found.update(got)
            if len(got) < _GET_PAGE:
                return found
            offset += _GET_PAGE

    def count(self) -> int:
        return self._collection.count()

    def query(
        self, vector: Any, n: int, *, source_types: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """Nearest chunks as (chunk_id, cosine similarity)."""
        total = self.count()
        if total == 0 or n <= 0:
            return []
        where = None
        if source_types:
            types = list(source_types)
            where = {"source_type": types[0]} if len(types) == 1 else {"source_type": {"$in": types}}
        got = self._collection.query(
            query_embeddings=[vector], n_results=min(n, total), where=where, include=["distances"]
        )
        ids = got["ids"][0] if got["ids"] else []
        dists = got["distances"][0] if got.get("distances") else []
        return [(cid, 1.0 - float(d)) for cid, d in zip(ids, dists)]

    def drop(self) -> None:
        """Remove the whole collection (re-embedding with another model)."""
        try:
            self._client.delete_collection(self.name)
        except Exception:
            pass
        self._collection = self._client.get_or_create_collection(
            self.name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
        )
