"""Telling session formats apart by content, cheaply: the first records of a JSONL file, or the
keys of a JSON document's top-level object (or of its first array element) as far as the first
bytes go. Several agents write look-alike files (Qwen Code's JSONL is Claude Code's envelope
with Gemini's message parts); the file name alone cannot route them."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ijson

from chinvex_adapters.kit.jsonl import loads_lenient

HEAD_BYTES = 64 * 1024


def head_bytes(path: Path, limit: int = HEAD_BYTES) -> bytes:
    """The first `limit` bytes, or b"" when the file cannot be read."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit)
    except OSError:
        return b""


def first_objects(path: Path, count: int = 8, limit: int = 4 * 1024 * 1024) -> list[dict[str, Any]]:
    """The first `count` JSON object lines of a JSONL file (lines that are not objects are
    passed over), reading at most `limit` bytes."""
    found: list[dict[str, Any]] = []
    read = 0
    try:
        with path.open("rb") as handle:
            for raw in handle:
                read += len(raw)
                line = raw.strip()
                if line:
                    try:
                        data = loads_lenient(line)
                    except (ValueError, RecursionError):
                        data = None
                    if isinstance(data, dict):
                        found.append(data)
                        if len(found) >= count:
                            break
                if read >= limit:
                    break
    except OSError:
        return found
    return found


@dataclass
class JsonShape:
    """What the first bytes of a JSON document show: its top-level kind ("object", "array" or
    None when it is not JSON) and the keys seen at the top level (for an array: in its first
    element)."""

    kind: str | None = None
    keys: list[str] = field(default_factory=list)
    scalars: dict[str, Any] = field(default_factory=dict)


def json_shape(head: bytes, *, max_keys: int = 64) -> JsonShape:
    """The shape of a JSON document from its first bytes (a cut-off prefix is fine)."""
    shape = JsonShape()
    top = "" if not head.lstrip().startswith(b"[") else "item"
    try:
        for prefix, event, value in ijson.parse(io.BytesIO(head)):
            if shape.kind is None:
                shape.kind = {"start_map": "object", "start_array": "array"}.get(event, "scalar")
                if shape.kind == "scalar":
                    break
                continue
            if prefix == top and event == "map_key":
                shape.keys.append(value)
                if len(shape.keys) >= max_keys:
                    break
            elif event in ("string", "number", "boolean") and "." not in prefix.removeprefix(top + ".") \
                    and prefix.startswith(top + "." if top else "") and prefix:
                key = prefix.removeprefix(top + ".") if top else prefix
                shape.scalars.setdefault(key, value)
            if top == "item" and prefix == "" and event == "end_array":
                break
            if top == "item" and prefix == "item" and event == "end_map":
                break
    except (ijson.common.IncompleteJSONError, ijson.common.JSONError, ValueError, RecursionError):
        pass
    return shape
