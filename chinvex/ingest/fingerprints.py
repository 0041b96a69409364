"""Fingerprints decide, from a stat or a thread's updatedAt alone, whether a source must be read
again (seed spec §5, §7). The decision is a pure function; the table access is beside it."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Any

import orjson

from chinvex.models.sources import SourceCandidate

# Reason codes (DESIGN.md §5), plus new_thread / full_reingest / unchanged.
NEW_FILE = "new_file"
NEW_THREAD = "new_thread"
MTIME_CHANGED = "mtime_changed"
SIZE_CHANGED = "size_changed"
CONTENT_CHANGED = "content_changed"
PARSER_UPGRADED = "parser_upgraded"
CHUNKER_UPGRADED = "chunker_upgraded"
EMBED_MODEL_CHANGED = "embed_model_changed"
RETRY_AFTER_ERROR = "retry_after_error"
THREAD_UPDATED = "thread_updated"
FULL_REINGEST = "full_reingest"
ORIGIN_CHANGED = "origin_changed"  # another source of the same document went away
INTERRUPTED = "interrupted"  # the run writing this source died before recording it
UNCHANGED = "unchanged"


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


@dataclass(frozen=True)
class Versions:
    parser_version: str
    chunker_version: str
    embedded_model: str


@dataclass(frozen=True)
class Decision:
    ingest: bool
    reason: str
    verify_content: bool = False
    """mtime moved but size did not, and a content hash is stored: hash the file and settle the
    decision with `verified()` before reading it (a `touch` is not a change)."""
    refresh_only: bool = False
    """The stat moved but the content hash is the stored one: only the fingerprint's stat is
    brought up to date (reported as "touched"/refreshed), nothing is parsed or written."""


def decide(fp: Fingerprint | None, cand: SourceCandidate, versions: Versions, *, full: bool,
           interrupted: bool = False) -> Decision:
    """Skip or ingest one candidate, from its stat (or thread timestamps) and its fingerprint.

    The first matching reason wins, so the reason reported is the one that forces the read:
    a version or model change outranks a stat change (everything of the source is rebuilt
    anyway). `full`: everything is read again; the reason is `embed_model_changed` when the
    source's vectors were made by another model (why `--full` was needed), else `full_reingest`.
    `interrupted`: an earlier run started writing this source and died before its
    fingerprint; what is stored may be neither the fingerprinted version nor the current one
    (the file may even have been reverted to the fingerprinted version since), so the source is
    read again whatever its stat says.

    A moved mtime with an unchanged size is `mtime_changed`; when a content hash is stored the
    decision asks for it to be compared (`verify_content`) and `verified()` turns it into
    `content_changed` or a refresh. Without a stored hash (files over the hashing limit,
    sources whose adapter keeps a resume state instead) the content is not compared, so the
    reason stays what was observed: `mtime_changed`."""
    is_thread = cand.path is None and cand.thread_updated_at is not None
    if fp is None:
        return Decision(True, NEW_THREAD if is_thread else NEW_FILE)
    if full:
        if fp.embedded_model != versions.embedded_model:
            return Decision(True, EMBED_MODEL_CHANGED)
        return Decision(True, FULL_REINGEST)
    if interrupted:
        return Decision(True, INTERRUPTED)
    if fp.last_status == "error":
        return Decision(True, RETRY_AFTER_ERROR)
    if fp.parser_version != versions.parser_version:
        return Decision(True, PARSER_UPGRADED)
    if fp.chunker_version != versions.chunker_version:
        return Decision(True, CHUNKER_UPGRADED)
    if fp.embedded_model != versions.embedded_model:
        return Decision(True, EMBED_MODEL_CHANGED)
    if is_thread:
        if cand.thread_updated_at != fp.thread_updated_at:
            return Decision(True, THREAD_UPDATED)
        if cand.last_turn_id is not None and cand.last_turn_id != fp.last_turn_id:
            return Decision(True, THREAD_UPDATED)
        return Decision(False, UNCHANGED)
    if cand.size_bytes != fp.size_bytes:
        return Decision(True, SIZE_CHANGED)
    same_mtime = (
        cand.mtime_ns == fp.mtime_ns if fp.mtime_ns is not None and cand.mtime_ns is not None
        else cand.mtime_unix == fp.mtime_unix
    )
    if not same_mtime:
        return Decision(True, MTIME_CHANGED, verify_content=fp.content_sha256 is not None)
    return Decision(False, UNCHANGED)


def verified(decision: Decision, fp: Fingerprint | None, content_sha256: str | None) -> Decision:
    """Settle a `verify_content` decision with the file's current hash (None: it could not be
    read). Same hash: a refresh; another hash: `content_changed`; unreadable: still
    `mtime_changed` (nothing was compared; reading it for the ingest will report why)."""
    if not decision.verify_content or fp is None or fp.content_sha256 is None:
        return decision
    if content_sha256 is None:
        return Decision(True, MTIME_CHANGED)
    if content_sha256 == fp.content_sha256:
        return Decision(False, MTIME_CHANGED, refresh_only=True)
    return Decision(True, CONTENT_CHANGED)


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


def now_unix() -> int:
    return int(time.time())
