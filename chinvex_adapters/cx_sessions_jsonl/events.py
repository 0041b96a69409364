"""What one rollout line contributes to its group: an `Ev`, and the group that collects them.

Also the line kinds that are told apart here (tool events and items, task markers) and the
notices (errors, rollbacks, review mode) that are neither messages nor tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chinvex.models import Attachment

from .content import as_dict, as_int, as_list, as_str
from .tools import ToolPiece

IGNORED_RESPONSE_TYPES = {"ghost_snapshot", "compaction", "context_compaction", "additional_tools",
                          "configuration_update", "other", "compaction_trigger"}
TOOL_EVENT_TYPES = {"exec_command_end", "mcp_tool_call_end", "patch_apply_end", "web_search_end",
                    "image_generation_end", "view_image_tool_call", "dynamic_tool_call_request",
                    "dynamic_tool_call_response", "collab_agent_spawn_end", "collab_waiting_end",
                    "collab_close_end", "collab_agent_interaction_end"}
TOOL_ITEM_TYPES = {"CommandExecution", "McpToolCall", "FileChange", "WebSearch", "ImageGeneration",
                   "ImageView", "DynamicToolCall", "CollabAgentToolCall", "Extension"}
TASK_START_EVENTS = {"task_started", "turn_started"}
TASK_END_EVENTS = {"task_complete", "turn_complete", "turn_aborted"}

@dataclass
class Ev:
    kind: str  # user | injected | context | assistant | reasoning | tool | compaction | notice
    channel: str  # item | event | response
    ts: datetime | None
    text: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    piece: ToolPiece | None = None
    role: str = "system"
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Group:
    start: int
    snapshot: dict[str, Any]
    task_open: bool = False
    ever_task_open: bool = False
    has_activity: bool = False  # anything but user input: decides where a new request begins
    events: list[Ev] = field(default_factory=list)



def phase_meta(p: dict[str, Any]) -> dict[str, Any]:
    phase = as_str(p.get("phase"))
    return {"phase": phase} if phase else {}


def task_end_error(p: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    """The error a `task_complete` / `turn_complete` ends with, shown like an `error` event.

    Recent Codex writes a failed turn's error on its end event (`"last_agent_message": null,
    "error": {"message", "codex_error_info"}`), sometimes with no `error` event before it.
    """
    error = p.get("error")
    if isinstance(error, str):
        message, info, details = error, None, None
    else:
        error = as_dict(error)
        info = as_str(error.get("codex_error_info"))
        details = as_str(error.get("additional_details"))
        message = as_str(error.get("message")) or info
    if not message or not message.strip():
        return None
    text = f"Error: {message.strip()}"
    if details and details.strip() and details.strip() not in text:
        text += "\n" + details.strip()
    meta: dict[str, Any] = {"kind": "error", "on_task_end": True}
    if info:
        meta["codex_error_info"] = info[:200]
    return "system", text, meta


def event_notice(kind: str, p: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    """Events the user saw in the transcript that are neither messages nor tools."""
    if kind == "error":
        message = as_str(p.get("message"))
        return ("system", f"Error: {message}", {"kind": "error"}) if message else None
    if kind == "thread_rolled_back":
        n = as_int(p.get("num_turns"))
        return "system", f"Rolled back {n if n is not None else 'some'} turn(s).", {"kind": "rollback"}
    if kind == "entered_review_mode":
        target = as_dict(p.get("target"))
        hint = as_str(p.get("user_facing_hint")) or as_str(target.get("title")) or as_str(p.get("prompt"))
        what = as_str(target.get("type"))
        text = "Entered review mode" + (f" ({what})" if what else "") + (f": {hint}" if hint else ".")
        return "system", text, {"kind": "review_start"}
    if kind == "exited_review_mode":
        review = as_dict(p.get("review_output") or p.get("review"))
        lines = []
        for finding in as_list(review.get("findings")):
            f = as_dict(finding)
            title, body = as_str(f.get("title")), as_str(f.get("body"))
            loc = as_dict(f.get("code_location"))
            where = as_str(loc.get("absolute_file_path"))
            if title or body:
                lines.append("- " + " — ".join(x for x in (title, body) if x) + (f" ({where})" if where else ""))
        explanation = as_str(review.get("overall_explanation"))
        if explanation:
            lines.insert(0, explanation)
        if lines:
            return "assistant", "Review:\n" + "\n".join(lines), {"kind": "review"}
        return "system", "Exited review mode.", {"kind": "review_end"}
    return None
