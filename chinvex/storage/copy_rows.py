"""Copying rows out of a damaged hybrid.db (`doctor --repair`): the collection name and, table
by table, every row that can still be read."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass


@dataclass
class CopiedTable:
    """How many rows of a table were copied, and why the rest could not be read (None: all)."""

    copied: int = 0
    error: str | None = None


def old_collection_name(old: sqlite3.Connection) -> str | None:
    """The Chroma collection the damaged file names, when that row is still readable."""
    try:
        row = old.execute("SELECT value FROM meta WHERE key='chroma_collection'").fetchone()
    except sqlite3.Error:
        return None
    return str(row[0]) if row else None


def copy_table(old: sqlite3.Connection, conn: sqlite3.Connection, table: str, *,
               cleared_column: str | None = None) -> CopiedTable:
    """Copy `table`'s readable rows from `old` into `conn` (same columns; rows already there are
    kept), with `cleared_column` set to NULL. Row by row in one transaction that is committed even
    when reading fails part way, so unreadable later pages do not take earlier rows with them."""
    columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    result = CopiedTable()
    try:
        cursor = old.execute(f"SELECT {', '.join(columns)} FROM {table}")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for values in cursor:
                values = list(values)
                if cleared_column is not None:
                    values[columns.index(cleared_column)] = None
                conn.execute(f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) "
                             f"VALUES({', '.join('?' * len(columns))})", values)
                result.copied += 1
        finally:
            conn.execute("COMMIT")
    except sqlite3.Error as exc:
        result.error = str(exc)
    return result
