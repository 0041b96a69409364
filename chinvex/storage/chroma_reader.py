"""Reading an embedded Chroma store through Chroma's Rust bindings, without `import chromadb`.

`chinvex search` and `chinvex answer` are short processes that only read, and an agent waits
for each one. Importing the `chromadb` package (its API types, embedding functions, telemetry,
HTTP client) costs more CPU than all the rest of a cold search; the embedded store itself is the
compiled `chromadb_rust_bindings` module, cheap to import, which `chromadb` drives through
`chromadb.api.rust.RustBindingsAPI`. Processes that declared themselves read-only
(`chinvex.storage.vector_open.read_only_process`) open their stores through `ReadClient` instead:
the same bindings, called the way RustBindingsAPI calls them, with the same settings
`PersistentClient` passes (`Settings` defaults: migrations applied, MD5 migration hashes, no
reset), so the same files give the same neighbours and the same stored vectors.

Only the calls chinvex's read paths make exist here (`get_collection`, and on a collection
`get`, `query`, `count`), returning what chromadb's Collection returns for them (ids, embeddings,
distances). There is no write method: a read-only process that tried to write would fail loudly.
The bindings' errors are chromadb's own exception classes (importing them loads `chromadb`, on
that error path only), so callers classify them as before.

`open_reader` returns None when the installed bindings do not have the expected shape (a
chromadb release that changed them); the caller then uses `chromadb.PersistentClient`, and
`tests/storage/test_chroma_reader.py` compares both on the same store.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import orjson

TENANT = "default_tenant"
DATABASE = "default_database"
REQUIRED = ("Bindings", "SqliteDBConfig", "MigrationHash", "MigrationMode")
READ_CALLS: dict[str, tuple[str, ...]] = {
    "get_collection": ("name", "tenant", "database"),
    "get": ("collection_id", "ids", "where", "limit", "offset", "where_document", "include", "tenant",
            "database"),
    "query": ("collection_id", "ids", "query_embeddings", "n_results", "where", "where_document", "include",
              "tenant", "database"),
    "count": ("collection_id", "tenant", "database"),
    "get_max_batch_size": (),
}
"""The bindings' methods this module calls, with their parameters in the order it passes them
(positionally, as chromadb does). `calls_match` checks them against the installed bindings'
own signatures, so a chromadb release that renames or reorders them makes chinvex use
chromadb's client instead of passing values to the wrong parameters."""


def _hnsw_cache_size() -> int:
    """As RustBindingsAPI sizes it: each HNSW index holds 5 files open."""
    try:
        import resource

        return resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 5
    except (ImportError, OSError, ValueError):  # pragma: no cover - Windows
        return 100


def _as_list(vector: Any) -> list[float]:
    tolist = getattr(vector, "tolist", None)
    return tolist() if tolist is not None else list(vector)


class ReadCollection:
    """One collection, read through the bindings (the subset of chromadb's Collection chinvex's
    read paths call)."""

    def __init__(self, bindings: Any, collection_id: str, name: str):
        self._bindings = bindings
        self._id = collection_id
        self.name = name

    def get(self, ids: Sequence[str] | None = None, *, where: dict[str, Any] | None = None,
            limit: int | None = None, offset: int | None = None,
            include: Sequence[str] = ()) -> dict[str, Any]:
        got = self._bindings.get(self._id, list(ids) if ids is not None else None,
                                 orjson.dumps(where).decode() if where else None, limit, offset or 0,
                                 None, list(include), TENANT, DATABASE)
        return {"ids": got.ids, "embeddings": got.embeddings if "embeddings" in include else None,
                "metadatas": got.metadatas if "metadatas" in include else None}

    def query(self, query_embeddings: Sequence[Any], n_results: int = 10, *,
              where: dict[str, Any] | None = None, ids: Sequence[str] | None = None,
              include: Sequence[str] = ("distances",)) -> dict[str, Any]:
        got = self._bindings.query(self._id, list(ids) if ids is not None else None,
                                   [_as_list(v) for v in query_embeddings], n_results,
                                   orjson.dumps(where).decode() if where else None, None, list(include),
                                   TENANT, DATABASE)
        return {"ids": got.ids, "distances": got.distances if "distances" in include else None,
                "embeddings": got.embeddings if "embeddings" in include else None}

    def count(self) -> int:
        return int(self._bindings.count(self._id, TENANT, DATABASE))


class ReadClient:
    """An embedded store opened for reading (see the module docstring)."""

    def __init__(self, bindings: Any):
        self._bindings: Any = bindings

    def get_collection(self, name: str, embedding_function: Any = None) -> ReadCollection:
        collection = self._bindings.get_collection(name, TENANT, DATABASE)
        return ReadCollection(self._bindings, str(collection.id), collection.name)

    def get_or_create_collection(self, *args: Any, **kwargs: Any) -> Any:
        from chinvex.errors import StorageError

        raise StorageError("this process opened its vector stores for reading only (chinvex search / "
                           "answer) and cannot write them")

    def get_max_batch_size(self) -> int:
        return int(self._bindings.get_max_batch_size())

    def close(self) -> None:
        self._bindings = None


def bindings_available() -> bool:
    """Whether the installed bindings have the shape `open_reader` drives."""
    try:
        from chinvex.embedding.heavy_imports import load

        load("chromadb_rust_bindings")
        import chromadb_rust_bindings as rust
    except ImportError:
        return False
    return all(hasattr(rust, name) for name in REQUIRED)


_MATCHED: dict[tuple[Any, ...], bool] = {}


def calls_match(calls: dict[str, tuple[str, ...]]) -> bool:
    """Whether every method in `calls` exists on the installed bindings and takes those
    parameters first, in that order, any further ones having defaults. A signature that cannot
    be read counts as a mismatch: chromadb's client is always a correct fallback. Remembered per
    bindings class: reading them is not free, and a reader reopens its store after every outside
    write."""
    import chromadb_rust_bindings as rust

    key = (rust.Bindings, *sorted(calls.items()))
    if key not in _MATCHED:
        _MATCHED[key] = _signatures_match(rust.Bindings, calls)
    return _MATCHED[key]


def _signatures_match(bindings: Any, calls: dict[str, tuple[str, ...]]) -> bool:
    import inspect

    for name, wanted in calls.items():
        try:
            parameters = [p for p in inspect.signature(getattr(bindings, name)).parameters.values()
                          if p.name != "self"]
        except (AttributeError, TypeError, ValueError):
            return False
        if tuple(p.name for p in parameters[:len(wanted)]) != wanted:
            return False
        if any(p.default is inspect.Parameter.empty for p in parameters[len(wanted):]):
            return False
    return True


def open_bindings(path: str, calls: dict[str, tuple[str, ...]] = READ_CALLS) -> Any | None:
    """Chroma's bindings on the embedded store in folder `path`, set up as `PersistentClient`
    sets them up, or None when the installed bindings are not the ones this module knows or do
    not take `calls` as chinvex passes them (the caller then uses chromadb's client). Errors
    opening the store itself (a damaged file) are raised as the bindings raise them."""
    if not bindings_available() or not calls_match(calls):
        return None
    import chromadb_rust_bindings as rust

    try:
        config = rust.SqliteDBConfig(hash_type=rust.MigrationHash.MD5, migration_mode=rust.MigrationMode.Apply,
                                     url=os.path.join(path, "chroma.sqlite3"))
        make = rust.Bindings
    except (AttributeError, TypeError):
        return None
    try:
        return make(allow_reset=False, sqlite_db_config=config, persist_path=path,
                    hnsw_cache_size=_hnsw_cache_size())
    except TypeError:  # another signature: leave it to chromadb
        return None


def open_reader(path: str) -> ReadClient | None:
    """A reader of the embedded store in folder `path` (see `open_bindings`)."""
    bindings = open_bindings(path)
    return ReadClient(bindings) if bindings is not None else None
