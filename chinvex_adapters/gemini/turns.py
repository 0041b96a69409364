"""Gemini CLI messages as turns.

- `user`: what the user typed (`displayContent` when the CLI recorded it, e.g. `/init` whose
  `content` is the long generated prompt; else `content`); `System: Please continue.` and
  injected `<session_context>` are system turns; a message made only of function responses
  (0.44+) is the result of a tool call.
- `gemini`: its thought summaries (one thinking turn), its words, then its tool calls, each
  with its result (the same record holds both).
- `info`, `warning`, `error`: the CLI's notices, as system turns.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chinvex.models import Turn
from chinvex_adapters.kit.edits import edits_from_call
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder

from .parts import (
    attachments,
    function_calls,
    function_responses,
    only_responses,
    part_list,
    response_output,
    result_parts_text,
    thought_text,
    visible_text,
)

AUTO_CONTINUE = "System: Please continue."
INJECTED = ("<session_context>", "<hook_context>")
TOKEN_KEYS = ("input", "output", "cached", "thoughts", "tool", "total")
FINISHED = frozenset({"success", "error", "cancelled"})


def is_prompt(text: str) -> bool:
    """A user message the CLI itself counts as a prompt (not a command, help or injection)."""
    text = text.strip()
    return bool(text) and not text.startswith(("/", "?", *INJECTED)) and text != AUTO_CONTINUE


class GeminiTurns:
    """Feeds messages in order into a ConversationBuilder, gathering the session's facts."""

    def __init__(self, counts: Counter[str], cwd: str | None) -> None:
        self.b = ConversationBuilder(counts, cwd=cwd)
        self.counts = counts
        self.models: Counter[str] = Counter()
        self.usage: Counter[str] = Counter()
        self.first_prompt: str | None = None
        self.topics: list[str] = []
        self.versions: list[str] = []
        self._answered: set[str] = set()

    def feed(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "user":
            self._user(message)
        elif kind == "gemini":
            self._gemini(message)
        elif kind in ("info", "warning", "error"):
            text = visible_text(part_list(message.get("content")))
            self._notice_version(text)
            self.b.message("system", text, ts=message.get("timestamp"), turn_id=as_str(message.get("id")),
                           meta={"notice": kind})
        else:
            self.counts[f"messages_unknown_type:{str(kind)[:40]}"] += 1

    # -- user ------------------------------------------------------------------------------
    def _user(self, message: dict[str, Any]) -> None:
        ts, mid = message.get("timestamp"), as_str(message.get("id"))
        parts = part_list(message.get("content"))
        if only_responses(parts):
            for response in function_responses(parts):
                self._response(response, ts)
            return
        sent = visible_text(parts)
        shown = visible_text(part_list(message.get("displayContent")))
        text = shown if shown.strip() else sent
        meta: dict[str, Any] = {}
        if shown.strip() and sent.strip() != shown.strip():
            meta["sent_chars"] = len(sent)  # what the model got instead (an expanded command, @files)
        role = "user"
        if text.strip() == AUTO_CONTINUE:
            role, meta["auto_continue"] = "system", True
        elif text.lstrip().startswith(INJECTED):
            role, meta["injected"] = "system", True
        elif self.first_prompt is None and is_prompt(text):
            self.first_prompt = text
        self.b.message(role, text, ts=ts, turn_id=mid, meta=meta, attachments=attachments(parts))

    def _response(self, response: dict[str, Any], ts: Any) -> None:
        call_id = as_str(response.get("id"))
        if call_id and call_id in self._answered:
            self.counts["tool_results_already_recorded"] += 1
            return
        text, failed = response_output(response.get("response"))
        self.b.tool_result(text, call_id=call_id, name=as_str(response.get("name")), ts=ts, is_error=failed)
        if call_id:
            self._answered.add(call_id)

    # -- model -----------------------------------------------------------------------------
    def _gemini(self, message: dict[str, Any]) -> None:
        ts, mid = message.get("timestamp"), as_str(message.get("id")) or None
        model = as_str(message.get("model"))
        if model:
            self.models[model] += 1
        parts = part_list(message.get("content"))
        made: list[Turn | None] = [self._thinking(message, parts, mid, model)]
        made.append(self.b.message("assistant", visible_text(parts), ts=ts, turn_id=mid, model=model))
        listed = message.get("toolCalls")
        calls = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else []
        recorded = {as_str(c.get("id")) for c in calls}
        for call in calls:
            made.append(self._call(call, ts))
        for call in function_calls(parts):  # calls kept only in the content (newer records)
            call_id = as_str(call.get("id"))
            if (call_id and call_id not in recorded) or (not call_id and not calls):
                made.append(self.b.tool_call(as_str(call.get("name")), call.get("args"), ts=ts,
                                             call_id=call_id))
        tokens = message.get("tokens")
        if isinstance(tokens, dict):
            for key in TOKEN_KEYS:
                if isinstance(tokens.get(key), int):
                    self.usage[key] += tokens[key]
            first = next((t for t in made if t is not None), None)
            if first is not None:
                first.meta["tokens"] = {k: v for k, v in tokens.items() if isinstance(v, int | float)}

    def _thinking(self, message: dict[str, Any], parts: list[dict[str, Any]], mid: str | None,
                  model: str | None) -> Turn | None:
        """The thought summaries (`**subject**` and description) and any thought Parts, one
        thinking turn at the time of the first thought."""
        pieces: list[str] = []
        first_ts = None
        thoughts = message.get("thoughts")
        for thought in thoughts if isinstance(thoughts, list) else ():
            if not isinstance(thought, dict):
                continue
            subject, description = as_str(thought.get("subject")), as_str(thought.get("description"))
            pieces.append("\n".join(p for p in (f"**{subject}**" if subject else None, description) if p))
            first_ts = first_ts or thought.get("timestamp")
        raw = thought_text(parts)
        if raw:
            pieces.append(raw)
        text = "\n\n".join(p for p in pieces if p)
        if not text:
            return None
        return self.b.thinking(text, ts=first_ts or message.get("timestamp"),
                               turn_id=f"{mid}:thinking" if mid else None, model=model)

    def _call(self, call: dict[str, Any], ts: Any) -> Turn:
        name = as_str(call.get("name")) or "tool"
        args = call.get("args")
        call_id = as_str(call.get("id"))
        status = as_str(call.get("status"))
        output, failed = call_output(call)
        if name == "update_topic" and isinstance(args, dict) and as_str(args.get("title")):
            self.topics.append(as_str(args.get("title")) or "")
        meta: dict[str, Any] = {}
        for key, label in (("displayName", "display_name"), ("agentId", "agent_id")):
            if as_str(call.get(key)):
                meta[label] = as_str(call.get(key))
        edits = None
        applied = status == "success" or (status is None and output is not None and not failed)
        if not applied:
            found = edits_from_call(name, args, self.b.cwd)
            if found:  # a failed or cancelled edit changed nothing
                edits, meta["edit_not_applied"] = [], True
                self.counts["edits_not_applied"] += len(found)
        finished = status in FINISHED or output is not None
        if finished and output is None:
            output = f"({status})"  # ended without a recorded result (e.g. cancelled)
        turn = self.b.tool_call(name, args, ts=call.get("timestamp") or ts, call_id=call_id, status=status,
                                output=output, is_error=failed or status == "error", edits=edits, meta=meta)
        if finished and call_id:
            self._answered.add(call_id)
        return turn

    def _notice_version(self, text: str) -> None:
        """The CLI names its own version only in its update notice ("0.23.0 → 0.24.0")."""
        marker = "update available!"
        at = text.find(marker)
        if at >= 0:
            words = text[at + len(marker):].split()
            if words:
                self.versions.append(words[0])


def call_output(call: dict[str, Any]) -> tuple[str | None, bool]:
    """What the model got back from a call (its function response), else what the user was
    shown (`resultDisplay`: text, or a FileDiff's diff); None when neither was recorded."""
    result = call.get("result")
    failed = False
    texts: list[str] = []
    if isinstance(result, str):
        texts.append(result)
    elif isinstance(result, list | dict):
        texts, failed = result_parts_text(part_list(result))
    if not texts:
        shown = call.get("resultDisplay")
        if isinstance(shown, str) and shown.strip():
            texts.append(shown)
        elif isinstance(shown, dict) and isinstance(shown.get("fileDiff"), str):
            texts.append(shown["fileDiff"])
    if not texts:
        return (None if result is None else ""), failed
    return "\n".join(texts), failed


def tool_paths(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(path given, absolute path written) of the session's file tools, from FileDiff results:
    the folder a relative path was resolved against is the project's."""
    found: list[tuple[str, str]] = []
    for message in messages:
        calls = message.get("toolCalls")
        for call in calls if isinstance(calls, list) else ():
            if not isinstance(call, dict):
                continue
            args, shown = call.get("args"), call.get("resultDisplay")
            if isinstance(args, dict) and isinstance(shown, dict):
                given, written = as_str(args.get("file_path")), as_str(shown.get("filePath"))
                if given and written:
                    found.append((given, written))
            if len(found) >= 20:
                return found
    return found
