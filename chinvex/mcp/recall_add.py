"""MCP tool `recall_add`: store a memory and index it."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import limits
from chinvex.mcp.item_indexing import index_items
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.scopes import scope_contexts
from chinvex.mcp.state import ServerState
from chinvex.memory.items import edi_metadata, insert_memory, make_memory, redactor_for

LOCK_WAIT_S = 3.0
"""How long recall_add waits for a context an ingest is writing before storing the item as
pending (it is indexed on a later call): long enough for a concurrent add, short for an agent."""


def recall_add(state: ServerState, type: str, title: str, content: str, tags: list[str] | None = None,
               scope: str = "project", related_files: list[str] | None = None) -> dict[str, Any]:
    item_type = limits.require_short("type", type, max_chars=limits.TYPE_MAX_CHARS)
    clean_title = limits.require_short("title", title, max_chars=limits.TITLE_MAX_CHARS)
    limits.require_text("content", content, max_bytes=limits.CONTENT_MAX_BYTES)
    tag_list = limits.require_list("tags", tags, max_items=limits.TAGS_MAX, max_chars=limits.TAG_MAX_CHARS)
    files = limits.require_list("related_files", related_files, max_items=64, max_chars=1024)
    assert item_type is not None and clean_title is not None
    if scope not in ("project", "global"):
        raise ToolFailure(limits.INVALID_ARGUMENT, f"scope must be project or global (got {scope!r}).")
    config = state.project() if scope == "project" else scope_contexts(state, "global")[0][0]

    metadata: dict[str, Any] = {**edi_metadata(state.env), "added_by": "recall_add",
                                "mcp_session_id": state.session_id}
    if files:
        metadata["related_files"] = files
    redactor = redactor_for(config)
    item = make_memory(item_type.lower(), clean_title, content, scope=scope, tags=tag_list, metadata=metadata,
                       redactor=redactor)
    redactions = dict(sorted(redactor.counts.items()))
    h = state.handle(config)
    with state.indexing_lock:  # so that a concurrent search does not take it for a pending item
        state.indexing.add(item.item_id)
    try:
        with h.lock:
            insert_memory(h.conn, item)  # durable first: indexing may have to wait
        pending = index_items(state, config, [item], wait=LOCK_WAIT_S)
    finally:
        with state.indexing_lock:
            state.indexing.discard(item.item_id)
    out = {
        "id": item.item_id,
        "item_id": item.item_id,
        "type": item.type,
        "title": item.title,
        "scope": scope,
        "context": config.name,
        "doc_id": item.doc_id,
        "indexed": pending is None,
        "created_at": item.created_at,
        "metadata": item.metadata,
        "redactions": redactions,
    }
    if pending is not None:
        out["warning"] = pending
    return out
