"""The `doc_origins` ledger (which sources produce which documents) and the origin each
document row was written from. Which source wins is chinvex.ingest.origins' decision."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

import orjson


def origins_of(conn: sqlite3.Connection, doc_id: str) -> list[tuple[str, list[Any]]]:
    """(origin uri, precedence key) of every source that produces `doc_id`."""
    return [(row[0], orjson.loads(row[1])) for row in conn.execute(
        "SELECT origin_uri, precedence_json FROM doc_origins WHERE doc_id=?", (doc_id,))]


def record(conn: sqlite3.Connection, doc_id: str, origin: str, precedence: str) -> None:
    conn.execute(
        "INSERT INTO doc_origins(doc_id, origin_uri, precedence_json) VALUES(?,?,?) "
        "ON CONFLICT(doc_id, origin_uri) DO UPDATE SET precedence_json=excluded.precedence_json",
        (doc_id, origin, precedence),
    )


def forget(conn: sqlite3.Connection, doc_id: str, origin: str) -> None:
    conn.execute("DELETE FROM doc_origins WHERE doc_id=? AND origin_uri=?", (doc_id, origin))


def forget_docs(conn: sqlite3.Connection, doc_ids: Iterable[str]) -> None:
    """Every ledger entry of these documents (called inside the caller's transaction)."""
    conn.executemany("DELETE FROM doc_origins WHERE doc_id = ?", [(d,) for d in doc_ids])


def docs_of(conn: sqlite3.Connection, origin: str) -> list[str]:
    """Documents `origin` produces (ledger) or wrote (document rows), sorted."""
    ids = {row[0] for row in conn.execute(
        "SELECT doc_id FROM doc_origins WHERE origin_uri=?", (origin,))}
    ids |= {row[0] for row in conn.execute(
        "SELECT doc_id FROM documents WHERE origin_uri=?", (origin,))}
    return sorted(ids)


def written_from(conn: sqlite3.Connection, doc_id: str) -> tuple[str, str | None] | None:
    """(origin uri, content hash) of the stored document row, None when there is none."""
    row = conn.execute(
        "SELECT origin_uri, content_hash FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
    return None if row is None else (row[0], row[1])


def unrecorded(conn: sqlite3.Connection, context_name: str, skip_prefix: str) -> set[str]:
    """Origins of ledger entries or documents with no fingerprint in the context (those
    starting with `skip_prefix` left out). SQL over the origin indexes, so it stays cheap at
    100k documents."""
    found: set[str] = set()
    for table in ("doc_origins", "documents"):
        found.update(row[0] for row in conn.execute(
            f"SELECT DISTINCT o.origin_uri FROM {table} o WHERE o.origin_uri NOT LIKE ? "
            "AND NOT EXISTS (SELECT 1 FROM source_fingerprints f "
            "WHERE f.source_uri = o.origin_uri AND f.context_name = ?)",
            (skip_prefix + "%", context_name)))
    return found
