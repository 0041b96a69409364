"""Text hygiene shared by every session adapter (chat exports, agent transcripts).

Everything an adapter puts into a turn ends up in SQLite, FTS5 and the embedder. Those choke on
things exports do contain: lone UTF-16 surrogates (orjson refuses them), NUL characters, and
megabytes of base64 that only waste tokens. These helpers keep such content out once, at the
adapter boundary, so the engine can treat every string as clean UTF-8 text.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any

from chinvex.models import Turn
from chinvex.files.text import clean_str

# A data: URI carrying base64 (inline images in markdown, tool outputs, ...).
_DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]+)*;base64,[A-Za-z0-9+/=\s]{16,}")
# A long run of the base64 alphabet without whitespace: never useful to search or embed.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{1000,}={0,2}")


def clean_text(value: str) -> str:
    """Drop NULs and replace lone surrogates (one U+FFFD each) so the text is valid UTF-8
    everywhere downstream."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    return clean_str(value)


def strip_base64(text: str) -> tuple[str, int]:
    """Replace data: URIs and long base64 runs by a short marker; returns (text, replacements)."""
    count = 0

    def _data(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        head = match.group(0).split(",", 1)[0]
        return f"[{head} omitted]"

    def _run(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f"[base64 omitted: {len(match.group(0))} chars]"

    if "base64," in text:
        text = _DATA_URI.sub(_data, text)
    if len(text) >= 1000:
        text = _BASE64_RUN.sub(_run, text)
    return text, count


def searchable(text: str) -> str:
    """Clean text that goes into `Turn.text` (the only thing the chunker reads)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return strip_base64(clean_text(text))[0]


def truncate_middle(text: str, head: int, tail: int) -> tuple[str, int]:
    """Keep the head and the tail of a long text with a marker saying how much was left out.

    Tool outputs are often long logs whose beginning (the command's first lines) and end (the
    error or the summary) are what a search needs; the middle is dropped. Returns the text and
    the number of characters omitted (0 when nothing was cut).
    """
    if len(text) <= head + tail + 64:
        return text, 0
    omitted = len(text) - head - tail
    cut_head = text[:head]
    cut_tail = text[len(text) - tail :] if tail > 0 else ""
    return f"{cut_head}\n[… {omitted} characters omitted …]\n{cut_tail}", omitted


def one_line(text: str, limit: int = 80) -> str:
    """First non-empty line, shortened: a title fallback taken from the first user message."""
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def json_safe(value: Any, depth: int = 0, max_items: int = 200) -> Any:
    """A copy of `value` that orjson can always write (metadata comes from untrusted files)."""
    if depth > 8:
        return None
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):  # orjson writes 64-bit integers only
        return value if -(2**63) <= value < 2**64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for i, (key, item) in enumerate(value.items()):
            if i >= max_items:
                break
            out[clean_text(str(key))] = json_safe(item, depth + 1, max_items)
        return out
    if isinstance(value, list | tuple | set):
        return [json_safe(item, depth + 1, max_items) for item in list(value)[:max_items]]
    return clean_text(str(value))


def as_str(value: Any) -> str | None:
    """A non-empty identifier-like string from a JSON value (ids may arrive as numbers)."""
    if isinstance(value, str):
        value = value.strip()
        return clean_text(value) if value else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def fill_times(turns: list[Turn], fallback: datetime | None) -> None:
    """Turns without a time (system/injected messages, markdown without <time> tags) take the
    previous turn's time, else the next one's, else `fallback` (the conversation's start)."""
    last = None
    for turn in turns:
        if turn.ts is None:
            turn.ts = last
        last = turn.ts or last
    nxt = fallback
    for turn in reversed(turns):
        if turn.ts is None:
            turn.ts = nxt
        nxt = turn.ts or nxt
