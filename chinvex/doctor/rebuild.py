"""`doctor --repair` for files that cannot be mended in place: a damaged hybrid.db or a damaged
Chroma store. Nothing is deleted: the damaged file (or folder) is renamed with a UTC timestamp
beside the original and kept, and the index is rebuilt from what is still trustworthy.

- A damaged Chroma store is derived data: it is moved aside and the vectors are embedded again
  from hybrid.db's chunk rows (the doctor's vector repair, on an empty store).
- A damaged hybrid.db is moved aside (with its -wal and -shm files, which belong to it) and
  rebuilt from the sources in context.json by a full ingest. What only hybrid.db held — the MCP
  RECALL memories, feedback and flight recorder — is copied from the damaged file as far
  as its pages can still be read, and the recovered memories are indexed again. The
  collection name is recovered too when readable, so the rebuilt index writes into its old
  collection instead of leaving it behind.

Callers hold the context's lock (`doctor --repair` takes it).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chinvex.models import ContextConfig
from chinvex.storage import db
from chinvex.storage.aside import aside_path, stamp
from chinvex.storage.copy_rows import copy_table, old_collection_name

SALVAGED_TABLES = ("knowledge_items", "feedback", "item_stats", "flight_recorder")
"""Tables whose rows exist only in hybrid.db (no source file can give them back)."""


@dataclass
class Salvage:
    collection: str | None = None
    copied: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    """table -> why (some or all of its rows could not be read)."""


class _ToProgress:
    """The ingest's progress sink, told to a doctor `progress(kind, n)` callback."""

    def __init__(self, progress: Callable[[str, int], None]) -> None:
        self.progress = progress

    def start(self, total: int) -> None:
        pass

    def advance(self, label: str) -> None:
        self.progress("source", 1)

    def embedded(self, count: int) -> None:
        self.progress("vector", count)

    def decision(self, decision: Any) -> None:
        pass

    def finish(self) -> None:
        pass


def rebuild_damaged_index(config: ContextConfig, progress: Callable[[str, int], None] | None = None) -> list[str]:
    """Move the damaged hybrid.db aside and rebuild it from the sources; returns the action
    lines, which say exactly what was kept, what was recovered and what was rebuilt."""
    from chinvex.ingest.pipeline import IngestOptions, run_ingest_locked

    path = Path(config.index.sqlite_path)
    kept = aside_path(path, stamp())
    moved: list[str] = []
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            os.replace(source, f"{kept}{suffix}")
            moved.append(f"{kept}{suffix}")
    actions = [f"moved the damaged index {path} to {kept} (kept"
               + (", with its -wal file" if f"{kept}-wal" in moved else "")
               + "; nothing was deleted)"]
    salvage = Salvage()
    conn = db.connect(path, create=True)
    try:
        salvage = _salvage_into(kept, conn)
    finally:
        conn.close()
    summary = run_ingest_locked(config, IngestOptions(progress=_ToProgress(progress) if progress else None))
    docs = summary.documents.get("written", 0)
    chunks = summary.chunks.get("written", 0)
    actions.append(f"rebuilt {path} from the sources in context.json: {summary.sources.indexed} "
                   f"sources, {docs} documents, {chunks} chunks "
                   f"({summary.chunks.get('embedded', 0)} embedded, "
                   f"{summary.chunks.get('reused', 0)} vectors reused)")
    if not salvage.collection and not config.index.chroma_url:
        dropped = _drop_other_collections(config)
        if dropped:
            actions.append(f"deleted {dropped} vector collections the damaged index had used (its "
                           "collection name could not be read; the rebuilt index has its own)")
    if summary.errors:
        actions.append(f"{len(summary.errors)} sources could not be read while rebuilding "
                       f"(first: {summary.errors[0].message}); run 'chinvex ingest' once they "
                       "are readable")
    recovered = {t: n for t, n in salvage.copied.items() if n}
    indexed = _index_recovered_items(config) if salvage.copied.get("knowledge_items") else 0
    if recovered:
        actions.append("recovered from the damaged file: " + ", ".join(
            f"{n} {t.replace('_', ' ')} rows" for t, n in sorted(recovered.items()))
            + (f" ({indexed} knowledge items indexed again)" if indexed else ""))
    for table, why in sorted(salvage.unreadable.items()):
        actions.append(f"not recovered: table {table} could not be read (in full) from the "
                       f"damaged file ({why}); whatever it held remains in {kept}")
    return actions


def _salvage_into(damaged: Path, conn: sqlite3.Connection) -> Salvage:
    """Copy what can still be read of the tables no source can rebuild (and the collection
    name) from the damaged file into the new index. Row by row: a table whose later pages are
    unreadable gives up its earlier rows."""
    found = Salvage()
    try:
        old = sqlite3.connect(f"{damaged.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        found.unreadable = {t: str(exc) for t in SALVAGED_TABLES}
        return found
    try:
        found.collection = old_collection_name(old)
        if found.collection:
            db.set_meta(conn, "chroma_collection", found.collection)
        for table in SALVAGED_TABLES:
            # memories are indexed again below
            cleared = "indexed_at" if table == "knowledge_items" else None
            copied = copy_table(old, conn, table, cleared_column=cleared)
            if copied.error is not None:
                found.unreadable[table] = copied.error
            found.copied[table] = copied.copied
    finally:
        old.close()
    return found


def _drop_other_collections(config: ContextConfig) -> int:
    """An embedded store belongs to one context: collections other than the one the rebuilt
    hybrid.db names are the damaged index's, and would only take space."""
    from chinvex.storage.vectors import VectorStore

    conn = db.connect(Path(config.index.sqlite_path))
    try:
        store = VectorStore.open(config, conn, create=False)
        if store is None:
            return 0
        try:
            return store.drop_other_collections()
        finally:
            store.close()
    finally:
        conn.close()


def _index_recovered_items(config: ContextConfig) -> int:
    """Index the recovered memories as the MCP server does (`recall_add`)."""
    from chinvex.embedding.factory import make_embedder
    from chinvex.memory.indexing import prepare_memories, write_prepared
    from chinvex.memory.items import mark_indexed, pending_memories
    from chinvex.storage.vectors import VectorStore

    conn = db.connect(Path(config.index.sqlite_path))
    try:
        items = pending_memories(conn, limit=1_000_000)
        if not items:
            return 0
        prepared, vectors = prepare_memories(items, make_embedder(config.embedding))
        store = VectorStore.open(config, conn, create=True)
        assert store is not None
        try:
            write_prepared(conn, store, prepared, vectors)
        finally:
            store.close()
        mark_indexed(conn, [item.item_id for item in items])
        return len(items)
    finally:
        conn.close()
