"""MCP `recall_list` (RECALL spec v0.3 §3.4): browse what the knowledge base holds, by type.

Search needs words; an agent that wants "the ADRs of this project" or "the last five sessions"
needs a listing. Types map onto what chinvex stores:

- `code` / `documentation` (`doc`): repository files, split by language (markdown, plain text,
  reStructuredText, AsciiDoc and notes count as documentation);
- `session`: Codex sessions, Claude Code transcripts and chat exports;
- `adr` (`decision`), `playbook` (`runbook`), `pattern`, `failure`, `lesson`, `note`, and any type
  given to `recall_add`: memories of that type; for `adr`/`decision`, also repository
  and note files under a folder named `adr`, `adrs`, `decisions` or `decision-records`, the usual
  home of architecture decision records.

Every entry carries its scope label (`project` or `global`) and its context.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState
from chinvex.memory.items import list_memories
from chinvex.memory.vocabulary import (
    CONVERSATION_SOURCE_TYPES,
    MEMORY_SOURCE_TYPE,
    normalise_type,
)
from chinvex.storage.recall_reads import listed_documents

DOC_LANGUAGES = ("markdown", "text", "rst", "restructuredtext", "asciidoc", "org")
ADR_FOLDERS = ("adr", "adrs", "decisions", "decision-records")
SORTS = {"updated_at": ("updated_at", True), "created_at": ("created_at", True), "title": ("title", False)}
LIMIT_MAX = 100


def _documents(conn: sqlite3.Connection, kind: str) -> list[dict[str, Any]]:
    """Documents of one listing kind: code, doc, session or adr (files only)."""
    rows = listed_documents(conn, kind, doc_languages=DOC_LANGUAGES, adr_folders=ADR_FOLDERS,
                            conversation_types=CONVERSATION_SOURCE_TYPES)
    out = []
    for row in rows:
        meta = orjson.loads(row["metadata_json"] or "{}")
        out.append({"id": row["doc_id"], "type": "session" if kind == "session" else kind,
                    "title": row["title"] or meta.get("path") or row["source_uri"],
                    "source": meta.get("path") or row["source_uri"], "source_type": row["source_type"],
                    "created_at": row["created_at"], "updated_at": row["updated_at"], "chunks": row["chunks"],
                    **({"thread_id": meta["thread_id"]} if meta.get("thread_id") else {})})
    return out


def _items(conn: sqlite3.Connection, item_type: str) -> list[dict[str, Any]]:
    out = []
    for item in list_memories(conn, memory_type=item_type):
        out.append({"id": item.item_id, "type": item.type, "title": item.title, "source": item.uri,
                    "source_type": MEMORY_SOURCE_TYPE, "created_at": item.created_at,
                    "updated_at": item.updated_at, "tags": item.tags, "indexed": item.indexed_at is not None})
    return out


def listing_kind(value: str) -> str:
    """The RECALL type asked for, normalised (`documentation` -> `doc`, `adr` -> `decision`)."""
    return normalise_type(value)


def entries(conn: sqlite3.Connection, kind: str) -> list[dict[str, Any]]:
    if kind in ("code", "doc", "session"):
        return _documents(conn, kind)
    found = _items(conn, kind)
    if kind == "decision":
        found += [{**d, "type": "decision"} for d in _documents(conn, "adr")]
    return found


def ordered(found: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    """Sorted by `sort` (dates newest first, titles A-Z), missing values last, ties by id (pure)."""
    key, newest_first = SORTS[sort]
    present = [e for e in found if e.get(key)]
    missing = sorted((e for e in found if not e.get(key)), key=lambda e: e["id"])
    present.sort(key=lambda e: e["id"])
    present.sort(key=lambda e: str(e[key]).lower() if key == "title" else str(e[key]), reverse=newest_first)
    return present + missing


def recall_list(state: ServerState, type: str, scope: str = "project", limit: int = 20,
                sort: str = "updated_at") -> dict[str, Any]:
    from chinvex.mcp.scopes import scope_contexts

    kind = listing_kind(limits.require_short("type", type, max_chars=limits.TYPE_MAX_CHARS) or "")
    limits.require_range("limit", limit, 1, LIMIT_MAX)
    if sort not in SORTS:
        raise ToolFailure(limits.INVALID_ARGUMENT, f"sort must be one of {', '.join(SORTS)} (got {sort!r}).")
    configs, warnings = scope_contexts(state, scope)
    glob = state.global_context()
    found: list[dict[str, Any]] = []
    for config in configs:
        label = "global" if glob is not None and config.name == glob.name else "project"
        h = state.handle(config)
        with h.lock:
            found += [{**e, "context": config.name, "scope": label} for e in entries(h.conn, kind)]
    listed = ordered(found, sort)
    return {"type": kind, "scope": scope, "sort": sort, "total": len(listed), "items": listed[:limit],
            "truncated": len(listed) > limit, "warnings": warnings}
