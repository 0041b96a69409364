"""The text of app-server items: clipping, base64 scrubbing, tool renderings, message parts.

Rendered the same way as the rollout-file adapter (chinvex_adapters/cx_sessions_jsonl), so one
thread reads the same whichever adapter read it; `NormalizeOptions` holds the limits.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chinvex.models import Attachment
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.edits import FileEdit, patch_edits, resolve

from . import schemas

_DATA_URL = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w=.+-]+)*;base64,[A-Za-z0-9+/=\s]{16,}")
_LONG_B64_MIN = 400  # same threshold as the rollout-file adapter
_LONG_B64 = re.compile(r"[A-Za-z0-9+/]{%d,}={0,2}" % _LONG_B64_MIN)
_WS = re.compile(r"\s+")
_TEXT_KEYS = ("text", "message", "summary", "content", "review", "prompt", "query", "output")


@dataclass(frozen=True)
class NormalizeOptions:
    max_tool_output_chars: int = 8000
    max_tool_input_chars: int = 8000
    include_reasoning: bool = True


def clip(text: str, limit: int, counts: Counter[str], counter: str) -> str:
    """Head and tail of `text` with a marker saying how much was cut (errors and results
    tend to sit at the end of tool output, the command's intent at the start)."""
    if limit <= 0 or len(text) <= limit:
        return text
    counts[counter] += 1
    head = (limit * 3) // 4
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted} characters omitted …]\n{text[-tail:]}"


def scrub(text: str, counts: Counter[str]) -> str:
    """Replace inline base64 (data URLs, long bare runs), which would flood the index."""
    if "base64," not in text and len(text) < _LONG_B64_MIN:
        return text

    def _sub(match: re.Match[str]) -> str:
        counts["data_urls_removed"] += 1
        mime = match.group(0).split(";", 1)[0][5:]
        return f"[{mime} data omitted]"

    def _sub_run(match: re.Match[str]) -> str:
        counts["base64_runs_removed"] += 1
        return f"[base64 data, {len(match.group(0))} chars omitted]"

    return _LONG_B64.sub(_sub_run, _DATA_URL.sub(_sub, text))


def from_ms(value: int | None) -> Any:
    return None if value is None else to_utc(value / 1000)


def json_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def tool_text(
    name: str,
    input_text: str | None,
    output: str | None,
    exit_code: int | None,
    options: NormalizeOptions,
    counts: Counter[str],
) -> str:
    """`Tool: name` / input / `Output (exit code N):` / output — the rollout adapter's layout."""
    lines = [f"Tool: {name}"]
    if input_text and input_text.strip():
        lines.append(clip(scrub(input_text, counts), options.max_tool_input_chars, counts,
                          "tool_inputs_truncated").rstrip())
    if output is not None and output.strip():
        body = clip(scrub(output, counts), options.max_tool_output_chars, counts, "tool_outputs_truncated")
        label = "Output" + (f" (exit code {exit_code})" if exit_code is not None else "")
        lines.append(f"{label}:\n{body.rstrip()}")
    elif exit_code is not None:
        lines.append(f"Exit code: {exit_code}")
    return "\n".join(lines)


def image_attachment(url: str | None, file_id: str | None, counts: Counter[str]) -> Attachment:
    counts["attachments"] += 1
    if url and url.startswith("data:"):
        mime = url[5:].split(";", 1)[0] or None
        return Attachment(kind="image", mime_type=mime, size_bytes=(len(url) * 3) // 4)
    return Attachment(kind="image", uri=url, name=file_id)


def user_message_text(item: schemas.UserMessageItem, counts: Counter[str]) -> tuple[str, list[Attachment]]:
    texts: list[str] = []
    markers: list[str] = []
    attachments: list[Attachment] = []
    for part in item.content:
        if isinstance(part, schemas.TextInput):
            if part.text.strip():
                texts.append(part.text.strip())
        elif isinstance(part, schemas.ImageInput):
            attachments.append(image_attachment(part.url, part.file_id, counts))
            if part.url and not part.url.startswith("data:"):
                markers.append(f"[image: {part.url}]")
            else:
                markers.append("[image]")
        elif isinstance(part, schemas.LocalImageInput):
            counts["attachments"] += 1
            attachments.append(Attachment(kind="image", path=part.path, name=part.path.rsplit("/", 1)[-1]))
            markers.append(f"[image: {part.path}]")
        elif isinstance(part, (schemas.AudioInput, schemas.LocalAudioInput)):
            counts["attachments"] += 1
            path = getattr(part, "path", None)
            url = getattr(part, "url", None)
            uri = url if url and not url.startswith("data:") else None
            attachments.append(Attachment(kind="audio", path=path, uri=uri))
            markers.append(f"[audio: {path or uri}]" if (path or uri) else "[audio]")
        elif isinstance(part, schemas.SkillInput):
            counts["attachments"] += 1
            attachments.append(Attachment(kind="skill", name=part.name, path=part.path))
            markers.append(f"[skill: {part.name}]")
        elif isinstance(part, schemas.MentionInput):
            counts["attachments"] += 1
            attachments.append(Attachment(kind="mention", name=part.name, path=part.path))
            markers.append(f"[mention: {part.name}" + (f" ({part.path})]" if part.path else "]"))
        else:
            counts["user_inputs_unknown"] += 1
            found = find_text(getattr(part, "raw", {}))
            if found:
                texts.append(found)
    text = "\n\n".join(texts)
    if markers:
        text = (text + "\n" if text else "") + " ".join(markers)
    return scrub(text, counts), attachments


def find_text(raw: Any, depth: int = 0) -> str:
    """Best-effort text of an unknown structure: string values under text-like keys."""
    if depth > 4:
        return ""
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, list):
        parts = [find_text(v, depth + 1) for v in raw]
        return "\n".join(p for p in parts if p)
    if isinstance(raw, dict):
        parts = []
        for key in _TEXT_KEYS:
            if key in raw:
                found = find_text(raw[key], depth + 1)
                if found:
                    parts.append(found)
        return "\n".join(parts)
    return ""


def mcp_result_text(result: dict[str, Any] | None, counts: Counter[str]) -> tuple[str, int]:
    """Text blocks of an MCP CallToolResult; images/audio are counted, never inlined."""
    if not result:
        return "", 0
    texts: list[str] = []
    media = 0
    for block in result.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind in ("image", "audio"):
            media += 1
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            res = block["resource"]
            if isinstance(res.get("text"), str):
                texts.append(res["text"])
            elif res.get("uri"):
                texts.append(f"[resource: {res['uri']}]")
        elif kind == "resource_link" and block.get("uri"):
            texts.append(f"[resource: {block['uri']}]")
    if not texts and result.get("structuredContent") is not None:
        texts.append(json.dumps(result["structuredContent"], ensure_ascii=False, sort_keys=True))
    return scrub("\n".join(texts), counts), media


def content_items_text(items: Iterable[dict[str, Any]] | None, counts: Counter[str]) -> tuple[str, int]:
    """Responses/dynamic-tool content items: keep text, count (never inline) media."""
    texts: list[str] = []
    media = 0
    for block in items or []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") in ("input_image", "inputImage", "input_audio", "inputAudio"):
            media += 1
    return scrub("\n".join(texts), counts), media


def change_edits(change: Any) -> list[FileEdit]:
    """A FileChange as edits: its unified diff's removed and added lines (an added file's
    content is the diff itself when it has no hunks), at the path it ends up at."""
    kind = change.kind.get("type") if isinstance(change.kind, dict) else change.kind
    move = change.kind.get("move_path") if isinstance(change.kind, dict) else None
    path = move or change.path
    diff = change.diff or ""
    if kind == "delete":
        return [FileEdit(path=path, op="delete", abs_path=resolve(path, None))]
    if "@@" in diff:
        found = patch_edits(f"--- a/{path}\n+++ b/{path}\n{diff}" if "+++ " not in diff else diff, None)
        return [FileEdit(path=path, op="write" if kind == "add" else "patch", old_text=e.old_text,
                         new_text=e.new_text, abs_path=resolve(path, None), truncated=e.truncated)
                for e in found]
    if kind == "add":
        return [FileEdit(path=path, op="write", new_text=diff, abs_path=resolve(path, None))]
    return []
