"""Repairs, in dependency order: rows first (foreign keys, orphans, interrupted runs), then
the full-text index, then vectors (missing, orphaned, stale; a damaged store is moved aside and
rebuilt from stored texts)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from chinvex.doctor.findings import Findings
from chinvex.models import ContextConfig
from chinvex.storage import consistency as cons
from chinvex.storage import db, transactions
from chinvex.storage import repair as fix

EMBED_BATCH = 128


def repair_rows(conn: sqlite3.Connection, config: ContextConfig, f: Findings,
                 problems: set[str], actions: list[str]) -> None:
    """All row repairs in one transaction: either the ledger, fingerprints and documents agree
    afterwards, or nothing changed."""
    forget: set[str] = set()  # fingerprints to clear: those sources are read again
    rewrite: set[str] = set()  # documents whose stored content hash is cleared: written again
    with transactions.write(conn):
        if "foreign_keys" in problems and f.fk_rows:
            fix.delete_rows(conn, f.fk_rows)
            f.rows_deleted = True
            actions.append(f"deleted {len(f.fk_rows)} rows that referred to missing documents")
        if "untracked_documents" in problems and f.untracked_gone:
            gone = set(f.untracked_gone)
            fix.drop_origin_entries(conn, gone)
            removed = 0
            for origin in sorted(gone):
                for doc_id in fix.documents_of_origin(conn, origin):
                    others = fix.ledger_origins_of(conn, doc_id)
                    if others:  # another source still has it: that one writes it next time
                        forget.update(others)
                        rewrite.add(doc_id)
                    else:
                        fix.delete_document(conn, doc_id)
                        removed += 1
            f.rows_deleted = True
            actions.append(f"removed {removed} documents of {len(gone)} vanished sources that "
                           "no ingest had recorded")
        if "origins_without_documents" in problems and f.origins_without_docs:
            for doc_id, origin in f.origins_without_docs:
                fix.drop_ledger_entry(conn, doc_id, origin)
                forget.add(origin)
            actions.append(f"dropped {len(f.origins_without_docs)} origin entries of missing "
                           "documents")
        if "documents_without_origins" in problems and f.docs_without_origins:
            fix.record_ledger_entries(conn, f.docs_without_origins)
            actions.append(f"recorded the source of {len(f.docs_without_origins)} documents "
                           "in the origin ledger")
        if "fingerprints_without_documents" in problems:
            forget.update(f.fingerprints_without_docs)
        if "documents_without_chunks" in problems:
            for doc_id, origin in f.docs_without_chunks:
                forget.add(origin)
                rewrite.add(doc_id)
        if rewrite:
            fix.clear_content_hashes(conn, rewrite)
        cleared = 0
        for uri in sorted(forget):
            cleared += fix.forget_fingerprint(conn, config.name, uri)
        if cleared:
            actions.append(f"cleared {cleared} source fingerprints: the next 'chinvex ingest' "
                           "reads those sources again")


def repair_runs(conn: sqlite3.Connection, f: Findings, problems: set[str],
                 actions: list[str]) -> None:
    if "last_ingest" in problems and f.interrupted_runs:
        fix.mark_runs_interrupted(conn, f.interrupted_runs)
        actions.append(f"marked {len(f.interrupted_runs)} unfinished ingest runs as interrupted")


Progress = Callable[[str, int], None]
"""Told `(kind, n)` as a long repair step advances (`"vector", 64`: 64 more vectors written)."""


def repair_vectors(conn: sqlite3.Connection, config: ContextConfig, actions: list[str],
                   progress: Progress | None = None) -> None:
    """Compare both stores afresh (row repairs may have removed chunks), delete vectors of no
    chunk, embed chunks without a vector from their exact stored embed text."""
    from chinvex.embedding.factory import make_embedder
    from chinvex.storage.vectors import VectorStore

    embedder = make_embedder(config.embedding)
    stored = db.get_meta(conn, "embedder")
    if stored is not None and stored != embedder.name:
        actions.append("vectors not repaired: the embedder changed (run 'chinvex ingest --full')")
        return
    store = VectorStore.open(config, conn, create=True)
    assert store is not None
    try:
        _repair_store(conn, config, store, embedder, stored, actions, progress)
        # The store's vector matrix, which searches read instead of Chroma's index
        from chinvex.storage.vector_matrix_refresh import refresh

        refresh(config, conn, store, sign=True)
    finally:
        store.close()


def _repair_store(conn: sqlite3.Connection, config: ContextConfig, store: Any, embedder: Any,
                  stored: str | None, actions: list[str], progress: Progress | None = None) -> None:
    from chinvex.storage import coverage

    in_sqlite = cons.chunk_ids(conn)
    in_chroma = store.all_ids()
    orphans = sorted(in_chroma - in_sqlite)
    if orphans:
        store.delete(orphans)
        actions.append(f"deleted {len(orphans)} vectors that belonged to no chunk")
    # The write journal's entries for ids without a chunk are settled now (the store holds no
    # vector of such an id any more); entries of owned ids are left to the next ingest.
    fix.settle_vector_journal(conn)
    missing = sorted(in_sqlite - in_chroma)
    if not missing:
        coverage.record(conn, coverage.measured(len(in_sqlite), len(in_sqlite), store.identity(conn),
                                                coverage.gate_token(config)))
        return
    unrecoverable: list[str] = []
    pending: list[tuple[str, str, dict[str, str]]] = []
    embedded = 0

    def flush() -> None:
        nonlocal embedded
        if not pending:
            return
        vectors = embedder.embed_documents([p[1] for p in pending])
        store.upsert([p[0] for p in pending], vectors, [p[2] for p in pending])
        embedded += len(pending)
        if progress is not None:
            progress("vector", len(pending))
        pending.clear()

    for row in cons.iter_chunk_rows(conn, missing):
        text = cons.embed_text_of(row)
        if text is None:
            unrecoverable.append(row["doc_id"])
            continue
        pending.append((row["chunk_id"], text,
                        {"doc_id": row["doc_id"], "source_type": row["source_type"]}))
        if len(pending) >= EMBED_BATCH:
            flush()
    flush()
    coverage.record(conn, coverage.measured(len(in_sqlite), len(in_sqlite) - len(unrecoverable),
                                            store.identity(conn), coverage.gate_token(config)))
    if embedded:
        if stored is None:
            db.set_meta(conn, "embedder", embedder.name)
        actions.append(f"embedded {embedded} chunks that had no vector")
    if unrecoverable:
        _schedule_rewrite(conn, config, sorted(set(unrecoverable)))
        actions.append(f"{len(unrecoverable)} chunks could not be embedded from what is stored "
                       "(their text does not match its hash); their sources are read again by "
                       "the next 'chinvex ingest'")


def reembed_documents(conn: sqlite3.Connection, config: ContextConfig, doc_ids: list[str],
                       actions: list[str], progress: Progress | None = None) -> None:
    from chinvex.embedding.factory import make_embedder
    from chinvex.storage.vectors import VectorStore

    store = VectorStore.open(config, conn, create=False)
    if store is None:
        return
    ids = fix.chunk_ids_of_documents(conn, doc_ids)
    embedder = make_embedder(config.embedding)
    rows = [r for r in cons.iter_chunk_rows(conn, ids) if cons.embed_text_of(r) is not None]
    try:
        for start in range(0, len(rows), EMBED_BATCH):
            part = rows[start:start + EMBED_BATCH]
            vectors = embedder.embed_documents([cons.embed_text_of(r) for r in part])
            store.upsert([r["chunk_id"] for r in part], vectors,
                         [{"doc_id": r["doc_id"], "source_type": r["source_type"]} for r in part])
            if progress is not None:
                progress("vector", len(part))
    finally:
        store.close()
    actions.append(f"embedded the {len(rows)} chunks of {len(doc_ids)} documents with stale "
                   "vectors again")


def _schedule_rewrite(conn: sqlite3.Connection, config: ContextConfig, doc_ids: list[str]) -> None:
    """The next ingest re-reads these documents' sources and writes them even if unchanged
    (the writer then embeds every chunk whose vector is missing)."""
    with transactions.write(conn):
        for doc_id in doc_ids:
            origin = fix.origin_of_document(conn, doc_id)
            fix.clear_content_hashes(conn, [doc_id])
            if origin is not None:
                fix.forget_fingerprint(conn, config.name, origin)
