"""Rendering one ChatGPT message `content` (FORMATS.md §3.2) to searchable text + attachments.

Each `content_type` has its own shape and the set keeps growing, so rendering is a table of
small functions; an unknown type still gives its text when it has one, and is counted.
Pointers to uploaded or generated files become `Attachment`s (never bytes); reasoning is kept
as its summaries only (the raw chain of thought is long, repetitive and rarely what a search
for a past decision wants).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chinvex.models import Attachment

from chinvex_adapters.kit.text import as_str, clean_text


@dataclass
class Rendered:
    text: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    is_code: bool = False


def _s(value: Any) -> str:
    return clean_text(value) if isinstance(value, str) else ""


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _join(pieces: list[str]) -> str:
    return "\n\n".join(p.strip("\n") for p in pieces if p and p.strip())


def _asset_kind(content_type: str) -> str:
    lowered = content_type.lower()
    for kind in ("image", "audio", "video"):
        if kind in lowered:
            return kind
    return "file"


def _asset(part: dict[str, Any]) -> Attachment | None:
    pointer = as_str(part.get("asset_pointer"))
    if pointer is None:
        return None
    meta = _d(part.get("metadata"))
    extra: dict[str, Any] = {}
    for key in ("width", "height"):
        if _int(part.get(key)) is not None:
            extra[key] = part[key]
    return Attachment(
        kind=_asset_kind(_s(part.get("content_type")) or "file"),
        uri=pointer,
        size_bytes=_int(part.get("size_bytes")),
        mime_type=as_str(part.get("mime_type")) or as_str(meta.get("mime_type")),
        **extra,
    )


def render_parts(parts: Any, counts: Counter[str]) -> Rendered:
    """`parts` mix strings and dicts (images, audio transcriptions, ...): never join blindly."""
    out = Rendered()
    if not isinstance(parts, list):
        return out
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(clean_text(part))
        elif isinstance(part, dict):
            ctype = _s(part.get("content_type"))
            attachment = _asset(part)
            if attachment is not None:
                out.attachments.append(attachment)
                prompt = _s(_d(_d(part.get("metadata")).get("dalle")).get("prompt"))
                if prompt:
                    texts.append(f"[generated image] {prompt}")
                continue
            nested = [v for v in part.values() if isinstance(v, dict) and "asset_pointer" in v]
            if nested:  # real_time_user_audio_video_asset_pointer wraps audio/video pointers
                for inner in nested:
                    attachment = _asset(inner)
                    if attachment is not None:
                        out.attachments.append(attachment)
                continue
            text = _s(part.get("text"))
            if text:
                texts.append(text)
            elif ctype:
                counts["parts_unknown"] += 1
        elif part is not None:
            counts["parts_unknown"] += 1
    out.text = _join(texts)
    return out


def _text(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    return render_parts(content.get("parts"), counts)


def _code(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    code = _s(content.get("text"))
    if not code.strip():
        return Rendered()
    language = _s(content.get("language")).strip()
    if language in ("unknown", "text"):
        language = ""
    return Rendered(text=f"```{language}\n{code.strip(chr(10))}\n```", is_code=True)


def _execution_output(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    out = Rendered(text=_s(content.get("text")).strip("\n"))
    messages = _d(meta.get("aggregate_result")).get("messages")
    if isinstance(messages, list):
        for message in messages:
            message = _d(message)
            url = as_str(message.get("image_url"))
            if message.get("message_type") == "image" and url:
                out.attachments.append(Attachment(kind="image", uri=url))
    return out


def _browsing_display(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    return Rendered(text=_join([_s(content.get("result")), _s(content.get("summary"))]))


def _quote(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    title, url, domain = _s(content.get("title")), _s(content.get("url")), _s(content.get("domain"))
    source = " ".join(p for p in (title, f"<{url or domain}>" if (url or domain) else "") if p)
    body = _s(content.get("text")) or _s(content.get("snippet"))
    return Rendered(text=_join([f"Quote from {source}:" if source else "", body]))


def _thoughts(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    thoughts = content.get("thoughts")
    summaries: list[str] = []
    if isinstance(thoughts, list):
        for thought in thoughts:
            summary = _s(_d(thought).get("summary"))
            if summary.strip():
                summaries.append(summary)
    return Rendered(text=_join(summaries))


def _reasoning_recap(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    counts["reasoning_recaps_skipped"] += 1  # "Thought for 12s": nothing to search for
    return Rendered()


def _user_context(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    profile, instructions = _s(content.get("user_profile")), _s(content.get("user_instructions"))
    return Rendered(text=_join([
        f"User profile:\n{profile}" if profile.strip() else "",
        f"User instructions:\n{instructions}" if instructions.strip() else "",
    ]))


def _model_context(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    memory = _s(content.get("model_set_context"))
    return Rendered(text=f"Model memory:\n{memory}" if memory.strip() else "")


def _system_error(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    name, text = _s(content.get("name")), _s(content.get("text"))
    return Rendered(text=f"{name}: {text}" if name and text else (text or name))


def _unknown(content: dict[str, Any], meta: dict[str, Any], counts: Counter[str]) -> Rendered:
    ctype = _s(content.get("content_type"))[:40] or "missing"
    if isinstance(content.get("parts"), list):
        rendered = render_parts(content["parts"], counts)
        if rendered.text or rendered.attachments:
            return rendered
    pieces = [_s(content.get(key)) for key in ("title", "url", "text", "result", "summary", "content")]
    text = _join(pieces)
    if not text:
        counts[f"content_unknown:{ctype}"] += 1
    return Rendered(text=text)


RENDERERS: dict[str, Callable[[dict[str, Any], dict[str, Any], Counter[str]], Rendered]] = {
    "text": _text,
    "multimodal_text": _text,
    "code": _code,
    "execution_output": _execution_output,
    "tether_browsing_display": _browsing_display,
    "tether_quote": _quote,
    "sonic_webpage": _quote,
    "thoughts": _thoughts,
    "reasoning_recap": _reasoning_recap,
    "user_editable_context": _user_context,
    "model_editable_context": _model_context,
    "system_error": _system_error,
}


def render_content(content: Any, meta: Any, counts: Counter[str]) -> Rendered:
    content = _d(content)
    ctype = content.get("content_type")
    renderer = RENDERERS.get(ctype, _unknown) if isinstance(ctype, str) else _unknown
    return renderer(content, _d(meta), counts)
