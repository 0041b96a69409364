"""The cursor-agent CLI's blob store (`chats/<md5 of cwd>/<agent id>/store.db`): one
conversation per database.

`meta` row '0' holds hex-encoded JSON (agent id, title, creation time in ms, last model, and
`latestRootBlobId`). `blobs` are content-addressed: message blobs are JSON in the AI-SDK
shape (`role` + `content` parts: text, reasoning, tool-call, tool-result), tree nodes are
small protobuf messages whose field 1 lists the message ids (raw 32 bytes) in order. The
conversation is what the latest root reaches; blobs it does not reach are earlier branches
(rewinds, edits) and are left out. Without a readable root, the JSON blobs are read in the
order they were written. No message carries a time: the creation time and the file's mtime
bound the conversation.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chinvex.models.sources import UnrecognisedSource
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.text import as_str

from .db import decode, tables, text_of

LABEL = "cursor-agent store.db"
_HEX = re.compile(r"^[0-9a-fA-F]+$")
MAX_DEPTH = 8


@dataclass
class CliStore:
    meta: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    order: str = "root"  # root | written


def read_meta(conn: sqlite3.Connection, path: Path) -> dict[str, Any]:
    if not {"blobs", "meta"} <= tables(conn):
        raise UnrecognisedSource(f"{path}: not a {LABEL} (no blobs and meta tables)")
    row = conn.execute("SELECT value FROM meta WHERE key='0'").fetchone()
    if row is None:
        raise UnrecognisedSource(f"{path}: not a {LABEL} (no meta row '0')")
    raw = text_of(row[0]) or ""
    meta = None
    if _HEX.match(raw.strip()) and len(raw.strip()) % 2 == 0:
        try:
            meta = decode(bytes.fromhex(raw.strip()))
        except ValueError:
            meta = None
    if meta is None:
        meta = decode(row[0])
    if not isinstance(meta, dict):
        raise UnrecognisedSource(f"{path}: not a {LABEL} (meta row '0' is not hex-encoded JSON)")
    return meta


def proto_fields(data: bytes) -> list[tuple[int, Any]]:
    """The (field number, value) pairs of a protobuf message; ValueError when malformed."""
    out: list[tuple[int, Any]] = []
    pos, end = 0, len(data)

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            if pos >= end or shift > 63:
                raise ValueError("truncated varint")
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    while pos < end:
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, varint()))
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise ValueError("truncated fixed field")
            out.append((number, data[pos:pos + size]))
            pos += size
        elif wire == 2:
            size = varint()
            if pos + size > end:
                raise ValueError("truncated length-delimited field")
            out.append((number, data[pos:pos + size]))
            pos += size
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _blob(conn: sqlite3.Connection, blob_id: str) -> bytes | None:
    row = conn.execute("SELECT data FROM blobs WHERE id=?", (blob_id,)).fetchone()
    if row is None:
        row = conn.execute("SELECT data FROM blobs WHERE id=?", (blob_id.upper(),)).fetchone()
    if row is None or row[0] is None:
        return None
    value = row[0]
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)


def _message(data: bytes) -> dict[str, Any] | None:
    if not data.lstrip()[:1] == b"{":
        return None
    value = decode(data)
    return value if isinstance(value, dict) and "role" in value else None


def _from_root(conn: sqlite3.Connection, root_id: str, counts: Counter[str]) -> list[dict[str, Any]] | None:
    """The messages the root node lists, in order; None when there is no readable root."""
    data = _blob(conn, root_id.lower())
    if data is None:
        counts["cli_root_missing"] += 1
        return None
    try:
        fields = proto_fields(data)
    except ValueError:
        counts["cli_root_unreadable"] += 1
        return None
    refs = [v.hex() for n, v in fields if n == 1 and isinstance(v, bytes) and len(v) == 32]
    if not refs:
        return None if _message(data) is None else [_message(data)]  # type: ignore[list-item]
    messages: list[dict[str, Any]] = []
    for ref in refs:
        blob = _blob(conn, ref)
        if blob is None:
            counts["cli_blobs_missing"] += 1
            continue
        message = _message(blob)
        if message is None:
            counts["cli_blobs_not_messages"] += 1
            continue
        messages.append(message)
    return messages


def _as_written(conn: sqlite3.Connection, counts: Counter[str]) -> list[dict[str, Any]]:
    """Every JSON message blob in the order it was written (no readable root)."""
    messages: list[dict[str, Any]] = []
    for (data,) in conn.execute("SELECT data FROM blobs ORDER BY rowid"):
        if data is None:
            continue
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
        message = _message(raw)
        if message is not None:
            messages.append(message)
        elif raw.lstrip()[:1] == b"{":
            counts["cli_blobs_invalid"] += 1
    return messages


def read_store(conn: sqlite3.Connection, path: Path, counts: Counter[str]) -> CliStore:
    meta = read_meta(conn, path)
    store = CliStore(meta)
    root = as_str(meta.get("latestRootBlobId"))
    found = _from_root(conn, root, counts) if root and _HEX.match(root) else None
    if found is None:
        store.order = "written"
        found = _as_written(conn, counts)
    store.messages = found
    return store


def created_at(meta: dict[str, Any]) -> Any:
    value = meta.get("createdAt")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return to_utc(value)


def cwd_matches(cwd: str, project_hash: str) -> bool:
    """Whether `cwd` is the folder the chat's directory name hashes (md5 of the path)."""
    return hashlib.md5(cwd.encode("utf-8")).hexdigest() == project_hash.lower()  # noqa: S324
