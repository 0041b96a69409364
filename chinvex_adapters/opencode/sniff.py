"""Telling OpenCode's files by content, for files handed over by other adapters and roots that
are one file: its database (OpenCode's schema, not just the name), a session file of its JSON
store (`id` "ses_…" with `projectID`/`directory`, no `role`), and `opencode export` output
(`{info, messages: [{info, parts}]}`). Message and part files alone are not sessions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from chinvex.models import ConversationDoc
from chinvex.models.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonfile import expect_object, read_json
from chinvex_adapters.kit import sqlite
from chinvex_adapters.kit.sniff import head_bytes, json_shape
from chinvex_adapters.kit.text import as_str

from . import db
from .transcript import build

HEAD = 16 * 1024
EXPORT_LABEL = "OpenCode export"


def _is_opencode_db(path: Path) -> bool:
    try:
        with db.read_only(path):
            return True
    except (SourceError, OSError):
        return False


def file_kind(path: Path) -> str | None:
    """"sqlite", "session", "export", or None when the file is none of OpenCode's."""
    head = head_bytes(path, HEAD)
    if head.startswith(sqlite.SQLITE_MAGIC):
        return "sqlite" if _is_opencode_db(path) else None
    if not head.lstrip().startswith(b"{") or b'"ses_' not in head:
        return None
    shape = json_shape(head)
    keys = set(shape.keys)
    if shape.kind != "object":
        return None
    if {"info", "messages"} <= keys:
        return "export"
    sid = shape.scalars.get("id")
    if isinstance(sid, str) and sid.startswith("ses_") and keys & {"projectID", "directory"} \
            and not keys & {"role", "sessionID", "messageID"}:
        return "session"
    return None


def export_doc(path: Path, counts: Counter[str]) -> ConversationDoc | None:
    """The conversation of an `opencode export` file."""
    data = expect_object(read_json(path, EXPORT_LABEL), path, EXPORT_LABEL, "info")
    info = data.get("info")
    messages = data.get("messages")
    if not isinstance(info, dict) or not isinstance(messages, list):
        raise UnrecognisedSource(f"{path}: not an {EXPORT_LABEL} (no info object and messages list)")
    session_id = as_str(info.get("id"))
    if not session_id:
        raise UnrecognisedSource(f"{path}: not an {EXPORT_LABEL} (its info has no session id)")

    def pairs():  # type: ignore[no-untyped-def]
        for item in messages:
            message = item.get("info") if isinstance(item, dict) else None
            if not isinstance(message, dict):
                counts["messages_unreadable"] += 1
                continue
            parts = [p for p in item.get("parts") or () if isinstance(p, dict)]
            yield message, parts

    return build(info, pairs(), counts, source_uri=str(path), thread_id=session_id, store="export",
                 location={"export": str(path)})
