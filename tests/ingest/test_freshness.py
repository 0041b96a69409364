"""Issue 9: search results say when their source was indexed and whether it changed since, from a
cheap stat of the result's source, so an agent never presents deleted code as current."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from helpers import run_cli
from hostile import corpus as corpus_mod

ROLLOUT = "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"


@pytest.fixture
def ctx(tmp_path: Path, chinvex_home: Path):
    from chinvex.context.registry import Registry

    repo, chat, codex = tmp_path / "repo", tmp_path / "chat", tmp_path / "codex"
    for folder in (repo, chat, codex):
        folder.mkdir()
    (repo / "kept.py").write_text("def kept_function():\n    return 'keptmarker stays as indexed'\n")
    (repo / "edited.py").write_text("def edited_function():\n    return 'editedmarker before the edit'\n")
    (repo / "deleted.py").write_text("def deleted_function():\n    return 'deletedmarker will vanish'\n")
    (repo / "touched.py").write_text("def touched_function():\n    return 'touchedmarker same bytes'\n")
    corpus_mod.copy_file(corpus_mod.CHATGPT / "chatlore" / "conversations.json", chat / "conversations.json")
    corpus_mod.copy_file(corpus_mod.ROLLOUTS / "localpush" / "sessions" / "2026" / "02" / "23" / ROLLOUT,
                         codex / ROLLOUT)
    Registry().create("Fresh", includes={"repos": [str(repo)], "chat_roots": [str(chat)],
                                         "codex_session_roots": [str(codex)]})
    _ingest()
    return {"repo": repo, "chat": chat, "codex": codex, "home": chinvex_home}


def _config():
    from chinvex.context.registry import Registry

    return Registry().resolve("Fresh")


def _ingest():
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    summary = run_ingest(_config(), IngestOptions())
    assert summary.status == "completed", summary.errors
    return summary


def _results(query: str, **kw):
    from chinvex.retrieval.search import SearchRequest, Searcher

    searcher = Searcher()
    try:
        return searcher.search([_config()], SearchRequest(query=query, k=50, mode="fts", **kw)).results
    finally:
        searcher.close()


def _freshness_of(query: str, uri_part: str):
    found = [r for r in _results(query) if uri_part in r.source_uri]
    assert found, f"{query!r} found nothing from {uri_part}"
    return {(r.freshness.stale, r.freshness.reason) for r in found}, found


def test_untouched_modified_deleted_and_touched_files(ctx):
    repo = ctx["repo"]
    (repo / "edited.py").write_text("def edited_function():\n    return 'editedmarker after the edit, longer'\n")
    (repo / "deleted.py").unlink()
    stat = (repo / "touched.py").stat()
    os.utime(repo / "touched.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 3_000_000_000))

    flags, found = _freshness_of("keptmarker", "kept.py")
    assert flags == {(False, None)}
    assert found[0].freshness.indexed_at and found[0].freshness.indexed_at.endswith("Z")
    assert _freshness_of("editedmarker", "edited.py")[0] == {(True, "modified")}
    assert _freshness_of("deletedmarker", "deleted.py")[0] == {(True, "deleted")}
    # Same bytes, new mtime: the stat check cannot tell; it says modified until the next ingest.
    assert _freshness_of("touchedmarker", "touched.py")[0] == {(True, "modified")}

    before = found[0].freshness.indexed_at
    time.sleep(0.01)
    _ingest()
    assert _freshness_of("editedmarker", "edited.py")[0] == {(False, None)}
    assert _freshness_of("touchedmarker", "touched.py")[0] == {(False, None)}
    assert not [r for r in _results("deletedmarker") if "deleted.py" in r.source_uri]
    edited = _freshness_of("editedmarker", "edited.py")[1][0]
    assert edited.freshness.indexed_at > before  # rewritten, so indexed again
    assert _freshness_of("keptmarker", "kept.py")[1][0].freshness.indexed_at == before


def test_same_size_edit_is_caught_by_mtime(ctx):
    path = ctx["repo"] / "kept.py"
    original = path.read_text()
    time.sleep(0.01)
    path.write_text(original.replace("stays", "STAYS"))
    assert path.stat().st_size == len(original)
    assert _freshness_of("keptmarker", "kept.py")[0] == {(True, "modified")}


def test_conversations_inside_one_export_file(ctx):
    export = ctx["chat"] / "conversations.json"
    found = [r for r in _results("the") if r.source_type == "chat"]
    assert found and all("#" in r.source_uri for r in found)
    assert {r.freshness.stale for r in found} == {False}
    data = json.loads(export.read_text())
    data[0]["title"] = "renamed in a newer export"
    export.write_text(json.dumps(data))
    found = [r for r in _results("the") if r.source_type == "chat"]
    assert {(r.freshness.stale, r.freshness.reason) for r in found} == {(True, "modified")}
    export.unlink()
    found = [r for r in _results("the") if r.source_type == "chat"]
    assert {(r.freshness.stale, r.freshness.reason) for r in found} == {(True, "deleted")}


def test_growing_rollout_is_modified(ctx):
    rollout = ctx["codex"] / ROLLOUT
    found = _results("redacted text", source_types=["codex_session"])
    assert found and {r.freshness.stale for r in found} == {False}
    with open(rollout, "ab") as handle:
        handle.write(b'{"timestamp":"2026-02-23T14:00:00.000Z","type":"event_msg","payload":{"type":"user_message","message":"more"}}\n')
    found = _results("redacted text", source_types=["codex_session"])
    assert {(r.freshness.stale, r.freshness.reason) for r in found} == {(True, "modified")}


def test_app_server_threads_are_never_flagged_by_stat(ctx):
    """A codex://thread/ document has no file: its freshness is the thread's updatedAt, which
    ingest compares; the stat check must leave it alone."""
    db_path = ctx["home"] / "indexes" / "Fresh" / "hybrid.db"
    uri = "codex://thread/019c8a70-0000-7000-8000-000000000001"
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO documents(doc_id, source_type, source_uri, title, origin_uri, indexed_at) "
                     "VALUES('appthread0000001', 'codex_session', ?, 't', ?, '2026-01-01T00:00:00Z')", (uri, uri))
        conn.execute("INSERT INTO chunks(chunk_id, doc_id, chunk_index, text, search_text, embed_hash, "
                     "char_start, char_end) VALUES('appthreadck01', 'appthread0000001', 0, ?, ?, 'h', 0, 20)",
                     ("appservermarker text", "appservermarker text"))
        conn.execute("INSERT INTO source_fingerprints(source_uri, context_name, source_type, doc_id, "
                     "size_bytes, mtime_unix, thread_updated_at, parser_version, chunker_version, "
                     "last_ingested_at_unix, last_status) VALUES(?, 'Fresh', 'codex_session', "
                     "'appthread0000001', 123, 1, '2026-01-01T00:00:00Z', 'p', 'c', 1, 'ok')", (uri,))
    [result] = _results("appservermarker")
    assert result.source_uri == uri
    assert (result.freshness.stale, result.freshness.reason) == (False, None)
    assert result.freshness.indexed_at == "2026-01-01T00:00:00Z"


def test_folder_replaced_by_a_file_means_deleted(ctx):
    """`os.stat` of a path under something that is no longer a folder raises NotADirectoryError:
    the file is gone, not merely unreadable."""
    repo = ctx["repo"]
    moved = repo.parent / "repo-moved"
    repo.rename(moved)
    repo.write_text("now a file")
    assert _freshness_of("keptmarker", "kept.py")[0] == {(True, "deleted")}


def test_cli_shows_and_serialises_freshness(ctx):
    (ctx["repo"] / "deleted.py").unlink()
    data = run_cli("search", "--context", "Fresh", "deletedmarker", "--json", "--mode", "fts").json
    [hit] = [r for r in data["results"] if r["source_uri"].endswith("deleted.py")]
    assert hit["freshness"]["stale"] is True and hit["freshness"]["reason"] == "deleted"
    assert hit["freshness"]["indexed_at"]
    human = run_cli("search", "--context", "Fresh", "deletedmarker", "--mode", "fts")
    assert "[STALE: deleted]" in human.stdout


def test_answer_and_mcp_results_flag_a_deleted_source(ctx):
    """The flag reaches what agents read: the answer's evidence pack and the MCP tools."""
    import anyio
    from mcp import Client, StdioServerParameters

    from helpers import CHINVEX_BIN

    (ctx["repo"] / "deleted.py").unlink()
    doc = run_cli("answer", "--context", "Fresh", "--json", "What does deleted_function return?").json
    flags = {c["metadata"]["source_uri"].rsplit("/", 1)[-1]: c["metadata"]["freshness"]
             for c in doc["evidence_pack"]["chunks"]}
    assert flags.get("deleted.py") == {"stale": True, "reason": "deleted"}, flags
    assert flags.get("kept.py", {"stale": False})["stale"] is False

    async def session() -> tuple[dict, dict]:
        params = StdioServerParameters(command=str(CHINVEX_BIN), args=["mcp", "--context", "Fresh"],
                                       env={**os.environ, "CHINVEX_MCP_TOOLS": "all"}, cwd=str(ctx["repo"].parent))
        async with Client(params, mode="legacy", read_timeout_seconds=180) as client:
            search = await client.call_tool("chinvex_search", {"query": "deletedmarker", "k": 5})
            recall = await client.call_tool("recall_search", {"query": "deletedmarker", "limit": 5})
            assert not search.is_error and not recall.is_error
            return search.structured_content, recall.structured_content

    search, recall = anyio.run(session)
    [hit] = [r for r in search["results"] if r["source_uri"].endswith("deleted.py")]
    assert hit["freshness"]["stale"] is True and hit["freshness"]["reason"] == "deleted"
    [item] = [r for r in recall["results"] if r["metadata"].get("file_path", "").endswith("deleted.py")]
    assert item["metadata"]["stale"] is True and item["metadata"]["stale_reason"] == "deleted"
