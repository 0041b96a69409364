"""Read-only consistency queries over one index (hybrid.db and its Chroma collection).

`chinvex doctor` reports what these find; they never write, so they are safe to run while an
ingest is in progress (WAL readers see the last committed state).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from chinvex.storage.db import BUSY_TIMEOUT_MS, failure_kind

MEMORY_PREFIX = "memory://"
"""Origins of items added through the MCP RECALL tools: no source file, no fingerprint."""


def integrity_errors(conn: sqlite3.Connection, limit: int = 20) -> list[str]:
    """`PRAGMA integrity_check`: an empty list when the file is sound."""
    rows = [str(r[0]) for r in conn.execute(f"PRAGMA integrity_check({int(limit)})")]
    return [] if rows == ["ok"] else rows


def foreign_key_violations(conn: sqlite3.Connection) -> list[tuple[str, int, str]]:
    """(table, rowid, parent table) for every row whose parent row is missing."""
    return [(str(r[0]), int(r[1]) if r[1] is not None else -1, str(r[2]))
            for r in conn.execute("PRAGMA foreign_key_check")]


@dataclass
class FtsState:
    indexed_rows: int
    chunk_rows: int
    error: str | None
    """FTS5's own 'integrity-check' against the content table; None when consistent."""
    deep: bool = True
    shallow_reason: str | None = None
    """Why the deep check did not run (None: it ran, or an ingest is writing)."""

    @property
    def ok(self) -> bool:
        return self.error is None and self.indexed_rows == self.chunk_rows


def fts_state(conn: sqlite3.Connection, path: Path, *, deep: bool = True) -> FtsState:
    """chunks_fts is an external-content table: its index must describe exactly the rows of
    `chunks`. The docsize shadow table has one row per indexed rowid, so counting it is cheap;
    'integrity-check' with rank 1 compares every posting with the content table.

    FTS5 runs 'integrity-check' as a write statement (it changes nothing), which a read-only
    connection refuses; it gets its own short-lived connection, so `conn` may be read-only.
    It holds the write lock while it reads the whole index: `deep=False` counts rows only.
    """
    indexed = conn.execute("SELECT COUNT(*) FROM chunks_fts_docsize").fetchone()[0]
    chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    error = None
    if not deep:
        return FtsState(indexed_rows=int(indexed), chunk_rows=int(chunks), error=None, deep=False)
    try:
        checker = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error:
        checker = None
    if checker is None:
        return FtsState(indexed_rows=int(indexed), chunk_rows=int(chunks), error=None, deep=False,
                        shallow_reason="the index cannot be opened for the check")
    try:
        checker.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        if failure_kind(exc) == "readonly" or getattr(exc, "sqlite_errorname", "").startswith("SQLITE_CANTOPEN"):
            # FTS5 runs its check as a write statement, which a read-only index refuses.
            return FtsState(indexed_rows=int(indexed), chunk_rows=int(chunks), error=None,
                            deep=False, shallow_reason="the index is read-only")
        error = str(exc)
    finally:
        checker.close()
    return FtsState(indexed_rows=int(indexed), chunk_rows=int(chunks), error=error)


def chunk_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])


def chunk_ids(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT chunk_id FROM chunks")}


def journaled_vector_ids(conn: sqlite3.Connection) -> set[str]:
    """Ids an interrupted write recorded in `vector_journal` (migration 0004) and the next
    ingest settles."""
    return {r[0] for r in conn.execute("SELECT chunk_id FROM vector_journal")}


def iter_chunk_rows(conn: sqlite3.Connection, ids: list[str]) -> Iterator[sqlite3.Row]:
    """Rows needed to embed chunks again: text, metadata, embed hash and the document's type."""
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        marks = ",".join("?" * len(part))
        yield from conn.execute(
            f"SELECT c.chunk_id, c.doc_id, c.chunk_index, c.text, c.search_text, c.embed_hash, "
            f"c.char_start, c.char_end, c.line_start, c.line_end, c.metadata_json, d.source_type "
            f"FROM chunks c JOIN documents d ON d.doc_id = c.doc_id WHERE c.chunk_id IN ({marks})",
            part,
        )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def embed_text_of(row: sqlite3.Row | dict[str, Any]) -> str | None:
    """The exact text a stored chunk was embedded from, or None when it cannot be recovered.

    The writer stores `embed_hash = sha256(embed_text(chunk))` and `search_text =
    index_text(embed_text(chunk))`. `embed_text` depends only on the chunk's text and metadata,
    both stored, so it is recomputed from them; the search text without its appended
    identifier-parts line is the second candidate. A candidate counts only when its hash is the
    stored one, so a vector is never rebuilt from a guess.
    """
    from chinvex.chunking import embed_text
    from chinvex.models import Chunk

    expected = row["embed_hash"]
    try:
        metadata = orjson.loads(row["metadata_json"] or "{}")
    except orjson.JSONDecodeError:
        metadata = {}
    if not isinstance(metadata, dict):
        metadata = {}
    chunk = Chunk.model_construct(
        chunk_id=row["chunk_id"], doc_id=row["doc_id"], chunk_index=row["chunk_index"],
        text=row["text"], char_start=row["char_start"] or 0, char_end=row["char_end"] or 0,
        line_start=row["line_start"], line_end=row["line_end"], metadata=metadata,
    )
    candidates = [embed_text(chunk)]
    search_text = row["search_text"] or ""
    candidates.append(search_text)
    if "\n" in search_text:
        candidates.append(search_text.rsplit("\n", 1)[0])
    for text in candidates:
        if _sha256(text) == expected:
            return text
    return None


def collection_dimension(store: Any, some_id: str) -> int | None:
    """Length of one stored vector (all vectors of a collection share it)."""
    got = store.embeddings([some_id])
    vector = got.get(some_id)
    return None if vector is None else len(vector)
