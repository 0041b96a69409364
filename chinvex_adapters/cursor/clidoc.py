"""One cursor-agent `store.db` as a conversation (clistore reads it, messages makes the turns).

The chat's folder is named by the md5 of its working directory, which cannot be reversed: the
working directory comes from the `<user_info>` context the CLI injects in the first message,
and is checked against that hash. The only time recorded is the creation time; the database's
mtime (with its log) is when it was last written.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder

from .clistore import created_at, cwd_matches, read_store
from .messages import Facts, MessageReader, parts_of
from .usertext import parse_user_text


def _workspace(messages: list[dict[str, Any]]) -> str | None:
    for message in messages[:6]:
        if message.get("role") != "user":
            continue
        for part in parts_of(message.get("content")):
            text = part.get("text")
            if isinstance(text, str) and "<user_info>" in text:
                found = parse_user_text(text).workspace
                if found:
                    return found
    return None


def store_doc(conn: sqlite3.Connection, path: Path, report: ParseReport,
              written: datetime | None) -> ConversationDoc | None:
    store = read_store(conn, path, report.counts)
    meta = store.meta
    agent_id = as_str(meta.get("agentId")) or path.parent.name
    project_hash = path.parent.parent.name if path.parent.parent.parent.name == "chats" else None
    cwd = _workspace(store.messages)
    b = ConversationBuilder(report.counts, cwd=cwd)
    facts = Facts()
    reader = MessageReader(b, facts)
    for n, message in enumerate(store.messages):
        role = message.get("role")
        try:
            reader.add(role if isinstance(role, str) else "", message.get("content"), turn_id=f"m{n}")
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            report.counts["messages_failed"] += 1  # one odd blob must not cost the conversation
    created = created_at(meta)
    if b.turns and created is not None:
        b.turns[0].ts = created
    turns = b.finish(fallback_ts=created or written)
    model = as_str(meta.get("lastUsedModel"))
    metadata: dict[str, Any] = {"store": "cli_store", "agent_id": agent_id, "message_order": store.order,
                                "time_source": "creation time and the database's mtime (messages carry no times)"}
    for key, name in (("mode", "mode"), ("lastUsedModel", "last_used_model")):
        if as_str(meta.get(key)):
            metadata[name] = meta[key]
    if project_hash:
        metadata["project_hash"] = project_hash
        if cwd:
            metadata["cwd_verified"] = cwd_matches(cwd, project_hash)
    if facts.subagents:
        metadata["subagents"] = facts.subagents[:50]
    if facts.context_tags:
        metadata["context_tags"] = facts.context_tags
    doc = conversation(agent="cursor", source_uri=str(path), thread_id=agent_id, turns=turns,
                       title=as_str(meta.get("name")), cwd=cwd,
                       model=None if model in (None, "default") else model, metadata=metadata)
    if doc is not None and written is not None and (doc.updated_at is None or doc.updated_at < written):
        doc.updated_at = written
    return doc
