"""Writing an embedded Chroma store through Chroma's Rust bindings, without `import chromadb`.

Every `chinvex ingest` used to import the `chromadb` package (a costly import, see
chinvex.storage.chroma_reader) to reach the same compiled bindings it then drove. On two cores
that import competes with the embedder: it was most of the fixed cost of a small ingest (a
hook re-ingesting one appended session exchange, a notes folder of a few hundred chunks).
`WriteClient` adds to the reader the calls chinvex's write paths make, passing the bindings what
`chromadb.api.rust.RustBindingsAPI` passes them:

- `get_or_create_collection` sends the configuration as chromadb serialises it
  (`create_collection_configuration_to_json_str`: the `hnsw` settings, `"spann": null` and the
  legacy embedding-function marker that `embedding_function=None` leaves), so a collection made
  here is the one chromadb would have made; `modify` sends what
  `update_collection_configuration_to_json_str` sends. Only `hnsw` settings are accepted: that
  is all chinvex configures, and anything else would need chromadb's own serialiser.
- `upsert` passes vectors as lists of floats (what chromadb's validated request holds), and
  `delete` ids only.
- A missing collection is reported as `CollectionNotFoundError` ("Collection [name] does not
  exist", as chromadb words it), found by listing the store's collections: the bindings' own
  NotFoundError is a `chromadb.errors` class, and raising it imports chromadb.

Other errors are the bindings' (chromadb's exception classes, imported on that error path only),
so chinvex.storage.vector_errors classifies them as before. Arguments go by position, as chromadb
passes them; `WRITE_CALLS` lists them and `open_writer` checks them against the installed
bindings' signatures first, stepping aside (chromadb's client) when they differ. `tests/storage/test_chroma_writer.py`
checks that chromadb's client reads a store written here exactly as one it wrote itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from chinvex.storage.chroma_reader import (DATABASE, READ_CALLS, TENANT, ReadClient, ReadCollection,
                                           open_bindings)

WRITE_CALLS: dict[str, tuple[str, ...]] = {
    **READ_CALLS,
    "list_collections": ("limit", "offset", "tenant", "database"),
    "create_collection": ("name", "configuration_json_str", "schema_str", "metadata", "get_or_create", "tenant",
                          "database"),
    "delete_collection": ("name", "tenant", "database"),
    "upsert": ("collection_id", "ids", "embeddings", "metadatas", "documents", "uris", "tenant", "database"),
    "delete": ("collection_id", "ids", "where", "where_document", "limit", "tenant", "database"),
    "update_collection": ("collection_id", "new_name", "new_metadata", "new_configuration_json_str"),
}
"""Every bindings method the writer calls, with its parameters in the order it passes them
(see chroma_reader.READ_CALLS)."""


class CollectionNotFoundError(LookupError):
    """The collection is not in the store (a new store, or one emptied by a repair)."""


def _hnsw_only(configuration: Mapping[str, Any] | None) -> dict[str, Any] | None:
    configuration = dict(configuration or {})
    hnsw = configuration.pop("hnsw", None)
    if configuration:
        raise ValueError(f"only hnsw settings can be written without chromadb, not {sorted(configuration)}")
    return dict(hnsw) if hnsw is not None else None


def create_configuration_json(configuration: Mapping[str, Any] | None) -> str:
    """A new collection's configuration, serialised as chromadb serialises it for a collection
    created with `embedding_function=None`."""
    return json.dumps({"hnsw": _hnsw_only(configuration), "spann": None,
                       "embedding_function": {"type": "legacy"}})


def update_configuration_json(configuration: Mapping[str, Any]) -> str:
    """A configuration change, serialised as chromadb's `Collection.modify` serialises it."""
    return json.dumps({"hnsw": _hnsw_only(configuration), "spann": None, "embedding_function": None})


def _rows(embeddings: Any) -> list[list[float]]:
    """Vectors as lists of floats: handing the bindings numpy rows costs much more to
    convert."""
    tolist = getattr(embeddings, "tolist", None)
    if tolist is not None:
        return tolist()
    return [row.tolist() if hasattr(row, "tolist") else list(row) for row in embeddings]


class WriteCollection(ReadCollection):
    """A collection read and written through the bindings (the subset of chromadb's Collection
    chinvex calls)."""

    def __init__(self, bindings: Any, collection_id: str, name: str, configuration: dict[str, Any] | None):
        super().__init__(bindings, collection_id, name)
        self.configuration_json: dict[str, Any] = configuration or {}

    def upsert(self, *, ids: Sequence[str], embeddings: Any, metadatas: Sequence[dict[str, Any]]) -> None:
        self._bindings.upsert(self._id, list(ids), _rows(embeddings), list(metadatas), None, None,
                              TENANT, DATABASE)

    def delete(self, *, ids: Sequence[str]) -> None:
        self._bindings.delete(self._id, list(ids), None, None, None, TENANT, DATABASE)

    def modify(self, *, configuration: Mapping[str, Any]) -> None:
        self._bindings.update_collection(self._id, None, None, update_configuration_json(configuration))


class WriteClient(ReadClient):
    """An embedded store opened for reading and writing (see the module docstring)."""

    def _collection(self, model: Any) -> WriteCollection:
        return WriteCollection(self._bindings, str(model.id), model.name, model.configuration)

    def list_collections(self) -> list[Any]:
        """The collections' models (each has a `name`), as chromadb's client lists them."""
        return list(self._bindings.list_collections(None, 0, TENANT, DATABASE))

    def get_collection(self, name: str, embedding_function: Any = None) -> WriteCollection:
        for model in self.list_collections():
            if model.name == name:
                return self._collection(model)
        raise CollectionNotFoundError(f"Collection [{name}] does not exist")

    def get_or_create_collection(self, name: str, embedding_function: Any = None,
                                 configuration: Mapping[str, Any] | None = None) -> WriteCollection:
        model = self._bindings.create_collection(name, create_configuration_json(configuration), None, None,
                                                 True, TENANT, DATABASE)
        return self._collection(model)

    def delete_collection(self, name: str) -> None:
        self._bindings.delete_collection(name, TENANT, DATABASE)


def open_writer(path: str) -> WriteClient | None:
    """A reader and writer of the embedded store in folder `path` (created if missing), or None
    when the installed bindings are not the ones chinvex knows (chromadb's client is used)."""
    bindings = open_bindings(path, WRITE_CALLS)
    return WriteClient(bindings) if bindings is not None else None
