"""The opencode adapter on the real samples in tests/fixtures/samples/opencode (see its
PROVENANCE.md): one user's history of two sessions as the JSON store OpenCode 1.0.107 wrote,
and the same history as the opencode.db OpenCode 1.3.2's own migration made of it. What no real
sample holds (write, apply_patch and multiedit calls, reasoning, files, sub-agents, failed and
unfinished calls, the 1.18 schema) is written here in the shapes the format notes document, on
copies of the real store."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from chinvex.models.sources import (AdapterOptions, ParseReport, SkippedSource, SourceCandidate, SourceError,
                             UnrecognisedSource)
from chinvex_adapters.agents import identify
from chinvex_adapters.kit.registry import Where
from chinvex_adapters.kit import sqlite as kit_sqlite
from chinvex_adapters.opencode.adapter import OpenCodeAdapter
from chinvex_adapters.opencode.layout import opencode_stores
from chinvex_adapters.opencode.transcript import build
from helpers import FIXTURES, assert_no_traceback, run_cli, run_cli_in_process, tool_turns

SAMPLES = FIXTURES / "opencode" / "jwp23-dotfiles"
STORAGE = SAMPLES / "storage-1.0.107" / "storage"
DB = SAMPLES / "sqlite-migrated-by-1.3.2" / "opencode.db"
PROJECT = "98f0326ae5594d769602840258229a7888e46ff5"
EDIT_ID = "ses_53993b312ffeefelTsBlbUVXV8"  # the session that edited README.md
PLAN_ID = "ses_539950424ffev4SAECXTZKSubM"  # plan mode: an API error, two reads, no edit
CWD = "/Users/user/workspace/mordant-software/claude-instructions"
PROMPT = ("Update README.md with a section called Comamnds. In that section put an explanation of "
          "`/story` develop user stories for a prd.md document")
ADAPTER = OpenCodeAdapter()


def session_file(storage: Path, session_id: str) -> Path:
    return storage / "session" / PROJECT / f"{session_id}.json"


def candidates(root: Path) -> tuple[list[SourceCandidate], list[SkippedSource]]:
    items = list(ADAPTER.enumerate(root, AdapterOptions(context_name="t")))
    return ([i for i in items if isinstance(i, SourceCandidate)],
            [i for i in items if isinstance(i, SkippedSource)])


def parse(cand: SourceCandidate) -> tuple[list, ParseReport]:
    report = ParseReport()
    return list(ADAPTER.parse(cand, report, None)), report


def by_thread(root: Path) -> dict[tuple[str, str], tuple]:
    """(store, thread id) -> (doc, report, candidate) for every session under `root`."""
    out = {}
    for cand in candidates(root)[0]:
        docs, report = parse(cand)
        assert len(docs) == 1, report
        out[(cand.extra["store"], cand.thread_id)] = (docs[0], report, cand)
    return out


def texts(doc, role: str, thinking: bool = False) -> list[str]:
    return [t.text for t in doc.turns if t.role == role and bool(t.meta.get("thinking")) == thinking]


@pytest.fixture(scope="module")
def sample() -> dict:
    return by_thread(SAMPLES)


# -- the real JSON store (OpenCode 1.0.107) ----------------------------------------------------

def test_json_session_words_tools_and_facts(sample: dict):
    doc, report, cand = sample[("json", EDIT_ID)]
    assert cand.path == session_file(STORAGE, EDIT_ID) and cand.source_uri == str(cand.path)
    assert doc.source == "opencode" and doc.thread_id == EDIT_ID
    assert doc.title == "Adding /story command to README"
    assert doc.metadata["cwd"] == CWD and doc.links.repo_paths == [CWD]
    assert doc.metadata["model"] == "anthropic/claude-sonnet-4-5-20250929"
    assert doc.metadata["opencode_version"] == "1.0.107" and doc.metadata["store"] == "json"
    assert doc.metadata["project"]["worktree"] == CWD and doc.metadata["agents"] == ["plan", "build"]
    assert doc.metadata["tokens"]["output"] == 812 and doc.metadata["summary"]["additions"] == 15
    assert texts(doc, "user") == [PROMPT, PROMPT, "quit"]
    assistant = texts(doc, "assistant")
    assert assistant[-1] == "Goodbye! Feel free to return anytime you need assistance with your project."
    assert any(t.startswith("Done! I've updated the README.md with a new Commands section") for t in assistant)
    assert doc.turns[0].role == "user" and doc.turns[0].turn_id == "msg_ac66c4cef001J45w2a5xRw64QH"
    assert doc.turns[0].meta["agent"] == "plan"
    # Real times from the objects: the prompt's message, the reply's text part.
    assert doc.created_at.isoformat() == "2025-11-27T17:46:17.714000+00:00"
    assert doc.updated_at.isoformat() == "2025-11-27T17:47:56.878000+00:00"
    assert all(t.ts is not None for t in doc.turns)
    read = tool_turns(doc, "read")[0]
    assert read.meta["tool_use_id"] == "toolu_01GKm76mtyYJa8qCjnb1fMPS" and read.meta["title"] == "README.md"
    assert read.tool.input == {"filePath": f"{CWD}/README.md"}
    assert "Result:\n<file>\n00001| # claude-instructions" in read.text
    assert read.ts.isoformat() == "2025-11-27T17:46:20.606000+00:00"
    # step-start/step-finish are bookkeeping; the patch part names the changed file.
    assert doc.metadata["files_changed"] == [f"{CWD}/README.md"]
    assert report.counts["tool_calls"] == 3 and report.state == {"messages": 8, "parts": 22}


def test_json_session_edit_keeps_path_and_new_text(sample: dict):
    doc, report, _ = sample[("json", EDIT_ID)]
    (edit_turn,) = tool_turns(doc, "edit")
    assert edit_turn.meta["tool_use_id"] == "toolu_011jMe54MHJ5Pfi8u44UsW1C"
    assert edit_turn.text.endswith("Result: (no output)")  # OpenCode's edit returns "" when clean
    (edit,) = edit_turn.meta["edits"]
    assert edit["abs_path"] == f"{CWD}/README.md" and edit["op"] == "edit"
    assert edit["old_text"] == "# claude-instructions\nA collection of commands and prompts"
    assert edit["new_text"].startswith("# claude-instructions\nA collection of commands and prompts\n\n"
                                       "## Commands\n\n### `/story`\n\nDevelop user stories")
    assert doc.metadata["files_edited"] == [f"{CWD}/README.md"] and report.counts["file_edits"] == 1


def test_json_session_with_an_api_error(sample: dict):
    doc, _, _ = sample[("json", PLAN_ID)]
    assert doc.metadata["agents"] == ["plan"] and doc.metadata["errors"] == {"APIError": 1}
    error = next(t for t in doc.turns if t.role == "system")
    assert error.text == ("APIError: Extra usage must be enabled to use Opus. Visit "
                          "https://claude.ai/settings/usage to enable it.")
    assert error.ts.isoformat() == "2025-11-27T17:44:54.224000+00:00"
    assert [t.tool.name for t in doc.turns if t.role == "tool"] == ["read", "read"]
    assert texts(doc, "assistant")[-1].startswith("I can see that you're in READ-ONLY mode")
    assert "files_edited" not in doc.metadata


# -- the real database (the same history, migrated by OpenCode 1.3.2) --------------------------

def test_database_sessions_are_threads_with_their_real_update_time(sample: dict):
    _, _, cand = sample[("sqlite", EDIT_ID)]
    assert cand.path is None and cand.source_uri == f"{DB}#{EDIT_ID}"
    assert cand.thread_updated_at == "2025-11-27T17:47:57.001Z"  # not the migration's 2026 clock
    assert cand.last_turn_id == "8:msg_ac66dc6660021mvhMrC94FMLnG:22"
    doc, report, _ = sample[("sqlite", EDIT_ID)]
    assert doc.source_uri == cand.source_uri and doc.metadata["store"] == "sqlite"
    assert doc.metadata["db"] == str(DB) and report.state is None
    # Every part row's time_created is the migration's wall clock (2026-11-28); turns keep 2025.
    with sqlite3.connect(DB) as conn:
        assert {r[0] for r in conn.execute("SELECT time_created FROM part")} == {1795887244415}
    assert max(t.ts for t in doc.turns).isoformat() == "2025-11-27T17:47:56.878000+00:00"


def test_database_and_json_copies_are_one_document(sample: dict):
    for session in (EDIT_ID, PLAN_ID):
        from_json, _, _ = sample[("json", session)]
        from_db, _, _ = sample[("sqlite", session)]
        assert from_json.doc_id == from_db.doc_id
        assert [(t.turn_id, t.role, t.ts, t.text, t.meta) for t in from_json.turns] == \
               [(t.turn_id, t.role, t.ts, t.text, t.meta) for t in from_db.turns]
        # Same content: the database's copy (the live store) is written.
        assert ADAPTER.precedence_key(from_db) > ADAPTER.precedence_key(from_json)
    richer = sample[("json", EDIT_ID)][0].model_copy(deep=True)
    richer.turns.append(richer.turns[-1].model_copy(update={"turn_id": "later"}))
    assert ADAPTER.precedence_key(richer) > ADAPTER.precedence_key(sample[("sqlite", EDIT_ID)][0])


# -- what the real samples do not hold ------------------------------------------------------------

def _part(pid: str, mid: str, **data) -> dict:
    return {"id": pid, "sessionID": "ses_x", "messageID": mid, **data}


MORE_TOOLS = [
    ({"id": "msg_b1", "role": "user", "time": {"created": 1770000000000}, "agent": "build",
      "model": {"providerID": "openai", "modelID": "gpt-5"}},
     [_part("prt_b1a", "msg_b1", type="text", text="Refactor util and add notes"),
      _part("prt_b1b", "msg_b1", type="text", synthetic=True,
            text="Called the Read tool with the following input: {\"filePath\": \"util.py\"}"),
      _part("prt_b1c", "msg_b1", type="file", mime="image/png", filename="shot.png",
            url="data:image/png;base64," + "iVBORw0KGgo" * 400),
      _part("prt_b1d", "msg_b1", type="file", mime="text/plain", filename="util.py",
            url="file:///repo/util.py",
            source={"type": "file", "path": "/repo/util.py", "text": {"value": "SECRET_BODY", "start": 0, "end": 4}})]),
    ({"id": "msg_b2", "role": "assistant", "time": {"created": 1770000001000, "completed": 1770000009000},
      "parentID": "msg_b1", "modelID": "gpt-5", "providerID": "openai", "mode": "build", "agent": "build",
      "path": {"cwd": "/repo", "root": "/repo"}, "cost": 0.25,
      "tokens": {"input": 100, "output": 50, "reasoning": 10, "cache": {"read": 5, "write": 0}}},
     [_part("prt_b2a", "msg_b2", type="step-start", snapshot="abc"),
      _part("prt_b2b", "msg_b2", type="reasoning", text="Plan: patch util, write notes.",
            time={"start": 1770000002000, "end": 1770000002500}),
      _part("prt_b2c", "msg_b2", type="tool", callID="call_1", tool="apply_patch", state={
          "status": "completed", "input": {"patchText": "*** Begin Patch\n*** Update File: src/util.py\n@@\n"
                                                        "-def old():\n+def new():\n*** End Patch"},
          "output": "Success. Updated the following files:\nM src/util.py", "title": "src/util.py",
          "metadata": {}, "time": {"start": 1770000003000, "end": 1770000003100}}),
      _part("prt_b2d", "msg_b2", type="tool", callID="call_2", tool="write", state={
          "status": "completed", "input": {"filePath": "notes.md", "content": "# Notes\nhello\n"},
          "output": "", "title": "notes.md", "metadata": {"exists": False},
          "time": {"start": 1770000004000, "end": 1770000004100}}),
      _part("prt_b2e", "msg_b2", type="tool", callID="call_3", tool="multiedit", state={
          "status": "completed", "input": {"filePath": "/repo/a.py", "edits": [
              {"oldString": "x = 1", "newString": "x = 2"}, {"oldString": "y = 1", "newString": "y = 3"}]},
          "output": "", "title": "a.py", "metadata": {}, "time": {"start": 1770000005000, "end": 1770000005100}}),
      _part("prt_b2f", "msg_b2", type="tool", callID="call_4", tool="bash", state={
          "status": "error", "input": {"command": "pytest -q", "description": "Run tests"},
          "error": "Error: command exited with 1", "time": {"start": 1770000006000, "end": 1770000006100}}),
      _part("prt_b2g", "msg_b2", type="tool", callID="call_5", tool="task", state={
          "status": "completed", "input": {"description": "Explore", "prompt": "Find callers of new()",
                                           "subagent_type": "general"},
          "output": "Found 3 callers.", "title": "Explore", "metadata": {"sessionId": "ses_child1"},
          "time": {"start": 1770000007000, "end": 1770000008000}}),
      _part("prt_b2h", "msg_b2", type="tool", callID="call_6", tool="read",
            state={"status": "running", "input": {"filePath": "/repo/b.py"}, "time": {"start": 1770000008500}}),
      _part("prt_b2i", "msg_b2", type="text", text="Patched util, wrote notes.",
            time={"start": 1770000008800, "end": 1770000008900}),
      _part("prt_b2j", "msg_b2", type="step-finish", reason="stop", cost=0.25, tokens={}),
      _part("prt_b2k", "msg_b2", type="mystery")]),
    ({"id": "msg_b3", "role": "user", "time": {"created": 1770000010000}, "agent": "build"},
     [_part("prt_b3a", "msg_b3", type="subtask", agent="general", description="Review the patch",
            prompt="Check src/util.py for callers"),
      _part("prt_b3b", "msg_b3", type="text", text="@general review it"),
      _part("prt_b3c", "msg_b3", type="agent", name="general")]),
    ({"id": "msg_b4", "role": "assistant", "time": {"created": 1770000011000}, "summary": True,
      "modelID": "gpt-5", "providerID": "openai", "agent": "compaction", "error": {
          "name": "MessageAbortedError", "data": {"message": "The operation was aborted."}}},
     [_part("prt_b4a", "msg_b4", type="text", text="Summary: util patched, notes written.")]),
]


def test_edit_tools_reasoning_files_and_failed_calls():
    counts: Counter[str] = Counter()
    info = {"id": "ses_x", "projectID": "global", "directory": "/repo", "parentID": "ses_parent",
            "title": "New session - 2026-02-02T02:40:00.000Z", "version": "1.3.2",
            "time": {"created": 1770000000000, "updated": 1770000009000}}
    doc = build(info, MORE_TOOLS, counts, source_uri="x#ses_x", thread_id="ses_x", store="export", location={})
    assert doc.title == "Refactor util and add notes"  # the default title is no title
    assert doc.metadata["default_title"].startswith("New session - ")
    assert doc.metadata["parent_session_id"] == "ses_parent" and doc.metadata["sub_sessions"] == ["ses_child1"]
    assert doc.metadata["model"] == "openai/gpt-5" and doc.metadata["cost"] == 0.25
    user = doc.turns[0]
    assert user.text == "Refactor util and add notes" and "Called the Read tool" not in user.text
    assert [(a.kind, a.name, a.path, a.uri) for a in user.attachments] == [
        ("image", "shot.png", None, None), ("file", "util.py", "/repo/util.py", "file:///repo/util.py")]
    assert "iVBOR" not in doc.model_dump_json() and "SECRET_BODY" not in doc.model_dump_json()
    thinking = texts(doc, "assistant", thinking=True)
    assert thinking == ["Plan: patch util, write notes."]
    patch = tool_turns(doc, "apply_patch")[0].meta["edits"][0]
    assert (patch["abs_path"], patch["old_text"], patch["new_text"]) == ("/repo/src/util.py", "def old():", "def new():")
    write = tool_turns(doc, "write")[0].meta["edits"][0]
    assert (write["abs_path"], write["op"], write["new_text"]) == ("/repo/notes.md", "write", "# Notes\nhello\n")
    multi = tool_turns(doc, "multiedit")[0].meta["edits"]
    assert [(e["old_text"], e["new_text"]) for e in multi] == [("x = 1", "x = 2"), ("y = 1", "y = 3")]
    bash = tool_turns(doc, "bash")[0]
    assert bash.meta["is_error"] and "Result (error):\nError: command exited with 1" in bash.text
    task = tool_turns(doc, "task")[0]
    assert task.meta["child_session_id"] == "ses_child1" and "Found 3 callers." in task.text
    running = tool_turns(doc, "read")[0]
    assert running.meta["status"] == "running" and "Result" not in running.text
    assert texts(doc, "assistant")[-2] == "Patched util, wrote notes."
    assert counts["file_edits"] == 4 and counts["tool_calls_unfinished"] == 1
    assert counts["synthetic_text_left_out"] == 1 and counts["parts_unknown:mystery"] == 1
    assert doc.metadata["tokens"] == {"input": 100, "output": 50, "reasoning": 10, "cache_read": 5}
    # A subtask comes after the prompt that asked for it; a compaction summary is marked.
    tail = [(t.role, t.text, {k: v for k, v in t.meta.items() if k != "model"}) for t in doc.turns[-4:]]
    assert tail == [
        ("user", "@general review it", {"agent": "build", "mentions": ["general"]}),
        ("system", "Subtask general Review the patch\nCheck src/util.py for callers", {"subtask": True}),
        ("assistant", "Summary: util patched, notes written.", {"agent": "compaction", "compaction_summary": True}),
        ("system", "MessageAbortedError: The operation was aborted.", {"error": "MessageAbortedError"})]
    assert doc.metadata["agents"] == ["build", "compaction"]


def _copy_store(tmp_path: Path) -> Path:
    data = tmp_path / "opencode"
    shutil.copytree(STORAGE, data / "storage")
    shutil.copy(DB, data / "opencode.db")
    return data


def _add_child_session(conn: sqlite3.Connection) -> None:
    """A sub-agent session as OpenCode >= 1.2 writes it: a row with parent_id, its messages
    and parts with their ids, times in `data`."""
    conn.execute("INSERT INTO session(id, project_id, parent_id, slug, directory, title, version, "
                 "time_created, time_updated) VALUES(?,?,?,?,?,?,?,?,?)",
                 ("ses_child1", PROJECT, EDIT_ID, "brave-owl", CWD, "Explore callers (@general subagent)",
                  "1.3.2", 1770000007000, 1770000008000))
    for mid, message, parts in (
            ("msg_c1", {"role": "user", "time": {"created": 1770000007001}, "agent": "general",
                        "model": {"providerID": "anthropic", "modelID": "claude-haiku-4-5"}},
             [("prt_c1a", {"type": "text", "text": "Find callers of new()"})]),
            ("msg_c2", {"role": "assistant", "time": {"created": 1770000007002, "completed": 1770000007900},
                        "parentID": "msg_c1", "modelID": "claude-haiku-4-5", "providerID": "anthropic",
                        "mode": "general", "agent": "general", "path": {"cwd": CWD, "root": CWD},
                        "cost": 0, "tokens": {"input": 1, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
             [("prt_c2a", {"type": "text", "text": "Found 3 callers.", "time": {"start": 1770000007800}})])):
        conn.execute("INSERT INTO message VALUES(?,?,?,?,?)",
                     (mid, "ses_child1", message["time"]["created"], 1795887244415, json.dumps(message)))
        for pid, part in parts:
            conn.execute("INSERT INTO part VALUES(?,?,?,?,?,?)",
                         (pid, mid, "ses_child1", 1795887244415, 1795887244415, json.dumps(part)))


def test_a_sub_agent_session_in_the_database(tmp_path: Path):
    data = _copy_store(tmp_path)
    with sqlite3.connect(data / "opencode.db") as conn:
        _add_child_session(conn)
    found = by_thread(data)
    child, _, cand = found[("sqlite", "ses_child1")]
    assert cand.thread_updated_at == "2026-02-02T02:40:08.000Z" and cand.last_turn_id == "2:msg_c2:2"
    assert child.metadata["parent_session_id"] == EDIT_ID and child.metadata["slug"] == "brave-owl"
    assert child.title == "Explore callers (@general subagent)"
    assert texts(child, "user") == ["Find callers of new()"] and texts(child, "assistant") == ["Found 3 callers."]
    assert child.metadata["model"] == "anthropic/claude-haiku-4-5"


def test_the_newest_schema_reads_alike(tmp_path: Path):
    """OpenCode 1.18 adds session columns and tables (format notes, appendix)."""
    db = tmp_path / "opencode.db"
    shutil.copy(DB, db)
    with sqlite3.connect(db) as conn:
        for column in ("path text", "agent text", "model text", "cost real DEFAULT 0 NOT NULL",
                       "tokens_input integer DEFAULT 0 NOT NULL", "metadata text"):
            conn.execute(f"ALTER TABLE session ADD COLUMN {column}")
        conn.execute('CREATE TABLE "migration" (id TEXT PRIMARY KEY, time_completed INTEGER NOT NULL)')
        conn.execute("CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL, type text "
                     "NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL, "
                     "seq integer NOT NULL)")
        conn.execute("UPDATE session SET agent='build', cost=0.5")
    found = by_thread(db)
    assert {k for k in found} == {("sqlite", EDIT_ID), ("sqlite", PLAN_ID)}
    assert texts(found[("sqlite", EDIT_ID)][0], "user")[-1] == "quit"


# -- listing and incremental ingest ---------------------------------------------------------------

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


# -- damaged and foreign files --------------------------------------------------------------------

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


# -- end to end --------------------------------------------------------------------------------

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
