"""Reading stored conversations for blame and the timeline: their document rows, a window of
their turns, the chunk that holds a turn, and the conversations active in a period."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from chinvex.paths import recorded_absolute

_CONVERSATION = "json_extract(metadata_json, '$.doc_type') = 'conversation'"


@dataclass(frozen=True)
class ConversationRow:
    doc_id: str
    source_type: str
    source_uri: str
    title: str | None
    created_at: str | None
    updated_at: str | None
    metadata: dict[str, Any]

    @property
    def source(self) -> str:
        return str(self.metadata.get("source") or self.source_type)

    @property
    def thread_id(self) -> str:
        return str(self.metadata.get("thread_id") or self.doc_id)

    @property
    def project(self) -> str | None:
        """The folder the session ran in: its working directory, else its first repository path."""
        cwd = self.metadata.get("cwd")
        if isinstance(cwd, str) and cwd:
            return cwd
        paths = (self.metadata.get("links") or {}).get("repo_paths") or []
        return next((p for p in paths if isinstance(p, str) and recorded_absolute(p)), None)


def _row(row: Sequence[Any]) -> ConversationRow:
    return ConversationRow(row[0], row[1], row[2], row[3], row[4], row[5], orjson.loads(row[6] or "{}"))


_COLUMNS = "doc_id, source_type, source_uri, title, created_at, updated_at, metadata_json"


def conversations(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> dict[str, ConversationRow]:
    out: dict[str, ConversationRow] = {}
    for start in range(0, len(doc_ids), 500):
        part = list(doc_ids[start:start + 500])
        marks = ",".join("?" * len(part))
        for row in conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE doc_id IN ({marks})", part):
            out[row[0]] = _row(row)
    return out


def conversations_between(conn: sqlite3.Connection, since: str | None, until: str | None,
                          limit: int = 5000) -> list[ConversationRow]:
    """Conversations active in [since, until): begun before `until` and last updated at or
    after `since` (ISO times, None is open), oldest first; the newest `limit` of them."""
    clauses, params = [_CONVERSATION], []
    if since:
        clauses.append("COALESCE(updated_at, created_at) >= ?")
        params.append(since)
    if until:
        clauses.append("COALESCE(created_at, updated_at) < ?")
        params.append(until)
    rows = conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE {' AND '.join(clauses)} "
                        "ORDER BY COALESCE(created_at, updated_at) DESC LIMIT ?", [*params, limit])
    return [_row(row) for row in rows][::-1]


def turns(conn: sqlite3.Connection, doc_id: str, first: int, last: int) -> dict[int, dict[str, Any]]:
    """Turns `first..last` (0-based, inclusive) as stored (JSON dicts) by index."""
    return {index: orjson.loads(text) for index, text in conn.execute(
        "SELECT turn_index, turn_json FROM conversation_turns WHERE doc_id=? AND turn_index BETWEEN ? AND ? "
        "ORDER BY turn_index", (doc_id, max(first, 0), last))}


def first_user_text(conn: sqlite3.Connection, doc_id: str, look: int = 40) -> str | None:
    for _, text in conn.execute(
            "SELECT turn_index, turn_json FROM conversation_turns WHERE doc_id=? ORDER BY turn_index LIMIT ?",
            (doc_id, look)):
        turn = orjson.loads(text)
        if turn.get("role") == "user" and str(turn.get("text") or "").strip():
            return str(turn["text"])
    return None


def turn_chunks(conn: sqlite3.Connection, doc_id: str) -> list[tuple[str, int, int]]:
    """(chunk id, first turn, last turn) of a conversation's chunks, turns 0-based."""
    out = []
    for chunk_id, start, end in conn.execute(
            "SELECT chunk_id, json_extract(metadata_json, '$.turn_start'), json_extract(metadata_json, '$.turn_end') "
            "FROM chunks WHERE doc_id=? ORDER BY chunk_index", (doc_id,)):
        if isinstance(start, int) and isinstance(end, int):
            out.append((chunk_id, start - 1, end - 1))
    return out


def chunk_of_turn(chunks: Sequence[tuple[str, int, int]], turn_index: int) -> str | None:
    for chunk_id, start, end in chunks:
        if start <= turn_index <= end:
            return chunk_id
    return None
