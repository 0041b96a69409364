"""The Chroma side of an index: one vector per chunk_id, cosine space, filterable metadata.

Chroma is derived data: hybrid.db decides which chunks exist. `VectorStore` is what the rest of
chinvex uses: it writes, deletes and queries one collection. Vectors are always passed
explicitly (`embedding_function=None`): Chroma never embeds or downloads anything. How a client
is opened (embedded store or `index.chroma_url` server) is chinvex.storage.vector_open; how
several processes share one embedded store (a gate per store, a client per store per process,
reloaded after another process wrote) is chinvex.storage.vector_gate and vector_clients. If a
read still fails, the client is opened again and the read retried once, for writers that
bypass the gate (a crashed run, another tool).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from chinvex.errors import StorageError
from chinvex.models import ContextConfig
from chinvex.storage.coverage import CHROMA_DB_FILE, COLLECTION_META_KEY, store_identity
from chinvex.storage.db import get_meta, set_meta
from chinvex.storage.vector_clients import SharedClient
from chinvex.storage.vector_errors import (
    DamagedStoreError,
    MissingStoreError,
    ReadOnlyStoreError,
    is_not_found,
    is_segment_damage,
    is_storage_failure,
    write_error,
)
from chinvex.storage.vector_matrix_changes import MatrixChanges
from chinvex.storage.vector_signature import recorded_signature

SYNC_THRESHOLD = 1
"""Chroma's `hnsw.sync_threshold` for chinvex collections: its HNSW index is saved after every
write. With Chroma's default (1,000) the records written since the last save live only in its
log, and every process that opens the store inserts them into its own copy of the graph in
parallel and in a random order (rayon over a randomly seeded hash map): each process then had a
slightly different graph, the approximate search returned slightly different neighbours, and
the same query gave different results from one `chinvex search` to the next. Saved after each
write, the graph on disk is the one every reader uses. Chroma saves only the elements a write
changed, plus the id map."""
_GET_PAGE = 5000

T = TypeVar("T")


def collection_name(conn: sqlite3.Connection, *, create: bool) -> str | None:
    """The collection's name is fixed at first use and kept in hybrid.db, so renaming a context
    never orphans its vectors on a shared Chroma server."""
    name = get_meta(conn, COLLECTION_META_KEY)
    if name is None and create:
        name = f"chinvex_{uuid.uuid4().hex[:16]}"
        set_meta(conn, COLLECTION_META_KEY, name)
    return name


class VectorStore:
    """One context's Chroma collection: upserts and deletes under the write gate, reads under
    the read gate with one retry on a reopened client, and nearest-neighbour queries."""

    def __init__(self, config: ContextConfig, name: str, *, create: bool = True):
        self.config = config
        self.name = name
        self.fresh = False
        """This object created the collection (or emptied it): nothing older is in it."""
        self._shared: SharedClient | None = None
        self._collection: Any = None
        self._generation = -1
        self.changes: MatrixChanges | None = None
        """What this object wrote, over the vector matrix current before its first write
        (chinvex.storage.vector_matrix_refresh), once it has written."""
        self.matrix_inputs: tuple[Any, str | None] = (None, None)
        """hybrid.db's recorded store signature and embedder when this object was opened."""
        if not config.index.chroma_url:
            db_file = Path(config.index.chroma_dir) / CHROMA_DB_FILE
            if not db_file.exists():
                if not create:  # read paths never create a store (an empty one would hide the loss)
                    raise MissingStoreError(
                        f"Chroma store at {config.index.chroma_dir} is missing; run 'chinvex "
                        f"ingest --context {config.name}' to embed the chunks again")
                self.fresh = True
        self._shared = SharedClient.acquire(config)
        try:
            try:
                with self._shared.access(write=False) as client:
                    self._collection_of(client, create=False)
            except Exception as exc:
                if not create or isinstance(exc, (DamagedStoreError, ReadOnlyStoreError)):
                    raise
                if is_not_found(exc):
                    self.fresh = True
                with self._shared.access(write=True) as client:
                    self._collection_of(client, create=True)
        except StorageError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            if not create and is_not_found(exc):
                raise MissingStoreError(
                    f"Chroma collection {name!r} is missing from {config.index.chroma_url or config.index.chroma_dir}; "
                    f"run 'chinvex ingest --context {config.name}' to embed the chunks again") from None
            raise StorageError(f"Chroma collection {name!r} is not available: {exc}") from None

    def identity(self, conn: sqlite3.Connection) -> str | None:
        """This store's `coverage.store_identity` (the collection name is read from `conn`)."""
        return store_identity(self.config, conn)

    @classmethod
    def open(cls, config: ContextConfig, conn: sqlite3.Connection, *, create: bool = True) -> "VectorStore | None":
        name = collection_name(conn, create=create)
        if name is None:
            return None
        store = cls(config, name, create=create)
        store.matrix_inputs = (recorded_signature(conn), get_meta(conn, "embedder"))
        return store

    def close(self) -> None:
        """Let go of the shared client (closed with its last user)."""
        shared, self._shared = self._shared, None
        self._collection = None
        if shared is not None:
            shared.release()

    def _shared_client(self) -> SharedClient:
        if self._shared is None:
            raise StorageError(f"Chroma collection {self.name!r} was closed")
        return self._shared

    def _collection_of(self, client: Any, *, create: bool) -> Any:
        shared = self._shared_client()
        if self._collection is None or self._generation != shared.generation:
            if create:
                self._collection = client.get_or_create_collection(
                    self.name, embedding_function=None,
                    configuration={"hnsw": {"space": "cosine", "sync_threshold": SYNC_THRESHOLD}},
                )
            else:
                self._collection = client.get_collection(self.name, embedding_function=None)
            self._generation = shared.generation
        return self._collection

    def _read(self, fn: Callable[[Any], T]) -> T:
        """Run a read under the gate; if Chroma fails, reopen the client and retry once."""
        shared = self._shared_client()
        with shared.access(write=False) as client:
            try:
                return fn(self._collection_of(client, create=False))
            except StorageError:
                raise
            except Exception:
                pass
            try:
                return fn(self._collection_of(shared.reopen(), create=False))
            except StorageError:
                raise
            except Exception as exc:
                shared.drop_client()
                raise StorageError(f"Chroma collection {self.name!r} cannot be read even after "
                                   f"reopening it: {type(exc).__name__}: {exc}") from None

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """Hold the gate exclusively around one write; whatever Chroma raises (a full disk, a
        file-size limit, a damaged file) becomes a one-line `StorageError` naming the store.
        The first write notes which vector matrix was current before it (`changes`)."""
        if self.changes is None:
            self.changes = MatrixChanges(None if self.fresh else self._current_matrix(), fresh=self.fresh)
        try:
            shared = self._shared_client()
            with shared.access(write=True) as client:
                collection = self._collection_of(client, create=True)
                if _sync_threshold(collection) != SYNC_THRESHOLD:
                    collection = self._save_every_write(collection)
                yield collection
                if shared.gate is not None:
                    self.changes.token = shared.gate.token().decode("ascii", "replace")
        except StorageError:
            raise
        except Exception as exc:
            if isinstance(exc, OSError) or is_storage_failure(exc):
                raise write_error(self.config, exc) from None
            raise

    def _save_every_write(self, collection: Any) -> Any:
        """A collection made by an older chinvex keeps Chroma's default threshold: set it (see
        SYNC_THRESHOLD), then reopen the client (callers hold the write gate), whose segment
        writer read the old value when it loaded; its first write then also saves the records
        the log held."""
        collection.modify(configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD}})
        self._collection = None
        return self._collection_of(self._shared_client().reopen(), create=True)

    def _batches(self, n: int) -> Iterable[slice]:
        step = max(1, min(self._shared_client().max_batch, 1000))
        for start in range(0, n, step):
            yield slice(start, min(n, start + step))

    def _current_matrix(self) -> Any:
        """The vector matrix that holds exactly this store's vectors now, or None."""
        if self.config.index.chroma_url:
            return None
        from chinvex.storage import vector_matrix

        recorded, embedder = self.matrix_inputs
        return vector_matrix.current(self.config.index.chroma_dir, self.config.index.sqlite_path,
                                     recorded, embedder)

    def upsert(self, ids: Sequence[str], embeddings: Any, metadatas: Sequence[dict[str, Any]]) -> None:
        if not ids:
            return
        with self._writing() as collection:
            for part in self._batches(len(ids)):
                collection.upsert(
                    ids=list(ids[part]), embeddings=embeddings[part], metadatas=list(metadatas[part])
                )
            assert self.changes is not None
            self.changes.added(ids, metadatas)

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if not ids:
            return
        with self._writing() as collection:
            for part in self._batches(len(ids)):
                collection.delete(ids=ids[part])
            assert self.changes is not None
            self.changes.removed(ids)

    def existing(self, ids: Sequence[str]) -> set[str]:
        def run(collection: Any) -> set[str]:
            found: set[str] = set()
            for part in self._batches(len(ids)):
                found.update(collection.get(ids=list(ids[part]), include=[])["ids"])
            return found

        return self._read(run) if ids else set()

    def embeddings(self, ids: Sequence[str]) -> dict[str, Any]:
        def run(collection: Any) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for part in self._batches(len(ids)):
                got = collection.get(ids=list(ids[part]), include=["embeddings"])
                for cid, vec in zip(got["ids"], got["embeddings"]):
                    out[cid] = vec
            return out

        return self._read(run) if ids else {}

    def ids_for_docs(self, doc_ids: Sequence[str]) -> set[str]:
        def run(collection: Any) -> set[str]:
            found: set[str] = set()
            for start in range(0, len(doc_ids), 200):
                part = list(doc_ids[start:start + 200])
                where = {"doc_id": part[0]} if len(part) == 1 else {"doc_id": {"$in": part}}
                found.update(collection.get(where=where, include=[])["ids"])
            return found

        return self._read(run) if doc_ids else set()

    def all_ids(self) -> set[str]:
        """Every id, paged under one hold of the gate so no write shifts the pages."""

        def run(collection: Any) -> set[str]:
            return {cid for page in _pages(collection, []) for cid in page["ids"]}

        return self._read(run)

    def count(self) -> int:
        return self._read(lambda collection: collection.count())

    def all_vectors(self) -> tuple[list[str], list[Any], list[str]]:
        """Every id with its vector and its source type (from its metadata, "" when none),
        paged under one hold of the gate (chinvex.storage.vector_matrix copies them)."""

        def run(collection: Any) -> tuple[list[str], list[Any], list[str]]:
            ids: list[str] = []
            vectors: list[Any] = []
            types: list[str] = []
            for got in _pages(collection, ["embeddings", "metadatas"]):
                ids.extend(got["ids"])
                vectors.extend(got["embeddings"] if len(got["ids"]) else [])
                types.extend(str((meta or {}).get("source_type") or "") for meta in (got["metadatas"] or []))
            return ids, vectors, types

        return self._read(run)

    def segment_damage(self) -> str | None:
        """Why the collection's vector segment cannot be loaded (see SEGMENT_DAMAGE_MARKERS), or
        None. Reading one stored vector makes Chroma load the segment's files (a count or an id
        listing may be answered from its SQLite file alone)."""
        try:
            self._read(lambda collection: collection.get(limit=1, include=["embeddings"]))
        except StorageError as exc:
            if is_segment_damage(exc.message):
                return exc.message
            raise
        return None

    def query(
        self, vector: Any, n: int, *, source_types: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest chunks as (chunk_id, cosine similarity); `ids` restricts the search to those
        chunks (search filters on paths and dates, which the vectors' metadata does not hold)."""
        return self._query(vector, n, source_types, ids, with_vectors=False)[0]

    def query_with_vectors(self, vector: Any, n: int, *, source_types: Sequence[str] | None = None,
                           ) -> tuple[list[tuple[str, float]], dict[str, Any]]:
        """`query`, and the stored vector of every neighbour from the same call: the exact
        rescoring needs them, and a second lookup by id would cost
        another round trip per search."""
        return self._query(vector, n, source_types, None, with_vectors=True)

    def _query(self, vector: Any, n: int, source_types: Sequence[str] | None,
               ids: Sequence[str] | None, *, with_vectors: bool,
               ) -> tuple[list[tuple[str, float]], dict[str, Any]]:
        if n <= 0 or (ids is not None and not ids):
            return [], {}
        restrict = list(ids) if ids is not None else None
        where = None
        if source_types:
            types = list(source_types)
            where = {"source_type": types[0]} if len(types) == 1 else {"source_type": {"$in": types}}

        def run(collection: Any) -> tuple[list[tuple[str, float]], dict[str, Any]]:
            # No count() to clamp n_results: Chroma (>= 1.5) returns what it has, and a count
            # per query grows with the collection.
            got = collection.query(
                query_embeddings=[vector], n_results=n, where=where, ids=restrict,
                include=["distances", "embeddings"] if with_vectors else ["distances"],
            )
            ids = got["ids"][0] if got["ids"] else []
            dists = got["distances"][0] if got.get("distances") else []
            found = [(cid, 1.0 - float(d)) for cid, d in zip(ids, dists)]
            if not with_vectors:
                return found, {}
            vectors = got["embeddings"][0] if got.get("embeddings") is not None and len(got["embeddings"]) else []
            return found, dict(zip(ids, vectors))

        return self._read(run)

    def drop_other_collections(self) -> int:
        """Delete every other collection of this (embedded, one-context) store; returns how
        many. Never used on a Chroma server, whose collections may be other contexts'."""
        if self.config.index.chroma_url:
            return 0
        dropped = 0
        with self._writing():
            client = self._shared_client().current()
            for collection in client.list_collections():
                name = getattr(collection, "name", collection)
                if name != self.name:
                    client.delete_collection(name)
                    dropped += 1
        return dropped

    def drop(self) -> None:
        """Remove the whole collection (re-embedding with another model)."""
        shared = self._shared_client()
        with shared.access(write=True) as client:
            try:
                client.delete_collection(self.name)
            except Exception:
                pass
            self._collection = None
            self._collection_of(client, create=True)
        self.fresh = True
        self.changes = MatrixChanges(None, fresh=True)


def _pages(collection: Any, include: list[str]) -> Iterator[dict[str, Any]]:
    """The collection's rows, _GET_PAGE at a time (`include`: what `get` returns besides ids);
    the caller holds the gate throughout, so that no write shifts the pages."""
    offset = 0
    while True:
        got = collection.get(include=include, limit=_GET_PAGE, offset=offset)
        yield got
        if len(got["ids"]) < _GET_PAGE:
            return
        offset += _GET_PAGE


def _sync_threshold(collection: Any) -> int | None:
    try:
        hnsw = (collection.configuration_json or {}).get("hnsw") or {}
    except Exception:  # pragma: no cover - another chromadb layout: leave the collection as it is
        return SYNC_THRESHOLD
    return hnsw.get("sync_threshold")
