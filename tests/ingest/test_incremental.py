"""Issue 3: incremental ingest of repositories and notes, end to end, with the real built-in
embedder and a real Chroma store: what a second run skips, re-embeds, refreshes or rebuilds, and
the reason it gives. Most ingests run the CLI in this process (conftest.run_cli_in_process); the
first test runs a real `chinvex` process. (Split from test_ingest.py; the shared helpers are
fixtures of tests/ingest/conftest.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import run_cli, run_cli_in_process


def test_seed_3_second_ingest_skips_unchanged(chinvex_home: Path, repo: Path, index_db,
                                              ingest_json):
    assert run_cli_in_process("context", "create", "Test", "--repo", str(repo)).code == 0
    first = run_cli("ingest", "--context", "Test", "--verbose")
    assert first.code == 0, first
    assert f"ingested: new_file  {repo / 'hello.py'}" in first.stdout
    second = run_cli("ingest", "--context", "Test", "--verbose")
    assert second.code == 0, second
    assert f"skipped: unchanged  {repo / 'hello.py'}" in second.stdout
    summary = ingest_json("Test").json
    assert summary["sources"]["unchanged"] == 2 and summary["sources"]["indexed"] == 0
    assert summary["chunks"]["embedded"] == 0
    with index_db(chinvex_home, "Test") as conn:
        runs = conn.execute("SELECT status, stats_json FROM ingest_runs ORDER BY started_at").fetchall()
    assert [r["status"] for r in runs] == ["completed"] * 3
    assert json.loads(runs[0]["stats_json"])["sources"]["indexed"] == 2


def test_editing_one_function_re_embeds_only_its_chunks(chinvex_home: Path, tmp_path: Path,
                                                        chunk_ids, vector_ids, ingest_json,
                                                        write_functions):
    root = tmp_path / "big"
    root.mkdir()
    target = root / "metrics.py"
    write_functions(target, 40)
    assert run_cli_in_process("context", "create", "Big", "--repo", str(root)).code == 0
    first = ingest_json("Big").json
    before = chunk_ids(chinvex_home, "Big")
    assert first["chunks"]["embedded"] == len(before) >= 20
    write_functions(target, 40, changed=17)
    second = ingest_json("Big").json
    after = chunk_ids(chinvex_home, "Big")
    changed = after - before
    assert 1 <= len(changed) <= 2, changed
    assert second["chunks"]["embedded"] == len(changed)
    assert second["chunks"]["deleted"] == len(before - after)
    assert vector_ids(chinvex_home, "Big") == after


def test_deleting_a_file_removes_it_from_search(chinvex_home: Path, repo: Path, index_db,
                                                chunk_ids, vector_ids, ingest_json):
    (repo / "unique.txt").write_text("The zanzibarian quokka protocol is deprecated.\n")
    assert run_cli_in_process("context", "create", "Del", "--repo", str(repo)).code == 0
    ingest_json("Del")
    hit = run_cli("search", "--context", "Del", "zanzibarian quokka", "--json").json
    assert hit["results"][0]["source_uri"] == str(repo / "unique.txt")
    (repo / "unique.txt").unlink()
    summary = ingest_json("Del").json
    assert summary["sources"]["removed"] == 1
    after = run_cli("search", "--context", "Del", "zanzibarian quokka", "--json").json
    assert all(r["source_uri"] != str(repo / "unique.txt") for r in after["results"])
    with index_db(chinvex_home, "Del") as conn:
        assert conn.execute("SELECT COUNT(*) FROM documents WHERE source_uri LIKE '%unique.txt'").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM source_fingerprints WHERE source_uri LIKE '%unique.txt'").fetchone()[0] == 0
    assert vector_ids(chinvex_home, "Del") == chunk_ids(chinvex_home, "Del")


def test_full_reingest_with_same_embedder_embeds_nothing(chinvex_home: Path, repo: Path,
                                                         ingest_json):
    assert run_cli_in_process("context", "create", "Full", "--repo", str(repo)).code == 0
    first = ingest_json("Full").json
    assert first["chunks"]["embedded"] > 0
    full = ingest_json("Full", "--full").json
    assert full["sources"]["indexed"] == 2
    assert full["sources"]["reasons"] == {"full_reingest": 2}
    assert full["chunks"]["embedded"] == 0


def test_touch_without_change_only_refreshes_fingerprint(chinvex_home: Path, repo: Path,
                                                         ingest_json):
    assert run_cli_in_process("context", "create", "Touch", "--repo", str(repo)).code == 0
    ingest_json("Touch")
    stat = (repo / "hello.py").stat()
    os.utime(repo / "hello.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    summary = ingest_json("Touch", "--verbose").json
    assert summary["sources"]["refreshed"] == 1 and summary["sources"]["indexed"] == 0
    assert summary["sources"]["reasons"] == {}
    assert [(d["action"], d["reason"], d["detail"]) for d in summary["decisions"]
            if d["source_uri"] == str(repo / "hello.py")] == [
        ("refreshed", "mtime_changed", "content unchanged")]
    assert ingest_json("Touch").json["sources"]["unchanged"] == 2


def test_same_size_edit_is_content_changed(chinvex_home: Path, repo: Path, ingest_json):
    """Same size, new mtime: the stored hash is compared and differs, so the reason says the
    content changed (not merely the mtime)."""
    assert run_cli_in_process("context", "create", "Same", "--repo", str(repo)).code == 0
    ingest_json("Same")
    target = repo / "hello.py"
    edited = target.read_text().replace("hello", "howdy").replace("greet", "salut")
    assert len(edited) == len(target.read_text()) and edited != target.read_text()
    stat = target.stat()
    target.write_text(edited)
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    summary = ingest_json("Same").json
    assert summary["sources"]["reasons"] == {"content_changed": 1}
    assert summary["sources"]["refreshed"] == 0 and summary["chunks"]["embedded"] >= 1
    found = run_cli("search", "--context", "Same", "salut howdy", "--json").json["results"]
    assert found and found[0]["source_uri"] == str(target) and "salut" in found[0]["text"]


def test_index_from_an_older_parser_or_chunker_is_rebuilt_with_that_reason(chinvex_home: Path,
                                                                         repo: Path, index_db,
                                                                         ingest_json):
    """An index written by an older chinvex (its fingerprints name older parser and chunker
    versions) is re-read on the next ingest although no file changed; unchanged chunk texts
    keep their vectors, so nothing is embedded again."""
    assert run_cli_in_process("context", "create", "Old", "--repo", str(repo)).code == 0
    ingest_json("Old")
    with index_db(chinvex_home, "Old") as conn:
        conn.execute("UPDATE source_fingerprints SET parser_version='repo-0' WHERE source_uri=?",
                     (str(repo / "hello.py"),))
        conn.execute("UPDATE source_fingerprints SET chunker_version='chunker-0' WHERE source_uri=?",
                     (str(repo / "README.md"),))
    summary = ingest_json("Old").json
    assert summary["sources"]["reasons"] == {"chunker_upgraded": 1, "parser_upgraded": 1}
    assert summary["chunks"]["embedded"] == 0
    with index_db(chinvex_home, "Old") as conn:
        versions = {r[0] for r in conn.execute("SELECT parser_version || chunker_version FROM source_fingerprints")}
    assert not any("repo-0" in v or "chunker-0" in v for v in versions)
    assert ingest_json("Old").json["sources"]["unchanged"] == 2


def test_full_after_an_embedder_change_reports_embed_model_changed(chinvex_home: Path, repo: Path,
                                                                   monkeypatch: pytest.MonkeyPatch, chunk_ids, vector_ids, ingest_json):
    """`ingest --full` is what the refusal to mix models asks for; its reason then says why
    each source is embedded again, rather than only that --full was given."""
    from loopback_servers import FakeOllama, serve_embeddings

    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)  # the loopback server must not be reached via a proxy
    assert run_cli_in_process("context", "create", "Model", "--repo", str(repo)).code == 0
    path = chinvex_home / "contexts" / "Model" / "context.json"
    data = json.loads(path.read_text())
    server = FakeOllama(serve_embeddings(dim=16, models=("mxbai-embed-large",)))
    try:
        path.write_text(json.dumps({**data, "embedding": {"provider": "ollama", "host": server.host}}))
        first = ingest_json("Model").json
        assert first["embedder"] == "ollama:mxbai-embed-large" and first["chunks"]["embedded"] >= 2
    finally:
        server.close()
    path.write_text(json.dumps({**data, "embedding": {"provider": "builtin"}}))
    assert ingest_json("Model").json["error"]["code"] == "EMBEDDER_MISMATCH"
    full = ingest_json("Model", "--full").json
    assert full["ok"] and full["embedder"].startswith("builtin:")
    assert full["sources"]["reasons"] == {"embed_model_changed": 2}
    chunks = chunk_ids(chinvex_home, "Model")
    assert full["chunks"]["embedded"] == len(chunks) and vector_ids(chinvex_home, "Model") == chunks
    again = ingest_json("Model", "--full").json
    assert again["sources"]["reasons"] == {"full_reingest": 2} and again["chunks"]["embedded"] == 0
