"""Reading a pi session file (JSONL, one entry per line) while pi may still be appending to it.

Real files hold a few lines with two entries glued together (`…}}{"type":"message",…`, pi-mono's
own session.jsonl): such a line is split with a raw_decode loop instead of being dropped. A
half-written last line is left for the next run (and said, `Entries.partial_tail`); a bad line
in the middle is counted and skipped. The header sniff (`header_of`) reads only the first records.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex_adapters.kit.jsonl import loads_lenient
from chinvex_adapters.kit.sniff import first_objects

ENTRY_TYPES = frozenset({
    "message", "model_change", "thinking_level_change", "compaction", "branch_summary", "custom",
    "custom_message", "label", "session_info", "fast_mode_change", "service_tier_change",
    "session_state",
})
"""Entry types pi writes after its header (0.12 to 0.84)."""
MAX_LINE_BYTES = 64 * 1024 * 1024
_DECODER = json.JSONDecoder()


@dataclass
class Entry:
    line_no: int
    data: dict[str, Any]


def _split(line: bytes) -> list[Any] | None:
    """The JSON values of a line holding several (None when it is not that either)."""
    text = line.decode("utf-8", "replace")
    values: list[Any] = []
    at = 0
    try:
        while at < len(text):
            value, at = _DECODER.raw_decode(text, at)
            values.append(value)
            while at < len(text) and text[at].isspace():
                at += 1
    except ValueError:
        return None
    return values if len(values) > 1 else None


def _values(line: bytes, counts: Counter[str]) -> list[Any] | None:
    """The JSON values of a line (None when it holds none: a bad or a half-written line)."""
    try:
        return [loads_lenient(line)]
    except (ValueError, RecursionError):
        pass
    several = _split(line)
    if several is not None:
        counts["lines_with_several_entries"] += 1
    return several


class Entries:
    """Every JSON object of the file in order, streamed by iterating. OSError propagates (the
    caller words it as a SourceError). Once read, `partial_tail` says whether the last line
    was half-written (left unread, as `kit.jsonl.read_jsonl` leaves it)."""

    def __init__(self, path: Path, counts: Counter[str]) -> None:
        self.path = path
        self.counts = counts
        self.partial_tail = False

    def __iter__(self) -> Iterator[Entry]:
        with self.path.open("rb") as handle:
            for line_no, raw in enumerate(handle, start=1):
                line = raw.strip()
                if not line:
                    continue
                if len(line) > MAX_LINE_BYTES:
                    self.counts["lines_too_long"] += 1
                    continue
                values = _values(line, self.counts)
                if values is None:
                    complete = raw.endswith(b"\n")
                    self.counts["lines_invalid_json" if complete else "partial_last_line"] += 1
                    self.partial_tail = self.partial_tail or not complete
                    continue
                for value in values:
                    if isinstance(value, dict):
                        yield Entry(line_no, value)
                    else:
                        self.counts["lines_not_object"] += 1


def is_header(data: dict[str, Any]) -> bool:
    """pi's session header: `{"type":"session","id","timestamp","cwd"}` (+ `version` from v2 on)
    and none of the keys of look-alikes (Claude Code's `uuid`/`sessionId`, Droid's
    `session_start`, which is another type)."""
    if data.get("type") != "session" or "uuid" in data or "sessionId" in data:
        return False
    version = data.get("version", 1)
    return (isinstance(data.get("id"), str) and isinstance(data.get("cwd"), str)
            and isinstance(data.get("timestamp"), str)
            and isinstance(version, int) and not isinstance(version, bool) and 1 <= version <= 9)


def is_entry(data: dict[str, Any]) -> bool:
    """A record pi writes after its header."""
    if data.get("type") not in ENTRY_TYPES:
        return False
    if data.get("type") == "message":
        message = data.get("message")
        return isinstance(message, dict) and isinstance(message.get("role"), str)
    return True


def header_of(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The header when the file is a pi session (by its first records), else None and why not.
    oh-my-pi may write a `{"type":"title"}` record before the header."""
    objects = first_objects(path, count=3, limit=8 * 1024 * 1024)
    if not objects:
        return None, "empty file or no JSON object on its first lines"
    first = objects[0]
    if first.get("type") == "title" and len(objects) > 1:
        objects = objects[1:]
        first = objects[0]
    if not is_header(first):
        kind = first.get("type")
        what = f"its first record is of type {kind!r}" if isinstance(kind, str) else \
            "its first record has no type"
        return None, f"{what}, not a pi session header"
    if len(objects) > 1 and not is_entry(objects[1]):
        return None, "the record after its header is not a pi entry"
    return first, ""
