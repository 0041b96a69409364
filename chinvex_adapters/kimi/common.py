"""What both Kimi agents share: message parts (text, `think`, media urls in snake or camel
case), the injected reminders that are not the user's words, reading a side file
(state.json, meta.json) without failing the session, reading a session's JSONL logs (and
saying which one was cut inside its last line), and merging sub-agents' turns into their
session's conversation by time.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from chinvex.models import Attachment, Turn
from chinvex.models.sources import ParseReport
from chinvex_adapters.kit.jsonl import Line, loads_lenient, partial_tail_warning, read_jsonl

MEDIA = {"image_url": ("image", ("image_url", "imageUrl")), "audio_url": ("audio", ("audio_url", "audioUrl")),
         "video_url": ("video", ("video_url", "videoUrl"))}
_DATA_URI = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?[^,]*,")
_REMINDER = re.compile(r"^\s*<system-reminder>.*</system-reminder>\s*$", re.S)
MAX_SIDE_FILE = 8 * 1024 * 1024
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass
class Parts:
    """A message's content split by kind, in order within each kind."""

    text: list[str] = field(default_factory=list)
    think: list[str] = field(default_factory=list)
    media: list[Attachment] = field(default_factory=list)

    @property
    def words(self) -> str:
        return "\n".join(t for t in self.text if t)


def media(part: dict[str, Any], kind: str, keys: tuple[str, ...]) -> Attachment | None:
    """A media part as a reference: a `data:` URI keeps its type and size, never its bytes."""
    inner = next((part[k] for k in keys if isinstance(part.get(k), dict)), None)
    url = inner.get("url") if isinstance(inner, dict) else None
    if not isinstance(url, str) or not url:
        return None
    match = _DATA_URI.match(url)
    if match:
        return Attachment(kind=kind, mime_type=match.group(1), size_bytes=(len(url) - match.end()) * 3 // 4)
    return Attachment(kind=kind, uri=url[:2000])


def parts_of(content: Any, counts: Counter[str]) -> Parts:
    """A content string or list of parts (`text`, `think`, media urls)."""
    found = Parts()
    if isinstance(content, str):
        found.text.append(content)
        return found
    for part in content if isinstance(content, list) else ():
        if isinstance(part, str):
            found.text.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            found.text.append(part["text"])
        elif kind == "think" and isinstance(part.get("think"), str):
            found.think.append(part["think"])
        elif kind in MEDIA:
            attachment = media(part, *MEDIA[kind])
            if attachment is not None:
                counts["media_referenced"] += 1
                found.media.append(attachment)
        else:
            counts["parts_other_type"] += 1
    return found


def tool_args(value: Any) -> Any:
    """Tool arguments: an object, or the JSON string of one (kept as given when it is not)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def injected(text: str) -> bool:
    """A reminder the agent injects into the context as a user message (`<system-reminder>…`
    around the whole text): not the user's words."""
    return text.lstrip().startswith("<system-reminder>") and bool(_REMINDER.match(text))


def read_side(path: Path, counts: Counter[str], what: str) -> dict[str, Any]:
    """A JSON object file read with a session (state.json, meta.json); `{}` (counted) when
    absent, unreadable or not an object: the transcript is read without it."""
    try:
        if path.stat().st_size > MAX_SIDE_FILE:
            counts[f"{what}_too_large"] += 1
            return {}
        data = loads_lenient(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError):
        counts[f"{what}_unreadable"] += 1
        return {}
    if not isinstance(data, dict):
        counts[f"{what}_unreadable"] += 1
        return {}
    return data


class Logs:
    """The JSONL files one session is read from (a wire journal, context files, sub-agents'
    logs): their lines, and which of them end in a half-written line (left unread, said once
    the session is read)."""

    def __init__(self, counts: Counter[str]) -> None:
        self.counts = counts
        self.cut: list[Path] = []

    def lines(self, path: Path) -> list[Line]:
        """The JSON object lines of `path` (OSError propagates)."""
        read = read_jsonl(path, self.counts)
        if read.partial_tail:
            self.cut.append(path)
        return read.lines

    def report_cut(self, report: ParseReport) -> None:
        for path in self.cut:
            report.warnings.append(partial_tail_warning(path))


def mark_sidechain(turns: Iterable[Turn], agent_id: str, extra: dict[str, Any] | None = None) -> list[Turn]:
    """A sub-agent's turns, marked as such (they join their session's conversation)."""
    out = list(turns)
    for turn in out:
        turn.meta["sidechain"] = True
        turn.meta["agent_id"] = agent_id
        if extra:
            turn.meta.update(extra)
    return out


def merge(main: list[Turn], subs: list[list[Turn]]) -> list[Turn]:
    """The session's turns with its sub-agents' interleaved by time: a sub-agent's work lands
    after the call that started it and before its result was used (main first on ties)."""
    if not any(subs):
        return main
    return list(heapq.merge(main, *subs, key=lambda t: t.ts or EPOCH))  # keeps each list's order
