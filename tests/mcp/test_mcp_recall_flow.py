"""`chinvex mcp`'s RECALL flow end to end (issue 8): memories added, searched, fetched and judged,
the flight recorder, their rows in hybrid.db and vectors in Chroma, RECALL scopes and the default
context the server and the CLI infer alike."""

from __future__ import annotations

import json
import re
from typing import Any

from helpers import run_cli, run_cli_in_process
from mcp import Client
from mcp_harness import World, _cli, call, call_error, run_session

# -- RECALL -------------------------------------------------------------------------------------

EDI_ENV = {"EDI_SESSION_ID": "edi-session-7", "EDI_AGENT_MODE": "architect", "EDI_GIT_BRANCH": "feature/x",
           "EDI_GIT_SHA": "0badc0d", "EDI_PROJECT_PATH": "/home/dev/payflow", "EDI_PROJECT_NAME": "payflow"}


CHARGEBACK_RULE = ("Chargebacks from the zanzibar acquirer arrive as CSV at 02:00 UTC; import them before "
                   "settlement reconciliation or the ledger drifts.")


async def _recall_flow(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
    """recall_add, recall_search, recall_get, recall_feedback and flight_recorder_log in one
    session (with EDI's variables), their error paths included; the memory added and the
    decision logged."""
    content = CHARGEBACK_RULE
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


def _assert_rows_recorded(world: World, added: dict[str, Any], decision: dict[str, Any]) -> tuple[list[str], str]:
    """The memory's row and document, its feedback, stats and flight-recorder entries in
    hybrid.db; its chunk ids and the Chroma collection they should be in."""
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
    return chunk_ids, collection


def _assert_vectors_stored(world: World, chunk_ids: list[str], collection: str) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(world.home / "indexes" / "payflow" / "chroma"),
                                       settings=Settings(anonymized_telemetry=False))
    assert set(client.get_collection(collection).get(ids=chunk_ids, include=[])["ids"]) == set(chunk_ids)


def test_recall_add_search_get_feedback_and_flight_recorder(world):
    added, decision = run_session(world, _recall_flow, env=EDI_ENV)
    chunk_ids, collection = _assert_rows_recorded(world, added, decision)
    _assert_vectors_stored(world, chunk_ids, collection)

    # a later ingest leaves the knowledge item alone, and it is still found
    ingest = run_cli_in_process("ingest", "--context", "payflow", "--json", env=world.env(CHINVEX_CONTEXT=""))
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
        shown = run_cli_in_process("context", "show", "--json", cwd=cwd, env=world.env(**env))
        assert shown.code == 0 and shown.json["context"]["name"] == expected, (cwd, extra, shown)

    async def nowhere(client: Client):
        return await call(client, "chinvex_list_contexts")

    listed = run_session(world, nowhere, args=("mcp",), cwd=outside, env=base_env)
    assert listed["default_context"] is None
    assert "No default context" in listed["default_error"] and "Contexts: chats, outer, vault" in listed["default_error"]
    refused = run_cli("context", "show", cwd=outside, env=world.env(**base_env))
    assert refused.code == 2 and "Contexts: chats, outer, vault" in refused.stderr, refused


# -- robustness ---------------------------------------------------------------------------------

