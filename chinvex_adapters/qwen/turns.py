"""Qwen Code records as turns.

- `user`: the prompt (`systemPayload.displayText` when recorded, else its text parts without
  the hook context Qwen wraps in `<qwen:user-prompt-submit-context>`); notices sent to the model
  for the user (`notification`, `cron`, goal runtime) are system turns;
- `assistant` (role "model"): reasoning parts (`thought: true`) as one thinking turn, the words,
  then each `functionCall` as a tool call;
- `tool_result`: the call's result, paired by call id; a call the user cancelled has no result
  record, and keeps the reason its telemetry gave (`qwen-code.tool_call` with the same name and
  arguments), else stays a call without a result;
- `system`: titles (`custom_title`), slash commands, telemetry (API errors are counted).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from chinvex.models import Attachment, Turn
from chinvex_adapters.gemini.parts import (
    attachments,
    function_calls,
    function_responses,
    part_list,
    response_output,
    result_parts_text,
    thought_text,
    visible_text,
)
from chinvex_adapters.kit.edits import edits_from_call
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder

HOOK_CONTEXT = re.compile(r"<qwen:user-prompt-submit-context>.*?</qwen:user-prompt-submit-context>", re.S)
_AT_IMAGE = re.compile(r"@(\S+\.(?:png|jpe?g|gif|webp|bmp|svg|pdf))\b", re.I)
USER_TURN_SUBTYPES = frozenset({"mid_turn_user_message"})
USAGE_KEYS = {"promptTokenCount": "input", "candidatesTokenCount": "output", "thoughtsTokenCount": "thoughts",
              "cachedContentTokenCount": "cached", "totalTokenCount": "total"}


def call_statuses(records: list[dict[str, Any]]) -> dict[str, str]:
    """Call id -> how its tool ended, from the result records (to know which edits happened)."""
    statuses: dict[str, str] = {}
    for record in records:
        if record.get("type") != "tool_result":
            continue
        result = record.get("toolCallResult") if isinstance(record.get("toolCallResult"), dict) else {}
        status = as_str(result.get("status"))
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        for response in function_responses(part_list(message.get("parts"))):
            call_id = as_str(response.get("id"))
            if call_id:
                failed = response_output(response.get("response"))[1]
                statuses[call_id] = status or ("error" if failed else "success")
        if as_str(result.get("callId")) and status:
            statuses.setdefault(as_str(result.get("callId")) or "", status)
    return statuses


class QwenTurns:
    """Feeds records in file order into a ConversationBuilder, gathering the session's facts."""

    def __init__(self, counts: Counter[str], cwd: str | None, statuses: dict[str, str]) -> None:
        self.b = ConversationBuilder(counts, cwd=cwd)
        self.counts = counts
        self.statuses = statuses
        self.models: Counter[str] = Counter()
        self.usage: Counter[str] = Counter()
        self.api_errors: Counter[str] = Counter()
        self.title: str | None = None
        self.first_prompt: str | None = None
        self.context_window: int | None = None
        self.parent_session: str | None = None
        self._pending: dict[str, tuple[str, Any]] = {}
        self._telemetry: list[dict[str, Any]] = []

    def feed(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        parts = part_list(message.get("parts"))
        if kind == "user":
            self._user(record, parts)
        elif kind == "assistant":
            self._assistant(record, parts)
        elif kind == "tool_result":
            self._result(record, parts)
        else:
            self._system(record)

    # -- user ------------------------------------------------------------------------------
    def _user(self, record: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        payload = record.get("systemPayload") if isinstance(record.get("systemPayload"), dict) else {}
        text = as_str(payload.get("displayText")) or HOOK_CONTEXT.sub("", visible_text(parts)).strip()
        subtype = as_str(record.get("subtype"))
        refs = attachments(parts) + _references(text, payload)
        for response in function_responses(parts):  # results sent inside a user record
            self._response(response, record, None)
        meta = {"subtype": subtype} if subtype else None
        if subtype and subtype not in USER_TURN_SUBTYPES:
            self.b.message("system", text, ts=record.get("timestamp"), turn_id=record["uuid"], meta=meta)
            return
        if self.first_prompt is None and text and not text.startswith("/"):
            self.first_prompt = text
        self.b.message("user", text, ts=record.get("timestamp"), turn_id=record["uuid"], meta=meta,
                       attachments=refs)

    # -- model -----------------------------------------------------------------------------
    def _assistant(self, record: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        ts, uuid = record.get("timestamp"), record["uuid"]
        model = as_str(record.get("model"))
        if model:
            self.models[model] += 1
        if isinstance(record.get("contextWindowSize"), int):
            self.context_window = record["contextWindowSize"]
        made: list[Turn | None] = [
            self.b.thinking(thought_text(parts), ts=ts, turn_id=f"{uuid}:thinking", model=model),
            self.b.message("assistant", visible_text(parts), ts=ts, turn_id=uuid, model=model,
                           attachments=attachments(parts)),
        ]
        for call in function_calls(parts):
            made.append(self._call(call, ts))
        usage = record.get("usageMetadata")
        if isinstance(usage, dict):
            for key, name in USAGE_KEYS.items():
                if isinstance(usage.get(key), int):
                    self.usage[name] += usage[key]
            first = next((t for t in made if t is not None), None)
            if first is not None:
                first.meta["usage"] = {k: v for k, v in usage.items() if isinstance(v, int | float)}

    def _call(self, call: dict[str, Any], ts: Any) -> Turn:
        name = as_str(call.get("name")) or "tool"
        args = call.get("args")
        call_id = as_str(call.get("id"))
        edits, meta = None, {}
        if not call_id or self.statuses.get(call_id) != "success":
            found = edits_from_call(name, args, self.b.cwd)
            if found:  # a failed, cancelled or unanswered edit changed nothing
                edits, meta["edit_not_applied"] = [], True
                self.counts["edits_not_applied"] += len(found)
        turn = self.b.tool_call(name, args, ts=ts, call_id=call_id, edits=edits, meta=meta)
        if call_id:
            self._pending[call_id] = (name, args)
        return turn

    # -- results ---------------------------------------------------------------------------
    def _result(self, record: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        result = record.get("toolCallResult") if isinstance(record.get("toolCallResult"), dict) else {}
        responses = function_responses(parts)
        for response in responses:
            self._response(response, record, result)
        if responses:
            return
        call_id = as_str(result.get("callId"))
        shown = result.get("resultDisplay")
        texts, failed = result_parts_text(parts)
        output = "\n".join(texts) or (shown if isinstance(shown, str) else "")
        status = as_str(result.get("status"))
        turn = self.b.tool_result(output, call_id=call_id, ts=record.get("timestamp"),
                                  is_error=failed or status == "error", turn_id=record["uuid"])
        self._settle(turn, call_id, status)

    def _response(self, response: dict[str, Any], record: dict[str, Any],
                  result: dict[str, Any] | None) -> None:
        call_id = as_str(response.get("id")) or as_str((result or {}).get("callId"))
        text, failed = response_output(response.get("response"))
        status = as_str((result or {}).get("status"))
        if not text and result and isinstance(result.get("resultDisplay"), str):
            text = result["resultDisplay"]
        turn = self.b.tool_result(text, call_id=call_id, name=as_str(response.get("name")),
                                  ts=record.get("timestamp"), is_error=failed or status == "error",
                                  turn_id=record["uuid"])
        self._settle(turn, call_id, status)

    def _settle(self, turn: Turn, call_id: str | None, status: str | None) -> None:
        if status:
            turn.meta["status"] = status
        answered = call_id or turn.meta.get("tool_use_id")  # a result without an id took the oldest call
        if answered:
            self._pending.pop(answered, None)

    # -- system ----------------------------------------------------------------------------
    def _system(self, record: dict[str, Any]) -> None:
        subtype = as_str(record.get("subtype")) or "untyped"
        payload = record.get("systemPayload") if isinstance(record.get("systemPayload"), dict) else {}
        self.counts[f"system_records:{subtype[:40]}"] += 1
        if subtype == "ui_telemetry":
            event = payload.get("uiEvent")
            if isinstance(event, dict):
                self._event(event)
        elif subtype == "custom_title" and as_str(payload.get("customTitle")):
            self.title = as_str(payload.get("customTitle"))
        elif subtype == "parent_session" and as_str(payload.get("parentSessionId")):
            self.parent_session = as_str(payload.get("parentSessionId"))
        elif subtype == "slash_command" and payload.get("phase") == "invocation":
            command = as_str(payload.get("rawCommand"))
            self.b.message("system", command, ts=record.get("timestamp"), turn_id=record["uuid"],
                           meta={"slash_command": True})

    def _event(self, event: dict[str, Any]) -> None:
        name = event.get("event.name")
        if name == "qwen-code.api_error":
            kind = as_str(event.get("error_type")) or str(event.get("status_code") or "unknown")
            self.api_errors[kind] += 1
        elif name == "qwen-code.tool_call" and event.get("success") is False:
            self._telemetry.append(event)

    def finish(self) -> list[Turn]:
        """The turns, calls left without a result record given the reason their telemetry
        reported (the user cancelled them, a parameter was refused)."""
        for call_id, (name, args) in list(self._pending.items()):
            event = next((e for e in self._telemetry
                          if e.get("function_name") == name and e.get("function_args") == args), None)
            if event is None:
                self.counts["tool_calls_without_result"] += 1
                continue
            self._telemetry.remove(event)
            error = as_str(event.get("error")) or "failed"
            turn = self.b.tool_result(error, call_id=call_id, name=name, is_error=True)
            cancelled = "cancel" in error.lower()
            turn.meta["status"] = "cancelled" if cancelled else as_str(event.get("status")) or "error"
            turn.meta["result_from"] = "telemetry"
            self._pending.pop(call_id, None)
        return self.b.finish()


def _references(text: str, payload: dict[str, Any]) -> list[Attachment]:
    """Images and files a prompt points to (`@path` of a pasted image; attachment references
    of newer versions), as references."""
    refs = [Attachment(kind="file" if m.group(1).lower().endswith(".pdf") else "image", path=m.group(1),
                       name=m.group(1).replace("\\", "/").rsplit("/", 1)[-1])
            for m in _AT_IMAGE.finditer(text)] if "@" in text else []
    for item in payload.get("attachmentReferences") or ():
        if isinstance(item, dict):
            mime = as_str(item.get("mimeType"))
            size = item.get("size")
            refs.append(Attachment(kind="image" if (mime or "").startswith("image/") else "file",
                                   name=as_str(item.get("attachmentId")), mime_type=mime,
                                   size_bytes=size if isinstance(size, int) else None))
    return refs
