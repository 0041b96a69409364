"""The facts `chinvex doctor` checks read from hybrid.db: documents and their origin ledger,
tombstones, fingerprints, pending sources and ingest runs.

Read-only, so safe while an ingest runs. The doctor decides what is a problem; these functions
only return rows, named after what they hold.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

INTEGRITY_CHECK = "PRAGMA integrity_check"
"""The statement `consistency.integrity_errors` runs, as the doctor's report names it."""


def document_ids(conn: sqlite3.Connection) -> set[str]:
    """Every indexed document's id."""
    return {r[0] for r in conn.execute("SELECT doc_id FROM documents")}


def tombstoned_documents(conn: sqlite3.Connection) -> dict[str, str]:
    """doc_id → origin_uri of the documents removed with `chinvex rm` (kept out on purpose)."""
    return {r[0]: r[1] for r in conn.execute("SELECT doc_id, origin_uri FROM tombstones")}


def ledger_entries(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(doc_id, origin_uri) of every entry of the origin ledger (doc_origins)."""
    return [(r[0], r[1]) for r in conn.execute("SELECT doc_id, origin_uri FROM doc_origins")]


def document_origins(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(doc_id, origin_uri) of every document, its writing source as the documents table has it."""
    return [(r[0], r[1]) for r in conn.execute("SELECT doc_id, origin_uri FROM documents")]


def indexed_fingerprints(conn: sqlite3.Connection,
                         context_name: str) -> list[tuple[str, str | None, str | None]]:
    """(source_uri, doc_id, adapter) of the context's sources whose last ingest succeeded."""
    return [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT source_uri, doc_id, adapter FROM source_fingerprints "
        "WHERE context_name=? AND last_status='ok'", (context_name,))]


def fingerprinted_uris(conn: sqlite3.Connection, context_name: str) -> set[str]:
    """Every source the context has a fingerprint of, whatever its status."""
    return {r[0] for r in conn.execute(
        "SELECT source_uri FROM source_fingerprints WHERE context_name=?", (context_name,))}


def pending_source_uris(conn: sqlite3.Connection) -> set[str]:
    """Sources journaled as being removed or rewritten by an ingest that has not settled them."""
    return {r[0] for r in conn.execute("SELECT source_uri FROM pending_sources")}


def conversation_turn_jsons(conn: sqlite3.Connection, doc_id: str) -> Iterator[str]:
    """The stored JSON of a conversation document's turns, read lazily (a caller may stop early)."""
    for (turn_json,) in conn.execute(
            "SELECT turn_json FROM conversation_turns WHERE doc_id=?", (doc_id,)):
        yield turn_json


def documents_without_chunks(conn: sqlite3.Connection) -> list[tuple[str, str, str | None]]:
    """(doc_id, origin_uri, metadata_json) of the documents that have no chunk."""
    return [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT d.doc_id, d.origin_uri, d.metadata_json FROM documents d "
        "WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.doc_id = d.doc_id)")]


def ledger_entries_without_documents(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(doc_id, origin_uri) of ledger entries naming a document neither indexed nor tombstoned."""
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT o.doc_id, o.origin_uri FROM doc_origins o "
        "WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = o.doc_id) "
        "AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.doc_id = o.doc_id)")]


def documents_missing_from_ledger(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(doc_id, origin_uri) of documents (memories aside) whose writing source has no ledger entry."""
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT d.doc_id, d.origin_uri FROM documents d WHERE d.origin_uri NOT LIKE 'memory://%' "
        "AND NOT EXISTS (SELECT 1 FROM doc_origins o WHERE o.doc_id = d.doc_id "
        "AND o.origin_uri = d.origin_uri)")]


def all_origin_uris(conn: sqlite3.Connection) -> set[str]:
    """Every origin named by a document or by the origin ledger."""
    return {r[0] for r in conn.execute(
        "SELECT DISTINCT origin_uri FROM documents UNION SELECT DISTINCT origin_uri FROM doc_origins")}


def sources_with_status(conn: sqlite3.Connection, context_name: str,
                        status: str) -> list[tuple[str, str | None]]:
    """(source_uri, last_error) of the context's sources whose last status is `status`, by uri."""
    return [(r[0], r[1]) for r in conn.execute(
        "SELECT source_uri, last_error FROM source_fingerprints WHERE context_name=? "
        "AND last_status=? ORDER BY source_uri", (context_name, status))]


def fingerprint_rows(conn: sqlite3.Connection, context_name: str) -> list[sqlite3.Row]:
    """Every fingerprint row of the context, all columns (for `Fingerprint.from_row`)."""
    return conn.execute("SELECT * FROM source_fingerprints WHERE context_name=?",
                        (context_name,)).fetchall()


def running_run_ids(conn: sqlite3.Connection, context_name: str) -> list[str]:
    """Ingest runs of the context still recorded as running."""
    return [r[0] for r in conn.execute(
        "SELECT run_id FROM ingest_runs WHERE status='running' AND context_name=?", (context_name,))]


def last_run(conn: sqlite3.Connection, context_name: str) -> tuple[str, str, str | None, str, str | None] | None:
    """(run_id, started_at, finished_at, status, stats_json) of the context's latest ingest run."""
    row = conn.execute(
        "SELECT run_id, started_at, finished_at, status, stats_json FROM ingest_runs "
        "WHERE context_name=? ORDER BY started_at DESC LIMIT 1", (context_name,)).fetchone()
    return None if row is None else (row[0], row[1], row[2], row[3], row[4])
