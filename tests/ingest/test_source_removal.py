"""Issue 3: sources that leave a context (a root removed, a file excluded later, documents never
recorded) leave the index, except under a root that could not be listed (a missing root is an
error exit of a real `chinvex` process); and the pure removal decision behind it. (Split from
test_ingest.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import assert_no_traceback, run_cli, run_cli_in_process


def test_removed_source_root_leaves_the_index(chinvex_home: Path, repo: Path, tmp_path: Path,
                                              index_db, ingest_json):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "idea.md").write_text("# Idea\n\nA note about the flux capacitor.\n")
    assert run_cli_in_process("context", "create", "Roots", "--repo", str(repo), "--note-root", str(notes)).code == 0
    ingest_json("Roots")
    assert run_cli_in_process("context", "remove-source", "Roots", str(notes)).code == 0
    summary = ingest_json("Roots").json
    assert summary["sources"]["removed"] == 1
    with index_db(chinvex_home, "Roots") as conn:
        types = {r[0] for r in conn.execute("SELECT DISTINCT source_type FROM documents")}
    assert types == {"repo"}


def test_missing_repo_path_is_an_error_and_keeps_its_index(chinvex_home: Path, repo: Path,
                                                           tmp_path: Path, chunk_ids, ingest_json):
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.py").write_text("def keep():\n    return 'kept'\n")
    assert run_cli_in_process("context", "create", "Miss", "--repo", str(repo), "--repo", str(other)).code == 0
    ingest_json("Miss")
    before = chunk_ids(chinvex_home, "Miss")
    moved = tmp_path / "other-moved"
    other.rename(moved)
    (repo / "new.py").write_text("def fresh():\n    return 'new file still indexed'\n")
    result = ingest_json("Miss")
    assert result.code == 0, result  # one unreachable root does not fail the run...
    assert result.json["ok"] is False
    errors = result.json["errors"]
    assert len(errors) == 1 and str(other) in errors[0]["message"]
    assert result.json["sources"]["indexed"] == 1  # the new file in the healthy repo
    after = chunk_ids(chinvex_home, "Miss")
    assert before <= after, "chunks of the unreachable root must not be deleted"
    human = run_cli("ingest", "--context", "Miss")
    assert human.code == 0 and str(other) in human.stdout and "1 failed" in human.stdout
    assert_no_traceback(human)
    strict = run_cli("ingest", "--context", "Miss", "--strict")  # ...unless asked to
    assert strict.code == 1 and str(other) in strict.stdout
    assert_no_traceback(strict)


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


def test_unrecorded_documents_stay_while_their_root_cannot_be_listed(chinvex_home: Path, repo: Path,
                                                                    tmp_path: Path, index_db,
                                                                    chunk_ids, vector_ids,
                                                                    ingest_json):
    """Documents of a source without a fingerprint (its run died before recording it) are removed
    once the source is gone, but never because its root could not be listed."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.py").write_text("def keep():\n    return 'kept while the disk is away'\n")
    (other / "pend.py").write_text("def pend():\n    return 'pending when the run died'\n")
    assert run_cli_in_process("context", "create", "Unrec", "--repo", str(repo), "--repo", str(other)).code == 0
    ingest_json("Unrec")
    with index_db(chinvex_home, "Unrec") as conn:
        # keep.py as an index written before the pending-sources journal; pend.py as a run
        # killed after writing its documents, before its fingerprint.
        conn.execute("DELETE FROM source_fingerprints WHERE source_uri IN (?, ?)",
                     (str(other / "keep.py"), str(other / "pend.py")))
        conn.execute("INSERT INTO pending_sources(source_uri, source_root, adapter) VALUES(?,?,?)",
                     (str(other / "pend.py"), str(other), "repo"))
    before = chunk_ids(chinvex_home, "Unrec")
    moved = tmp_path / "other-moved"
    other.rename(moved)
    result = ingest_json("Unrec")
    assert result.code == 0 and result.json["errors"] and result.json["sources"]["removed"] == 0, result
    assert chunk_ids(chinvex_home, "Unrec") == before, "an unlisted root must not cause removal"
    moved.rename(other)
    (other / "keep.py").unlink()
    (other / "pend.py").unlink()
    result = ingest_json("Unrec")
    assert result.code == 0 and result.json["sources"]["removed"] == 2, result
    with index_db(chinvex_home, "Unrec") as conn:
        origins = {r[0] for r in conn.execute("SELECT origin_uri FROM documents UNION "
                                              "SELECT origin_uri FROM doc_origins")}
        assert conn.execute("SELECT COUNT(*) FROM pending_sources").fetchone()[0] == 0
    assert origins == {str(p) for p in repo.iterdir() if p.is_file()}
    assert vector_ids(chinvex_home, "Unrec") == chunk_ids(chinvex_home, "Unrec")


# -- excludes added after indexing ---------------------------------------------------------------


def test_exclude_glob_added_later_removes_indexed_files(chinvex_home: Path, repo: Path, index_db,
                                                        chunk_ids, vector_ids, ingest_json):
    """Adding an `excludes` glob to context.json (by hand, as a user would) takes the files it
    matches out of both stores on the next ingest, as if they had been deleted."""
    (repo / "generated").mkdir()
    (repo / "generated" / "schema_gen.py").write_text(
        "def xylophonic_schema():\n    return 'the xylophonic schema generator output'\n")
    (repo / "plan.draft.md").write_text("# Draft\n\nThe quasar onboarding plan is not final.\n")
    assert run_cli_in_process("context", "create", "Excl", "--repo", str(repo)).code == 0
    assert ingest_json("Excl").json["sources"]["indexed"] == 4
    excluded = {str(repo / "generated" / "schema_gen.py"), str(repo / "plan.draft.md")}
    with index_db(chinvex_home, "Excl") as conn:
        doomed = {r[0] for r in conn.execute(
            "SELECT c.chunk_id FROM chunks c JOIN documents d USING(doc_id) WHERE d.source_uri IN (?,?)",
            tuple(excluded))}
    assert doomed and doomed <= vector_ids(chinvex_home, "Excl")
    for query, uri in (("xylophonic schema generator", repo / "generated" / "schema_gen.py"),
                       ("quasar onboarding plan", repo / "plan.draft.md")):
        assert run_cli("search", "--context", "Excl", query, "--json").json["results"][0]["source_uri"] == str(uri)

    path = chinvex_home / "contexts" / "Excl" / "context.json"
    data = json.loads(path.read_text())
    data["excludes"] = ["generated/**", "*.draft.md"]
    path.write_text(json.dumps(data, indent=2))
    result = ingest_json("Excl", "--verbose")
    assert result.code == 0, result
    summary = result.json
    assert summary["sources"]["removed"] == 2 and summary["sources"]["indexed"] == 0
    assert summary["sources"]["unchanged"] == 2 and summary["sources"]["skipped"].get("excluded", 0) >= 1
    assert {(d["source_uri"], d["reason"]) for d in summary["decisions"]
            if d["action"] == "removed"} == {(uri, "excluded") for uri in excluded}
    chunks = chunk_ids(chinvex_home, "Excl")
    assert not doomed & chunks and summary["chunks"]["deleted"] == len(doomed)
    assert vector_ids(chinvex_home, "Excl") == chunks, "their vectors leave Chroma too"
    with index_db(chinvex_home, "Excl") as conn:
        for table in ("documents", "source_fingerprints"):
            left = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE source_uri IN (?,?)",
                                tuple(excluded)).fetchone()[0]
            assert left == 0, table
    for query in ("xylophonic schema generator", "quasar onboarding plan"):
        for mode in ("fts", "vector"):  # hybrid fuses exactly these two
            hits = run_cli("search", "--context", "Excl", query, "--json", "--mode", mode).json["results"]
            assert not {r["source_uri"] for r in hits} & excluded, (query, mode)
    assert ingest_json("Excl").json["sources"]["removed"] == 0
