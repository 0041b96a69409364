"""The rows the index writer (chinvex.storage.writer) reads and writes in hybrid.db: documents,
chunks and conversation turns. Each writing function runs inside the writer's transaction."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import orjson

from chinvex.models import Turn
from chinvex.storage import edits

if TYPE_CHECKING:
    from chinvex.ingest.prepare import PreparedChunk, PreparedDoc

SQL_BATCH = 500

REUSE_CANDIDATES = 4
"""Chunk ids looked up per embed hash when a vector may be reused (the first whose vector the
store has is taken). Bounded per hash: a text repeated in thousands of chunks (the same short
message across a chat export's conversations) fetched every one of them for every batch that
repeated it again, so each batch's lookup grew with the index (100,000 such conversations took
146 s to ingest instead of 105 s)."""


def chunks_of(conn: sqlite3.Connection, doc_ids: list[str]) -> dict[str, sqlite3.Row]:
    """The stored chunk rows of these documents, by chunk id."""
    rows: dict[str, sqlite3.Row] = {}
    for start in range(0, len(doc_ids), SQL_BATCH):
        part = doc_ids[start:start + SQL_BATCH]
        marks = ",".join("?" * len(part))
        for row in conn.execute(
            f"SELECT chunk_id, doc_id, chunk_index, char_start, char_end, line_start, line_end, "
            f"metadata_json, search_text, embed_hash FROM chunks WHERE doc_id IN ({marks})",
            part,
        ):
            rows[row["chunk_id"]] = row
    return rows


def ids_with_hashes(conn: sqlite3.Connection, hashes: list[str],
                    limit: int = REUSE_CANDIDATES) -> dict[str, list[str]]:
    """Up to `limit` chunk ids (oldest rows first) for each of `hashes` that some chunk has."""
    found: dict[str, list[str]] = {}
    for embed_hash in hashes:
        ids = [row[0] for row in conn.execute(
            "SELECT chunk_id FROM chunks WHERE embed_hash=? ORDER BY rowid LIMIT ?", (embed_hash, limit))]
        if ids:
            found[embed_hash] = ids
    return found


def metadata_json(chunk: PreparedChunk) -> str:
    return orjson.dumps(chunk.chunk.metadata, option=orjson.OPT_SORT_KEYS, default=str).decode()


def delete_document(conn: sqlite3.Connection, doc_id: str) -> None:
    conn.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))


def delete_chunk(conn: sqlite3.Connection, chunk_id: str) -> None:
    conn.execute("DELETE FROM chunks WHERE chunk_id=?", (chunk_id,))


def write_document(conn: sqlite3.Connection, doc: PreparedDoc, stamp: str) -> None:
    conn.execute(
        """INSERT INTO documents(doc_id, source_type, source_uri, title, created_at, updated_at,
               metadata_json, indexed_at, origin_uri, content_hash)
           VALUES(?,?,?,?,?,?,?,?,?,?)
           ON CONFLICT(doc_id) DO UPDATE SET source_type=excluded.source_type,
               source_uri=excluded.source_uri, title=excluded.title,
               created_at=excluded.created_at, updated_at=excluded.updated_at,
               metadata_json=excluded.metadata_json, indexed_at=excluded.indexed_at,
               origin_uri=excluded.origin_uri, content_hash=excluded.content_hash""",
        (doc.doc_id, doc.source_type, doc.source_uri, doc.title, doc.created_at,
         doc.updated_at, orjson.dumps(doc.metadata, default=str).decode(), stamp,
         doc.origin_uri, doc.content_hash),
    )


def insert_chunk(conn: sqlite3.Connection, p: PreparedChunk) -> None:
    c = p.chunk
    conn.execute(
        """INSERT INTO chunks(chunk_id, doc_id, chunk_index, text, search_text, embed_hash,
               char_start, char_end, line_start, line_end, metadata_json)
           VALUES(?,?,?,?,?,?,?,?,?,?,?)""",
        (c.chunk_id, c.doc_id, c.chunk_index, c.text, p.search_text, p.embed_hash,
         c.char_start, c.char_end, c.line_start, c.line_end, metadata_json(p)),
    )


def update_chunk_if_changed(conn: sqlite3.Connection, p: PreparedChunk, row: sqlite3.Row) -> bool:
    """Bring a kept chunk's row up to date (ranges, metadata, search text, embed hash); False
    when nothing changed."""
    c = p.chunk
    meta = metadata_json(p)
    if (row["char_start"], row["char_end"], row["line_start"], row["line_end"],
            row["metadata_json"], row["search_text"], row["embed_hash"]) == (
            c.char_start, c.char_end, c.line_start, c.line_end, meta, p.search_text,
            p.embed_hash):
        return False
    conn.execute(
        """UPDATE chunks SET char_start=?, char_end=?, line_start=?, line_end=?,
               metadata_json=?, search_text=?, embed_hash=? WHERE chunk_id=?""",
        (c.char_start, c.char_end, c.line_start, c.line_end, meta, p.search_text,
         p.embed_hash, c.chunk_id),
    )
    return True


def write_turns(conn: sqlite3.Connection, doc: PreparedDoc) -> None:
    """A conversation's turns from `doc.turns_from` on (the earlier ones are stored already),
    and the file edits they record."""
    assert doc.turns is not None
    conn.execute(
        "DELETE FROM conversation_turns WHERE doc_id=? AND turn_index>=?",
        (doc.doc_id, doc.turns_from),
    )
    conn.executemany(
        "INSERT INTO conversation_turns(doc_id, turn_index, turn_json) VALUES(?,?,?)",
        [(doc.doc_id, index, turn.model_dump_json())
         for index, turn in enumerate(doc.turns) if index >= doc.turns_from],
    )
    edits.record(conn, doc.doc_id, doc.turns, doc.turns_from, doc.updated_at)


def stored_turns(conn: sqlite3.Connection, doc_id: str) -> list[Turn]:
    rows = conn.execute(
        "SELECT turn_json FROM conversation_turns WHERE doc_id=? ORDER BY turn_index", (doc_id,)
    )
    return [Turn.model_validate_json(row[0]) for row in rows]
