"""claude.ai exports of the `content[]` shape, fields as a real export has them.

The message below is shaped after a real claude.ai export (a public repository's test data
without a licence, so it was only read locally, never copied; the words here are made up). What
it showed: an assistant message's `text` repeats its thinking and its words run together
(here `...keep it short.Not only: ...`), while `content[]` holds them apart, with `summaries` of the
thinking, `cut_off`, `flags`, empty `citations` and each block's own `start_timestamp` and
`stop_timestamp`; the human message's `content[]` repeats its `text`."""

from __future__ import annotations

import json
from pathlib import Path

from chinvex.models.sources import ParseReport, SourceCandidate
from chinvex_adapters.chat_export.adapter import ChatExportAdapter

THOUGHT = "The user asks whether cats purr only when content. I should keep it short."
WORDS = "Not only: cats also purr when stressed or hurt; purring is thought to help them heal."
CONVERSATION = {
    "uuid": "0c5d2a9e-7b1f-4f0e-9d3a-2b6c8e4f1a70", "name": "Purring", "summary": "",
    "created_at": "2025-08-14T11:42:13.100000Z", "updated_at": "2025-08-14T11:42:27.500000Z",
    "account": {"uuid": "6f1e2d3c-0000-4000-8000-000000000001"},
    "chat_messages": [
        {"uuid": "6a0e1f2d-0000-4000-8000-000000000010", "text": "Do cats purr only when happy?",
         "content": [{"start_timestamp": "2025-08-14T11:42:13.412207Z", "stop_timestamp": "2025-08-14T11:42:13.412207Z",
                      "flags": None, "type": "text", "text": "Do cats purr only when happy?", "citations": []}],
         "sender": "human", "created_at": "2025-08-14T11:42:13.418833Z", "updated_at": "2025-08-14T11:42:13.418833Z",
         "attachments": [], "files": []},
        {"uuid": "6a0e1f2d-0000-4000-8000-000000000011", "text": THOUGHT + WORDS,
         "content": [
             {"start_timestamp": "2025-08-14T11:42:15.250871Z", "stop_timestamp": "2025-08-14T11:42:20.901334Z",
              "flags": None, "type": "thinking", "thinking": THOUGHT,
              "summaries": [{"summary": "Weighing what purring means"}, {"summary": "Answered briefly."}],
              "cut_off": False, "alternative_display_type": None},
             {"start_timestamp": "2025-08-14T11:42:20.987402Z", "stop_timestamp": "2025-08-14T11:42:24.640019Z",
              "flags": None, "type": "text", "text": WORDS, "citations": []}],
         "sender": "assistant", "created_at": "2025-08-14T11:42:24.702155Z", "updated_at": "2025-08-14T11:42:24.702155Z",
         "attachments": [], "files": []},
    ],
}


def _parse(tmp_path: Path, *conversations: dict) -> tuple[list, ParseReport]:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(list(conversations)))
    report = ParseReport()
    cand = SourceCandidate(source_uri=str(path), source_type="chat", adapter="chat_export",
                           root=str(tmp_path), path=path, extra={"kind": "chatgpt_json"})
    return list(ChatExportAdapter().parse(cand, report, None)), report


def test_thinking_is_kept_once_and_apart_from_the_words_that_text_runs_together(tmp_path: Path):
    (doc,), report = _parse(tmp_path, CONVERSATION)
    assert not report.counts, report.counts  # nothing unknown, nothing skipped
    turns = [(t.role, bool(t.meta.get("thinking")), t.text) for t in doc.turns]
    assert turns == [("user", False, "Do cats purr only when happy?"), ("assistant", True, THOUGHT),
                     ("assistant", False, WORDS)]
    assert doc.title == "Purring" and doc.thread_id == CONVERSATION["uuid"]
    assert doc.metadata["account_uuid"] == "6f1e2d3c-0000-4000-8000-000000000001"


def test_each_part_of_a_reply_has_the_time_its_block_started(tmp_path: Path):
    (doc,), _ = _parse(tmp_path, CONVERSATION)
    times = [t.ts.isoformat(timespec="milliseconds") for t in doc.turns]
    assert times == ["2025-08-14T11:42:13.412+00:00", "2025-08-14T11:42:15.250+00:00",
                     "2025-08-14T11:42:20.987+00:00"]
    # Words before a tool call keep their own time, not the call's; blocks without a time take
    # the message's.
    reply = CONVERSATION["chat_messages"][1]
    blocks = [{"type": "text", "text": "Let me look.", "start_timestamp": "2025-08-14T11:42:21Z"},
              {"type": "tool_use", "id": "toolu_9", "name": "web_search", "input": {"query": "cat purring"},
               "start_timestamp": "2025-08-14T11:42:22Z"},
              {"type": "tool_result", "tool_use_id": "toolu_9", "name": "web_search", "content": [
                  {"type": "knowledge", "title": "Why cats purr", "url": "https://example.org/purr",
                   "text": "Purring at 25-150 Hz.", "metadata": {"site_domain": "example.org"}}]},
              {"type": "text", "text": "Found it.", "start_timestamp": None}]
    (doc,), _ = _parse(tmp_path, {**CONVERSATION, "chat_messages": [
        CONVERSATION["chat_messages"][0], {**reply, "content": blocks}]})
    looked, tool, found = doc.turns[1:]
    assert (looked.text, looked.ts.isoformat()) == ("Let me look.", "2025-08-14T11:42:21+00:00")
    assert tool.role == "tool" and "Why cats purr (https://example.org/purr)\nPurring at 25-150 Hz." in tool.text
    assert (found.text, found.ts.isoformat(timespec="milliseconds")) == ("Found it.", "2025-08-14T11:42:24.702+00:00")
