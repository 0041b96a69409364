"""MCP tool `recall_feedback`: record whether an item helped."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.scopes import lookup_contexts
from chinvex.mcp.state import ServerState
from chinvex.memory.feedback import FEEDBACK_KINDS, memory_stats, record_feedback
from chinvex.memory.items import get_memory, redactor_for
from chinvex.memory.vocabulary import MEMORY_ID
from chinvex.storage.recall_reads import chunk_exists


def recall_feedback(state: ServerState, item_id: str, useful: bool | None = None, feedback: str | None = None,
                    context: str | None = None, duplicate_of: str | None = None) -> dict[str, Any]:
    target = limits.require_short("item_id", item_id, max_chars=limits.ID_MAX_CHARS)
    assert target is not None
    kind = feedback.strip().lower().replace("-", "_").replace(" ", "_") if feedback else None
    if kind is not None and kind not in FEEDBACK_KINDS:
        raise ToolFailure(limits.INVALID_ARGUMENT, f"feedback must be one of {', '.join(FEEDBACK_KINDS)} (got {feedback!r}).")
    if kind is None and useful is None:
        raise ToolFailure(limits.INVALID_ARGUMENT, "give useful (true or false) or feedback "
                          f"({', '.join(FEEDBACK_KINDS)}).")
    if kind is None:
        kind = "useful" if useful else "not_useful"
    elif useful is not None and (kind == "useful") != bool(useful) and kind in ("useful", "not_useful"):
        raise ToolFailure(limits.INVALID_ARGUMENT, f"useful={useful} contradicts feedback={kind!r}.")
    limits.require_text("context", context, max_bytes=limits.NOTE_MAX_BYTES, required=False)
    dup = limits.require_short("duplicate_of", duplicate_of, max_chars=limits.ID_MAX_CHARS, required=False)
    if dup is not None and kind != "duplicate":
        raise ToolFailure(limits.INVALID_ARGUMENT, "duplicate_of is only meaningful with feedback='duplicate'.")
    for config in lookup_contexts(state):
        h = state.handle(config)
        with h.lock:
            if MEMORY_ID.match(target):
                exists = get_memory(h.conn, target) is not None
            else:
                exists = chunk_exists(h.conn, target)
            if not exists:
                continue
            feedback_id = record_feedback(h.conn, item_id=target, session_id=state.session_id, kind=kind,
                                            context=context, duplicate_of=dup, redactor=redactor_for(config))
            stats = memory_stats(h.conn, target)
        return {"acknowledged": True, "feedback_id": feedback_id, "item_id": target, "feedback": kind,
                "stored_in": config.name, "item_stats": stats}
    raise ToolFailure(limits.NOT_FOUND, f"No knowledge item or chunk with id {target!r} in the project or global "
                      "context; use an id from recall_search results.")
