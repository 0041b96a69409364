"""Memory feedback and usage counters (`feedback`, `item_stats`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from chinvex.storage import transactions


def insert_feedback(conn: sqlite3.Connection, *, feedback_id: str, item_id: str, session_id: str,
                    kind: str, useful: int | None, context: str | None, duplicate_of: str | None,
                    stamp: str) -> None:
    """Store one feedback row and bump the memory's `<kind>_count`, in one transaction."""
    column = f"{kind}_count"
    with transactions.write(conn):
        conn.execute(
            """INSERT INTO feedback(feedback_id, item_id, session_id, feedback, useful, context,
                   duplicate_of, created_at) VALUES(?,?,?,?,?,?,?,?)""",
            (feedback_id, item_id, session_id, kind, useful, context, duplicate_of, stamp),
        )
        conn.execute("INSERT INTO item_stats(item_id) VALUES(?) ON CONFLICT(item_id) DO NOTHING", (item_id,))
        conn.execute(
            f"UPDATE item_stats SET {column} = {column} + 1, last_feedback_at=?, "
            "flagged_duplicate_of=COALESCE(?, flagged_duplicate_of) WHERE item_id=?",
            (stamp, duplicate_of if kind == "duplicate" else None, item_id),
        )


def count_retrievals(conn: sqlite3.Connection, item_ids: Sequence[str], stamp: str) -> None:
    """Add one retrieval to each memory's counter."""
    with transactions.write(conn):
        conn.executemany(
            """INSERT INTO item_stats(item_id, retrieval_count, last_retrieved_at) VALUES(?, 1, ?)
               ON CONFLICT(item_id) DO UPDATE SET retrieval_count = retrieval_count + 1,
                   last_retrieved_at = excluded.last_retrieved_at""",
            [(item_id, stamp) for item_id in dict.fromkeys(item_ids)],
        )


def stats_row(conn: sqlite3.Connection, item_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM item_stats WHERE item_id=?", (item_id,)).fetchone()


def recent_feedback_rows(conn: sqlite3.Connection, item_id: str, limit: int) -> list[sqlite3.Row]:
    """A memory's latest feedback notes, newest first."""
    return conn.execute("SELECT feedback, context, session_id, created_at FROM feedback WHERE item_id = ? "
                        "ORDER BY created_at DESC LIMIT ?", (item_id, limit)).fetchall()
