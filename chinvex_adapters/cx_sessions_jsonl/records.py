"""Recognising one decoded JSONL line as a rollout record (or as drift).

Three historic shapes are accepted (FORMATS.md §2.2):
- era C/D envelope `{"timestamp", "ordinal"?, "type", "payload", "metadata"?}`;
- era B (pre-envelope, ~0.1x-0.3x): a bare header `{"id", "timestamp", "instructions", ...}` on
  the first line, `{"record_type": "state"}` markers and bare ResponseItems without timestamps.
  Bare items are only trusted after such a header, so foreign JSONL is not mistaken for them;
- anything else is drift: counted and skipped, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ENVELOPE_TYPES = {
    "session_meta", "response_item", "event_msg", "turn_context", "compacted", "world_state",
    "inter_agent_communication", "inter_agent_communication_metadata", "token_usage_record",
    "retained_context", "security_risk_score", "realtime_item", "rollout_reference",
}

RESPONSE_ITEM_TYPES = {
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "image_generation_call",
    "tool_search_call", "tool_search_output", "agent_message", "additional_tools", "compaction",
    "context_compaction", "configuration_update", "ghost_snapshot", "tool_call", "tool_result",
}


@dataclass(frozen=True)
class Record:
    type: str  # an envelope type name; unknown names are kept as-is
    payload: dict[str, Any]
    timestamp: Any
    ordinal: Any = None
    era_b: bool = False


def is_era_b_header(obj: dict[str, Any]) -> bool:
    return (
        "type" not in obj and "payload" not in obj and "record_type" not in obj
        and isinstance(obj.get("id"), str) and "timestamp" in obj
    )


def classify(obj: Any, *, first_line: bool, era_b: bool) -> Record | str:
    """A `Record`, or a reason string ("drift", "era_b_state") for a line to skip."""
    if not isinstance(obj, dict):
        return "drift"
    typ = obj.get("type")
    payload = obj.get("payload")
    if isinstance(typ, str) and "payload" in obj:
        if not isinstance(payload, dict):
            return "drift"
        return Record(typ, payload, obj.get("timestamp"), obj.get("ordinal"))
    if first_line and is_era_b_header(obj):
        return Record("session_meta", obj, obj.get("timestamp"), era_b=True)
    if era_b:
        if obj.get("record_type") is not None:
            return "era_b_state"
        if isinstance(typ, str) and typ in RESPONSE_ITEM_TYPES:
            return Record("response_item", obj, obj.get("timestamp"), era_b=True)
    return "drift"
