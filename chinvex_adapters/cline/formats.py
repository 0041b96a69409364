"""Telling the family's files apart from other agents' by their first bytes.

- API history: a JSON array whose first element is `{role: "user", content}` (Anthropic
  messages). Raw Anthropic dumps look the same, so a file not named
  `api_conversation_history.json` must also show the extension's `<task>` and
  `<environment_details>` wrapping.
- UI messages: a JSON array whose first element has an integer `ts` and `type` "say"/"ask".
- SDK messages: a JSON object with `version`, `sessionId` or `agent`, and `messages`.
Gemini's `{role, parts}`, Claude Code's JSONL, Continue's `history` never match.
"""

from __future__ import annotations

from pathlib import Path

from chinvex_adapters.kit.sniff import head_bytes, json_shape

from .layout import API_HISTORY, OLD_UI_MESSAGES, SDK_MESSAGES, UI_MESSAGES


def shape_of(path: Path) -> tuple[str | None, str]:
    """("api" | "ui" | "sdk", "") for a file of this family, else (None, why not)."""
    name = path.name
    if not name.endswith(".json"):
        return None, "not a .json file"
    head = head_bytes(path)
    if not head.strip():
        return None, "empty file"
    shape = json_shape(head)
    if shape.kind == "array":
        keys = set(shape.keys)
        if {"role", "content"} <= keys and shape.scalars.get("role") == "user":
            if name == API_HISTORY or (b"<task>" in head and b"environment_details" in head):
                return "api", ""
            return None, "Anthropic-style messages without the extension's <task> wrapping"
        ts = shape.scalars.get("ts")
        if {"ts", "type"} <= keys and shape.scalars.get("type") in ("say", "ask") and isinstance(ts, int):
            return "ui", ""
        if not keys and name in (API_HISTORY, UI_MESSAGES, OLD_UI_MESSAGES) and head.strip() == b"[]":
            return ("api" if name == API_HISTORY else "ui"), ""
        return None, "a JSON array of another shape"
    if shape.kind == "object":
        keys = set(shape.keys)
        if "messages" in keys and "version" in keys and ({"sessionId", "agent"} & keys):
            return "sdk", ""
        if name.endswith(SDK_MESSAGES) and "messages" in keys:
            return "sdk", ""
        return None, "a JSON object without the SDK's version, sessionId and messages"
    return None, "not JSON, or cut off before its first record"
