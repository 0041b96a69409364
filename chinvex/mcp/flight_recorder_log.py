"""MCP tool `flight_recorder_log`: an agent records a decision, failure or note of its session."""

from __future__ import annotations

from typing import Any

from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState
from chinvex.memory.events import log_event
from chinvex.memory.items import edi_metadata, redactor_for


def flight_recorder_log(state: ServerState, type: str, content: str, rationale: str | None = None,
                        metadata: dict[str, Any] | None = None, resolution: str | None = None,
                        from_agent: str | None = None, to_agent: str | None = None,
                        related_files: list[str] | None = None) -> dict[str, Any]:
    event_type = limits.require_short("type", type, max_chars=limits.TYPE_MAX_CHARS)
    limits.require_text("content", content, max_bytes=limits.CONTENT_MAX_BYTES)
    limits.require_text("rationale", rationale, max_bytes=limits.NOTE_MAX_BYTES, required=False)
    limits.require_text("resolution", resolution, max_bytes=limits.NOTE_MAX_BYTES, required=False)
    files = limits.require_list("related_files", related_files, max_items=64, max_chars=1024)
    if metadata is not None and not isinstance(metadata, dict):
        raise ToolFailure(limits.INVALID_ARGUMENT, "metadata must be a JSON object.")
    merged: dict[str, Any] = dict(metadata or {})
    for key, value in (("resolution", resolution), ("from_agent", from_agent), ("to_agent", to_agent)):
        if value:
            merged.setdefault(key, value[:1024] if key != "resolution" else value)
    if files:
        merged.setdefault("related_files", files)
    for key, value in edi_metadata(state.env).items():
        merged.setdefault(key, value)
    limits.check_json_size("metadata", merged)
    assert event_type is not None
    config = state.project()
    h = state.handle(config)
    with h.lock:
        logged = log_event(h.conn, session_id=state.session_id, event_type=event_type, content=content,
                             rationale=rationale, metadata=merged, redactor=redactor_for(config))
    return {"logged": True, **logged, "session_id": state.session_id, "context": config.name}
