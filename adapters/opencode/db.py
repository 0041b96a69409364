"""OpenCode's SQLite store (`opencode.db`, `opencode-<channel>.db`, OpenCode >= 1.2): opening it
while OpenCode may be writing it, telling it from other agents' databases, listing its sessions
cheaply and reading one session's rows.

The database runs in WAL mode and is live: it is opened read-only through a `file:` URI with a
busy timeout, so recent writes in `-wal` are seen and nothing is ever written. A database that
stays locked is a SourceError (retried next run); when the folder does not let a reader create
the shared-memory file, the database and its log are copied and the copy is read. Every read of
one session runs in one read transaction, so its messages and parts are one consistent snapshot.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonl import loads_lenient

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 2.0
LOCK_RETRIES = 3
COPY_LIMIT = 1024 * 1024 * 1024
"""Largest database copied when it cannot be opened in place."""
LABEL = "an OpenCode database"

NEEDED = {
    "session": {"id", "directory", "title", "time_created", "time_updated"},
    "message": {"id", "session_id", "data"},
    "part": {"id", "message_id", "data"},
}
"""Tables and columns every OpenCode schema since 1.2 has (forks such as Kilo CLI keep them)."""


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def one_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _connect(path: Path) -> sqlite3.Connection:
    uri = path.absolute().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
    conn.text_factory = _text  # a row with bad UTF-8 must not fail its whole session
    try:
        conn.execute("PRAGMA query_only=1")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _copy(path: Path) -> tuple[Path, str]:
    """The database and its write-ahead log copied to a scratch folder (for a folder a reader
    may not write its shared-memory file into)."""
    size = path.stat().st_size
    if size > COPY_LIMIT:
        raise SourceError(f"{path}: cannot be opened in place and is too large to copy ({size:,} bytes)")
    scratch = tempfile.mkdtemp(prefix="chinvex-opencode-")
    target = Path(scratch) / path.name
    try:
        shutil.copyfile(path, target)
        wal = path.with_name(path.name + "-wal")
        if wal.is_file():
            shutil.copyfile(wal, target.with_name(target.name + "-wal"))
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return target, scratch


def _open(path: Path) -> tuple[sqlite3.Connection, str | None]:
    """A connection (and the scratch folder to remove, when a copy is read)."""
    for attempt in range(LOCK_RETRIES):
        try:
            return _connect(path), None
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if "locked" in text or "busy" in text:
                if attempt + 1 < LOCK_RETRIES:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                raise SourceError(f"{path}: database is locked by another program ({one_line(exc)})") from None
            if "unable to open" in text or "readonly" in text or "read-only" in text:
                break
            raise SourceError(f"{path}: cannot open: {one_line(exc)}") from None
        except sqlite3.DatabaseError as exc:
            raise UnrecognisedSource(f"{path}: not {LABEL} ({one_line(exc)})") from None
    try:
        copy, scratch = _copy(path)
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return _connect(copy), scratch
    except sqlite3.Error as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise SourceError(f"{path}: cannot open (even as a copy): {one_line(exc)}") from None


@contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to an OpenCode database, closed after use. Not SQLite, or not
    OpenCode's schema: UnrecognisedSource; unreadable or locked: SourceError."""
    if not path.is_file():
        raise SourceError(f"{path}: disappeared before it could be read")
    if not is_sqlite(path):
        raise UnrecognisedSource(f"{path}: not {LABEL} (not a SQLite database)")
    conn, scratch = _open(path)
    try:
        why = why_not_opencode(conn)
        if why:
            raise UnrecognisedSource(f"{path}: not {LABEL} ({why})")
        yield conn
    except sqlite3.DatabaseError as exc:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            raise SourceError(f"{path}: database is locked by another program ({one_line(exc)})") from None
        if "malformed" in text or "not a database" in text:
            raise UnrecognisedSource(f"{path}: not a readable OpenCode database ({one_line(exc)})") from None
        raise SourceError(f"{path}: cannot read: {one_line(exc)}") from None
    finally:
        conn.close()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}  # names are ours


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
