"""The goose adapter on the real samples in tests/fixtures/samples/goose (see its PROVENANCE.md):
a real `sessions.db` (schema v5, one session, no messages) and two real `goose session export`
JSON files. No real database WITH messages is public, so the database tests build one in
tmp_path from the real `sessions.db` (its own schema, migrated the way goose's migrations add
columns where a test says so) whose `messages.content_json` / `metadata_json` rows are copied
from the real exports' messages (an export's `conversation` is the exact Message JSON goose stores
per row) and whose session rows carry the exports' session fields. No legacy `.jsonl` exists
either: the legacy tests write one in goose's documented layout from the same real messages.
Synthetic tool calls (the 2025 `developer__text_editor`, the 2026 `edit`) are marked as such."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, SourceError, UnrecognisedSource
from chinvex_adapters.goose import STORES
from chinvex_adapters.goose import store as goose_store
from chinvex_adapters.kit import sqlite as kit_sqlite
from chinvex_adapters.goose.adapter import GooseAdapter
from chinvex_adapters.kit.registry import Where
from helpers import FIXTURES, assert_no_traceback, run_cli_in_process, tool_turns

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


# -- the real sessions.db: one session, no messages ----------------------------------------------

def test_real_database_with_an_empty_session_is_no_conversation():
    cands, skipped = candidates(REAL_DATA)
    assert cands == []
    reasons = {Path(s.source_uri).name: s.detail for s in skipped}
    assert reasons == {"sessions.db#20251202_1": "a session without messages"}  # projects.json: not walked
    assert ADAPTER.recognises(REAL_DB)
    report = ParseReport()
    assert list(ADAPTER.parse_file(REAL_DB, report, None, None)) == []
    with goose_store.read_only(REAL_DB) as conn:
        assert goose_store.schema_version(conn) == 5
        row = goose_store.session_row(conn, "20251202_1")
    assert row["name"] == "CLI Session" and row["working_dir"] == "/Users/user/workspace/tmp/vsl"
    assert row["provider_name"] is None  # a v13 column a v5 database lacks, selected as NULL


def test_projects_json_beside_the_sessions_is_not_a_session():
    items = list(ADAPTER.enumerate(SAMPLES, OPTIONS))
    projects = next(i for i in items if str(i.source_uri).endswith("projects.json"))
    assert isinstance(projects, SkippedSource) and "index of project folders" in projects.detail
    with pytest.raises(UnrecognisedSource, match=r"projects\.json: not a goose session \(no goose session fields"):
        parse(file_candidate(REAL_DATA / "projects.json"))


# -- a database built from the real schema and the real exported messages -----------------------

def test_database_sessions_are_threads_with_their_change_markers(tmp_path: Path):
    db = build_db(tmp_path / "data")
    cands, skipped = candidates(tmp_path / "data")
    assert [c.thread_id for c in cands] == ["20260403_20", "20260403_23"]
    native = cands[1]
    assert native.source_uri == f"{db}#20260403_23" and native.path is None
    assert native.thread_updated_at == "2026-04-03T21:13:37.000Z" and native.last_turn_id.startswith("22:")
    assert [s.detail for s in skipped] == ["a session without messages"]
    # goose appends a message: the session's markers move, the other session's do not.
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO messages(session_id, role, content_json, created_timestamp, metadata_json) "
                     "VALUES ('20260403_23', 'user', '[{\"type\":\"text\",\"text\":\"thanks\"}]', 1775250000, '{}')")
        conn.execute("UPDATE sessions SET updated_at = '2026-04-03 21:40:00' WHERE id = '20260403_23'")
    conn.close()
    again, _ = candidates(tmp_path / "data")
    assert again[0].last_turn_id == cands[0].last_turn_id and again[0].thread_updated_at == cands[0].thread_updated_at
    assert again[1].last_turn_id.startswith("23:") and again[1].thread_updated_at == "2026-04-03T21:40:00.000Z"
    doc = parse(again[1])[0][0]
    assert doc.turns[-1].role == "user" and doc.turns[-1].text == "thanks"
    bare = SourceCandidate(source_uri=f"{db}#20260403_23", source_type="agent_session", adapter="goose",
                           root=str(db.parent))  # known by its uri alone
    assert parse(bare)[0][0].turns[-1].text == "thanks"


def test_database_session_keeps_words_thinking_tools_and_the_file_write(tmp_path: Path):
    docs = by_thread(build_db(tmp_path / "data", v13=True).parent.parent)
    doc = docs["20260403_23"]
    assert doc.source == "goose" and doc.source_uri.endswith("sessions.db#20260403_23")
    assert doc.title == "Merge conflict resolution"
    assert doc.metadata["cwd"] == CWD and doc.links.repo_paths == [CWD]
    assert doc.metadata["model"] == "claude-sonnet-4-6" and doc.metadata["provider"] == "anthropic"
    assert doc.metadata["schema_version"] == 13 and doc.metadata["store"] == "sessions.db"
    assert doc.metadata["tokens"]["accumulated_total_tokens"] == 70587
    assert "developer" in doc.metadata["extensions"]
    first = doc.turns[0]
    assert first.role == "user" and first.text == "There is a merge conflict in test_conflict.py. Please resolve it without converge ai."
    assert first.ts.isoformat() == "2026-04-03T20:09:49+00:00"
    assert first.turn_id == "msg_20260403_23_f80c970d-0c68-4893-a882-03bf2cc360ed"  # message_id (v7+)
    thinking = [t for t in doc.turns if t.meta.get("thinking")]
    assert thinking[0].text == "Let me look at the merge conflict in test_conflict.py."
    assert all("EvMBClsI" not in t.text for t in doc.turns)  # thinking signatures are not text
    replies = [t.text for t in doc.turns if t.role == "assistant" and not t.meta.get("thinking")]
    assert replies[-1].startswith("The merge conflict in `test_conflict.py` has been resolved.")
    ls = next(t for t in tool_turns(doc, "shell") if "ls /Users/user" in t.text)
    assert ls.tool.input == {"command": "ls /Users/user/Documents/GitHub/convergeai/"}
    assert "Result:\nLICENSE\nREADME.md\nconverge.sh" in ls.text and ls.meta["extension"] == "developer"
    tree = tool_turns(doc, "tree")[0]
    assert "mcp/  [523]" in tree.text
    write = tool_turns(doc, "write")[0]
    edit = write.meta["edits"][0]
    assert edit["path"] == edit["abs_path"] == f"{CWD}/test_conflict.py" and edit["op"] == "write"
    assert edit["new_text"].startswith("def distill_context(ticket_id: str, target_ref: str):\n    log_telemetry(")
    assert "Wrote /Users/user/Documents/GitHub/convergeai/test_conflict.py (7 lines)" in write.text
    assert doc.metadata["files_edited"] == [f"{CWD}/test_conflict.py"]
    assert doc.created_at.isoformat() == "2026-04-03T20:09:49+00:00"


def test_a_result_stored_before_its_request_is_paired_by_id(tmp_path: Path):
    """Session 20260403_20 holds the response to toolu_01MZkVj9mmxshbcPbdjLyj1S one row before
    its request (real rows)."""
    report = ParseReport()
    cands, _ = candidates(build_db(tmp_path / "data"))
    docs = list(ADAPTER.parse(cands[0], report, None))
    doc = docs[0]
    calls = tool_turns(doc, "converge-ai__distill_context")
    assert len(calls) == 2
    late = next(t for t in calls if t.meta["tool_use_id"] == "toolu_01MZkVj9mmxshbcPbdjLyj1S")
    assert late.meta["result_before_request"] is True and "[SOURCE]: Upstream vs. Internal Fork" in late.text
    assert "404 Not Found" in calls[0].text
    assert report.counts["tool_results_before_call"] == 1 and report.counts["tool_results_unmatched"] == 0
    assert not [t for t in doc.turns if t.meta.get("unmatched_result")]
    assert doc.metadata["todo"].startswith("- [x] Read conflicted file (test_conflict.py)")
    assert "model" not in doc.metadata and "provider" not in doc.metadata  # v5: no model columns


def test_messages_hidden_from_the_user_and_odd_rows_are_left_out(tmp_path: Path):
    db = build_db(tmp_path / "data")
    summary = {"userVisible": False, "agentVisible": True}
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO messages(session_id, role, content_json, created_timestamp, metadata_json) "
                     "VALUES ('20260403_20', 'user', ?, 1775245890, ?)",
                     (json.dumps([{"type": "text", "text": "SUMMARY OF THE CONVERSATION"}]), json.dumps(summary)))
        conn.execute("INSERT INTO messages(session_id, role, content_json, created_timestamp, metadata_json) "
                     "VALUES ('20260403_20', 'assistant', '{not json', 1775245891, NULL)")
        conn.execute("INSERT INTO messages(session_id, role, content_json, created_timestamp, metadata_json) "
                     "VALUES ('20260403_20', 'assistant', ?, 1775245892, NULL)",
                     (json.dumps([{"type": "redactedThinking", "data": "xxx"}, {"type": "futureBlock"},
                                  {"type": "image", "data": "A" * 5000, "mimeType": "image/png"}]),))
    conn.close()
    report = ParseReport()
    doc = list(ADAPTER.parse(candidates(db)[0][0], report, None))[0]
    assert not any("SUMMARY OF THE CONVERSATION" in t.text for t in doc.turns)
    assert report.counts["messages_hidden_from_user"] == 1 and report.counts["rows_unreadable"] == 1
    assert report.counts["blocks_unknown:futureBlock"] == 1 and report.counts["blocks_skipped:redactedThinking"] == 1
    image = doc.turns[-1]
    assert image.attachments[0].kind == "image" and image.attachments[0].mime_type == "image/png"
    assert "AAAA" not in image.text


def test_a_wal_database_is_read_with_its_log_while_goose_holds_it(tmp_path: Path):
    db = build_db(tmp_path / "data", wal=True)
    writer = sqlite3.connect(db)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("INSERT INTO messages(session_id, role, content_json, created_timestamp, metadata_json) "
                       "VALUES ('20260403_23', 'user', '[{\"type\":\"text\",\"text\":\"written to the log\"}]', 1775250000, '{}')")
        writer.commit()
        assert Path(f"{db}-wal").stat().st_size > 0
        cands, skipped = candidates(db.parent)
        assert {Path(s.source_uri).name for s in skipped} >= {"sessions.db-wal", "sessions.db-shm"}
        doc = parse(cands[1])[0][0]
        assert doc.turns[-1].text == "written to the log"
    finally:
        writer.close()


def test_a_locked_database_is_an_error_for_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db = build_db(tmp_path / "data")
    cands, _ = candidates(db)
    monkeypatch.setattr(kit_sqlite, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(kit_sqlite.time, "sleep", lambda _s: None)
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(SourceError) as caught:
            parse(cands[0])
        assert not isinstance(caught.value, UnrecognisedSource)
        assert str(caught.value) == f"{db}: database is locked (goose is writing it); read again next run"
        _, skipped = candidates(db)
        assert [(s.reason, s.source_uri) for s in skipped] == [("unreadable", str(db))]
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_session_gone_between_listing_and_reading(tmp_path: Path):
    db = build_db(tmp_path / "data")
    cands, _ = candidates(db)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM messages WHERE session_id = '20260403_20'")
        conn.execute("DELETE FROM sessions WHERE id = '20260403_20'")
    conn.close()
    docs, report = parse(cands[0])
    assert docs == [] and report.counts["sessions_gone"] == 1


def test_damaged_and_foreign_databases_are_one_line_skips(tmp_path: Path):
    cut = tmp_path / "cut" / "sessions"
    cut.mkdir(parents=True)
    data = build_db(tmp_path / "data").read_bytes()
    (cut / "sessions.db").write_bytes(data[:1000])
    for root in (cut, cut / "sessions.db"):
        _, skipped = candidates(root)
        assert len(skipped) == 1 and skipped[0].reason == "not_supported"
        assert skipped[0].detail == f"{cut / 'sessions.db'}: not a readable goose sessions database (database disk image is malformed)"
    other = tmp_path / "oc" / "sessions.db"
    other.parent.mkdir()
    shutil.copy(FIXTURES / "opencode" / "jwp23-dotfiles" / "sqlite-migrated-by-1.3.2" / "opencode.db", other)
    _, skipped = candidates(other)
    assert skipped[0].reason == "not_supported" and "not a goose sessions database (no sessions and messages tables)" in skipped[0].detail
    assert not ADAPTER.recognises(other)  # handed to the adapter whose format it is, if any
    with pytest.raises(UnrecognisedSource, match=r"sessions\.db: not a goose sessions database \(no sessions"):
        list(ADAPTER.parse_file(other, ParseReport(), None, None))
    text = tmp_path / "t" / "sessions.db"
    text.parent.mkdir()
    text.write_text("not sqlite")
    assert candidates(text)[1][0].reason == "not_supported"


def test_backups_and_other_databases_are_not_read(tmp_path: Path):
    build_db(tmp_path / "data")
    backups = tmp_path / "data" / "sessions" / "backups"
    backups.mkdir()
    shutil.copy(tmp_path / "data" / "sessions" / "sessions.db", backups / "backup_20260404.db")
    shutil.copy(tmp_path / "data" / "sessions" / "sessions.db", tmp_path / "data" / "sessions" / "pre_restore_1.db")
    cands, skipped = candidates(tmp_path / "data")
    assert len(cands) == 2
    details = {Path(s.source_uri).name: s.detail for s in skipped}
    assert "backup copy" in details["backup_20260404.db"] and "not goose's sessions.db" in details["pre_restore_1.db"]


# -- exported sessions -------------------------------------------------------------------------

def test_export_files_are_read_directly():
    cands, _ = candidates(EXPORTS)
    assert [Path(c.source_uri).name for c in cands] == [CONVERGE.name, NATIVE.name]
    doc = parse(file_candidate(CONVERGE))[0][0]
    assert doc.thread_id == "20260403_20" and doc.source_uri == str(CONVERGE)
    assert doc.title == "Git merge conflict resolution" and doc.metadata["store"] == "session export"
    assert doc.metadata["cwd"] == CWD and doc.metadata["model"] == "claude-sonnet-4-6"
    assert doc.metadata["session_created_at"] == "2026-04-03T19:50:29.000Z"
    users = [t.text for t in doc.turns if t.role == "user"]
    assert users[0].startswith("There is a merge conflict in test_conflict.py. Call distill_context for commit f0e36e9")
    git = next(t for t in tool_turns(doc, "shell") if "git remote -v" in t.text)
    assert "origin\thttps://github.com/sdfa66065-lang/convergeai.git (fetch)" in git.text
    todo = tool_turns(doc, "todo__todo_write")[0]
    assert todo.meta["extension"] == "todo" and "Updated (428 chars)" in todo.text
    edit = tool_turns(doc, "write")[0].meta["edits"][0]
    assert edit["new_text"].startswith("def distill_context(ticket_id: str = None, target_ref: str = None):")
    native = parse(file_candidate(NATIVE))[0][0]
    assert native.thread_id == "20260403_23" and len(tool_turns(native, "shell")) == 4


def test_the_same_session_from_the_database_and_its_export_is_one_document(tmp_path: Path):
    db_doc = by_thread(build_db(tmp_path / "data"))["20260403_23"]
    export_doc = parse(file_candidate(NATIVE))[0][0]
    assert db_doc.doc_id == export_doc.doc_id
    assert [t.text for t in db_doc.turns] == [t.text for t in export_doc.turns]


def test_cut_and_misshaped_exports_are_one_line(tmp_path: Path):
    data = NATIVE.read_bytes()
    cases = {"cut.json": data[: len(data) // 2], "empty.json": b"", "list.json": b"[1, 2]",
             "other.json": json.dumps({"id": "x", "messages": []}).encode(),
             "conv.json": json.dumps({**export(NATIVE), "conversation": "nope"}).encode()}
    for name, body in cases.items():
        path = tmp_path / name
        path.write_bytes(body)
        with pytest.raises(UnrecognisedSource) as caught:
            parse(file_candidate(path))
        message = str(caught.value)
        assert message.startswith(f"{path}: not a") and "\n" not in message, message
    empty = tmp_path / "noconv.json"
    empty.write_text(json.dumps({**export(NATIVE), "conversation": None}))
    docs, report = parse(file_candidate(empty))
    assert docs == [] and report.counts["sessions_without_messages"] == 1


# -- legacy .jsonl sessions (goose before sessions.db) ------------------------------------------

def write_legacy(path: Path, session: dict[str, Any], *, metadata: bool = True, cut_last: bool = False) -> None:
    """goose's legacy layout: a SessionMetadata line, then one Message per line (real messages)."""
    meta = {"working_dir": session["working_dir"], "description": session["name"], "schedule_id": None,
            "message_count": len(session["conversation"]), "total_tokens": session["total_tokens"]}
    lines = ([json.dumps(meta)] if metadata else []) + [json.dumps(m) for m in session["conversation"]]
    text = "\n".join(lines) + "\n"
    if cut_last:
        text = text[: text.rindex("{\"id\"") + 40]
    path.write_text(text, encoding="utf-8")


def test_legacy_session_file(tmp_path: Path):
    path = tmp_path / "20250101_120000.jsonl"
    write_legacy(path, export(CONVERGE))
    assert ADAPTER.recognises(path)
    doc = parse(file_candidate(path))[0][0]
    assert doc.thread_id == "20250101_120000" and doc.title == "Git merge conflict resolution"
    assert doc.metadata["cwd"] == CWD and doc.metadata["store"] == "legacy jsonl"
    assert len(tool_turns(doc, "shell")) == 2 and tool_turns(doc, "write")[0].meta["edits"]
    bare = tmp_path / "named.jsonl"
    write_legacy(bare, export(CONVERGE), metadata=False)
    assert ADAPTER.recognises(bare) and parse(file_candidate(bare))[0][0].thread_id == "named"


def test_legacy_file_with_a_half_written_last_line_keeps_the_complete_ones(tmp_path: Path):
    path = tmp_path / "20250101_120000.jsonl"
    write_legacy(path, export(CONVERGE), cut_last=True)
    docs, report = parse(file_candidate(path))
    assert docs and report.counts["partial_last_line"] == 1
    assert not any(t.text.startswith("All done!") for t in docs[0].turns)
    assert any("last line is incomplete" in w for w in report.warnings)
    garbage = tmp_path / "bad.jsonl"
    garbage.write_text("not json\nstill not\n")
    with pytest.raises(UnrecognisedSource, match=r"bad\.jsonl: not a goose session"):
        parse(file_candidate(garbage))


# -- edits of goose's editing tools -------------------------------------------------------------

def test_edits_of_the_text_editor_and_the_2026_edit_tool(tmp_path: Path):
    """Synthetic requests in the argument shapes of goose's own tool definitions: the 2025
    `developer__text_editor` (command write / str_replace / insert) and the 2026 built-in
    `edit {path, before, after}`; the real fixtures hold only `write`."""
    def request(call_id: str, name: str, args: dict) -> dict:
        return {"id": f"m{call_id}", "role": "assistant", "created": 1775245900, "metadata": {"userVisible": True},
                "content": [{"type": "toolRequest", "id": call_id,
                             "toolCall": {"status": "success", "value": {"name": name, "arguments": args}}}]}

    session = export(CONVERGE)
    session["conversation"] += [
        request("c1", "developer__text_editor", {"command": "write", "path": "a.py", "file_text": "A = 1\n"}),
        request("c2", "developer__text_editor", {"command": "str_replace", "path": "a.py", "old_str": "A = 1", "new_str": "A = 2"}),
        request("c3", "developer__text_editor", {"command": "insert", "path": "a.py", "insert_line": 1, "new_str": "B = 3"}),
        request("c4", "edit", {"path": "b.py", "before": "x = 1", "after": "x = 10"}),
        {"id": "bad", "role": "assistant", "created": 1775245901,
         "content": [{"type": "toolRequest", "id": "c5", "toolCall": {"status": "error", "error": "could not parse arguments"}}]},
    ]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(session))
    doc = parse(file_candidate(path))[0][0]
    edits = {t.meta["tool_use_id"]: t.meta.get("edits") for t in doc.turns if t.role == "tool"}
    assert edits["c1"] == [{"path": "a.py", "op": "write", "abs_path": f"{CWD}/a.py", "new_text": "A = 1\n"}]
    assert edits["c2"][0]["old_text"] == "A = 1" and edits["c2"][0]["new_text"] == "A = 2"
    assert edits["c3"][0]["new_text"] == "B = 3"
    assert edits["c4"] == [{"path": "b.py", "op": "edit", "abs_path": f"{CWD}/b.py", "old_text": "x = 1", "new_text": "x = 10"}]
    bad = next(t for t in doc.turns if t.meta.get("tool_use_id") == "c5")
    assert bad.meta["is_error"] and "could not parse arguments" in bad.text


# -- routing and stores -------------------------------------------------------------------------

def test_recognises_goose_files_and_no_other_agents():
    assert all(ADAPTER.recognises(p) for p in (REAL_DB, NATIVE, CONVERGE))
    assert not ADAPTER.recognises(REAL_DATA / "projects.json")
    kinds = {p.name for p in FIXTURES.iterdir() if p.is_dir()} - {"goose"}
    assert {"claude-code", "codex-rollout", "opencode", "gemini_cli", "cline"} <= kinds
    others = [p for kind in sorted(kinds) for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert len(others) > 50
    assert [p for p in others if ADAPTER.recognises(p)] == []


def test_stores_follow_goose_path_root_xdg_and_appdata(tmp_path: Path):
    home = tmp_path / "u"
    where = Where(home=home, env={"GOOSE_PATH_ROOT": str(tmp_path / "g"), "XDG_DATA_HOME": str(tmp_path / "x"),
                                  "APPDATA": str(tmp_path / "r")})
    assert STORES[0].locate(where) == [
        tmp_path / "g" / "data" / "sessions", tmp_path / "x" / "goose" / "sessions",
        home / ".local/share" / "goose" / "sessions", tmp_path / "r" / "Block" / "goose" / "data" / "sessions",
        home / "AppData" / "Roaming" / "Block" / "goose" / "data" / "sessions"]
    bare = STORES[0].locate(Where(home=home, env={"GOOSE_PATH_ROOT": "relative/ignored"}))
    assert bare[0] == home / ".local/share" / "goose" / "sessions"


# -- end to end ---------------------------------------------------------------------------------

def test_ingest_finds_goose_sessions_under_home(tmp_path: Path, chinvex_home: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    build_db(home / ".local" / "share" / "goose", v13=True)
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA", "GOOSE_PATH_ROOT"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "goose" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [] and result.json["sources"]["indexed"] == 2, result
    got = run_cli_in_process("get", "20260403_23", "--context", "X", "--json")
    assert got.code == 0 and got.json["thread_id"] == "20260403_23", got
    turns = got.json["turns"]
    assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 2, again


def test_a_database_that_cannot_be_opened_in_place_is_read_from_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A WAL database in a folder the reader cannot write (no shared-memory file can be made)."""
    db = build_db(tmp_path / "data", wal=True)
    real = kit_sqlite._connect
    opened: list[Path] = []

    def connect(path: Path) -> sqlite3.Connection:
        opened.append(path)
        if path == db:
            raise sqlite3.OperationalError("unable to open database file")
        return real(path)

    monkeypatch.setattr(kit_sqlite, "_connect", connect)
    cands, _ = candidates(db)
    assert [c.thread_id for c in cands] == ["20260403_20", "20260403_23"]
    assert opened[0] == db and opened[1] != db and opened[1].name == "sessions.db"
    assert not opened[1].exists()  # the copy is removed after use
