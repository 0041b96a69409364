"""The `ingest_runs` log (one row per ingest: when, how it ended, its summary) and the embedder
an index was built with (`meta`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import orjson

from chinvex.storage import transactions
from chinvex.storage.db import set_meta


def start(conn: sqlite3.Connection, run_id: str, context_name: str, started_at: str) -> None:
    conn.execute(
        "INSERT INTO ingest_runs(run_id, context_name, started_at, status) VALUES(?,?,?,?)",
        (run_id, context_name, started_at, "running"),
    )


def finish(conn: sqlite3.Connection, run_id: str, finished_at: str | None, status: str,
           stats: dict[str, Any]) -> None:
    """Record how the run ended (an open transaction, left by a failure, is rolled back first)."""
    transactions.rollback(conn)
    conn.execute(
        "UPDATE ingest_runs SET finished_at=?, status=?, stats_json=? WHERE run_id=?",
        (finished_at, status, orjson.dumps(stats).decode(), run_id),
    )


def iter_runs(conn: sqlite3.Connection, limit: int = 1) -> Iterator[dict[str, Any]]:
    """The latest `limit` runs, newest first."""
    for row in conn.execute(
        "SELECT run_id, started_at, finished_at, status, stats_json FROM ingest_runs "
        "ORDER BY started_at DESC LIMIT ?", (limit,)
    ):
        yield {"run_id": row[0], "started_at": row[1], "finished_at": row[2], "status": row[3],
               "stats": orjson.loads(row[4]) if row[4] else None}


def record_embedder(conn: sqlite3.Connection, name: str, provider: str, model: str, *,
                    switched: bool = False) -> None:
    """The embedder the index's vectors come from; `switched`: another model replaces the one
    recorded, whose dimension no longer holds."""
    set_meta(conn, "embedder", name)
    set_meta(conn, "embedding_provider", provider)
    set_meta(conn, "embedding_model", model)
    if switched:
        conn.execute("DELETE FROM meta WHERE key='embedding_dimension'")
