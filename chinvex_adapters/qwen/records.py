"""Qwen Code's chat records: telling them from Claude Code's look-alikes, reading them, and
choosing which to keep.

Every line is one record in Claude Code's envelope (`uuid`, `parentUuid`, `sessionId`,
`timestamp`, `type`, `cwd`, `version`, `gitBranch`) with Gemini's message shape inside
(`message: {role: "user"|"model", parts: [...]}`), plus Qwen's own keys: `type: "tool_result"`
with `toolCallResult`, `systemPayload`, `usageMetadata`, `contextWindowSize`.

Records are kept in file order, not by walking `parentUuid` back from the last line: cancelled
turns and telemetry written late leave branches, and the walk drops answers the user saw. Only a
`system/rewind` record abandons anything: the records between the point it re-roots to (its
`parentUuid`) and itself. A uuid written twice (a streamed record) keeps its last version.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex.files.text import repair_json_escapes
from chinvex.models.sources import SourceError
from chinvex_adapters.kit.jsonl import JsonlRead, Line, read_jsonl
from chinvex_adapters.kit.sniff import first_objects

TYPES = frozenset({"user", "assistant", "tool_result", "system"})
CONTENT_TYPES = frozenset({"user", "assistant", "tool_result"})
_CLAUDE_ONLY_TYPES = frozenset({"summary", "file-history-snapshot", "queue-operation", "progress",
                                "custom-title", "ai-title", "attachment"})
_QWEN_KEYS = ("systemPayload", "toolCallResult", "usageMetadata", "contextWindowSize")


def envelope(record: dict[str, Any]) -> bool:
    """The chat-record envelope Qwen Code shares with Claude Code."""
    return (isinstance(record.get("uuid"), str) and isinstance(record.get("sessionId"), str)
            and record.get("type") in TYPES)


def qwen_mark(record: dict[str, Any]) -> bool:
    """Something only Qwen Code writes: Gemini `parts`, the `model` role, a tool_result record,
    or one of its own keys."""
    message = record.get("message")
    if isinstance(message, dict):
        if isinstance(message.get("parts"), list) or message.get("role") == "model":
            return True
    return record.get("type") == "tool_result" or any(k in record for k in _QWEN_KEYS)


def claude_mark(record: dict[str, Any]) -> bool:
    """Something only Claude Code writes: Anthropic `content`, its record types, `requestId`."""
    message = record.get("message")
    if isinstance(message, dict) and "content" in message:
        return True
    return record.get("type") in _CLAUDE_ONLY_TYPES or "requestId" in record or "leafUuid" in record


def sniff(path: Path) -> str | None:
    """None when the file is a Qwen Code chat, else why not (a few words)."""
    if not path.name.endswith(".jsonl"):
        return "not a .jsonl file"
    records = first_objects(path, 8)
    if not any(envelope(r) for r in records):
        records += _head_glued_objects(path)
    if not records:
        return "no JSON object lines"
    if any("projectHash" in r or "$set" in r or "$rewindTo" in r for r in records):
        return "a Gemini CLI chat log"
    if any(claude_mark(r) for r in records):
        return "Claude Code records (message.content)"
    if not any(envelope(r) for r in records):
        return "no record with uuid, sessionId and a Qwen record type"
    if not any(qwen_mark(r) for r in records if envelope(r)):
        return "no Gemini-style message parts or Qwen record keys"
    return None


@dataclass
class Read:
    records: list[dict[str, Any]]
    abandoned: int
    superseded: int
    rewinds: int
    partial_tail: bool
    lines: int


def read(path: Path, counts: Counter[str]) -> Read:
    """The records to show, in file order. OSError: SourceError."""
    try:
        found = read_jsonl(path, counts)
        if found.invalid:
            _recover_glued_lines(path, found, counts)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    records: list[dict[str, Any]] = []
    for line in found.lines:
        if envelope(line.data):
            records.append(line.data)
        else:
            counts["records_not_qwen"] += 1
    last = {r["uuid"]: i for i, r in enumerate(records)}
    dropped = _rewound(records)
    keep: list[dict[str, Any]] = []
    superseded = 0
    for i, record in enumerate(records):
        if last[record["uuid"]] != i:
            superseded += 1
        elif i not in dropped:
            keep.append(record)
    rewinds = sum(1 for r in records if r.get("type") == "system" and r.get("subtype") == "rewind")
    return Read(keep, len(dropped), superseded, rewinds, found.partial_tail, len(found.lines))


def _rewound(records: list[dict[str, Any]]) -> set[int]:
    """Positions of the conversation records a `/rewind` abandoned."""
    dropped: set[int] = set()
    first: dict[str, int] = {}
    for i, record in enumerate(records):
        first.setdefault(record["uuid"], i)
        if record.get("type") != "system" or record.get("subtype") != "rewind":
            continue
        parent = record.get("parentUuid")
        if parent is None:
            start = 0
        elif isinstance(parent, str) and parent in first:
            start = first[parent] + 1
        else:
            continue  # re-rooted to a record this file does not hold: nothing is known to go
        dropped.update(j for j in range(start, i) if records[j].get("type") in CONTENT_TYPES)
    return dropped


def objects_among_fragments(line: bytes) -> list[dict[str, Any]]:
    """The records of one physical line that holds several written back to back (`{...}{...}`).

    Qwen Code appends one record plus `\\n` per write; an append cut short (the process killed
    mid-write, qwen-code #3606/#3681) leaves the next record on the same line, and Qwen's own
    reader (`jsonl-utils.ts`, `recoverObjectsFromLine`) recovers them. Read as one line the whole
    line is invalid JSON and every record on it was lost. Each top-level `{...}` (found by
    bracket depth, outside strings) that parses as an object is returned, in order; fragments
    that do not parse, and bytes between objects, are skipped.
    """
    text = repair_json_escapes(line).decode("utf-8", "replace")
    out: list[dict[str, Any]] = []
    depth, start, in_string, escaped = 0, -1, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = depth > 0
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                try:
                    value = json.loads(text[start:i + 1])
                except (ValueError, RecursionError):
                    value = None
                if isinstance(value, dict):
                    out.append(value)
    return out


def _recover_glued_lines(path: Path, found: JsonlRead, counts: Counter[str]) -> None:
    """Add to `found` the records of its complete lines that were invalid as one object but hold
    several glued together with fragments between them (`objects_among_fragments`), at their place in file
    order, as qwen-code's own reader does. A line of whole records only is split already
    (kit.jsonl.glued_objects)."""
    read_lines = {line.line_no for line in found.lines}
    recovered: list[Line] = []
    with path.open("rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if line_no in read_lines or not raw.endswith(b"\n") or b"}{" not in raw.replace(b" ", b""):
                continue
            for data in objects_among_fragments(raw.strip()):
                recovered.append(Line(line_no, data))
    if recovered:
        counts["records_recovered_from_glued_lines"] += len(recovered)
        found.lines = sorted(found.lines + recovered, key=lambda line: line.line_no)


def _head_glued_objects(path: Path, max_lines: int = 8, limit: int = 4 * 1024 * 1024) -> list[dict[str, Any]]:
    """The records of the first lines of `path` that are glued (see `objects_among_fragments`), for
    telling a Qwen chat whose first records were glued from other JSONL."""
    out: list[dict[str, Any]] = []
    read_bytes = 0
    try:
        with path.open("rb") as handle:
            for n, raw in enumerate(handle):
                read_bytes += len(raw)
                if b"}{" in raw.replace(b" ", b""):
                    out.extend(objects_among_fragments(raw.strip()))
                if n + 1 >= max_lines or read_bytes >= limit:
                    break
    except OSError:
        return out
    return out
