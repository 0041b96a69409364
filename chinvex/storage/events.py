"""The flight recorder (`flight_recorder`): agents' log entries and the queries answered."""

from __future__ import annotations

import sqlite3


def insert_event(conn: sqlite3.Connection, *, entry_id: str, session_id: str, event_type: str,
                 content: str, rationale: str | None, metadata_json: str, stamp: str) -> None:
    conn.execute(
        """INSERT INTO flight_recorder(entry_id, session_id, type, content, rationale,
               metadata_json, created_at) VALUES(?,?,?,?,?,?,?)""",
        (entry_id, session_id, event_type, content, rationale, metadata_json, stamp),
    )
