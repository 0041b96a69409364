"""The index writer's care of the vector store as a whole (chinvex.storage.writer): settling
what an interrupted write left in the vector journal, and reconciling the store with the chunk
rows (hybrid.db is the truth; Chroma is derived)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Protocol

from chinvex.storage import consistency as cons
from chinvex.storage import coverage, pending, vector_signature
from chinvex.storage.db import get_meta
from chinvex.storage.vectors import VectorStore
from chinvex.storage.writer_batches import WriteStats

HEAL_BATCH = 256


@dataclass(frozen=True)
class Reconciled:
    """What `reconcile_vectors` found and did."""

    chunks: int
    with_vector: int
    compared: bool
    """Whether the id sets were listed and compared (not just the cheap checks)."""
    missing: int = 0
    orphans: int = 0
    unrecoverable: int = 0


class IndexWriter(Protocol):
    """What these functions use of chinvex.storage.writer.IndexWriter."""

    conn: sqlite3.Connection
    vectors_reset: bool
    stats: WriteStats
    _store: VectorStore | None

    @property
    def store(self) -> VectorStore: ...
    def _embed(self, texts: list[str]) -> Any: ...
    def _embedded(self, count: int) -> None: ...


def _embed_rows(writer: IndexWriter, rows: list[sqlite3.Row]) -> list[sqlite3.Row]:
    """Embed again, from their stored rows, the chunks whose text the rows still give back, and
    upsert their vectors; a text several rows share is embedded once, as an ingest reuses a
    vector by its embed hash (a note repeating one block a thousand times costs one vector).
    Returns the rows that cannot be embedded (their text is lost)."""
    texts = [cons.embed_text_of(row) for row in rows]
    usable = [(row, text) for row, text in zip(rows, texts) if text is not None]
    if usable:
        distinct = list(dict.fromkeys(text for _, text in usable))
        by_text = dict(zip(distinct, writer._embed(distinct)))
        vectors = [by_text[text] for _, text in usable]
        writer._embedded(len(usable))
        writer.stats.chunks_embedded += len(distinct)
        writer.stats.chunks_reused += len(usable) - len(distinct)
        writer.store.upsert([row["chunk_id"] for row, _ in usable], vectors,
                            [{"doc_id": row["doc_id"], "source_type": row["source_type"]}
                             for row, _ in usable])
    return [row for row, text in zip(rows, texts) if text is None]


def settle_vector_journal(writer: IndexWriter) -> set[str]:
    """See `IndexWriter.settle_vector_journal`."""
    conn = writer.conn
    entries = pending.load_vector_journal(conn)
    if not entries:
        return set()
    reread: set[str] = set()
    if not writer.vectors_reset:  # after a reset the collection is empty: nothing to settle
        owned = pending.owned_hashes(conn, sorted(entries))
        present = writer.store.existing(sorted(owned)) if owned else set()
        plan = pending.plan_vector_recovery(entries, owned, present)
        if plan.delete:
            writer.store.delete(plan.delete)
        rows = list(cons.iter_chunk_rows(conn, plan.reembed)) if plan.reembed else []
        lost = _embed_rows(writer, rows)
        if lost:
            writer.store.delete([row["chunk_id"] for row in lost])
            for row in lost:
                origin = pending.origin_of(conn, row["doc_id"])
                if origin is not None:
                    reread.add(origin)
        writer.stats.vectors_settled += len(plan.delete) + len(rows) - len(lost)
    pending.settle_rereads(conn, reread, entries)
    return reread


def _trusted_shortcut(writer: IndexWriter, config: Any, total: int) -> Reconciled | None:
    """The cheap checks: nothing written and the recorded figure holds for the store there
    now, whose vector files are as chinvex left them (their stat signature, see
    chinvex.storage.vector_signature); or the counts agree on a store not written behind the
    figure's back, opened (which checks that its vectors can be read) to count them."""
    conn = writer.conn
    recorded = coverage.vector_coverage(conn)
    identity = coverage.store_identity(config, conn)
    token_now = coverage.gate_token(config)
    trusted = (recorded is not None and recorded.complete and recorded.chunks == total
               and identity is not None and recorded.store == identity)
    if (trusted and writer._store is None and recorded is not None and recorded.token == token_now
            and vector_signature.files_unchanged(config, conn)):
        return Reconciled(chunks=total, with_vector=total, compared=False)
    # A figure taken at a known token that is no longer the store's: the store was written
    # behind the figure's back (a crash between the Chroma write and the SQLite commit, or
    # a backup copied over the folder, which often gets the old file's inode). Equal counts
    # prove nothing then; only comparing the ids does.
    moved_on = recorded is not None and recorded.token is not None and recorded.token != token_now
    store = writer.store
    if trusted and not moved_on and store.count() == total:
        coverage.record(conn, coverage.measured(total, total, store.identity(conn),
                                                coverage.gate_token(config)))
        return Reconciled(chunks=total, with_vector=total, compared=False)
    return None


def reconcile_vectors(writer: IndexWriter, config: Any) -> Reconciled:
    """See `IndexWriter.reconcile_vectors`."""
    conn = writer.conn
    total = coverage.chunk_count(conn)
    if total == 0 and writer._store is None and get_meta(conn, coverage.COLLECTION_META_KEY) is None:
        coverage.record(conn, coverage.measured(0, 0, None))
        return Reconciled(chunks=0, with_vector=0, compared=False)
    shortcut = _trusted_shortcut(writer, config, total)
    if shortcut is not None:
        return shortcut
    store = writer.store
    in_chroma = store.all_ids()
    in_sqlite = cons.chunk_ids(conn)
    orphans = sorted(in_chroma - in_sqlite)
    missing = sorted(in_sqlite - in_chroma)
    if orphans:
        store.delete(orphans)
        writer.stats.orphan_vectors_deleted += len(orphans)
    embedded, lost = 0, []
    for start in range(0, len(missing), HEAL_BATCH):
        rows = list(cons.iter_chunk_rows(conn, missing[start:start + HEAL_BATCH]))
        unusable = _embed_rows(writer, rows)
        lost += unusable
        embedded += len(rows) - len(unusable)
    writer.stats.vectors_healed += embedded
    if lost:
        pending.schedule_reread(conn, {row["doc_id"] for row in lost})
    with_vector = total - (len(missing) - embedded)
    coverage.record(conn, coverage.measured(total, with_vector, store.identity(conn),
                                            coverage.gate_token(config)))
    return Reconciled(chunks=total, with_vector=with_vector, compared=True,
                      missing=len(missing), orphans=len(orphans), unrecoverable=len(lost))
