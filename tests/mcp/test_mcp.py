"""Issue 8: `chinvex mcp` driven as a subprocess through the official `mcp` SDK's stdio client:
handshake, tools/list, every tool's happy and error path, the RECALL flow with its rows in
hybrid.db, 20 concurrent calls, malformed requests, and `chinvex mcp config`."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import textwrap
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp import Client, StdioServerParameters

from helpers import CHINVEX_BIN, assert_no_traceback, run_cli, run_cli_in_process

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


@dataclass
class World:
    home: Path
    repo: Path
    other: Path
    outside: Path

    def env(self, **extra: str) -> dict[str, str]:
        # Every tool (the default list holds only the core four; test_default_tool_list checks it).
        return {"CHINVEX_HOME": str(self.home), "ANONYMIZED_TELEMETRY": "False", "CHINVEX_MCP_TOOLS": "all",
                **extra}

    def db(self, context: str) -> sqlite3.Connection:
        conn = sqlite3.connect(self.home / "indexes" / context / "hybrid.db")
        conn.row_factory = sqlite3.Row
        return conn


def _cli(world: World, *args: str):
    """A set-up command, run in this process (conftest.run_cli_in_process)."""
    result = run_cli_in_process(*args, env=world.env(CHINVEX_CONTEXT=""))
    assert_no_traceback(result)
    assert result.code == 0, result
    return result


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    base = tmp_path_factory.mktemp("mcp_world")
    repo, other, outside = base / "payflow", base / "infra", base / "elsewhere"
    (repo / "src").mkdir(parents=True)
    other.mkdir()
    outside.mkdir()
    (repo / "src" / "retry.py").write_text(textwrap.dedent('''\
        """Retry helpers for the webhook delivery service."""

        import random
        import time


        def backoff_delay(attempt: int, base: float = 0.5, cap: float = 30.0) -> float:
            """Exponential backoff with full jitter, so recovering merchants are not stampeded."""
            return random.uniform(0, min(cap, base * 2 ** attempt))


        def deliver_with_retry(send, payload, attempts: int = 5):
            """Send a webhook payload, retrying transient failures with exponential backoff."""
            for attempt in range(attempts):
                try:
                    return send(payload)
                except ConnectionError:
                    time.sleep(backoff_delay(attempt))
            raise RuntimeError("webhook delivery failed after retries")
        '''), encoding="utf-8")
    (repo / "README.md").write_text(textwrap.dedent("""\
        # Payflow

        Payflow processes card payments and delivers webhooks to merchants.

        ## Idempotency

        Every payment request carries an idempotency key; a repeated key returns the stored
        response instead of charging the card twice.

        ## Settlement

        Settlement batches close at midnight UTC and are reconciled against the acquirer report.
        """), encoding="utf-8")
    (other / "cluster.md").write_text(textwrap.dedent("""\
        # Cluster runbook

        The kubernetes cluster autoscaler adds nodes when pods stay pending for two minutes.
        Drain a node with kubectl drain before rebooting it.
        """), encoding="utf-8")
    world = World(home=base / "home", repo=repo, other=other, outside=outside)
    _cli(world, "context", "create", "payflow", "--repo", str(repo), "--alias", "pf")
    _cli(world, "context", "create", "infra", "--repo", str(other))
    _cli(world, "context", "create", "global")
    _cli(world, "ingest", "--context", "payflow")
    _cli(world, "ingest", "--context", "infra")
    return world


def run_session(world: World, body, *, args: tuple[str, ...] = ("mcp", "--context", "payflow"),
                env: dict[str, str] | None = None, cwd: Path | None = None) -> Any:
    async def main():
        params = StdioServerParameters(command=str(CHINVEX_BIN), args=list(args), env=world.env(**(env or {})),
                                       cwd=str(cwd or world.repo))
        async with Client(params, mode="legacy", read_timeout_seconds=180) as client:
            return await body(client)

    return anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, (tool, result.content[0].text if result.content else result)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def call_error(client: Client, tool: str, code: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, result)
    payload = result.structured_content
    assert payload["ok"] is False and payload["error"]["code"] == code, (tool, payload)
    assert json.loads(result.content[0].text) == payload
    return payload["error"]["message"]


def _server_pid() -> int:
    children = [p for p in psutil.Process().children(recursive=True)
                if "mcp" in " ".join(p.cmdline())]
    assert len(children) == 1, children
    return children[0].pid


def _maps(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


# -- handshake and listing ----------------------------------------------------------------------

def test_handshake_lists_every_tool_with_schemas_and_loads_nothing_heavy(world):
    async def body(client: Client):
        info = client.server_info
        assert info is not None and info.name == "chinvex"
        listed = await client.list_tools()
        pid = _server_pid()
        before = _maps(pid)
        await call(client, "chinvex_search", query="webhook retry backoff")
        after = _maps(pid)
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
    # the handshake did not load the embedder or Chroma; the first search did, in the same process
    assert "onnxruntime" not in before and "chromadb" not in before
    assert "onnxruntime" in after and "chromadb" in after


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
        assert set(answered) == {"schema_version", "context", "query", "grounded", "answer", "citations",
                                 "evidence", "errors"}
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
        refused = await call(client, "chinvex_answer", query="What is the meaning of life?", k=4)
        assert refused["grounded"] is False and refused["answer"] == "Not stated in retrieved sources."
        assert refused["errors"][0]["code"] == "GROUNDING_FAILED" and refused["errors"][0]["detail"]
        assert re.match(r"[1-4] chunks retrieved \(hybrid, extractive\)", refused["evidence"]), refused
        await call_error(client, "chinvex_answer", "CONTEXT_NOT_FOUND", query="anything", context="nope")
        await call_error(client, "chinvex_answer", "EMPTY_QUERY", query="")

    run_session(world, body)


# -- RECALL -------------------------------------------------------------------------------------

EDI_ENV = {"EDI_SESSION_ID": "edi-session-7", "EDI_AGENT_MODE": "architect", "EDI_GIT_BRANCH": "feature/x",
           "EDI_GIT_SHA": "0badc0d", "EDI_PROJECT_PATH": "/home/dev/payflow", "EDI_PROJECT_NAME": "payflow"}


def test_recall_add_search_get_feedback_and_flight_recorder(world):
    content = ("Chargebacks from the zanzibar acquirer arrive as CSV at 02:00 UTC; import them before "
               "settlement reconciliation or the ledger drifts.")

    async def body(client: Client):
        added = await call(client, "recall_add", type="decision", title="Import zanzibar chargebacks first",
                           content=content, tags=["settlement", "acquirer"])
        assert re.fullmatch(r"D-[0-9a-f]{8}", added["id"]) and added["indexed"] is True
        for key, value in {"edi_session_id": "edi-session-7", "edi_agent_mode": "architect",
                           "edi_git_branch": "feature/x", "edi_git_sha": "0badc0d",
                           "edi_project_path": "/home/dev/payflow", "edi_project_name": "payflow"}.items():
            assert added["metadata"][key] == value

        # RECALL's own argument set (rerank included) is accepted as is
        found = await call(client, "recall_search", query="zanzibar chargebacks settlement", limit=5,
                           scope="all", rerank=True)
        assert found["_judge_reminder"].startswith("Apply the retrieval-judge skill")
        first = found["results"][0]
        assert first["id"] == added["id"] and first["type"] == "decision" and first["content"] == content
        assert set(first) == {"id", "type", "title", "content", "score", "metadata"}
        assert found["query_metadata"]["scope_searched"] == "all"
        assert found["query_metadata"]["contexts"] == ["payflow", "global"]
        code_hits = await call(client, "recall_search", query="webhook retry backoff", types=["code"], limit=3)
        assert code_hits["results"] and all(r["type"] == "code" for r in code_hits["results"])
        assert code_hits["results"][0]["id"] == code_hits["results"][0]["metadata"]["chunk_id"]
        decisions = await call(client, "recall_search", query="zanzibar webhook retry", types=["adr"])
        assert [r["id"] for r in decisions["results"]] == [added["id"]]

        got = await call(client, "recall_get", id=added["id"])
        assert got["content"] == content and got["tags"] == ["settlement", "acquirer"]
        chunk = await call(client, "recall_get", id=code_hits["results"][0]["id"], include_parent=True)
        assert chunk["type"] == "code" and chunk["content"] in chunk["parent_content"]

        fb = await call(client, "recall_feedback", item_id=added["id"], useful=True, context="exactly the rule")
        assert fb["acknowledged"] and fb["item_stats"]["useful_count"] == 1
        assert fb["item_stats"]["retrieval_count"] == 2
        fb2 = await call(client, "recall_feedback", item_id=code_hits["results"][0]["id"], feedback="not_useful")
        assert fb2["item_stats"]["not_useful_count"] == 1

        logged = await call(client, "flight_recorder_log", type="retrieval_judgment", content="kept 1 of 1",
                            metadata={"kept": [added["id"]], "dropped": []})
        assert logged["logged"] and logged["session_id"] == "edi-session-7"
        decision = await call(client, "flight_recorder_log", type="decision", content="import chargebacks first",
                              rationale="the ledger drifts otherwise", related_files=["src/retry.py"])

        await call_error(client, "recall_get", "NOT_FOUND", id="D-00000000")
        await call_error(client, "recall_feedback", "NOT_FOUND", item_id="nonexistent", useful=False)
        await call_error(client, "recall_feedback", "INVALID_ARGUMENT", item_id=added["id"])
        await call_error(client, "recall_add", "INVALID_ARGUMENT", type="decision", title="", content="x")
        await call_error(client, "recall_search", "EMPTY_QUERY", query="")
        await call_error(client, "flight_recorder_log", "INVALID_ARGUMENT", type="", content="x")
        return added, decision

    added, decision = run_session(world, body, env=EDI_ENV)

    with world.db("payflow") as conn:
        doc = conn.execute("SELECT * FROM documents WHERE source_type='memory'").fetchone()
        assert doc["source_uri"] == f"memory://{added['id']}" == doc["origin_uri"]
        assert conn.execute("SELECT COUNT(*) FROM source_fingerprints WHERE source_uri=?",
                            (doc["source_uri"],)).fetchone()[0] == 0
        item = conn.execute("SELECT * FROM knowledge_items WHERE item_id=?", (added["id"],)).fetchone()
        assert item["doc_id"] == doc["doc_id"] and item["indexed_at"] is not None
        feedback = conn.execute("SELECT * FROM feedback ORDER BY created_at").fetchall()
        assert [(r["item_id"], r["feedback"], r["useful"], r["session_id"]) for r in feedback][:1] == [
            (added["id"], "useful", 1, "edi-session-7")]
        assert feedback[0]["context"] == "exactly the rule" and len(feedback) == 2
        stats = conn.execute("SELECT * FROM item_stats WHERE item_id=?", (added["id"],)).fetchone()
        assert stats["useful_count"] == 1 and stats["retrieval_count"] == 2
        events = conn.execute("SELECT * FROM flight_recorder WHERE session_id='edi-session-7' "
                              "ORDER BY created_at").fetchall()
        queries = [e for e in events if e["type"] == "retrieval_query"]
        assert len(queries) == 3
        meta = json.loads(queries[0]["metadata_json"])
        assert queries[0]["content"] == "zanzibar chargebacks settlement"
        assert meta["filters"] == {"scope": "all", "types": [], "limit": 5}
        assert meta["results"][0]["id"] == added["id"] and isinstance(meta["results"][0]["score"], float)
        assert json.loads(queries[2]["metadata_json"])["filters"]["types"] == ["adr"]
        row = next(e for e in events if e["entry_id"] == decision["event_id"])
        assert row["rationale"] == "the ledger drifts otherwise"
        assert json.loads(row["metadata_json"])["related_files"] == ["src/retry.py"]
        chunk_ids = [r[0] for r in conn.execute("SELECT chunk_id FROM chunks WHERE doc_id=?", (doc["doc_id"],))]
        collection = conn.execute("SELECT value FROM meta WHERE key='chroma_collection'").fetchone()[0]

    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(world.home / "indexes" / "payflow" / "chroma"),
                                       settings=Settings(anonymized_telemetry=False))
    assert set(client.get_collection(collection).get(ids=chunk_ids, include=[])["ids"]) == set(chunk_ids)

    # a later ingest leaves the knowledge item alone, and it is still found
    ingest = run_cli("ingest", "--context", "payflow", "--json", env=world.env(CHINVEX_CONTEXT=""))
    assert ingest.code == 0, ingest
    assert ingest.json["sources"]["removed"] == 0

    async def again(client: Client):
        found = await call(client, "recall_search", query="zanzibar chargebacks", scope="project")
        assert found["results"][0]["id"] == added["id"]

    run_session(world, again)


def test_scopes_and_default_context(world):
    async def outside_with_global(client: Client):
        added = await call(client, "recall_add", type="pattern", title="Okapi naming convention",
                           content="Name okapi queues after the consuming service.", scope="global")
        assert added["context"] == "global" and added["id"].startswith("P-")
        msg = await call_error(client, "recall_add", "CONTEXT_NOT_FOUND", type="pattern", title="t", content="c")
        assert "No default context" in msg
        await call_error(client, "recall_search", "CONTEXT_NOT_FOUND", query="okapi", scope="project")
        await call_error(client, "chinvex_search", "CONTEXT_NOT_FOUND", query="webhook")
        await call_error(client, "flight_recorder_log", "CONTEXT_NOT_FOUND", type="observation", content="x")
        found = await call(client, "recall_search", query="okapi queues webhook retry settlement")
        # only the global context: never another project's data
        assert found["query_metadata"]["contexts"] == ["global"]
        assert [r["metadata"]["context"] for r in found["results"]] == ["global"]
        assert found["results"][0]["id"] == added["id"]
        listed = await call(client, "chinvex_list_contexts")
        assert listed["default_context"] is None and "No default context" in listed["default_error"]
        return added

    added = run_session(world, outside_with_global, args=("mcp",), cwd=world.outside)
    with world.db("global") as conn:
        assert conn.execute("SELECT scope FROM knowledge_items WHERE item_id=?", (added["id"],)).fetchone()[0] == "global"

    async def inside_repo(client: Client):
        listed = await call(client, "chinvex_list_contexts")
        assert listed["default_context"] == "payflow" and listed["default_resolved_by"] == "cwd"
        found = await call(client, "recall_search", query="okapi queues", scope="global")
        assert found["results"][0]["id"] == added["id"]
        hits = await call(client, "chinvex_search", query="webhook")
        assert hits["contexts"] == ["payflow"]

    run_session(world, inside_repo, args=("mcp",), cwd=world.repo / "src")

    async def from_env(client: Client):
        listed = await call(client, "chinvex_list_contexts")
        assert listed["default_context"] == "infra" and listed["default_resolved_by"] == "CHINVEX_CONTEXT"
        hits = await call(client, "chinvex_search", query="kubernetes autoscaler")
        assert hits["contexts"] == ["infra"]

    run_session(world, from_env, args=("mcp",), cwd=world.repo, env={"CHINVEX_CONTEXT": "infra"})

    async def unknown_flag(client: Client):
        msg = await call_error(client, "recall_search", "CONTEXT_NOT_FOUND", query="okapi")
        assert "Unknown context: nope" in msg
        await call(client, "recall_search", query="okapi", scope="global")

    run_session(world, unknown_flag, args=("mcp", "--context", "nope"))


def test_server_and_cli_infer_the_same_default_context(tmp_path):
    """One rule (chinvex/context/default.py) for both: for each working directory the server's
    default context (and how it was found) is the one `chinvex context show` picks there —
    the deepest source root of any include kind wins, a symlinked root still contains the real
    directory, and EDI_PROJECT_PATH helps a server started elsewhere."""
    proj, outside = tmp_path / "proj", tmp_path / "elsewhere"
    exports = proj / "exports"
    (exports / "2026").mkdir(parents=True)
    (proj / "src").mkdir()
    outside.mkdir()
    real_vault = tmp_path / "vault-real"
    (real_vault / "daily").mkdir(parents=True)
    (tmp_path / "vault").symlink_to(real_vault)
    world = World(home=tmp_path / "home", repo=proj, other=proj, outside=outside)
    base_env = {"CHINVEX_CONTEXT": "", "EDI_PROJECT_PATH": ""}
    _cli(world, "context", "create", "outer", "--repo", str(proj))
    _cli(world, "context", "create", "chats", "--chat-root", str(exports))
    _cli(world, "context", "create", "vault", "--note-root", str(tmp_path / "vault"))

    cases = [  # (cwd, extra env, expected context, resolved by)
        (proj / "src", {}, "outer", "cwd"),
        (exports / "2026", {}, "chats", "cwd"),
        (real_vault / "daily", {}, "vault", "cwd"),
        (outside, {"EDI_PROJECT_PATH": str(exports)}, "chats", "EDI_PROJECT_PATH"),
        (exports, {"CHINVEX_CONTEXT": "vault"}, "vault", "CHINVEX_CONTEXT"),
    ]
    for cwd, extra, expected, via in cases:
        env = {**base_env, **extra}

        async def body(client: Client):
            return await call(client, "chinvex_list_contexts")

        listed = run_session(world, body, args=("mcp",), cwd=cwd, env=env)
        assert (listed["default_context"], listed["default_resolved_by"]) == (expected, via), (cwd, extra, listed)
        shown = run_cli("context", "show", "--json", cwd=cwd, env=world.env(**env))
        assert shown.code == 0 and shown.json["context"]["name"] == expected, (cwd, extra, shown)

    async def nowhere(client: Client):
        return await call(client, "chinvex_list_contexts")

    listed = run_session(world, nowhere, args=("mcp",), cwd=outside, env=base_env)
    assert listed["default_context"] is None
    assert "No default context" in listed["default_error"] and "Contexts: chats, outer, vault" in listed["default_error"]
    refused = run_cli("context", "show", cwd=outside, env=world.env(**base_env))
    assert refused.code == 2 and "Contexts: chats, outer, vault" in refused.stderr, refused


# -- robustness ---------------------------------------------------------------------------------

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
