"""Issue 18 lookups: a conversation by the id its tool gave it (Codex thread id, Claude Code
session id, ChatGPT conversation id), through `chinvex get` and MCP `recall_get`, over the
fixtures context (real sample exports and sessions, ingested with the real pipeline)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mcp import Client

from helpers import assert_no_traceback, run_cli
from mcp_harness import World, call, call_error, run_session


def _threads(home: Path) -> dict[str, tuple[str, int]]:
    """source_type -> (a thread id, its turn count) from the fixtures index."""
    conn = sqlite3.connect(home / "indexes" / "fixtures" / "hybrid.db")
    try:
        out = {}
        for source_type, meta, doc_id in conn.execute(
                "SELECT source_type, metadata_json, doc_id FROM documents ORDER BY doc_id"):
            data = json.loads(meta)
            if data.get("doc_type") == "conversation" and data.get("thread_id") and source_type not in out:
                turns = conn.execute("SELECT COUNT(*) FROM conversation_turns WHERE doc_id=?", (doc_id,)).fetchone()[0]
                out[source_type] = (data["thread_id"], turns)
        return out
    finally:
        conn.close()


def _all_thread_ids(home: Path) -> list[str]:
    conn = sqlite3.connect(home / "indexes" / "fixtures" / "hybrid.db")
    try:
        return [json.loads(m).get("thread_id") or "" for (m,) in conn.execute("SELECT metadata_json FROM documents")]
    finally:
        conn.close()


def test_get_finds_each_kind_of_conversation_by_its_id(fixtures_context):
    env = fixtures_context["env"]
    threads = _threads(fixtures_context["home"])
    assert {"codex_session", "chat", "agent_session"} <= set(threads), threads
    for source_type, (thread_id, turns) in threads.items():
        found = run_cli("get", thread_id, "--json", env=env)
        assert found.code == 0, found
        assert found.json["thread_id"] == thread_id and found.json["source_type"] == source_type
        assert found.json["turn_count"] == turns == len(found.json["turns"]) > 0
        assert all(t["role"] for t in found.json["turns"])
        prefix = thread_id[:12]
        by_prefix = run_cli("get", prefix, "--json", env=env)
        if sum(1 for t in _all_thread_ids(fixtures_context["home"]) if t.startswith(prefix)) == 1:
            assert by_prefix.json["thread_id"] == thread_id  # a unique prefix is enough
        else:  # e.g. a Claude Code session and its sub-agents' threads
            assert by_prefix.code == 2 and "more than one" in by_prefix.json["error"]["message"]
    human = run_cli("get", threads["codex_session"][0], env=env)
    assert human.code == 0 and "[Turn 1] " in human.stdout and threads["codex_session"][0] in human.stdout
    missing = run_cli("get", "no-such-thread-id", env=env)
    assert_no_traceback(missing)
    assert missing.code == 1 and "no-such-thread-id" in missing.stderr
    empty = run_cli("get", " ", env=env)
    assert empty.code == 2


def test_recall_get_by_session_id(fixtures_context, tmp_path):
    threads = _threads(fixtures_context["home"])
    thread_id, turns = threads["agent_session"]
    world = World(home=fixtures_context["home"], repo=tmp_path, other=tmp_path, outside=tmp_path)

    async def body(client: Client):
        found = await call(client, "recall_get", id=thread_id)
        missing = await call_error(client, "recall_get", "NOT_FOUND", id="0000dead-beef")
        return found, missing

    found, missing = run_session(world, body, args=("mcp", "--context", "fixtures"))
    assert found["type"] == "session" and found["id"] == thread_id and len(found["turns"]) == turns
    assert found["metadata"]["context"] == "fixtures" and found["content"].startswith("[0] ")
    assert "0000dead-beef" in missing
