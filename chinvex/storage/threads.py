"""Finding a conversation by the id its tool gave it: a Codex thread id, a Claude Code session id,
a ChatGPT conversation id. Agents and users have these ids at hand (in a rollout's file name, in
`claude --resume`, in a ChatGPT URL) and want the whole thread, not a search for its words.

The id is `documents.metadata.thread_id` of the conversation; a unique prefix of at least
`MIN_PREFIX` characters is enough (ids are long UUIDs).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

MIN_PREFIX = 8
MAX_TURN_CHARS = 20_000


class AmbiguousIdError(ValueError):
    pass


def find_thread(conn: sqlite3.Connection, thread_id: str) -> sqlite3.Row | None:
    """The conversation document whose thread id is `thread_id`, or starts with it (when it is
    at least MIN_PREFIX characters and only one matches)."""
    base = ("SELECT doc_id, source_type, source_uri, title, created_at, updated_at, metadata_json "
            "FROM documents WHERE json_extract(metadata_json, '$.doc_type') = 'conversation' AND ")
    row = conn.execute(base + "json_extract(metadata_json, '$.thread_id') = ?", (thread_id,)).fetchone()
    if row is not None or len(thread_id) < MIN_PREFIX:
        return row
    from chinvex.storage.db import like_prefix

    rows = conn.execute(base + "json_extract(metadata_json, '$.thread_id') LIKE ? ESCAPE '\\' LIMIT 3",
                        (like_prefix(thread_id),)).fetchall()
    if len(rows) > 1:
        raise AmbiguousIdError(f"{thread_id!r} starts more than one conversation id; give more of it")
    return rows[0] if rows else None


def conversation(conn: sqlite3.Connection, row: sqlite3.Row, context: str) -> dict[str, Any]:
    """The conversation with its turns (role, time, text; tool calls as their name and input)."""
    meta = orjson.loads(row["metadata_json"] or "{}")
    turns = []
    for turn_index, turn_json in conn.execute(
            "SELECT turn_index, turn_json FROM conversation_turns WHERE doc_id = ? ORDER BY turn_index",
            (row["doc_id"],)):
        turn = orjson.loads(turn_json)
        text = str(turn.get("text") or "")
        entry = {"index": turn_index, "role": turn.get("role"), "ts": turn.get("ts"),
                 "text": text[:MAX_TURN_CHARS]}
        if len(text) > MAX_TURN_CHARS:
            entry["text_truncated"] = True
        if turn.get("tool"):
            entry["tool"] = turn["tool"]
        turns.append(entry)
    return {"kind": "conversation", "context": context, "doc_id": row["doc_id"], "thread_id": meta.get("thread_id"),
            "source_type": row["source_type"], "source_uri": row["source_uri"], "title": row["title"],
            "created_at": row["created_at"], "updated_at": row["updated_at"], "turn_count": len(turns),
            "turns": turns}
