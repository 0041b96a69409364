"""The `file_edits` and `edit_lines` tables: every file edit a stored session made, and the
hashes of the lines it added (chinvex.blame.lines). The rows are derived from the stored turns'
`meta["edits"]` (already redacted), so they follow their conversation: written with its turns,
deleted with its document (ON DELETE CASCADE), carried by export and import with the turns.
"""

from __future__ import annotations

import ntpath
import posixpath
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from chinvex.blame.lines import added_hashes

_INSERT = """INSERT INTO file_edits(doc_id, turn_index, seq, ts, op, path, abs_path, file_name, lines_added)
             VALUES(?,?,?,?,?,?,?,?,?)"""


def file_name(path: str) -> str:
    """The last component of a POSIX or Windows path, lower-cased (the lookup key)."""
    base = ntpath.basename(path) if ("\\" in path or ntpath.splitdrive(path)[0]) else posixpath.basename(path)
    return base.lower()


def _stamp(value: Any) -> str | None:
    """A turn's time as the index writes times (ISO UTC, milliseconds, `Z`), so edits, documents
    and commits compare as strings."""
    from chinvex.timeutil import iso_z, to_utc

    return iso_z(to_utc(value)) if value is not None else None


def record(conn: sqlite3.Connection, doc_id: str, turns: Sequence[Any], start: int = 0,
           fallback_ts: Any = None) -> int:
    """Replace the edits of `doc_id`'s turns from `start` on with those `turns` record (Turn
    models or their JSON dicts). Runs inside the caller's transaction. Returns the edits written."""
    conn.execute("DELETE FROM file_edits WHERE doc_id=? AND turn_index>=?", (doc_id, start))
    written = 0
    for index in range(start, len(turns)):
        turn = turns[index]
        meta = turn.get("meta") if isinstance(turn, dict) else turn.meta
        edits = (meta or {}).get("edits") or ()
        if not edits:
            continue
        ts = _stamp((turn.get("ts") if isinstance(turn, dict) else turn.ts) or fallback_ts)
        for seq, edit in enumerate(edits):
            path = edit.get("abs_path") or edit.get("path")
            if not isinstance(path, str) or not path:
                continue
            hashes = added_hashes(edit.get("old_text"), edit.get("new_text"))
            cur = conn.execute(_INSERT, (doc_id, index, seq, ts, str(edit.get("op") or "edit"),
                                         str(edit.get("path") or path), edit.get("abs_path"),
                                         file_name(path), len(hashes)))
            if hashes:
                conn.executemany("INSERT OR IGNORE INTO edit_lines(edit_id, line_hash) VALUES(?,?)",
                                 [(cur.lastrowid, h) for h in hashes])
            written += 1
    return written


def backfill(conn: sqlite3.Connection) -> int:
    """Fill the tables from every stored conversation (the migration that adds them runs this,
    so an index made by an older chinvex can answer `blame` without a re-ingest)."""
    written = 0
    doc_ids = [row[0] for row in conn.execute("SELECT DISTINCT doc_id FROM conversation_turns")]
    for doc_id in doc_ids:
        turns = [orjson.loads(row[0]) for row in conn.execute(
            "SELECT turn_json FROM conversation_turns WHERE doc_id=? ORDER BY turn_index", (doc_id,))]
        if any((t.get("meta") or {}).get("edits") for t in turns):
            updated = conn.execute("SELECT updated_at FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
            written += record(conn, doc_id, turns, 0, updated[0] if updated else None)
    return written


_EDIT_COLUMNS = "edit_id, doc_id, turn_index, seq, ts, op, path, abs_path, lines_added"


@dataclass(frozen=True)
class EditRow:
    edit_id: int
    doc_id: str
    turn_index: int
    seq: int
    ts: str | None
    op: str
    path: str
    abs_path: str | None
    lines_added: int


def edits_named(conn: sqlite3.Connection, names: Iterable[str]) -> list[EditRow]:
    """Every stored edit of a file whose last path component is one of `names`."""
    keys = sorted({n.lower() for n in names if n})
    if not keys:
        return []
    marks = ",".join("?" * len(keys))
    rows = conn.execute(
        f"SELECT {_EDIT_COLUMNS} FROM file_edits WHERE file_name IN ({marks})", keys)
    return [EditRow(*row) for row in rows]


def line_hashes(conn: sqlite3.Connection, edit_ids: Sequence[int]) -> dict[int, set[int]]:
    """edit id -> the hashes of the lines it added."""
    out: dict[int, set[int]] = {}
    for start in range(0, len(edit_ids), 500):
        part = list(edit_ids[start:start + 500])
        marks = ",".join("?" * len(part))
        for edit_id, line_hash in conn.execute(
                f"SELECT edit_id, line_hash FROM edit_lines WHERE edit_id IN ({marks})", part):
            out.setdefault(edit_id, set()).add(line_hash)
    return out


def edits_of_docs(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> dict[str, list[EditRow]]:
    out: dict[str, list[EditRow]] = {}
    for start in range(0, len(doc_ids), 500):
        part = list(doc_ids[start:start + 500])
        marks = ",".join("?" * len(part))
        for row in conn.execute(
                f"SELECT {_EDIT_COLUMNS} FROM file_edits WHERE doc_id IN ({marks}) "
                "ORDER BY doc_id, turn_index, seq", part):
            edit = EditRow(*row)
            out.setdefault(edit.doc_id, []).append(edit)
    return out


def count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM file_edits").fetchone()[0]
