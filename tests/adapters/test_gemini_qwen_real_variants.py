"""The gemini and qwen adapters on record shapes met in real session files that the fixtures
under tests/fixtures/samples/gemini_cli and qwen_code do not show.

No licensed real file shows them, so each test writes a minimal file in the exact shape of the
real ones it names (ids, paths and words below are ours):
- Gemini CLI's A2A server (the Gemini chat of Google Cloud Shell) records every task in its own
  `chats/session-<minute>-a2a-serv.jsonl`, each with the same `"sessionId": "a2a-server"`,
  a header line repeated before every `{"$set": {"messages": [...]}}` snapshot. Seen in
  1919114514yasenpai-maker/focus-quest `.gemini/tmp/code-oss-for-cloud-shell/chats/` (over a
  hundred such files) and Cleanskiier27/gcloud `.gemini/tmp/cleanskiier27/chats/`; neither
  repository has a licence.
- Qwen Code appends one record per write; an append cut short leaves two records glued on one
  line (`{...}{...}`), the corruption qwen-code's own reader recovers (`jsonl-utils.ts`,
  issues #3606/#3681), and that jazzyalex/agent-sessions keeps a hand-made fixture of.
- Qwen Code 0.22 writes a `provenance` key on every record (`real_user`, `assistant_output`,
  `tool_result`, `system`); shape from the verbatim captures in ai.eight24family conch's
  `Top5AgentsParserTest` (licence unknown).
"""

from __future__ import annotations

import json
from pathlib import Path

from chinvex.models import ConversationDoc
from chinvex_adapters.gemini.adapter import GeminiAdapter
from chinvex_adapters.qwen.adapter import QwenAdapter
from helpers import parse_file

PROJECT_HASH = "23142f308149287adbb8d963a761e36e173d5b2b69bf2129dd820f869e8f65aa"
CONTEXT = {"id": "d04923d38bb0f6017037e74183378ef4", "type": "user",
           "content": [{"text": "<session_context>\nThis is the Gemini CLI. We are setting up the context "
                                "for our chat.\n</session_context>"}]}


def one(adapter, path: Path) -> ConversationDoc:
    docs, _ = parse_file(adapter, path)
    assert len(docs) == 1
    return docs[0]


def a2a_chat(chats: Path, minute: str, start: str, prompt: str, answer: str) -> Path:
    """One A2A-server task chat: header, context-only snapshot, header again, full snapshot."""
    head = {"sessionId": "a2a-server", "projectHash": PROJECT_HASH, "startTime": start,
            "lastUpdated": start, "kind": "main"}
    context = dict(CONTEXT, timestamp=start)
    user = {"id": f"u-{minute}", "timestamp": start, "type": "user", "content": [{"text": prompt}]}
    reply = {"id": f"g-{minute}", "timestamp": start, "type": "gemini", "content": answer,
             "model": "gemini-2.5-pro", "tokens": {"input": 9000, "output": 40, "cached": 0,
                                                   "thoughts": 0, "tool": 0, "total": 9040}}
    lines = [head, {"$set": {"messages": [context], "lastUpdated": start}},
             head, {"$set": {"messages": [context, user, reply], "lastUpdated": start}}]
    path = chats / f"session-2026-08-13T04-{minute}-a2a-serv.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    return path


def test_a2a_server_chats_sharing_one_session_id_stay_separate_conversations(tmp_path):
    chats = tmp_path / "tmp" / "code-oss-for-cloud-shell" / "chats"
    chats.mkdir(parents=True)
    first = one(GeminiAdapter(), a2a_chat(chats, "43", "2026-08-13T04:43:57.095Z",
                                          "make a pomodoro timer page", "Here is a pomodoro timer."))
    second = one(GeminiAdapter(), a2a_chat(chats, "44", "2026-08-13T04:44:30.000Z",
                                           "add a dark theme", "Dark theme added."))
    assert first.metadata["session_id"] == second.metadata["session_id"] == "a2a-server"
    assert first.thread_id == "a2a-server/code-oss-for-cloud-shell/session-2026-08-13T04-43-a2a-serv"
    assert second.thread_id == "a2a-server/code-oss-for-cloud-shell/session-2026-08-13T04-44-a2a-serv"
    assert first.doc_id != second.doc_id
    # The snapshots replace each other: each message once, the context kept out of the talk.
    assert [(t.role, t.text) for t in first.turns if t.role != "system"] == [
        ("user", "make a pomodoro timer page"), ("assistant", "Here is a pomodoro timer.")]
    assert first.title == "make a pomodoro timer page"


def test_an_ordinary_session_id_is_still_the_thread_id(tmp_path):
    chats = tmp_path / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    path = a2a_chat(chats, "50", "2026-08-13T04:50:00.000Z", "hello", "Hi.")
    text = path.read_text("utf-8").replace('"a2a-server"', '"0ab84937-9fe7-4284-986a-33c832af0b6a"')
    path.write_text(text, "utf-8")
    assert one(GeminiAdapter(), path).thread_id == "0ab84937-9fe7-4284-986a-33c832af0b6a"


def test_qwen_022_records_with_provenance_keep_user_tool_and_answers(tmp_path):
    sid = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    env = {"sessionId": sid, "cwd": "/home/u/histproj", "version": "0.22.2"}
    records = [
        {"uuid": "r1", "parentUuid": None, "timestamp": "2026-08-28T03:45:23.477Z", "type": "user",
         "provenance": "real_user", **env, "message": {"role": "user", "parts": [{"text": "list the txt files"}]}},
        {"uuid": "r2", "parentUuid": "r1", "timestamp": "2026-08-28T03:45:23.631Z", "type": "assistant",
         "provenance": "assistant_output", **env, "model": "qwen3-coder-plus",
         "message": {"role": "model", "parts": [{"text": "Listing the directory now."},
                                                {"functionCall": {"id": "call_1", "name": "glob",
                                                                  "args": {"pattern": "*.txt"}}}]},
         "usageMetadata": {"promptTokenCount": 1234, "candidatesTokenCount": 42, "totalTokenCount": 1276},
         "contextWindowSize": 1000000},
        {"uuid": "r3", "parentUuid": "r2", "timestamp": "2026-08-28T03:45:23.669Z", "type": "tool_result",
         "provenance": "tool_result", **env,
         "message": {"role": "user", "parts": [{"functionResponse": {
             "id": "call_1", "name": "glob", "response": {"output": "Found 2 file(s)\nhello.txt\nnotes.txt"}}}]},
         "toolCallResult": {"callId": "call_1", "status": "success", "executionStatus": "success"}},
        {"uuid": "r4", "parentUuid": "r3", "timestamp": "2026-08-28T03:45:23.682Z", "type": "system",
         "provenance": "system", "sessionId": sid, "subtype": "ui_telemetry",
         "systemPayload": {"uiEvent": {"event.name": "qwen-code.api_response"}}},
        {"uuid": "r5", "parentUuid": "r4", "timestamp": "2026-08-28T03:45:23.719Z", "type": "assistant",
         "provenance": "assistant_output", **env, "model": "qwen3-coder-plus",
         "message": {"role": "model", "parts": [{"text": "The folder holds hello.txt and notes.txt."}]}},
    ]
    path = tmp_path / "projects" / "-home-u-histproj" / "chats" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    doc = one(QwenAdapter(), path)
    assert doc.thread_id == sid
    assert [t.role for t in doc.turns] == ["user", "assistant", "tool", "assistant"]
    tool = doc.turns[2]
    assert tool.tool.name == "glob" and "notes.txt" in tool.text and "*.txt" in tool.text
    assert doc.turns[-1].text == "The folder holds hello.txt and notes.txt."
    assert doc.metadata["version"] == "0.22.2"


def _qwen_record(uuid: str, parent: str | None, kind: str, text: str, sid: str) -> dict:
    role = "model" if kind == "assistant" else "user"
    return {"uuid": uuid, "parentUuid": parent, "sessionId": sid, "timestamp": "2026-08-17T14:00:00.000Z",
            "type": kind, "cwd": "/work/glued", "version": "0.21.13",
            "message": {"role": role, "parts": [{"text": text}]}}


def test_qwen_records_glued_on_one_line_are_all_read_in_order(tmp_path):
    sid = "019f0000-0000-7000-8000-0000000000aa"
    first = _qwen_record("r1", None, "user", "rename the config loader", sid)
    second = _qwen_record("r2", "r1", "assistant", "Renamed it to load_settings.", sid)
    third = _qwen_record("r3", "r2", "user", 'now update the {"callers"} too', sid)
    fourth = _qwen_record("r4", "r3", "assistant", "Updated all four callers.", sid)
    path = tmp_path / "projects" / "-work-glued" / "chats" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + json.dumps(third) + "\n"
                    + json.dumps(fourth) + "\n", "utf-8")
    docs, report = parse_file(QwenAdapter(), path)
    assert [t.text for t in docs[0].turns] == ["rename the config loader", "Renamed it to load_settings.",
                                                'now update the {"callers"} too', "Updated all four callers."]
    assert report.counts["lines_glued_split"] == 1  # kit.jsonl splits a line of whole records
    assert "lines_invalid_json" not in report.counts


def test_a_qwen_chat_whose_first_records_are_glued_is_still_recognised(tmp_path):
    sid = "019f0000-0000-7000-8000-0000000000bb"
    path = tmp_path / "projects" / "-work-glued" / "chats" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_qwen_record("r1", None, "user", "list the scripts", sid))
                    + json.dumps(_qwen_record("r2", "r1", "assistant", "There are three.", sid)) + "\n", "utf-8")
    assert QwenAdapter().sniff(path) is None
    assert [t.role for t in one(QwenAdapter(), path).turns] == ["user", "assistant"]
