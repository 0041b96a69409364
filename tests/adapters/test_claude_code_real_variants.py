"""The claude_code adapter on real transcripts of versions and shapes the other fixtures do not
show (tests/fixtures/samples/claude-code/.real-variants/*/PROVENANCE.md says where each comes from):

- 2.1.7 (codemie-code): one API message written as several lines with parallel tool calls, each
  result hung under its own call, so the path back from the tip skips some of the calls;
- 2.0.76 (codemie-code, excerpt): a prompt queued while the agent worked and taken mid-turn,
  written nowhere but in the `queue-operation` record;
- 1.0.98 (claude-code-viewer): a session that starts with a slash command's tags.

Shapes seen only in real transcripts whose repository has no licence (the Claude Code sessions
the Entire CLI keeps on the `entire/checkpoints/v1` branch of entireio/cli, versions 2.0.76 to
2.1.42) are tested on small files the tests write in exactly that shape; each such test says so.

The samples sit in a dot-folder, out of the shared `fixtures` context; each test copies its file
into a temporary `~/.claude/projects/<project>/` and parses it from there.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParseReport, SourceCandidate
from chinvex_adapters.claude_code import ClaudeCodeAdapter
from chinvex_adapters.kit.jsonl import glued_objects as glued_records
from helpers import FIXTURES

REAL = FIXTURES / "claude-code" / ".real-variants"
PARALLEL_217 = REAL / "codemie-code/incremental-subagents/turn-2.jsonl"
QUEUED_2076 = REAL / "codemie-code/session-3fe1b6bc.lines-138-160.jsonl"
INIT_1098 = REAL / "claude-code-viewer/sample-project/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"

ADAPTER = ClaudeCodeAdapter()


def stage(tmp_path: Path, name: str, data: bytes) -> Path:
    """`data` as `~/.claude/projects/-Users-example-repo/<name>` under tmp_path."""
    project = tmp_path / ".claude" / "projects" / "-Users-example-repo"
    project.mkdir(parents=True, exist_ok=True)
    target = project / name
    target.write_bytes(data)
    return target


def stage_sample(tmp_path: Path, sample: Path) -> Path:
    return stage(tmp_path, sample.name, sample.read_bytes())


def parse(path: Path) -> tuple[ConversationDoc, ParseReport]:
    found = list(ADAPTER.enumerate(path, AdapterOptions(context_name="t", settings={})))
    assert len(found) == 1 and isinstance(found[0], SourceCandidate), found
    report = ParseReport()
    docs = list(ADAPTER.parse(found[0], report, None))
    assert len(docs) == 1, report.warnings
    return docs[0], report


def file_records(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def tool_use_ids(records: list[dict]) -> list[str]:
    return [block["id"] for r in records if isinstance(r.get("message"), dict)
            and isinstance(r["message"].get("content"), list)
            for block in r["message"]["content"]
            if isinstance(block, dict) and block.get("type") == "tool_use"]


def roles(doc: ConversationDoc) -> dict[str, int]:
    return dict(Counter(t.role for t in doc.turns))


def versions(records: list[dict]) -> list[str]:
    return sorted({r["version"] for r in records if isinstance(r.get("version"), str)})


# -- 2.1.7: the lines of one message with parallel tool calls ------------------------------

def test_real_217_every_parallel_tool_call_is_kept_with_its_result(tmp_path: Path):
    data = PARALLEL_217.read_bytes()
    doc, report = parse(stage_sample(tmp_path, PARALLEL_217))
    records = file_records(data)
    assert doc.metadata["versions"] == versions(records) == ["2.1.7"]
    calls = tool_use_ids(records)
    # Counted by hand: lines 6 (Task), 10, 13, 16, 19, 22, 25 (Bash), 29-31 (Read, Glob, Read),
    # 36-38 (Read, Read, Glob), 44 (Write).
    assert len(calls) == 14
    tools = [t for t in doc.turns if t.role == "tool"]
    assert sorted(t.meta["tool_use_id"] for t in tools) == sorted(calls)
    assert all("\n\nResult" in t.text for t in tools), [t.text[:80] for t in tools if "Result" not in t.text]
    assert roles(doc) == {"user": 1, "assistant": 11, "tool": 14}
    # The third line of message ...MBonPN (line 31) was off the path from the tip: the Read of
    # bin/codemie.js and its result were lost before its message's lines were kept together.
    lost_before = next(t for t in tools if t.meta["tool_use_id"] == "toolu_bdrk_01KaaoBdK7zoLTPheiYo7HHy")
    assert "file_path: /Users/User/repo/codemie-ai/codemie-code/bin/codemie.js" in lost_before.text
    assert "CodeMie CLI Wrapper" in lost_before.text
    assert doc.metadata["branch"]["rejoined_message_lines"] == 1
    assert doc.metadata["branch"]["off_branch_records"] == 0 and report.counts["tool_results_unmatched"] == 0
    # The message's three calls stay together and in the order they were written.
    order = [t.meta["tool_use_id"][-6:] for t in tools]
    assert order[7:10] == ["7RyadX", "CQxJMS", "Yo7HHy"]


def test_a_repeated_copy_of_a_message_line_is_not_added_twice(tmp_path: Path):
    """The real 2.1.7 file with a second copy of line 30 (the Glob call of the split message,
    new uuid, same parent) written after line 31: the copy is not a second call."""
    lines = PARALLEL_217.read_bytes().splitlines(keepends=True)
    copy = json.loads(lines[29])
    copy["uuid"] = "00000000-0000-4000-8000-000000000030"
    doc, _ = parse(stage(tmp_path, "turn-2.jsonl",
                         b"".join(lines[:31]) + json.dumps(copy).encode() + b"\n" + b"".join(lines[31:])))
    glob_turns = [t for t in doc.turns if t.meta.get("tool_use_id", "").endswith("CQxJMS")]
    assert len(glob_turns) == 1 and "\n\nResult" in glob_turns[0].text
    assert roles(doc) == {"user": 1, "assistant": 11, "tool": 14}


# -- two records on one line ----------------------------------------------------------------

def test_two_records_glued_on_one_line_are_both_read(tmp_path: Path):
    """Seen in 13 lines of 12 unlicensed real 2.1.x transcripts (entireio/cli checkpoints): a
    record whose newline is missing, the next record written behind it on the same line, often
    an assistant message followed by a `summary` or `file-history-snapshot`. Reproduced on the
    real 2.1.7 file by removing the newline after line 30 (the Glob call)."""
    lines = PARALLEL_217.read_bytes().splitlines(keepends=True)
    whole, _ = parse(stage(tmp_path / "a", "turn-2.jsonl", b"".join(lines)))
    glued = b"".join(lines[:29]) + lines[29].rstrip(b"\n") + b"".join(lines[30:])
    assert glued.count(b"\n") == len(lines) - 1
    doc, report = parse(stage(tmp_path / "b", "turn-2.jsonl", glued))
    assert report.counts["lines_glued_split"] == 1 and "lines_invalid_json" not in report.counts
    assert [(t.role, t.text) for t in doc.turns] == [(t.role, t.text) for t in whole.turns]
    assert doc.metadata["branch"]["chains"] == 1


def test_a_glued_line_is_split_only_into_whole_objects():
    assert glued_records(b'{"a": 1}{"b": 2} {"c": 3}') == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert glued_records(b'{"a": 1}') is None  # one object: not glued
    assert glued_records(b'{"a": 1}{"b": ') is None  # cut
    assert glued_records(b'{"a": 1}[1, 2]') is None  # not records
    assert glued_records(b'{"a": 1} garbage') is None


def test_a_glued_line_with_garbage_stays_an_unreadable_line(tmp_path: Path):
    lines = PARALLEL_217.read_bytes().splitlines(keepends=True)
    broken = b"".join(lines[:29]) + lines[29].rstrip(b"\n") + b"{not json\n" + b"".join(lines[30:])
    doc, report = parse(stage(tmp_path, "turn-2.jsonl", broken))
    assert report.counts["lines_invalid_json"] == 1 and report.counts["lines_glued_split"] == 0
    # The call's line is lost; its result, whose line is intact, has no call to join.
    assert [t.meta.get("unmatched_result") for t in doc.turns
            if t.meta.get("tool_use_id", "").endswith("CQxJMS")] == [True]


# -- 2.0.76: a prompt queued while the agent worked -----------------------------------------

def test_real_2076_prompt_taken_mid_turn_is_a_user_turn(tmp_path: Path):
    data = QUEUED_2076.read_bytes()
    doc, _ = parse(stage_sample(tmp_path, QUEUED_2076))
    records = file_records(data)
    assert doc.metadata["versions"] == versions(records) == ["2.0.76"]
    operations = [r["operation"] for r in records if r.get("type") == "queue-operation"]
    assert operations == ["enqueue", "popAll", "enqueue", "remove"]
    users = [t for t in doc.turns if t.role == "user"]
    assert [(t.text, t.meta.get("queued")) for t in users] == [
        ("check 019b7f07-4a68-7d10-a8ef-8454269f439d and event_msg type", True)]
    assert doc.metadata["branch"]["queued_prompts"] == 1
    # Where it was queued: after the thinking it interrupted, before the Edit call of the same
    # message; the next message answers it.
    at = doc.turns.index(users[0])
    assert doc.turns[at - 1].role == "assistant" and doc.turns[at - 1].turn_id.startswith("d7a5e162-")
    assert doc.turns[at + 1].tool is not None and doc.turns[at + 1].tool.name == "Edit"
    assert "check a specific session ID and look at event_msg types" in doc.turns[at + 2].text
    assert roles(doc) == {"tool": 6, "assistant": 5, "user": 1}


def _queue(operation: str, content: str | None = None, ts: str = "2026-02-09T08:11:15.972Z") -> dict:
    record = {"type": "queue-operation", "operation": operation, "timestamp": ts,
              "sessionId": "43c87127-491b-488e-a553-95aa3f0414ac"}
    if content is not None:
        record["content"] = content
    return record


def _message(kind: str, uuid: str, parent: str | None, content, ts: str,
             message_id: str | None = None) -> dict:
    """A user or assistant record in the 2.1.x envelope."""
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message = {"model": "claude-opus-4-6", "id": message_id, "type": "message", "role": "assistant",
                   "content": content, "stop_reason": None}
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/Users/dev/repo",
            "sessionId": "43c87127-491b-488e-a553-95aa3f0414ac", "version": "2.1.37", "gitBranch": "main",
            "type": kind, "message": message, "uuid": uuid, "timestamp": ts}


def _jsonl(records: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_a_dequeued_prompt_is_not_doubled(tmp_path: Path):
    """Shape of unlicensed real 2.1.37 transcripts (entireio/cli checkpoints): a prompt queued
    and then sent as the next user message (`dequeue`) is written as that user message too."""
    records = [
        _message("user", "u1", None, "run the tests", "2026-02-09T08:10:00.000Z"),
        _message("assistant", "a1", "u1", [{"type": "text", "text": "Running them now."}],
                 "2026-02-09T08:10:05.000Z", "msg_1"),
        _queue("enqueue", "also lint please"),
        _queue("dequeue", ts="2026-02-09T08:11:20.000Z"),
        _message("user", "u2", "a1", "also lint please", "2026-02-09T08:11:20.100Z"),
        _message("assistant", "a2", "u2", [{"type": "text", "text": "Linting too."}],
                 "2026-02-09T08:11:25.000Z", "msg_2"),
        _queue("enqueue", "and then push", ts="2026-02-09T08:11:26.000Z"),
        _queue("remove", ts="2026-02-09T08:11:30.000Z"),
        _message("assistant", "a3", "a2", [{"type": "text", "text": "Pushed as asked."}],
                 "2026-02-09T08:11:40.000Z", "msg_3"),
    ]
    doc, _ = parse(stage(tmp_path, "43c87127-491b-488e-a553-95aa3f0414ac.jsonl", _jsonl(records)))
    assert [(t.role, t.text, bool(t.meta.get("queued"))) for t in doc.turns] == [
        ("user", "run the tests", False), ("assistant", "Running them now.", False),
        ("user", "also lint please", False), ("assistant", "Linting too.", False),
        ("user", "and then push", True), ("assistant", "Pushed as asked.", False)]


# -- titles of sessions that start with a command --------------------------------------------

def test_real_1098_session_started_by_init_is_titled_by_the_command(tmp_path: Path):
    data = INIT_1098.read_bytes()
    doc, report = parse(stage_sample(tmp_path, INIT_1098))
    records = file_records(data)
    assert doc.metadata["versions"] == versions(records) == ["1.0.98"]
    assert doc.thread_id == "1af7fc5e-8455-4414-9ccd-011d40f70b2a"
    assert doc.title == "/init"  # was the raw tags '<command-message>init is analyzing your codebase…'
    assert "<command-name>/init</command-name>" in doc.turns[0].text  # the turn keeps what was written
    calls = tool_use_ids(records)
    tools = [t for t in doc.turns if t.role == "tool"]
    assert len(calls) == 12 and sorted(t.meta["tool_use_id"] for t in tools) == sorted(calls)
    assert all("\n\nResult" in t.text for t in tools)
    assert Counter(t.tool.name for t in tools) == {"Glob": 6, "TodoWrite": 3, "Bash": 2, "Write": 1}
    assert roles(doc) == {"user": 1, "assistant": 3, "tool": 12}
    assert report.counts["user_meta_skipped"] == 1  # the prompt /init expands to
    assert any("completely new/empty repository" in t.text for t in doc.turns if t.role == "assistant")
    write = next(t for t in tools if t.tool.name == "Write")
    assert [e["path"] for e in write.meta["edits"]] == ["/path/to/Demo/CLAUDE.md"]


# Exactly as real 2.1.x transcripts write them (entireio/cli checkpoints, unlicensed).
CAVEAT = ("<local-command-caveat>Caveat: The messages below were generated by the user while running "
          "local commands. DO NOT respond to these messages or otherwise consider them in your response "
          "unless the user explicitly asks you to.</local-command-caveat>")
CLEAR = ("<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n"
         "            <command-args></command-args>")
REVIEW = ("<command-message>review</command-message>\n<command-name>/review</command-name>\n"
          "<command-args>167</command-args>")
IDE = ("<ide_opened_file>The user opened the file /Users/dev/repo/mise.toml in the IDE. This may or may "
       "not be related to the current task.</ide_opened_file>")


def _session(tmp_path: Path, *user_contents) -> ConversationDoc:
    records, parent = [], None
    for n, content in enumerate(user_contents):
        meta = content == CAVEAT
        record = _message("user", f"u{n}", parent, content, f"2026-02-09T08:1{n}:00.000Z")
        if meta:
            record["isMeta"] = True
        records.append(record)
        parent = f"u{n}"
    records.append(_message("assistant", "a-last", parent, [{"type": "text", "text": "On it."}],
                            "2026-02-09T08:19:00.000Z", "msg_last"))
    doc, _ = parse(stage(tmp_path, "43c87127-491b-488e-a553-95aa3f0414ac.jsonl", _jsonl(records)))
    return doc


@pytest.mark.parametrize(("contents", "title"), [
    ((REVIEW,), "/review 167"),
    ((CAVEAT, CLEAR, "<local-command-stdout></local-command-stdout>", "fix the failing tests"),
     "fix the failing tests"),
    ((CAVEAT, CLEAR, "<local-command-stdout></local-command-stdout>"), "/clear"),
    (([{"type": "text", "text": IDE}, {"type": "text", "text": "create a CODEOWNERS file"}],),
     "create a CODEOWNERS file"),
    (("<bash-input>git status</bash-input>", "<bash-stdout>On branch main</bash-stdout>"), "! git status"),
])
def test_title_is_the_first_request_not_command_tags(tmp_path: Path, contents, title):
    assert _session(tmp_path, *contents).title == title
