"""OpenCode's SQLite store (`opencode.db`, `opencode-<channel>.db`, OpenCode >= 1.2): opening it
while OpenCode may be writing it, telling it from other agents' databases, listing its sessions
cheaply and reading one session's rows.

The database runs in WAL mode and is live: it is opened as kit.sqlite opens every agent's store
(read-only, the WAL log included, a locked database retried next run). Every read of one
session runs in one read transaction, so its messages and parts are one consistent snapshot.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex_adapters.kit import sqlite
from chinvex_adapters.kit.jsonl import loads_lenient
from chinvex_adapters.kit.sqlite import columns, is_sqlite, one_line  # noqa: F401  (used beside)

LABEL = "an OpenCode database"

NEEDED = {
    "session": {"id", "directory", "title", "time_created", "time_updated"},
    "message": {"id", "session_id", "data"},
    "part": {"id", "message_id", "data"},
}
"""Tables and columns every OpenCode schema since 1.2 has (forks such as Kilo CLI keep them)."""


def read_only(path: Path) -> AbstractContextManager[sqlite3.Connection]:
    """A read-only connection to an OpenCode database (checked to be one), closed after use."""
    return sqlite.read_only(path, LABEL, writer="OpenCode", check=why_not_opencode)


def why_not_opencode(conn: sqlite3.Connection) -> str | None:
    """None for OpenCode's schema (session, message and part tables with JSON `data`), else
    what is missing. Crush (`sessions`/`messages`), Goose and Cline SDK databases have none of
    these tables."""
    for table, needed in NEEDED.items():
        have = columns(conn, table)
        if not have:
            return f"no {table} table"
        missing = sorted(needed - have)
        if missing:
            return f"its {table} table has no {', '.join(missing)} column"
    return None


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: what is read inside it is one consistent state of the database
    (OpenCode may write between two statements)."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


@dataclass
class SessionRow:
    """What enumeration needs of one session: its id, when it was updated, and a cheap change
    token (message count, last message id, part count) for writes that leave `time_updated`."""

    session_id: str
    updated_ms: int | None
    messages: int
    last_message: str | None
    parts: int
    parent_id: str | None


def list_sessions(conn: sqlite3.Connection) -> list[SessionRow]:
    """Every session with its counts, from the indexes (no message or part body is read)."""
    have = columns(conn, "session")
    parent = "parent_id" if "parent_id" in have else "NULL"
    messages = {sid: (n, last) for sid, n, last in conn.execute(
        "SELECT session_id, count(*), max(id) FROM message GROUP BY session_id")}
    parts: dict[str, int] = {}
    if "session_id" in columns(conn, "part"):
        parts = dict(conn.execute("SELECT session_id, count(*) FROM part GROUP BY session_id").fetchall())
    rows: list[SessionRow] = []
    for sid, updated, created, parent_id in conn.execute(
            f"SELECT id, time_updated, time_created, {parent} FROM session ORDER BY id"):
        if not isinstance(sid, str) or not sid:
            continue
        count, last = messages.get(sid, (0, None))
        stamp = updated if isinstance(updated, int) else created if isinstance(created, int) else None
        rows.append(SessionRow(sid, stamp, count, last, parts.get(sid, 0), parent_id))
    return rows


def _row_dict(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {d[0]: value for d, value in zip(cursor.description, row)}


def session_info(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    """The session row as OpenCode's Session.Info (the shape its JSON files have), with the
    project's worktree and name when the project row exists; None when the session is gone."""
    cursor = conn.execute("SELECT * FROM session WHERE id=?", (session_id,))
    raw = cursor.fetchone()
    if raw is None:
        return None
    row = _row_dict(cursor, raw)
    info: dict[str, Any] = {
        "id": row["id"], "projectID": row.get("project_id"), "parentID": row.get("parent_id"),
        "slug": row.get("slug"), "directory": row.get("directory"), "title": row.get("title"),
        "version": row.get("version"), "workspaceID": row.get("workspace_id"),
        "time": {"created": row.get("time_created"), "updated": row.get("time_updated"),
                 "archived": row.get("time_archived")},
        "summary": {"additions": row.get("summary_additions"), "deletions": row.get("summary_deletions"),
                    "files": row.get("summary_files")},
    }
    if row.get("share_url"):
        info["share"] = {"url": row["share_url"]}
    if row.get("agent"):
        info["agent"] = row["agent"]
    project = _project(conn, row.get("project_id"))
    if project:
        info["project"] = project
    return info


def _project(conn: sqlite3.Connection, project_id: Any) -> dict[str, Any] | None:
    if not isinstance(project_id, str) or "worktree" not in columns(conn, "project"):
        return None
    cursor = conn.execute("SELECT * FROM project WHERE id=?", (project_id,))
    raw = cursor.fetchone()
    if raw is None:
        return None
    row = _row_dict(cursor, raw)
    return {k: row[k] for k in ("worktree", "name", "vcs") if row.get(k)}


def _loads(value: Any) -> Any:
    if not isinstance(value, str | bytes):
        return None
    try:
        return loads_lenient(value.encode("utf-8") if isinstance(value, str) else value)
    except (ValueError, RecursionError):
        return None


def session_messages(conn: sqlite3.Connection, session_id: str,
                     counts: Any) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """A session's messages in OpenCode's order (creation time, then id), each with its parts
    (by id), rebuilt as the JSON objects the files hold (`id`, `sessionID`, `messageID` put
    back). A row whose `data` is not a JSON object is counted and passed over."""
    order = "time_created, id" if "time_created" in columns(conn, "message") else "id"
    # CAST: the JSON as stored bytes, parsed without a decode and re-encode in between.
    messages = conn.execute(f"SELECT id, CAST(data AS BLOB) FROM message WHERE session_id=? ORDER BY {order}",
                            (session_id,))
    for message_id, data in messages:
        info = _loads(data)
        if not isinstance(info, dict):
            counts["messages_unreadable"] += 1
            continue
        info.update(id=message_id, sessionID=session_id)
        parts: list[dict[str, Any]] = []
        for part_id, pdata in conn.execute("SELECT id, CAST(data AS BLOB) FROM part WHERE message_id=? "
                                           "ORDER BY id", (message_id,)):
            part = _loads(pdata)
            if not isinstance(part, dict):
                counts["parts_unreadable"] += 1
                continue
            part.update(id=part_id, sessionID=session_id, messageID=message_id)
            parts.append(part)
        yield info, parts
