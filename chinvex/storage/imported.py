"""The `imported_sources` table: which sources of a context came in through `chinvex import`.

An ingest removes a source that is no longer found under the context's roots; an imported source
usually has no root in this context at all (the export came from another machine or context), so
without this record the first ingest after an import would delete everything imported. Imported
sources whose root is not one of the context's stay until `chinvex rm` removes them or the user
adds their folder (from then on the ingest owns them like any other source).
"""

from __future__ import annotations

import sqlite3


def record(conn: sqlite3.Connection, context: str, source_uri: str, source_root: str | None,
           from_context: str | None, stamp: str) -> None:
    conn.execute("INSERT INTO imported_sources(source_uri, context_name, source_root, from_context, imported_at) "
                 "VALUES(?,?,?,?,?) ON CONFLICT(source_uri, context_name) DO UPDATE SET "
                 "source_root=excluded.source_root, from_context=excluded.from_context, "
                 "imported_at=excluded.imported_at", (source_uri, context, source_root, from_context, stamp))


def imported(conn: sqlite3.Connection, context: str) -> dict[str, str | None]:
    """source uri -> its recorded root, for the sources imported into `context`."""
    return dict(conn.execute("SELECT source_uri, source_root FROM imported_sources WHERE context_name=?",
                             (context,)).fetchall())
