"""Reading JSONL session logs while their agent may still be appending to them.

A half-written last line is left unread (it is complete next time), never an error; a line
holding two records glued by a cut append gives both; a bad line in the middle is counted and
skipped; invalid UTF-8 and lone surrogate escapes are repaired rather than fatal.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from chinvex.files.text import repair_json_escapes


def loads_lenient(line: bytes) -> Any:
    """orjson, then orjson on repaired text (bad bytes, lone surrogates), then the stdlib (NaN
    literals). Raises ValueError (or RecursionError) when the line is not JSON at all."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        pass
    text = repair_json_escapes(line).decode("utf-8", "replace")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def glued_objects(line: bytes) -> list[dict[str, Any]] | None:
    """The records of a line holding several JSON objects back to back (`{...}{...}`), or None
    when it is not exactly that (one object, garbage, a cut object, a non-object). An append cut
    short leaves the next record on the same line: real Claude Code 2.1 transcripts hold such
    lines (13 in 546 sessions), and read as one line both records were lost."""
    text = line.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        try:
            value, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        found.append(value)
    return found if len(found) > 1 else None


@dataclass
class Line:
    line_no: int
    data: dict[str, Any]


def partial_tail_warning(path: Path | str) -> str:
    """The run report's line for a log whose last line was cut (the agent may be writing it):
    its complete lines were read, the rest waits for the next run. One wording for every log
    adapter, so that users and tests meet one sentence."""
    return f"{path}: last line is incomplete (being written?); left unread"


@dataclass
class JsonlRead:
    lines: list[Line] = field(default_factory=list)
    non_blank: int = 0
    invalid: int = 0
    not_objects: int = 0
    partial_tail: bool = False
    complete_bytes: int = 0


def read_jsonl(path: Path, counts: Counter[str], *, max_line_bytes: int = 64 * 1024 * 1024,
               each: Callable[[dict[str, Any]], None] | None = None) -> JsonlRead:
    """Every JSON object line of `path`, in order. `each` is applied to every object as it is
    read (to drop base64 payloads before the next line is read, so they never pile up in
    memory). OSError propagates (the caller words it)."""
    result = JsonlRead()
    offset = 0
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            complete = raw.endswith(b"\n")
            offset += len(raw)
            line = raw.strip()
            if not line:
                if complete:
                    result.complete_bytes = offset
                continue
            result.non_blank += 1
            if len(line) > max_line_bytes:
                counts["lines_too_long"] += 1
                result.invalid += 1
                continue
            try:
                data = loads_lenient(line)
            except (ValueError, RecursionError):
                glued = glued_objects(line) if complete else None
                if glued is not None:
                    counts["lines_glued_split"] += 1
                    result.complete_bytes = offset
                    for record in glued:
                        if each is not None:
                            each(record)
                        result.lines.append(Line(line_no, record))
                elif complete:
                    result.invalid += 1
                    counts["lines_invalid_json"] += 1
                else:
                    result.partial_tail = True
                    counts["partial_last_line"] += 1
                continue
            if complete:
                result.complete_bytes = offset
            if not isinstance(data, dict):
                result.not_objects += 1
                counts["lines_not_object"] += 1
                continue
            if each is not None:
                each(data)
            result.lines.append(Line(line_no, data))
    return result
