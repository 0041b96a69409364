"""Issue 8, in process: the MCP tools as plain functions of a ServerState (no MCP transport),
with a real registry, real hybrid.db, the real built-in embedder and a real Chroma store."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from chinvex.context.registry import Registry
from chinvex.mcp import limits as L
from chinvex.mcp import recall_add as recall_add_tool
from chinvex.mcp import recall_get as recall_get_tool
from chinvex.mcp import tools as T
from chinvex.mcp.limits import ToolFailure
from chinvex.mcp.recall_search import JUDGE_REMINDER
from chinvex.mcp.state import ServerState
from chinvex.memory.feedback import count_retrievals, memory_stats, record_feedback
from chinvex.memory.items import edi_metadata
from chinvex.memory.vocabulary import (
    MEMORY_ID,
    new_memory_id,
    result_type,
    source_types_for,
    type_matches,
)


def _ok(fn, state, **kwargs):
    ok, payload = T.run_tool(fn, state, **kwargs)
    assert ok, payload
    return payload


def _err(fn, state, code, **kwargs):
    ok, payload = T.run_tool(fn, state, **kwargs)
    assert not ok, payload
    assert payload["ok"] is False and payload["error"]["code"] == code, payload
    return payload["error"]["message"]


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name in ("a", "a/inner", "b", "outside", "notes"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
        out[name] = tmp_path / name
    return out


# -- limits -------------------------------------------------------------------------------------

def test_query_limits():
    assert L.require_query("  hello ") == "  hello "
    with pytest.raises(ToolFailure) as exc:
        L.require_query(" \n\t ")
    assert exc.value.code == L.EMPTY_QUERY
    L.require_query("x" * L.QUERY_MAX_BYTES)
    with pytest.raises(ToolFailure) as exc:
        L.require_query("x" * (L.QUERY_MAX_BYTES + 1))
    assert exc.value.code == L.INVALID_ARGUMENT and "10.0 KB" in exc.value.message
    # the limit is in bytes: 4000 three-byte characters are 12 000 bytes
    with pytest.raises(ToolFailure):
        L.require_query("€" * 4000)


def test_other_limits():
    with pytest.raises(ToolFailure):
        L.require_range("k", 0, 1, 50)
    with pytest.raises(ToolFailure):
        L.require_range("k", True, 1, 50)
    assert L.require_range("k", 50, 1, 50) == 50
    assert L.require_list("tags", ["a", " a ", "b"], max_items=3, max_chars=5) == ["a", "b"]
    with pytest.raises(ToolFailure):
        L.require_list("tags", ["x"] * 4, max_items=3, max_chars=5)
    with pytest.raises(ToolFailure):
        L.require_short("title", "two\nlines", max_chars=100)
    with pytest.raises(ToolFailure):
        L.require_text("content", "x" * (L.CONTENT_MAX_BYTES + 1), max_bytes=L.CONTENT_MAX_BYTES)
    with pytest.raises(ToolFailure):
        L.check_json_size("metadata", {"blob": "x" * (L.METADATA_MAX_BYTES + 10)})
    payload = ToolFailure(L.NOT_FOUND, "gone", id="x").payload()
    assert payload == {"ok": False, "error": {"code": "NOT_FOUND", "message": "gone", "details": {"id": "x"}}}


# -- RECALL vocabulary --------------------------------------------------------------------------

def test_id_prefixes_follow_codex():
    expected = {"pattern": "P", "failure": "F", "decision": "D", "adr": "D", "context": "C",
                "code": "X", "doc": "O", "documentation": "O", "runbook": "R", "playbook": "R",
                "lesson": "I", "note": "I", "whatever": "I", "Decision": "D"}
    for item_type, prefix in expected.items():
        item_id = new_memory_id(item_type)
        assert MEMORY_ID.match(item_id), item_id
        assert item_id.startswith(prefix + "-"), (item_type, item_id)
    assert len({new_memory_id("pattern") for _ in range(200)}) == 200


def test_result_types_and_filters():
    assert result_type("repo", {"kind": "code"}, None) == "code"
    assert result_type("repo", {"kind": "markdown"}, None) == "doc"
    assert result_type("note", {"kind": "markdown"}, None) == "doc"
    assert result_type("codex_session", {}, None) == "session"
    assert result_type("memory", {}, {"type": "ADR"}) == "decision"
    assert source_types_for(["session"]) == ["codex_session", "agent_session", "chat"]
    assert source_types_for(["decision"]) == ["memory"]
    assert set(source_types_for(["code", "documentation"])) == {"repo", "memory", "note"}
    assert source_types_for(["note"]) == ["note"]
    assert type_matches("decision", "memory", ["adr"])
    assert not type_matches("code", "repo", ["decision"])


def test_edi_metadata_is_injected_without_secrets():
    env = {"EDI_SESSION_ID": "s-1", "EDI_AGENT_MODE": "coder", "EDI_GIT_BRANCH": "main",
           "EDI_GIT_SHA": "abc1234", "EDI_PROJECT_PATH": "/p", "EDI_PROJECT_NAME": "p",
           "EDI_AGENT": "architect", "EDI_API_KEY": "sk-secret", "EDI_EMPTY": " ", "PATH": "/bin"}
    meta = edi_metadata(env)
    assert meta == {"edi_session_id": "s-1", "edi_agent_mode": "coder", "edi_git_branch": "main",
                    "edi_git_sha": "abc1234", "edi_project_path": "/p", "edi_project_name": "p",
                    "edi_agent": "architect"}


# -- scope resolution ---------------------------------------------------------------------------

def test_project_context_resolution(dirs):
    reg = Registry()
    reg.create("alpha", includes={"repos": [str(dirs["a"])]})
    reg.create("inner", includes={"repos": [str(dirs["a/inner"])]})
    reg.create("beta", includes={"note_roots": [str(dirs["b"])]}, aliases=["bb"])

    assert ServerState(cwd=dirs["a"]).project().name == "alpha"
    deeper = dirs["a/inner"] / "pkg"
    deeper.mkdir()
    assert ServerState(cwd=deeper).project().name == "inner"  # the deepest root wins
    state = ServerState(cwd=dirs["b"])
    assert state.project().name == "beta" and state.resolution().via == "cwd"
    # flag, then env, before the working directory
    assert ServerState("bb", cwd=dirs["a"]).project().name == "beta"
    assert ServerState(cwd=dirs["a"], env={"CHINVEX_CONTEXT": "beta"}).project().name == "beta"
    assert ServerState("alpha", cwd=dirs["b"], env={"CHINVEX_CONTEXT": "beta"}).project().name == "alpha"
    # EDI's project path helps when the server runs elsewhere
    assert ServerState(cwd=dirs["outside"], env={"EDI_PROJECT_PATH": str(dirs["b"])}).project().name == "beta"

    with pytest.raises(ToolFailure) as exc:
        ServerState(cwd=dirs["outside"], env={}).project()
    assert exc.value.code == L.CONTEXT_NOT_FOUND and "No default context" in exc.value.message
    # a name that was given but does not exist never falls back to the working directory
    with pytest.raises(ToolFailure) as exc:
        ServerState("nope", cwd=dirs["a"]).project()
    assert exc.value.code == L.CONTEXT_NOT_FOUND and "Unknown context: nope" in exc.value.message
    with pytest.raises(ToolFailure):
        ServerState(cwd=dirs["a"], env={"CHINVEX_CONTEXT": "nope"}).project()


def test_two_contexts_claiming_the_directory_is_an_error(dirs):
    reg = Registry()
    reg.create("one", includes={"repos": [str(dirs["a"])]})
    reg.create("two", includes={"note_roots": [str(dirs["a"])]})
    with pytest.raises(ToolFailure) as exc:
        ServerState(cwd=dirs["a"]).project()
    assert "one, two" in exc.value.message


def test_scopes(dirs):
    reg = Registry()
    reg.create("alpha", includes={"repos": [str(dirs["a"])]})
    inside = ServerState(cwd=dirs["a"], env={})
    outside = ServerState(cwd=dirs["outside"], env={})
    configs, warnings = T.scope_contexts(inside, "all")
    assert [c.name for c in configs] == ["alpha"] and "no 'global' context" in warnings[0]
    with pytest.raises(ToolFailure):
        T.scope_contexts(inside, "global")
    with pytest.raises(ToolFailure):
        T.scope_contexts(outside, "all")
    reg.create("global")
    assert [c.name for c in T.scope_contexts(inside, "all")[0]] == ["alpha", "global"]
    configs, warnings = T.scope_contexts(outside, "all")
    assert [c.name for c in configs] == ["global"] and "searched 'global' only" in warnings[0]
    with pytest.raises(ToolFailure):
        T.scope_contexts(outside, "project")
    # an explicitly named project that does not exist is an error even with a global context
    with pytest.raises(ToolFailure):
        T.scope_contexts(ServerState("missing", cwd=dirs["outside"]), "all")


# -- storage helpers ----------------------------------------------------------------------------

def test_feedback_counts_and_rate(tmp_path):
    from chinvex.storage import db

    conn = db.connect(tmp_path / "h.db", create=True)
    count_retrievals(conn, ["P-00000001", "P-00000001", "abcdefabcdef"])
    stats = memory_stats(conn, "P-00000001")
    assert stats["retrieval_count"] == 1 and stats["usefulness_rate"] == 0.0
    count_retrievals(conn, ["P-00000001"])
    record_feedback(conn, item_id="P-00000001", session_id="s", kind="useful", context="yes", duplicate_of=None)
    record_feedback(conn, item_id="P-00000001", session_id="s", kind="duplicate", context=None,
                      duplicate_of="P-00000002")
    stats = memory_stats(conn, "P-00000001")
    assert stats["useful_count"] == 1 and stats["duplicate_count"] == 1 and stats["retrieval_count"] == 2
    assert stats["usefulness_rate"] == 0.5 and stats["flagged_duplicate_of"] == "P-00000002"
    # more judgements than retrievals never give a rate above 1
    record_feedback(conn, item_id="nevercounted", session_id="s", kind="useful", context=None, duplicate_of=None)
    assert memory_stats(conn, "nevercounted")["usefulness_rate"] == 1.0
    rows = conn.execute("SELECT feedback, useful FROM feedback ORDER BY created_at").fetchall()
    assert [(r[0], r[1]) for r in rows] == [("useful", 1), ("duplicate", None), ("useful", 1)]
    assert memory_stats(conn, "unknown")["usefulness_rate"] is None


def test_parent_content_rebuilds_overlapping_chunks(tmp_path):
    from chinvex.storage import db

    conn = db.connect(tmp_path / "h.db", create=True)
    text = "alpha beta gamma delta epsilon"
    conn.execute("INSERT INTO documents(doc_id, source_type, source_uri, origin_uri) VALUES('d','note','/x','/x')")
    for index, (start, end) in enumerate([(0, 16), (11, 30)]):
        conn.execute("INSERT INTO chunks(chunk_id, doc_id, chunk_index, text, search_text, embed_hash, char_start, "
                     "char_end) VALUES(?,?,?,?,?,?,?,?)", (f"c{index}", "d", index, text[start:end], "s", "h", start, end))
    assert recall_get_tool._parent_content(conn, "d") == text


# -- the RECALL flow in process -----------------------------------------------------------------

@pytest.fixture
def project(dirs):
    (dirs["a"] / "billing.md").write_text(
        "# Billing\n\nInvoices are generated nightly by the ledger reconciliation job.\n", encoding="utf-8")
    Registry().create("alpha", includes={"repos": [str(dirs["a"])]})
    return ServerState(cwd=dirs["a"], env={"EDI_SESSION_ID": "sess-42", "EDI_AGENT_MODE": "coder"})


def test_recall_flow_in_process(project):
    state = project
    added = _ok(T.recall_add, state, type="failure", title="Flaky ledger reconciliation",
                content="The nightly reconciliation job times out when the quokka cache is cold; warm it first.",
                tags=["ledger", "ledger", "ops"])
    assert added["indexed"] and MEMORY_ID.match(added["id"]) and added["id"].startswith("F-")
    assert added["metadata"]["edi_session_id"] == "sess-42" and added["context"] == "alpha"

    found = _ok(T.recall_search, state, query="quokka cache reconciliation timeout", limit=5)
    assert found["results"][0]["id"] == added["id"]
    assert found["results"][0]["metadata"]["tags"] == ["ledger", "ops"]
    assert found["_judge_reminder"] == JUDGE_REMINDER
    only_code = _ok(T.recall_search, state, query="quokka cache reconciliation", types=["code"])
    assert all(r["id"] != added["id"] for r in only_code["results"])

    got = _ok(T.recall_get, state, id=added["id"])
    assert got["content"].startswith("The nightly reconciliation job") and got["type"] == "failure"
    assert got["metadata"]["item_stats"]["retrieval_count"] == 1
    fb = _ok(T.recall_feedback, state, item_id=added["id"], feedback="outdated", context="cache removed")
    assert fb["item_stats"]["outdated_count"] == 1 and fb["item_stats"]["flagged_outdated"]
    _err(T.recall_feedback, state, L.INVALID_ARGUMENT, item_id=added["id"])
    _err(T.recall_feedback, state, L.INVALID_ARGUMENT, item_id=added["id"], useful=True, feedback="not_useful")
    _err(T.recall_feedback, state, L.NOT_FOUND, item_id="P-deadbeef", useful=True)
    _err(T.recall_get, state, L.NOT_FOUND, id="P-deadbeef")
    _err(T.recall_add, state, L.INVALID_ARGUMENT, type="pattern", title="t", content=" ")
    _err(T.recall_add, state, L.CONTEXT_NOT_FOUND, type="pattern", title="t", content="c", scope="global")

    logged = _ok(T.flight_recorder_log, state, type="milestone", content="reconciliation fixed",
                 metadata={"ticket": 7}, resolution="warmed the cache")
    conn = sqlite3.connect(Registry().resolve("alpha").index.sqlite_path)
    rows = conn.execute("SELECT type, session_id, metadata_json FROM flight_recorder ORDER BY created_at").fetchall()
    assert [r[0] for r in rows].count("retrieval_query") == 2
    assert rows[-1][0] == "milestone" and rows[-1][1] == "sess-42" and '"ticket":7' in rows[-1][2]
    assert logged["session_id"] == "sess-42"


def test_secrets_in_an_item_are_redacted(project):
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    added = _ok(T.recall_add, project, type="runbook", title="Deploy", content=f"export GITHUB_TOKEN={key}\nthen deploy")
    assert added["redactions"] and added["id"].startswith("R-")
    got = _ok(T.recall_get, project, id=added["id"])
    assert key not in got["content"] and "[REDACTED:" in got["content"]


def test_item_added_while_an_ingest_holds_the_context_is_indexed_later(project, monkeypatch):
    from chinvex.locking import context_lock

    monkeypatch.setattr(recall_add_tool, "LOCK_WAIT_S", 0.2)
    config = Registry().resolve("alpha")
    with context_lock(config, purpose="ingest (test)"):
        added = _ok(T.recall_add, project, type="pattern", title="Wombat retries",
                    content="Use the wombat retry budget for flaky upstreams.")
    assert added["indexed"] is False and "being written by another process" in added["warning"]
    assert _ok(T.recall_get, project, id=added["id"])["metadata"]["indexed"] is False
    found = _ok(T.recall_search, project, query="wombat retry budget")
    assert found["results"] and found["results"][0]["id"] == added["id"]
    assert _ok(T.recall_get, project, id=added["id"])["metadata"]["indexed"] is True


def test_item_is_kept_when_the_index_has_another_embedder(project):
    from chinvex.storage import db

    config = Registry().resolve("alpha")
    conn = db.connect(Path(config.index.sqlite_path))
    db.set_meta(conn, "embedder", "ollama:some-other-model")
    conn.close()
    added = _ok(T.recall_add, project, type="decision", title="Keep it", content="Never lose the platypus note.")
    assert added["indexed"] is False and "ingest --context alpha --full" in added["warning"]
    assert _ok(T.recall_get, project, id=added["id"])["content"] == "Never lose the platypus note."


def test_concurrent_adds_in_one_process(project):
    results: list = []

    def add(i: int) -> None:
        results.append(T.run_tool(T.recall_add, project, type="context", title=f"Fact {i}",
                                  content=f"Fact number {i} about the narwhal{i} subsystem."))

    threads = [threading.Thread(target=add, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(ok and payload["indexed"] for ok, payload in results), results
    for i in range(6):
        found = _ok(T.recall_search, project, query=f"narwhal{i}", limit=3)
        assert found["results"][0]["title"] == f"Fact {i}"
