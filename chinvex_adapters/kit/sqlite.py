"""Reading an agent's SQLite store while the agent may be writing it (Cursor, OpenCode, goose).

Opened read-only through a `file:` URI with a busy timeout, so chinvex never takes a write lock;
a database in WAL mode is read with its log (recent writes live there until a checkpoint). A
lock that outlasts a few tries is a SourceError (read again next run); a file that is not
SQLite, or not the agent's schema, is UnrecognisedSource. When the folder does not let a reader
create the shared-memory file a WAL database needs, the database and its log are copied to a
scratch folder and the copy is read. Text columns with bad UTF-8 are decoded leniently, so one
bad row cannot fail a whole store.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from chinvex.models.sources import SourceError, UnrecognisedSource

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 3.0
RETRIES = 3
COPY_LIMIT = 1024 * 1024 * 1024
"""Largest database copied when it cannot be opened in place."""


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def one_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}  # table names are ours


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S,
                           check_same_thread=False)
    conn.text_factory = _text
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


def _cannot_open(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "unable to open" in text or "readonly" in text or "read-only" in text


def _copy(path: Path, into: Path, why: sqlite3.Error) -> Path:
    """The database and its write-ahead log, copied together."""
    try:
        if path.stat().st_size > COPY_LIMIT:
            raise SourceError(f"{path}: cannot open read-only ({one_line(why)}) and too large to copy")
        target = into / path.name
        shutil.copyfile(path, target)
        wal = Path(f"{path}-wal")
        if wal.exists():
            shutil.copyfile(wal, Path(f"{target}-wal"))
        return target
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _open(path: Path, scratch: list[str]) -> sqlite3.Connection:
    for attempt in range(RETRIES):
        try:
            return _connect(path)
        except sqlite3.OperationalError as exc:
            if _locked(exc) and attempt + 1 < RETRIES:
                time.sleep(0.2 * (attempt + 1))
                continue
            if _cannot_open(exc) and not scratch:
                scratch.append(tempfile.mkdtemp(prefix="chinvex-sqlite-"))
                return _connect(_copy(path, Path(scratch[0]), exc))
            raise
    raise AssertionError("unreachable")


@contextmanager
def read_only(path: Path, label: str, *, writer: str = "another program",
              check: Callable[[sqlite3.Connection], str | None] | None = None
              ) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the `label` at `path` (e.g. "an OpenCode database"), closed
    after use. `check` says why a database is not of the expected schema (None or "" when it
    is). Every error is one line naming the file."""
    if not path.is_file():
        raise SourceError(f"{path}: disappeared before it could be read")
    if not is_sqlite(path):
        raise UnrecognisedSource(f"{path}: not {label} (not a SQLite database)")
    conn: sqlite3.Connection | None = None
    scratch: list[str] = []
    try:
        conn = _open(path, scratch)
        why = check(conn) if check is not None else None
        if why:
            raise UnrecognisedSource(f"{path}: not {label} ({why})")
        yield conn
    except sqlite3.OperationalError as exc:
        if _locked(exc):
            raise SourceError(f"{path}: database is locked ({writer} is writing it); read again next run") from None
        raise SourceError(f"{path}: cannot read: {one_line(exc)}") from None
    except sqlite3.DatabaseError as exc:
        raise UnrecognisedSource(f"{path}: not a readable {label.split(' ', 1)[-1]} ({one_line(exc)})") from None
    finally:
        if conn is not None:
            conn.close()
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)
