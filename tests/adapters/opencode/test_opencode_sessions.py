"""OpenCode sessions (JSON files and the database) → documents: words, tools, edits, sub-agents."""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path
from chinvex_adapters.opencode.transcript import build
from helpers import tool_turns
from opencode_support import (
    ADAPTER,
    CWD,
    DB,
    EDIT_ID,
    MORE_TOOLS,
    PLAN_ID,
    PROMPT,
    STORAGE,
    _add_child_session,
    _copy_store,
    by_thread,
    session_file,
    texts,
)


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
