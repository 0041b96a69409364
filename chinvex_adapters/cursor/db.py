"""Reading Cursor's SQLite databases while Cursor may be writing them (opened as kit.sqlite
opens every agent's store: read-only, WAL log included, a locked database retried next run),
and the JSON values Cursor stores in them."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from chinvex_adapters.kit import sqlite
from chinvex_adapters.kit.jsonl import loads_lenient
from chinvex_adapters.kit.sqlite import is_sqlite, one_line, tables  # noqa: F401  (used beside)


def read_only(path: Path, label: str) -> AbstractContextManager[sqlite3.Connection]:
    """A read-only connection to the Cursor database at `path` (kit.sqlite), closed after use."""
    return sqlite.read_only(path, label, writer="Cursor")


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
