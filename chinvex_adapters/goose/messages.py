"""goose's `Message` JSON (a `sessions.db` row's `content_json`, a legacy `.jsonl` line, an
exported session's `conversation`) as turns.

A message is `{id, role, created (unix seconds), content: [blocks], metadata}`; blocks are
tagged camelCase (`text`, `image`, `toolRequest`, `toolResponse`, `thinking`,
`redactedThinking`, `systemNotification`, ...). A tool's request sits in an assistant message
and its response in a later user message, paired by id; goose may store a response BEFORE its
request (parallel calls), so a response whose request has not been seen yet waits for it.
Messages hidden from the user (`userVisible: false`: compaction summaries and the prompts that
asked for them) are left out: the conversation they summarise is kept as shown.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chinvex.models import Attachment
from chinvex_adapters.kit.edits import MAX_EDIT_CHARS, FileEdit, resolve, tool_key
from chinvex_adapters.kit.text import as_str, clean_text
from chinvex_adapters.kit.turns import ConversationBuilder, dump

SKIPPED_BLOCKS = frozenset({"toolConfirmationRequest", "actionRequired", "redactedThinking",
                            "contextLengthExceeded", "summarizationRequested",
                            "conversationCompacted", "reasoning"})
"""Blocks with nothing to search: UI prompts, opaque redacted reasoning, compaction markers."""


def result_output(result: Any) -> tuple[str, bool]:
    """A `toolResult` as (text, is_error): `{status: success, value: CallToolResult}` (or, in
    older goose, `value` a bare list of content items) or `{status: error, error}`."""
    if not isinstance(result, dict):
        return ("" if result is None else dump(result)), False
    if result.get("status") == "error" or ("error" in result and "value" not in result):
        return clean_text(str(result.get("error") or "error")), True
    value = result.get("value")
    if isinstance(value, list):
        return content_text(value), False
    if not isinstance(value, dict):
        return ("" if value is None else dump(value)), False
    text = content_text(value.get("content"))
    structured = value.get("structuredContent")
    if not text.strip() and structured is not None:
        text = dump(structured)
    return text, value.get("isError") is True


def content_text(items: Any) -> str:
    """MCP content items as text: texts as they are, resources by their text or uri, images
    and audio as a short marker (never their base64)."""
    if isinstance(items, str):
        return items
    if not isinstance(items, list):
        return ""
    parts: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "text" and isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif kind == "resource" and isinstance(item.get("resource"), dict):
            resource = item["resource"]
            body = resource.get("text")
            parts.append(body if isinstance(body, str) else f"[resource: {resource.get('uri') or '?'}]")
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {item.get('mimeType') or 'unknown type'}]")
        elif kind == "resource_link":
            parts.append(f"[resource: {item.get('uri') or '?'}]")
    return "\n".join(parts)


def edit_tool_edits(name: str, args: Any, cwd: str | None) -> list[FileEdit] | None:
    """The edit of goose's built-in `edit {path, before, after}` (2026 developer extension),
    whose argument names the kit does not know; None for every other tool (the kit decides)."""
    if tool_key(name) != "edit" or not isinstance(args, dict):
        return None
    path, before, after = args.get("path"), args.get("before"), args.get("after")
    if not isinstance(path, str) or not isinstance(after, str):
        return None
    old = before if isinstance(before, str) else None
    cut = len(after) > MAX_EDIT_CHARS or (old is not None and len(old) > MAX_EDIT_CHARS)
    return [FileEdit(path=path, op="edit", old_text=old[:MAX_EDIT_CHARS] if old is not None else None,
                     new_text=after[:MAX_EDIT_CHARS], abs_path=resolve(path, cwd), truncated=cut)]


class MessageReader:
    """Feeds goose messages, in order, to a ConversationBuilder."""

    def __init__(self, builder: ConversationBuilder, counts: Counter[str]) -> None:
        self.b = builder
        self.counts = counts
        self.requested: set[str] = set()
        self.early: dict[str, tuple[str, bool, Any]] = {}  # responses seen before their request

    def add(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            self.counts["messages_malformed"] += 1
            return
        meta = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        if meta.get("userVisible") is False:
            self.counts["messages_hidden_from_user"] += 1
            return
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            self.counts["messages_malformed"] += 1
            return
        self._blocks(message["role"], as_str(message.get("id")), message.get("created"), content)

    def _blocks(self, role: str, msg_id: str | None, ts: Any, blocks: list[Any]) -> None:
        texts: list[str] = []
        images: list[Attachment] = []

        def flush() -> None:
            if texts or images:
                self.b.message(role, "\n\n".join(texts), ts=ts, turn_id=msg_id, attachments=list(images))
                texts.clear()
                images.clear()

        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                if isinstance(block.get("text"), str):
                    texts.append(block["text"])
                continue
            if kind == "image":
                images.append(Attachment(kind="image", mime_type=as_str(block.get("mimeType"))))
                self.counts["images_referenced"] += 1
                continue
            flush()
            self._block(kind, block, ts, msg_id)
        flush()

    def _block(self, kind: Any, block: Any, ts: Any, msg_id: str | None) -> None:
        if kind in ("toolRequest", "frontendToolRequest"):
            self._request(block, ts)
        elif kind == "toolResponse":
            self._response(block, ts)
        elif kind == "thinking":
            self.b.thinking(block.get("thinking") if isinstance(block.get("thinking"), str) else "", ts=ts,
                            turn_id=f"{msg_id}:thinking" if msg_id else None)
        elif kind == "systemNotification" and block.get("notificationType") == "inlineMessage":
            self.b.message("system", as_str(block.get("msg")), ts=ts, turn_id=msg_id)
        elif kind in SKIPPED_BLOCKS or kind == "systemNotification":
            self.counts[f"blocks_skipped:{kind}"] += 1
        else:
            self.counts[f"blocks_unknown:{str(kind)[:40]}"] += 1

    def _request(self, block: dict[str, Any], ts: Any) -> None:
        call_id = as_str(block.get("id"))
        call = block.get("toolCall") if isinstance(block.get("toolCall"), dict) else {}
        value = call.get("value") if isinstance(call.get("value"), dict) else {}
        name = as_str(value.get("name"))
        args = value.get("arguments")
        meta: dict[str, Any] = {}
        extension = (block.get("_meta") or {}).get("goose_extension") if isinstance(block.get("_meta"), dict) else None
        if isinstance(extension, str):
            meta["extension"] = extension
        output: Any = None
        is_error = False
        if call.get("status") == "error" or (not value and "error" in call):
            output, is_error = clean_text(str(call.get("error") or "invalid tool call")), True
            meta["invalid_call"] = True
        if call_id and call_id in self.early:
            output, is_error, _ = self.early.pop(call_id)
            meta["result_before_request"] = True
            self.counts["tool_results_before_call"] += 1
        edits = edit_tool_edits(name or "", args, self.b.cwd)
        self.b.tool_call(name or "tool", args, ts=ts, call_id=call_id, output=output, is_error=is_error,
                         edits=edits, meta=meta)
        if call_id:
            self.requested.add(call_id)

    def _response(self, block: dict[str, Any], ts: Any) -> None:
        call_id = as_str(block.get("id"))
        output, is_error = result_output(block.get("toolResult"))
        if call_id and call_id not in self.requested:
            self.early[call_id] = (output, is_error, ts)  # its request may come later
            return
        self.b.tool_result(output, call_id=call_id, ts=ts, is_error=is_error)

    def finish(self) -> None:
        """Responses whose request never came: kept as results of an unknown call."""
        for call_id, (output, is_error, ts) in self.early.items():
            self.b.tool_result(output, call_id=call_id, ts=ts, is_error=is_error)
        self.early.clear()
