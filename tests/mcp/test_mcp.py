"""Issue 8: `chinvex mcp` driven as a subprocess through the official `mcp` SDK's stdio client:
handshake, tools/list, the chinvex tools' happy and error paths, 20 concurrent calls, malformed
requests, and `chinvex mcp config` (the RECALL flow: test_mcp_recall_flow.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import tomllib
from pathlib import Path
from typing import Any

import anyio
from helpers import CHINVEX_BIN, assert_no_traceback, run_cli
from mcp import Client
from mcp_harness import call, call_error, maps, run_session, server_pid

TOOLS = {
    "chinvex_answer", "chinvex_search", "chinvex_get_chunks", "chinvex_list_contexts",
    "recall_search", "recall_get", "recall_add", "recall_feedback", "flight_recorder_log",
    "chinvex_pack", "recall_list", "recall_context", "recall_index", "recall_promote", "chinvex_blame",
}
REQUIRED = {
    "chinvex_answer": ["query"], "chinvex_search": ["query"], "chinvex_get_chunks": ["chunk_ids"],
    "chinvex_list_contexts": [], "recall_search": ["query"], "recall_get": ["id"],
    "recall_add": ["type", "title", "content"], "recall_feedback": ["item_id"],
    "flight_recorder_log": ["type", "content"], "chinvex_pack": ["task"], "recall_list": ["type"],
    "recall_context": ["file_path"], "recall_index": ["path"], "recall_promote": ["item_id"],
    "chinvex_blame": ["path"],
}
READ_ONLY = {"chinvex_answer", "chinvex_search", "chinvex_get_chunks", "chinvex_list_contexts",
             "recall_search", "recall_get", "chinvex_pack", "recall_list", "recall_context", "chinvex_blame"}
IDEMPOTENT: set[str] = set()
"""The idempotent (and destructive) hints mean something only for tools that write (MCP spec): the
read-only ones leave them out of the list, and no write tool is idempotent."""


# -- handshake and listing ----------------------------------------------------------------------

def test_handshake_lists_every_tool_with_schemas_and_loads_nothing_heavy(world):
    async def body(client: Client):
        info = client.server_info
        assert info is not None and info.name == "chinvex"
        listed = await client.list_tools()
        pid = server_pid()
        before = maps(pid)
        await call(client, "chinvex_search", query="webhook retry backoff")
        after = maps(pid)
        return listed.tools, before, after

    started = time.perf_counter()
    tools, before, after = run_session(world, body)
    assert time.perf_counter() - started < 120
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        schema = tool.input_schema
        assert schema["type"] == "object", tool.name
        assert sorted(schema.get("required", [])) == sorted(REQUIRED[tool.name]), tool.name
        for name, prop in schema.get("properties", {}).items():
            assert prop.get("description"), (tool.name, name)
        assert tool.description and len(tool.description) > 40
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name in READ_ONLY), tool.name
        assert bool(tool.annotations.idempotent_hint) is (tool.name in IDEMPOTENT), tool.name
    by_name = {t.name: t for t in tools}
    assert by_name["recall_search"].input_schema["properties"]["scope"]["enum"] == ["project", "global", "all"]
    assert by_name["recall_search"].input_schema["properties"]["limit"]["maximum"] == 50
    assert by_name["chinvex_answer"].input_schema["properties"]["k"]["default"] == 8
    assert by_name["chinvex_answer"].input_schema["properties"]["grounded"]["default"] is True
    # the handshake did not load the embedder or Chroma; the first search loaded the embedder and
    # read the store's vectors from its vector matrix (chinvex.storage.vector_matrix: current
    # after the ingest, so Chroma's client was not needed), in the same process
    assert "onnxruntime" not in before and "chromadb" not in before and "vector_matrix" not in before
    assert "onnxruntime" in after and "vector_matrix.bin" in after and "chromadb" not in after


# -- chinvex tools ------------------------------------------------------------------------------

def test_chinvex_pack_fits_the_budget_and_says_where_each_chunk_is_from(world):
    from chinvex.embedding.tokenizer import count_tokens

    async def body(client: Client):
        packed = await call(client, "chinvex_pack", task="how are webhooks retried", budget_tokens=120)
        again = await call(client, "chinvex_pack", task="how are webhooks retried", budget_tokens=120)
        spread = await call(client, "chinvex_pack", task="payments webhooks settlement", budget_tokens=5000,
                            diversity=1)
        zero = await call_error(client, "chinvex_pack", "INVALID_ARGUMENT", task="x", budget_tokens=0)
        return packed, again, spread, zero

    packed, again, spread, zero = run_session(world, body)
    assert packed == again  # deterministic
    assert packed["chunks"] and packed["used_tokens"] <= 120
    assert count_tokens(packed["text"]) == packed["used_tokens"]
    first = packed["chunks"][0]
    assert first["where"].startswith("src/retry.py:") and len(first["sha256"]) == 64 and first["mtime"]
    docs = [c["doc_id"] for c in spread["chunks"]]
    assert len(docs) == len(set(docs)) >= 2
    assert "budget_tokens" in zero


def test_chinvex_search_get_chunks_and_list_contexts(world):
    async def body(client: Client):
        found = await call(client, "chinvex_search", query="exponential backoff jitter webhook", k=3)
        assert set(found) >= {"schema_version", "query", "contexts", "k", "results", "stats"}
        assert found["contexts"] == ["payflow"] and found["k"] == 3
        top = found["results"][0]
        assert top["source_uri"].endswith("src/retry.py") and top["context"] == "payflow"
        assert set(top) >= {"rank", "chunk_id", "doc_id", "source_type", "source_uri", "title", "text",
                            "range", "updated_at", "scores"}
        assert set(top["scores"]) >= {"fts", "vector", "blended", "weight", "rank"}

        both = await call(client, "chinvex_search", query="kubernetes autoscaler idempotency key",
                          contexts=["pf", "infra"], k=8)
        assert set(both["contexts"]) == {"payflow", "infra"}
        assert {r["context"] for r in both["results"]} == {"payflow", "infra"}
        notes_only = await call(client, "chinvex_search", query="webhook", source_types=["note"])
        assert notes_only["results"] == []


        chunks = await call(client, "chinvex_get_chunks", chunk_ids=[top["chunk_id"], "000000000000"])
        assert chunks["chunks"][0]["text"] == top["text"] and chunks["missing"] == ["000000000000"]
        assert chunks["chunks"][0]["neighbours"].keys() == {"previous", "next"}

        listed = await call(client, "chinvex_list_contexts")
        names = {c["name"]: c for c in listed["contexts"]}
        assert set(names) == {"payflow", "infra", "global"}
        assert listed["default_context"] == "payflow" and listed["default_resolved_by"] == "--context"
        assert names["payflow"]["aliases"] == ["pf"] and names["payflow"]["sources"]["repos"] == 1
        assert listed["global_context"] == "global"

        await call_error(client, "chinvex_search", "CONTEXT_NOT_FOUND", query="x", context="nope")
        await call_error(client, "chinvex_search", "EMPTY_QUERY", query="   ")
        await call_error(client, "chinvex_get_chunks", "NOT_FOUND", chunk_ids=["ffffffffffff"])
        await call_error(client, "chinvex_get_chunks", "INVALID_ARGUMENT", chunk_ids=[])
        await call_error(client, "chinvex_get_chunks", "CONTEXT_NOT_FOUND", chunk_ids=["a"], context="nope")

    run_session(world, body)


def test_chinvex_answer(world):
    async def body(client: Client):
        answered = await call(client, "chinvex_answer", query="How are webhook deliveries retried?", k=4)
        assert answered["schema_version"] == 1 and answered["context"] == "payflow"
        # compact by default: the answer, its citations with where they are, one line of evidence
        assert set(answered) == {"schema_version", "context", "query", "grounded", "answer", "confidence",
                                 "citations", "evidence", "errors"}
        assert 0.0 <= answered["confidence"] <= 1.0, answered
        assert len(json.dumps(answered)) < 3000 and isinstance(answered["evidence"], str)
        # src/retry.py says how, in so many words: the answer must be grounded in it
        assert answered["grounded"] is True and answered["errors"] == [], answered
        assert answered["citations"] and all(c["where"] for c in answered["citations"])
        assert any(c["source_uri"].endswith("src/retry.py") for c in answered["citations"])
        assert "[chunk:" in answered["answer"]
        full = await call(client, "chinvex_answer", query="How are webhook deliveries retried?", k=4,
                          include_evidence=True)
        assert set(full) >= {"query", "grounded", "answer", "citations", "evidence_pack", "retrieval", "errors"}
        pack = {c["chunk_id"] for c in full["evidence_pack"]["chunks"]}
        assert {c["chunk_id"] for c in full["citations"]} <= pack and full["answer"] == answered["answer"]
        assert full["confidence"] == answered["confidence"]
        refused = await call(client, "chinvex_answer", query="What is the meaning of life?", k=4)
        assert refused["grounded"] is False and refused["answer"] == "Not stated in retrieved sources."
        assert refused["errors"][0]["code"] == "GROUNDING_FAILED" and refused["errors"][0]["detail"]
        assert refused["confidence"] is not None and refused["confidence"] < answered["confidence"], refused
        assert re.match(r"[1-4] chunks retrieved \(hybrid, extractive\)", refused["evidence"]), refused
        await call_error(client, "chinvex_answer", "CONTEXT_NOT_FOUND", query="anything", context="nope")
        await call_error(client, "chinvex_answer", "EMPTY_QUERY", query="")

    run_session(world, body)


def test_malformed_calls_return_errors_and_the_server_keeps_serving(world):
    async def body(client: Client):
        cases = [
            ("chinvex_search", {"query": 42}, "INVALID_ARGUMENT"),
            ("chinvex_search", {"query": "x", "k": "many"}, "INVALID_ARGUMENT"),
            ("chinvex_search", {"query": "x", "k": 0}, "INVALID_ARGUMENT"),
            ("chinvex_search", {"query": "x", "k": 51}, "INVALID_ARGUMENT"),
            ("chinvex_search", {"query": "x", "per_doc": -1}, "INVALID_ARGUMENT"),
            ("chinvex_search", {}, "INVALID_ARGUMENT"),
            ("chinvex_search", {"query": "q" * (10 * 1024 + 1)}, "INVALID_ARGUMENT"),
            ("recall_search", {"query": "é" * 6000}, "INVALID_ARGUMENT"),
            ("recall_search", {"query": "x", "limit": 500}, "INVALID_ARGUMENT"),
            ("recall_search", {"query": "x", "scope": "everything"}, "INVALID_ARGUMENT"),
            ("recall_search", {"query": "x", "types": "decision"}, "INVALID_ARGUMENT"),
            ("recall_add", {"type": "note", "title": "big", "content": "x" * (1024 * 1024 + 1)}, "INVALID_ARGUMENT"),
            ("recall_add", {"type": "note", "title": "no content"}, "INVALID_ARGUMENT"),
            ("recall_add", {"type": "note", "title": "t", "content": "c", "tags": ["x"] * 100}, "INVALID_ARGUMENT"),
            ("recall_feedback", {"item_id": "x", "feedback": "great"}, "INVALID_ARGUMENT"),
            ("recall_get", {"id": None}, "INVALID_ARGUMENT"),
            ("chinvex_get_chunks", {"chunk_ids": "abc"}, "INVALID_ARGUMENT"),
            ("chinvex_blame", {}, "INVALID_ARGUMENT"),
            ("chinvex_blame", {"path": "src/retry.py", "lines": "ten"}, "INVALID_ARGUMENT"),
            ("chinvex_blame", {"path": "p" * 5000}, "INVALID_ARGUMENT"),
            ("flight_recorder_log", {"type": "x", "content": "y", "metadata": [1, 2]}, "INVALID_ARGUMENT"),
            ("no_such_tool", {"query": "x"}, "UNKNOWN_TOOL"),
        ]
        for tool, arguments, code in cases:
            message = await call_error(client, tool, code, **arguments)
            assert len(message) < 2000, message  # the oversized input is never echoed back
        # still serving
        listed = await client.list_tools()
        assert len(listed.tools) == len(TOOLS)
        found = await call(client, "chinvex_search", query="idempotency key")
        assert found["results"][0]["source_uri"].endswith("README.md")

    run_session(world, body)


def test_raw_protocol_garbage_does_not_stop_the_server(world):
    proc = subprocess.Popen([str(CHINVEX_BIN), "mcp", "--context", "payflow"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **world.env()},
                            cwd=world.repo, text=True)

    def send(obj: Any) -> None:
        assert proc.stdin is not None
        proc.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        proc.stdin.flush()

    def receive(request_id: int) -> dict[str, Any]:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "server closed stdout"
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert receive(1)["result"]["serverInfo"]["name"] == "chinvex"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send("this is not json {")
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "chinvex_search"}})
        second = receive(2)
        assert "error" in second or second["result"]["isError"] is True
        send({"jsonrpc": "2.0", "id": 3, "method": "no/such/method", "params": {}})
        assert "error" in receive(3)
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
              "params": {"name": "recall_search", "arguments": {"query": "x" * 20000}}})
        fourth = receive(4)["result"]
        assert fourth["isError"] is True and fourth["structuredContent"]["error"]["code"] == "INVALID_ARGUMENT"
        send({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}})
        assert len(receive(5)["result"]["tools"]) == len(TOOLS)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "Traceback" not in stderr


def test_twenty_parallel_calls_all_answer_correctly(world):
    queries = {
        "exponential backoff jitter": "src/retry.py",
        "idempotency key charging twice": "README.md",
        "settlement batches midnight acquirer": "README.md",
        "webhook delivery failed after retries": "src/retry.py",
    }

    async def body(client: Client):
        await call(client, "chinvex_list_contexts")  # the server is up; the calls below start cold
        results: dict[int, Any] = {}

        async def one(i: int) -> None:
            kind = i % 5
            if kind == 0:
                query, expected = list(queries.items())[i // 5 % 4]
                out = await call(client, "chinvex_search", query=query, k=3)
                assert out["results"][0]["source_uri"].endswith(expected), (query, out["results"][0]["source_uri"])
            elif kind == 1:
                out = await call(client, "recall_add", type="lesson", title=f"Parallel lesson {i}",
                                 content=f"The capybara{i} service needs a warm cache before traffic.")
                assert out["indexed"]
            elif kind == 2:
                out = await call(client, "recall_search", query="webhook retry backoff", types=["code"], limit=2)
                assert out["results"][0]["type"] == "code"
            elif kind == 3:
                out = await call(client, "flight_recorder_log", type="observation", content=f"parallel {i}")
                assert out["logged"]
            else:
                out = await call(client, "chinvex_search", query="kubernetes autoscaler", context="infra", k=2)
                assert out["results"][0]["source_uri"].endswith("cluster.md")
            results[i] = out

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, i)
        assert len(results) == 20
        added = [results[i] for i in range(20) if i % 5 == 1]
        assert len({a["id"] for a in added}) == 4
        for a in added:
            n = a["title"].rsplit(" ", 1)[1]
            found = await call(client, "recall_search", query=f"capybara{n} warm cache", scope="project", limit=3)
            assert found["results"][0]["id"] == a["id"]
        logged = [results[i]["event_id"] for i in range(20) if i % 5 == 3]
        return logged

    logged = run_session(world, body)
    with world.db("payflow") as conn:
        marks = ",".join("?" * len(logged))
        assert conn.execute(f"SELECT COUNT(*) FROM flight_recorder WHERE entry_id IN ({marks})", logged).fetchone()[0] == 4


# -- chinvex mcp config -------------------------------------------------------------------------

def test_mcp_config_snippets(tmp_path):
    claude = run_cli("mcp", "config", "--client", "claude", "--context", "payflow", "--json")
    assert claude.code == 0, claude
    entry = claude.json["config"]["mcpServers"]["chinvex"]
    assert entry["type"] == "stdio" and entry["args"] == ["mcp", "--context", "payflow"]
    assert Path(entry["command"]).name == "chinvex" and Path(entry["command"]).is_file()
    assert entry["env"]["CHINVEX_HOME"] == os.environ["CHINVEX_HOME"]
    assert claude.json["command_line"].startswith("claude mcp add chinvex -e CHINVEX_HOME=")
    assert claude.json["command_line"].endswith("-- " + entry["command"] + " mcp --context payflow")

    codex = run_cli("mcp", "config", "--client", "codex")
    assert codex.code == 0, codex
    parsed = tomllib.loads(codex.stdout)["mcp_servers"]["chinvex"]
    assert parsed["args"] == ["mcp"] and Path(parsed["command"]).name == "chinvex"
    assert parsed["env"] == {"CHINVEX_HOME": os.environ["CHINVEX_HOME"]}

    human = run_cli("mcp", "config", "--client", "claude")
    assert human.code == 0 and '"mcpServers"' in human.stdout and "claude mcp add chinvex" in human.stdout
    bad = run_cli("mcp", "config", "--client", "vscode")
    assert bad.code == 2 and "expected claude or codex" in bad.stderr
    bad_name = run_cli("mcp", "config", "--client", "codex", "--context", "../x")
    assert bad_name.code == 2
    assert_no_traceback(bad_name)
