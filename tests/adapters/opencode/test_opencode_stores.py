"""OpenCode stores: listing, changes, locks, damage, exports, XDG paths, ingest."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
import pytest
from chinvex.models.sources import ParseReport, SourceCandidate, SourceError, UnrecognisedSource
from chinvex_adapters.agents import identify
from chinvex_adapters.kit.registry import Where
from chinvex_adapters.kit import sqlite as kit_sqlite
from chinvex_adapters.opencode.layout import opencode_stores
from helpers import FIXTURES, assert_no_traceback, run_cli, run_cli_in_process, tool_turns
from opencode_support import (
    ADAPTER,
    DB,
    EDIT_ID,
    PLAN_ID,
    PROJECT,
    PROMPT,
    STORAGE,
    _add_child_session,
    _copy_store,
    by_thread,
    candidates,
    parse,
    session_file,
    texts,
)


def test_a_data_folder_lists_both_stores_and_passes_over_the_rest(tmp_path: Path):
    data = _copy_store(tmp_path)
    (data / "auth.json").write_text('{"anthropic": {"type": "api", "key": "sk-ant-not-read"}}')
    for folder in ("snapshot", "tool-output", "log", "bin"):
        (data / folder).mkdir()
        (data / folder / "x").write_text("x")
    (data / "opencode.db-wal").write_bytes(b"")
    (data / "storage" / "session_share").mkdir()
    cands, skipped = candidates(data)
    assert sorted((c.extra["store"], c.thread_id) for c in cands) == [
        ("json", EDIT_ID), ("json", PLAN_ID), ("sqlite", EDIT_ID), ("sqlite", PLAN_ID)]
    why = {Path(s.source_uri).name: s.detail for s in skipped}
    assert why["auth.json"] == "credentials: never read"
    assert {"snapshot", "tool-output", "log", "bin", "session_diff", "session_share", "project"} <= set(why)
    assert "opencode.db-wal" not in why
    # The store's own folder, or one database, or one session file, as the root.
    assert {c.thread_id for c in candidates(data / "storage")[0]} == {EDIT_ID, PLAN_ID}
    assert {c.source_uri for c in candidates(data / "opencode.db")[0]} == {
        f"{data / 'opencode.db'}#{EDIT_ID}", f"{data / 'opencode.db'}#{PLAN_ID}"}
    (single,) = candidates(session_file(data / "storage", EDIT_ID))[0]
    assert single.size_bytes == next(c for c in cands if c.path == single.path).size_bytes


def test_a_json_session_changes_with_any_of_its_files(tmp_path: Path):
    data = _copy_store(tmp_path)
    storage = data / "storage"

    def stat() -> tuple[int, int]:
        (cand,) = [c for c in candidates(storage)[0] if c.thread_id == EDIT_ID]
        return cand.size_bytes, cand.mtime_ns

    first = stat()
    assert stat() == first
    # A part added to a message (its folder changes), then a message rewritten in place.
    message = "msg_ac66dc6660021mvhMrC94FMLnG"
    part = storage / "part" / message / "prt_ac66dd071001iwKXHO5ZqduHhh.json"
    shutil.copy(part, part.with_name("prt_ac66dd0720010000000000000.json"))
    second = stat()
    assert second != first and second[1] > first[1]
    path = storage / "message" / EDIT_ID / f"{message}.json"
    path.write_text(path.read_text().replace('"finish": "stop"', '"finish": "stop" '))
    assert stat()[0] == second[0] + 1


def test_a_database_session_changes_with_its_rows(tmp_path: Path):
    db = tmp_path / "opencode.db"
    shutil.copy(DB, db)

    def token() -> dict[str, tuple]:
        return {c.thread_id: (c.thread_updated_at, c.last_turn_id) for c in candidates(db)[0]}

    before = token()
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO part VALUES('prt_zz', 'msg_ac66dc6660021mvhMrC94FMLnG', ?, 1, 1, ?)",
                     (EDIT_ID, json.dumps({"type": "text", "text": "One more thing."})))
    after = token()
    assert after[PLAN_ID] == before[PLAN_ID]
    assert after[EDIT_ID][0] == before[EDIT_ID][0] and after[EDIT_ID][1] == "8:msg_ac66dc6660021mvhMrC94FMLnG:23"


def test_a_live_database_in_wal_mode_held_open_by_a_writer(tmp_path: Path):
    db = tmp_path / "opencode.db"
    shutil.copy(DB, db)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        _add_child_session(writer)  # committed to the -wal file only
        writer.execute("BEGIN IMMEDIATE")  # and the writer still holds its write lock
        writer.execute("UPDATE session SET title='renaming' WHERE id=?", (PLAN_ID,))
        assert (tmp_path / "opencode.db-wal").stat().st_size > 0
        found = by_thread(db)
        assert texts(found[("sqlite", "ses_child1")][0], "assistant") == ["Found 3 callers."]
        assert found[("sqlite", PLAN_ID)][0].title == "Adding /story command to README"  # uncommitted
    finally:
        writer.close()


def test_a_locked_database_is_an_error_of_that_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(kit_sqlite, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(kit_sqlite, "RETRIES", 2)
    db = tmp_path / "opencode.db"
    shutil.copy(DB, db)  # rollback-journal mode: an exclusive lock keeps readers out
    (cand,) = [c for c in candidates(db)[0] if c.thread_id == EDIT_ID]
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        cands, skipped = candidates(db)
        assert cands == [] and [(s.source_uri, s.reason) for s in skipped] == [(str(db), "unreadable")]
        with pytest.raises(SourceError) as locked:
            parse(cand)
        assert isinstance(locked.value, SourceError) and not isinstance(locked.value, UnrecognisedSource)
        assert str(locked.value).startswith(f"{db}: database is locked") and "\n" not in str(locked.value)
        whole = SourceCandidate(str(db), "agent_session", "opencode", str(tmp_path), db)  # handed over whole
        with pytest.raises(SourceError) as also:
            parse(whole)
        assert not isinstance(also.value, UnrecognisedSource) and "locked" in str(also.value)
    finally:
        writer.close()


def test_damaged_session_files_are_one_line(tmp_path: Path):
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    path = session_file(storage, EDIT_ID)
    raw = path.read_bytes()
    for content, words in ((raw[: len(raw) // 2], "not a readable OpenCode session"),
                           (b"", "empty file"), (b"[1, 2]", "not an OpenCode session (a JSON list"),
                           (b'{"id": "ses_1", "role": "user", "time": {}}', "a message or part")):
        path.write_bytes(content)
        cand = SourceCandidate(source_uri=str(path), source_type="agent_session", adapter="opencode",
                               root=str(storage), path=path, extra={"store": "json", "storage": str(storage)})
        with pytest.raises(UnrecognisedSource) as bad:
            parse(cand)
        assert str(bad.value).startswith(f"{path}: ") and words in str(bad.value) and "\n" not in str(bad.value)


def test_a_cut_message_or_part_is_counted_and_the_rest_kept(tmp_path: Path):
    storage = tmp_path / "storage"
    shutil.copytree(STORAGE, storage)
    message = storage / "message" / EDIT_ID / "msg_ac66dc654001WZqdpZg0xVo52C.json"  # the "quit" prompt
    message.write_bytes(message.read_bytes()[:40])
    part = storage / "part" / "msg_ac66cdb75002t99hu7VV6ai9Sr" / "prt_ac66ce284002cqGSD6XX5Bastk.json"
    part.write_bytes(part.read_bytes()[:-30])
    (cand,) = [c for c in candidates(storage)[0] if c.thread_id == EDIT_ID]
    (doc,), report = parse(cand)
    assert report.counts["messages_unreadable"] == 1 and report.counts["parts_unreadable"] == 1
    assert "quit" not in texts(doc, "user") and len(tool_turns(doc, "edit")) == 1
    assert not any(t.startswith("Done!") for t in texts(doc, "assistant"))


def test_a_database_the_reader_cannot_open_in_place_is_read_from_a_copy(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch):
    """A WAL database in a folder where the reader may not create its shared-memory file."""
    db = tmp_path / "opencode.db"
    shutil.copy(DB, db)
    opened: list[Path] = []
    real = kit_sqlite._connect

    def connect(path: Path) -> sqlite3.Connection:
        opened.append(path)
        if path == db:
            raise sqlite3.OperationalError("unable to open database file")
        return real(path)

    monkeypatch.setattr(kit_sqlite, "_connect", connect)
    found = by_thread(db)
    assert texts(found[("sqlite", EDIT_ID)][0], "user")[-1] == "quit"
    copies = [p for p in opened if p != db]
    assert copies and all(p.name == "opencode.db" and not p.parent.exists() for p in copies)


def test_a_session_file_outside_its_store(tmp_path: Path):
    lone = tmp_path / "ses_53993b312ffeefelTsBlbUVXV8.json"
    shutil.copy(session_file(STORAGE, EDIT_ID), lone)
    cands, (skipped,) = candidates(lone)
    assert cands == [] and "outside its store" in skipped.detail
    with pytest.raises(UnrecognisedSource) as bad:
        list(ADAPTER.parse_file(lone, ParseReport(), SourceCandidate(str(lone), "agent_session", "opencode", "", lone), None))
    assert str(bad.value).startswith(f"{lone}: not read (") and "\n" not in str(bad.value)


def test_broken_and_foreign_databases(tmp_path: Path):
    cut = tmp_path / "cut" / "opencode.db"
    cut.parent.mkdir()
    cut.write_bytes(DB.read_bytes()[:4096])
    goose = FIXTURES / "goose" / "jwp23-dotfiles" / "data" / "sessions" / "sessions.db"
    for path in (cut, goose):
        cands, skipped = candidates(path)
        assert cands == [] and len(skipped) == 1 and skipped[0].source_uri == str(path)
        with pytest.raises(SourceError) as bad:
            list(ADAPTER.parse_file(path, ParseReport(), SourceCandidate(str(path), "agent_session", "opencode", "", path), None))
        assert str(bad.value).startswith(f"{path}: ") and "\n" not in str(bad.value)
    assert candidates(goose)[1][0].reason == "not_supported" and "no session table" in candidates(goose)[1][0].detail


def test_recognises_its_files_and_no_other_agents():
    assert ADAPTER.recognises(DB) and identify(DB).name == "opencode"
    assert ADAPTER.recognises(session_file(STORAGE, EDIT_ID))
    assert not ADAPTER.recognises(STORAGE / "message" / EDIT_ID / "msg_ac66dc654001WZqdpZg0xVo52C.json")
    assert not ADAPTER.recognises(STORAGE / "part" / "msg_ac66dc654001WZqdpZg0xVo52C" /
                                  "prt_ac66dc655001bPwBrsCwBT0EIt.json")
    assert not ADAPTER.recognises(STORAGE / "project" / f"{PROJECT}.json")
    kinds = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "opencode"}
    assert {"claude-code", "codex-rollout", "cline", "goose", "gemini_cli"} <= kinds
    others = [p for kind in sorted(kinds) for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert len(others) > 50
    assert [p for p in others if ADAPTER.recognises(p)] == []


def test_an_export_is_read_like_the_store(tmp_path: Path, sample: dict):
    info = json.loads(session_file(STORAGE, EDIT_ID).read_text())
    messages = []
    for path in sorted((STORAGE / "message" / EDIT_ID).iterdir()):
        parts = [json.loads(p.read_text()) for p in sorted((STORAGE / "part" / path.stem).iterdir())]
        messages.append({"info": json.loads(path.read_text()), "parts": parts})
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"info": info, "messages": messages}, indent=2))
    (cand,) = candidates(export)[0]
    (doc,), _ = parse(cand)
    stored = sample[("json", EDIT_ID)][0]
    assert doc.doc_id == stored.doc_id and doc.metadata["store"] == "export"
    assert [t.text for t in doc.turns] == [t.text for t in stored.turns]
    assert ADAPTER.precedence_key(stored) > ADAPTER.precedence_key(doc)
    raw = export.read_bytes()
    export.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(UnrecognisedSource) as cut:
        parse(cand)
    assert str(cut.value).startswith(f"{export}: ") and "\n" not in str(cut.value)


def test_stores_follow_xdg_data_home_and_opencode_db(tmp_path: Path):
    home = tmp_path / "h"
    assert opencode_stores(Where(home, {})) == [home / ".local" / "share" / "opencode"]
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg"), "OPENCODE_DB": "/elsewhere/oc.db"}
    assert opencode_stores(Where(home, env)) == [tmp_path / "xdg" / "opencode", home / ".local/share/opencode",
                                                 Path("/elsewhere/oc.db")]
    relative = opencode_stores(Where(home, {"OPENCODE_DB": "dbs/dev.db"}))
    assert relative[-1] == home / ".local/share/opencode/dbs/dev.db"
    assert opencode_stores(Where(home, {"OPENCODE_DB": ":memory:"})) == [home / ".local/share/opencode"]


def test_ingest_finds_both_stores_under_home_and_makes_one_document_per_session(
        tmp_path: Path, chinvex_home: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    data.parent.mkdir(parents=True)
    shutil.copytree(STORAGE, data / "storage")
    shutil.copy(DB, data / "opencode.db")
    (data / "auth.json").write_text('{"anthropic": {"type": "api", "key": "sk-ant-not-read"}}')
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_DATA_HOME", "OPENCODE_DB"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "opencode" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [] and result.json["sources"]["indexed"] == 4, result
    got = run_cli("get", EDIT_ID, "--context", "X", "--json", env={"HOME": str(home)})
    assert got.code == 0 and got.json["thread_id"] == EDIT_ID, got
    assert got.json["source_uri"] == f"{data / 'opencode.db'}#{EDIT_ID}"  # the database's copy won
    turns = got.json["turns"]
    assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    assert turns[0]["text"] == PROMPT and turns[0]["ts"] == "2025-11-27T17:46:17.714Z"
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 4, again
    # OpenCode adds a part to the last reply: that session alone is read again.
    with sqlite3.connect(data / "opencode.db") as conn:
        conn.execute("INSERT INTO part VALUES('prt_zz', 'msg_ac66dc6660021mvhMrC94FMLnG', ?, 1, 1, ?)",
                     (EDIT_ID, json.dumps({"type": "text", "text": "Anything else about lighthouses?",
                                           "time": {"start": 1764265677000}})))
    third = run_cli_in_process("ingest", "--context", "X", "--json")
    assert third.code == 0 and third.json["sources"]["indexed"] == 1 and third.json["sources"]["unchanged"] == 3
    assert third.json["sources"]["reasons"] == {"thread_updated": 1}, third
    got = run_cli("get", EDIT_ID, "--context", "X", "--json", env={"HOME": str(home)})
    assert got.json["turns"][-1]["text"] == "Anything else about lighthouses?"
