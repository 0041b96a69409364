"""claude.ai data exports in chat roots, next to ChatGPT's.

One real export conversation (tests/fixtures/samples/claude_ai, Apache-2.0, the older text-only
shape with inline reasoning and artifacts) is read through the adapter and the CLI. No real
export of the newer `content[]` shape is public under a licence that allows copying it, so
those tests build exports in the shapes documented by people who read their own (thinking and
tool blocks, branches through `parent_message_uuid`, the zip with `users.json` and
`projects/`). The parser is also exercised on held-back real exports."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from chinvex.models.sources import ParseReport, SourceCandidate
from chinvex_adapters.chat_export.adapter import ChatExportAdapter
from helpers import FIXTURES, assert_no_traceback, run_cli, run_cli_in_process

OLD_SHAPE = {
    "uuid": "5b3e7a2c-0d51-4a4e-9a63-1f2f0c7e9a10", "name": "Postgres vacuum", "summary": "",
    "created_at": "2024-03-05T17:30:00.991210+00:00", "updated_at": "2024-03-05T17:35:10.000000+00:00",
    "account": {"uuid": "acc-1"},
    "chat_messages": [
        {"uuid": "m-1", "text": "Why does autovacuum skip my big table?", "sender": "human",
         "created_at": "2024-03-05T17:30:01.000000+00:00", "attachments": [
             {"file_name": "settings.conf", "file_size": 40, "file_type": "text/plain",
              "extracted_content": "autovacuum_vacuum_scale_factor = 0.2"}], "files": []},
        {"uuid": "m-2", "text": "Lower autovacuum_vacuum_scale_factor for that table.", "sender": "assistant",
         "created_at": "2024-03-05T17:30:09.000000+00:00", "attachments": [], "files": []},
    ],
}
NEW_SHAPE = {
    "uuid": "019e1a2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b", "name": "", "summary": "",
    "created_at": "2026-05-01T10:00:00.000000Z", "updated_at": "2026-05-01T10:02:00.000000Z",
    "account": {"uuid": "acc-1"},
    "chat_messages": [
        {"uuid": "u-1", "parent_message_uuid": "00000000-0000-4000-8000-000000000000", "sender": "human",
         "text": "Write a retry helper", "created_at": "2026-05-01T10:00:00.000000Z",
         "content": [{"type": "text", "text": "Write a retry helper", "start_timestamp": "2026-05-01T10:00:00Z",
                      "stop_timestamp": None, "citations": []}], "attachments": [], "files": []},
        {"uuid": "a-old", "parent_message_uuid": "u-1", "sender": "assistant", "text": "first draft",
         "created_at": "2026-05-01T10:00:05.000000Z",
         "content": [{"type": "text", "text": "first draft"}], "attachments": [], "files": []},
        {"uuid": "a-new", "parent_message_uuid": "u-1", "sender": "assistant", "text": "",
         "created_at": "2026-05-01T10:01:00.000000Z",
         "content": [
             {"type": "thinking", "thinking": "Exponential backoff with jitter.", "start_timestamp": "2026-05-01T10:01:00Z"},
             {"type": "tool_use", "id": "toolu_1", "name": "create_file",
              "input": {"path": "/mnt/user-data/outputs/retry.py", "file_text": "def retry(fn):\n    return fn()\n"},
              "start_timestamp": "2026-05-01T10:01:02Z"},
             {"type": "tool_result", "tool_use_id": "toolu_1", "name": "create_file",
              "content": [{"type": "text", "text": "File created successfully"}], "is_error": False},
             {"type": "token_budget", "start_timestamp": None},
             {"type": "text", "text": "Here is `retry` with backoff.", "start_timestamp": "2026-05-01T10:01:05Z"},
         ], "attachments": [], "files": [{"file_uuid": "f-1", "file_name": "diagram.png"}]},
    ],
}
ADAPTER = ChatExportAdapter()


def _parse(path: Path) -> tuple[list, ParseReport]:
    report = ParseReport()
    kind = "chatgpt_zip" if path.suffix == ".zip" else "chatgpt_json"
    cand = SourceCandidate(source_uri=str(path), source_type="chat", adapter="chat_export",
                           root=str(path.parent), path=path, extra={"kind": kind})
    return list(ADAPTER.parse(cand, report, None)), report


def _export(tmp_path: Path, *conversations: dict) -> Path:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(list(conversations)))
    return path


REAL = FIXTURES / "claude_ai" / "simonw-claude-to-sqlite" / "conversations.json"


def test_real_export_reads_in_time_order_with_reasoning_and_artifacts_apart():
    (doc,), report = _parse(REAL)
    assert doc.source == "claude_ai" and doc.title == "LLM Pricing Calculator"
    stamps = [t.ts for t in doc.turns]
    assert stamps == sorted(stamps)  # the file lists a later request first
    assert doc.turns[0].role == "user" and doc.turns[0].text.startswith("Built me an artifact")
    said = [t for t in doc.turns if t.role in ("user", "assistant") and not t.meta.get("thinking")]
    assert sum(t.role == "user" for t in said) == 10
    assert not any("<antThinking>" in t.text or "<antArtifact" in t.text for t in doc.turns)
    thinking = [t for t in doc.turns if t.meta.get("thinking")]
    artifacts = [t for t in doc.turns if t.tool is not None]
    assert len(thinking) == 10 and len(artifacts) == report.counts["artifacts_inline"] == 10
    edit = artifacts[-1].meta["edits"][0]
    assert edit["path"] == "llm-pricing-calculator" and edit["op"] == "write"
    assert edit["new_text"].startswith("<!DOCTYPE html>") and "</html>" in edit["new_text"]
    onkeyup = next(i for i, t in enumerate(doc.turns) if t.role == "user" and "onkeyup" in t.text)
    assert doc.turns[onkeyup + 1].role == "assistant"  # a request, then its reply (same timestamp)
    assert [a.name for a in doc.turns[onkeyup].attachments][:1] == ["CleanShot 20241016 at 20.34.122x.png"]


def test_real_export_through_the_cli(tmp_path: Path, chinvex_home: Path):
    chats = tmp_path / "chats"
    chats.mkdir()
    shutil.copy(REAL, chats / "conversations.json")
    assert run_cli_in_process("context", "create", "Claude", "--chat-root", str(chats)).code == 0
    result = run_cli_in_process("ingest", "--context", "Claude", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [], result
    got = run_cli("get", "91098bc8-f2c4-427b-b71b-1e25efa2e871", "--context", "Claude", "--json")
    assert got.code == 0 and got.json["turns"][0]["role"] == "user"
    found = run_cli("search", "six decimal places cents dollars", "--context", "Claude", "--json")
    assert found.code == 0 and found.json["results"], found


def test_inline_markup_without_tags_or_left_open_stays_text():
    from chinvex_adapters.chat_export.claude_markup import split_markup

    assert [(p.kind, p.text) for p in split_markup(" plain reply ")] == [("text", " plain reply ")]
    cut = "Here it is <antArtifact identifier=\"x\">half"
    assert [(p.kind, p.text) for p in split_markup(cut)] == [("text", cut)]
    pieces = split_markup("a <antThinking>why</antThinking> b <antArtifact identifier=\"f\" title=\"F\">body</antArtifact> c")
    assert [(p.kind, p.text) for p in pieces] == [("text", "a"), ("thinking", "why"), ("text", "b"),
                                                   ("artifact", "body"), ("text", "c")]
    assert pieces[3].attrs == {"identifier": "f", "title": "F"}


def test_older_text_only_messages(tmp_path: Path):
    (doc,), _ = _parse(_export(tmp_path, OLD_SHAPE))
    assert doc.source == "claude_ai" and doc.source_type == "chat" and doc.thread_id == OLD_SHAPE["uuid"]
    assert doc.title == "Postgres vacuum"
    assert [t.role for t in doc.turns] == ["user", "assistant"]
    assert "autovacuum_vacuum_scale_factor = 0.2" in doc.turns[0].text  # the pasted file's words
    assert doc.turns[0].attachments[0].name == "settings.conf"
    assert doc.turns[1].ts.isoformat() == "2024-03-05T17:30:09+00:00"


def test_content_blocks_branches_thinking_and_tools(tmp_path: Path):
    (doc,), report = _parse(_export(tmp_path, NEW_SHAPE))
    assert report.counts["messages_off_branch"] == 1  # the first draft was regenerated
    assert "first draft" not in " ".join(t.text for t in doc.turns)
    roles = [(t.role, bool(t.meta.get("thinking"))) for t in doc.turns]
    assert roles == [("user", False), ("assistant", True), ("tool", False), ("assistant", False)]
    tool = doc.turns[2]
    assert tool.tool.name == "create_file" and "File created successfully" in tool.text
    assert tool.meta["edits"][0]["path"] == "/mnt/user-data/outputs/retry.py"
    assert doc.title == "Write a retry helper"  # no name: the first request
    assert doc.turns[-1].attachments[0].name == "diagram.png"


def test_claude_and_chatgpt_exports_in_one_chat_root(tmp_path: Path, chinvex_home: Path):
    chats = tmp_path / "chats"
    (chats / "chatgpt").mkdir(parents=True)
    shutil.copy(FIXTURES / "chatgpt-export/chatlore/conversations.json", chats / "chatgpt" / "conversations.json")
    archive = chats / "data-2026-05-02-10-00-00-batch-0000.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("conversations.json", json.dumps([OLD_SHAPE, NEW_SHAPE]))
        z.writestr("users.json", json.dumps([{"uuid": "acc-1", "full_name": "A Person", "email_address": "a@example.com"}]))
        z.writestr("projects/p-1.json", json.dumps({"uuid": "p-1", "name": "proj", "docs": []}))
    (chats / "memories.json").write_text(json.dumps({"conversations_memory": "x", "project_memories": {}}))
    assert run_cli_in_process("context", "create", "Chats", "--chat-root", str(chats)).code == 0
    result = run_cli_in_process("ingest", "--context", "Chats", "--json")
    assert_no_traceback(result)
    assert result.code == 0 and result.json["errors"] == [], result
    got = run_cli("get", OLD_SHAPE["uuid"], "--context", "Chats", "--json")
    assert got.code == 0 and [t["role"] for t in got.json["turns"]] == ["user", "assistant"]
    assert run_cli("get", NEW_SHAPE["uuid"], "--context", "Chats", "--json").code == 0
    # The export file itself as the chat root works too.
    assert run_cli_in_process("context", "create", "One", "--chat-root", str(archive)).code == 0
    again = run_cli_in_process("ingest", "--context", "One", "--json")
    assert again.code == 0 and again.json["sources"]["indexed"] == 1
