"""Opening hybrid.db: pragmas, numbered migrations, and the refusal of a newer schema.

Migrations are the files `migrations/NNNN_name.sql`, applied in order inside one transaction
each; `meta.schema_version` records the last one applied.
"""

from __future__ import annotations

import errno
import re
import sqlite3
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from chinvex.errors import SchemaTooNewError, StorageError

BUSY_TIMEOUT_MS = 10_000
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    folder = resources.files("chinvex.storage") / "migrations"
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..n without gaps, found {versions}")
    return found


def latest_version() -> int:
    return len(migrations())


def _apply_pragmas(conn: sqlite3.Connection, *, readonly: bool) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if not readonly:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StorageError(f"could not switch to WAL journal mode (got {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Deleted rows are overwritten, not left in free pages: re-redacting a source after a
        # redaction upgrade must not leave the old raw text readable in the file.
        conn.execute("PRAGMA secure_delete = ON")


def schema_version(conn: sqlite3.Connection) -> int:
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
    ).fetchone()
    if not has_meta:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection, path: Path) -> int:
    """Bring the schema up to date; refuse a file written by a newer chinvex."""
    current = schema_version(conn)
    known = migrations()
    if current > len(known):
        raise SchemaTooNewError(
            f"{path}: schema version {current} is newer than this chinvex supports "
            f"({len(known)}); upgrade chinvex."
        )
    for migration in known[current:]:
        try:
            conn.execute("BEGIN IMMEDIATE")
            # Re-check under the write lock: another process may have migrated meanwhile.
            if schema_version(conn) >= migration.version:
                conn.execute("COMMIT")
                continue
            for statement in _split_sql(migration.sql):
                conn.execute(statement)
            _after(migration.version, conn)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (str(migration.version),),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return len(known)


def _after(version: int, conn: sqlite3.Connection) -> None:
    """Work a migration needs beyond SQL, in its transaction: 6 adds the file-edit tables and
    fills them from the conversations already stored."""
    if version == 6:
        from chinvex.storage.edits import backfill

        backfill(conn)


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements; triggers contain ';' so use sqlite's own completeness test."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        if not buffer and line.strip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise RuntimeError(f"incomplete SQL statement in migration: {buffer[:80]!r}")
    return statements


class DamagedIndexError(StorageError):
    """hybrid.db is not a usable database (overwritten, truncated, corrupted pages)."""


class ReadOnlyIndexError(StorageError):
    """hybrid.db or its folder may not be written."""


DAMAGE_GUIDANCE = ("run 'chinvex doctor --repair' for this context: it moves the damaged file "
                   "aside (kept, renamed with a timestamp) and rebuilds the index from the sources")


def failure_kind(exc: BaseException) -> str:
    """What an SQLite error says about the file: `damaged` (not a database, corrupt pages, a
    truncated file), `readonly` (the file or folder may not be written), `full` (disk full),
    `io` (a write refused: a file-size limit, a failing disk), else `other`. Read from the extended error name, which SQLite keeps
    stable, rather than from the English message."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text \
            or "not a database" in text:
        return "damaged"
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return "readonly"
    if name.startswith("SQLITE_FULL") or "disk is full" in text or "file too large" in text:
        return "full"
    if name.startswith("SQLITE_IOERR") or "disk i/o error" in text:
        # How SQLite reports a write refused by a file-size limit (EFBIG) or a failing disk.
        return "io"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return "full"
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "readonly"
    return "other"


def damaged_error(path: Path, exc: BaseException) -> DamagedIndexError:
    return DamagedIndexError(f"{path}: not a usable chinvex index, the file is damaged ({exc}); "
                             + DAMAGE_GUIDANCE)


def connect(path: Path, *, create: bool = False, readonly: bool = False) -> sqlite3.Connection:
    """Open hybrid.db with its pragmas and run pending migrations.

    Without `create`, a missing file is an error rather than a silently created empty index.
    An existing file that may not be written (a read-only index folder) is opened read-only
    instead of failing, so that search, stats and doctor work on it; writing through such a
    connection fails, and writers (`ingest`, `doctor --repair`) check first that they may
    write (`chinvex.storage.access`).
    """
    path = Path(path)
    if not create and not path.exists():
        raise StorageError(f"{path}: index not found (was the context created and ingested?)")
    if readonly:
        return _connect_readonly(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    except (sqlite3.Error, OSError) as exc:
        if path.exists() and failure_kind(exc) in ("readonly", "other"):
            return _connect_readonly(path)
        raise StorageError(f"{path}: cannot open: {exc}") from None
    conn.row_factory = sqlite3.Row
    try:
        _apply_pragmas(conn, readonly=False)
        migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        kind = failure_kind(exc)
        if kind == "damaged":
            raise damaged_error(path, exc) from None
        if path.exists() and (kind == "readonly" or getattr(exc, "sqlite_errorname", "").startswith("SQLITE_CANTOPEN")):
            return _connect_readonly(path)
        raise StorageError(f"{path}: not a usable chinvex index: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection. SQLite reads a WAL database read-only when it can open or create
    its `-shm` file; in a read-only folder without one it refuses ("attempt to write a readonly
    database"), and the file is then opened as immutable: nobody can write it there, so
    nothing can change under the reader."""
    uri = path.absolute().as_uri()
    last: sqlite3.Error | None = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(uri + query, uri=True, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            last = exc
            continue
        conn.row_factory = sqlite3.Row
        try:
            _apply_pragmas(conn, readonly=True)
            version = schema_version(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            last = exc
            if failure_kind(exc) == "damaged":
                raise damaged_error(path, exc) from None
            continue
        except BaseException:
            conn.close()
            raise
        if version > latest_version():
            conn.close()
            raise SchemaTooNewError(
                f"{path}: schema version {version} is newer than this chinvex supports "
                f"({latest_version()}); upgrade chinvex."
            )
        if version < latest_version():
            conn.close()
            raise StorageError(f"{path}: needs migration; run 'chinvex ingest' once.")
        return conn
    raise StorageError(f"{path}: cannot open read-only: {last}")


def initialise(path: Path) -> None:
    conn = connect(path, create=True)
    conn.close()


def like_prefix(text: str) -> str:
    """A LIKE pattern (with `ESCAPE '\\'`) matching every string that starts with `text`,
    whatever `%`, `_` or backslashes it holds."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return None if row is None else str(row[0])


def read_only_meta(sqlite_path: str | Path, keys: tuple[str, ...]) -> dict[str, str] | None:
    """The meta rows `keys` of the hybrid.db at `sqlite_path` (those present), read without
    migrating or writing anything, for a cold process that reads a store before opening the
    index as a command does; None when the file cannot be read."""
    try:
        conn = sqlite3.connect(Path(sqlite_path).absolute().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        marks = ", ".join("?" * len(keys))
        rows = conn.execute(f"SELECT key, value FROM meta WHERE key IN ({marks})", keys).fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return {str(key): str(value) for key, value in rows}


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
        (key, value),
    )


def rename_context_rows(path: Path, old: str, new: str) -> None:
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE source_fingerprints SET context_name=? WHERE context_name=?", (new, old))
        conn.execute("UPDATE ingest_runs SET context_name=? WHERE context_name=?", (new, old))
        conn.execute("COMMIT")
    finally:
        conn.close()
