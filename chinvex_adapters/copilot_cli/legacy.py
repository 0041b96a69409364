"""Copilot CLI's legacy session file (`history-session-state/session_<id>_<ms>.json`, CLI <=
0.0.341): one object `{sessionId, startTime, chatMessages, timeline}`.

`timeline` is what the user saw, with times: `user` and `copilot` texts, `tool_call_completed`
(name, arguments, `result {type, log}`), `info`/`error`/`warning` notices. `chatMessages` is
what the model got (OpenAI chat messages: prompts wrapped in `<current_datetime>` and
`<reminder>`, `tool_calls` with JSON-text arguments, `tool` results), without times. The
timeline is read when it has entries (its tool results take the model-side text from
`chatMessages` when both hold the call); a file whose timeline is empty is read from
`chatMessages`, its turns taking the session's start time.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chinvex.timeutil import to_utc
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder

from .common import arguments, strip_wrappers

NOTICE_TYPES = {"error": "Error", "warning": "Warning"}


def tool_outputs(messages: list[Any]) -> dict[str, str]:
    """`tool` messages' text by the call id they answer."""
    found: dict[str, str] = {}
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "tool":
            call_id, content = as_str(message.get("tool_call_id")), message.get("content")
            if call_id and isinstance(content, str):
                found[call_id] = content
    return found


def from_timeline(b: ConversationBuilder, timeline: list[Any], outputs: dict[str, str],
                  counts: Counter[str]) -> None:
    """The timeline's entries in file order (one of them may carry an earlier time than the
    entries before it; the order of the file is the order of the session)."""
    completed = {as_str(e.get("callId")) for e in timeline
                 if isinstance(e, dict) and e.get("type") == "tool_call_completed"}
    for n, entry in enumerate(timeline):
        if not isinstance(entry, dict):
            counts["timeline_entries_invalid"] += 1
            continue
        kind, ts, turn_id = entry.get("type"), to_utc(entry.get("timestamp")), as_str(entry.get("id")) or f"t{n}"
        text = entry.get("text") if isinstance(entry.get("text"), str) else ""
        if kind == "user":
            b.message("user", text, ts=ts, turn_id=turn_id)
        elif kind == "copilot":
            b.message("assistant", text, ts=ts, turn_id=turn_id)
        elif kind in ("tool_call_completed", "tool_call_requested"):
            call_id = as_str(entry.get("callId"))
            if kind == "tool_call_requested" and call_id in completed:
                continue
            _tool(b, entry, call_id, ts, outputs)
        elif kind in NOTICE_TYPES and text.strip():
            b.message("system", f"{NOTICE_TYPES[kind]}: {text}", ts=ts, turn_id=turn_id,
                      meta={"event": kind})
        else:
            counts[f"timeline_skipped:{str(kind)[:40]}"] += 1


def _tool(b: ConversationBuilder, entry: dict[str, Any], call_id: str | None, ts: Any,
          outputs: dict[str, str]) -> None:
    result = entry.get("result") if isinstance(entry.get("result"), dict) else {}
    status = as_str(result.get("type"))
    output: Any = outputs.get(call_id or "")
    if output is None:
        output = result.get("log")
    meta = {"intentionSummary": entry["intentionSummary"]} if as_str(entry.get("intentionSummary")) else {}
    requested = entry.get("type") == "tool_call_requested"
    b.tool_call(as_str(entry.get("name")) or "tool", arguments(entry.get("arguments")), ts=ts,
                call_id=call_id, output=None if requested else (output if output is not None else ""),
                is_error=status not in (None, "success") and not requested, status=status, meta=meta)


def from_chat_messages(b: ConversationBuilder, messages: list[Any], counts: Counter[str]) -> None:
    """The model-side messages, in order (no times: the builder's fallback gives them)."""
    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            counts["chat_messages_invalid"] += 1
            continue
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "user":
            b.message("user", strip_wrappers(text), turn_id=f"m{n}")
        elif role == "assistant":
            if text.strip():
                b.message("assistant", text, turn_id=f"m{n}")
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    b.tool_call(as_str(function.get("name")) or "tool", arguments(function.get("arguments")),
                                call_id=as_str(call.get("id")))
        elif role == "tool":
            b.tool_result(text, call_id=as_str(message.get("tool_call_id")))
        elif role == "system":
            counts["system_prompts_skipped"] += 1
        else:
            counts["chat_messages_unknown_role"] += 1
