"""The pi adapter (pi coding agent and OpenClaw) on the real samples in
tests/fixtures/samples/pi and tests/fixtures/samples/openclaw (see their PROVENANCE.md): two
sessions of pi's author (format v1, pi 0.12 and 0.14), a peer's v3 capture (pi 0.74) and two
OpenClaw transcripts with their sessions.json; plus damaged copies of them made here, and two
small v3 files written here in the documented shape for what no real sample holds (a user-set
session name, extension messages, images)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chinvex.models.sources import (AdapterOptions, ParseReport, SkippedSource, SourceCandidate, SourceError,
                             UnrecognisedSource)
from chinvex_adapters.kit.registry import Where
from chinvex_adapters.pi.adapter import PiAdapter
from helpers import FIXTURES, assert_no_traceback, parse_file, run_cli_in_process, tool_turns

PI = FIXTURES / "pi"
PI_MONO = PI / "pi-mono" / "agent" / "sessions" / "--Users-user-workspaces-pi-mono--"
BRANCHED_ID = "ffae836b-9420-4060-ac13-7745215f90ff"
BRANCHED = PI_MONO / f"2025-12-09T00-53-29-825Z_{BRANCHED_ID}.jsonl"
SWITCH_ID = "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
SWITCH = PI_MONO / f"2025-11-20T23-33-50-805Z_{SWITCH_ID}.jsonl"
V3_ID = "019e19b4-eb48-746a-aa6b-8dfcfa37954b"
V3_DIR = PI / "agent-sessions" / "agent" / "sessions" / "--tmp-as-agent-fixture-project--"
V3 = V3_DIR / f"2026-05-12T01-02-27-657Z_{V3_ID}.jsonl"
OC_SESSIONS = FIXTURES / "openclaw" / "charbi-agent" / "agents" / "main" / "sessions"
WEBCHAT_ID = "3cdaedd3-abab-40b6-9859-e6605dc1c2ca"
WEBCHAT = OC_SESSIONS / f"{WEBCHAT_ID}.jsonl"
TELEGRAM_ID = "f05d7482-3947-4f22-9523-5335cc819950"
TELEGRAM = OC_SESSIONS / f"{TELEGRAM_ID}.jsonl"
ADAPTER = PiAdapter()


def parse(path: Path) -> tuple[list, ParseReport]:
    return parse_file(ADAPTER, path)


def one(path: Path):
    docs, report = parse(path)
    assert len(docs) == 1, report
    return docs[0], report


def texts(doc, role: str, thinking: bool = False) -> list[str]:
    return [t.text for t in doc.turns if t.role == role and bool(t.meta.get("thinking")) == thinking]


# -- pi, format v1 (the author's sessions) ------------------------------------------------------

def test_branched_v1_session_keeps_words_thinking_edits_compaction_and_user_commands():
    doc, _ = one(BRANCHED)
    assert doc.source == "pi" and doc.thread_id == BRANCHED_ID
    assert doc.title.startswith("alright, read @packages/coding-agent/src/main.ts")
    assert doc.metadata["cwd"] == "/Users/user/workspaces/pi-mono"
    assert doc.metadata["format_version"] == 1
    parent = "--Users-user-workspaces-pi-mono--/2025-12-09T00-52-54-397Z_d97339c6-6c10-4827-846b-9ff1d9c3dc37.jsonl"
    assert doc.metadata["parent_session"] == f"/Users/user/.pi/agent/sessions/{parent}"
    assert doc.metadata["initial_model"]["model"] == "claude-opus-4-5"
    assert doc.metadata["thinking_levels"] == ["minimal", "low", "medium", "high"]
    assert doc.metadata["selected_model"] == "claude-3-opus-20240229"  # the model_change at the end
    assert doc.metadata["model"] == "claude-opus-4-5" and doc.metadata["compactions"] == 1
    # Entries copied from the session it branched from are older than its header.
    assert doc.created_at.isoformat() == "2025-12-08T22:41:05.306000+00:00"
    assert "ok, create a branch refactor" in texts(doc, "user")
    assert any(t.startswith("Done. On branch `refactor` now.") for t in texts(doc, "assistant"))
    assert any("create a git branch called \"refactor\"" in t for t in texts(doc, "assistant", thinking=True))
    write = tool_turns(doc, "write")[0]
    edit = write.meta["edits"][0]
    assert edit["path"] == "/Users/user/workspaces/pi-mono/packages/coding-agent/docs/refactor.md"
    assert edit["op"] == "write" and edit["new_text"].startswith("# Coding Agent Refactoring Plan")
    assert "Successfully wrote 48506 bytes" in write.text
    edits = [e for t in tool_turns(doc, "edit") for e in t.meta["edits"]]
    assert {"path": "/Users/user/workspaces/pi-mono/packages/coding-agent/docs/refactor.md", "op": "edit",
            "abs_path": "/Users/user/workspaces/pi-mono/packages/coding-agent/docs/refactor.md",
            "old_text": "  get messages(): Message[];",
            "new_text": "  get messages(): AppMessage[];  // Includes custom types like BashExecutionMessage"
            } in edits
    assert all("Successfully replaced text in" in t.text for t in tool_turns(doc, "edit"))
    summary = next(t for t in doc.turns if t.meta.get("compact_summary"))
    assert summary.role == "system" and summary.text.startswith("# Context Checkpoint: Coding Agent Refactoring")
    assert summary.meta["tokens_before"] == 175004
    shell = next(t for t in tool_turns(doc, "bash") if t.meta.get("by_user"))
    assert "command: ls" in shell.text and "AGENTS.md" in shell.text and shell.meta["exit_code"] == 0


def test_v1_session_with_provider_switch_aborts_errors_and_relative_edits():
    doc, report = one(SWITCH)
    assert doc.thread_id == SWITCH_ID and doc.metadata["providers"] == ["anthropic", "openai"]
    aborted = next(t for t in doc.turns if t.meta.get("failed_reply"))
    assert aborted.role == "system" and aborted.text == "Assistant reply aborted: Request was aborted"
    assert aborted.meta["model"] == "gpt-5.1-codex" and aborted.ts.isoformat() == "2025-11-20T23:33:02.351000+00:00"
    assert doc.metadata["stop_reasons"]["error"] == 1 and report.counts["failed_replies"] == 1
    failed = next(t for t in tool_turns(doc, "bash") if "Command exited with code 1" in t.text)
    assert failed.meta["is_error"] is True and 'grep "borderColor"' in failed.text
    # Relative paths resolve against the session's cwd.
    theme = next(e for t in tool_turns(doc, "edit") for e in t.meta["edits"]
                 if e["path"] == "packages/coding-agent/src/theme/theme.ts")
    assert theme["abs_path"] == "/Users/user/workspaces/pi-mono/packages/coding-agent/src/theme/theme.ts"
    assert report.counts["file_edits"] == 26 and doc.metadata["cost_usd"] == pytest.approx(1.377687)
    assert all(t.tool.name in {"read", "bash", "edit", "write"} for t in doc.turns if t.role == "tool")


def test_v3_capture_with_compactions():
    doc, _ = one(V3)
    assert doc.source == "pi" and doc.thread_id == V3_ID and doc.metadata["format_version"] == 3
    assert doc.title == "Read hello.py and summarize what it prints without editing files."
    assert [t.role for t in doc.turns] == ["user", "assistant", "system", "user", "assistant", "system"]
    assert doc.turns[1].text == "hello.py prints a fixture greeting." and doc.turns[1].turn_id == "22a2720e"
    assert doc.turns[1].meta["model"] == "pi-fixture-model" and doc.turns[1].meta["usage"]["totalTokens"] == 19
    assert doc.turns[2].meta["compact_summary"] is True and doc.metadata["compactions"] == 2
    assert doc.updated_at.isoformat() == "2026-05-12T01:02:45.843000+00:00"


# -- OpenClaw ----------------------------------------------------------------------------------

def test_openclaw_webchat_session_unwraps_the_gateway_and_keeps_writes():
    doc, report = one(WEBCHAT)
    assert doc.source == "openclaw" and doc.thread_id == WEBCHAT_ID
    assert doc.metadata["agent_id"] == "main" and doc.metadata["cwd"] == "/home/ubuntu/.openclaw/workspace"
    assert doc.title == "Wake up, my friend!"
    first = doc.turns[0]
    assert first.role == "user" and first.text == "Wake up, my friend!"
    assert first.meta["gateway_time"] == "Mon 2026-03-02 22:52 UTC"
    assert "que es java resumen" in texts(doc, "user")
    # Eight 429 replies in two runs: one system turn per run.
    failures = [t for t in doc.turns if t.meta.get("failed_reply")]
    assert len(failures) == 2 and report.counts["failed_replies_repeated"] == 6
    assert failures[0].text.startswith("Assistant reply error: You exceeded your current quota")
    assert doc.metadata["providers"] == ["google", "qwen-portal"] and doc.metadata["model"] == "coder-model"
    writes = {e["path"]: e["new_text"] for t in tool_turns(doc, "write") for e in t.meta["edits"]}
    assert set(writes) == {f"/home/ubuntu/.openclaw/workspace/java-ejemplo/{n}.java"
                           for n in ("Persona", "Estudiante", "Main")}
    assert writes["/home/ubuntu/.openclaw/workspace/java-ejemplo/Estudiante.java"].startswith(
        "public class Estudiante extends Persona {")
    assert "Successfully wrote 988 bytes" in tool_turns(doc, "write")[0].text
    exec_ = tool_turns(doc, "exec")[0]  # an error reported as JSON with isError false
    assert exec_.meta["is_error"] is True and "javac: command not found" in exec_.text
    assert any(t.startswith("**Java** es un lenguaje") for t in texts(doc, "assistant"))


def test_openclaw_telegram_session_takes_its_store_entry():
    doc, _ = one(TELEGRAM)
    assert doc.source == "openclaw" and doc.thread_id == TELEGRAM_ID
    store = doc.metadata["openclaw"]
    assert store["session_key"] == "agent:main:telegram:direct:100000001"
    assert store["origin"]["provider"] == "telegram" and store["lastChannel"] == "telegram"
    assert "skillsSnapshot" not in store and "systemPromptReport" not in store
    first = doc.turns[0]
    assert first.text == "Gracias charbi" and first.meta["envelope"] == [{"timestamp": "Tue 2026-03-03 00:40 UTC"}]
    assert doc.title == "Gracias charbi"
    spawn = tool_turns(doc, "sessions_spawn")[0]
    assert spawn.meta["is_error"] is True and "agentId is not allowed for sessions_spawn" in spawn.text
    assert spawn.meta["tool_use_id"] == "sessions_spawn_1772549833087_1"
    assert "agents_list" in {t.tool.name for t in doc.turns if t.role == "tool"}
    assert any("<final>¡Disculpa la demora, User!" in t for t in texts(doc, "assistant"))
    assert doc.metadata["models"] == ["coder-model", "gemini-2.5-flash"]
    assert doc.metadata["cost_usd"] == pytest.approx(0.028691)


def test_a_topic_file_keeps_its_own_thread_id(tmp_path: Path):
    topic = tmp_path / "agents" / "main" / "sessions" / f"{TELEGRAM_ID}-topic-42.jsonl"
    topic.parent.mkdir(parents=True)
    shutil.copy(TELEGRAM, topic)
    doc, _ = one(topic)
    assert doc.thread_id == f"{TELEGRAM_ID}-topic-42" and doc.metadata["session_id"] == TELEGRAM_ID
    assert doc.source == "openclaw"


# -- shapes no real sample holds (written here as pi documents them) ----------------------------

def _write(path: Path, records: list[dict], glue: tuple[int, int] | None = None) -> Path:
    lines = [json.dumps(r) for r in records]
    if glue:  # two records on one line, as in pi-mono's own session.jsonl
        a, b = glue
        lines[a:b + 1] = [lines[a] + lines[b]]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _entry(kind: str, n: int, **fields) -> dict:
    return {"type": kind, "id": f"e{n:07d}", "parentId": f"e{n - 1:07d}" if n else None,
            "timestamp": f"2026-04-01T10:00:{n:02d}.000Z", **fields}


def test_session_name_extension_messages_images_and_glued_lines(tmp_path: Path):
    header = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-04-01T10:00:00.000Z",
              "cwd": "/work/app"}
    records = [
        header,
        _entry("message", 1, message={"role": "user", "timestamp": 1, "content": [
            {"type": "text", "text": "what is in this screenshot?"},
            {"type": "image", "data": "iVBORw0KGgo" * 100, "mimeType": "image/png"}]}),
        _entry("message", 2, message={"role": "assistant", "content": [{"type": "text", "text": "A login form."}],
                                      "model": "m-1", "provider": "p", "stopReason": "stop"}),
        _entry("custom_message", 3, customType="todo", content="Remember the tests", display=True),
        _entry("custom_message", 4, customType="openclaw.runtime-context", content="hidden", display=False),
        _entry("session_info", 5, name="Login form review"),
        _entry("branch_summary", 6, fromId="e0000002", summary="Tried a modal first."),
    ]
    path = _write(tmp_path / "sessions" / "--work-app--" / "2026-04-01T10-00-00-000Z_s-1.jsonl", records, glue=(2, 3))
    doc, report = one(path)
    assert report.counts["lines_with_several_entries"] == 1
    assert doc.title == "Login form review" and doc.source == "openclaw"  # a marker only OpenClaw writes
    user = doc.turns[0]
    assert user.attachments[0].kind == "image" and user.attachments[0].mime_type == "image/png"
    assert "iVBOR" not in user.text and user.attachments[0].size_bytes == 825
    assert doc.turns[1].text == "A login form."
    assert [t.text for t in doc.turns if t.role == "system"] == ["Remember the tests", "Tried a modal first."]
    assert report.counts["custom_messages_hidden"] == 1


# -- damaged files and other agents' files ------------------------------------------------------

def test_truncated_empty_and_foreign_files_are_one_line_each(tmp_path: Path):
    data = TELEGRAM.read_bytes()
    cut = tmp_path / "agents" / "main" / "sessions" / TELEGRAM.name
    cut.parent.mkdir(parents=True)
    middle = data.index(b'"role":"assistant"', len(data) // 2)
    cut.write_bytes(data[:middle])  # half-written last line
    doc, report = one(cut)
    assert report.counts["partial_last_line"] == 1 and doc.thread_id == TELEGRAM_ID
    assert texts(doc, "user")[:2] == ["Gracias charbi", "Hola"]
    for content, words in ((b"", "empty file"), (data[:40], "no JSON object"),
                           (b'{"type":"session_start","id":"x","cwd":"/w"}\n', "'session_start'"),
                           (b'[1, 2]\n', "no JSON object")):
        cut.write_bytes(content)
        with pytest.raises(UnrecognisedSource) as bad:
            parse(cut)
        message = str(bad.value)
        assert message.startswith(f"{cut}: not a pi or OpenClaw session") and words in message, message
        assert "\n" not in message
    unreadable = tmp_path / "unreadable.jsonl"
    unreadable.mkdir()  # opening it fails: an error retried next run, not a foreign file
    with pytest.raises(SourceError, match="cannot read") as err:
        parse(unreadable)
    assert not isinstance(err.value, UnrecognisedSource)


CUT_LINE = "last line is incomplete (being written?); left unread"


@pytest.mark.parametrize(("sample", "place", "source"), [
    (BRANCHED, Path("sessions/--Users-user-workspaces-pi-mono--"), "pi"),
    (WEBCHAT, Path("agents/main/sessions"), "openclaw"),
])
def test_a_log_cut_inside_its_last_line_keeps_its_complete_lines_and_says_so_once(
        tmp_path: Path, sample: Path, place: Path, source: str):
    """As the other agents' logs: the run's report names the file, not only a count."""
    data = sample.read_bytes()
    newline = data.index(b"\n", len(data) // 2)
    cut = tmp_path / place / sample.name
    cut.parent.mkdir(parents=True)
    cut.write_bytes(data[: newline + 1 + 20])  # 20 bytes into the line after the middle
    doc, report = one(cut)
    whole, _ = one(sample)
    assert doc.source == source and 0 < len(doc.turns) < len(whole.turns)
    assert report.counts["partial_last_line"] == 1
    assert report.warnings == [f"{cut}: {CUT_LINE}"]


def test_a_bad_line_before_the_last_is_counted_and_not_said_to_be_a_cut(tmp_path: Path):
    lines = BRANCHED.read_bytes().split(b"\n")
    lines.insert(3, b'{"type":"message","message":{"role":"user","content":')  # complete, not JSON
    bad = tmp_path / "sessions" / "--w--" / BRANCHED.name
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\n".join(lines))
    _, report = one(bad)
    assert report.counts["lines_invalid_json"] == 1 and not report.counts["partial_last_line"]
    assert report.warnings == []


def test_recognises_its_files_and_no_other_agents():
    for path in (BRANCHED, SWITCH, V3, WEBCHAT, TELEGRAM):
        assert ADAPTER.recognises(path), path
    assert not ADAPTER.recognises(OC_SESSIONS / "sessions.json")
    others = [p for kind in sorted(FIXTURES.iterdir()) if kind.is_dir() and kind.name not in ("pi", "openclaw")
              for p in sorted(kind.rglob("*")) if p.is_file()]  # every other agent's samples
    assert len(others) > 30
    assert [p for p in others if ADAPTER.recognises(p)] == []


# -- stores and enumeration ---------------------------------------------------------------------

def test_stores_are_pi_agent_dirs_and_openclaw_state_dirs(tmp_path: Path):
    from chinvex_adapters.pi import STORES

    by_agent = {s.agent: s for s in STORES}
    assert {s.reader for s in STORES} == {"pi"}
    for state in ("custom-state", ".openclaw", ".clawdbot", ".moltbot"):
        (tmp_path / state / "agents" / "main" / "sessions").mkdir(parents=True)
    (tmp_path / ".openclaw" / "agents" / "ops" / "sessions").mkdir(parents=True)
    where = Where(home=tmp_path, env={"PI_CODING_AGENT_DIR": str(tmp_path / "pi-dir"),
                                      "OPENCLAW_STATE_DIR": str(tmp_path / "custom-state")})
    assert by_agent["pi"].locate(where) == [tmp_path / "pi-dir" / "sessions", tmp_path / ".pi" / "agent" / "sessions"]
    assert by_agent["openclaw"].locate(where) == [
        tmp_path / "custom-state" / "agents" / "main" / "sessions",
        tmp_path / ".openclaw" / "agents" / "main" / "sessions",
        tmp_path / ".openclaw" / "agents" / "ops" / "sessions",
        tmp_path / ".clawdbot" / "agents" / "main" / "sessions",
        tmp_path / ".moltbot" / "agents" / "main" / "sessions"]


def test_an_openclaw_state_dir_is_read_through_its_session_folders(tmp_path: Path):
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    shutil.copy(TELEGRAM, sessions)
    shutil.copy(OC_SESSIONS / "sessions.json", sessions)
    for name in (f"{TELEGRAM_ID}.jsonl.lock", f"{TELEGRAM_ID}.jsonl.reset.2026-03-03T04-00-00.000Z",
                 f"{TELEGRAM_ID}.jsonl.deleted.2026-03-04T04-00-00.000Z", f"{TELEGRAM_ID}.jsonl.bak-12-1772",
                 f"{TELEGRAM_ID}.trajectory.jsonl"):
        shutil.copy(TELEGRAM, sessions / name)
    (state / "agents" / "main" / "agent").mkdir()
    (state / "agents" / "main" / "agent" / "auth-profiles.json").write_text("{}")
    (state / "workspace").mkdir()
    (state / "workspace" / "notes.jsonl").write_text("{}\n")
    items = list(ADAPTER.enumerate(state, AdapterOptions(context_name="x")))
    candidates = [i for i in items if isinstance(i, SourceCandidate)]
    assert [Path(c.source_uri).name for c in candidates] == [TELEGRAM.name]
    reasons = {Path(s.source_uri).name: s.detail for s in items if isinstance(s, SkippedSource)}
    assert "writer lock" in reasons[f"{TELEGRAM_ID}.jsonl.lock"]
    assert "archived by /new or /reset" in reasons[f"{TELEGRAM_ID}.jsonl.reset.2026-03-03T04-00-00.000Z"]
    assert "deleted" in reasons[f"{TELEGRAM_ID}.jsonl.deleted.2026-03-04T04-00-00.000Z"]
    assert "backup" in reasons[f"{TELEGRAM_ID}.jsonl.bak-12-1772"]
    assert "trajectory" in reasons[f"{TELEGRAM_ID}.trajectory.jsonl"]
    assert "session store" in reasons["sessions.json"]
    assert "notes.jsonl" not in reasons and "auth-profiles.json" not in reasons  # never walked


# -- end to end --------------------------------------------------------------------------------

def test_ingest_finds_pi_and_openclaw_sessions_under_home(tmp_path: Path, chinvex_home: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    pi_dir = home / ".pi" / "agent" / "sessions" / V3.parent.name
    pi_dir.mkdir(parents=True)
    shutil.copy(V3, pi_dir)
    oc_dir = home / ".openclaw" / "agents" / "main" / "sessions"
    oc_dir.mkdir(parents=True)
    shutil.copy(TELEGRAM, oc_dir)
    shutil.copy(OC_SESSIONS / "sessions.json", oc_dir)
    monkeypatch.setenv("HOME", str(home))
    for var in ("PI_CODING_AGENT_DIR", "OPENCLAW_STATE_DIR", "CLAWDBOT_STATE_DIR"):
        monkeypatch.delenv(var, raising=False)
    detected = run_cli_in_process("sessions", "detect", "--json")
    assert detected.code == 0 and {"pi", "openclaw"} <= set(detected.json["agents"]), detected
    assert run_cli_in_process("context", "create", "X", "--sessions", "auto").code == 0
    result = run_cli_in_process("ingest", "--context", "X", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [] and result.json["sources"]["indexed"] == 2, result
    for thread_id in (V3_ID, TELEGRAM_ID):
        got = run_cli_in_process("get", thread_id, "--context", "X", "--json")
        assert got.code == 0 and got.json["thread_id"] == thread_id, got
        turns = got.json["turns"]
        assert {"user", "assistant"} <= {t["role"] for t in turns} and all(t["ts"] for t in turns)
    again = run_cli_in_process("ingest", "--context", "X", "--json")
    assert again.code == 0 and again.json["sources"]["unchanged"] == 2
