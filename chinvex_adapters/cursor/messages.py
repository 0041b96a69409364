"""Messages made of content parts, as the JSONL transcripts and the CLI's blob store keep
them, turned into turns.

Both name the same things differently: the transcripts use Anthropic-style blocks (`text`,
`tool_use` without an id, rarely `tool_result`/`thinking`), the CLI store AI-SDK parts
(`text`, `reasoning`, `tool-call`/`tool-result` with a `toolCallId`). A user message is
unwrapped (kit: usertext); an injected context message (`<user_info>`, rules) makes no turn
but may tell the workspace; `[REDACTED]` (hidden reasoning) is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chinvex.models import Attachment
from chinvex_adapters.kit.text import clean_text
from chinvex_adapters.kit.turns import ConversationBuilder

from .edits import PATH_KEYS, cursor_edits
from .usertext import parse_user_text, without_redacted

TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
THINKING_PARTS = frozenset({"reasoning", "thinking", "redacted_thinking", "redacted-reasoning"})
CALL_PARTS = frozenset({"tool-call", "tool_use", "tool_call", "function_call"})
RESULT_PARTS = frozenset({"tool-result", "tool_result", "function_call_output"})
IMAGE_PARTS = frozenset({"image", "image_url", "file", "input_image"})


def parts_of(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return [p if isinstance(p, dict) else {"type": "text", "text": p} for p in content
                if isinstance(p, dict | str)]
    return []


def paths_in(messages: list[tuple[str, Any]]) -> list[str]:
    """Absolute-looking paths in tool inputs (to find the project folder a slug names)."""
    found: list[str] = []
    for _, content in messages:
        for part in parts_of(content):
            args = part.get("input") if "input" in part else part.get("args")
            if isinstance(args, dict):
                for key in (*PATH_KEYS, "target_directory", "working_directory"):
                    value = args.get(key)
                    if isinstance(value, str):
                        found.append(value)
        if len(found) > 400:
            break
    return found


@dataclass
class Facts:
    """What a conversation's messages tell besides its turns."""

    workspace: str | None = None
    links: list[str] = field(default_factory=list)
    context_tags: list[str] = field(default_factory=list)
    subagents: list[dict[str, Any]] = field(default_factory=list)
    images: int = 0


def _attachment(part: dict[str, Any]) -> Attachment:
    """A reference to an image or file part (its bytes, if inline, are never kept)."""
    ref = next((v for k in ("path", "url", "uri", "filename", "image_url") if isinstance(v := part.get(k), str)), None)
    if ref and ref.startswith("data:"):
        ref = None
    mime = part.get("mediaType") or part.get("mimeType") or part.get("mime_type")
    return Attachment(kind="file" if part.get("type") == "file" else "image", path=ref,
                      mime_type=mime if isinstance(mime, str) else None)


class MessageReader:
    """Adds messages to a ConversationBuilder, one at a time, in order."""

    def __init__(self, builder: ConversationBuilder, facts: Facts) -> None:
        self.b = builder
        self.facts = facts

    def add(self, role: str, content: Any, *, turn_id: str, ts: datetime | None = None,
            model: str | None = None) -> None:
        parts = parts_of(content)
        if role == "user":
            self._user(parts, turn_id, ts)
        elif role in ("assistant", "tool"):
            self._assistant(parts, turn_id, ts, model)
        elif role == "system":
            self.b.counts["system_messages_skipped"] += 1
        else:
            self.b.counts["messages_unknown_role"] += 1

    def _user(self, parts: list[dict[str, Any]], turn_id: str, ts: datetime | None) -> None:
        texts: list[str] = []
        attachments: list[Attachment] = []
        when = ts
        for part in parts:
            kind = part.get("type") if isinstance(part.get("type"), str) else ""
            if kind in TEXT_PARTS and isinstance(part.get("text"), str):
                found = parse_user_text(part["text"])
                when = when or found.ts
                attachments.extend(found.attachments)
                self.facts.workspace = self.facts.workspace or found.workspace
                self.facts.links.extend(found.links)
                self.facts.images += found.images
                for tag in found.context:
                    if tag not in self.facts.context_tags:
                        self.facts.context_tags.append(tag)
                if found.text.strip():
                    texts.append(found.text)
            elif kind in RESULT_PARTS:
                self._result(part, ts)
            elif kind in IMAGE_PARTS:
                attachments.append(_attachment(part))
        if texts or attachments:
            self.b.message("user", "\n\n".join(texts), ts=when, turn_id=turn_id, attachments=attachments)
        else:
            self.b.counts["context_messages"] += 1

    def _assistant(self, parts: list[dict[str, Any]], turn_id: str, ts: datetime | None,
                   model: str | None) -> None:
        for n, part in enumerate(parts):
            kind = part.get("type") if isinstance(part.get("type"), str) else ""
            part_id = f"{turn_id}.{n}" if n else turn_id
            if kind in TEXT_PARTS and isinstance(part.get("text"), str):
                text = without_redacted(part["text"])
                if text.strip():
                    self.b.message("assistant", text, ts=ts, turn_id=part_id, model=model)
                else:
                    self.b.counts["redacted_blocks"] += 1
            elif kind in THINKING_PARTS:
                text = part.get("text") or part.get("thinking") or part.get("reasoning")
                if isinstance(text, str) and without_redacted(text).strip():
                    self.b.thinking(without_redacted(text), ts=ts, turn_id=part_id, model=model)
            elif kind in CALL_PARTS:
                self._call(part, part_id, ts)
            elif kind in RESULT_PARTS:
                self._result(part, ts)
            else:
                self.b.counts[f"parts_skipped:{str(kind)[:40]}"] += 1

    def _call(self, part: dict[str, Any], turn_id: str, ts: datetime | None) -> None:
        name = part.get("toolName") or part.get("name") or "tool"
        args = part.get("args") if "args" in part else part.get("input")
        if args is None and "arguments" in part:
            args = part.get("arguments")
        call_id = part.get("toolCallId") or part.get("id") or part.get("call_id")
        name = clean_text(str(name))
        if name == "Task" and isinstance(args, dict):
            self.facts.subagents.append({k: args.get(k) for k in ("subagent_type", "description", "model")
                                         if args.get(k) is not None})
        self.b.tool_call(name, args, ts=ts, call_id=call_id if isinstance(call_id, str) else None,
                         turn_id=turn_id, edits=cursor_edits(name, args, self.b.cwd))

    def _result(self, part: dict[str, Any], ts: datetime | None) -> None:
        output = part.get("result") if "result" in part else part.get("content", part.get("output"))
        if isinstance(output, dict) and "value" in output and output.get("type") in ("text", "json", "error-text"):
            output = output["value"]
        call_id = part.get("toolCallId") or part.get("tool_use_id") or part.get("call_id")
        name = part.get("toolName") or part.get("name")
        is_error = bool(part.get("isError") or part.get("is_error"))
        if isinstance(output, str) and output.startswith("Invalid arguments:"):
            is_error = True
        self.b.tool_result(output, call_id=call_id if isinstance(call_id, str) else None,
                           name=name if isinstance(name, str) else None, ts=ts, is_error=is_error)
