"""The Codex rollout adapter (`cx_sessions_jsonl`) against real and synthetic rollout files.

Fixture turn counts were established by reading the files (dump of type/payload.type per line,
plus `grep -c` of `"type":"user_message"`, `agent_message`, `agent_reasoning`,
`function_call`, `function_call_output`, call-id pairs) and applying the documented rules of
`chinvex_adapters/cx_sessions_jsonl/parser.py` by hand, before comparing with the parser.
"""

from __future__ import annotations

import atexit
import json
import re
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc
from chinvex.ingest.adapters import adapter as registered_adapter
from chinvex.models.sources import (
    Adapter,
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
)
from chinvex_adapters.cx_sessions_jsonl import CodexRolloutAdapter, find_rollout_for_thread
from chinvex_adapters.cx_sessions_jsonl.content import TOOL_OUTPUT_LIMIT
from helpers import FIXTURES

FIX = FIXTURES / "codex-rollout"
ADAPTER = CodexRolloutAdapter()

LEGACY = FIX / "generated-0.169.0/legacy/sessions/2026/11/22/rollout-2026-11-22T02-29-41-01a20116-7f80-7e82-8754-e5125007d434.jsonl"
PAGINATED = FIX / "generated-0.169.0/paginated/sessions/2026/11/22/rollout-2026-11-22T02-29-22-01a20116-364e-7ac1-8d5a-b68a4dbbf7c6.jsonl"
ZST = FIX / "edge-cases/sessions/2026/11/22/rollout-2026-11-22T02-29-41-01a20116-7f80-7e82-8754-e5125007d434.jsonl.zst"
TRUNCATED = FIX / "edge-cases/truncated-last-line.jsonl"
CRLF = FIX / "edge-cases/crlf-and-blank-lines.jsonl"
CODEMIE = FIX / "public/codemie-code/rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"
INCR = FIX / "public/codemie-code/incremental"
LOCALPUSH = FIX / "public/localpush/sessions/2026/02/23"
AGENT_SESSIONS = FIX / "public/agent-sessions"


# -- helpers ---------------------------------------------------------------------------------

def candidate(path: Path, root: Path | None = None) -> SourceCandidate:
    return SourceCandidate(source_uri=str(path), source_type="codex_session", adapter=ADAPTER.name,
                           root=str(root or path.parent), path=path)


def parse(path: Path, state: dict | None = None, root: Path | None = None) -> tuple[ConversationDoc, ParseReport]:
    report = ParseReport()
    docs = list(ADAPTER.parse(candidate(path, root), report, state))
    assert len(docs) == 1
    return docs[0], report


def dumps(turns) -> list[dict]:
    return [t.model_dump(mode="json") for t in turns]


def doc_fields(doc: ConversationDoc) -> tuple:
    return (doc.doc_id, doc.thread_id, doc.title, doc.created_at, doc.updated_at,
            doc.links.model_dump(mode="json"), doc.metadata, doc.source_uri)


def line(typ: str, payload: dict, ts: str = "2026-01-02T03:04:05.000Z") -> str:
    return json.dumps({"timestamp": ts, "type": typ, "payload": payload})


def meta_line(thread_id: str = "019b0000-0000-7000-8000-000000000001", **extra) -> str:
    payload = {"id": thread_id, "timestamp": "2026-01-02T03:04:00.000Z", "cwd": "/home/dev/proj",
               "originator": "codex_cli_rs", "cli_version": "0.120.0", "source": "cli",
               "model_provider": "openai", **extra}
    return line("session_meta", payload, "2026-01-02T03:04:00.500Z")


def ev(kind: str, **fields) -> str:
    return line("event_msg", {"type": kind, **fields})


def ri(kind: str, **fields) -> str:
    return line("response_item", {"type": kind, **fields})


def user_msg(text: str) -> list[str]:
    """A legacy user turn as Codex writes it: response copy, then the event."""
    return [ri("message", role="user", content=[{"type": "input_text", "text": text}]),
            ev("user_message", message=text, images=[], local_images=[])]


def write(path: Path, lines: list[str], trailing_newline: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + ("\n" if trailing_newline else ""), encoding="utf-8")
    return path


ROLLOUT_NAME = "rollout-2026-01-02T03-04-00-019b0000-0000-7000-8000-000000000001.jsonl"


def test_adapter_contract_and_registration() -> None:
    assert isinstance(ADAPTER, Adapter)
    assert (ADAPTER.name, ADAPTER.source_type, ADAPTER.parser_version) == (
        "cx_sessions_jsonl", "codex_session", "cx_sessions_jsonl_v2")
    assert type(registered_adapter("cx_sessions_jsonl")) is CodexRolloutAdapter


# -- per-file turn counts ----------------------------------------------------------------------

# (file, total, roles, how it was counted)
EXPECTED = [
    (LOCALPUSH / "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl", 4,
     {"user": 1, "assistant": 2, "tool": 1},
     "preamble (lines 1-6, before task_started) is context; task: user_message, agent_reasoning, "
     "agent_message, 1 function_call whose output never came"),
    (LOCALPUSH / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl", 18,
     {"user": 1, "assistant": 12, "tool": 5},
     "1 user_message; 6 agent_reasoning + 6 agent_message (never adjacent); 5 call/output pairs"),
    (LOCALPUSH / "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl", 162,
     {"user": 1, "assistant": 43, "tool": 118},
     "one task; grep: 1 user_message, 26 agent_reasoning (no two in a row), 17 agent_message, "
     "118 function_call each with one function_call_output"),
    (CODEMIE, 44, {"user": 3, "assistant": 3, "tool": 38},
     "no task events: 3 user_message start 3 groups; 3 assistant messages; 16 reasoning items "
     "all with summary [] (no turn); 38 call/output pairs"),
    (INCR / "turn-1.jsonl", 2, {"user": 1, "assistant": 1},
     "user_message (response copy dropped) + agent_message (response copy dropped); empty reasoning"),
    (INCR / "turn-2.jsonl", 4, {"user": 2, "assistant": 2}, "turn-1 + one more identical task"),
    (INCR / "turn-spawn-skill.jsonl", 4, {"user": 1, "tool": 3},
     "1 user_message; exec_command call+output; spawn_agent call + collab_agent_spawn_end; "
     "wait_agent call + collab_waiting_end (merged by call_id)"),
    # small.jsonl, counted per group (0-based line numbers):
    #  0-3   user_message "List the files"                                   -> user 1
    #  4-19  task (ends at turn_aborted): agent_reasoning (response copy dropped), 7 tool slots
    #        (call-1 no output, call-2 pair, call-3 pair, ws-1, call-4, call-5, call-6),
    #        context_compacted                                               -> a1 t7 s1
    #  20-69 no task: orphan output of call-1; agent_message (response copy dropped); Plan item;
    #        3 compacted; inter-agent agent_message; 2 entered + 2 exited review (with review
    #        text); 14 tool slots - every trimmed call id reads '[trimmed for fixture]', so a
    #        piece joins the latest slot only when that slot lacks its role (call/output/event)
    #                                                                        -> a4 t14 s6
    #  70-83 user_message; error; 3 entered review; 2 interaction events; 1 compacted
    #                                                                        -> u1 t2 s5
    #  84-95 user_message; compacted; entered + exited review; 2 mcp events  -> u1 a1 t2 s2
    #  96-117 paginated task: UserMessage, 2 AgentMessage, empty Reasoning, 8 tool slots,
    #        compacted, inter-agent message                                  -> u1 a2 t8 s2
    (AGENT_SESSIONS / "small.jsonl", 61, {"user": 4, "assistant": 8, "tool": 33, "system": 16},
     "many sessions concatenated; see the per-group count above"),
    (AGENT_SESSIONS / "large.jsonl", 14, {"user": 6, "assistant": 7, "tool": 1},
     "no tasks: 'Start' (event + response copy = 1), then Step 1..5 as response messages, each "
     "answered 'Ok'; tool_call/tool_result pair; environment_context skipped"),
    (LEGACY, 7, {"user": 2, "assistant": 4, "tool": 1},
     "2 tasks: user, reasoning, exec_command, answer / user+image, reasoning, answer"),
    (PAGINATED, 14, {"user": 4, "assistant": 8, "tool": 1, "system": 1},
     "5 tasks from item_completed: 4x (user, reasoning, answer) + the tool call in task 2; the "
     "compaction task gives one 'Context compacted' turn (its response_item reply is not shown)"),
    (TRUNCATED, 7, {"user": 2, "assistant": 4, "tool": 1},
     "legacy minus its partial task_complete line: same 7 turns"),
    (CRLF, 0, {}, "first 6 legacy lines: set-up and injected context only"),
    (ZST, 7, {"user": 2, "assistant": 4, "tool": 1}, "zstd of the legacy rollout"),
]


@pytest.mark.parametrize("path,total,roles,how", EXPECTED, ids=[e[0].name[:40] for e in EXPECTED])
def test_fixture_turn_counts(path: Path, total: int, roles: dict, how: str) -> None:
    doc, report = parse(path)
    assert len(doc.turns) == total, how
    assert dict(Counter(t.role for t in doc.turns)) == roles, how
    assert doc.source == "cx_sessions_jsonl" and doc.source_type == "codex_session"
    assert doc.source_uri == str(path)
    assert doc.doc_id == thread_doc_id("codex_session", doc.thread_id)
    ids = [t.turn_id for t in doc.turns]
    assert ids == [f"t{i:05d}" for i in range(total)]
    assert isinstance(report.state, dict)
    orjson.dumps(report.state)  # strictly JSON-able
    assert report.state["offset"] <= path.stat().st_size or path.suffix == ".zst"


def test_schema_drift_is_not_a_rollout() -> None:
    # 4 lines without the {timestamp,type,payload} envelope + 1 world_state: no session_meta, no
    # conversation record -> an error naming the file, not an empty document.
    with pytest.raises(SourceError, match=r"schema_drift\.jsonl: not a Codex rollout"):
        parse(AGENT_SESSIONS / "schema_drift.jsonl")


def test_crlf_file_is_a_set_up_only_session() -> None:
    doc, report = parse(CRLF)
    assert doc.turns == []
    assert doc.thread_id == "01a20116-7f80-7e82-8754-e5125007d434"
    assert report.counts["lines_blank"] == 1 and report.counts["lines_drift"] == 0
    assert any("no conversation turns yet" in w for w in report.warnings)


# -- document fields -------------------------------------------------------------------------

def test_legacy_document_fields() -> None:
    doc, report = parse(LEGACY)
    assert doc.thread_id == "01a20116-7f80-7e82-8754-e5125007d434"
    assert doc.title == "Legacy thread: use a TOOL to run echo."
    assert doc.created_at.isoformat() == "2026-11-22T02:29:41.385000+00:00"  # session_meta.timestamp
    assert doc.updated_at.isoformat() == "2026-11-22T02:29:41.895000+00:00"  # last line, not mtime
    assert doc.links.repo_paths == ["/home/dev/run2/work"]
    md = doc.metadata
    assert md["cli_version"] == "0.169.0" and md["originator"] == "fixture_recorder"
    assert md["source_kind"] == "vscode" and md["history_mode"] == "legacy"
    assert md["models"] == ["mock-model"] and md["format_era"] == "C"
    assert md["token_usage"]["total_tokens"] == 450
    image_turn = doc.turns[4]
    assert image_turn.role == "user" and image_turn.attachments[0].path == "/home/dev/run2/work/red.png"
    assert image_turn.text == "And describe this image.\n[image: /home/dev/run2/work/red.png]"
    assert doc.turns[1].meta["kind"] == "reasoning" and doc.turns[1].meta["model"] == "mock-model"
    assert report.counts["injected_context_skipped"] == 1  # <environment_context>
    assert report.counts["context_messages_skipped"] == 1  # developer <skills_instructions>
    assert report.counts["user_duplicates_skipped"] == 2   # response copies of the 2 prompts


def test_paginated_title_from_session_index_and_single_compaction() -> None:
    doc, report = parse(PAGINATED)
    assert doc.title == "Mock research thread"  # only in CODEX_HOME/session_index.jsonl
    assert doc.metadata["history_mode"] == "paginated" and doc.metadata["format_era"] == "D"
    compactions = [t for t in doc.turns if t.meta.get("kind") == "compaction"]
    assert len(compactions) == 1 and compactions[0].text == "Context compacted."
    everything = "\n".join(t.text for t in doc.turns)
    assert "Another language model started" not in everything  # compacted.message
    assert "Mock answer #5" not in everything  # the compaction request's reply, never shown
    assert everything.count("Hello mock, just answer.") == 2  # the prompt + the echo in the answer
    image_turn = next(t for t in doc.turns if t.text.startswith("What is in this image?"))
    assert image_turn.attachments[0].path == "/home/dev/run1/work/red.png"
    assert report.counts["compactions"] == 1


def test_several_session_meta_first_is_the_thread() -> None:
    doc, report = parse(AGENT_SESSIONS / "small.jsonl")
    assert doc.thread_id == "019fc8be-3658-7ca3-9e29-000000000000"
    assert doc.metadata["other_session_ids"] == ["[trimmed for fixture]"]
    assert report.counts["session_meta_extra"] == 6
    assert doc.metadata["cli_version"] == "0.146.0" and doc.metadata["source_kind"] == "cli"
    # an output arriving in the next group is named after its call from the previous group
    orphan = next(t for t in doc.turns if t.meta.get("call_id") == "call-1" and "call_turn_id" in t.meta)
    assert orphan.tool.name == "shell" and "a.txt\nb.txt" in orphan.text


def test_fork_and_subagent_metadata(tmp_path: Path) -> None:
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": "parent-1", "depth": 1,
                                           "agent_nickname": "scout", "agent_role": "explorer"}}}
    path = write(tmp_path / ROLLOUT_NAME, [
        meta_line(source=spawn, forked_from_id="fork-src", agent_nickname="scout",
                  git={"commit_hash": "abc", "branch": "main", "repository_url": "https://x/y.git"}),
        meta_line("019b0000-0000-7000-8000-0000000000ff"),
        ev("task_started", turn_id="t1"),
        *user_msg("investigate the flaky test"),
        ev("agent_message", message="done"),
        ev("collab_agent_spawn_end", call_id="c9", new_thread_id="child-7"),
        ev("thread_name_updated", thread_name="Flaky test hunt"),
        ev("task_complete", turn_id="t1"),
    ])
    doc, _ = parse(path)
    md = doc.metadata
    assert md["source_kind"] == "subagent:thread_spawn" and md["parent_thread_id"] == "parent-1"
    assert md["forked_from_id"] == "fork-src" and md["agent_nickname"] == "scout"
    assert md["other_session_ids"] == ["019b0000-0000-7000-8000-0000000000ff"]
    assert md["child_thread_ids"] == ["child-7"]
    assert md["git"]["repository_url"] == "https://x/y.git"
    assert doc.title == "Flaky test hunt"


def test_thread_id_fallbacks(tmp_path: Path) -> None:
    body = [ri("message", role="user", content=[{"type": "input_text", "text": "hi"}]),
            ri("message", role="assistant", content=[{"type": "output_text", "text": "hello"}])]
    named = write(tmp_path / "a" / ROLLOUT_NAME, body)
    assert parse(named)[0].thread_id == "019b0000-0000-7000-8000-000000000001"
    anon = write(tmp_path / "b" / "export.jsonl", body)
    doc, _ = parse(anon)
    assert re.fullmatch(r"file-[0-9a-f]{32}", doc.thread_id)
    assert parse(anon)[0].thread_id == doc.thread_id  # stable


# -- tools, images, injected context -----------------------------------------------------------

def test_tool_output_is_searchable_and_clipped() -> None:
    doc, report = parse(CODEMIE)
    tools = [t for t in doc.turns if t.role == "tool"]
    assert all(t.tool is not None and t.tool.output is None for t in tools)
    skill = tools[0]
    assert skill.tool.name == "exec_command"
    assert "$ sed -n '1,220p' /Users/Sample_User/.codex/plugins/cache/openai-curated/superpowers" in skill.text
    assert "name: using-superpowers" in skill.text  # from the function_call_output
    assert skill.meta["exit_code"] == 0 and skill.meta["call_id"] == "call_AvUkcEDS8tiUyr1JW8hw2z43"
    clipped = [t for t in tools if "bytes truncated ...]" in t.text]
    assert len(clipped) == report.counts["tool_outputs_truncated"] > 0
    assert all(len(t.text) < TOOL_OUTPUT_LIMIT + 2000 for t in tools)
    mcp = next(t for t in tools if t.tool.name == "mcp__node_repl__js")
    assert "Connect browser session" in mcp.text and mcp.tool.input["title"] == "Connect browser session"

    legacy, _ = parse(LEGACY)
    echo = next(t for t in legacy.turns if t.role == "tool")
    assert "$ echo hi from mock tool" in echo.text and "hi from mock tool\n" in echo.text + "\n"
    assert echo.tool.input == {"cmd": "echo hi from mock tool", "yield_time_ms": 1000}


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{200,}")


@pytest.mark.parametrize("path", [e[0] for e in EXPECTED], ids=[e[0].name[:40] for e in EXPECTED])
def test_no_inline_data_or_encrypted_content_in_text(path: Path) -> None:
    doc, _ = parse(path)
    raw = path.read_bytes() if path.suffix != ".zst" else zstandard.ZstdDecompressor().stream_reader(
        path.open("rb")).read()
    secrets = set()
    for raw_line in raw.splitlines():
        for match in re.finditer(rb'"encrypted_content":\s*"([^"]{24,})"', raw_line):
            secrets.add(match.group(1)[:40].decode("utf-8", "replace"))
    blobs = [doc.title or ""] + [t.text for t in doc.turns]
    blobs += [json.dumps(t.tool.input) for t in doc.turns if t.tool] + [json.dumps(doc.metadata)]
    for blob in blobs:
        assert "data:image" not in blob
        assert not _BASE64_RUN.search(blob)
        assert "REDACTED_ENCRYPTED" not in blob
        for secret in secrets:
            assert secret not in blob
    for turn in doc.turns:
        for att in turn.attachments:
            assert not (att.uri or "").startswith("data:")


def test_images_become_attachments_without_bytes(tmp_path: Path) -> None:
    png = "data:image/png;base64," + "iVBORw0KGgo" * 3000
    path = write(tmp_path / ROLLOUT_NAME, [
        meta_line(),
        ev("task_started", turn_id="t1"),
        ri("message", role="user", content=[{"type": "input_text", "text": "look"},
                                            {"type": "input_image", "image_url": png}]),
        ev("user_message", message="look", images=[png], local_images=["/tmp/shot.png"]),
        ri("function_call", name="view_image", arguments='{"path": "/tmp/b.png"}', call_id="v1"),
        ri("function_call_output", call_id="v1",
           output=[{"type": "input_text", "text": "attached"}, {"type": "input_image", "image_url": png}]),
        ri("image_generation_call", id="ig1", status="completed", revised_prompt="a red cat", result="A" * 50000),
        ri("message", role="assistant", content=[{"type": "output_text", "text": f"inline {png} end"}]),
        ev("task_complete", turn_id="t1"),
    ])
    doc, report = parse(path)
    user = doc.turns[0]
    assert [a.kind for a in user.attachments] == ["image", "image"]
    assert user.attachments[0].mime_type == "image/png" and user.attachments[0].size_bytes > 20000
    assert user.attachments[0].uri is None and user.attachments[1].path == "/tmp/shot.png"
    view = doc.turns[1]
    assert view.role == "tool" and view.attachments[0].mime_type == "image/png"
    gen = doc.turns[2]
    assert gen.tool.name == "image_generation" and "a red cat" in gen.text
    assert gen.attachments[0].size_bytes == 50000 * 3 // 4
    answer = doc.turns[3]
    assert answer.text.startswith("inline [inline image/png,") and answer.text.endswith("end")
    for turn in doc.turns:
        assert "base64" not in turn.text and "AAAAAAAAAA" not in turn.text
    assert report.counts["inline_data_removed"] == 1


def test_injected_context_is_never_a_user_turn(tmp_path: Path) -> None:
    injected = ["<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
                "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>",
                "<user_instructions>x</user_instructions>", "<permissions instructions>y",
                "<skill>\n<name>tdd</name>", "<subagent_notification>{}</subagent_notification>"]
    path = write(tmp_path / "plain.jsonl", [  # no tasks, no events: response messages are all there is
        meta_line(),
        *[ri("message", role="user", content=[{"type": "input_text", "text": t}]) for t in injected],
        ri("message", role="developer", content=[{"type": "input_text", "text": "<collaboration_mode>z"}]),
        ri("message", role="user", content=[
            {"type": "input_text", "text": "real question"},
            {"type": "input_text", "text": '<image name=[Image #1] path="/w/shot.png">'},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            {"type": "input_text", "text": "</image>"}]),
        ri("message", role="assistant", content=[{"type": "output_text", "text": "real answer"}]),
    ])
    doc, report = parse(path)
    assert [(t.role, t.text) for t in doc.turns] == [
        ("user", "real question\n[image: /w/shot.png]"), ("assistant", "real answer")]
    assert doc.turns[0].attachments[0].path == "/w/shot.png"
    assert report.counts["injected_context_skipped"] == len(injected)
    assert report.counts["context_messages_skipped"] == 1


def test_tool_pairing_any_order_and_missing_output(tmp_path: Path) -> None:
    path = write(tmp_path / ROLLOUT_NAME, [
        meta_line(),
        ev("task_started", turn_id="t1"),
        *user_msg("run things"),
        ri("function_call_output", call_id="late", output="output came first"),
        ri("function_call", name="shell", arguments='{"command": ["ls", "-la"]}', call_id="late"),
        ev("exec_command_end", call_id="late", command=["ls", "-la"], exit_code=2,
           aggregated_output="event copy of the output"),
        ri("custom_tool_call", name="apply_patch", call_id="p1",
           input="*** Begin Patch\n*** Add File: a.py\n+print(1)\n*** End Patch"),
        ri("function_call", name="shell", arguments='{"command": "sleep 100"}', call_id="lost"),
        ev("turn_aborted", reason="interrupted"),
    ])
    doc, report = parse(path)
    tools = [t for t in doc.turns if t.role == "tool"]
    assert len(tools) == 3
    first = tools[0]
    assert first.tool.name == "shell" and "$ ls -la" in first.text
    assert "output came first" in first.text and "event copy" not in first.text
    assert first.meta["exit_code"] == 2
    assert "+print(1)" in tools[1].text and tools[1].meta["output_missing"] is True
    assert tools[2].meta["output_missing"] is True and "$ sleep 100" in tools[2].text
    assert report.counts["tool_outputs_missing"] == 2


# -- errors ----------------------------------------------------------------------------------

def test_unrelated_jsonl_raises_with_the_file_name(tmp_path: Path) -> None:
    path = write(tmp_path / "metrics.jsonl", [json.dumps({"step": i, "loss": 1 / (i + 1)}) for i in range(20)])
    with pytest.raises(SourceError, match=r"metrics\.jsonl: not a Codex rollout"):
        parse(path)


def test_empty_file_raises(tmp_path: Path) -> None:
    path = tmp_path / ROLLOUT_NAME
    path.write_bytes(b"")
    with pytest.raises(SourceError, match="empty rollout"):
        parse(path)
    path.write_bytes(b"\n\r\n  \n")
    with pytest.raises(SourceError, match="empty rollout"):
        parse(path)


def test_unknown_types_only_is_an_error_but_mixed_in_is_counted(tmp_path: Path) -> None:
    only = write(tmp_path / "a.jsonl", [meta_line(), line("future_thing", {"x": 1})])
    with pytest.raises(SourceError, match="no conversation turns; 1 unrecognised line.*future_thing"):
        parse(only)
    mixed = write(tmp_path / "b.jsonl", [meta_line(), line("future_thing", {"x": 1}), "not json {",
                                         '[1, 2]', *user_msg("hello"), ev("agent_message", message="hi")])
    doc, report = parse(mixed)
    assert [t.text for t in doc.turns] == ["hello", "hi"]
    assert report.counts["lines_unknown_type"] == 1 and report.counts["lines_drift"] == 2
    assert any("unknown type" in w for w in report.warnings)


def test_five_megabyte_single_line(tmp_path: Path) -> None:
    big = "".join(f"row {i:07d} some tool output text\n" for i in range(170_000))  # ~5 MB
    assert len(big) > 5_000_000
    path = write(tmp_path / ROLLOUT_NAME, [
        meta_line(), ev("task_started", turn_id="t1"), *user_msg("dump the table"),
        ri("function_call", name="exec_command", arguments='{"cmd": "cat table"}', call_id="c1"),
        ri("function_call_output", call_id="c1", output=big),
        ev("agent_message", message="dumped"), ev("task_complete", turn_id="t1"),
    ])
    started = time.perf_counter()
    doc, report = parse(path)
    elapsed = time.perf_counter() - started
    tool = doc.turns[1]
    assert "row 0000000" in tool.text and "row 0169999" in tool.text  # head and tail kept
    assert re.search(r"\[\.\.\. \d+ bytes truncated \.\.\.\]", tool.text)
    assert len(tool.text) < TOOL_OUTPUT_LIMIT + 500
    assert report.counts["tool_outputs_truncated"] == 1
    assert elapsed < 10


# -- append-aware re-ingest --------------------------------------------------------------------

def test_incremental_turn1_to_turn2_same_path(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_bytes((INCR / "turn-1.jsonl").read_bytes())
    first, r1 = parse(path)
    assert len(first.turns) == 2
    # turn-1 ends with task_complete, so the resume point is its end: nothing is re-read
    assert r1.state["resume_offset"] == r1.state["offset"] == path.stat().st_size
    assert r1.state["resume_turn_index"] == 2
    path.write_bytes((INCR / "turn-2.jsonl").read_bytes())  # same path, appended
    resumed, r2 = parse(path, r1.state)
    assert r2.append_from == 2
    assert [t.text for t in resumed.turns] == [
        "What languages can you work with?",
        "I can work with many programming languages including Python, JavaScript, TypeScript, Go, and Rust.",
    ]
    full, _ = parse(path)
    assert dumps(first.turns) + dumps(resumed.turns) == dumps(full.turns)
    assert doc_fields(resumed) == doc_fields(full)


def test_truncated_last_line_is_left_then_completed(tmp_path: Path) -> None:
    path = tmp_path / LEGACY.name
    path.write_bytes(TRUNCATED.read_bytes())
    partial, r1 = parse(path)
    tail = len(LEGACY.read_bytes()) - len(TRUNCATED.read_bytes())
    assert r1.counts["partial_tail_bytes"] == TRUNCATED.stat().st_size - r1.state["offset"] > 0
    assert r1.counts["lines_drift"] == 0
    assert r1.state["offset"] < TRUNCATED.stat().st_size
    # the second task was still open: the next run restarts at its task_started
    assert r1.state["resume_turn_index"] == 4
    with path.open("ab") as fh:
        fh.write(LEGACY.read_bytes()[-tail:])
    resumed, r2 = parse(path, r1.state)
    assert r2.append_from == 4 and len(resumed.turns) == 3
    assert r2.state["offset"] == LEGACY.stat().st_size and "partial_tail_bytes" not in r2.counts
    full, _ = parse(path)
    assert dumps(partial.turns[:4]) + dumps(resumed.turns) == dumps(full.turns)
    assert doc_fields(resumed) == doc_fields(full)
    assert full.updated_at.isoformat() == "2026-11-22T02:29:41.895000+00:00"  # task_complete line


def test_zstd_gives_the_turns_of_its_plain_source(tmp_path: Path) -> None:
    plain, _ = parse(LEGACY)
    packed, report = parse(ZST)
    assert dumps(packed.turns) == dumps(plain.turns)
    assert (packed.thread_id, packed.title, packed.created_at, packed.updated_at) == (
        plain.thread_id, plain.title, plain.created_at, plain.updated_at)
    assert packed.metadata["compressed"] is True
    # a .zst is always parsed in full, even with a state
    again, r2 = parse(ZST, report.state)
    assert r2.append_from is None and dumps(again.turns) == dumps(plain.turns)


def test_state_rejected_when_file_replaced_or_truncated(tmp_path: Path) -> None:
    path = tmp_path / LEGACY.name
    data = LEGACY.read_bytes()
    path.write_bytes(data)
    _, r1 = parse(path)
    path.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")  # truncated
    doc, r2 = parse(path, r1.state)
    assert r2.append_from is None and r2.counts["resume_rejected:truncated"] == 1
    path.write_bytes(data.replace(b"run2", b"runX", 1))  # same size, different head
    doc, r3 = parse(path, r1.state)
    assert r3.append_from is None and r3.counts["resume_rejected:replaced"] == 1
    assert len(doc.turns) == 7
    state = dict(r1.state, parser_version="old")
    path.write_bytes(data)
    assert parse(path, state)[1].append_from is None
    assert parse(path, {"garbage": True})[1].append_from is None
    assert parse(path, r1.state)[1].append_from == r1.state["resume_turn_index"]


def _line_cuts(data: bytes, limit: int) -> list[int]:
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    if len(ends) > limit:
        step = len(ends) / limit
        ends = sorted({ends[int(i * step)] for i in range(limit)} | {ends[-1]})
    return [0] + ends


RESUME_FILES = [e[0] for e in EXPECTED if e[0].suffix == ".jsonl" and e[0] != TRUNCATED]


@pytest.mark.parametrize("src", RESUME_FILES, ids=[p.name[:40] for p in RESUME_FILES])
def test_resume_equals_full_parse_at_every_cut(src: Path, tmp_path: Path) -> None:
    """full(final).turns == full(prefix).turns[:append_from] + resumed(final, state(prefix)).turns."""
    data = src.read_bytes()
    path = tmp_path / src.name
    path.write_bytes(data)
    full, _ = parse(path)
    checked = 0
    for cut in _line_cuts(data, 25):
        path.write_bytes(data[:cut])
        try:
            prefix, pr = parse(path)
        except SourceError:
            continue  # empty or not-yet-a-rollout prefix: the next run parses in full anyway
        path.write_bytes(data)
        resumed, rr = parse(path, pr.state)
        assert rr.append_from == pr.state["resume_turn_index"], cut
        assert dumps(prefix.turns)[: rr.append_from] + dumps(resumed.turns) == dumps(full.turns), cut
        assert doc_fields(resumed) == doc_fields(full), cut
        checked += 1
    assert checked >= min(5, len(_line_cuts(data, 25)) - 2)


def test_resume_through_partial_lines_and_two_appends(tmp_path: Path) -> None:
    import random

    rnd = random.Random(7)
    for src in (PAGINATED, AGENT_SESSIONS / "small.jsonl", CODEMIE):
        data = src.read_bytes()
        path = tmp_path / src.name
        path.write_bytes(data)
        full, _ = parse(path)
        for _ in range(6):
            a = rnd.randrange(len(data) // 4, len(data))
            b = rnd.randrange(a, len(data) + 1)
            path.write_bytes(data[:a])
            d1, r1 = parse(path)
            path.write_bytes(data[:b])
            d2, r2 = parse(path, r1.state)
            path.write_bytes(data)
            d3, r3 = parse(path, r2.state)
            chained = (dumps(d1.turns)[: r2.append_from] + dumps(d2.turns))[: r3.append_from] + dumps(d3.turns)
            assert chained == dumps(full.turns), (src.name, a, b)
            assert doc_fields(d3) == doc_fields(full)


# -- era B ------------------------------------------------------------------------------------

def test_pre_envelope_era_b_file(tmp_path: Path) -> None:
    path = write(tmp_path / ROLLOUT_NAME, [
        json.dumps({"id": "019b0000-0000-7000-8000-000000000001", "timestamp": "2025-06-01T10:00:00Z",
                    "instructions": None, "git": {"branch": "dev"}, "cwd": "/old/proj"}),
        json.dumps({"record_type": "state"}),
        json.dumps({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}),
        json.dumps({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the build"}]}),
        json.dumps({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Looking at CI"}],
                    "encrypted_content": "gAAAAsecretsecretsecretsecretsecret"}),
        json.dumps({"type": "local_shell_call", "call_id": "s1", "status": "completed",
                    "action": {"type": "exec", "command": ["make", "all"], "working_directory": "/old/proj"}}),
        json.dumps({"type": "function_call_output", "call_id": "s1",
                    "output": json.dumps({"output": "ok built", "metadata": {"exit_code": 0}})}),
        json.dumps({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]}),
        json.dumps({"record_type": "state"}),
    ])
    doc, report = parse(path)
    assert doc.metadata["format_era"] == "B"
    assert [(t.role, t.text.split("\n")[0]) for t in doc.turns] == [
        ("user", "fix the build"), ("assistant", "Looking at CI"), ("tool", "Tool: local_shell"),
        ("assistant", "Fixed.")]
    assert "$ make all" in doc.turns[2].text and "ok built" in doc.turns[2].text
    assert doc.turns[2].meta["exit_code"] == 0
    assert doc.turns[0].ts is None and doc.created_at.isoformat().startswith("2025-06-01T10:00:00")
    assert report.counts["lines_era_b_state"] == 2
    assert "secret" not in json.dumps(dumps(doc.turns))


# -- discovery --------------------------------------------------------------------------------

def _codex_home(tmp_path: Path) -> Path:
    home = tmp_path / ".codex"
    day = home / "sessions" / "2026" / "11" / "22"
    day.mkdir(parents=True)
    shutil.copy(LEGACY, day / LEGACY.name)
    shutil.copy(ZST, day / ZST.name)  # superseded by the plain sibling
    shutil.copy(PAGINATED, day / PAGINATED.name)
    shutil.copy(ZST, day / ZST.name.replace("7f80-7e82", "0000-7000"))  # zst without sibling
    (home / "archived_sessions" / "2026" / "01" / "01").mkdir(parents=True)
    shutil.copy(INCR / "turn-1.jsonl", home / "archived_sessions" / "2026" / "01" / "01"
                / "rollout-2026-01-01T00-00-00-a1b2c3d4-e5f6-7890-abcd-ef1234567890.jsonl")
    (home / "session_index.jsonl").write_text('{"id":"x","thread_name":"n","updated_at":"t"}\n')
    (home / "history.jsonl").write_text('{"session_id":"x","ts":1,"text":"hi"}\n')
    (home / "sessions" / "notes.txt").write_text("not jsonl")
    (home / "sessions" / "scratch").mkdir()
    (home / "sessions" / "scratch" / "skip-me.jsonl").write_text("{}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.jsonl").write_text("{}\n")
    (home / "sessions" / "link-out").symlink_to(outside, target_is_directory=True)
    (home / "sessions" / "2026" / "loop").symlink_to(home / "sessions", target_is_directory=True)
    return home


def test_enumerate_codex_home(tmp_path: Path) -> None:
    home = _codex_home(tmp_path)
    items = list(ADAPTER.enumerate(home, AdapterOptions(context_name="t", excludes=["*/scratch/*"])))
    cands = [i for i in items if isinstance(i, SourceCandidate)]
    skipped = {Path(i.source_uri).name: i.reason for i in items if isinstance(i, SkippedSource)}
    names = sorted(Path(c.source_uri).name for c in cands)
    assert names == sorted([
        LEGACY.name, PAGINATED.name, ZST.name.replace("7f80-7e82", "0000-7000"),
        "rollout-2026-01-01T00-00-00-a1b2c3d4-e5f6-7890-abcd-ef1234567890.jsonl"])
    assert skipped == {"session_index.jsonl": "not_a_rollout", "history.jsonl": "not_a_rollout",
                       ZST.name: "superseded", "skip-me.jsonl": "excluded"}
    by_name = {Path(c.source_uri).name: c for c in cands}
    legacy = by_name[LEGACY.name]
    assert legacy.thread_id == "01a20116-7f80-7e82-8754-e5125007d434"
    assert legacy.size_bytes == LEGACY.stat().st_size and legacy.mtime_ns == (Path(legacy.source_uri)).stat().st_mtime_ns
    assert Path(legacy.source_uri).is_absolute() and legacy.adapter == "cx_sessions_jsonl"
    assert legacy.source_type == "codex_session"
    # excluding by basename glob, and enumerating a plain folder without CODEX_HOME layout
    items = list(ADAPTER.enumerate(home / "sessions", AdapterOptions(context_name="t", excludes=["*.zst"])))
    reasons = Counter(i.reason for i in items if isinstance(i, SkippedSource))
    assert reasons["excluded"] == 2 and not any(Path(i.source_uri).name == "elsewhere.jsonl" for i in items)


def test_enumerate_localpush_ignores_readme_and_missing_root(tmp_path: Path) -> None:
    items = list(ADAPTER.enumerate(FIX / "public" / "localpush", AdapterOptions(context_name="t")))
    assert len(items) == 3 and all(isinstance(i, SourceCandidate) for i in items)
    assert all(i.source_uri.endswith(".jsonl") for i in items)
    with pytest.raises(SourceError, match="not found"):
        list(ADAPTER.enumerate(tmp_path / "nope", AdapterOptions(context_name="t")))


def test_find_rollout_for_thread(tmp_path: Path) -> None:
    home = _codex_home(tmp_path)
    day = home / "sessions" / "2026" / "11" / "22"
    assert find_rollout_for_thread([home], "01a20116-7f80-7e82-8754-e5125007d434") == day / LEGACY.name
    assert find_rollout_for_thread([home], "01A20116-364E-7AC1-8D5A-B68A4DBBF7C6") == day / PAGINATED.name
    assert find_rollout_for_thread([home], "01a20116-0000-7000-8754-e5125007d434") == \
        day / ZST.name.replace("7f80-7e82", "0000-7000")
    archived = find_rollout_for_thread([tmp_path / "none", home], "a1b2c3d4-e5f6-7890-abcd-ef1234567890")
    assert archived is not None and "archived_sessions" in archived.parts
    assert find_rollout_for_thread([home / "sessions"], "01a20116-7f80-7e82-8754-e5125007d434") == day / LEGACY.name
    assert find_rollout_for_thread([home], "00000000-0000-0000-0000-000000000000") is None


# -- fuzz -------------------------------------------------------------------------------------

_FUZZ_DIR = Path(tempfile.mkdtemp(prefix="cx_fuzz_"))
atexit.register(shutil.rmtree, _FUZZ_DIR, True)


def _parse_bytes(data: bytes, state: dict | None = None) -> ParseReport | None:
    """Only SourceError may escape; output must be strictly JSON-able."""
    path = _FUZZ_DIR / ROLLOUT_NAME
    path.write_bytes(data)
    report = ParseReport()
    try:
        docs = list(ADAPTER.parse(candidate(path), report, state))
    except SourceError:
        return None
    for doc in docs:
        orjson.dumps(doc.model_dump(mode="json"))
    orjson.dumps(report.state)
    return report


def _templates() -> list:
    out = []
    for p in (LEGACY, PAGINATED, CODEMIE, AGENT_SESSIONS / "small.jsonl", AGENT_SESSIONS / "large.jsonl",
              INCR / "turn-spawn-skill.jsonl"):
        for raw in p.read_bytes().splitlines():
            if 0 < len(raw) < 6000:
                out.append(orjson.loads(raw))
    return out


_TEMPLATES = _templates()
_scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
            | st.text(max_size=20) | st.sampled_from(["user", "assistant", "message", "input_text",
                                                       "data:image/png;base64,AAAA", "call_1", "Text"]))
_json = st.recursive(_scalars, lambda ch: st.lists(ch, max_size=4)
                     | st.dictionaries(st.text(max_size=8), ch, max_size=4), max_leaves=15)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@st.composite
def _mutated_line(draw):
    """A real rollout line with up to 3 values replaced or keys deleted anywhere inside it."""
    obj = json.loads(json.dumps(draw(st.sampled_from(_TEMPLATES))))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(list(_paths(obj))))
        value = draw(_json)
        if not path:
            obj = value
            continue
        parent = obj
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
    return obj


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=600))
def test_fuzz_arbitrary_bytes(data: bytes) -> None:
    _parse_bytes(data)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_json, max_size=12), st.booleans())
def test_fuzz_arbitrary_json_lines(values: list, crlf: bool) -> None:
    raw = "\n".join(json.dumps(v) for v in values) + "\n"
    _parse_bytes(raw.replace("\n", "\r\n").encode() if crlf else raw.encode())


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_mutated_line(), min_size=1, max_size=15), st.integers(0, 400))
def test_fuzz_mutated_rollout_lines(lines: list, grow: int) -> None:
    raw = ("\n".join(json.dumps(v) for v in lines) + "\n").encode()
    report = _parse_bytes(raw)
    if report is not None:  # and resuming after an append (possibly ending mid-line)
        _parse_bytes(raw + raw[:grow], report.state)


def test_lone_surrogates_and_huge_integers_cost_one_value_not_the_rollout(tmp_path: Path) -> None:
    """`\\udc80` (an emoji cut in half) makes orjson refuse the line and the stdlib parser give a
    lone surrogate; a NaN literal sends a line to the stdlib parser, which reads a 70-bit integer
    that orjson cannot write back. The rollout is still read, and what it stores is writable."""
    from chinvex.ingest.prepare import prepare

    lines = [meta_line(), *user_msg("before LONE lonemarker"),
             ev("token_count", info={"total_token_usage": {"input_tokens": 2**70, "output_tokens": 5}},
                rate=float("nan")),
             *user_msg("second question after"),
             ri("function_call", name="shell", call_id="c1",
                arguments=json.dumps({"seed": 2**70, "cmd": ["echo", "x"]}))]
    path = write(tmp_path / ROLLOUT_NAME, [entry.replace("LONE", "\\udc80") for entry in lines])
    doc, report = parse(path)
    texts = [t.text for t in doc.turns]
    assert any("\ufffd lonemarker" in t for t in texts), texts
    assert any("second question after" in t for t in texts)
    orjson.dumps(report.state)  # the resume state is stored with plain orjson
    prepared = prepare(doc, origin_uri=str(path), redact=True)
    assert any("lonemarker" in c.search_text for c in prepared.chunks)
    orjson.dumps(prepared.metadata)
    for turn in prepared.turns or []:
        turn.model_dump_json()


def test_apply_patch_calls_record_their_edits(tmp_path: Path):
    """No public rollout holds an apply_patch call, so one is appended to a real rollout in the
    shape Codex writes it (`custom_tool_call`, the patch envelope as `input`)."""
    patch = ("*** Begin Patch\n*** Update File: src/app.py\n@@ def main():\n-    return 1\n+    return 2\n"
             "*** Add File: notes.md\n+# Notes\n*** End Patch\n")
    lines = [
        {"timestamp": "2026-11-22T02:31:00.000Z", "type": "response_item",
         "payload": {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": patch}},
        {"timestamp": "2026-11-22T02:31:01.000Z", "type": "response_item",
         "payload": {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Success."}},
    ]
    path = tmp_path / LEGACY.name
    path.write_bytes(LEGACY.read_bytes() + b"".join(json.dumps(l).encode() + b"\n" for l in lines))
    doc, report = parse(path)
    (turn,) = [t for t in doc.turns if t.meta.get("edits")]
    cwd = doc.links.repo_paths[-1]
    assert [(e["path"], e["op"], e["abs_path"]) for e in turn.meta["edits"]] == [
        ("src/app.py", "patch", f"{cwd}/src/app.py"), ("notes.md", "write", f"{cwd}/notes.md")]
    assert turn.meta["edits"][0]["new_text"] == "    return 2" and "Success." in turn.text
    assert report.counts["file_edits"] == 2
