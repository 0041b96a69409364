"""Reading goose's `sessions.db` while goose may be writing it (opened as kit.sqlite opens
every agent's store: read-only, WAL log included, a locked database retried next run).

The schema grew from version 1 to 13 by added columns: each query selects the columns this
database has (`PRAGMA table_info`) and NULL for the others.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex_adapters.kit import sqlite
from chinvex_adapters.kit.sqlite import columns, is_sqlite  # noqa: F401  (used by the adapter)

LABEL = "goose sessions database"

SESSION_COLUMNS = ("id", "name", "description", "user_set_name", "session_type", "working_dir",
                   "created_at", "updated_at", "extension_data", "total_tokens", "input_tokens",
                   "output_tokens", "accumulated_total_tokens", "accumulated_input_tokens",
                   "accumulated_output_tokens", "schedule_id", "recipe_json", "provider_name",
                   "model_config_json", "goose_mode", "thread_id", "archived_at", "project_id",
                   "accumulated_cost")
"""Every column of `sessions` a conversation uses, whichever schema version added it."""
MESSAGE_COLUMNS = ("id", "role", "content_json", "created_timestamp", "metadata_json", "message_id")


def read_only(path: Path) -> AbstractContextManager[sqlite3.Connection]:
    """A read-only connection to a goose database (checked to be one), closed after use."""
    return sqlite.read_only(path, f"a {LABEL}", writer="goose", check=why_not_goose)


def why_not_goose(conn: sqlite3.Connection) -> str:
    """"" when the database has goose's session tables, else what it lacks. OpenCode's
    database has `session`/`message`/`part`, Crush's `sessions`/`messages` with `parts`."""
    if not {"sessions", "messages"} <= sqlite.tables(conn):
        return "no sessions and messages tables"
    if not {"content_json", "session_id", "role"} <= columns(conn, "messages"):
        return "its messages table has no content_json"
    if "working_dir" not in columns(conn, "sessions"):
        return "its sessions table has no working_dir"
    return ""


def schema_version(conn: sqlite3.Connection) -> int | None:
    try:
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    except sqlite3.OperationalError:
        return None  # version 0: the table came with migration 1
    return row[0] if row and isinstance(row[0], int) else None


def _select(conn: sqlite3.Connection, table: str, wanted: tuple[str, ...], alias: str = "") -> str:
    have = columns(conn, table)
    prefix = f"{alias}." if alias else ""
    return ", ".join(f"{prefix}{c}" if c in have else f"NULL AS {c}" for c in wanted)


@dataclass
class SessionRow:
    """A session as listed: enough to decide whether it changed, without its messages."""

    session_id: str
    updated_at: Any
    created_at: Any
    messages: int
    last_row: int | None


def list_sessions(conn: sqlite3.Connection) -> list[SessionRow]:
    """Every session with its message count and last message row (one pass over the index of
    messages by session)."""
    sql = ("SELECT s.id, s.updated_at, s.created_at, m.n, m.last_row FROM sessions s LEFT JOIN "
           "(SELECT session_id, COUNT(*) AS n, MAX(id) AS last_row FROM messages GROUP BY session_id) m "
           "ON m.session_id = s.id ORDER BY s.id")
    found: list[SessionRow] = []
    for sid, updated, created, count, last in conn.execute(sql):
        if sid is None:
            continue
        found.append(SessionRow(str(sid), updated, created, int(count or 0),
                                last if isinstance(last, int) else None))
    return found


def session_row(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    sql = f"SELECT {_select(conn, 'sessions', SESSION_COLUMNS)} FROM sessions WHERE id = ?"
    cursor = conn.execute(sql, (session_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cursor.description], row))


def message_rows(conn: sqlite3.Connection, session_id: str) -> Iterator[dict[str, Any]]:
    """A session's message rows in the order goose wrote them (row order: goose rewrites a
    compacted conversation in order, so insertion order is conversation order)."""
    sql = (f"SELECT {_select(conn, 'messages', MESSAGE_COLUMNS)} FROM messages "
           "WHERE session_id = ? ORDER BY id")
    cursor = conn.execute(sql, (session_id,))
    names = [d[0] for d in cursor.description]
    for row in cursor:
        yield dict(zip(names, row))
