"""Issue 3: incremental ingest of repositories and notes, end to end, with the real built-in
embedder and a real Chroma store.

Most ingests run the CLI in this process (conftest.run_cli_in_process); the first test, the
error exit of a missing root, a busy context, the progress display and `stats` in human form
run a real `chinvex` process, and searches always do."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import assert_no_traceback, run_cli, run_cli_in_process, without_dac_override


def _db(home: Path, context: str) -> sqlite3.Connection:
    conn = sqlite3.connect(home / "indexes" / context / "hybrid.db")
    conn.row_factory = sqlite3.Row
    return conn


def _chunk_ids(home: Path, context: str) -> set[str]:
    with _db(home, context) as conn:
        return {r[0] for r in conn.execute("SELECT chunk_id FROM chunks")}


def _vector_ids(home: Path, context: str) -> set[str]:
    import chromadb
    from chromadb.config import Settings

    with _db(home, context) as conn:
        name = conn.execute("SELECT value FROM meta WHERE key='chroma_collection'").fetchone()[0]
    client = chromadb.PersistentClient(path=str(home / "indexes" / context / "chroma"),
                                       settings=Settings(anonymized_telemetry=False))
    try:
        return set(client.get_collection(name).get(include=[])["ids"])
    finally:
        client.close()  # the next command reads the store from its files, not through this client


def _ingest(context: str, *extra: str):
    result = run_cli_in_process("ingest", "--context", context, "--json", *extra)
    assert_no_traceback(result)
    return result


def _write_functions(path: Path, count: int, changed: int | None = None) -> None:
    parts = ['"""A module with many independent functions."""\n']
    for i in range(count):
        body = f"return value * {i} + {i * 7}" if i != changed else "return sum(range(value)) - 42  # edited"
        parts.append(textwrap.dedent(f'''
            def compute_metric_{i}(value: int) -> int:
                """Compute metric number {i} for the quarterly {['sales', 'churn', 'growth', 'margin'][i % 4]} report.

                It exists so that each function is its own chunk in this test; the text is long
                enough that neighbouring functions are not merged into one chunk by the chunker,
                which merges small siblings up to the embedder's window.
                """
                adjusted = value + {i}
                if adjusted > {i * 13}:
                    adjusted -= {i}
                {body}
            '''))
    path.write_text("".join(parts))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "hello.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    (root / "README.md").write_text("# Demo\n\nThe frobnicator turns widgets into gadgets.\n")
    return root


def test_seed_3_second_ingest_skips_unchanged(chinvex_home: Path, repo: Path):
    assert run_cli_in_process("context", "create", "Test", "--repo", str(repo)).code == 0
    first = run_cli("ingest", "--context", "Test", "--verbose")
    assert first.code == 0, first
    assert f"ingested: new_file  {repo / 'hello.py'}" in first.stdout
    second = run_cli("ingest", "--context", "Test", "--verbose")
    assert second.code == 0, second
    assert f"skipped: unchanged  {repo / 'hello.py'}" in second.stdout
    summary = _ingest("Test").json
    assert summary["sources"]["unchanged"] == 2 and summary["sources"]["indexed"] == 0
    assert summary["chunks"]["embedded"] == 0
    with _db(chinvex_home, "Test") as conn:
        runs = conn.execute("SELECT status, stats_json FROM ingest_runs ORDER BY started_at").fetchall()
    assert [r["status"] for r in runs] == ["completed"] * 3
    assert json.loads(runs[0]["stats_json"])["sources"]["indexed"] == 2


def test_editing_one_function_re_embeds_only_its_chunks(chinvex_home: Path, tmp_path: Path):
    root = tmp_path / "big"
    root.mkdir()
    target = root / "metrics.py"
    _write_functions(target, 40)
    assert run_cli_in_process("context", "create", "Big", "--repo", str(root)).code == 0
    first = _ingest("Big").json
    before = _chunk_ids(chinvex_home, "Big")
    assert first["chunks"]["embedded"] == len(before) >= 20
    _write_functions(target, 40, changed=17)
    second = _ingest("Big").json
    after = _chunk_ids(chinvex_home, "Big")
    changed = after - before
    assert 1 <= len(changed) <= 2, changed
    assert second["chunks"]["embedded"] == len(changed)
    assert second["chunks"]["deleted"] == len(before - after)
    assert _vector_ids(chinvex_home, "Big") == after


def test_deleting_a_file_removes_it_from_search(chinvex_home: Path, repo: Path):
    (repo / "unique.txt").write_text("The zanzibarian quokka protocol is deprecated.\n")
    assert run_cli_in_process("context", "create", "Del", "--repo", str(repo)).code == 0
    _ingest("Del")
    hit = run_cli("search", "--context", "Del", "zanzibarian quokka", "--json").json
    assert hit["results"][0]["source_uri"] == str(repo / "unique.txt")
    (repo / "unique.txt").unlink()
    summary = _ingest("Del").json
    assert summary["sources"]["removed"] == 1
    after = run_cli("search", "--context", "Del", "zanzibarian quokka", "--json").json
    assert all(r["source_uri"] != str(repo / "unique.txt") for r in after["results"])
    with _db(chinvex_home, "Del") as conn:
        assert conn.execute("SELECT COUNT(*) FROM documents WHERE source_uri LIKE '%unique.txt'").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM source_fingerprints WHERE source_uri LIKE '%unique.txt'").fetchone()[0] == 0
    assert _vector_ids(chinvex_home, "Del") == _chunk_ids(chinvex_home, "Del")


def test_full_reingest_with_same_embedder_embeds_nothing(chinvex_home: Path, repo: Path):
    assert run_cli_in_process("context", "create", "Full", "--repo", str(repo)).code == 0
    first = _ingest("Full").json
    assert first["chunks"]["embedded"] > 0
    full = _ingest("Full", "--full").json
    assert full["sources"]["indexed"] == 2
    assert full["sources"]["reasons"] == {"full_reingest": 2}
    assert full["chunks"]["embedded"] == 0


def test_touch_without_change_only_refreshes_fingerprint(chinvex_home: Path, repo: Path):
    assert run_cli_in_process("context", "create", "Touch", "--repo", str(repo)).code == 0
    _ingest("Touch")
    stat = (repo / "hello.py").stat()
    os.utime(repo / "hello.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    summary = _ingest("Touch", "--verbose").json
    assert summary["sources"]["refreshed"] == 1 and summary["sources"]["indexed"] == 0
    assert summary["sources"]["reasons"] == {}
    assert [(d["action"], d["reason"], d["detail"]) for d in summary["decisions"]
            if d["source_uri"] == str(repo / "hello.py")] == [
        ("refreshed", "mtime_changed", "content unchanged")]
    assert _ingest("Touch").json["sources"]["unchanged"] == 2


def test_same_size_edit_is_content_changed(chinvex_home: Path, repo: Path):
    """Same size, new mtime: the stored hash is compared and differs, so the reason says the
    content changed (not merely the mtime)."""
    assert run_cli_in_process("context", "create", "Same", "--repo", str(repo)).code == 0
    _ingest("Same")
    target = repo / "hello.py"
    edited = target.read_text().replace("hello", "howdy").replace("greet", "salut")
    assert len(edited) == len(target.read_text()) and edited != target.read_text()
    stat = target.stat()
    target.write_text(edited)
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    summary = _ingest("Same").json
    assert summary["sources"]["reasons"] == {"content_changed": 1}
    assert summary["sources"]["refreshed"] == 0 and summary["chunks"]["embedded"] >= 1
    found = run_cli("search", "--context", "Same", "salut howdy", "--json").json["results"]
    assert found and found[0]["source_uri"] == str(target) and "salut" in found[0]["text"]


def test_index_from_an_older_parser_or_chunker_is_rebuilt_with_that_reason(chinvex_home: Path,
                                                                         repo: Path):
    """An index written by an older chinvex (its fingerprints name older parser and chunker
    versions) is re-read on the next ingest although no file changed; unchanged chunk texts
    keep their vectors, so nothing is embedded again."""
    assert run_cli_in_process("context", "create", "Old", "--repo", str(repo)).code == 0
    _ingest("Old")
    with _db(chinvex_home, "Old") as conn:
        conn.execute("UPDATE source_fingerprints SET parser_version='repo-0' WHERE source_uri=?",
                     (str(repo / "hello.py"),))
        conn.execute("UPDATE source_fingerprints SET chunker_version='chunker-0' WHERE source_uri=?",
                     (str(repo / "README.md"),))
    summary = _ingest("Old").json
    assert summary["sources"]["reasons"] == {"chunker_upgraded": 1, "parser_upgraded": 1}
    assert summary["chunks"]["embedded"] == 0
    with _db(chinvex_home, "Old") as conn:
        versions = {r[0] for r in conn.execute("SELECT parser_version || chunker_version FROM source_fingerprints")}
    assert not any("repo-0" in v or "chunker-0" in v for v in versions)
    assert _ingest("Old").json["sources"]["unchanged"] == 2


def test_full_after_an_embedder_change_reports_embed_model_changed(chinvex_home: Path, repo: Path,
                                                                   monkeypatch: pytest.MonkeyPatch):
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
        first = _ingest("Model").json
        assert first["embedder"] == "ollama:mxbai-embed-large" and first["chunks"]["embedded"] >= 2
    finally:
        server.close()
    path.write_text(json.dumps({**data, "embedding": {"provider": "builtin"}}))
    assert _ingest("Model").json["error"]["code"] == "EMBEDDER_MISMATCH"
    full = _ingest("Model", "--full").json
    assert full["ok"] and full["embedder"].startswith("builtin:")
    assert full["sources"]["reasons"] == {"embed_model_changed": 2}
    chunks = _chunk_ids(chinvex_home, "Model")
    assert full["chunks"]["embedded"] == len(chunks) and _vector_ids(chinvex_home, "Model") == chunks
    again = _ingest("Model", "--full").json
    assert again["sources"]["reasons"] == {"full_reingest": 2} and again["chunks"]["embedded"] == 0


def test_removed_source_root_leaves_the_index(chinvex_home: Path, repo: Path, tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "idea.md").write_text("# Idea\n\nA note about the flux capacitor.\n")
    assert run_cli_in_process("context", "create", "Roots", "--repo", str(repo), "--note-root", str(notes)).code == 0
    _ingest("Roots")
    assert run_cli_in_process("context", "remove-source", "Roots", str(notes)).code == 0
    summary = _ingest("Roots").json
    assert summary["sources"]["removed"] == 1
    with _db(chinvex_home, "Roots") as conn:
        types = {r[0] for r in conn.execute("SELECT DISTINCT source_type FROM documents")}
    assert types == {"repo"}


def test_missing_repo_path_is_an_error_and_keeps_its_index(chinvex_home: Path, repo: Path, tmp_path: Path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.py").write_text("def keep():\n    return 'kept'\n")
    assert run_cli_in_process("context", "create", "Miss", "--repo", str(repo), "--repo", str(other)).code == 0
    _ingest("Miss")
    before = _chunk_ids(chinvex_home, "Miss")
    moved = tmp_path / "other-moved"
    other.rename(moved)
    (repo / "new.py").write_text("def fresh():\n    return 'new file still indexed'\n")
    result = _ingest("Miss")
    assert result.code == 0, result  # one unreachable root does not fail the run...
    assert result.json["ok"] is False
    errors = result.json["errors"]
    assert len(errors) == 1 and str(other) in errors[0]["message"]
    assert result.json["sources"]["indexed"] == 1  # the new file in the healthy repo
    after = _chunk_ids(chinvex_home, "Miss")
    assert before <= after, "chunks of the unreachable root must not be deleted"
    human = run_cli("ingest", "--context", "Miss")
    assert human.code == 0 and str(other) in human.stdout and "1 failed" in human.stdout
    assert_no_traceback(human)
    strict = run_cli("ingest", "--context", "Miss", "--strict")  # ...unless asked to
    assert strict.code == 1 and str(other) in strict.stdout
    assert_no_traceback(strict)


def test_bad_files_are_reported_and_the_index_stays_intact(chinvex_home: Path, repo: Path):
    assert run_cli_in_process("context", "create", "Bad", "--repo", str(repo)).code == 0
    _ingest("Bad")
    before = _chunk_ids(chinvex_home, "Bad")
    latin1 = "Dessert recipe notes for the team dinner, saved by an old editor.\n" * 6
    latin1 += "Make the caf\xe9 cr\xe8me br\xfbl\xe9e the day before.\n"
    (repo / "latin1.txt").write_bytes(latin1.encode("latin-1"))
    with open(repo / "huge.log", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: 50 MB without writing it
    (repo / "image.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    (repo / "loop").symlink_to(repo, target_is_directory=True)
    result = _ingest("Bad")
    assert result.code == 0, result
    skipped = result.json["sources"]["skipped"]
    assert skipped.get("too_large") == 1 and skipped.get("binary") == 1
    assert before <= _chunk_ids(chinvex_home, "Bad")
    found = run_cli("search", "--context", "Bad", "recipe notes", "--json").json["results"]
    assert any(r["source_uri"].endswith("latin1.txt") for r in found)


def test_file_vanishing_between_scan_and_read(chinvex_home: Path, repo: Path):
    """The progress sink's start() runs after enumeration and before any file is read."""
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.context.registry import Registry

    (repo / "ghost.py").write_text("def ghost():\n    return 'boo'\n")
    Registry().create("Ghost", includes={"repos": [str(repo)]})
    config = Registry().resolve("Ghost")

    class DeleteOnStart:
        def start(self, total):
            (repo / "ghost.py").unlink()

        def advance(self, label): ...
        def embedded(self, count): ...
        def decision(self, decision): ...
        def finish(self): ...

    summary = run_ingest(config, IngestOptions(progress=DeleteOnStart()))
    assert summary.status == "completed_with_errors"
    assert len(summary.errors) == 1 and "ghost.py" in summary.errors[0].message
    assert summary.sources.indexed == 2
    # The failure is remembered in the fingerprint: back in place, the file is retried.
    (repo / "ghost.py").write_text("def ghost():\n    return 'boo'\n")
    retried = run_ingest(config, IngestOptions())
    assert retried.status == "completed" and retried.sources.reasons == {"retry_after_error": 1}
    (repo / "ghost.py").unlink()
    again = run_ingest(config, IngestOptions())
    assert again.status == "completed" and again.sources.removed == 1


def test_unreadable_file_is_an_error_and_keeps_what_was_indexed(chinvex_home: Path, repo: Path,
                                                                 tmp_path: Path):
    """A file that became unreadable is an error naming it (exit 1), the rest of the run goes
    on, and the file's indexed chunks stay: a permission glitch must not wipe them."""
    from helpers import CHINVEX_BIN

    prefix = without_dac_override(tmp_path)
    locked = repo / "locked.py"
    locked.write_text("def hidden():\n    return 'the marmoset ledger is balanced'\n")
    assert run_cli_in_process("context", "create", "Perm", "--repo", str(repo)).code == 0
    assert _ingest("Perm").json["sources"]["indexed"] == 3
    with _db(chinvex_home, "Perm") as conn:
        locked_chunks = {r[0] for r in conn.execute(
            "SELECT c.chunk_id FROM chunks c JOIN documents d USING(doc_id) WHERE d.source_uri=?",
            (str(locked),))}
    assert locked_chunks
    before = _chunk_ids(chinvex_home, "Perm")
    locked.write_text("def hidden():\n    return 'a new version nobody may read yet'\n")
    locked.chmod(0)
    (repo / "fresh.py").write_text("def fresh():\n    return 'indexed despite the locked file'\n")
    proc = subprocess.run([*prefix, str(CHINVEX_BIN), "ingest", "--context", "Perm", "--json"],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    summary = json.loads(proc.stdout)
    assert [e["source_uri"] for e in summary["errors"]] == [str(locked)]
    message = summary["errors"][0]["message"]
    assert "locked.py" in message and "ermission denied" in message, message
    assert summary["sources"]["indexed"] == 1 and summary["sources"]["reasons"] == {"new_file": 1}
    assert summary["sources"]["removed"] == 0
    after = _chunk_ids(chinvex_home, "Perm")
    assert before <= after and locked_chunks <= after, "the unreadable file's chunks must stay"
    assert _vector_ids(chinvex_home, "Perm") == after
    hits = run_cli("search", "--context", "Perm", "marmoset ledger balanced", "--json").json["results"]
    assert hits and hits[0]["source_uri"] == str(locked)
    found = run_cli("search", "--context", "Perm", "indexed despite the locked file", "--json").json
    assert any(r["source_uri"].endswith("fresh.py") for r in found["results"])


def test_concurrent_ingest_gets_a_clear_busy_message(chinvex_home: Path, repo: Path):
    from chinvex.locking import context_lock
    from chinvex.context.registry import Registry

    assert run_cli_in_process("context", "create", "Busy", "--repo", str(repo)).code == 0
    with context_lock(Registry().resolve("Busy"), purpose="test"):
        result = run_cli("ingest", "--context", "Busy", "--json")
    assert result.code == 1 and result.json["error"]["code"] == "LOCKED"
    assert "busy" in result.json["error"]["message"]


def test_stats(chinvex_home: Path, repo: Path):
    assert run_cli_in_process("context", "create", "St", "--repo", str(repo)).code == 0
    _ingest("St")
    stats = run_cli_in_process("stats", "--context", "St", "--json").json
    assert stats["totals"]["documents"] == 2
    assert stats["by_source_type"]["repo"]["chunks"] >= 2
    assert stats["embedder"]["embedder"].startswith("builtin:")
    assert stats["embedder"]["embedding_dimension"] == "384"
    assert stats["last_run"]["status"] == "completed"
    assert stats["index"]["hybrid_db_bytes"] > 0 and stats["index"]["chroma_bytes"] > 0
    assert run_cli("stats", "--context", "St").code == 0


# -- removal of sources that were never recorded, and its protections --------------------------


def test_removal_decision_protects_unlisted_roots_and_unreadable_sources():
    from chinvex.ingest.removal import RunView, keep_reason, untracked_vanished, vanished

    view = RunView.of(seen={"/r/seen.py"}, unreadable={"/r/locked", "/r/secret.py"},
                      failed_roots={"/mnt/disk/"})
    assert keep_reason("/r/seen.py", "/r", view) == "seen"
    assert keep_reason("/r/secret.py", "/r", view) == "unreadable"
    assert keep_reason("/r/locked/inner.py", "/r", view) == "unreadable"
    assert keep_reason("/r/lockedness.py", "/r", view) is None  # a prefix is not a folder
    assert keep_reason("/mnt/disk/a.py", None, view) == "root_not_listed"  # attributed by path
    assert keep_reason("/mnt/disk/export.zip!conversations.json", None, view) == "root_not_listed"
    assert keep_reason("/elsewhere/a.py", "/mnt/disk", view) == "root_not_listed"  # recorded root
    assert keep_reason("codex://thread/1", None, view) == "root_not_listed"  # unattributable
    assert keep_reason("codex://thread/1", "/home/u/.codex", view) is None
    assert keep_reason("/r/gone.py", "/r", view) is None
    fingerprinted = {"/r/gone.py": "/r", "/r/seen.py": "/r", "/mnt/disk/b.py": "/mnt/disk/"}
    assert vanished(fingerprinted, view) == ["/r/gone.py"]
    origins = {"/r/gone.py", "/r/ghost.py", "memory://P-1", "/mnt/disk/c.py", "/r/seen.py"}
    assert untracked_vanished(origins, fingerprinted, {}, view) == ["/r/ghost.py"]
    healthy = RunView.of(seen=set(), unreadable=set(), failed_roots=set())
    assert untracked_vanished({"codex://thread/1"}, {}, {}, healthy) == ["codex://thread/1"]


def test_vector_journal_recovery_plan():
    from chinvex.ingest.journal import plan_vector_recovery

    journal = {"orphan": "h1", "removed": None, "same": "h2", "renamed": "new", "never_upserted": "h3"}
    owned = {"same": "h2", "renamed": "old", "never_upserted": "h3"}
    plan = plan_vector_recovery(journal, owned, present={"same", "renamed"})
    assert plan.delete == ["orphan", "removed"]
    assert plan.reembed == ["never_upserted", "renamed"]


def test_unrecorded_documents_stay_while_their_root_cannot_be_listed(chinvex_home: Path, repo: Path,
                                                                    tmp_path: Path):
    """Documents of a source without a fingerprint (its run died before recording it) are removed
    once the source is gone, but never because its root could not be listed."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.py").write_text("def keep():\n    return 'kept while the disk is away'\n")
    (other / "pend.py").write_text("def pend():\n    return 'pending when the run died'\n")
    assert run_cli_in_process("context", "create", "Unrec", "--repo", str(repo), "--repo", str(other)).code == 0
    _ingest("Unrec")
    with _db(chinvex_home, "Unrec") as conn:
        # keep.py as an index written before the pending-sources journal; pend.py as a run
        # killed after writing its documents, before its fingerprint.
        conn.execute("DELETE FROM source_fingerprints WHERE source_uri IN (?, ?)",
                     (str(other / "keep.py"), str(other / "pend.py")))
        conn.execute("INSERT INTO pending_sources(source_uri, source_root, adapter) VALUES(?,?,?)",
                     (str(other / "pend.py"), str(other), "repo"))
    before = _chunk_ids(chinvex_home, "Unrec")
    moved = tmp_path / "other-moved"
    other.rename(moved)
    result = _ingest("Unrec")
    assert result.code == 0 and result.json["errors"] and result.json["sources"]["removed"] == 0, result
    assert _chunk_ids(chinvex_home, "Unrec") == before, "an unlisted root must not cause removal"
    moved.rename(other)
    (other / "keep.py").unlink()
    (other / "pend.py").unlink()
    result = _ingest("Unrec")
    assert result.code == 0 and result.json["sources"]["removed"] == 2, result
    with _db(chinvex_home, "Unrec") as conn:
        origins = {r[0] for r in conn.execute("SELECT origin_uri FROM documents UNION "
                                              "SELECT origin_uri FROM doc_origins")}
        assert conn.execute("SELECT COUNT(*) FROM pending_sources").fetchone()[0] == 0
    assert origins == {str(p) for p in repo.iterdir() if p.is_file()}
    assert _vector_ids(chinvex_home, "Unrec") == _chunk_ids(chinvex_home, "Unrec")


# -- excludes added after indexing ---------------------------------------------------------------


def test_exclude_glob_added_later_removes_indexed_files(chinvex_home: Path, repo: Path):
    """Adding an `excludes` glob to context.json (by hand, as a user would) takes the files it
    matches out of both stores on the next ingest, as if they had been deleted."""
    (repo / "generated").mkdir()
    (repo / "generated" / "schema_gen.py").write_text(
        "def xylophonic_schema():\n    return 'the xylophonic schema generator output'\n")
    (repo / "plan.draft.md").write_text("# Draft\n\nThe quasar onboarding plan is not final.\n")
    assert run_cli_in_process("context", "create", "Excl", "--repo", str(repo)).code == 0
    assert _ingest("Excl").json["sources"]["indexed"] == 4
    excluded = {str(repo / "generated" / "schema_gen.py"), str(repo / "plan.draft.md")}
    with _db(chinvex_home, "Excl") as conn:
        doomed = {r[0] for r in conn.execute(
            "SELECT c.chunk_id FROM chunks c JOIN documents d USING(doc_id) WHERE d.source_uri IN (?,?)",
            tuple(excluded))}
    assert doomed and doomed <= _vector_ids(chinvex_home, "Excl")
    for query, uri in (("xylophonic schema generator", repo / "generated" / "schema_gen.py"),
                       ("quasar onboarding plan", repo / "plan.draft.md")):
        assert run_cli("search", "--context", "Excl", query, "--json").json["results"][0]["source_uri"] == str(uri)

    path = chinvex_home / "contexts" / "Excl" / "context.json"
    data = json.loads(path.read_text())
    data["excludes"] = ["generated/**", "*.draft.md"]
    path.write_text(json.dumps(data, indent=2))
    result = _ingest("Excl", "--verbose")
    assert result.code == 0, result
    summary = result.json
    assert summary["sources"]["removed"] == 2 and summary["sources"]["indexed"] == 0
    assert summary["sources"]["unchanged"] == 2 and summary["sources"]["skipped"].get("excluded", 0) >= 1
    assert {(d["source_uri"], d["reason"]) for d in summary["decisions"]
            if d["action"] == "removed"} == {(uri, "excluded") for uri in excluded}
    chunks = _chunk_ids(chinvex_home, "Excl")
    assert not doomed & chunks and summary["chunks"]["deleted"] == len(doomed)
    assert _vector_ids(chinvex_home, "Excl") == chunks, "their vectors leave Chroma too"
    with _db(chinvex_home, "Excl") as conn:
        for table in ("documents", "source_fingerprints"):
            left = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE source_uri IN (?,?)",
                                tuple(excluded)).fetchone()[0]
            assert left == 0, table
    for query in ("xylophonic schema generator", "quasar onboarding plan"):
        for mode in ("fts", "vector"):  # hybrid fuses exactly these two
            hits = run_cli("search", "--context", "Excl", query, "--json", "--mode", mode).json["results"]
            assert not {r["source_uri"] for r in hits} & excluded, (query, mode)
    assert _ingest("Excl").json["sources"]["removed"] == 0


# -- the progress display -------------------------------------------------------------------------

PROGRESS_MARKS = (b"\x1b[?25l", "━".encode(), b"chunks embedded")
"""What only the rich bar writes: hide-cursor, the bar glyph, and its label."""


def _visible(screen: bytes) -> bytes:
    """The text of a terminal stream without its CSI escape sequences (colours, cursor moves)."""
    import re

    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", screen)


def _ingest_on_a_terminal(context: str, *args: str, stdout_tty: bool = True,
                          env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """Run `chinvex ingest` with stderr (and stdout unless `stdout_tty` is False) on a pseudo-
    terminal of 120x40. Returns (exit code, bytes written to the terminal, bytes on a piped
    stdout). Rich decides from isatty() and the terminal size, as it would for a user."""
    import fcntl
    import struct
    import termios
    import threading

    from helpers import CHINVEX_BIN

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS")}
    full_env.update({"TERM": "xterm-256color", **(env or {})})
    proc = subprocess.Popen([str(CHINVEX_BIN), "ingest", "--context", context, *args],
                            stdin=slave, stdout=slave if stdout_tty else subprocess.PIPE,
                            stderr=slave, env=full_env)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO once every holder of the terminal has exited
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    piped = proc.stdout.read() if proc.stdout is not None else b""
    code = proc.wait(timeout=600)
    reader.join(timeout=30)
    os.close(master)
    return code, b"".join(chunks), piped


def test_progress_bar_is_drawn_on_a_terminal_and_nowhere_else(chinvex_home: Path, repo: Path):
    _write_functions(repo / "metrics.py", 12)
    assert run_cli_in_process("context", "create", "Bar", "--repo", str(repo)).code == 0

    code, screen, _ = _ingest_on_a_terminal("Bar")
    assert code == 0, screen.decode(errors="replace")
    for mark in PROGRESS_MARKS:
        assert mark in screen, (mark, screen[:2000])
    text = _visible(screen)
    assert b"0/3 sources" in text and b"3/3 sources" in text, text[:2000]  # it moved
    assert b"\x1b[?25h" in screen, "the cursor is shown again"
    assert b"Bar: 3 ingested" in text, text[-2000:]

    # --json on a terminal: one JSON document and nothing else, not even the bar on stderr.
    (repo / "metrics.py").write_text((repo / "metrics.py").read_text() + "\n# edited\n")
    code, screen, _ = _ingest_on_a_terminal("Bar", "--json")
    assert code == 0, screen.decode(errors="replace")
    assert b"\x1b" not in screen and "━".encode() not in screen
    assert json.loads(screen.replace(b"\r\n", b"\n"))["sources"]["indexed"] == 1

    # Output piped, stderr still on the terminal (`chinvex ingest > log`): the log stays clean
    # text, the bar is drawn where the user is looking.
    code, screen, piped = _ingest_on_a_terminal("Bar", stdout_tty=False)
    assert code == 0, screen.decode(errors="replace")
    assert b"\x1b" not in piped and b"Bar: 0 ingested, 3 unchanged" in piped, piped
    assert all(mark in screen for mark in PROGRESS_MARKS), screen[:2000]

    # Nothing a terminal: no escape code anywhere, also when FORCE_COLOR makes rich treat a
    # pipe as a terminal for colours (the bar is never drawn into a log).
    plain = run_cli("ingest", "--context", "Bar")
    assert plain.code == 0, plain
    assert "\x1b" not in plain.stdout + plain.stderr and "━" not in plain.stderr, plain
    forced = run_cli("ingest", "--context", "Bar", env={"FORCE_COLOR": "1"})
    assert forced.code == 0, forced
    for mark in PROGRESS_MARKS:
        assert mark.decode() not in forced.stdout + forced.stderr, (mark, forced)
