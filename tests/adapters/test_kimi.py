"""The kimi adapter. Kimi Code (TypeScript): on the real sessions in
tests/fixtures/samples/kimi (peer captures of Kimi Code 0.29-0.38, see its PROVENANCE.md) and
damaged copies of them. Kimi CLI (Python): NO real session of it is public, so its part is
tested on small files this module writes in tmp_path in the shape the notes document
(context.jsonl with bookkeeping lines, the wire.jsonl event log, state.json, kimi.json,
sub-agents, a rotated context); they are written by the tests, never kept as fixtures."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from chinvex.models.sources import (AdapterOptions, ParseReport, SkippedSource, SourceCandidate, SourceError,
                             UnrecognisedSource)
from chinvex_adapters.kimi.adapter import KimiAdapter
from chinvex_adapters.kit.registry import Where
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli_in_process, tool_turns

CODE_STORE = FIXTURES / "kimi" / "agent-sessions" / "kimi-code" / "sessions"
BUCKET = CODE_STORE / "wd_project_ac3bb318f98e"
TOOLS_ID = "1bcbe023-4f7e-4971-9dc9-43b8756045b0"
TOOLS = BUCKET / f"session_{TOOLS_ID}"
SMALL_ID = "9eb1bf57-c1af-48a5-b658-0e8d9fe794f5"
SMALL = BUCKET / f"session_{SMALL_ID}"
PROJECT = "/private/tmp/as-agent-lab/kimi/project"
ADAPTER = KimiAdapter()


def parse(path: Path) -> tuple[list, ParseReport]:
    return parse_file(ADAPTER, path)


def one(path: Path):
    docs, report = parse(path)
    assert len(docs) == 1, report
    return docs[0], report


def texts(doc, role: str, thinking: bool = False) -> list[str]:
    return [t.text for t in doc.turns if t.role == role and bool(t.meta.get("thinking")) == thinking]


def candidates(root: Path) -> tuple[list[SourceCandidate], dict[str, str]]:
    items = list(ADAPTER.enumerate(root, AdapterOptions(context_name="x")))
    skipped = {s.source_uri: s.detail for s in items if isinstance(s, SkippedSource)}
    return [i for i in items if isinstance(i, SourceCandidate)], skipped


# -- Kimi Code (real sessions) ------------------------------------------------------------------

def test_kimi_code_session_reads_loop_events_tools_edits_and_its_sub_agent():
    doc, report = one(TOOLS / "agents" / "main" / "wire.jsonl")
    assert doc.source == "kimi" and doc.thread_id == TOOLS_ID and doc.title == "hi"
    assert doc.metadata["cwd"] == PROJECT and doc.metadata["model"] == "moonshot-ai/kimi-k2.7-code"
    assert doc.metadata["wire_protocol"] == "1.4" and doc.metadata["work_dir_bucket"] == "wd_project_ac3bb318f98e"
    users = texts(doc, "user")
    assert users[:4] == ["hi", "hi", "hi", "run ls command"] and 'read README.md then grep for "Kimi"' in users
    ls = next(t for t in doc.turns if t.role == "user" and t.text == "run ls command")
    assert ls.ts.isoformat() == "2026-08-01T19:50:05.458000+00:00"
    assert "Hi there! How can I help you today?" in texts(doc, "assistant")
    assert any(t.startswith("The user wants me to run the `ls` command") for t in texts(doc, "assistant", True))
    bash = tool_turns(doc, "Bash")
    assert "AgentSessions.xcodeproj" in bash[0].text and bash[0].meta["tool_use_id"] == "Bash_0"
    failed = next(t for t in bash if t.meta.get("tool_use_id") == "Bash_2")
    assert failed.meta["is_error"] is True and "No such file or directory" in failed.text
    write = tool_turns(doc, "Write")[0].meta["edits"][0]
    assert write["path"].endswith(f"session_{TOOLS_ID}/agents/main/plans/zatanna-moon-knight-groot.md")
    assert write["op"] == "write" and write["new_text"].startswith("# Plan: Count all HTML files in the repository")
    assert report.counts["injections_left_out"] == 5
    assert not any("<system-reminder>" in t.text for t in doc.turns)
    compaction = doc.turns[-1]
    assert compaction.role == "system" and compaction.meta["compact_summary"] is True
    assert compaction.text.startswith("I am writing this handoff note") and compaction.meta["tokens_after"] == 654
    assert doc.metadata["usage"]["output"] > 0 and doc.metadata["finish_reasons"]["end_turn"] >= 5


def test_the_sub_agent_joins_the_session_after_the_call_that_started_it():
    doc, _ = one(TOOLS / "agents" / "main" / "wire.jsonl")
    ids = [t.turn_id for t in doc.turns]
    call = ids.index("Agent_3:tool")
    sub = [i for i, t in enumerate(doc.turns) if t.meta.get("sidechain")]
    assert sub and sub[0] == call + 1 and all(doc.turns[i].meta["agent_id"] == "agent-0" for i in sub)
    prompt = doc.turns[sub[0]]
    assert prompt.role == "user" and prompt.meta["origin"] == "system_trigger:subagent"
    assert "Bash_1:tool" in ids and "agent-0/Bash_1:tool" in ids  # same call id in both agents
    assert any("3,124 Swift files" in doc.turns[i].text for i in sub if doc.turns[i].role == "assistant")
    after = doc.turns[sub[-1] + 1]
    assert not after.meta.get("sidechain") and after.text.startswith("The subagent completed")
    assert doc.metadata["sub_agents"] == {"agent-0": {"type": "sub", "parent": "main", "profile": "explore"}}
    assert "Result:\nagent_id: agent-0" in doc.turns[call].text


def test_kimi_code_session_with_steer_and_cancels():
    doc, report = one(SMALL / "agents" / "main" / "wire.jsonl")
    assert doc.thread_id == SMALL_ID and [t.text for t in doc.turns] == ["hi", "hi", "stop"]
    assert all(t.role == "user" for t in doc.turns) and report.counts["wire_turn.cancel"] == 2
    assert doc.created_at.isoformat() == "2026-07-25T03:36:45.094000+00:00"
    assert doc.metadata["model"] == "moonshot-ai/kimi-k2.7-code"


def test_a_session_folder_is_one_candidate_changing_with_any_of_its_files(tmp_path: Path):
    store = tmp_path / "sessions"
    shutil.copytree(CODE_STORE, store)
    session = store / BUCKET.name / TOOLS.name
    plan = session / "agents" / "main" / "plans" / "zatanna-moon-knight-groot.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# Plan\n")
    found, skipped = candidates(tmp_path / "sessions")
    assert sorted(Path(c.source_uri).parents[2].name for c in found) == sorted([TOOLS.name, SMALL.name])
    tools_cand = next(c for c in found if TOOLS.name in c.source_uri)
    assert tools_cand.source_uri.endswith("agents/main/wire.jsonl")
    files = [session / "agents" / "main" / "wire.jsonl", session / "agents" / "agent-0" / "wire.jsonl",
             session / "state.json"]
    assert tools_cand.size_bytes == sum(p.stat().st_size for p in files)
    assert "read with its session's wire.jsonl" == skipped[str(session / "state.json")]
    assert "not a transcript" in skipped[str(plan)]
    sub = files[1]
    later = tools_cand.mtime_ns + 5 * 10**9
    os.utime(sub, ns=(later, later))
    again = next(c for c in candidates(tmp_path / "sessions")[0] if TOOLS.name in c.source_uri)
    assert again.source_uri == tools_cand.source_uri and again.mtime_ns == later


# -- Kimi CLI (files written here in the documented shape) --------------------------------------

CLI_ID = "3f2b8a4e-5d1c-4e6f-9a7b-0c1d2e3f4a5b"
LEGACY_ID = "7c6d5e4f-3a2b-4c1d-8e9f-a0b1c2d3e4f5"
WORK_DIR = "/home/dev/proj"
T0 = 1767261600.0  # 2026-01-01T10:00:00Z


def _lines(path: Path, records: list, *, compact: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    dump = (lambda r: json.dumps(r, separators=(",", ":"))) if compact else json.dumps
    path.write_text("".join(dump(r) + "\n" for r in records), encoding="utf-8")


def _wire(path: Path, events: list[tuple[float, str, dict]]) -> None:
    _lines(path, [{"type": "metadata", "protocol_version": "1.10"}] +
           [{"timestamp": T0 + t, "message": {"type": kind, "payload": payload}} for t, kind, payload in events],
           compact=False)


def _call(call_id: str, name: str, args: dict) -> dict:
    return {"type": "function", "id": call_id, "function": {"name": name, "arguments": json.dumps(args)}}


def kimi_cli_share(share: Path) -> Path:
    """A Kimi CLI share dir with one session (reverted once, with a sub-agent) and a legacy
    flat session, as kimi-cli writes them."""
    digest = hashlib.md5(WORK_DIR.encode()).hexdigest()
    (share / "kimi.json").parent.mkdir(parents=True, exist_ok=True)
    (share / "kimi.json").write_text(json.dumps({"work_dirs": [{"path": WORK_DIR, "kaos": "local",
                                                                "last_session_id": CLI_ID}]}))
    folder = share / "sessions" / digest / CLI_ID
    start = [{"role": "_system_prompt", "content": "You are Kimi CLI."}, {"role": "_checkpoint", "id": 0},
             {"role": "user", "content": "<system>CHECKPOINT 0</system>"},
             {"role": "user", "content": "what does app.py do?"}]
    _lines(folder / "context_1.jsonl", start + [{"role": "assistant", "content": "It prints hello."},
                                                {"role": "_usage", "token_count": 900}])
    edit = _call("tool_1", "StrReplaceFile",
                 {"path": "app.py", "edit": {"old": "pass", "new": "def greet():\n    return 'hi'"}})
    write = _call("tool_2", "WriteFile", {"path": f"{WORK_DIR}/NOTES.md", "content": "# Notes\ngreet() added\n",
                                          "mode": "overwrite"})
    append = _call("tool_3", "WriteFile", {"path": "NOTES.md", "content": "- greet tested\n", "mode": "append"})
    _lines(folder / "context.jsonl", start + [
        {"role": "_checkpoint", "id": 1},
        {"role": "user", "content": "add a greet function to app.py"},
        {"role": "assistant", "tool_calls": [edit],
         "content": [{"type": "think", "think": "Edit app.py with StrReplaceFile.", "encrypted": "c2ln"},
                     {"type": "text", "text": "I'll add it."}]},
        {"role": "tool", "content": [{"type": "text", "text": "<system>File successfully edited.</system>"}],
         "tool_call_id": "tool_1"},
        {"role": "assistant", "content": "Now the notes.", "tool_calls": [write]},
        {"role": "tool", "tool_call_id": "tool_2",
         "content": [{"type": "text", "text": "<system>ERROR</system>"},
                     {"type": "text", "text": "<system>Permission denied</system>"}]},
        {"role": "user", "content": "<system-reminder>\nThe todo list is stale.\n</system-reminder>"},
        {"role": "user", "content": [
            {"type": "text", "text": "here is the screenshot"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "iVBORw0KGgo" * 40}}]},
        {"role": "assistant", "content": "Done: greet() is in app.py.", "tool_calls": [append]},
        {"role": "tool", "content": "<system>Appended.</system>", "tool_call_id": "tool_3"},
        {"role": "_usage", "token_count": 2400}])
    _wire(folder / "wire.jsonl", [
        (0.25, "TurnBegin", {"user_input": "what does app.py do?"}), (1, "StepBegin", {"n": 1}),
        (2, "ContentPart", {"type": "text", "text": "It prints hello."}), (3, "TurnEnd", {}),
        (60.5, "TurnBegin", {"user_input": [{"type": "text", "text": "add a greet function to app.py"}]}),
        (65, "ToolCall", edit), (66, "ToolResult", {"tool_call_id": "tool_1", "return_value": {"is_error": False}}),
        (70, "ToolCall", write), (71, "ToolResult", {"tool_call_id": "tool_2", "return_value": {"is_error": True}}),
        (100, "SteerInput", {"user_input": "here is the screenshot"}), (120, "TurnEnd", {})])
    (folder / "state.json").write_text(json.dumps({"version": 1, "custom_title": "Greet function", "archived": False,
                                                   "todos": [{"title": "add greet", "status": "done"}]}))
    sub = folder / "subagents" / "a1b2"
    _lines(sub / "context.jsonl", [{"role": "_system_prompt", "content": "You are a sub-agent."},
                                   {"role": "user", "content": "count python files"},
                                   {"role": "assistant", "content": "There are 3 Python files."}])
    _wire(sub / "wire.jsonl", [(67, "TurnBegin", {"user_input": "count python files"})])
    (sub / "meta.json").write_text(json.dumps({"agent_id": "a1b2", "subagent_type": "explore", "status": "completed",
                                               "description": "Count files", "created_at": T0 + 67}))
    (sub / "prompt.txt").write_text("count python files")
    _lines(share / "sessions" / digest / f"{LEGACY_ID}.jsonl",
           [{"role": "user", "content": "hello from 0.1"}, {"role": "assistant", "content": "Hi!"}])
    return folder


def test_kimi_cli_session_from_context_wire_state_and_kimi_json(tmp_path: Path):
    folder = kimi_cli_share(tmp_path / "share")
    doc, report = one(folder / "context.jsonl")
    assert doc.source == "kimi" and doc.thread_id == CLI_ID and doc.title == "Greet function"
    assert doc.metadata["cwd"] == WORK_DIR and doc.metadata["layout"] == "kimi_cli"
    assert doc.metadata["context_tokens"] == 2400 and doc.metadata["older_context_files"] == 1
    main = [t for t in doc.turns if not t.meta.get("sidechain")]
    assert [(t.role, t.text.split("\n")[0]) for t in main if not t.meta.get("thinking")] == [
        ("user", "what does app.py do?"), ("assistant", "It prints hello."),
        ("user", "add a greet function to app.py"), ("assistant", "I'll add it."),
        ("tool", "Tool call: StrReplaceFile"), ("assistant", "Now the notes."), ("tool", "Tool call: WriteFile"),
        ("user", "here is the screenshot"), ("assistant", "Done: greet() is in app.py."),
        ("tool", "Tool call: WriteFile")]
    assert report.counts["context_lines_repeated"] == 4 and report.counts["checkpoint_markers"] == 1
    assert report.counts["injections_left_out"] == 1
    assert main[0].ts.isoformat() == "2026-01-01T10:00:00.250000+00:00"
    assert main[0].meta["context_file"] == "context_1.jsonl"  # said before the revert
    greet = next(t for t in main if t.text == "add a greet function to app.py")
    assert greet.ts.isoformat() == "2026-01-01T10:01:00.500000+00:00"
    edit = tool_turns(doc, "StrReplaceFile")[0]
    assert edit.ts.isoformat() == "2026-01-01T10:01:05+00:00" and "File successfully edited." in edit.text
    assert edit.meta["edits"] == [{"path": "app.py", "op": "edit", "abs_path": f"{WORK_DIR}/app.py",
                                   "old_text": "pass", "new_text": "def greet():\n    return 'hi'"}]
    write = tool_turns(doc, "WriteFile")[0]
    assert write.meta["is_error"] is True and "Permission denied" in write.text
    assert write.meta["edits"][0]["new_text"] == "# Notes\ngreet() added\n"
    appended = tool_turns(doc, "WriteFile")[1]  # mode "append": an edit at the end, not the whole file
    assert appended.meta["edits"] == [{"path": "NOTES.md", "op": "edit", "abs_path": f"{WORK_DIR}/NOTES.md",
                                       "new_text": "- greet tested\n"}] and "Appended." in appended.text
    assert "Edit app.py with StrReplaceFile." in texts(doc, "assistant", thinking=True)
    shot = next(t for t in main if t.text == "here is the screenshot")
    assert shot.attachments[0].mime_type == "image/png" and "iVBOR" not in shot.text
    assert shot.ts.isoformat() == "2026-01-01T10:01:40+00:00"
    sub = [t for t in doc.turns if t.meta.get("sidechain")]
    assert [t.text for t in sub] == ["count python files", "There are 3 Python files."]
    assert sub[0].meta["agent_id"] == "a1b2" and sub[0].ts.isoformat() == "2026-01-01T10:01:07+00:00"
    assert doc.turns.index(sub[0]) > doc.turns.index(edit)
    assert doc.metadata["sub_agents"] == {"a1b2": {"subagent_type": "explore", "description": "Count files",
                                                   "status": "completed"}}
    assert doc.metadata["todos"] == [{"title": "add greet", "status": "done"}]


def test_kimi_cli_enumeration_and_legacy_flat_sessions(tmp_path: Path):
    folder = kimi_cli_share(tmp_path / "share")
    found, skipped = candidates(tmp_path / "share")  # the share dir: read through sessions/
    by_name = {Path(c.source_uri).name: c for c in found}
    assert set(by_name) == {"context.jsonl", f"{LEGACY_ID}.jsonl"}
    read_with = [folder / n for n in ("context.jsonl", "context_1.jsonl", "wire.jsonl", "state.json")]
    read_with += [folder / "subagents" / "a1b2" / n for n in ("context.jsonl", "wire.jsonl", "meta.json")]
    assert by_name["context.jsonl"].size_bytes == sum(p.stat().st_size for p in read_with)
    assert "prompt or output" in skipped[str(folder / "subagents" / "a1b2" / "prompt.txt")]
    assert str(tmp_path / "share" / "kimi.json") not in skipped  # outside sessions/: not walked
    legacy, _ = one(Path(by_name[f"{LEGACY_ID}.jsonl"].source_uri))
    assert legacy.thread_id == LEGACY_ID and legacy.metadata["cwd"] == WORK_DIR
    assert [t.text for t in legacy.turns] == ["hello from 0.1", "Hi!"] and all(t.ts for t in legacy.turns)
    assert legacy.metadata["times_from"] == "file mtime (no wire.jsonl)"
    # An empty session (kimi started, nothing sent) is skipped with its reason.
    empty = folder.parent / "00000000-0000-4000-8000-000000000000"
    empty.mkdir()
    (empty / "context.jsonl").write_text("")
    _, skipped = candidates(tmp_path / "share")
    assert skipped[str(empty / "context.jsonl")] == "an empty Kimi CLI session (no message yet)"


# -- damaged files and other agents' files ------------------------------------------------------

def test_truncated_empty_and_foreign_files_are_one_line_each(tmp_path: Path):
    session = tmp_path / "sessions" / "wd_x_0123456789ab" / TOOLS.name
    shutil.copytree(TOOLS, session)
    wire = session / "agents" / "main" / "wire.jsonl"
    data = wire.read_bytes()
    cut_at = data.index(b'"type":"turn.prompt"', len(data) // 2) + 30  # inside a line
    wire.write_bytes(data[:cut_at])
    doc, report = one(wire)
    assert report.counts["partial_last_line"] == 1 and doc.thread_id == TOOLS_ID
    assert "run ls command" in texts(doc, "user")
    for content, words in ((b"", "empty file"), (data[20:4000], "not a Kimi wire journal or context"),
                           (b'{"type":"session_meta","payload":{}}\n', "'session_meta'"),
                           (b'{"type": "metadata", "protocol_version": "1.4"}\n{"uuid": "x", "type": "user"}\n',
                            "neither Kimi journal")):
        wire.write_bytes(content)
        with pytest.raises(UnrecognisedSource) as bad:
            parse(wire)
        message = str(bad.value)
        assert message.startswith(f"{wire}: not") and words in message and "\n" not in message, message
    lone = tmp_path / "cli" / "wire.jsonl"
    _wire(lone, [(0, "TurnBegin", {"user_input": "hi"})])
    with pytest.raises(UnrecognisedSource, match="without its context.jsonl"):
        parse(lone)
    unreadable = tmp_path / "unreadable.jsonl"
    unreadable.mkdir()  # opening it fails: an error retried next run, not a foreign file
    with pytest.raises(SourceError, match="cannot read") as err:
        parse(unreadable)
    assert not isinstance(err.value, UnrecognisedSource)


CUT_LINE = "last line is incomplete (being written?); left unread"


def _cut_inside_a_line(path: Path) -> None:
    """The file as a killed writer leaves it: 20 bytes into the line after its middle."""
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"\n", len(data) // 2) + 1 + 20])


@pytest.mark.parametrize("agent", ["main", "agent-0"])
def test_a_kimi_code_journal_cut_inside_its_last_line_is_said_once(tmp_path: Path, agent: str):
    """The session's own journal or its sub-agent's: its complete lines are read, and the run's
    report names the file (as for the other agents' logs), not only a count."""
    session = tmp_path / "sessions" / "wd_x_0123456789ab" / TOOLS.name
    shutil.copytree(TOOLS, session)
    cut = session / "agents" / agent / "wire.jsonl"
    _cut_inside_a_line(cut)
    doc, report = one(session / "agents" / "main" / "wire.jsonl")
    assert doc.thread_id == TOOLS_ID and report.counts["partial_last_line"] == 1
    assert report.warnings == [f"{cut}: {CUT_LINE}"]
    whole, _ = one(TOOLS / "agents" / "main" / "wire.jsonl")
    assert 0 < len(doc.turns) < len(whole.turns)


@pytest.mark.parametrize("name", ["context.jsonl", "wire.jsonl", "subagents/a1b2/context.jsonl"])
def test_a_kimi_cli_log_cut_inside_its_last_line_is_said_once(tmp_path: Path, name: str):
    folder = kimi_cli_share(tmp_path / "share")
    cut = folder / name
    _cut_inside_a_line(cut)
    doc, report = one(folder / "context.jsonl")
    assert doc.thread_id == CLI_ID and report.counts["partial_last_line"] == 1
    assert report.warnings == [f"{cut}: {CUT_LINE}"]


def test_a_complete_kimi_session_is_read_without_a_warning(tmp_path: Path):
    _, report = one(TOOLS / "agents" / "main" / "wire.jsonl")
    _, cli = one(kimi_cli_share(tmp_path / "share") / "context.jsonl")
    assert report.warnings == cli.warnings == [] and not report.counts["partial_last_line"]


def test_recognises_its_files_and_no_other_agents(tmp_path: Path):
    folder = kimi_cli_share(tmp_path / "share")
    mine = sorted(CODE_STORE.rglob("wire.jsonl")) + [folder / "context.jsonl", folder / "context_1.jsonl",
                                                     folder / "wire.jsonl"]
    assert len(mine) == 6 and all(ADAPTER.recognises(p) for p in mine)
    assert not ADAPTER.recognises(TOOLS / "state.json")
    others = [p for kind in sorted(FIXTURES.iterdir()) if kind.is_dir() and kind.name != "kimi"
              for p in sorted(kind.rglob("*")) if p.is_file()]  # every other agent's samples, pi's included
    assert len(others) > 30
    assert [p for p in others if ADAPTER.recognises(p)] == []


def test_stores_are_both_homes(tmp_path: Path):
    from chinvex_adapters.kimi import STORES

    assert [s.agent for s in STORES] == ["kimi"]
    where = Where(home=tmp_path, env={"KIMI_CODE_HOME": "/kc", "KIMI_SHARE_DIR": "/ks"})
    assert STORES[0].locate(where) == [Path("/kc/sessions"), tmp_path / ".kimi-code" / "sessions",
                                       Path("/ks/sessions"), tmp_path / ".kimi" / "sessions"]


# -- end to end --------------------------------------------------------------------------------

def test_ingest_finds_kimi_code_and_kimi_cli_sessions_under_home(tmp_path: Path, chinvex_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    shutil.copytree(BUCKET, home / ".kimi-code" / "sessions" / BUCKET.name)
    kimi_cli_share(home / ".kimi")
    monkeypatch.setenv("HOME", str(home))
    for var in ("KIMI_CODE_HOME", "KIMI_SHARE_DIR"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and "kimi" in detected.json["agents"], detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [] and result.json["sources"]["indexed"] == 4, result
    for thread_id in (TOOLS_ID, CLI_ID):
        got = run_cli_in_process("get", thread_id, "--context", "X", "--json")
        assert got.code == 0 and got.json["thread_id"] == thread_id, got
        turns = got.json["turns"]
        assert {"user", "assistant", "tool"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 4
