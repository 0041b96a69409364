"""Reading one Gemini CLI chat file into its session facts and final message list.

Two forms. Legacy `.json` (<= 0.38): one object `{sessionId, projectHash, startTime,
lastUpdated, messages, summary?, directories?, kind?}`, rewritten whole on every change. Current
`.jsonl` (0.39+): an append-only log replayed the way the CLI's loader does:
- a header line `{sessionId, projectHash, ...}` (merged into the facts);
- message lines (any object with a string `id`): a later line with the same id REPLACES the
  earlier one and keeps its place;
- `{"$set": {...}}` lines merged into the facts; a `$set.messages` replaces the whole list;
- `{"$rewindTo": id}` drops that message and every later one (all of them if the id is unknown).
A JSONL without a header line is read as a legacy object, as the CLI does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex.models.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonfile import read_json
from chinvex_adapters.kit.jsonl import read_jsonl
from chinvex_adapters.kit.sniff import first_objects, head_bytes, json_shape

LABEL = "Gemini CLI session"
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})


@dataclass
class Session:
    facts: dict[str, Any]
    messages: list[dict[str, Any]]
    form: str  # json | jsonl
    partial_tail: bool = False
    rewinds: int = 0
    replaced_lists: int = 0
    upserts: int = 0


# -- sniffing ------------------------------------------------------------------------------

def _header(record: dict[str, Any]) -> bool:
    return isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)


def _message_line(record: dict[str, Any]) -> bool:
    return (isinstance(record.get("id"), str) and record.get("type") in MESSAGE_TYPES
            and "content" in record and "uuid" not in record and "message" not in record)


def _foreign(record: dict[str, Any]) -> bool:
    """A record of another agent's JSONL (Claude Code and Qwen Code envelopes)."""
    return "uuid" in record or "parentUuid" in record or isinstance(record.get("message"), dict)


def sniff(path: Path) -> str | None:
    """None when the file is a Gemini CLI chat, else why not (a few words)."""
    head = head_bytes(path, 64 * 1024)
    if not head.strip():
        return "empty file"
    shape = json_shape(head)
    if shape.kind == "object" and {"sessionId", "projectHash", "messages"} <= set(shape.keys):
        return None  # a legacy chat (also a pretty-printed one named .jsonl)
    if shape.kind == "array":
        return "a JSON array (Gemini CLI's logs.json is one), not a chat"
    records = first_objects(path, 6)
    if not records:
        return "no JSON object"
    if any(_foreign(r) for r in records):
        return "records carry another agent's envelope (uuid/message)"
    first = records[0]
    if _header(first) and "id" not in first:
        return None
    if any("$set" in r or "$rewindTo" in r for r in records) and any(_message_line(r) for r in records):
        return None
    return "no sessionId/projectHash header and no Gemini message records"


# -- loading -------------------------------------------------------------------------------

def load(path: Path, counts: Counter[str]) -> Session:
    """The session of a chat file. OSError: SourceError. Not a chat: UnrecognisedSource."""
    if path.name.endswith(".jsonl"):
        session = _load_jsonl(path, counts)
        if session is not None:
            return session
    return _load_legacy(path, counts)


def _load_legacy(path: Path, counts: Counter[str]) -> Session:
    data = read_json(path, LABEL)
    if not isinstance(data, dict):
        raise UnrecognisedSource(f"{path}: not a {LABEL} (a JSON {type(data).__name__}, not an object)")
    if not isinstance(data.get("messages"), list) or not isinstance(data.get("sessionId"), str):
        raise UnrecognisedSource(f"{path}: not a {LABEL} (no sessionId and messages list)")
    messages = _messages(data["messages"], counts)
    facts = {k: v for k, v in data.items() if k != "messages"}
    return Session(facts=facts, messages=messages, form="json")


def _messages(items: list[Any], counts: Counter[str]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        if isinstance(item, dict):
            out.append(item)
        else:
            counts["messages_not_objects"] += 1
    return out


def _load_jsonl(path: Path, counts: Counter[str]) -> Session | None:
    """The replayed log; None when the file has no header line (read as a legacy object)."""
    try:
        read = read_jsonl(path, counts)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    facts: dict[str, Any] = {}
    by_id: dict[str, dict[str, Any]] = {}
    session = Session(facts=facts, messages=[], form="jsonl", partial_tail=read.partial_tail)
    for line in read.lines:
        record = line.data
        if isinstance(record.get("$rewindTo"), str):
            _rewind(by_id, record["$rewindTo"])
            session.rewinds += 1
        elif isinstance(record.get("id"), str):
            if record["id"] in by_id:
                session.upserts += 1
            by_id[record["id"]] = record
        elif isinstance(record.get("$set"), dict):
            update = record["$set"]
            if isinstance(update.get("messages"), list):
                by_id.clear()
                for message in _messages(update["messages"], counts):
                    if isinstance(message.get("id"), str):
                        by_id[message["id"]] = message
                session.replaced_lists += 1
            facts.update({k: v for k, v in update.items() if k != "messages"})
        elif _header(record):
            facts.update({k: v for k, v in record.items() if k != "messages"})
            if isinstance(record.get("messages"), list):
                for message in _messages(record["messages"], counts):
                    if isinstance(message.get("id"), str):
                        by_id[message["id"]] = message
        else:
            counts["lines_unknown"] += 1
    if not _header(facts):
        if read.lines:
            raise UnrecognisedSource(f"{path}: not a {LABEL} (no sessionId/projectHash header line)")
        if read.non_blank == 0 and not read.partial_tail:
            raise UnrecognisedSource(f"{path}: not a {LABEL} (empty file)")
        return None  # not JSONL at all: maybe a whole legacy object
    session.messages = list(by_id.values())
    return session


def _rewind(by_id: dict[str, dict[str, Any]], target: str) -> None:
    """`/rewind`: the target message and every later one go; all of them when it is unknown."""
    if target not in by_id:
        by_id.clear()
        return
    ids = list(by_id)
    for message_id in ids[ids.index(target):]:
        del by_id[message_id]
