"""The IDE's composers: candidates, bubbles, workspaces, odd rows, overrides, ingest."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any
import pytest
from chinvex.ingest import fingerprints as fps
from chinvex.models.sources import ParseReport, UnrecognisedSource
from chinvex_adapters.cursor import STORES
from chinvex_adapters.kit.registry import Where
from helpers import assert_no_traceback, run_cli, run_cli_in_process
from cursor_support import (
    ADAPTER,
    AFTER,
    BAD_CID,
    CID,
    CLI_MESSAGES,
    DRAFT_CID,
    OLD_CID,
    README_LOG,
    SESSION_ID,
    SLUG,
    _assistant,
    _candidates,
    _cli_store,
    _ide_db,
    _jsonl,
    _parse_candidate,
    _user,
    _workspace,
    in_project,
    one,
    one_doc,
    tools,
)


def test_ide_composers_are_candidates_skipped_while_unchanged(tmp_path: Path):
    storage = tmp_path / "User" / "globalStorage"
    db = _ide_db(storage / "state.vscdb")
    (storage / "saoudrizwan.claude-dev" / "tasks").mkdir(parents=True)  # another extension's
    cands, skipped = _candidates(storage)
    assert {c.thread_id for c in cands} == {CID, OLD_CID, BAD_CID}
    assert [s.detail for s in skipped if s.source_uri.endswith(DRAFT_CID)] == ["an empty composer (a draft)"]
    new = next(c for c in cands if c.thread_id == CID)
    assert new.source_uri == f"{db}#{CID}" and new.path is None
    assert new.thread_updated_at == "2026-06-01T10:00:10.000Z" and new.last_turn_id == "8:gone"
    fp = fps.Fingerprint(source_uri=new.source_uri, context_name="t", source_type="agent_session", doc_id="d",
                         size_bytes=1, mtime_unix=1, content_sha256=None, thread_updated_at=new.thread_updated_at,
                         last_turn_id=new.last_turn_id, parser_version=ADAPTER.parser_version, chunker_version="c",
                         embedded_model="m", last_ingested_at_unix=1, last_status="ok", last_error=None,
                         source_root=str(storage), adapter="cursor", state=None)
    versions = fps.Versions(ADAPTER.parser_version, "c", "m")
    assert fps.decide(fp, new, versions, full=False).reason == fps.UNCHANGED
    _ide_db(db, last_updated=1780308099000)
    moved = next(c for c in _candidates(storage)[0] if c.thread_id == CID)
    assert fps.decide(fp, moved, versions, full=False).reason == fps.THREAD_UPDATED


def test_composers_are_listed_alike_without_sqlites_json_functions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from chinvex_adapters.cursor import ide

    db = _ide_db(tmp_path / "state.vscdb")
    with sqlite3.connect(db) as conn:
        def rows() -> list[tuple[Any, ...]]:
            return sorted((r.composer_id, r.valid, r.messages, r.updated_at, r.last_turn) for r in ide.list_composers(conn))
        in_sql = rows()
        monkeypatch.setattr(ide, "_LIST", "SELECT no_such_function(1)")
        assert rows() == in_sql and (CID, True, 8, "2026-06-01T10:00:10.000Z", "8:gone") in in_sql


def test_ide_composer_bubbles_become_turns(tmp_path: Path):
    db = _ide_db(tmp_path / "globalStorage" / "state.vscdb")
    cand = next(c for c in _candidates(db)[0] if c.thread_id == CID)
    docs, report = _parse_candidate(cand)
    doc = docs[0]
    assert doc.thread_id == CID and doc.title == "Fix the crash" and doc.source_uri == f"{db}#{CID}"
    assert doc.metadata["cwd"] == "/work/app" and doc.metadata["model"] == "gpt-5"
    assert doc.metadata["store"] == "ide_db" and doc.metadata["usage"] == {"input_tokens": 100, "output_tokens": 20}
    user = doc.turns[0]
    assert (user.role, user.text, user.ts.isoformat()) == ("user", "Fix the crash in app.py", "2026-06-01T10:00:00+00:00")
    assert [(a.kind, a.path) for a in user.attachments] == [("file", "/work/app/app.py"), ("image", "/tmp/shot.png")]
    assert doc.turns[1].meta["thinking"] and doc.turns[1].text == "The crash is an off-by-one."
    replace = tools(doc, "search_replace")[0]
    assert replace.meta["edits"] == [{"path": "app.py", "op": "edit", "abs_path": "/work/app/app.py",
                                      "old_text": "i <= n", "new_text": "i < n"}]
    assert replace.text.endswith("Result:\n-i <= n\n+i < n") and replace.meta["tool_use_id"] == "tc-search_replace"
    v2 = tools(doc, "edit_file_v2")[0].meta["edits"][0]
    assert (v2["abs_path"], v2["old_text"], v2["new_text"]) == ("/work/app/app.py", "before\n", AFTER)
    assert tools(doc, "run_terminal_command_v2")[0].text.endswith("Result:\nok\n(exit code 0)")
    failed = tools(doc, "read_file")[0]
    assert failed.meta["is_error"] and "File not found" in failed.text and failed.meta["status"] == "error"
    assert [t.text for t in doc.turns if t.role != "tool"][-2:] == ["Fixed.", "thanks!"]
    assert "old branch" not in " ".join(t.text for t in doc.turns)
    assert report.counts["bubbles_missing"] == 1 and report.counts["bubbles_invalid"] == 1
    assert report.counts["bubbles_off_conversation"] == 1 and report.counts["bubbles_after_headers"] == 1
    assert "iVBORw0KGgo" not in doc.model_dump_json()


def test_ide_old_inline_composer_its_workspace_and_a_broken_one(tmp_path: Path):
    db = _ide_db(tmp_path / "User" / "globalStorage" / "state.vscdb")
    storage = tmp_path / "User" / "workspaceStorage"
    _workspace(storage, "a1", "file:///home/u/old%20proj", "composer.composerData",
               {"allComposers": [{"composerId": OLD_CID, "name": ""}], "selectedComposerId": OLD_CID})
    _workspace(storage, "b2", "file:///elsewhere", "workbench.panel.composerChatViewPane.5e1f",
               {f"workbench.panel.aichat.view.{CID}": {"collapsed": False}})
    cands = {c.thread_id: c for c in _candidates(db)[0]}
    assert cands[CID].extra["cwd"] == "/elsewhere"
    assert one_doc(cands[CID]).metadata["cwd"] == "/work/app"  # the composer's own workspace wins
    doc = one_doc(cands[OLD_CID])
    assert doc.metadata["cwd"] == "/home/u/old proj"
    assert [(t.role, t.text) for t in doc.turns] == [("user", "what does this regex do?"),
                                                     ("assistant", "re.compile(r'x+')")]
    assert doc.turns[0].ts.isoformat().startswith("2024-05-29T16:26:40") and doc.title == "what does this regex do?"
    assert doc.turns[1].ts.isoformat().startswith("2024-05-29T16:26:41")
    with pytest.raises(UnrecognisedSource) as info:
        _parse_candidate(cands[BAD_CID])
    assert str(info.value).startswith(f"{db}#{BAD_CID}: ") and "\n" not in str(info.value)


def test_odd_rows_and_blobs_are_counted_and_passed_over(tmp_path: Path):
    db = _ide_db(tmp_path / "state.vscdb")
    conn = sqlite3.connect(db)
    conn.executemany("INSERT INTO cursorDiskKV VALUES(?, ?)", [
        (f"bubbleId:{CID}:odd1", json.dumps([1, 2])),
        (f"bubbleId:{CID}:odd2", json.dumps({"type": [2], "createdAt": "2026-06-01T11:00:00Z"})),
        (f"bubbleId:{CID}:odd3", json.dumps({"type": 2, "createdAt": "2026-06-01T11:00:01Z", "text": 5,
                                             "toolFormerData": {"name": ["x"], "rawArgs": 7, "result": [1]}})),
        (f"bubbleId:{CID}:odd4", json.dumps({"type": 1, "createdAt": "2026-06-01T11:00:02Z", "text": "still here",
                                             "context": {"fileSelections": "x", "selectedImages": 5},
                                             "images": {"a": 1}}))])
    conn.commit()
    conn.close()
    report = ParseReport()
    docs = list(ADAPTER.parse_file(db, report, None, None))  # a whole database handed over by content
    assert {d.thread_id for d in docs} == {CID, OLD_CID} and docs[0].source_uri.startswith(f"{db}#")
    doc = next(d for d in docs if d.thread_id == CID)
    assert doc.turns[-1].text == "still here" and doc.turns[-2].tool.name == "tool"
    assert report.counts["bubbles_invalid"] == 2 and report.counts["bubbles_unknown_type"] == 1
    assert report.counts["composers_unreadable"] == 1
    odd = [{"role": ["x"], "content": 5}, {"role": "assistant", "content": [{"type": {"a": 1}}, 7,
                                                                            {"type": "tool-call", "toolName": 5, "args": [1]}]}]
    doc, report = one(_cli_store(tmp_path / "c" / "store.db", CLI_MESSAGES + odd))
    assert doc.turns[-1].tool.name == "5" and report.counts["messages_unknown_role"] == 1
    jsonl = _jsonl(tmp_path / "j.jsonl", [_user("<user_query>\nhi\n</user_query>"),
                                          {"role": "assistant", "message": {"content": [{"type": ["x"]}, {"text": 5}]}},
                                          _assistant({"type": "text", "text": "hello"})])
    doc, _ = one(jsonl)
    assert [t.text for t in doc.turns] == ["hi", "hello"]


def test_editor_databases_without_cursor_chats_and_unreadable_ones(tmp_path: Path):
    plain = tmp_path / "Code" / "User" / "globalStorage" / "state.vscdb"
    plain.parent.mkdir(parents=True)
    sqlite3.connect(plain).execute("CREATE TABLE ItemTable (key TEXT, value BLOB)").connection.commit()
    cands, skipped = _candidates(plain)
    assert cands == [] and skipped[0].reason == "not_supported"
    junk = tmp_path / "junk" / "state.vscdb"
    junk.parent.mkdir()
    junk.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    cands, skipped = _candidates(junk)
    assert cands == [] and len(skipped) == 1 and "\n" not in skipped[0].detail


def test_stores_follow_the_overrides(tmp_path: Path):
    env = {"CURSOR_CONFIG_DIR": str(tmp_path / "cfg"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "APPDATA": str(tmp_path / "roaming")}
    located = {store.label: store.locate(Where(home=tmp_path / "h", env=env)) for store in STORES}
    assert located["Cursor agent transcripts"][:3] == [tmp_path / "cfg/projects", tmp_path / "xdg/cursor/projects",
                                                       tmp_path / "h/.config/cursor/projects"]
    assert located["Cursor CLI chats"][-1] == tmp_path / "h/.cursor/chats"
    ide = located["Cursor IDE chats"]
    for want in ("xdg/Cursor/User/globalStorage", "h/.config/Cursor/User/globalStorage",
                 "h/Library/Application Support/Cursor/User/globalStorage",
                 "roaming/Cursor/User/globalStorage", "h/.cursor-server/data/User/globalStorage"):
        assert tmp_path / want in ide
    assert not any(".vscode-server" in str(p) for p in ide)


def test_ingest_reads_every_cursor_store_under_home(tmp_path: Path, chinvex_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    in_project(home, README_LOG)
    (home / ".cursor/projects" / SLUG / "terminals").mkdir()
    (home / ".cursor/projects" / SLUG / "terminals" / "4.txt").write_text("$ npm run deploy\n")
    (home / ".cursor" / "cli-config.json").write_text('{"authToken": "secret"}')
    cli_cwd = "/home/u/cli_proj"
    _cli_store(home / ".cursor/chats" / hashlib.md5(cli_cwd.encode()).hexdigest() / "agent" / "store.db")
    _ide_db(home / ".config/Cursor/User/globalStorage/state.vscdb")
    # The IDE chat's JSONL transcript too (same id, fewer details): one document, the IDE's copy.
    _jsonl(home / ".cursor/projects/work-app/agent-transcripts" / CID / f"{CID}.jsonl",
           [_user("<user_query>\nFix the crash in app.py\n</user_query>"), _assistant({"type": "text", "text": "Fixed."}),
            _user("<user_query>\nthanks!\n</user_query>")])
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "APPDATA", "CURSOR_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "cursor" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["sources"]["indexed"] == 5, result  # 2 + 1 + 2 composers
    assert result.json["errors"] == [] and result.json["sources"]["skipped_unrecognised"] == 1, result
    got = run_cli("get", SESSION_ID, "--context", "X", "--json", env={"HOME": str(home)})
    assert got.code == 0 and got.json["thread_id"] == SESSION_ID, got
    turns = got.json["turns"]
    assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    ide = run_cli("get", CID, "--context", "X", "--json", env={"HOME": str(home)})
    assert ide.code == 0 and ide.json["turns"][0]["text"] == "Fix the crash in app.py", ide
    assert ide.json["source_uri"].endswith(f"state.vscdb#{CID}") and ide.json["title"] == "Fix the crash"
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 5, again
