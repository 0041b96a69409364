"""The claude_code adapter on real and baseline Claude Code transcripts (tests/fixtures/samples) and a
synthetic session with a rewind, a split assistant message, an image and compaction."""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.ids import thread_doc_id
from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, SourceError
from chinvex_adapters.claude_code import ClaudeCodeAdapter, parse_transcript
from helpers import FIXTURES, TEST_FIXTURES, dicts_in, run_cli_in_process

CLAUDE = FIXTURES / "claude-code"
SUBAGENT_PARENT = CLAUDE / "agent-sessions/projects/-Users-example/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl"
SUBAGENT_NEW = (CLAUDE / "agent-sessions/projects/-Users-example/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
                / "subagents/agent-a0ad4f44468bdf20d.jsonl")
CODEMIE = CLAUDE / "codemie-code/projects/-tmp-private"
MAIN_2064 = CODEMIE / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
REWIND = TEST_FIXTURES / "claude_code" / "rewind_session.jsonl"

ADAPTER = ClaudeCodeAdapter()


def parse(path: Path, **settings_) -> tuple[ConversationDoc, ParseReport]:
    found = list(ADAPTER.enumerate(path, AdapterOptions(context_name="t", settings=settings_)))
    assert len(found) == 1 and isinstance(found[0], SourceCandidate), found
    report = ParseReport()
    docs = list(ADAPTER.parse(found[0], report, None))
    assert len(docs) == 1
    return docs[0], report


def roles(doc: ConversationDoc) -> dict[str, int]:
    return dict(Counter(t.role for t in doc.turns))


# Counted by hand from each file (see the comments on each row), with these rules: user text →
# user turn; an assistant message (lines sharing message.id merged) with text/thinking → one
# assistant turn; each tool_use → one tool turn that its tool_result joins; isMeta user text,
# system records, attachments and the other meta records → nothing; only the branch ending at
# the last-written message of each chain counts.
EXPECTED = {
    # psys1 (system, skipped) → pu1 user → pa1 assistant [text, tool_use Task]
    "agent-sessions/projects/-Users-example/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl":
        ("0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f", {"user": 1, "assistant": 1, "tool": 1}),
    # cu1 user → ca1 [text, tool_use bash] → cu2 tool_result (isMeta, still a result) → attachment
    "agent-sessions/projects/-Users-example/0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/subagents/agent-a0ad4f44468bdf20d.jsonl":
        ("0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f/agent-a0ad4f44468bdf20d", {"user": 1, "assistant": 1, "tool": 1}),
    # u1 "Open README"; top-level tool_use t1 + tool_result r1 (one tool turn); a1 string
    # content; u2 "List files"; the rest (turn_duration, modes, attachment, hook summary) meta.
    "agent-sessions/schema_drift.jsonl":
        ("ses_stage0_drift", {"user": 2, "assistant": 1, "tool": 1}),
    # Four chains (a link between a sidechain and a main-thread record starts a new chain).
    # Chain 1 (sys1, all isSidechain): its last message is u3 (line 22), so the branch is
    # u1 "Hello" → a1 [thinking, text, tool_use bash] → u2 (the bash result, no ids: matched
    # to the open call) → a3 "Partial reply" → u3 (isCompactSummary → system): 1 user,
    # 2 assistant, 1 tool, 1 system; a2 and u2b are off the branch. Chain 2 (line 29,
    # a-nested-1, not a sidechain, parent u1 is): a-nested-1 [thinking, text, tool_use Bash]
    # → u-nested-1 (its result): 1 assistant, 1 tool. Chain 3 (lines 42-62, every uuid
    # "[trimmed for fixture]"): 47 assistant; 49 user (image+text); 50 assistant (only a
    # `fallback` block) merged with 55 (same message.id, no user turn between) [thinking,
    # text, tool_use] → 1 assistant + 1 tool; 60 user; 62 user: 3 user, 2 assistant, 1 tool.
    # Chain 4 (line 63 on): 63 user; 65, 77, 78 one message.id → 1 assistant; 87 user.
    "agent-sessions/small.jsonl":
        ("ses_stage0_small", {"user": 6, "assistant": 6, "tool": 3, "system": 1}),
    # user "show tools"; assistant lines 7 (thinking) + 12 (text) share message.id → 1 turn;
    # 15 summary records, a snapshot and a stop-hook summary are meta.
    "codemie-code/incremental-simple/turn-1.jsonl":
        ("3fb74381-1bf4-475e-8c6f-442d872b1bcf", {"user": 1, "assistant": 1}),
    # users: "create hello.py…", "update py…", "delete js" (3). assistants: msg …WmL3gF (4 lines:
    # text + 3 Write tool_use), …LZEeW, …Lj88J, …8tJ8DE (4). tools: 3 Write, Read, Edit, Bash (6).
    "codemie-code/projects/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl":
        ("4c2ddfdc-b619-4525-8d03-1950fb1b0257", {"user": 3, "assistant": 4, "tool": 6}),
    # "Warmup" + one assistant line, each (old sub-agent layout; parent = sessionId inside).
    "codemie-code/projects/-tmp-private/agent-36541525.jsonl":
        ("4c2ddfdc-b619-4525-8d03-1950fb1b0257/agent-36541525", {"user": 1, "assistant": 1}),
    "codemie-code/projects/-tmp-private/agent-50243ee8.jsonl":
        ("4c2ddfdc-b619-4525-8d03-1950fb1b0257/agent-50243ee8", {"user": 1, "assistant": 1}),
}


def test_enumerate_shared_fixtures():
    found = list(ADAPTER.enumerate(CLAUDE, AdapterOptions(context_name="t")))
    cands = {Path(c.source_uri).relative_to(CLAUDE).as_posix(): c for c in found if isinstance(c, SourceCandidate)}
    skipped = [s for s in found if isinstance(s, SkippedSource)]
    assert set(cands) == set(EXPECTED)
    assert [(Path(s.source_uri).name, s.reason) for s in skipped] == [
        ("agent-a0ad4f44468bdf20d.meta.json", "ignored")]
    assert cands[SUBAGENT_NEW.relative_to(CLAUDE).as_posix()].extra["layout"] == "subagent"
    assert cands["codemie-code/projects/-tmp-private/agent-36541525.jsonl"].extra["layout"] == "subagent_legacy"
    for rel, cand in cands.items():
        stat = (CLAUDE / rel).stat()
        assert (cand.size_bytes, cand.mtime_ns) == (stat.st_size, stat.st_mtime_ns)
        assert cand.source_type == "agent_session"


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_shared_fixture_counts(rel):
    thread_id, expected_roles = EXPECTED[rel]
    doc, report = parse(CLAUDE / rel)
    assert doc.thread_id == thread_id
    assert roles(doc) == expected_roles
    assert doc.doc_id == thread_doc_id("agent_session", thread_id)
    assert doc.source == "claude_code" and doc.source_type == "agent_session"
    assert doc.source_uri == str(CLAUDE / rel)
    assert report.counts["records_failed"] == 0
    assert len({t.turn_id for t in doc.turns}) == len(doc.turns)
    for turn in doc.turns:
        if turn.role == "tool":
            assert turn.tool is not None and turn.text.startswith(("Tool call:", "Tool result:"))


def test_split_assistant_message_is_merged_and_usage_counted_once():
    doc, report = parse(MAIN_2064)
    assert [t.role for t in doc.turns[:5]] == ["user", "assistant", "tool", "tool", "tool"]
    merged = doc.turns[1]
    assert merged.meta["message_id"] == "msg_bdrk_013SYvCzWGkVVXBeihWmL3gF"
    assert merged.text == "I'll create three simple files: hello.py, hello.md, and hello.js."
    assert report.counts["assistant_lines_merged"] == 3
    # By hand from the file: output_tokens of the last line of each message.id:
    # 395 + 82 + 87 + 153 + 1 + 76 + 12 = 806 (summing every line would give 818).
    assert doc.metadata["usage"]["output_tokens"] == 806
    assert doc.metadata["usage"]["input_tokens"] == 3 + 7 + 3 + 6 + 5 + 3 + 6
    writes = [t for t in doc.turns if t.tool and t.tool.name == "Write"]
    assert [t.tool.input["file_path"] for t in writes] == [
        "/tmp/private/hello.py", "/tmp/private/hello.md", "/tmp/private/hello.js"]
    assert "File created successfully at: /tmp/private/hello.py" in writes[0].text
    assert 'print("Hello, World!")' in writes[0].text  # the written content is searchable
    assert doc.links.repo_paths == ["/tmp/private"]
    assert doc.metadata["version"] == "2.0.64" and doc.metadata["git_branch"] == "analytics-v2"
    assert doc.metadata["model"] == "claude-sonnet-4-5-20250929"


def test_rewind_keeps_only_the_latest_branch():
    doc, report = parse(REWIND)
    texts = "\n".join(t.text for t in doc.turns)
    assert "ABANDONED" not in texts and "structlog with JSON output" not in texts
    assert "Use loguru instead" in texts
    assert [t.turn_id for t in doc.turns] == [
        "u1", "a1-text", "a1-tool:toolu_read", "a2", "u2", "a4", "a4:toolu_bash", "cs1", "u4",
        "a5:toolu_edit", "u-final"]
    assert [t.role for t in doc.turns] == [
        "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "system", "user",
        "tool", "assistant"]
    assert report.counts["records_off_branch"] == 2  # u2-old, a3-old
    assert doc.metadata["branch"]["chains"] == 1
    assert doc.title == "Worker logging with loguru"  # summary whose leafUuid is on the branch
    # the thinking of msg_01A is kept with its text; usage of msg_01A counted once (last line)
    first = doc.turns[1]
    assert first.text.startswith("[thinking]\nThe worker has no logging config yet")
    assert first.meta["tokens"]["output_tokens"] == 45
    assert doc.metadata["usage"]["output_tokens"] == 45 + 30 + 60 + 50 + 25


def test_compaction_summary_is_one_system_turn_and_meta_records_are_skipped(tmp_path):
    doc, report = parse(REWIND)
    summaries = [t for t in doc.turns if t.meta.get("compact_summary")]
    assert len(summaries) == 1 and summaries[0].role == "system"
    assert "queue connection refused on port 5673" in summaries[0].text
    assert report.counts["user_meta_skipped"] == 1  # the "Caveat:" injected record
    assert report.counts["interrupt_markers_skipped"] == 1
    assert report.counts["records_skipped:system/compact_boundary"] == 1
    assert report.counts["records_skipped:progress"] == 1
    # The same summary repeated (a resumed session copies it) is indexed once.
    lines = REWIND.read_text().splitlines()
    summary_line = next(json.loads(line) for line in lines if '"isCompactSummary"' in line)
    again = dict(summary_line, uuid="cs2", parentUuid="u-final", timestamp="2025-11-02T10:04:00.000Z")
    later = {"type": "user", "uuid": "u9", "parentUuid": "cs2", "timestamp": "2025-11-02T10:04:01.000Z",
             "message": {"role": "user", "content": "thanks"}}
    copy = tmp_path / REWIND.name
    copy.write_text("\n".join(lines + [json.dumps(again), json.dumps(later)]) + "\n")
    doc2, report2 = parse(copy)
    assert sum(1 for t in doc2.turns if t.meta.get("compact_summary")) == 1
    assert report2.counts["compact_summaries_repeated"] == 1
    assert doc2.turns[-1].text == "thanks"


def test_tool_results_are_searchable_and_long_ones_truncated():
    doc, report = parse(REWIND)
    bash = next(t for t in doc.turns if t.tool and t.tool.name == "Bash")
    assert bash.text.startswith("Tool call: Bash\ncommand: python worker.py --once")
    assert "Result (error):" in bash.text and bash.meta["is_error"] is True
    assert "id=0 status=ok" in bash.text  # head kept
    assert bash.text.rstrip().endswith("FATAL: queue connection refused on port 5673")  # tail kept
    assert "characters omitted" in bash.text and len(bash.text) < 4000
    assert report.counts["tool_outputs_truncated"] == 1
    assert bash.tool.input == {"command": "python worker.py --once", "description": "Run one worker iteration"}
    read = next(t for t in doc.turns if t.tool and t.tool.name == "Read")
    assert "queue_client.run()" in read.text


def test_no_base64_signatures_or_redacted_thinking_in_the_document():
    raw = REWIND.read_text()
    image_data = json.loads(next(line for line in raw.splitlines() if '"base64"' in line))
    data = image_data["message"]["content"][1]["source"]["data"]
    doc, report = parse(REWIND)
    dumped = orjson.dumps(doc.model_dump(mode="json")).decode()
    assert data[:80] not in dumped and data[-80:] not in dumped
    assert "SIGNATURE-SHOULD-NOT-APPEAR" not in dumped
    assert "REDACTED-BLOB-SHOULD-NOT-APPEAR" not in dumped
    assert report.counts["redacted_thinking_skipped"] == 1
    user = next(t for t in doc.turns if t.turn_id == "u2")
    assert [(a.kind, a.mime_type) for a in user.attachments] == [("image", "image/png")]
    assert user.attachments[0].size_bytes == len(data) * 3 // 4


def test_thinking_can_be_left_out():
    doc, report = parse(REWIND, claude_code_include_thinking=False)
    assert not any("[thinking]" in t.text for t in doc.turns)
    assert doc.turns[1].text == "I'll look at the worker entry point first."
    assert report.counts["thinking_blocks_skipped"] == 1 and doc.metadata["thinking_included"] is False


def test_subagent_layouts():
    parent, _ = parse(SUBAGENT_PARENT)
    child, _ = parse(SUBAGENT_NEW)
    assert child.thread_id == f"{parent.thread_id}/agent-a0ad4f44468bdf20d"
    assert child.doc_id != parent.doc_id
    assert child.metadata["layout"] == "subagent"
    assert child.metadata["parent_session_id"] == parent.thread_id
    assert child.metadata["agent_meta"] == {"agentType": "general-purpose", "spawnDepth": 1}
    assert "a.txt:1: TODO fix" in child.turns[2].text
    old, _ = parse(CODEMIE / "agent-36541525.jsonl")
    assert old.metadata["layout"] == "subagent_legacy"
    assert old.metadata["parent_session_id"] == "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
    assert old.thread_id == "4c2ddfdc-b619-4525-8d03-1950fb1b0257/agent-36541525"


def test_partial_last_line_is_left_unread(tmp_path):
    complete, _ = parse(REWIND)
    copy = tmp_path / REWIND.name
    half_line = b'{"type": "assistant", "uuid": "half", "message": {"id": "msg_x", "con'
    copy.write_bytes(REWIND.read_bytes() + half_line)
    doc, report = parse(copy)
    assert [t.turn_id for t in doc.turns] == [t.turn_id for t in complete.turns]
    assert report.counts["partial_last_line"] == 1
    assert report.state == {"complete_bytes": REWIND.stat().st_size}
    assert any("incomplete" in w for w in report.warnings)


def test_bad_lines_and_bad_files(tmp_path):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b'not json at all\n[1, 2]\n{"type": "user", "uuid": "u1", "sessionId": "s1", '
                      b'"message": {"role": "user", "content": "caf\xe9 \xff ok"}}\n\r\n')
    doc, report = parse(mixed)
    assert [t.text for t in doc.turns] == ["caf\ufffd \ufffd ok"]
    assert report.counts["lines_invalid_json"] == 1 and report.counts["lines_not_object"] == 1

    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("hello\nworld\n")
    with pytest.raises(SourceError, match="garbage.jsonl"):
        parse(garbage)
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"a": 1}\n{"b": 2}\n')
    with pytest.raises(SourceError, match="foreign.jsonl: not a Claude Code transcript"):
        parse(foreign)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    report = ParseReport()
    assert parse_transcript(empty, report) is None and report.warnings


def test_history_and_other_files_are_skipped(tmp_path):
    (tmp_path / "history.jsonl").write_text('{"display": "ls", "timestamp": 1}\n')
    (tmp_path / "notes.txt").write_text("x")
    shutil.copy(REWIND, tmp_path / "5f0c2a9e-8d41-4b7a-9c3e-2e6f1a7b9d10.jsonl")
    found = list(ADAPTER.enumerate(tmp_path, AdapterOptions(context_name="t")))
    assert [type(f).__name__ for f in found] == ["SourceCandidate", "SkippedSource", "SkippedSource"]
    assert {Path(f.source_uri).name: f.reason for f in found if isinstance(f, SkippedSource)} == {
        "history.jsonl": "not_supported", "notes.txt": "not_supported"}


# ---------------------------------------------------------------------------------------------
# Fuzzing: any lines give a conversation, nothing, or a SourceError; never another exception.
# ---------------------------------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=12)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
def mostly(valid, junk=values):
    """Usually a well-formed value, sometimes junk, so that fuzzing also reaches deep code."""
    return st.one_of(valid, valid, valid, junk)


uuids = st.sampled_from(["u1", "u2", "u3", "a1", "a2"])
blocks = st.fixed_dictionaries(
    {"type": mostly(st.sampled_from(["text", "thinking", "redacted_thinking", "tool_use", "tool_result",
                                     "image", "document", "server_tool_use", "web_search_tool_result",
                                     "mystery"]))},
    optional={"text": mostly(st.text(max_size=20)), "thinking": mostly(st.text(max_size=20)),
              "id": mostly(st.sampled_from(["t1", "t2"])), "tool_use_id": mostly(st.sampled_from(["t1", "t2"])),
              "name": mostly(st.text(max_size=8)), "input": values, "content": values | st.lists(values),
              "is_error": values, "source": mostly(st.fixed_dictionaries(
                  {"type": st.just("base64"), "data": mostly(st.text(max_size=30))}))})
records = st.fixed_dictionaries(
    {"type": mostly(st.sampled_from(["user", "assistant", "user", "assistant", "system", "summary",
                                     "tool_use", "tool_result", "file-history-snapshot", "custom-title", "x"]))},
    optional={"uuid": mostly(uuids), "parentUuid": mostly(st.none() | uuids),
              "logicalParentUuid": mostly(uuids), "sessionId": values, "timestamp": values,
              "isMeta": values, "isCompactSummary": values, "cwd": values, "summary": values,
              "leafUuid": mostly(uuids), "toolUseResult": values, "customTitle": values,
              "message": mostly(st.fixed_dictionaries({}, optional={
                  "id": mostly(st.sampled_from(["m1", "m2"])), "model": values, "usage": values,
                  "content": mostly(st.text(max_size=20) | st.lists(mostly(blocks), max_size=4))}))})


@st.composite
def damaged_transcripts(draw):
    """The synthetic rewind session (every record kind it has), with some records dropped or
    duplicated and a few fields anywhere replaced by arbitrary JSON."""
    lines = [json.loads(line) for line in REWIND.read_text().splitlines()]
    keep = draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    lines = [line for line, k in zip(lines, keep) if k or draw(st.booleans())]
    if lines and draw(st.booleans()):
        lines.append(json.loads(json.dumps(draw(st.sampled_from(lines)))))
    targets = dicts_in(lines, [])
    for _ in range(draw(st.integers(0, 4))):
        if not targets:
            break
        target = draw(st.sampled_from(targets))
        key = draw(st.sampled_from(sorted(target) or ["x"]))
        target[key] = copy.deepcopy(draw(values))
    return lines


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(damaged_transcripts() | st.lists(records | values, max_size=8), st.binary(max_size=40))
def test_fuzz_transcripts(tmp_path, lines, tail):
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n" + tail)
    report = ParseReport()
    try:
        doc = parse_transcript(path, report)
    except SourceError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    assert report.counts["records_failed"] == 0  # handled by the builder, not the safety net
    if doc is not None:
        assert doc.turns
        orjson.dumps(doc.model_dump(mode="json"))


# ---------------------------------------------------------------------------------------------
# Project memory: `<project>/memory/MEMORY.md` and its topic files are notes.
# ---------------------------------------------------------------------------------------------

MEMORY_PROJECTS = TEST_FIXTURES / "claude_code" / "projects"
MEMORY = MEMORY_PROJECTS / "-home-dev-code-atlas" / "memory"
MEMORY_TITLES = {
    "MEMORY.md": ("Claude Code memory index (-home-dev-code-atlas)", None),
    "feedback_real_database.md": ("Integration tests hit a real database", "feedback"),
    "project_release_freeze.md": ("Merge freeze for the 4.2 release", "project"),
    "reference_dashboards.md": ("Dashboards and tickets", "reference"),
    "user_background.md": ("User background", "user"),
}


def memory_docs(root: Path) -> dict[str, tuple[SourceCandidate, object]]:
    out = {}
    for item in ADAPTER.enumerate(root, AdapterOptions(context_name="t")):
        assert isinstance(item, SourceCandidate), item
        report = ParseReport()
        (doc,) = ADAPTER.parse(item, report, None)
        assert report.warnings == []
        out[Path(item.source_uri).name] = (item, doc)
    return out


def test_memory_files_are_notes_with_their_front_matter_as_metadata():
    from chinvex.chunking import chunk_document, embed_text
    from chinvex.ids import doc_id_for

    docs = memory_docs(MEMORY_PROJECTS)
    assert set(docs) == set(MEMORY_TITLES)
    for name, (cand, doc) in docs.items():
        title, memory_type = MEMORY_TITLES[name]
        assert cand.source_type == "note" and cand.extra["project"] == "-home-dev-code-atlas"
        assert doc.source_type == "note" and doc.doc_id == doc_id_for("note", str(MEMORY / name))
        assert doc.title == title and doc.metadata.get("memory_type") == memory_type
        assert doc.metadata["format"] == "claude_code_memory"
        assert doc.metadata["memory_index"] is (name == "MEMORY.md")
        assert doc.metadata["path"] == f"-home-dev-code-atlas/memory/{name}"
        assert doc.text == (MEMORY / name).read_text()
        chunks = chunk_document(doc)
        assert chunks and all(not c.text.startswith("---") and "type:" not in c.text for c in chunks)
        if memory_type:  # the name and description are in what is embedded and indexed
            assert all(title in embed_text(c) and doc.metadata["description"] in embed_text(c)
                       for c in chunks)
    _, user = docs["user_background.md"]
    assert user.metadata["tags"] == ["golang", "kubernetes"]


def test_memory_found_from_any_root_and_other_files_skipped(tmp_path):
    project = tmp_path / "projects" / "-home-u-app"
    shutil.copytree(MEMORY, project / "memory")
    shutil.copy(REWIND, project / "5f0c2a9e-8d41-4b7a-9c3e-2e6f1a7b9d10.jsonl")
    (project / "NOTES.md").write_text("# not in a memory folder\n")
    (project / "memory" / "huge.md").write_text("x" * 1_000_001)
    found = list(ADAPTER.enumerate(tmp_path / "projects", AdapterOptions(context_name="t")))
    kinds = {Path(f.source_uri).name: (f.source_type, getattr(f, "reason", None)) for f in found}
    assert kinds.pop("NOTES.md") == ("agent_session", "not_supported")
    assert kinds.pop("huge.md") == ("note", "too_large")
    assert kinds.pop("5f0c2a9e-8d41-4b7a-9c3e-2e6f1a7b9d10.jsonl") == ("agent_session", None)
    assert kinds == {name: ("note", None) for name in MEMORY_TITLES}
    (project / "memory" / "huge.md").unlink()

    def notes_under(root: Path) -> list[str]:
        return sorted(Path(c.source_uri).name for c in ADAPTER.enumerate(root, AdapterOptions(context_name="t"))
                      if isinstance(c, SourceCandidate) and c.source_type == "note")

    # a root may be one project's folder, its memory folder, or a single memory file
    assert notes_under(project) == notes_under(project / "memory") == sorted(MEMORY_TITLES)
    assert notes_under(project / "memory" / "MEMORY.md") == ["MEMORY.md"]
    (_, index), = memory_docs(project / "memory" / "MEMORY.md").values()
    assert index.title == "Claude Code memory index (-home-u-app)"


def test_memory_is_ingested_searchable_and_incremental(tmp_path):
    """Through the real CLI: memory files beside a transcript are indexed as notes, found by
    words of their body and of their front matter alone, and kept up to date like any file."""
    import sqlite3

    from helpers import assert_no_traceback, run_cli

    projects = tmp_path / "projects"
    shutil.copytree(MEMORY_PROJECTS, projects)
    memory = projects / "-home-dev-code-atlas" / "memory"
    shutil.copy(REWIND, memory.parent / "5f0c2a9e-8d41-4b7a-9c3e-2e6f1a7b9d10.jsonl")
    assert run_cli_in_process("context", "create", "Atlas", "--claude-sessions", str(projects)).code == 0

    def ingest() -> dict:
        result = run_cli_in_process("ingest", "--context", "Atlas", "--json")
        assert_no_traceback(result)
        assert result.code == 0, result
        return result.json

    def top(query: str) -> dict:
        result = run_cli("search", "--context", "Atlas", query, "--k", "3", "--json")
        assert result.code == 0, result
        return result.json["results"][0]

    first = ingest()
    assert first["sources"]["indexed"] == len(MEMORY_TITLES) + 1
    home = Path(os.environ["CHINVEX_HOME"])
    with sqlite3.connect(home / "indexes" / "Atlas" / "hybrid.db") as conn:
        types = dict(conn.execute("SELECT source_type, COUNT(*) FROM documents GROUP BY source_type"))
    assert types == {"note": len(MEMORY_TITLES), "agent_session": 1}

    hit = top("mocked repository hid a broken migration")
    assert hit["source_uri"] == str(memory / "feedback_real_database.md")
    assert hit["source_type"] == "note" and hit["title"] == "Integration tests hit a real database"
    hit = top("kubernetes")  # a tag: only in the front matter
    assert hit["source_uri"] == str(memory / "user_background.md")
    assert hit["text"].startswith("Deep backend experience")

    assert ingest()["sources"]["unchanged"] == len(MEMORY_TITLES) + 1
    freeze = memory / "project_release_freeze.md"
    freeze.write_text(freeze.read_text().replace("2026-03-12", "2026-03-19") + "\nExtended by a week.\n")
    (memory / "reference_dashboards.md").unlink()
    changed = ingest()
    assert changed["sources"]["indexed"] == 1 and changed["sources"]["removed"] == 1
    assert top("merge freeze extended by a week")["source_uri"] == str(freeze)
    gone = run_cli("search", "--context", "Atlas", "grafana api-latency", "--json").json["results"]
    assert all("reference_dashboards" not in r["source_uri"] for r in gone)


def test_write_and_edit_calls_record_their_edits():
    """Claude Code's Edit / MultiEdit / Write / NotebookEdit calls keep what they wrote as data
    (`meta.edits`: the path resolved against the session's cwd, the text replaced and written)."""
    doc, report = parse(MAIN_2064)
    edits = [e for t in doc.turns for e in t.meta.get("edits", [])]
    assert edits and all(e["abs_path"].startswith("/tmp/private/") for e in edits)
    hello = next(e for e in edits if e["path"].endswith("hello.py"))
    assert hello["op"] == "write" and 'print("Hello, World!' in hello["new_text"]
    assert report.counts["file_edits"] == len(edits)
