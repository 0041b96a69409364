"""Goose's sessions database → documents: markers, words, tools, locks, damage."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
import pytest
from chinvex.models.sources import (
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex_adapters.goose import store as goose_store
from chinvex_adapters.kit import sqlite as kit_sqlite
from helpers import FIXTURES, tool_turns
from goose_support import (
    ADAPTER,
    CWD,
    OPTIONS,
    REAL_DATA,
    REAL_DB,
    SAMPLES,
    build_db,
    by_thread,
    candidates,
    file_candidate,
    parse,
)


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
