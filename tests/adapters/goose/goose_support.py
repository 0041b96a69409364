"""The goose adapter on the real samples in tests/fixtures/samples/goose (see its PROVENANCE.md):
a real `sessions.db` (schema v5, one session, no messages) and two real `goose session export`
JSON files. No real database WITH messages is public, so the database tests build one in
tmp_path from the real `sessions.db` (its own schema, migrated the way goose's migrations add
columns where a test says so) whose `messages.content_json` / `metadata_json` rows are copied
from the real exports' messages (an export's `conversation` is the exact Message JSON goose stores
per row) and whose session rows carry the exports' session fields. No legacy `.jsonl` exists
either: the legacy tests write one in goose's documented layout from the same real messages.
Synthetic tool calls (the 2025 `developer__text_editor`, the 2026 `edit`) are marked as such.

What the Goose tests share: fixture paths and database builders.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate
from chinvex_adapters.goose.adapter import GooseAdapter
from helpers import FIXTURES

SAMPLES = FIXTURES / "goose"


REAL_DATA = SAMPLES / "jwp23-dotfiles" / "data"


REAL_DB = REAL_DATA / "sessions" / "sessions.db"


EXPORTS = SAMPLES / "convergeai-session-export"


NATIVE = EXPORTS / "goose_native_chat_history.json"  # session 20260403_23


CONVERGE = EXPORTS / "goose_convergeai_chat_history.json"  # session 20260403_20


CWD = "/Users/user/Documents/GitHub/convergeai"


ADAPTER = GooseAdapter()


OPTIONS = AdapterOptions(context_name="t")


V13_SESSION_COLUMNS = ("provider_name TEXT", "model_config_json TEXT", "goose_mode TEXT NOT NULL DEFAULT 'auto'",
                       "thread_id TEXT", "archived_at TIMESTAMP", "project_id TEXT", "accumulated_cost REAL")


def export(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text("utf-8"))


def migrate_to_v13(conn: sqlite3.Connection) -> None:
    """The columns goose's migrations 6-13 add to a v5 database (crates/goose/src/session/migrations.rs)."""
    for column in V13_SESSION_COLUMNS:
        conn.execute(f"ALTER TABLE sessions ADD COLUMN {column}")
    conn.execute("ALTER TABLE messages ADD COLUMN message_id TEXT")
    conn.executemany("INSERT INTO schema_version(version) VALUES (?)", [(v,) for v in range(6, 14)])


def insert_session(conn: sqlite3.Connection, session: dict[str, Any], *, skip_hidden: bool = False) -> None:
    """A session row from an export's session fields, and one message row per exported message
    (content_json and metadata_json copied from the export)."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    row = {"id": session["id"], "name": session["name"], "description": "", "user_set_name": session["user_set_name"],
           "session_type": session["session_type"], "working_dir": session["working_dir"],
           "created_at": session["created_at"].replace("T", " ").rstrip("Z"),
           "updated_at": session["updated_at"].replace("T", " ").rstrip("Z"),
           "extension_data": json.dumps(session["extension_data"]),
           **{k: session[k] for k in ("total_tokens", "input_tokens", "output_tokens", "accumulated_total_tokens",
                                      "accumulated_input_tokens", "accumulated_output_tokens")},
           "provider_name": session["provider_name"], "model_config_json": json.dumps(session["model_config"]),
           "goose_mode": session["goose_mode"]}
    row = {k: v for k, v in row.items() if k in cols}
    conn.execute(f"INSERT INTO sessions({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    has_id = "message_id" in {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
    for message in session["conversation"]:
        values = [session["id"], message["role"], json.dumps(message["content"]), message["created"],
                  json.dumps(message["metadata"])] + ([message["id"]] if has_id else [])
        conn.execute(f"INSERT INTO messages(session_id, role, content_json, created_timestamp, metadata_json"
                     f"{', message_id' if has_id else ''}) VALUES (?, ?, ?, ?, ?{', ?' if has_id else ''})", values)


def build_db(target: Path, *, v13: bool = False, wal: bool = False) -> Path:
    """goose's data folder with the real v5 sessions.db holding both exported sessions."""
    db = target / "sessions" / "sessions.db"
    db.parent.mkdir(parents=True)
    shutil.copy(REAL_DB, db)
    shutil.copy(REAL_DATA / "projects.json", target / "projects.json")
    with sqlite3.connect(db) as conn:
        if v13:
            migrate_to_v13(conn)
        insert_session(conn, export(NATIVE))
        insert_session(conn, export(CONVERGE))
    conn.close()
    if wal:
        conn = sqlite3.connect(db, isolation_level=None)
        assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        conn.close()
    return db


def candidates(root: Path) -> tuple[list[SourceCandidate], list[SkippedSource]]:
    items = list(ADAPTER.enumerate(root, OPTIONS))
    return ([i for i in items if isinstance(i, SourceCandidate)], [i for i in items if isinstance(i, SkippedSource)])


def parse(cand: SourceCandidate) -> tuple[list, ParseReport]:
    report = ParseReport()
    return list(ADAPTER.parse(cand, report, None)), report


def file_candidate(path: Path) -> SourceCandidate:
    return SourceCandidate(source_uri=str(path), source_type="agent_session", adapter="goose",
                           root=str(path.parent), path=path)


def by_thread(root: Path) -> dict[str, Any]:
    found = {}
    for cand in candidates(root)[0]:
        docs, _ = parse(cand)
        found.update({d.thread_id: d for d in docs})
    return found


def write_legacy(path: Path, session: dict[str, Any], *, metadata: bool = True, cut_last: bool = False) -> None:
    """goose's legacy layout: a SessionMetadata line, then one Message per line (real messages)."""
    meta = {"working_dir": session["working_dir"], "description": session["name"], "schedule_id": None,
            "message_count": len(session["conversation"]), "total_tokens": session["total_tokens"]}
    lines = ([json.dumps(meta)] if metadata else []) + [json.dumps(m) for m in session["conversation"]]
    text = "\n".join(lines) + "\n"
    if cut_last:
        text = text[: text.rindex("{\"id\"") + 40]
    path.write_text(text, encoding="utf-8")
