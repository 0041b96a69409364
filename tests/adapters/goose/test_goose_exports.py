"""Goose exports and legacy session files, edits, recognition, stores and ingest."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
import pytest
from chinvex.models.sources import UnrecognisedSource
from chinvex_adapters.goose import STORES
from chinvex_adapters.kit import sqlite as kit_sqlite
from chinvex_adapters.kit.registry import Where
from helpers import FIXTURES, assert_no_traceback, run_cli_in_process, tool_turns
from goose_support import (
    ADAPTER,
    CONVERGE,
    CWD,
    EXPORTS,
    NATIVE,
    REAL_DATA,
    REAL_DB,
    build_db,
    by_thread,
    candidates,
    export,
    file_candidate,
    parse,
    write_legacy,
)


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
