"""MCP tool `recall_get`: one memory, chunk, or conversation by id."""

from __future__ import annotations

import sqlite3
from typing import Any

from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.scopes import lookup_contexts
from chinvex.mcp.state import ServerState
from chinvex.memory.feedback import memory_stats
from chinvex.memory.items import get_memory, memories_for_docs
from chinvex.memory.vocabulary import MEMORY_ID, MEMORY_SOURCE_TYPE, result_type
from chinvex.storage.recall_reads import chunk_spans


def _parent_content(conn: sqlite3.Connection, doc_id: str) -> str:
    """The document's text rebuilt from its chunks (ranges may overlap; gaps become a newline)."""
    rows = chunk_spans(conn, doc_id)
    parts: list[str] = []
    end = None
    for row in rows:
        start, text = row["char_start"], row["text"]
        if end is None or start is None:
            parts.append(text)
        elif start >= end:
            parts.append(("\n" if start > end else "") + text)
        else:
            parts.append(text[end - start:])
        if row["char_end"] is not None:
            end = max(end or 0, row["char_end"])
    return "".join(parts)


def _thread(conn: sqlite3.Connection, thread_id: str, context: str) -> dict[str, Any] | None:
    """A conversation by its Codex thread / Claude Code session / ChatGPT conversation id, in
    recall_get's shape (the turns as `content`, each also in `turns`)."""
    from chinvex.storage.threads import AmbiguousIdError, conversation, find_thread

    try:
        row = find_thread(conn, thread_id)
    except AmbiguousIdError as exc:
        raise ToolFailure(limits.INVALID_ARGUMENT, str(exc)) from None
    if row is None:
        return None
    found = conversation(conn, row, context)
    content = "\n\n".join(f"[{t['index']}] {t['role']}: {t['text']}" for t in found["turns"])
    return {"id": found["thread_id"], "type": "session", "title": found["title"], "content": content,
            "turns": found["turns"],
            "metadata": {"context": context, "doc_id": found["doc_id"], "source_type": found["source_type"],
                         "source_uri": found["source_uri"], "created_at": found["created_at"],
                         "updated_at": found["updated_at"], "turn_count": found["turn_count"]}}


def recall_get(state: ServerState, id: str, include_parent: bool = False) -> dict[str, Any]:
    from chinvex.storage.chunk_reads import fetch_chunks

    item_id = limits.require_short("id", id, max_chars=limits.ID_MAX_CHARS)
    assert item_id is not None
    pointer: dict[str, Any] | None = None
    for config in lookup_contexts(state):
        h = state.handle(config)
        with h.lock:
            if MEMORY_ID.match(item_id):
                item = get_memory(h.conn, item_id)
                if item is None:
                    continue
                if item.scope == "promoted":  # a pointer: the item lives in global now
                    pointer = {**(item.metadata.get("promoted_to") or {}), "context": config.name}
                    continue
                out = item.as_result()
                out["metadata"].update({"context": config.name, "item_stats": memory_stats(h.conn, item_id)})
                if pointer is not None:
                    out["metadata"]["found_via_pointer_in"] = pointer["context"]
                return out
            chunks = fetch_chunks(h.conn, [item_id], config.name)
            if not chunks:
                thread = _thread(h.conn, item_id, config.name)
                if thread is not None:
                    return thread
                continue
            chunk = chunks[0]
            items = memories_for_docs(h.conn, [chunk["doc_id"]]) if chunk["source_type"] == MEMORY_SOURCE_TYPE else {}
            parent = _parent_content(h.conn, chunk["doc_id"]) if include_parent else None
            stats = memory_stats(h.conn, item_id)
        item = items.get(chunk["doc_id"])
        rtype = result_type(chunk["source_type"], chunk["metadata"], {"type": item.type} if item else None)
        meta = chunk["metadata"] or {}
        out = {
            "id": item_id,
            "type": rtype,
            "title": meta.get("path") or chunk["title"] or chunk["source_uri"],
            "content": chunk["text"],
            "metadata": {
                "source": meta.get("path") or chunk["source_uri"],
                "source_uri": chunk["source_uri"],
                "source_type": chunk["source_type"],
                "context": config.name,
                "doc_id": chunk["doc_id"],
                "range": chunk["range"],
                "neighbours": chunk["neighbours"],
                "timestamps": chunk["timestamps"],
                "chunk_metadata": meta,
                "knowledge_id": item.item_id if item else None,
                "item_stats": stats,
            },
        }
        if parent is not None:
            out["parent_content"] = parent
        return out
    raise ToolFailure(limits.NOT_FOUND, f"No knowledge item or chunk with id {item_id!r} in the project or global context.")
