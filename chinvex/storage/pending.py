"""The write journals of hybrid.db (migration 0004): what an interrupted write may have left
half-done, recorded *before* the write, so that the next run settles exactly that.

Two stores cannot share a transaction: Chroma is written before SQLite (so SQLite never names a
chunk without a vector), and a SIGKILL between the two leaves vectors no chunk owns. Listing the
whole collection on every run to find them would cost seconds on a large index for a run where
nothing changed; the journal names the few ids that can be affected instead.

Likewise a source's fingerprint is written last, but the origin ledger and its documents are
written before it: a source that was being written when the run died is recorded as pending,
so the next run reads it again (its old fingerprint may match a file that was reverted in the
meantime) or removes what it wrote (the file may be gone, and without a fingerprint nothing
else would ever remove it).

The table access is here (moved from chinvex/ingest/journal.py), with the pure decision of what
to do with the vector journal, `plan_vector_recovery`, which the writer applies.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from chinvex.storage import transactions

_SQL_BATCH = 500


# -- pending sources --------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingSource:
    source_uri: str
    source_root: str | None
    adapter: str | None


def mark_pending(conn: sqlite3.Connection, source_uri: str, source_root: str | None,
                 adapter: str | None) -> None:
    """Record (committed at once: `conn` is in autocommit mode) that `source_uri` is about to be
    written. Must precede the source's first ledger entry or document."""
    conn.execute(
        "INSERT INTO pending_sources(source_uri, source_root, adapter) VALUES(?,?,?) "
        "ON CONFLICT(source_uri) DO UPDATE SET source_root=excluded.source_root, "
        "adapter=excluded.adapter",
        (source_uri, source_root, adapter),
    )


def load_pending(conn: sqlite3.Connection) -> dict[str, PendingSource]:
    return {row[0]: PendingSource(row[0], row[1], row[2]) for row in conn.execute(
        "SELECT source_uri, source_root, adapter FROM pending_sources")}


def clear_pending(conn: sqlite3.Connection, source_uris: Iterable[str]) -> None:
    """Called inside the transaction that writes or deletes the sources' fingerprints."""
    conn.executemany("DELETE FROM pending_sources WHERE source_uri=?",
                     [(uri,) for uri in source_uris])


def settle_rereads(conn: sqlite3.Connection, origins: Iterable[str],
                   settled_ids: Iterable[str]) -> None:
    """One transaction: the documents of `origins` lose their content hash and the origins are
    recorded pending (the run reads them again), and the settled journal entries are dropped."""
    with transactions.write(conn):
        for origin in sorted(origins):
            conn.execute("UPDATE documents SET content_hash=NULL WHERE origin_uri=?", (origin,))
            conn.execute("INSERT OR IGNORE INTO pending_sources(source_uri) VALUES(?)", (origin,))
        clear_vectors(conn, settled_ids)


def schedule_reread(conn: sqlite3.Connection, doc_ids: Iterable[str]) -> None:
    """One transaction: these documents lose their content hash and their sources are recorded
    pending, so the next run reads them again and rewrites them."""
    with transactions.write(conn):
        for doc_id in sorted(doc_ids):
            row = conn.execute("SELECT origin_uri FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
            conn.execute("UPDATE documents SET content_hash=NULL WHERE doc_id=?", (doc_id,))
            if row is not None:
                conn.execute("INSERT OR IGNORE INTO pending_sources(source_uri) VALUES(?)", (row[0],))


def origin_of(conn: sqlite3.Connection, doc_id: str) -> str | None:
    row = conn.execute("SELECT origin_uri FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
    return None if row is None else row[0]


# -- vectors ----------------------------------------------------------------------------------


def journal_upserts(conn: sqlite3.Connection, entries: Sequence[tuple[str, str]]) -> None:
    """Record, in a committed transaction of its own, the (chunk id, embed hash) pairs whose
    vectors are about to be upserted. Must run before the upsert."""
    if not entries:
        return
    with transactions.write(conn):
        conn.executemany(
            "INSERT INTO vector_journal(chunk_id, embed_hash) VALUES(?,?) "
            "ON CONFLICT(chunk_id) DO UPDATE SET embed_hash=excluded.embed_hash", entries)


def journal_removals(conn: sqlite3.Connection, chunk_ids: Iterable[str]) -> None:
    """Called inside the transaction that deletes these chunks' rows: their vectors are
    orphans from its commit until Chroma has deleted them."""
    conn.executemany(
        "INSERT INTO vector_journal(chunk_id, embed_hash) VALUES(?, NULL) "
        "ON CONFLICT(chunk_id) DO UPDATE SET embed_hash=NULL", [(cid,) for cid in chunk_ids])


def clear_vectors(conn: sqlite3.Connection, chunk_ids: Iterable[str]) -> None:
    """Called inside a transaction, once the ids' rows own their vectors or Chroma has deleted
    them."""
    conn.executemany("DELETE FROM vector_journal WHERE chunk_id=?", [(cid,) for cid in chunk_ids])


def load_vector_journal(conn: sqlite3.Connection) -> dict[str, str | None]:
    return {row[0]: row[1] for row in conn.execute("SELECT chunk_id, embed_hash FROM vector_journal")}


def owned_hashes(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, str]:
    """The embed hash of each of these ids that has a chunk row."""
    found: dict[str, str] = {}
    for start in range(0, len(chunk_ids), _SQL_BATCH):
        part = list(chunk_ids[start:start + _SQL_BATCH])
        marks = ",".join("?" * len(part))
        for row in conn.execute(
                f"SELECT chunk_id, embed_hash FROM chunks WHERE chunk_id IN ({marks})", part):
            found[row[0]] = row[1]
    return found


@dataclass(frozen=True)
class VectorRecovery:
    delete: list[str]
    """Ids no chunk row owns: their vectors (if the upsert happened) are orphans."""
    reembed: list[str]
    """Owned ids whose vector may describe another text (upserted for a write that did not
    commit) or may be missing (the upsert did not happen): embedded again from their rows."""


def plan_vector_recovery(journal: Mapping[str, str | None], owned: Mapping[str, str],
                         present: set[str]) -> VectorRecovery:
    """What the journal left by an interrupted write calls for.

    `owned` maps the journal's ids that have a chunk row to that row's embed hash; `present`
    holds the owned ids that have a vector in Chroma. An owned id keeps its vector only when it
    has one and the journal says it was upserted for the row's own embed hash.
    """
    delete = sorted(cid for cid in journal if cid not in owned)
    reembed = sorted(cid for cid, embed_hash in journal.items()
                     if cid in owned and (cid not in present or embed_hash != owned[cid]))
    return VectorRecovery(delete=delete, reembed=reembed)
