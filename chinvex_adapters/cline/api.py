"""Messages in the Anthropic shape (`{role, content: str | blocks}`) as turns: the legacy
`api_conversation_history.json` and the SDK's `messages.json` alike.

Assistant text may hold XML tool calls (xmltools); native calls are `tool_use` blocks. A
call's result is the next user message's `tool_result` block (paired by id) or its text headed
`[tool for 'arg'] Result:` (paired by name with the oldest call still unanswered). What the
model says to the user through a tool (`attempt_completion`'s result, a follow-up question, a
plan) is kept as its words, and the call without them stays to receive its result.
"""

from __future__ import annotations

from typing import Any

from chinvex.models import Attachment, Turn
from chinvex_adapters.kit.jsonl import loads_lenient
from chinvex_adapters.kit.turns import ConversationBuilder, render_output

from .edits import edits_of
from .usertext import (EnvFacts, is_boilerplate, not_executed, result_header, strip_environment,
                       user_words)
from .xmltools import XmlCall, split_calls, strip_notices

SPEECH = {"attempt_completion": "result", "plan_mode_respond": "response",
          "act_mode_respond": "response", "ask_followup_question": "question"}
"""Tools whose parameter is the model speaking to the user."""
_IN_RESULT_WORDS = ("<feedback>", "<answer>", "<user_message>")


RESULT_HEADER_NAMES = {"subagents": "use_subagents"}
"""Result headers that do not name their tool as the call does: Cline answers a
`use_subagents` call with a text `[subagents] Result:` (a real Cline task of April 2026)."""


def called_name(header_name: str) -> str:
    """The tool name a result header stands for, so that the result finds its call."""
    return RESULT_HEADER_NAMES.get(header_name, header_name)


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
        return "\n".join(parts)
    return ""


class ApiReader:
    """Feeds one conversation's messages, in order, to the turn builder."""

    def __init__(self, b: ConversationBuilder, env: EnvFacts) -> None:
        self.b = b
        self.env = env
        self.last_user: str | None = None

    # -- assistant -------------------------------------------------------------------------
    def assistant(self, msg: dict[str, Any], ts: Any, model: str | None, tid: str) -> None:
        content = msg.get("content")
        if msg.get("type") == "reasoning":  # Roo: a standalone reasoning item
            words = _text_of(msg.get("text")) or _text_of(msg.get("summary"))
            self.b.thinking(words, ts=ts, turn_id=tid, model=model)
            return
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            self.b.counts["messages_malformed"] += 1
            return
        meta = {"condense_summary": True} if msg.get("isSummary") else None
        for n, block in enumerate(content):
            if not isinstance(block, dict):
                self.b.counts["blocks_malformed"] += 1
                continue
            kind, sub = block.get("type"), f"{tid}.{n}"
            if kind == "text" and isinstance(block.get("text"), str):
                self._assistant_text(block["text"], ts, model, sub, meta)
            elif kind == "thinking":
                self.b.thinking(_text_of(block.get("thinking")), ts=ts, turn_id=sub, model=model)
            elif kind == "reasoning":
                words = _text_of(block.get("text")) or _text_of(block.get("summary"))
                self.b.thinking(words, ts=ts, turn_id=sub, model=model)
            elif kind == "tool_use":
                self.call(block.get("name"), block.get("input"), ts, sub, call_id=block.get("id"),
                          model=model)
            elif kind == "redacted_thinking":
                self.b.counts["thinking_redacted"] += 1
            else:
                self.b.counts[f"blocks_passed_over:{kind}"[:60]] += 1

    def _assistant_text(self, text: str, ts: Any, model: str | None, tid: str,
                        meta: dict[str, Any] | None) -> None:
        text, interrupted = strip_notices(text)
        if interrupted:
            self.b.counts["responses_interrupted"] += 1
        for n, piece in enumerate(split_calls(text)):
            if isinstance(piece, XmlCall):
                self.call(piece.name, piece.params, ts, f"{tid}.{n}", complete=piece.complete, model=model)
            elif piece.strip():
                self.b.message("assistant", piece.strip(), ts=ts, turn_id=f"{tid}.{n}", model=model,
                               meta=meta)

    def call(self, name: Any, args: Any, ts: Any, tid: str, *, call_id: Any = None,
             complete: bool = True, model: str | None = None) -> Turn:
        """One tool call; the words of a speaking tool become an assistant message first."""
        name = name if isinstance(name, str) and name else "tool"
        spoken = SPEECH.get(name)
        if spoken and isinstance(args, dict) and isinstance(args.get(spoken), str):
            self.b.message("assistant", args[spoken], ts=ts, turn_id=f"{tid}.say", model=model,
                           meta={"via_tool": name})
            args = {k: v for k, v in args.items() if k != spoken}
        edits = edits_of(name, args, self.b.cwd) if complete else []
        return self.b.tool_call(name, args, ts=ts, turn_id=tid,
                                call_id=call_id if isinstance(call_id, str) else None,
                                status=None if complete else "incomplete", edits=edits)

    # -- user ------------------------------------------------------------------------------
    def user(self, msg: dict[str, Any], ts: Any, tid: str) -> None:
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            self.b.counts["messages_malformed"] += 1
            return
        before = len(self.b.turns)
        result: list[Any] | None = None  # [tool name, body parts] of a result in text form
        attachments: list[Attachment] = []
        for n, block in enumerate(content):
            if not isinstance(block, dict):
                self.b.counts["blocks_malformed"] += 1
                continue
            kind, sub = block.get("type"), f"{tid}.{n}"
            if kind == "text" and isinstance(block.get("text"), str):
                result = self._user_text(block["text"], result, ts, sub)
            elif kind == "tool_result":
                self._flush(result, ts)
                result = None
                self._tool_result(block, ts, sub)
            elif kind in ("image", "file", "document"):
                attachments.append(_attachment(block))
            else:
                self.b.counts[f"blocks_passed_over:{kind}"[:60]] += 1
        self._flush(result, ts)
        if attachments:
            self._attach(attachments, before, ts, tid)

    def _user_text(self, text: str, result: list[Any] | None, ts: Any, tid: str) -> list[Any] | None:
        text = strip_environment(text, self.env)
        if not text.strip():
            return result
        head = result_header(text)
        if head is not None:
            self._flush(result, ts)
            self._words_in_result(head[1], ts, tid)
            return [head[0], [head[1]]]
        skipped = not_executed(text)
        if skipped is not None:
            self._flush(result, ts)
            self.b.tool_result(text, name=skipped, ts=ts)
            return None
        if result is not None and not is_boilerplate(text):
            result[1].append(text)
            self._words_in_result(text, ts, tid)
            return result
        self._flush(result, ts)
        if "[TASK RESUMPTION]" in text:
            self.env.resumed_in(text)
        words = user_words(text)
        if words:
            for n, said in enumerate(words):
                self.say(said, ts, f"{tid}.{n}")
        elif is_boilerplate(text):
            self.b.counts["extension_notices_dropped"] += 1
        else:
            self.say(text.strip(), ts, tid)
        return None

    def _words_in_result(self, text: str, ts: Any, tid: str) -> None:
        if any(tag in text for tag in _IN_RESULT_WORDS):
            for n, said in enumerate(user_words(text)):
                self.say(said, ts, f"{tid}.w{n}")

    def say(self, text: str, ts: Any, tid: str) -> None:
        """A user message, once: the same words again in a row (the UI's copy of feedback the
        API history also holds) are not repeated."""
        key = text.strip()
        if key and key == self.last_user:
            self.b.counts["user_repeats_dropped"] += 1
            return
        if self.b.message("user", text, ts=ts, turn_id=tid) is not None:
            self.last_user = key

    def _flush(self, result: list[Any] | None, ts: Any) -> None:
        if result is not None:
            self.b.tool_result("\n".join(p for p in result[1] if p), name=called_name(result[0]), ts=ts)

    def _tool_result(self, block: dict[str, Any], ts: Any, tid: str) -> None:
        output = tool_output(block.get("content"))
        head = result_header(output)
        if head is not None:
            output = head[1]
        call_id, name = block.get("tool_use_id"), block.get("name")
        self.b.tool_result(output, call_id=call_id if isinstance(call_id, str) else None,
                           name=name if isinstance(name, str) else None, ts=ts,
                           is_error=block.get("is_error") is True)
        self._words_in_result(output, ts, tid)

    def _attach(self, attachments: list[Attachment], before: int, ts: Any, tid: str) -> None:
        said = next((t for t in self.b.turns[before:] if t.role == "user"), None)
        if said is not None:
            said.attachments.extend(attachments)
        else:
            self.b.message("user", "", ts=ts, turn_id=f"{tid}.files", attachments=attachments)


def tool_output(content: Any) -> str:
    """A tool result's content as text: the SDK's `{query, result}` records (as objects or a
    JSON string of them) one after the other; text blocks by their text; images noted."""
    if isinstance(content, str):
        stripped = content.lstrip()
        if stripped.startswith(("{", "[")) and '"query"' in stripped[:200]:
            try:
                content = loads_lenient(stripped.encode("utf-8", "surrogatepass"))
            except (ValueError, RecursionError, UnicodeError):
                return content
        else:
            return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and "query" in item and ("result" in item or "error" in item):
                body = item.get("result") if "result" in item else item.get("error")
                parts.append(f"{item['query']}\n{render_output(body)}")
            elif isinstance(item, dict) and item.get("type") == "image":
                parts.append("[image]")
            else:
                parts.append(render_output(item))
        return "\n".join(p for p in parts if p)
    return render_output(content)


def _attachment(block: dict[str, Any]) -> Attachment:
    """A reference to what the block carried (an image's bytes, an @-mentioned file's whole
    text are not kept)."""
    kind = block.get("type")
    if kind == "file":
        path = block.get("path") if isinstance(block.get("path"), str) else None
        size = len(block["content"]) if isinstance(block.get("content"), str) else None
        return Attachment(kind="file", path=path, name=path.rsplit("/", 1)[-1] if path else None,
                          size_bytes=size)
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    mime = source.get("media_type") if isinstance(source.get("media_type"), str) else None
    uri = source.get("url") if source.get("type") == "url" else None
    return Attachment(kind="image" if kind == "image" else "file", mime_type=mime, uri=uri)
