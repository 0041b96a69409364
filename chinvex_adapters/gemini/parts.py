"""Gemini API `Part` lists, as Gemini CLI records them in `content` and Qwen Code (a fork) in
`message.parts`: text (`thought: true` marks reasoning), `functionCall`, `functionResponse`,
`inlineData` (base64: never kept, only referenced) and `fileData`.

A field may hold a bare string, one Part or a list of Parts (Gemini's `PartListUnion`), so every
reader goes through `part_list` first.
"""

from __future__ import annotations

from typing import Any

from chinvex.models import Attachment
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import dump


def part_list(value: Any) -> list[dict[str, Any]]:
    """Any `PartListUnion` as a list of Part objects (a string is one text Part)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"text": value}] if value else []
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        out: list[dict[str, Any]] = []
        for item in value:
            if isinstance(item, dict):
                out.append(item)
            elif isinstance(item, str) and item:
                out.append({"text": item})
        return out
    return []


def _texts(parts: list[dict[str, Any]], thought: bool) -> str:
    pieces = [p["text"] for p in parts
              if isinstance(p.get("text"), str) and p["text"] and bool(p.get("thought") is True) == thought]
    return "\n".join(pieces)


def visible_text(parts: list[dict[str, Any]]) -> str:
    """The words of the Parts that are not reasoning."""
    return _texts(parts, thought=False)


def thought_text(parts: list[dict[str, Any]]) -> str:
    """The reasoning Parts' words (`thought: true`)."""
    return _texts(parts, thought=True)


def function_calls(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]


def function_responses(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]


def only_responses(parts: list[dict[str, Any]]) -> bool:
    """True when every Part is a function response: a tool result sent as a user message."""
    return bool(parts) and all(isinstance(p.get("functionResponse"), dict) for p in parts)


def response_output(response: Any) -> tuple[str, bool]:
    """A `functionResponse.response` as (text, is_error): `{"output": ...}` or `{"error": ...}`
    (Gemini CLI and Qwen Code), anything else as JSON."""
    if isinstance(response, dict):
        if "error" in response and response["error"] not in (None, "", {}):
            error = response["error"]
            return (error if isinstance(error, str) else dump(error)), True
        output = response.get("output")
        if isinstance(output, str):
            return output, False
        if output is not None:
            return dump(output), False
        if "content" in response:
            content = response["content"]
            return (content if isinstance(content, str) else visible_text(part_list(content))
                    or dump(content)), False
        return (dump(response) if response else ""), False
    if isinstance(response, str):
        return response, False
    return ("" if response is None else dump(response)), False


def _kind(mime: str | None) -> str:
    top = (mime or "").split("/", 1)[0]
    return top if top in ("image", "audio", "video") else "file"


def attachments(parts: list[dict[str, Any]]) -> list[Attachment]:
    """References to the files and images a Part list carries (inline bytes are counted, never
    kept)."""
    out: list[Attachment] = []
    for part in parts:
        inline = part.get("inlineData")
        if isinstance(inline, dict):
            mime = as_str(inline.get("mimeType"))
            data = inline.get("data")
            size = (len(data) * 3) // 4 if isinstance(data, str) else None
            out.append(Attachment(kind=_kind(mime), mime_type=mime, size_bytes=size,
                                  name=as_str(inline.get("displayName"))))
        linked = part.get("fileData")
        if isinstance(linked, dict):
            mime = as_str(linked.get("mimeType"))
            uri = as_str(linked.get("fileUri"))
            out.append(Attachment(kind=_kind(mime), mime_type=mime, uri=uri,
                                  name=as_str(linked.get("displayName"))))
    return out


def result_parts_text(parts: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """The texts of a tool's result Parts (function responses, plain text, attachment notes)
    and whether any response was an error."""
    texts: list[str] = []
    failed = False
    for part in parts:
        response = part.get("functionResponse")
        if isinstance(response, dict):
            text, error = response_output(response.get("response"))
            failed = failed or error
            if text:
                texts.append(text)
            continue
        if isinstance(part.get("text"), str) and part["text"]:
            texts.append(part["text"])
        for ref in attachments([part]):
            texts.append(f"[{ref.kind} attachment{': ' + ref.mime_type if ref.mime_type else ''}]")
    return texts, failed
