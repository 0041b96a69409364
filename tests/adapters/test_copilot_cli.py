"""The copilot_cli adapter on real GitHub Copilot CLI sessions (tests/fixtures/samples/copilot_cli):
an `events.jsonl` of CLI 1.0.34 and two legacy `history-session-state` files of October 2025;
copies made in tmp_path for what no real file shows (file edits in the event log with JSON-text
arguments, sub-agents, a resumed session, `workspace.yaml`, the flat `<id>.jsonl`, damaged files)."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, UnrecognisedSource
from chinvex_adapters.copilot_cli import STORES
from chinvex_adapters.copilot_cli.adapter import CopilotCliAdapter
from chinvex_adapters.kit.registry import Where
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli, run_cli_in_process

SAMPLES = FIXTURES / "copilot_cli" / "vibecodingtracker"
EVENTS_ID = "96ef38f0-9d09-45c3-8124-6448c36090ed"
EVENTS = SAMPLES / "session-state" / EVENTS_ID / "events.jsonl"
HISTORY = SAMPLES / "history-session-state"
MEMORY_ID = "06141331-92e8-4e9e-8bbb-9b7a729eb01a"
MEMORY = HISTORY / f"session_{MEMORY_ID}_1760182820882.json"
RENAME_ID = "0b2a81da-02cf-4cbb-ae14-07c597b84f4e"
RENAME = HISTORY / f"session_{RENAME_ID}_1760187292206.json"
CWD = "/home/user/repo/VibeCodingTracker"
ADAPTER = CopilotCliAdapter()


def parse(path: Path) -> tuple[list[ConversationDoc], ParseReport]:
    return parse_file(ADAPTER, path)


def one(path: Path) -> ConversationDoc:
    docs, _ = parse(path)
    assert len(docs) == 1
    return docs[0]


def tool(doc: ConversationDoc, call_id: str):
    return next(t for t in doc.turns if t.meta.get("tool_use_id") == call_id)


def events(path: Path = EVENTS) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def write_events(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


def event(kind: str, data: dict, n: int, **extra) -> dict:
    return {"type": kind, "data": data, "id": f"e{n}", "timestamp": f"2026-05-01T10:00:{n:02d}.000Z",
            "parentId": f"e{n - 1}" if n else None, **extra}


# -- the current event log ---------------------------------------------------------------------

def test_event_log_keeps_prompt_thinking_calls_results_and_answer():
    doc, report = (lambda r: (r[0][0], r[1]))(parse(EVENTS))
    assert doc.source == "copilot_cli" and doc.thread_id == EVENTS_ID and doc.source_uri == str(EVENTS)
    assert doc.metadata["cwd"] == CWD and doc.links.repo_paths == [CWD]
    assert doc.metadata["model"] == "claude-sonnet-4.6" and doc.metadata["copilot_version"] == "1.0.34"
    assert doc.metadata["git"]["branch"] == "refactor/gemini-copilot-new-formats"
    assert doc.metadata["modes"] == ["autopilot"] and doc.metadata["shutdown"]["totalPremiumRequests"] == 2
    user = doc.turns[0]
    assert user.role == "user" and user.text.startswith("請不要修改任何代碼 我希望你幫我調查一下")
    assert "<current_datetime>" not in user.text and user.ts == datetime(2026, 4, 23, 17, 11, 16, 238000, timezone.utc)
    assert doc.title.startswith("請不要修改任何代碼")
    thinking = [t for t in doc.turns if t.meta.get("thinking")]
    assert thinking[0].text.startswith("The user wants me to investigate documentation generation tools")
    answer = next(t for t in doc.turns if t.role == "assistant" and not t.meta.get("thinking"))
    assert answer.text.startswith("以下是我的調查結果") and answer.meta["model"] == "claude-sonnet-4.6"
    cargo = tool(doc, "toolu_01FHTLyT6qC9JDTbFbWJZ5Gu")
    assert cargo.tool.name == "view" and cargo.tool.input == {"path": f"{CWD}/Cargo.toml"}
    assert 'name = "vibe_coding_tracker"' in cargo.text and "edits" not in cargo.meta  # a view is no edit
    search = tool(doc, "toolu_01UeYdysjF2DK95UZmqh9Yo9")
    assert search.tool.name == "web_search" and "clap-markdown" in search.text
    assert '{"type":"output_text"' not in search.text  # the MCP result's text, not its JSON
    shell = tool(doc, "toolu_01WKZuJPKu3BeYihve2HNty4")
    assert "ls /home/user/repo/VibeCodingTracker/.github/workflows/" in shell.text and "build_release.yml" in shell.text
    nudge = next(t for t in doc.turns if t.role == "system")
    assert nudge.meta["injected"] == "autopilot_continuation" and "task_complete tool" in nudge.text
    assert [t.role for t in doc.turns].count("user") == 1
    assert tool(doc, "toolu_01DSiyXg818YbBrZ8uC5a52r").tool.name == "task_complete"
    assert report.counts["system_prompts_skipped"] == 2 and report.counts["encrypted_reasoning_dropped"] == 4
    assert report.counts["tool_calls"] == 11 and report.counts["tool_results_unmatched"] == 0
    assert doc.updated_at == datetime(2026, 4, 23, 17, 12, 51, 433000, timezone.utc)
    assert all(t.ts is not None for t in doc.turns)


def test_edits_sub_agents_resumes_and_workspace_yaml(tmp_path: Path):
    start = events()[0]
    folder = tmp_path / "session-state" / "sess-1"
    records = [
        {**start, "data": {**start["data"], "sessionId": "sess-1"}},
        event("user.message", {"content": "rename the tracker", "attachments": [
            {"type": "file", "path": f"{CWD}/README.md", "displayName": "README.md"},
            {"type": "blob", "data": "aGVsbG8=" * 10, "mimeType": "image/png", "displayName": "shot.png"}]}, 1),
        event("assistant.message", {"messageId": "m1", "content": "Editing.", "model": "gpt-5.4", "toolRequests": [
            {"toolCallId": "call_edit", "name": "edit", "type": "function",
             "arguments": json.dumps({"path": f"{CWD}/src/cli.rs", "old_str": "Vibe Coding", "new_str": "Vibe Code"})},
            {"toolCallId": "call_new", "name": "create", "type": "function",
             "arguments": {"path": "docs/NEW.md", "file_text": "# New\n"}},
            {"toolCallId": "call_task", "name": "task", "type": "function",
             "arguments": {"agent_type": "explore", "prompt": "find callers"}}]}, 2),
        event("assistant.message_delta", {"messageId": "m1", "deltaContent": "Edi"}, 3, ephemeral=True),
        event("tool.execution_complete", {"toolCallId": "call_new", "success": True,
                                          "result": {"content": "Created file docs/NEW.md"}}, 4),
        event("tool.execution_complete", {"toolCallId": "call_edit", "success": False,
                                          "error": {"message": "old_str not found"}}, 5),
        event("subagent.started", {"toolCallId": "call_task", "agentName": "explore",
                                   "agentDisplayName": "Explore", "agentDescription": ""}, 6),
        event("assistant.message", {"messageId": "m2", "content": "Callers are in main.rs.",
                                    "parentToolCallId": "call_task"}, 7, agentId="call_task"),
        event("subagent.completed", {"toolCallId": "call_task", "agentName": "explore",
                                     "agentDisplayName": "Explore", "durationMs": 1200}, 8),
        event("tool.execution_complete", {"toolCallId": "call_task", "success": True,
                                          "result": {"content": "main.rs calls it"}}, 9),
        event("session.shutdown", {"shutdownType": "routine", "codeChanges": {"filesModified": [f"{CWD}/src/cli.rs"]},
                                   "modelMetrics": {}, "sessionStartTime": 0, "totalApiDurationMs": 1}, 10),
        event("session.resume", {"resumeTime": "2026-05-02T09:00:00.000Z", "eventCount": 11,
                                 "context": {"cwd": "/elsewhere"}}, 11),
        event("tool.user_requested", {"toolCallId": "u1", "toolName": "bash", "arguments": {"command": "git status"}}, 12),
        event("tool.execution_complete", {"toolCallId": "u1", "success": True, "result": {"content": "clean"}}, 13),
        event("session.error", {"errorType": "rate_limit", "message": "Too many requests"}, 14),
        event("some.future_event", {"x": 1}, 15),
    ]
    write_events(folder / "events.jsonl", records)
    (folder / "workspace.yaml").write_text(f"id: sess-1\ncwd: {CWD}\nname: Rename the tracker\n"
                                           "summary: Old summary\ncreated_at: 2026-05-01T10:00:00.000Z\n")
    doc, report = (lambda r: (r[0][0], r[1]))(parse(folder / "events.jsonl"))
    assert doc.thread_id == "sess-1" and doc.title == "Rename the tracker"
    assert doc.metadata["workspace"]["name"] == "Rename the tracker" and doc.metadata["other_cwds"] == ["/elsewhere"]
    user = doc.turns[0]
    assert [(a.kind, a.path or a.name) for a in user.attachments] == [("file", f"{CWD}/README.md"), ("image", "shot.png")]
    assert "aGVsbG8" not in json.dumps([a.model_dump() for a in user.attachments])
    edit = tool(doc, "call_edit")
    assert edit.tool.input["old_str"] == "Vibe Coding" and edit.meta["is_error"] and "old_str not found" in edit.text
    assert edit.meta["edits"] == [{"path": f"{CWD}/src/cli.rs", "op": "edit", "abs_path": f"{CWD}/src/cli.rs",
                                   "old_text": "Vibe Coding", "new_text": "Vibe Code"}]
    created = tool(doc, "call_new")
    assert created.meta["edits"][0] == {"path": "docs/NEW.md", "op": "write", "abs_path": f"{CWD}/docs/NEW.md",
                                        "new_text": "# New\n"}
    sub = next(t for t in doc.turns if t.text == "Callers are in main.rs.")
    assert sub.meta["subagent"] == "call_task" and sub.meta["subagent_name"] == "explore"
    assert doc.metadata["subagents"][0]["status"] == "completed" and "main.rs calls it" in tool(doc, "call_task").text
    assert tool(doc, "u1").meta["user_requested"] and "clean" in tool(doc, "u1").text
    assert any(t.role == "system" and t.text == "Error (rate_limit): Too many requests" for t in doc.turns)
    assert doc.metadata["resumes"] == 1 and doc.metadata["files_edited"] == [f"{CWD}/src/cli.rs", f"{CWD}/docs/NEW.md"]
    assert doc.metadata["model"] == "gpt-5.4" and doc.metadata["shutdown"]["shutdownType"] == "routine"
    assert report.counts["events_ephemeral"] == 1 and report.counts["events_skipped:some.future_event"] == 1
    assert report.counts["attachment_bytes_dropped"] == 1


def test_flat_log_of_0_0_34x_and_a_legacy_str_replace_editor_insert(tmp_path: Path):
    flat = tmp_path / "session-state" / f"{EVENTS_ID}.jsonl"
    flat.parent.mkdir()
    shutil.copy(EVENTS, flat)
    doc = one(flat)
    assert doc.thread_id == EVENTS_ID and doc.metadata["layout"] == "flat" and doc.metadata["cwd"] == CWD
    old = [event("session.start", {"sessionId": "old-1", "version": 1, "producer": "copilot-agent",
                                   "copilotVersion": "0.0.350", "startTime": "2025-11-01T10:00:00.000Z"}, 0),
           event("user.message", {"content": "add a line"}, 1),
           event("assistant.message", {"messageId": "m", "content": "", "toolRequests": [
               {"toolCallId": "c1", "name": "str_replace_editor", "arguments": {
                   "command": "insert", "path": "/p/a.txt", "insert_line": 2, "new_str": "inserted"}}]}, 2),
           event("tool.execution_complete", {"toolCallId": "c1", "success": True, "result": {"content": "ok"}}, 3)]
    doc = one(write_events(tmp_path / "session-state" / "old-1.jsonl", old))
    assert doc.metadata["copilot_version"] == "0.0.350" and "cwd" not in doc.metadata
    assert tool(doc, "c1").meta["edits"] == [{"path": "/p/a.txt", "op": "edit", "abs_path": "/p/a.txt",
                                              "new_text": "inserted"}]


# -- the legacy history-session-state files ----------------------------------------------------

def test_legacy_session_reads_the_timeline_with_the_model_side_tool_outputs():
    doc = one(MEMORY)
    assert doc.thread_id == MEMORY_ID and doc.metadata["layout"] == "legacy" and doc.metadata["read_from"] == "timeline"
    assert doc.turns[0].role == "user" and doc.turns[0].text.startswith("專案經過了多輪跌代 可能會產生")
    assert doc.turns[0].ts == datetime(2025, 10, 11, 11, 40, 24, 449000, timezone.utc)
    assert doc.turns[1].text.startswith("I'll help you optimize memory usage in the VibeCodingTracker project.")
    claude_md = tool(doc, "toolu_017HSQoNjKo4AkvK9kgYZYVC")
    assert claude_md.tool.name == "str_replace_editor" and "1.# CLAUDE.md" in claude_md.text  # chatMessages' text
    edits = [e for t in doc.turns for e in t.meta.get("edits", [])]
    assert len(edits) == 5 and [e["op"] for e in edits].count("edit") == 4
    first = next(e for e in edits if e["op"] == "edit")
    assert first["path"] == f"{CWD}/src/models/analysis.rs" and first["new_text"].startswith("/// Details of a file write")
    plan = next(e for e in edits if e["op"] == "write")  # `cat > FILE << 'EOF'` through the bash tool
    assert plan["path"] == "/tmp/memory_optimization_plan.md"
    assert plan["new_text"].startswith("# Memory Optimization Plan for VibeCodingTracker")
    assert set(doc.metadata["files_edited"]) == {f"{CWD}/src/models/analysis.rs", f"{CWD}/src/analysis/common_state.rs",
                                                 "/tmp/memory_optimization_plan.md"}
    assert not any(t.role == "system" for t in doc.turns)  # "Connected to GitHub MCP Server" notices


def test_timeline_only_legacy_session_with_a_created_file():
    doc = one(RENAME)
    assert doc.thread_id == RENAME_ID and doc.metadata["chat_messages"] == 0
    assert doc.title.startswith("任務：將專案描述中的")
    write = tool(doc, "toolu_01Kc8JS4psT5E2RrxkiFUUQY").meta["edits"][0]
    assert write["op"] == "write" and write["path"] == f"{CWD}/CHANGELOG_DEMO.md"
    assert write["new_text"].startswith("# 專案名稱變更記錄")
    cli = tool(doc, "toolu_01GCua5CMwsZQm9eHdFiRWkf").meta["edits"][0]
    assert "Vibe Coding Tracker" in cli["old_text"] and "Vibe Code Tracker" in cli["new_text"]
    assert tool(doc, "toolu_01W6NgCDssf24q1iABGqDfGz").tool.name == "github-mcp-server-web_search"
    assert doc.turns[-1].text.startswith("Excellent! All tasks completed successfully.")
    assert doc.updated_at == datetime(2025, 10, 11, 12, 55, 58, 153000, timezone.utc)


def test_legacy_session_without_timeline_is_read_from_chat_messages(tmp_path: Path):
    data = json.loads(MEMORY.read_text("utf-8"))
    data["timeline"] = []
    path = tmp_path / MEMORY.name
    path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    doc = one(path)
    assert doc.metadata["read_from"] == "chatMessages"
    first = doc.turns[0]
    assert first.role == "user" and first.text.endswith("這就不合理了") and "<reminder>" not in first.text
    assert first.ts == datetime(2025, 10, 11, 11, 40, 20, 882000, timezone.utc)  # the session's start
    assert "1.# CLAUDE.md" in tool(doc, "toolu_017HSQoNjKo4AkvK9kgYZYVC").text
    assert sum(len(t.meta.get("edits", [])) for t in doc.turns) == 5  # 4 editor edits, 1 heredoc write


def test_a_migrated_session_is_one_document_and_the_event_log_wins(tmp_path: Path):
    legacy, _ = parse(MEMORY)
    records = [event("session.start", {"sessionId": MEMORY_ID, "version": 1, "producer": "copilot-agent",
                                       "copilotVersion": "0.0.400", "startTime": "2025-10-11T11:40:20.882Z"}, 0),
               event("user.message", {"content": "continue"}, 1)]
    migrated, _ = parse(write_events(tmp_path / "session-state" / MEMORY_ID / "events.jsonl", records))
    assert legacy[0].doc_id == migrated[0].doc_id
    assert max([legacy[0], migrated[0]], key=CopilotCliAdapter.precedence_key) is migrated[0]


# -- damaged and foreign files -----------------------------------------------------------------

def test_damaged_files_are_one_line_each_and_a_cut_log_keeps_its_complete_lines(tmp_path: Path):
    raw = MEMORY.read_bytes()
    cut = tmp_path / "session_cut_1.json"
    cut.write_bytes(raw[: len(raw) // 2])
    empty = tmp_path / "events.jsonl"
    empty.write_bytes(b"")
    array = tmp_path / "session_array_1.json"
    array.write_text(json.dumps([{"sessionId": "x", "startTime": "2025-01-01T00:00:00Z", "timeline": []}]))
    shaped = tmp_path / "session_shape_1.json"
    shaped.write_text(json.dumps({"sessionId": "x", "startTime": "2025-01-01T00:00:00Z", "timeline": "none"}))
    noise = tmp_path / "noise.jsonl"
    noise.write_text('{"a": 1}\n{"b": 2}\n')
    for path in (cut, empty, array, shaped, noise):
        with pytest.raises(UnrecognisedSource) as info:
            parse(path)
        assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
    data = EVENTS.read_bytes()
    torn = tmp_path / "torn" / "events.jsonl"
    torn.parent.mkdir()
    torn.write_bytes(data[: data.index(b'"805c08a8-1512') + 30])  # inside the final answer's line
    docs, report = parse(torn)
    assert len(docs) == 1 and report.counts["partial_last_line"] == 1 and docs[0].metadata["partial_last_line"]
    assert not any("以下是我的調查結果" in t.text for t in docs[0].turns)
    assert "clap-markdown" in tool(docs[0], "toolu_01UeYdysjF2DK95UZmqh9Yo9").text


def test_recognises_its_sessions_and_no_other_agents_files(tmp_path: Path):
    assert all(ADAPTER.recognises(p) for p in (EVENTS, MEMORY, RENAME))
    kinds = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "copilot_cli"}
    assert {"claude-code", "codex-rollout", "gemini_cli", "qwen_code", "pi", "openclaw", "vscode_copilot"} <= kinds
    others = [p for kind in sorted(kinds) for p in sorted((FIXTURES / kind).rglob("*")) if p.is_file()]
    assert len(others) > 100
    assert [p for p in others if ADAPTER.recognises(p)] == []
    stream = tmp_path / "pi.jsonl"  # pi/OpenClaw also chain records by parentId, without `data`
    stream.write_text(json.dumps({"type": "message", "id": "a", "parentId": None, "timestamp": "x",
                                  "message": {"role": "user", "content": "hi"}}) + "\n")
    assert not ADAPTER.recognises(stream)


# -- enumeration and stores --------------------------------------------------------------------

def test_enumeration_lists_session_folders_only_and_never_reads_credentials(tmp_path: Path):
    home = tmp_path / ".copilot"
    session = home / "session-state" / EVENTS_ID
    shutil.copytree(EVENTS.parent, session)
    (session / "workspace.yaml").write_text(f"cwd: {CWD}\nsummary: Rust docs\n")
    (session / "plan.md").write_text("# plan\n")
    (session / "files").mkdir()
    (session / "files" / "notes.jsonl").write_text("{}\n")
    (session / "checkpoints").mkdir()
    (home / "session-state" / "empty-session").mkdir()
    shutil.copy(EVENTS, home / "session-state" / "flat-1.jsonl")
    shutil.copytree(HISTORY, home / "history-session-state")
    (home / "config.json").write_text('{"copilot_tokens": {"x": "gho_secret"}}')
    (home / "logs").mkdir()
    (home / "logs" / "process-1.log").write_text("log\n")
    items = list(ADAPTER.enumerate(home, AdapterOptions(context_name="t")))
    kept = {Path(i.source_uri).relative_to(home).as_posix(): i for i in items if isinstance(i, SourceCandidate)}
    assert sorted(kept) == sorted([f"session-state/{EVENTS_ID}/events.jsonl", "session-state/flat-1.jsonl",
                                   f"history-session-state/{MEMORY.name}", f"history-session-state/{RENAME.name}"])
    events_candidate = kept[f"session-state/{EVENTS_ID}/events.jsonl"]
    yaml_size = (session / "workspace.yaml").stat().st_size
    assert events_candidate.size_bytes == EVENTS.stat().st_size + yaml_size
    skipped = {Path(i.source_uri).name: i.detail for i in items if isinstance(i, SkippedSource)}
    assert "credentials" in skipped["config.json"] and "without events.jsonl" in skipped["empty-session"]
    assert "notes.jsonl" not in skipped and "process-1.log" not in skipped  # never entered
    os.utime(session / "workspace.yaml", ns=(events_candidate.mtime_ns + 10**9,) * 2)
    again = next(i for i in ADAPTER.enumerate(home, AdapterOptions(context_name="t"))
                 if isinstance(i, SourceCandidate) and i.source_uri == events_candidate.source_uri)
    assert again.mtime_ns == events_candidate.mtime_ns + 10**9  # a retitled session is read again
    doc = one(session / "events.jsonl")
    assert doc.title == "Rust docs"
    only = list(ADAPTER.enumerate(session, AdapterOptions(context_name="t")))
    assert [i.source_uri for i in only] == [str(session / "events.jsonl")]
    excluded = list(ADAPTER.enumerate(home, AdapterOptions(context_name="t", excludes=["history-session-state/"])))
    assert not any(isinstance(i, SourceCandidate) and "history-session-state" in i.source_uri for i in excluded)
    assert list(ADAPTER.enumerate(tmp_path / "missing", AdapterOptions(context_name="t"))) == []
    settings_only = tmp_path / "config" / ".copilot"  # an old CLI's XDG config folder: no sessions
    settings_only.mkdir(parents=True)
    (settings_only / "config.json").write_text("{}")
    (settings_only / "mcp-config.json").write_text("{}")
    (settings_only / "history.jsonl").write_text("{}\n")
    assert not any(isinstance(i, SourceCandidate) for i in ADAPTER.enumerate(settings_only, AdapterOptions(context_name="t")))


def test_stores_follow_copilot_home_and_the_old_xdg_folders(tmp_path: Path):
    where = Where(home=tmp_path / "u", env={"COPILOT_HOME": str(tmp_path / "c"),
                                            "XDG_STATE_HOME": str(tmp_path / "s"), "XDG_CONFIG_HOME": str(tmp_path / "k")})
    assert STORES[0].locate(where) == [tmp_path / "c", tmp_path / "u/.copilot", tmp_path / "s/.copilot",
                                       tmp_path / "u/.local/state/.copilot", tmp_path / "k/.copilot",
                                       tmp_path / "u/.config/.copilot"]
    assert STORES[0].locate(Where(home=tmp_path / "u", env={}))[0] == tmp_path / "u/.copilot"


# -- end to end --------------------------------------------------------------------------------

def test_ingest_finds_the_sessions_under_home(tmp_path: Path, chinvex_home: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    shutil.copytree(EVENTS.parent, home / ".copilot" / "session-state" / EVENTS_ID)
    shutil.copytree(HISTORY, home / ".copilot" / "history-session-state")
    old_store = home / ".local" / "state" / ".copilot" / "history-session-state"  # an old CLI's XDG store
    old_store.mkdir(parents=True)
    shutil.copy(RENAME, old_store / RENAME.name)
    (home / ".copilot" / "config.json").write_text("{}")
    for var in ("COPILOT_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "copilot_cli" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [], result
    got = run_cli("get", EVENTS_ID, "--context", "X", "--json", env={"HOME": str(home)})
    assert got.code == 0 and got.json["thread_id"] == EVENTS_ID, got
    turns = got.json["turns"]
    assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    exported = tmp_path / "export.jsonl"
    assert run_cli_in_process("export", "--context", "X", "--out", str(exported)).code == 0
    docs = {r["metadata"]["thread_id"]: r for r in map(json.loads, exported.read_text().splitlines())
            if r["kind"] == "document"}
    assert sorted(docs) == sorted([EVENTS_ID, MEMORY_ID, RENAME_ID])
    assert all(d["metadata"]["source"] == "copilot_cli" for d in docs.values())
    assert len(docs[RENAME_ID]["origins"]) == 2  # the same session in ~/.copilot and the XDG store
    assert Counter(t["role"] for t in docs[EVENTS_ID]["turns"])["user"] == 1
