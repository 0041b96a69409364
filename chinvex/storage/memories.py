"""Memory rows (`knowledge_items`): insert, read by id / document / pending state, list, mark
indexed and turn into a promotion pointer. Rows come back as `sqlite3.Row`; `chinvex.memory`
turns them into `Memory` values."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_IN_BATCH = 500


def insert_memory_row(conn: sqlite3.Connection, values: Mapping[str, Any]) -> None:
    """Insert one memory row (not yet indexed); `values` holds the table's columns."""
    conn.execute(
        """INSERT INTO knowledge_items(item_id, doc_id, type, title, content, scope, tags_json,
               metadata_json, created_at, updated_at, indexed_at)
           VALUES(:item_id,:doc_id,:type,:title,:content,:scope,:tags_json,:metadata_json,
                  :created_at,:updated_at,NULL)""",
        dict(values),
    )


def memory_row(conn: sqlite3.Connection, item_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM knowledge_items WHERE item_id=?", (item_id,)).fetchone()


def memory_rows(conn: sqlite3.Connection, *, item_type: str | None = None,
                include_promoted: bool = False) -> list[sqlite3.Row]:
    """Memory rows newest first (ties by id), of one type if given; promotion pointers only
    when asked for."""
    where = ["1"]
    params: list[Any] = []
    if item_type is not None:
        where.append("type = ?")
        params.append(item_type)
    if not include_promoted:
        where.append("scope != 'promoted'")
    return conn.execute(f"SELECT * FROM knowledge_items WHERE {' AND '.join(where)} "
                        "ORDER BY updated_at DESC, item_id", params).fetchall()


def memory_rows_for_docs(conn: sqlite3.Connection, doc_ids: Iterable[str]) -> list[sqlite3.Row]:
    """The memory rows whose document is one of `doc_ids`."""
    ids = list(dict.fromkeys(doc_ids))
    out: list[sqlite3.Row] = []
    for start in range(0, len(ids), _IN_BATCH):
        part = ids[start:start + _IN_BATCH]
        marks = ",".join("?" * len(part))
        out.extend(conn.execute(f"SELECT * FROM knowledge_items WHERE doc_id IN ({marks})", part))
    return out


def pending_memory_rows(conn: sqlite3.Connection, limit: int) -> list[sqlite3.Row]:
    """Memory rows not indexed yet, oldest first."""
    return conn.execute("SELECT * FROM knowledge_items WHERE indexed_at IS NULL ORDER BY created_at LIMIT ?",
                        (limit,)).fetchall()


def mark_memories_indexed(conn: sqlite3.Connection, item_ids: Sequence[str], stamp: str) -> None:
    conn.executemany("UPDATE knowledge_items SET indexed_at=? WHERE item_id=?",
                     [(stamp, item_id) for item_id in item_ids])


def turn_into_pointer(conn: sqlite3.Connection, item_id: str, *, scope: str, metadata_json: str,
                      stamp: str) -> None:
    """Rewrite a promoted memory's row as a pointer to its new home."""
    conn.execute("UPDATE knowledge_items SET scope=?, metadata_json=?, updated_at=? WHERE item_id=?",
                 (scope, metadata_json, stamp, item_id))
