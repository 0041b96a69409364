"""Reading goose's `sessions.db` while goose may be writing it.

The database is opened read-only through a `file:` URI with a busy timeout, so chinvex never
takes a write lock on it; a database in WAL mode is read with its log (recent messages live
there until goose checkpoints). A database that stays locked is a SourceError (read again next
run); a file that is not SQLite, or has no goose tables, is UnrecognisedSource. When the folder
does not let a reader create the shared-memory file a WAL database needs, the database and its
log are copied to a scratch folder and the copy is read.

The schema grew from version 1 to 13 by added columns: each query selects the columns this
database has (`PRAGMA table_info`) and NULL for the others.
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

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 2.0
RETRIES = 3
RETRY_PAUSE_S = 0.2
COPY_LIMIT = 1024 * 1024 * 1024
LABEL = "goose sessions database"

SESSION_COLUMNS = ("id", "name", "description", "user_set_name", "session_type", "working_dir",
                   "created_at", "updated_at", "extension_data", "total_tokens", "input_tokens",
                   "output_tokens", "accumulated_total_tokens", "accumulated_input_tokens",
                   "accumulated_output_tokens", "schedule_id", "recipe_json", "provider_name",
                   "model_config_json", "goose_mode", "thread_id", "archived_at", "project_id",
                   "accumulated_cost")
"""Every column of `sessions` a conversation uses, whichever schema version added it."""
MESSAGE_COLUMNS = ("id", "role", "content_json", "created_timestamp", "metadata_json", "message_id")


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:160]


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                           check_same_thread=False)
    try:
        conn.execute("PRAGMA query_only=1")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _locked(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _copy(path: Path, into: Path, why: sqlite3.Error) -> Path:
    """The database and its write-ahead log, copied together."""
    try:
        if path.stat().st_size > COPY_LIMIT:
            raise SourceError(f"{path}: cannot open read-only ({_first_line(why)}) and too large to copy")
        target = into / path.name
        shutil.copyfile(path, target)
        wal = Path(f"{path}-wal")
        if wal.exists():
            shutil.copyfile(wal, Path(f"{target}-wal"))
        return target
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _open(path: Path, scratch: list[str]) -> sqlite3.Connection:
    """A connection, retried while the database is locked; a copy when it cannot be opened
    in place."""
    for attempt in range(RETRIES):
        try:
            return _connect(path)
        except sqlite3.OperationalError as exc:
            if _locked(exc) and attempt + 1 < RETRIES:
                time.sleep(RETRY_PAUSE_S * (attempt + 1))
                continue
            if "unable to open" in str(exc).lower() and not scratch:
                scratch.append(tempfile.mkdtemp(prefix="chinvex-goose-"))
                return _connect(_copy(path, Path(scratch[0]), exc))
            raise
    raise AssertionError("unreachable")


@contextmanager
def read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a goose database (checked to be one), closed after use;
    every error worded as one line for the run."""
    if not path.is_file():
        raise SourceError(f"{path}: disappeared before it could be read")
    if not is_sqlite(path):
        raise UnrecognisedSource(f"{path}: not a {LABEL} (not a SQLite database)")
    conn: sqlite3.Connection | None = None
    scratch: list[str] = []
    try:
        conn = _open(path, scratch)
        why = why_not_goose(conn)
        if why:
            raise UnrecognisedSource(f"{path}: not a {LABEL} ({why})")
        yield conn
    except sqlite3.OperationalError as exc:
        if _locked(exc):
            raise SourceError(f"{path}: database is locked (goose is writing it); read again next run") from None
        raise SourceError(f"{path}: cannot read: {_first_line(exc)}") from None
    except sqlite3.DatabaseError as exc:
        raise UnrecognisedSource(f"{path}: not a readable {LABEL} ({_first_line(exc)})") from None
    finally:
        if conn is not None:
            conn.close()
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def why_not_goose(conn: sqlite3.Connection) -> str:
    """"" when the database has goose's session tables, else what it lacks. OpenCode's
    database has `session`/`message`/`part`, Crush's `sessions`/`messages` with `parts`."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not {"sessions", "messages"} <= tables:
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
