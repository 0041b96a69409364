"""Issue 3: incremental ingest of repositories and notes, end to end, with the real built-in
embedder and a real Chroma store."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import assert_no_traceback, run_cli


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
    return set(client.get_collection(name).get(include=[])["ids"])


def _ingest(context: str, *extra: str):
    result = run_cli("ingest", "--context", context, "--json", *extra)
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
    assert run_cli("context", "create", "Test", "--repo", str(repo)).code == 0
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
    assert run_cli("context", "create", "Big", "--repo", str(root)).code == 0
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
    assert run_cli("context", "create", "Del", "--repo", str(repo)).code == 0
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
    assert run_cli("context", "create", "Full", "--repo", str(repo)).code == 0
    first = _ingest("Full").json
    assert first["chunks"]["embedded"] > 0
    full = _ingest("Full", "--full").json
    assert full["sources"]["indexed"] == 2
    assert full["sources"]["reasons"] == {"full_reingest": 2}
    assert full["chunks"]["embedded"] == 0


def test_touch_without_change_only_refreshes_fingerprint(chinvex_home: Path, repo: Path):
    assert run_cli("context", "create", "Touch", "--repo", str(repo)).code == 0
    _ingest("Touch")
    stat = (repo / "hello.py").stat()
    os.utime(repo / "hello.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    summary = _ingest("Touch").json
    assert summary["sources"]["refreshed"] == 1 and summary["sources"]["indexed"] == 0
    assert _ingest("Touch").json["sources"]["unchanged"] == 2


def test_removed_source_root_leaves_the_index(chinvex_home: Path, repo: Path, tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "idea.md").write_text("# Idea\n\nA note about the flux capacitor.\n")
    assert run_cli("context", "create", "Roots", "--repo", str(repo), "--note-root", str(notes)).code == 0
    _ingest("Roots")
    assert run_cli("context", "remove-source", "Roots", str(notes)).code == 0
    summary = _ingest("Roots").json
    assert summary["sources"]["removed"] == 1
    with _db(chinvex_home, "Roots") as conn:
        types = {r[0] for r in conn.execute("SELECT DISTINCT source_type FROM documents")}
    assert types == {"repo"}


def test_missing_repo_path_is_an_error_and_keeps_its_index(chinvex_home: Path, repo: Path, tmp_path: Path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.py").write_text("def keep():\n    return 'kept'\n")
    assert run_cli("context", "create", "Miss", "--repo", str(repo), "--repo", str(other)).code == 0
    _ingest("Miss")
    before = _chunk_ids(chinvex_home, "Miss")
    moved = tmp_path / "other-moved"
    other.rename(moved)
    (repo / "new.py").write_text("def fresh():\n    return 'new file still indexed'\n")
    result = _ingest("Miss")
    assert result.code == 1, result
    errors = result.json["errors"]
    assert len(errors) == 1 and str(other) in errors[0]["message"]
    assert result.json["sources"]["indexed"] == 1  # the new file in the healthy repo
    after = _chunk_ids(chinvex_home, "Miss")
    assert before <= after, "chunks of the unreachable root must not be deleted"
    human = run_cli("ingest", "--context", "Miss")
    assert human.code == 1 and str(other) in human.stdout
    assert_no_traceback(human)


def test_bad_files_are_reported_and_the_index_stays_intact(chinvex_home: Path, repo: Path):
    assert run_cli("context", "create", "Bad", "--repo", str(repo)).code == 0
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
    from chinvex.registry import Registry

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
    again = run_ingest(config, IngestOptions())
    assert again.status == "completed" and again.sources.removed == 1


def test_unreadable_file_as_unprivileged_user():
    """Tests run as root, whom permissions do not stop; run the ingest as `nobody` instead."""
    import shutil
    import tempfile

    if os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists():
        pytest.skip("needs root and setpriv to switch to an unprivileged user")
    base = Path(tempfile.mkdtemp(prefix="chinvex-perm-"))
    os.chmod(base, 0o777)
    try:
        _run_unreadable_case(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_unreadable_case(base: Path) -> None:
    repo = base / "repo"
    repo.mkdir()
    (repo / "open.py").write_text("def visible():\n    return 'readable by everyone'\n")
    secret = repo / "locked.py"
    secret.write_text("def hidden():\n    return 'root only'\n")
    os.chmod(secret, 0o600)
    for path in (repo, repo / "open.py"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    env = {**os.environ, "CHINVEX_HOME": str(base / "home"), "HOME": str(base)}
    venv_ok = subprocess.run(
        ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         sys.executable, "-c", "import chinvex"], env=env, capture_output=True)
    if venv_ok.returncode != 0:
        pytest.skip(f"the venv is not readable by nobody: {venv_ok.stderr.decode()[:200]}")
    chinvex = str(Path(sys.executable).parent / "chinvex")

    def as_nobody(*args):
        return subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                               "--clear-groups", chinvex, *args], env=env, capture_output=True,
                              text=True, timeout=600)

    assert as_nobody("context", "create", "Perm", "--repo", str(repo)).returncode == 0
    result = as_nobody("ingest", "--context", "Perm", "--json")
    assert "Traceback" not in result.stderr
    summary = json.loads(result.stdout)
    assert result.returncode == 1
    assert summary["sources"]["indexed"] == 1
    messages = " ".join(e["message"] for e in summary["errors"])
    assert "locked.py" in messages and "ermission" in messages


def test_concurrent_ingest_gets_a_clear_busy_message(chinvex_home: Path, repo: Path):
    from chinvex.locking import context_lock
    from chinvex.registry import Registry

    assert run_cli("context", "create", "Busy", "--repo", str(repo)).code == 0
    with context_lock(Registry().resolve("Busy"), purpose="test"):
        result = run_cli("ingest", "--context", "Busy", "--json")
    assert result.code == 1 and result.json["error"]["code"] == "LOCKED"
    assert "busy" in result.json["error"]["message"]


def test_stats(chinvex_home: Path, repo: Path):
    assert run_cli("context", "create", "St", "--repo", str(repo)).code == 0
    _ingest("St")
    stats = run_cli("stats", "--context", "St", "--json").json
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
    assert run_cli("context", "create", "Unrec", "--repo", str(repo), "--repo", str(other)).code == 0
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
    assert result.code == 1 and result.json["sources"]["removed"] == 0, result
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
