"""The claude_code adapter on two record kinds it used to skip:

- `attachment` records of type `queued_command` (Claude Code 2.1.80+): a prompt typed while the
  agent worked and handed to the model mid-turn, or a background task's completion handed over
  the same way. From 2.1.129 the `queue-operation` records around a typed prompt no longer hold
  its text, so the attachment is its only copy;
- `progress` records with `data.type: "agent_progress"` (2.1.x before the per-agent transcripts):
  every message of a running sub-agent, which is lost when the session file is read without the
  sub-agent's own transcript (`<session>/subagents/agent-<id>.jsonl`, or `agent-<id>.jsonl`
  beside it) — as in a session file copied or archived alone.

No repository with a licence that allows copying was found holding real transcripts with these
records. The files below are therefore minimal files written in exactly the real shape (the
records' fields, their order and the way they link, as in real 2.1.129 and 2.1.138 transcripts
read locally from olivia215215/cabinet-governance `.claude/projects/-Users-admin/`, and real
2.1.29 transcripts from the `entire/checkpoints/v1` branch of entireio/cli; neither repository
has a licence, so nothing of theirs is copied); the texts, ids and times are made up.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import AdapterOptions, ParseReport, SourceCandidate
from chinvex_adapters.claude_code import ClaudeCodeAdapter

ADAPTER = ClaudeCodeAdapter()
SESSION = "5d1c2f0e-7a43-4b8e-9d2a-3f6b8c1e4a70"


def stage(tmp_path: Path, lines: list[dict[str, Any]], name: str = f"{SESSION}.jsonl") -> Path:
    project = tmp_path / ".claude" / "projects" / "-Users-example-repo"
    project.mkdir(parents=True, exist_ok=True)
    target = project / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"
                              for line in lines), encoding="utf-8")
    return target


def parse_all(root: Path) -> dict[str, tuple[ConversationDoc, ParseReport]]:
    """Every transcript under `root`, by thread id, as the adapter enumerates and parses them."""
    out: dict[str, tuple[ConversationDoc, ParseReport]] = {}
    for candidate in ADAPTER.enumerate(root, AdapterOptions(context_name="t", settings={})):
        if not isinstance(candidate, SourceCandidate):
            continue
        report = ParseReport()
        for doc in ADAPTER.parse(candidate, report, None):
            out[doc.thread_id] = (doc, report)
    return out


def parse_one(path: Path) -> tuple[ConversationDoc, ParseReport]:
    docs = parse_all(path)
    assert len(docs) == 1, sorted(docs)
    return next(iter(docs.values()))


# -- records in the 2.1.129 / 2.1.138 shape ------------------------------------------------------
ENV_2129 = {"userType": "external", "entrypoint": "cli", "cwd": "/Users/example/repo",
            "sessionId": SESSION, "version": "2.1.129", "gitBranch": "main"}


def user(uuid: str, parent: str | None, ts: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, "promptId": "0c9b6a7e-1f0e-4d38-a1b2-9e8d7c6b5a40",
            "type": "user", "message": {"role": "user", "content": content}, "uuid": uuid,
            "timestamp": ts, **extra, **ENV_2129}


def assistant(uuid: str, parent: str, ts: str, msg_id: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False,
            "message": {"id": msg_id, "type": "message", "role": "assistant", "model": "claude-opus-4-7",
                        "content": content, "stop_reason": None, "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5}},
            "type": "assistant", "uuid": uuid, "timestamp": ts, **ENV_2129}


def queue(operation: str, ts: str, content: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "queue-operation", "operation": operation, "timestamp": ts,
                              "sessionId": SESSION}
    if content is not None:
        record["content"] = content
    return record


def queued_command(uuid: str, parent: str, ts: str, prompt: Any, mode: str = "prompt",
                   source_uuid: str | None = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d") -> dict[str, Any]:
    attachment: dict[str, Any] = {"type": "queued_command", "prompt": prompt}
    if source_uuid:
        attachment["source_uuid"] = source_uuid
    attachment["commandMode"] = mode
    return {"parentUuid": parent, "isSidechain": False, "attachment": attachment, "type": "attachment",
            "uuid": uuid, "timestamp": ts, **ENV_2129}


def tool_use(call_id: str, name: str, **inputs: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": inputs}


def tool_result(call_id: str, text: str) -> list[dict[str, Any]]:
    return [{"tool_use_id": call_id, "type": "tool_result", "content": text}]


def user_texts(doc: ConversationDoc) -> list[str]:
    return [t.text for t in doc.turns if t.role == "user"]


def test_a_prompt_sent_mid_turn_is_a_queued_user_turn_once(tmp_path):
    """2.1.129: the prompt typed mid-turn exists only in the `queued_command` attachment (the
    queue-operation records hold no text); the next assistant line hangs under it. A second one,
    later sent again as a user message of its own, is read once, as that message."""
    lines = [
        queue("enqueue", "2026-05-08T00:09:00.000Z"), queue("dequeue", "2026-05-08T00:09:00.010Z"),
        user("u1", None, "2026-05-08T00:09:00.020Z", "Create a brainstorm skill under ~/.claude/skills"),
        queue("enqueue", "2026-05-08T00:09:15.347Z"),
        assistant("a1", "u1", "2026-05-08T00:09:16.000Z", "msg_a1",
                  [{"type": "text", "text": "Let me look at the existing skills first."}]),
        assistant("a2", "a1", "2026-05-08T00:09:16.500Z", "msg_a1",
                  [tool_use("call_1", "Bash", command="ls ~/.claude/skills", description="List skills")]),
        user("r1", "a2", "2026-05-08T00:09:18.000Z", tool_result("call_1", "adopt\nbrainstorm\n"),
             toolUseResult={"stdout": "adopt\nbrainstorm\n", "stderr": "", "interrupted": False},
             sourceToolAssistantUUID="a2"),
        queue("remove", "2026-05-08T00:09:20.806Z"),
        queued_command("q1", "r1", "2026-05-08T00:09:20.806Z",
                       [{"type": "text", "text": "Isn't the main agent the coordinator?"}]),
        assistant("a3", "q1", "2026-05-08T00:09:25.000Z", "msg_a3",
                  [{"type": "text", "text": "No: the coordinator is a sub-agent type I can dispatch."}]),
        # a second prompt, handed over mid-turn and then sent again as a message of its own
        queued_command("q2", "a3", "2026-05-08T00:10:01.000Z", "and rename it to ideas",
                       source_uuid="1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"),
        assistant("a4", "q2", "2026-05-08T00:10:05.000Z", "msg_a4",
                  [{"type": "text", "text": "Renaming once the skill is written."}]),
        user("u2", "a4", "2026-05-08T00:11:00.000Z", "and rename it to ideas"),
        assistant("a5", "u2", "2026-05-08T00:11:05.000Z", "msg_a5", [{"type": "text", "text": "Renamed."}]),
    ]
    doc, report = parse_one(stage(tmp_path, lines))
    texts = user_texts(doc)
    assert texts == ["Create a brainstorm skill under ~/.claude/skills", "Isn't the main agent the coordinator?",
                     "and rename it to ideas"]
    queued = [t for t in doc.turns if t.meta.get("queued")]
    assert [t.text for t in queued] == ["Isn't the main agent the coordinator?"]
    # where the model read it: after the tool's result, before the answer to it
    at = doc.turns.index(queued[0])
    assert doc.turns[at - 1].role == "tool" and doc.turns[at + 1].text.startswith("No: the coordinator")
    assert queued[0].turn_id == "q1" and "command_mode" not in queued[0].meta
    assert doc.metadata["branch"]["queued_commands"] == 1
    assert report.counts["queued_commands_kept"] == 1


def test_a_task_notification_handed_over_mid_turn_is_kept_once(tmp_path):
    """2.1.138: a background command's completion is queued with its text (`enqueue`), taken
    (`remove`) and written as a `queued_command` attachment of mode `task-notification`: one
    turn, the attachment's, not a second one from the queue record."""
    note = ("<task-notification>\n<task-id>bfverf6zc</task-id>\n<status>failed</status>\n"
            "<summary>Background command \"Initialize git repo\" failed with exit code 128</summary>\n"
            "</task-notification>")
    lines = [
        user("u1", None, "2026-05-12T14:16:00.000Z", "Put my Claude config under git"),
        assistant("a1", "u1", "2026-05-12T14:16:10.000Z", "msg_a1",
                  [tool_use("call_1", "Bash", command="git init ~", run_in_background=True)]),
        user("r1", "a1", "2026-05-12T14:16:11.000Z", tool_result("call_1", "Command running in background")),
        queue("enqueue", "2026-05-12T14:16:35.470Z", note),
        assistant("a2", "r1", "2026-05-12T14:16:36.000Z", "msg_a2",
                  [tool_use("call_2", "Bash", command="git status")]),
        user("r2", "a2", "2026-05-12T14:16:37.000Z", tool_result("call_2", "fatal: not a git repository")),
        queue("remove", "2026-05-12T14:16:38.000Z"),
        queued_command("q1", "r2", "2026-05-12T14:16:38.000Z", note, mode="task-notification", source_uuid=None),
        assistant("a3", "q1", "2026-05-12T14:16:40.000Z", "msg_a3",
                  [{"type": "text", "text": "The init failed; I will add only the config folders."}]),
    ]
    for line in lines:
        if "version" in line:
            line["version"] = "2.1.138"
    doc, _ = parse_one(stage(tmp_path, lines))
    notes = [t for t in doc.turns if "<task-notification>" in t.text]
    assert len(notes) == 1
    assert notes[0].role == "user" and notes[0].meta == {"queued": True, "command_mode": "task-notification"}
    assert doc.metadata["branch"]["queued_prompts"] == 0 and doc.metadata["branch"]["queued_commands"] == 1


# -- records in the 2.1.29 shape ---------------------------------------------------------------
ENV_2129_OLD = {"userType": "external", "cwd": "/Users/example/repo", "sessionId": SESSION,
                "version": "2.1.29", "gitBranch": "main"}
AGENT = "a0853aa"
TASK_PROMPT = "Find where `explain` lists checkpoints and what makes it show none."


def old(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ENV_2129} | ENV_2129_OLD


def progress(uuid: str, parent: str, ts: str, message: dict[str, Any]) -> dict[str, Any]:
    return {"parentUuid": parent, "isSidechain": False, **ENV_2129_OLD, "slug": "breezy-waddling-swing",
            "type": "progress",
            "data": {"message": message, "normalizedMessages": [], "type": "agent_progress",
                     "prompt": TASK_PROMPT, "agentId": AGENT},
            "toolUseID": "agent_msg_01A3WDXHsupoNieywkrs35X1", "parentToolUseID": "toolu_task",
            "uuid": uuid, "timestamp": ts}


def session_with_progress() -> list[dict[str, Any]]:
    return [
        old(user("u1", None, "2026-02-03T03:49:40.000Z", "Why does explain show no checkpoints?")),
        old(assistant("a1", "u1", "2026-02-03T03:49:50.000Z", "msg_a1",
                      [tool_use("toolu_task", "Task", subagent_type="Explore", description="Find explain",
                                prompt=TASK_PROMPT)])),
        progress("p1", "a1", "2026-02-03T03:49:52.993Z",
                 {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": TASK_PROMPT}]},
                  "uuid": "s1", "timestamp": "2026-02-03T03:49:52.993Z"}),
        progress("p2", "p1", "2026-02-03T03:49:54.970Z",
                 {"type": "assistant", "timestamp": "2026-02-03T03:49:54.970Z",
                  "message": {"model": "claude-haiku-4-5-20251001", "id": "msg_sub1", "type": "message",
                              "role": "assistant",
                              "content": [tool_use("toolu_sub1", "Grep", pattern="func.*ListCommitted")],
                              "stop_reason": None, "stop_sequence": None,
                              "usage": {"input_tokens": 3, "output_tokens": 3}},
                  "requestId": "req_011CXkTH7haD3CeNj8BpvHnz", "uuid": "s2"}),
        progress("p3", "p2", "2026-02-03T03:49:55.410Z",
                 {"type": "user", "message": {"role": "user",
                                              "content": tool_result("toolu_sub1", "checkpoint/committed.go:412")},
                  "uuid": "s3", "timestamp": "2026-02-03T03:49:55.373Z"}),
        old(user("r1", "a1", "2026-02-03T03:50:30.000Z",
                 tool_result("toolu_task", "ListCommitted reads the local entire/sessions branch only."))),
        old(assistant("a2", "r1", "2026-02-03T03:50:40.000Z", "msg_a2",
                      [{"type": "text", "text": "The branch exists only on the remote after a clone."}])),
    ]


def subagent_file() -> list[dict[str, Any]]:
    """The same sub-agent's own transcript, as 2.1.x writes it."""
    env = {**ENV_2129_OLD, "agentId": AGENT}
    return [
        {"parentUuid": None, "isSidechain": True, **env, "type": "user",
         "message": {"role": "user", "content": [{"type": "text", "text": TASK_PROMPT}]},
         "uuid": "s1", "timestamp": "2026-02-03T03:49:52.993Z"},
        {"parentUuid": "s1", "isSidechain": True, **env,
         "message": {"model": "claude-haiku-4-5-20251001", "id": "msg_sub1", "type": "message", "role": "assistant",
                     "content": [tool_use("toolu_sub1", "Grep", pattern="func.*ListCommitted")]},
         "type": "assistant", "uuid": "s2", "timestamp": "2026-02-03T03:49:54.970Z"},
        {"parentUuid": "s2", "isSidechain": True, **env, "type": "user",
         "message": {"role": "user", "content": tool_result("toolu_sub1", "checkpoint/committed.go:412")},
         "uuid": "s3", "timestamp": "2026-02-03T03:49:55.373Z"},
    ]


def test_a_subagent_known_only_from_progress_records_keeps_its_messages(tmp_path):
    doc, report = parse_one(stage(tmp_path, session_with_progress()))
    side = [t for t in doc.turns if t.meta.get("sidechain")]
    assert [(t.role, t.meta.get("agent_id")) for t in side] == [("user", AGENT), ("tool", AGENT)]
    assert side[0].text == TASK_PROMPT
    assert side[1].tool is not None and side[1].tool.name == "Grep"
    assert "checkpoint/committed.go:412" in side[1].text  # the sub-agent's tool result joins its call
    # in the order they happened: inside the Task call, before the answer that used them
    roles = [(t.role, bool(t.meta.get("sidechain"))) for t in doc.turns]
    assert roles == [("user", False), ("tool", False), ("user", True), ("tool", True), ("assistant", False)]
    task = doc.turns[1]
    assert "local entire/sessions branch only" in task.text
    assert doc.metadata["branch"]["subagent_progress_messages"] == 3
    assert report.counts["tool_results_unmatched"] == 0

    # A Task call the user then edited away (a branch abandoned at an earlier message) is not
    # part of the conversation read, nor are its sub-agent's progress records.
    lines = [old(user("u0", None, "2026-02-03T03:40:00.000Z", "Look at the explain command")),
             old(assistant("a0", "u0", "2026-02-03T03:40:05.000Z", "msg_a0", [{"type": "text", "text": "Sure."}]))]
    lines += [dict(r, parentUuid="a0") if r.get("uuid") == "u1" else r for r in session_with_progress()]
    lines += [old(user("u1b", "a0", "2026-02-03T04:00:00.000Z", "Show the explain command's flags")),
              old(assistant("a1b", "u1b", "2026-02-03T04:00:05.000Z", "msg_b",
                            [{"type": "text", "text": "It takes --checkpoint and --session."}]))]
    edited, _ = parse_one(stage(tmp_path / "edited", lines))
    assert [t.text for t in edited.turns if t.role == "user"] == ["Look at the explain command",
                                                                  "Show the explain command's flags"]
    assert not [t for t in edited.turns if t.meta.get("sidechain")]
    assert "subagent_progress_messages" not in edited.metadata["branch"]


def test_progress_records_are_not_read_when_the_subagent_transcript_is_there(tmp_path):
    """Missing: the sub-agent's messages come from the progress records. There (2.1.x folder or the
    older file beside the session): they are its own conversation, and the session holds none."""
    lonely = tmp_path / "alone"
    doc, _ = parse_one(stage(lonely, session_with_progress()))
    assert Counter(bool(t.meta.get("sidechain")) for t in doc.turns)[True] == 2

    for where in (f"{SESSION}/subagents/agent-{AGENT}.jsonl", f"agent-{AGENT}.jsonl"):
        root = tmp_path / where.split("/")[0].replace(".jsonl", "")
        session = stage(root, session_with_progress())
        stage(root, subagent_file(), name=where)
        docs = parse_all(session.parent)
        main, _ = docs[SESSION]
        assert not [t for t in main.turns if t.meta.get("sidechain")], where
        assert "subagent_progress_messages" not in main.metadata["branch"]
        assert Counter(t.role for t in main.turns) == {"user": 1, "tool": 1, "assistant": 1}
        (sub, _), = [v for k, v in docs.items() if k != SESSION]
        assert sub.thread_id == f"{SESSION}/agent-{AGENT}"
        assert [t.role for t in sub.turns] == ["user", "tool"]
