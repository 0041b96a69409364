"""MCP tool `chinvex_get_chunks`: chunks by id, with their text and metadata."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState


def chinvex_get_chunks(state: ServerState, chunk_ids: list[str], context: str | None = None) -> dict[str, Any]:
    from chinvex.storage.chunk_reads import fetch_chunks

    ids = limits.require_list("chunk_ids", chunk_ids, max_items=limits.CHUNK_IDS_MAX, max_chars=limits.ID_MAX_CHARS)
    if not ids:
        raise ToolFailure(limits.INVALID_ARGUMENT, "chunk_ids must name at least one chunk id.")
    config = state.context_or_project(context)
    h = state.handle(config)
    with h.lock:
        chunks = fetch_chunks(h.conn, ids, config.name)
    found = {c["chunk_id"] for c in chunks}
    missing = [cid for cid in ids if cid not in found]
    if not chunks:
        raise ToolFailure(limits.NOT_FOUND, f"None of the chunk ids is in context {config.name}: {', '.join(ids[:10])}",
                          context=config.name, missing=missing)
    return {"context": config.name, "chunks": chunks, "missing": missing}
