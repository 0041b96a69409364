"""What `chinvex export` reads from hybrid.db, streamed: fingerprints, documents with their
origins and turns, chunks a page at a time, knowledge items and feedback.

The iterators read row by row from the open cursor, so an export's memory does not grow with
the index; rows come back as `sqlite3.Row` (the connection's row factory), in a stable order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

FINGERPRINT_COLUMNS = ("source_uri", "source_type", "doc_id", "size_bytes", "mtime_unix", "content_sha256",
                       "thread_updated_at", "last_turn_id", "parser_version", "chunker_version", "embedded_model",
                       "last_ingested_at_unix", "last_status", "last_error", "source_root")
"""The fingerprint columns an export carries and an import writes back (all but the context's name)."""


def iter_fingerprints(conn: sqlite3.Connection, context_name: str) -> Iterator[sqlite3.Row]:
    """The context's fingerprints (FINGERPRINT_COLUMNS), by source uri."""
    cols = ", ".join(FINGERPRINT_COLUMNS)
    yield from conn.execute(f"SELECT {cols} FROM source_fingerprints WHERE context_name=? ORDER BY source_uri",
                            (context_name,))


def iter_documents(conn: sqlite3.Connection) -> Iterator[sqlite3.Row]:
    """Every document row, all columns, by id."""
    yield from conn.execute("SELECT * FROM documents ORDER BY doc_id")


def origins_of(conn: sqlite3.Connection, doc_id: str) -> list[dict[str, Any]]:
    """The document's ledger entries: {origin_uri, precedence_json}, by origin."""
    return [dict(r) for r in conn.execute(
        "SELECT origin_uri, precedence_json FROM doc_origins WHERE doc_id=? ORDER BY origin_uri", (doc_id,))]


def turn_jsons_of(conn: sqlite3.Connection, doc_id: str) -> list[str]:
    """The stored JSON of the document's conversation turns, in order (empty for other documents)."""
    return [r[0] for r in conn.execute(
        "SELECT turn_json FROM conversation_turns WHERE doc_id=? ORDER BY turn_index", (doc_id,))]


def chunk_page(conn: sqlite3.Connection, doc_id: str, after_index: int, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` chunks of the document after chunk number `after_index`, in order."""
    return [dict(r) for r in conn.execute(
        "SELECT chunk_id, doc_id, chunk_index, text, search_text, embed_hash, char_start, char_end, "
        "line_start, line_end, metadata_json FROM chunks WHERE doc_id=? AND chunk_index>? "
        "ORDER BY chunk_index LIMIT ?", (doc_id, after_index, limit))]


def iter_knowledge_items(conn: sqlite3.Connection) -> Iterator[sqlite3.Row]:
    """Every knowledge item (memory) row, all columns, by id."""
    yield from conn.execute("SELECT * FROM knowledge_items ORDER BY item_id")


def iter_feedback(conn: sqlite3.Connection) -> Iterator[sqlite3.Row]:
    """Every feedback row, all columns, by id."""
    yield from conn.execute("SELECT * FROM feedback ORDER BY feedback_id")
