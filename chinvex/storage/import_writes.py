"""The rows `chinvex import` writes into hybrid.db besides what the index writer writes:
fingerprints, origin ledger entries, knowledge items and feedback, each left alone when already
there (importing a file twice changes nothing).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from chinvex.storage.export_reads import FINGERPRINT_COLUMNS

KNOWLEDGE_ITEM_COLUMNS = ("item_id", "doc_id", "type", "title", "content", "scope", "tags_json",
                          "metadata_json", "created_at", "updated_at", "indexed_at")
FEEDBACK_COLUMNS = ("feedback_id", "item_id", "session_id", "feedback", "useful", "context",
                    "duplicate_of", "created_at")


def insert_fingerprint(conn: sqlite3.Connection, context_name: str, record: dict[str, Any]) -> None:
    """The fingerprint of an exported source, under `context_name`; an existing one is kept."""
    values = [record.get(c) for c in FINGERPRINT_COLUMNS]
    conn.execute(
        f"INSERT INTO source_fingerprints(context_name, {', '.join(FINGERPRINT_COLUMNS)}) "
        f"VALUES(?, {', '.join('?' * len(FINGERPRINT_COLUMNS))}) ON CONFLICT DO NOTHING",
        [context_name, *values])


def has_document_with_hash(conn: sqlite3.Connection, doc_id: str, content_hash: str | None) -> bool:
    """True when `doc_id` is indexed with exactly this content hash (so importing it changes nothing)."""
    row = conn.execute("SELECT content_hash FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
    return row is not None and row[0] == content_hash


def insert_knowledge_item(conn: sqlite3.Connection, record: dict[str, Any]) -> None:
    """An exported knowledge item (memory); one with the same id is kept."""
    conn.execute(
        "INSERT INTO knowledge_items(item_id, doc_id, type, title, content, scope, tags_json, "
        "metadata_json, created_at, updated_at, indexed_at) VALUES(?,?,?,?,?,?,?,?,?,?,?) "
        "ON CONFLICT(item_id) DO NOTHING",
        [record.get(k) for k in KNOWLEDGE_ITEM_COLUMNS])


def insert_feedback(conn: sqlite3.Connection, record: dict[str, Any]) -> None:
    """An exported feedback row; one with the same id is kept."""
    conn.execute(
        "INSERT INTO feedback(feedback_id, item_id, session_id, feedback, useful, context, "
        "duplicate_of, created_at) VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(feedback_id) DO NOTHING",
        [record.get(k) for k in FEEDBACK_COLUMNS])


def insert_ledger_entries(conn: sqlite3.Connection, entries: Iterable[tuple[str, str, str]]) -> None:
    """(doc_id, origin_uri, precedence_json) entries of the origin ledger; existing pairs are kept."""
    conn.executemany("INSERT INTO doc_origins(doc_id, origin_uri, precedence_json) VALUES(?,?,?) "
                     "ON CONFLICT(doc_id, origin_uri) DO NOTHING", entries)
