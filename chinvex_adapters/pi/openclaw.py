"""What OpenClaw adds to pi's transcripts: the gateway's wrapping of user text, the store
index beside the transcripts (`sessions.json`: session key, channel, label), and the records
that tell an OpenClaw transcript from a pi one when its path does not.

The gateway prefixes what a user sends with its own metadata: `[Mon 2026-03-02 22:52 UTC] `
(the time the message arrived) or `Conversation info (untrusted metadata):` / `Sender (untrusted
metadata):` followed by a fenced JSON block. That is not what the user wrote: it moves from
the text to the turn's metadata.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chinvex_adapters.kit.jsonl import loads_lenient
from chinvex_adapters.kit.text import as_str, json_safe

_STAMP = re.compile(r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2} \d{1,2}:\d{2}"
                    r"(?::\d{2})?(?: [A-Za-z]{1,5}(?:[+-]\d{1,2}(?::?\d{2})?)?)?\] ?")
_ENVELOPE = re.compile(r"\A\s*[A-Z][\w ]{0,60} \(untrusted metadata\):\s*\n```(?:json)?\n(.*?)\n```[ \t]*\n*",
                       re.S)
MAX_ENVELOPE = 4000
MAX_STORE_BYTES = 64 * 1024 * 1024
STORE_KEYS = ("label", "displayName", "subject", "chatType", "channel", "lastChannel", "groupId",
              "spawnedBy", "model", "modelProvider", "updatedAt", "compactionCount",
              "abortedLastRun")


def unwrap(text: str) -> tuple[str, dict[str, Any]]:
    """The user's own words and what the gateway wrapped them in (`{}` when nothing)."""
    if not text or (text[0] != "[" and "(untrusted metadata):" not in text[:200]):
        return text, {}
    found: dict[str, Any] = {}
    blocks: list[Any] = []
    while True:
        match = _ENVELOPE.match(text)
        if match is None:
            break
        raw = match.group(1)
        try:
            blocks.append(loads_lenient(raw.encode("utf-8")))
        except (ValueError, RecursionError):
            blocks.append(raw[:MAX_ENVELOPE])
        text = text[match.end():]
    if blocks:
        found["envelope"] = json_safe(blocks)
    stamp = _STAMP.match(text)
    if stamp is not None:
        found["gateway_time"] = stamp.group(0).strip()[1:-1]
        text = text[stamp.end():]
    return text, found


def openclaw_marker(data: dict[str, Any]) -> bool:
    """A record only OpenClaw writes (its custom entries, its gateway's own replies)."""
    kind = data.get("type")
    if kind in ("custom", "custom_message"):
        custom = data.get("customType")
        return isinstance(custom, str) and (custom == "model-snapshot" or custom.startswith("openclaw"))
    if kind == "message":
        message = data.get("message")
        return isinstance(message, dict) and message.get("provider") == "openclaw"
    return False


@dataclass
class StoreIndex:
    """`sessions.json` of one sessions folder: session id -> its key and a few facts."""

    mtime_ns: int
    size: int
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)


class SessionStores:
    """The store index of each sessions folder, read once per version of the file."""

    def __init__(self) -> None:
        self._cache: dict[str, StoreIndex] = {}

    def entry(self, transcript: Path, session_id: str) -> dict[str, Any]:
        """The store's facts about a session (`{}` when there is no readable index)."""
        store = transcript.parent / "sessions.json"
        try:
            st = store.stat()
        except OSError:
            return {}
        if st.st_size > MAX_STORE_BYTES:
            return {}
        cached = self._cache.get(str(store))
        if cached is None or cached.mtime_ns != st.st_mtime_ns or cached.size != st.st_size:
            cached = _read_store(store, st.st_mtime_ns, st.st_size)
            self._cache[str(store)] = cached
        return cached.by_id.get(session_id) or cached.by_id.get(transcript.name) or {}


def _read_store(store: Path, mtime_ns: int, size: int) -> StoreIndex:
    index = StoreIndex(mtime_ns, size)
    try:
        data = loads_lenient(store.read_bytes())
    except (OSError, ValueError, RecursionError):
        return index
    if not isinstance(data, dict):
        return index
    for key, value in data.items():
        if not isinstance(value, dict):
            continue
        facts: dict[str, Any] = {"session_key": key}
        for name in STORE_KEYS:
            if value.get(name) not in (None, ""):
                facts[name] = value[name]
        origin = value.get("origin")
        if isinstance(origin, dict):
            facts["origin"] = {k: origin[k] for k in ("label", "provider", "surface", "chatType")
                               if isinstance(origin.get(k), str)}
        session_id = as_str(value.get("sessionId"))
        if session_id:
            index.by_id.setdefault(session_id, facts)
        session_file = as_str(value.get("sessionFile"))
        if session_file:
            index.by_id.setdefault(session_file.replace("\\", "/").rsplit("/", 1)[-1], facts)
    return index


def store_title(facts: dict[str, Any]) -> str | None:
    """A name the user or the channel gave the session."""
    for key in ("label", "displayName", "subject"):
        value = as_str(facts.get(key))
        if value:
            return value
    return None
