"""Reading Cursor's SQLite databases while Cursor may be writing them.

Opened read-only through a URI (never written: Cursor keeps copies of its keys in memory and
would overwrite them anyway), with a busy timeout; both databases run in WAL mode, so the
reader sees recent writes in the `-wal` file. A database that stays locked is a SourceError
(retried next run); a file that is not SQLite, or not of the expected shape, is
UnrecognisedSource. When the folder does not let a reader create the shared-memory file, the
database and its log are copied and the copy is read.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chinvex.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonl import loads_lenient

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 3.0
RETRIES = 3
COPY_LIMIT = 512 * 1024 * 1024
"""Largest database copied when it cannot be opened in place."""


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def _connect(path: Path) -> sqlite3.Connection:
    uri = path.absolute().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
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


def one_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:160]


@contextmanager
def read_only(path: Path, label: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to `path`, closed after use; errors worded for the run."""
    if not path.is_file():
        raise SourceError(f"{path}: disappeared before it could be read")
    if not is_sqlite(path):
        raise UnrecognisedSource(f"{path}: not {label} (not a SQLite database)")
    conn: sqlite3.Connection | None = None
    scratch: str | None = None
    try:
        for attempt in range(RETRIES):
            try:
                conn = _connect(path)
                break
            except sqlite3.OperationalError as exc:
                if _locked(exc) and attempt + 1 < RETRIES:
                    time.sleep(0.2 * (attempt + 1))
                    continue
                if _cannot_open(exc):
                    scratch = tempfile.mkdtemp(prefix="chinvex-cursor-")
                    conn = _connect(_copy(path, Path(scratch), exc))
                    break
                raise
        assert conn is not None
        yield conn
    except sqlite3.OperationalError as exc:
        if _locked(exc):
            raise SourceError(f"{path}: database is locked (Cursor is writing it); retried next run") from None
        raise SourceError(f"{path}: cannot read: {one_line(exc)}") from None
    except sqlite3.DatabaseError as exc:
        raise UnrecognisedSource(f"{path}: not a readable {label} ({one_line(exc)})") from None
    finally:
        if conn is not None:
            conn.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _copy(path: Path, into: Path, why: sqlite3.Error) -> Path:
    """The database and its write-ahead log copied together (read when the folder is not
    writable, so the shared-memory file cannot be made beside it)."""
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


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def decode(value: Any) -> Any:
    """A stored JSON value (TEXT or BLOB) parsed; None when it is not JSON."""
    if value is None:
        return None
    raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)
    if not raw.strip():
        return None
    try:
        return loads_lenient(raw)
    except (ValueError, RecursionError):
        return None


def text_of(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)
