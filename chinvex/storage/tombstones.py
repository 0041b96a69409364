"""The `tombstones` table: documents `chinvex rm` took out, with the content hash that keeps
them out while it is unchanged."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from chinvex.storage import origins, transactions


def hashes(conn: sqlite3.Connection) -> dict[str, str | None]:
    """doc id -> the content hash it was removed with."""
    return dict(conn.execute("SELECT doc_id, content_hash FROM tombstones").fetchall())


def lift(conn: sqlite3.Connection, doc_id: str) -> None:
    """The document's content changed since it was removed: it is a new document now."""
    conn.execute("DELETE FROM tombstones WHERE doc_id=?", (doc_id,))


def bury(conn: sqlite3.Connection, rows: Mapping[str, Mapping[str, Any]], reason: str,
         stamp: str) -> None:
    """One transaction: these documents (doc id -> their row: origin_uri, content_hash, title)
    leave the origin ledger and get a tombstone."""
    ids = sorted(rows)
    with transactions.write(conn):
        origins.forget_docs(conn, ids)
        conn.executemany(
            "INSERT INTO tombstones(doc_id, origin_uri, content_hash, title, reason, removed_at) "
            "VALUES(?,?,?,?,?,?) ON CONFLICT(doc_id) DO UPDATE SET "
            "content_hash=excluded.content_hash, reason=excluded.reason, removed_at=excluded.removed_at",
            [(d, rows[d]["origin_uri"], rows[d]["content_hash"], rows[d]["title"], reason, stamp)
             for d in ids])


def purge(conn: sqlite3.Connection) -> int:
    """Forget every removal: the sources of removed documents lose their fingerprints too.
    Returns how many tombstones went."""
    with transactions.write(conn):
        conn.execute("DELETE FROM source_fingerprints WHERE source_uri IN (SELECT origin_uri FROM tombstones)")
        return conn.execute("DELETE FROM tombstones").rowcount


def listing(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return [dict(row) for row in conn.execute(
        "SELECT doc_id, origin_uri, title, reason, removed_at FROM tombstones ORDER BY removed_at, doc_id")]
