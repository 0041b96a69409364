"""MCP `recall_context` (RECALL spec v0.3 §3.5): what the knowledge base knows about one file.

Before editing a file an agent wants, in one call: the file's own indexed chunks (its
definitions and where they are), the docs and notes that mention it, the sessions and chats that
read or changed it (their tool calls and patches name the path), and the decisions recorded
about it (`recall_add` items whose `related_files` name it, or whose text does).

"Mentions" are found by the file's name in the full-text index (a phrase query on its words),
then confirmed by the literal name in the chunk's text, so `api.py` does not match every chunk
saying "api". A path given relative is taken from the server's working directory, then from
each source folder of the project context.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from chinvex.files.walk import within
from chinvex.mcp import limits
from chinvex.mcp.arguments import file_candidates, source_folders
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.state import ServerState
from chinvex.memory.items import list_memories
from chinvex.memory.vocabulary import CONVERSATION_SOURCE_TYPES
from chinvex.storage.documents_by_origin import document_for_path
from chinvex.storage.recall_reads import chunk_outline, phrase_matches

SECTION_LIMIT = 10
SNIPPET_CHARS = 240
CONTEXT_TYPES = ("related_code", "documentation", "adrs", "recent_changes", "ownership")
DEFAULT_TYPES = ("related_code", "documentation", "adrs")
MENTION_SCAN = 400
RECENT_DAYS = 14


def _own_document(conn: sqlite3.Connection, paths: list[Path]) -> sqlite3.Row | None:
    for path in paths:
        row = document_for_path(conn, str(path))
        if row is not None:
            return row
    return None


def _snippet(text: str, needle: str) -> str:
    at = text.find(needle)
    start = max(0, at - SNIPPET_CHARS // 3) if at >= 0 else 0
    piece = text[start:start + SNIPPET_CHARS].replace("\n", " ").strip()
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(text) else "")


def _mentions(conn: sqlite3.Connection, name: str, exclude_doc: str | None) -> list[dict[str, Any]]:
    """Chunks whose text names the file, best BM25 first, one entry per document."""
    from chinvex.retrieval.lexical import phrase, query_terms

    words = [w for w in query_terms(name) if w]
    if not words:
        return []
    expression = phrase(" ".join(words))
    rows = phrase_matches(conn, expression, MENTION_SCAN)
    seen: set[str] = set()
    out = []
    for row in rows:
        if row["doc_id"] == exclude_doc or row["doc_id"] in seen or name not in row["text"]:
            continue
        seen.add(row["doc_id"])
        meta = orjson.loads(row["metadata_json"] or "{}")
        doc_meta = orjson.loads(row["doc_meta"] or "{}")
        out.append({"chunk_id": row["chunk_id"], "doc_id": row["doc_id"], "source_type": row["source_type"],
                    "title": row["title"], "where": doc_meta.get("path") or meta.get("path") or row["source_uri"],
                    "lines": [row["line_start"], row["line_end"]] if row["line_start"] is not None else None,
                    "turns": [meta.get("turn_start"), meta.get("turn_end")] if meta.get("turn_start") is not None else None,
                    "updated_at": row["updated_at"], "snippet": _snippet(row["text"], name)})
    return out


def _decisions(conn: sqlite3.Connection, rel: str, name: str) -> list[dict[str, Any]]:
    out = []
    for item in list_memories(conn):
        related = [str(f) for f in item.metadata.get("related_files") or []]
        named = any(f == rel or f.endswith("/" + rel) or Path(f).name == name for f in related)
        if named or name in item.content or name in item.title:
            out.append({"id": item.item_id, "type": item.type, "title": item.title, "scope": item.scope,
                        "updated_at": item.updated_at, "via": "related_files" if named else "text",
                        "snippet": _snippet(item.content, name)})
    return out


def _recent_sessions(conn: sqlite3.Connection, config: Any, path: Path) -> list[dict[str, Any]]:
    """The recent session history (the EDI briefing's): the sessions of the last RECENT_DAYS of
    activity in the file's repository, newest first, with what each was asked and which files it
    edited, and the repository's commits between them. A session belongs to the repository when
    it ran in it, in a folder of the same name (another clone), or edited a file in it; without a
    repository, every session of the context counts. "Recent" ends at the newest of them, so a
    project picked up again after a month still shows what was last done in it."""
    from datetime import timedelta

    from chinvex.blame import git
    from chinvex.blame.timeline import timeline
    from chinvex.timeutil import iso_z, to_utc

    root = git.repo_root(path) if path.parent.exists() else None
    found = timeline(conn, context=config.name, repos=[], since=None, until=None, limit=500, commits_too=False)
    sessions = [e for day in found["days"] for e in day["events"] if _in_repository(e, root)]
    if not sessions:
        return []
    end = to_utc(max(e["time"] or "" for e in sessions))
    since = iso_z(end - timedelta(days=RECENT_DAYS)) if end is not None else None
    events = [e for e in sessions if since is None or (e["time"] or "") >= since]
    if root is not None:
        events += [{"kind": "commit", "time": c.commit.date, **c.commit.as_json()}
                   for c in git.log(root, since, None, limit=SECTION_LIMIT)]
    events.sort(key=lambda e: e["time"] or "", reverse=True)
    out = []
    for event in events[:SECTION_LIMIT]:
        if event["kind"] == "session":
            out.append({"kind": "session", "time": event["time"], "agent": event["agent"],
                        "session_id": event["session_id"], "title": event["title"],
                        "first_request": event["first_request"], "files_edited": event["files_edited"][:10]})
        else:
            out.append({"kind": "commit", "time": event["time"], "sha": event["sha"][:10],
                        "author": event["author"], "subject": event["subject"]})
    return out


def _in_repository(event: dict[str, Any], root: Path | None) -> bool:
    if root is None:
        return True
    project = event.get("project")
    if project and (within(Path(project), root) or Path(project.replace("\\", "/")).name == root.name):
        return True
    return any(within(Path(f), root) for f in event.get("files_edited") or [] if f.startswith("/"))


def _ownership(conn: sqlite3.Connection, config: Any, path: Path, result: dict[str, Any]) -> dict[str, Any] | None:
    """Who wrote the file's lines: git authors and the agent sessions behind them (blame), by
    number of lines; None (with a note) when the file cannot be read."""
    from chinvex.blame.service import Target, blame_in
    from chinvex.errors import ChinvexError

    try:
        report = blame_in(conn, config, Target(path, None, None))
    except ChinvexError as exc:
        result.setdefault("notes", []).append(f"ownership: {exc.message}")
        return None
    authors: dict[str, int] = {}
    for line in report["lines"]:
        who = line["commit"]["author"] if line["commit"] else ("not committed" if report["git"] else "no git")
        authors[who] = authors.get(who, 0) + 1
    return {"lines": len(report["lines"]), "authors": dict(sorted(authors.items(), key=lambda kv: -kv[1])),
            "sessions": [{"agent": s["agent"], "session_id": s["session_id"], "title": s["title"],
                          "lines": s["line_count"], "chunk_ids": s["chunk_ids"][:3]}
                         for s in report["sessions"][:SECTION_LIMIT]],
            "lines_no_session_explains": len(report["unexplained"])}


def recall_context(state: ServerState, file_path: str, context_types: list[str] | None = None) -> dict[str, Any]:
    raw = limits.require_short("file_path", file_path, max_chars=4096)
    assert raw is not None
    wanted = limits.require_list("context_types", context_types, max_items=8, max_chars=32) or list(DEFAULT_TYPES)
    unknown = [t for t in wanted if t not in CONTEXT_TYPES]
    if unknown:
        raise ToolFailure(limits.INVALID_ARGUMENT, f"context_types: unknown {', '.join(unknown)}; "
                          f"expected {', '.join(CONTEXT_TYPES)}")
    config = state.project()
    roots = source_folders(config)
    candidates = file_candidates(raw, state.cwd, roots)
    h = state.handle(config)
    with h.lock:
        own = _own_document(h.conn, candidates)
        path = Path(own["origin_uri"]) if own is not None else candidates[0]
        rel = next((str(path.relative_to(r)) for r in roots if within(path, r)), path.name)
        name = path.name
        result: dict[str, Any] = {"file_path": str(path), "relative_path": rel, "context": config.name,
                                  "indexed": own is not None}
        if "related_code" in wanted:
            chunks = [] if own is None else chunk_outline(h.conn, own["doc_id"])
            result["file_chunks"] = [
                {"chunk_id": c["chunk_id"], "lines": [c["line_start"], c["line_end"]],
                 "header": orjson.loads(c["metadata_json"] or "{}").get("header"),
                 "first_line": next((l.strip() for l in c["text"].splitlines() if l.strip()), "")[:160]}
                for c in chunks][:50]
        mentions = _mentions(h.conn, name, own["doc_id"] if own is not None else None)
        if "documentation" in wanted:
            result["mentioned_in_docs"] = [m for m in mentions
                                           if m["source_type"] in ("repo", "note") and m["lines"] is not None
                                           ][:SECTION_LIMIT]
        if "recent_changes" in wanted or "related_code" in wanted:
            sessions = [m for m in mentions if m["source_type"] in CONVERSATION_SOURCE_TYPES]
            sessions.sort(key=lambda m: (m["updated_at"] or ""), reverse=True)
            result["sessions"] = sessions[:SECTION_LIMIT]
        if "recent_changes" in wanted:
            result["recent_sessions"] = _recent_sessions(h.conn, config, path)
        if "adrs" in wanted:
            result["decisions"] = _decisions(h.conn, rel, name)[:SECTION_LIMIT]
        if "ownership" in wanted:
            result["ownership"] = _ownership(h.conn, config, path, result)
    if own is None:
        result.setdefault("notes", []).append(
            f"{path} is not indexed in context {config.name}; mentions of {name!r} are listed anyway")
    return result
