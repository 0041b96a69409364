"""The `source_fingerprints` table: one row per source of a context, what the ingest last saw of
it (stat, content hash, thread timestamps, versions, the adapter's resume state). The decision
made from a fingerprint is chinvex.ingest.fingerprints'."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass
class Fingerprint:
    source_uri: str
    context_name: str
    source_type: str
    doc_id: str
    size_bytes: int | None
    mtime_unix: int | None
    content_sha256: str | None
    thread_updated_at: str | None
    last_turn_id: str | None
    parser_version: str
    chunker_version: str
    embedded_model: str | None
    last_ingested_at_unix: int
    last_status: str
    last_error: str | None
    source_root: str | None
    adapter: str | None
    state: dict[str, Any] | None
    mtime_ns: int | None = None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "Fingerprint":
        state = orjson.loads(row["state_json"]) if row["state_json"] else None
        mtime_ns = state.pop("_mtime_ns", None) if isinstance(state, dict) else None
        return cls(
            source_uri=row["source_uri"], context_name=row["context_name"],
            source_type=row["source_type"], doc_id=row["doc_id"], size_bytes=row["size_bytes"],
            mtime_unix=row["mtime_unix"], content_sha256=row["content_sha256"],
            thread_updated_at=row["thread_updated_at"], last_turn_id=row["last_turn_id"],
            parser_version=row["parser_version"], chunker_version=row["chunker_version"],
            embedded_model=row["embedded_model"],
            last_ingested_at_unix=row["last_ingested_at_unix"], last_status=row["last_status"],
            last_error=row["last_error"], source_root=row["source_root"], adapter=row["adapter"],
            state=state, mtime_ns=mtime_ns,
        )


def load_all(conn: sqlite3.Connection, context_name: str) -> dict[str, Fingerprint]:
    rows = conn.execute(
        "SELECT * FROM source_fingerprints WHERE context_name=?", (context_name,)
    ).fetchall()
    return {row["source_uri"]: Fingerprint.from_row(row) for row in rows}


def write(conn: sqlite3.Connection, fp: Fingerprint) -> None:
    state = dict(fp.state or {})
    if fp.mtime_ns is not None:
        state["_mtime_ns"] = fp.mtime_ns
    conn.execute(
        """INSERT INTO source_fingerprints(source_uri, context_name, source_type, doc_id,
               size_bytes, mtime_unix, content_sha256, thread_updated_at, last_turn_id,
               parser_version, chunker_version, embedded_model, last_ingested_at_unix,
               last_status, last_error, source_root, adapter, state_json)
           VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
           ON CONFLICT(source_uri, context_name) DO UPDATE SET
               source_type=excluded.source_type, doc_id=excluded.doc_id,
               size_bytes=excluded.size_bytes, mtime_unix=excluded.mtime_unix,
               content_sha256=excluded.content_sha256,
               thread_updated_at=excluded.thread_updated_at, last_turn_id=excluded.last_turn_id,
               parser_version=excluded.parser_version, chunker_version=excluded.chunker_version,
               embedded_model=excluded.embedded_model,
               last_ingested_at_unix=excluded.last_ingested_at_unix,
               last_status=excluded.last_status, last_error=excluded.last_error,
               source_root=excluded.source_root, adapter=excluded.adapter,
               state_json=excluded.state_json""",
        (
            fp.source_uri, fp.context_name, fp.source_type, fp.doc_id, fp.size_bytes,
            fp.mtime_unix, fp.content_sha256, fp.thread_updated_at, fp.last_turn_id,
            fp.parser_version, fp.chunker_version, fp.embedded_model, fp.last_ingested_at_unix,
            fp.last_status, fp.last_error, fp.source_root, fp.adapter,
            orjson.dumps(state).decode() if state else None,
        ),
    )


def delete(conn: sqlite3.Connection, context_name: str, source_uri: str) -> None:
    conn.execute(
        "DELETE FROM source_fingerprints WHERE context_name=? AND source_uri=?",
        (context_name, source_uri),
    )


def counts_by_status(conn: sqlite3.Connection, context_name: str) -> dict[str, int]:
    """How many sources of the context last ended in each status (ok, error, skipped)."""
    return dict(conn.execute(
        "SELECT last_status, COUNT(*) FROM source_fingerprints WHERE context_name=? "
        "GROUP BY last_status", (context_name,)).fetchall())
