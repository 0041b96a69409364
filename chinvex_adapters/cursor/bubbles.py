"""IDE chat bubbles (`bubbleId:<composer>:<bubble>` rows, or a composer's inline
`conversation[]`) as turns.

A bubble is a user message (`type` 1) or an assistant step (`type` 2): its thinking (a
provider summary), its text, and at most one tool call whose arguments and result sit in the
same bubble (`toolFormerData`, JSON strings inside JSON; `rawArgs` often empty, so `params`
fills in). Times: `createdAt` (ISO) in new rows, `timingInfo` (epoch ms, or relative to an
unknown start, then unusable) in old ones. Images and selections are kept as references,
never their bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chinvex.models import Attachment
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder, dump, render_output

from .db import decode
from .edits import cursor_edits

EPOCH_2000_MS = 946_684_800_000
MAX_REFS = 50
CONTENT_IDS = frozenset({"beforeContentId", "afterContentId", "codeblock"})
"""Result keys that point at file texts (kept as the edit's texts, not as output)."""


@dataclass
class BubbleContext:
    """What the bubbles of one composer share."""

    content_of: Callable[[str], str | None] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    unified_modes: set[Any] = field(default_factory=set)


def json_field(value: Any) -> Any:
    """A field that holds JSON as a string (sometimes twice encoded), parsed; other values as
    they are; None for empty strings."""
    for _ in range(2):
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return None
            if text[:1] not in "[{\"":
                return value
            parsed = decode(text)
            if parsed is None:
                return value
            value = parsed
    return value


def bubble_time(bubble: dict[str, Any]) -> datetime | None:
    created = bubble.get("createdAt")
    if isinstance(created, str | int | float) and not isinstance(created, bool):
        ts = to_utc(created)
        if ts is not None:
            return ts
    timing = bubble.get("timingInfo")
    if not isinstance(timing, dict):
        return None
    for key in ("clientStartTime", "clientRpcSendTime", "clientSettleTime", "clientEndTime"):
        value = timing.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= EPOCH_2000_MS:
            return to_utc(value)
    return None


def lexical_text(rich: Any) -> str:
    """The plain text of a Lexical editor state (the IDE's `richText`)."""
    state = json_field(rich)
    out: list[str] = []

    def visit(node: Any, depth: int) -> None:
        if depth > 40 or not isinstance(node, dict):
            return
        if isinstance(node.get("text"), str):
            out.append(node["text"])
        for child in node.get("children") or ():
            visit(child, depth + 1)
        if node.get("type") in ("paragraph", "heading", "quote", "listitem", "code"):
            out.append("\n")

    visit(state.get("root") if isinstance(state, dict) else None, 0)
    return "".join(out).strip("\n")


def _path(value: Any) -> str | None:
    if isinstance(value, str):
        return value if not value.startswith("data:") else None
    if isinstance(value, dict):
        return next((v for k in ("fsPath", "path", "external", "relativePath")
                     if isinstance(v := value.get(k), str) and v), None)
    return None


def _items(value: Any) -> list[Any]:
    return value[:MAX_REFS] if isinstance(value, list) else []


def attachments_of(bubble: dict[str, Any]) -> list[Attachment]:
    """File, folder, terminal and image references of a user bubble."""
    ctx = bubble.get("context") if isinstance(bubble.get("context"), dict) else {}
    out: list[Attachment] = []
    groups = (("fileSelections", "file"), ("selections", "file"), ("folderSelections", "folder"),
              ("terminalSelections", "terminal"))
    for key, kind in groups:
        for item in _items(ctx.get(key)):
            if isinstance(item, dict):
                path = _path(item.get("uri")) or _path(item.get("relativePath")) or _path(item.get("path"))
                if path:
                    out.append(Attachment(kind=kind, path=path))
    images = _items(ctx.get("selectedImages")) + _items(bubble.get("images"))
    for item in images[:MAX_REFS]:
        if isinstance(item, dict):
            path = _path(item.get("path")) or _path(item.get("uri")) or _path(item.get("url"))
            mime = item.get("mimeType") or item.get("mime_type")
            out.append(Attachment(kind="image", path=path, mime_type=mime if isinstance(mime, str) else None))
    return out[:MAX_REFS]


def render_result(result: Any) -> str:
    """A tool's result as text: diff chunks as diffs, terminal output with its exit code."""
    if isinstance(result, dict):
        result = {k: v for k, v in result.items() if k not in CONTENT_IDS}
        if not result:
            return ""
        diff = result.get("diff")
        chunks = diff.get("chunks") if isinstance(diff, dict) else None
        if isinstance(chunks, list):
            return "\n".join(c["diffString"] for c in chunks
                             if isinstance(c, dict) and isinstance(c.get("diffString"), str))
        text = render_output(result)
        code = result.get("exitCode")
        if isinstance(code, int) and not isinstance(code, bool) and "output" in result:
            text = f"{text}\n(exit code {code})"
        return text
    return render_output(result) if not isinstance(result, int | float) else dump(result)


def _error_text(error: Any) -> str | None:
    if isinstance(error, dict):
        for key in ("clientVisibleErrorMessage", "modelVisibleErrorMessage", "message", "error"):
            if isinstance(error.get(key), str) and error[key].strip():
                return error[key]
        return dump(error)
    return error if isinstance(error, str) and error.strip() else None


def _tool(b: ConversationBuilder, tfd: dict[str, Any], turn_id: str, ts: datetime | None,
          ctx: BubbleContext) -> None:
    name = as_str(tfd.get("name")) or (f"tool-{tfd['tool']}" if isinstance(tfd.get("tool"), int) else "tool")
    raw, params = json_field(tfd.get("rawArgs")), json_field(tfd.get("params"))
    if isinstance(raw, dict) or isinstance(params, dict):
        args: Any = {**(params if isinstance(params, dict) else {}), **(raw if isinstance(raw, dict) else {})}
    else:
        args = raw if raw is not None else params
    result = json_field(tfd.get("result"))
    extra = json_field(tfd.get("additionalData"))
    if isinstance(extra, dict) and isinstance(extra.get("codeblock"), dict):
        result = {**(result if isinstance(result, dict) else {}), "codeblock": extra["codeblock"]}
    error = _error_text(json_field(tfd.get("error")))
    status = as_str(tfd.get("status"))
    is_error = status == "error" or error is not None
    output: Any = None
    if result is not None:
        output = render_result(result)
    if error is not None:
        output = f"{output}\n{error}" if output else error
    edits = cursor_edits(name, args, b.cwd, result=result, content_of=ctx.content_of)
    call_id = as_str(tfd.get("toolCallId")) or as_str(tfd.get("modelCallId"))
    b.tool_call(name, args, ts=ts, call_id=call_id, turn_id=f"{turn_id}:tool", output=output,
                is_error=is_error, status=status, edits=edits)


def _usage(bubble: dict[str, Any], ctx: BubbleContext) -> None:
    tokens = bubble.get("tokenCount")
    if isinstance(tokens, dict):
        for key, name in (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens")):
            value = tokens.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                ctx.usage[name] = ctx.usage.get(name, 0) + value


def add_bubble(b: ConversationBuilder, bubble: dict[str, Any], n: int, ctx: BubbleContext) -> None:
    """The turns of one bubble, in the order the IDE shows them."""
    kind = bubble.get("type")
    turn_id = as_str(bubble.get("bubbleId")) or f"b{n}"
    ts = bubble_time(bubble)
    text = bubble.get("text") if isinstance(bubble.get("text"), str) else ""
    if kind in (1, "user"):
        if not text.strip() and bubble.get("richText"):
            text = lexical_text(bubble.get("richText"))
        b.message("user", text, ts=ts, turn_id=turn_id, attachments=attachments_of(bubble))
        return
    if kind not in (2, "ai", "assistant"):
        b.counts["bubbles_unknown_type"] += 1
        return
    model_info = bubble.get("modelInfo")
    model = as_str(model_info.get("modelName")) if isinstance(model_info, dict) else None
    model = None if model == "default" else model
    thinking = bubble.get("thinking")
    thought = thinking.get("text") if isinstance(thinking, dict) else None
    if not (isinstance(thought, str) and thought.strip()):
        blocks = bubble.get("allThinkingBlocks")
        thought = "\n\n".join(t["text"] for t in blocks if isinstance(t, dict) and isinstance(t.get("text"), str)) \
            if isinstance(blocks, list) else None
    if thought and thought.strip():
        b.thinking(thought, ts=ts, turn_id=f"{turn_id}:thinking", model=model)
    if not text.strip() and isinstance(bubble.get("codeBlocks"), list):
        text = "\n\n".join(c.get("content") or c.get("code") for c in bubble["codeBlocks"]
                           if isinstance(c, dict) and isinstance(c.get("content") or c.get("code"), str))
    if text.strip():
        b.message("assistant", text, ts=ts, turn_id=turn_id, model=model)
    tfd = bubble.get("toolFormerData")
    if isinstance(tfd, dict) and (tfd.get("name") or tfd.get("tool")):
        _tool(b, tfd, turn_id, ts, ctx)
    _usage(bubble, ctx)
