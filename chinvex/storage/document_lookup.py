"""Finding indexed documents by a piece of their source uri (`chinvex eval` maps a golden
file's expected paths to the documents, and their source types, the index holds)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator


def documents_with_uri_containing(conn: sqlite3.Connection, fragment: str,
                                  limit: int = 200) -> Iterator[tuple[str, str]]:
    """(source_uri, source_type) of up to `limit` documents whose source uri contains
    `fragment` (a LIKE match: case-insensitive for ASCII), read lazily."""
    rows = conn.execute(
        "SELECT source_uri, source_type FROM documents WHERE source_uri LIKE ? LIMIT ?",
        (f"%{fragment}%", limit),
    )
    yield from ((r[0], r[1]) for r in rows)
