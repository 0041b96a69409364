"""What one `VectorStore` wrote, kept so that the vector matrix (chinvex.storage.vector_matrix)
can be brought up to date without reading the whole store back: the matrix that was current
before the first write (`base`), the ids written since (with their source types) and the ids
deleted since, and the store's write token after the last write (to tell that no other process
wrote in between). The written vectors themselves are read back from the store: Chroma keeps a
cosine collection's vectors normalised, which differs from what was passed in the last bits."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


class MatrixChanges:
    def __init__(self, base: Any, *, fresh: bool):
        self.base = base
        """The vector matrix current before the first write (None when there was none, or
        when the store was empty: see `fresh`)."""
        self.fresh = fresh
        """The store held nothing before the first write (created or dropped by this run)."""
        self.token: str | None = None
        """The store's write token right after the last write through this object."""
        self.written: dict[str, str] = {}
        """id -> source type of every vector written (its last write)."""
        self.deleted: set[str] = set()

    @property
    def known(self) -> bool:
        """Whether base plus changes give the store's content: the starting content is known."""
        return self.fresh or self.base is not None

    def added(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        for cid, meta in zip(ids, metadatas):
            self.written[cid] = str((meta or {}).get("source_type") or "")
            self.deleted.discard(cid)

    def removed(self, ids: Iterable[str]) -> None:
        for cid in ids:
            self.written.pop(cid, None)
            self.deleted.add(cid)
