"""Document and chunk reads the RECALL tools need that are not about memories: a phrase's
full-text matches with their documents, a document's chunks in order, whether a chunk (or any
chunk) exists, and documents by listing kind."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def phrase_matches(conn: sqlite3.Connection, expression: str, limit: int) -> list[sqlite3.Row]:
    """Chunks matching an FTS5 expression, best first, with their documents' fields; none when
    the expression is not one FTS5 accepts."""
    try:
        return conn.execute(
            "SELECT c.chunk_id, c.doc_id, c.text, c.line_start, c.line_end, c.metadata_json, d.source_type, "
            "d.source_uri, d.title, d.updated_at, d.metadata_json AS doc_meta FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
            "JOIN documents d ON d.doc_id = c.doc_id WHERE chunks_fts MATCH ? "
            "ORDER BY bm25(chunks_fts), c.chunk_id LIMIT ?", (expression, limit)).fetchall()
    except sqlite3.OperationalError:
        return []


def chunk_outline(conn: sqlite3.Connection, doc_id: str) -> list[sqlite3.Row]:
    """A document's chunks in chunk order: id, lines, metadata and text."""
    return conn.execute("SELECT chunk_id, line_start, line_end, metadata_json, text FROM chunks WHERE doc_id = ? "
                        "ORDER BY chunk_index", (doc_id,)).fetchall()


def chunk_spans(conn: sqlite3.Connection, doc_id: str) -> list[sqlite3.Row]:
    """A document's chunk texts with their character ranges, in text order."""
    return conn.execute(
        "SELECT text, char_start, char_end FROM chunks WHERE doc_id=? ORDER BY char_start, chunk_index",
        (doc_id,)).fetchall()


def chunk_exists(conn: sqlite3.Connection, chunk_id: str) -> bool:
    return conn.execute("SELECT 1 FROM chunks WHERE chunk_id=?", (chunk_id,)).fetchone() is not None


def has_chunks(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None


def listed_documents(conn: sqlite3.Connection, kind: str, *, doc_languages: Sequence[str],
                     adr_folders: Sequence[str], conversation_types: Sequence[str]) -> list[sqlite3.Row]:
    """Documents of one listing kind (code, doc, session or adr) with their chunk counts."""
    language = "json_extract(d.metadata_json, '$.language')"
    doc_langs = ",".join(f"'{lang}'" for lang in doc_languages)
    where = {
        "code": f"d.source_type = 'repo' AND COALESCE({language}, '') NOT IN ({doc_langs})",
        "doc": f"(d.source_type = 'note' OR (d.source_type = 'repo' AND {language} IN ({doc_langs})))",
        "session": "d.source_type IN (" + ",".join(f"'{t}'" for t in conversation_types) + ")",
        "adr": "d.source_type IN ('repo', 'note') AND (" + " OR ".join(
            f"lower('/' || COALESCE(json_extract(d.metadata_json, '$.path'), d.source_uri)) LIKE '%/{f}/%'"
            for f in adr_folders) + ")",
    }[kind]
    return conn.execute(
        f"""SELECT d.doc_id, d.source_type, d.source_uri, d.title, d.created_at, d.updated_at,
                   d.metadata_json, (SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id) AS chunks
            FROM documents d WHERE {where}""").fetchall()
