"""The statements `chinvex doctor --repair` runs on hybrid.db: deleting dangling rows, settling the
origin ledger, clearing content hashes and fingerprints so the next ingest writes sources again,
closing interrupted runs, and rebuilding the full-text index.

The doctor decides what to repair and opens the transaction (`chinvex.storage.transactions`);
each function here does one step of it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

_ID_BATCH = 500
"""Ids bound per `IN (...)` query, well under SQLite's limit on parameters."""


def delete_rows(conn: sqlite3.Connection, rows: Iterable[tuple[str, int]]) -> None:
    """Delete each (table, rowid): rows foreign_key_check found referring to a missing parent."""
    for table, rowid in rows:
        conn.execute(f'DELETE FROM "{table}" WHERE rowid=?', (rowid,))


def drop_origin_entries(conn: sqlite3.Connection, origins: Iterable[str]) -> None:
    """Remove every ledger entry of these origins."""
    conn.executemany("DELETE FROM doc_origins WHERE origin_uri=?", [(o,) for o in origins])


def drop_ledger_entry(conn: sqlite3.Connection, doc_id: str, origin: str) -> None:
    """Remove one (document, origin) entry of the ledger."""
    conn.execute("DELETE FROM doc_origins WHERE doc_id=? AND origin_uri=?", (doc_id, origin))


def record_ledger_entries(conn: sqlite3.Connection, entries: Iterable[tuple[str, str]]) -> None:
    """Add (doc_id, origin_uri) entries to the ledger with no precedence; existing ones stay."""
    conn.executemany(
        "INSERT OR IGNORE INTO doc_origins(doc_id, origin_uri, precedence_json) "
        "VALUES(?,?,'[]')", list(entries))


def documents_of_origin(conn: sqlite3.Connection, origin: str) -> list[str]:
    """Ids of the documents whose writing source is `origin`."""
    return [r[0] for r in conn.execute(
        "SELECT doc_id FROM documents WHERE origin_uri=?", (origin,)).fetchall()]


def ledger_origins_of(conn: sqlite3.Connection, doc_id: str) -> list[str]:
    """The origins the ledger records as producing `doc_id`."""
    return [r[0] for r in conn.execute(
        "SELECT origin_uri FROM doc_origins WHERE doc_id=?", (doc_id,))]


def origin_of_document(conn: sqlite3.Connection, doc_id: str) -> str | None:
    """The writing source of `doc_id`, None when there is no such document."""
    row = conn.execute("SELECT origin_uri FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
    return None if row is None else row[0]


def delete_document(conn: sqlite3.Connection, doc_id: str) -> None:
    """Delete a document (its chunks and turns follow by their foreign keys' cascade)."""
    conn.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))


def clear_content_hashes(conn: sqlite3.Connection, doc_ids: Iterable[str]) -> None:
    """Forget the stored content hash of these documents, so the next ingest writes them even
    if their source is unchanged."""
    conn.executemany("UPDATE documents SET content_hash=NULL WHERE doc_id=?",
                     [(d,) for d in doc_ids])


def forget_fingerprint(conn: sqlite3.Connection, context_name: str, source_uri: str) -> int:
    """Delete a source's fingerprint (the next ingest reads it again); rows deleted (0 or 1)."""
    return conn.execute(
        "DELETE FROM source_fingerprints WHERE context_name=? AND source_uri=?",
        (context_name, source_uri)).rowcount


def mark_runs_interrupted(conn: sqlite3.Connection, run_ids: Iterable[str]) -> None:
    """Record runs still marked running (their process is gone) as interrupted."""
    conn.executemany("UPDATE ingest_runs SET status='interrupted' WHERE run_id=? "
                     "AND status='running'", [(r,) for r in run_ids])


def settle_vector_journal(conn: sqlite3.Connection) -> None:
    """Drop the vector write journal's entries for ids that no chunk has any more."""
    conn.execute("DELETE FROM vector_journal WHERE chunk_id NOT IN (SELECT chunk_id FROM chunks)")


def chunk_ids_of_documents(conn: sqlite3.Connection, doc_ids: list[str]) -> list[str]:
    """Ids of every chunk of these documents, queried a batch of ids at a time."""
    ids: list[str] = []
    for start in range(0, len(doc_ids), _ID_BATCH):
        part = doc_ids[start:start + _ID_BATCH]
        ids += [r[0] for r in conn.execute(
            f"SELECT chunk_id FROM chunks WHERE doc_id IN ({','.join('?' * len(part))})", part)]
    return ids


def rebuild_fulltext_index(conn: sqlite3.Connection) -> None:
    """Rebuild the FTS5 index (chunks_fts) from the chunks table."""
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('rebuild')")
