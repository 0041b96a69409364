"""`chinvex rm` and `chinvex compact`: take documents out of an index for good, and give the
space back.

A target is a path when it contains a path separator or names an existing file or folder (the
Recall design's rule), otherwise a document id. A path removes every document read from it
(an export file holds many conversations; a folder, every source under it). Each removed
document leaves a tombstone holding its content hash, so the next ingest does not index it
again while its content is unchanged (`chinvex.ingest.pipeline` checks them); its source's
fingerprint stays, so an unchanged source is not even read.

Writes go through the index writer (chinvex.storage.writer) (Chroma, then one SQLite transaction, journalled) under
the context's lock, like every other write.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chinvex.errors import NotFoundError, UsageError
from chinvex.models import ContextConfig
from chinvex.storage import removal as removal_rows
from chinvex.storage import tombstones as tombstone_rows
from chinvex.timeutil import now_iso

LOCK_WAIT_S = 30.0


@dataclass
class Removal:
    removed: list[dict[str, Any]] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)
    tombstones_purged: int = 0


def is_path(target: str) -> bool:
    return os.sep in target or "/" in target or Path(target).expanduser().exists()


def _docs_for(conn: sqlite3.Connection, target: str) -> list[sqlite3.Row]:
    if not is_path(target):
        return removal_rows.docs_with_id(conn, target)
    return removal_rows.docs_read_from(conn, str(Path(target).expanduser().resolve()), os.sep)


def delete_documents(config: ContextConfig, conn: sqlite3.Connection, doc_ids: list[str],
                     embedder_factory: Any = None) -> None:
    """Delete documents from both stores through the index writer (Chroma, then one SQLite
    transaction, journalled). The caller holds the context's lock."""
    from chinvex.embedding.factory import make_embedder
    from chinvex.storage.writer import IndexWriter
    from chinvex.storage.vectors import VectorStore

    store = VectorStore.open(config, conn, create=True)
    writer = IndexWriter(conn, lambda: store, embedder_factory or (lambda: make_embedder(config.embedding)))
    writer.delete_docs(doc_ids)
    writer.flush()


def remove(config: ContextConfig, targets: list[str], *, reason: str = "removed by chinvex rm",
           purge: bool = False) -> Removal:
    from chinvex.locking import context_lock
    from chinvex.storage import db

    if not targets and not purge:
        raise UsageError("nothing to remove: give document ids or paths (or --purge)")
    path = Path(config.index.sqlite_path)
    if not path.exists():
        raise NotFoundError(f"context {config.name} has no index yet ({path})")
    out = Removal()
    conn = db.connect(path, create=False)
    try:
        with context_lock(config, wait=LOCK_WAIT_S, purpose="rm"):
            rows: dict[str, sqlite3.Row] = {}
            for target in targets:
                found = _docs_for(conn, target)
                if not found:
                    out.not_found.append(target)
                rows.update({row["doc_id"]: row for row in found})
            if rows:
                delete_documents(config, conn, sorted(rows))
                # The ledger says which sources produce a document; a removed one is produced by
                # none (its tombstone keeps it out when a source is read again).
                tombstone_rows.bury(conn, rows, reason, now_iso())
                out.removed = [{"doc_id": d, "source": r["origin_uri"], "title": r["title"]}
                               for d, r in sorted(rows.items())]
            if purge:
                out.tombstones_purged = purge_tombstones(conn)
    finally:
        conn.close()
    return out


def purge_tombstones(conn: sqlite3.Connection) -> int:
    """Forget every removal: the sources of removed documents lose their fingerprints, so the
    next ingest reads them again and the documents return."""
    return tombstone_rows.purge(conn)


def tombstones(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return tombstone_rows.listing(conn)


def index_bytes(config: ContextConfig) -> dict[str, int]:
    """`chinvex.ingest.stats.index_bytes` with a total (a store not there counts 0)."""
    from chinvex.ingest.stats import index_bytes as on_disk

    sizes = {k: v or 0 for k, v in on_disk(config).items()}
    return {**sizes, "total": sum(sizes.values())}


def compact(config: ContextConfig, *, purge: bool = True) -> dict[str, Any]:
    """VACUUM and FTS5 optimize of hybrid.db, tombstones purged, and VACUUM of an embedded Chroma
    store's SQLite file (while the gate is held, so no reader or writer is inside it). Bytes
    before and after."""
    from chinvex.locking import context_lock
    from chinvex.storage import db
    from chinvex.storage.coverage import CHROMA_DB_FILE
    from chinvex.storage.vector_gate import StoreGate as ChromaGate  # the store's reader/writer lock

    before = index_bytes(config)
    conn = db.connect(Path(config.index.sqlite_path), create=False)
    purged = 0
    try:
        with context_lock(config, wait=LOCK_WAIT_S, purpose="compact"):
            if purge:
                purged = purge_tombstones(conn)
            removal_rows.compact_index(conn)
            chroma_file = Path(config.index.chroma_dir) / CHROMA_DB_FILE
            if not config.index.chroma_url and chroma_file.exists():
                gate = ChromaGate(Path(config.index.chroma_dir))
                gate.acquire(exclusive=True, timeout=LOCK_WAIT_S)
                try:
                    removal_rows.vacuum_file(chroma_file, LOCK_WAIT_S)
                    gate.bump()  # readers holding a client see a changed store and reopen it
                finally:
                    gate.release()
    finally:
        conn.close()
    after = index_bytes(config)
    return {"context": config.name, "before": before, "after": after,
            "saved": before["total"] - after["total"], "tombstones_purged": purged}
