"""The file_edits / edit_lines tables (chinvex.storage.edits): filled by the ingest from each
session's turns, filled from stored turns by the migration that adds them, removed with their
session, carried by export and import, and never holding a secret."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import orjson

from helpers import FIXTURES, git, init_repo, run_cli_in_process

SESSIONS = FIXTURES / "codex-rollout/generated-0.169.0/apply-patch/sessions"
FIRST = "01a2240a-5ee5-7170-a256-a40cba21d208"
TOKEN = "ghp_Zq8vN3kR7tW1yB5mC9xL2dF6hJ4pS0aE7uGi"


def _index(home: Path, context: str) -> Path:
    return next(home.rglob(f"{context}/hybrid.db"))


def _rows(db: Path, sql: str, *params) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def _context(home: Path, store: Path, name: str = "edits") -> None:
    env = {"CHINVEX_HOME": str(home)}
    assert run_cli_in_process("context", "create", name, "--sessions", f"codex={store}", env=env).code == 0
    done = run_cli_in_process("ingest", "--context", name, env=env)
    assert done.code == 0, done.stderr


def test_ingest_records_each_edit_and_removing_the_session_removes_them(tmp_path, chinvex_home):
    store = tmp_path / "sessions"
    shutil.copytree(SESSIONS, store)
    _context(chinvex_home, store)
    db = _index(chinvex_home, "edits")
    edits = _rows(db, "SELECT op, path, abs_path, file_name, lines_added FROM file_edits ORDER BY ts")
    where = "/home/dev/run3/work/net/retry.py"  # the path as the patch gave it, resolved against the cwd
    assert edits == [("write", "net/retry.py", where, "retry.py", 10), ("patch", "net/retry.py", where, "retry.py", 3)]
    assert _rows(db, "SELECT COUNT(*) FROM edit_lines") == [(13,)]
    next(store.rglob(f"*{FIRST}.jsonl")).unlink()
    assert run_cli_in_process("ingest", "--context", "edits", env={"CHINVEX_HOME": str(chinvex_home)}).code == 0
    assert _rows(db, "SELECT op FROM file_edits") == [("patch",)]
    assert _rows(db, "SELECT COUNT(*) FROM edit_lines") == [(3,)]


def test_the_migration_fills_the_tables_from_stored_turns(tmp_path):
    """An index written before migration 6 answers blame after its first open: the edits are
    read back from the turns it stored."""
    from chinvex.storage import db

    path = tmp_path / "hybrid.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for migration in db.migrations()[:5]:
        for statement in db._split_sql(migration.sql):
            conn.execute(statement)
    conn.execute("INSERT INTO meta(key, value) VALUES('schema_version', '5')")
    conn.execute("INSERT INTO documents(doc_id, source_type, source_uri, title, updated_at, metadata_json, "
                 "origin_uri) VALUES('d1', 'agent_session', '/s.jsonl', 't', '2026-01-01T00:00:00.000Z', "
                 "'{\"doc_type\": \"conversation\"}', '/s.jsonl')")
    turn = {"turn_id": "t1", "ts": "2026-01-01T00:00:00.000Z", "role": "tool", "text": "Tool: Write",
            "meta": {"edits": [{"path": "/p/a.py", "op": "write", "abs_path": "/p/a.py",
                                "new_text": "def main():\n    run()\n"}]}}
    conn.execute("INSERT INTO conversation_turns VALUES('d1', 0, ?)", (json.dumps(turn),))
    conn.close()
    migrated = db.connect(path)
    try:
        assert db.schema_version(migrated) == db.latest_version()
        assert [tuple(r) for r in migrated.execute("SELECT doc_id, op, file_name, lines_added FROM file_edits")] == [
            ("d1", "write", "a.py", 2)]
        migrated.execute("DELETE FROM documents WHERE doc_id='d1'")
        assert migrated.execute("SELECT COUNT(*) FROM edit_lines").fetchone()[0] == 0  # cascade
    finally:
        migrated.close()


def test_export_and_import_carry_the_edits(tmp_path, chinvex_home):
    # a copy: the fixture folder's parent is a CODEX_HOME, which Codex's app-server writes into
    _context(chinvex_home, shutil.copytree(SESSIONS, tmp_path / "sessions"))
    env = {"CHINVEX_HOME": str(chinvex_home)}
    out = tmp_path / "edits.jsonl"
    assert run_cli_in_process("export", "--context", "edits", "--out", str(out), env=env).code == 0
    assert run_cli_in_process("context", "create", "copy", env=env).code == 0
    done = run_cli_in_process("import", str(out), "--context", "copy", env=env)
    assert done.code == 0, done.stderr
    source, copy = _index(chinvex_home, "edits"), _index(chinvex_home, "copy")
    query = "SELECT doc_id, turn_index, op, abs_path, lines_added FROM file_edits ORDER BY doc_id, turn_index"
    assert _rows(copy, query) == _rows(source, query) and len(_rows(copy, query)) == 2
    lines = "SELECT f.doc_id, l.line_hash FROM edit_lines l JOIN file_edits f USING(edit_id) ORDER BY 1, 2"
    assert _rows(copy, lines) == _rows(source, lines)


def _with_token(src: Path, dest: Path) -> None:
    """The first real rollout with one more line in its patch: a token, as a careless session writes."""
    out = []
    for raw in src.read_text(encoding="utf-8").splitlines():
        record = orjson.loads(raw)
        payload = record.get("payload") or {}
        if payload.get("type") == "custom_tool_call" and payload.get("name") == "apply_patch":
            payload["input"] = payload["input"].replace("+import time\n", f'+import time\n+GITHUB_TOKEN = "{TOKEN}"\n')
        out.append(orjson.dumps(record).decode())
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("\n".join(out) + "\n", encoding="utf-8")


def test_a_secret_line_is_matched_but_never_stored(tmp_path, chinvex_home):
    src = next(SESSIONS.rglob(f"*{FIRST}.jsonl"))
    store = tmp_path / "sessions"
    _with_token(src, store / src.name)
    _context(chinvex_home, store)
    repo = tmp_path / "repo"
    init_repo(repo)
    (repo / "net").mkdir()
    (repo / "net/retry.py").write_text(f'"""Retry."""\n\nimport time\nGITHUB_TOKEN = "{TOKEN}"\n', encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "retry")
    done = run_cli_in_process("blame", f"{repo / 'net/retry.py'}:4", "--context", "edits", "--json",
                              env={"CHINVEX_HOME": str(chinvex_home)})
    assert done.code == 0, done.stderr
    report = done.json
    assert [s["session_id"] for s in report["sessions"]] == [FIRST]
    assert TOKEN not in done.stdout  # the line is shown redacted, as it is stored
    db = _index(chinvex_home, "edits")
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert TOKEN.encode() not in db.read_bytes()
