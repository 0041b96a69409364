"""Opening hybrid.db: pragmas, numbered migrations, and the refusal of a newer schema.

Migrations are the files `migrations/NNNN_name.sql`, applied in order inside one transaction
each; `meta.schema_version` records the last one applied.
"""

from __future__ import annotations

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


def connect(path: Path, *, create: bool = False, readonly: bool = False) -> sqlite3.Connection:
    """Open hybrid.db with its pragmas and run pending migrations.

    Without `create`, a missing file is an error rather than a silently created empty index.
    """
    path = Path(path)
    if not create and not path.exists():
        raise StorageError(f"{path}: index not found (was the context created and ingested?)")
    try:
        if readonly:
            conn = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
            )
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StorageError(f"{path}: cannot open: {exc}") from None
    conn.row_factory = sqlite3.Row
    try:
        _apply_pragmas(conn, readonly=readonly)
        if readonly:
            version = schema_version(conn)
            if version > latest_version():
                raise SchemaTooNewError(
                    f"{path}: schema version {version} is newer than this chinvex supports "
                    f"({latest_version()}); upgrade chinvex."
                )
            if version < latest_version():
                raise StorageError(f"{path}: needs migration; run 'chinvex ingest' once.")
        else:
            migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StorageError(f"{path}: not a usable chinvex index: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def initialise(path: Path) -> None:
    conn = connect(path, create=True)
    conn.close()


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return None if row is None else str(row[0])


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
