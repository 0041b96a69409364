"""Issue 9: `chinvex doctor` finds each kind of damage and inconsistency, and `--repair` fixes
what it can (re-embeds missing vectors, drops orphans, rebuilds FTS, clears fingerprints) and
says plainly what it cannot.

Each test damages a real index (real SQLite, real Chroma, the real embedder) the way a crash,
a bug or a user could, and checks the report before and after the repair. `chinvex doctor` runs
as a real process where its exit codes, its lock or a damaged store are the point, and in this
process (conftest.run_cli_in_process) elsewhere.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from helpers import FIXTURES, assert_no_traceback, run_cli, run_cli_in_process
from hostile import corpus as corpus_mod

REQUIRED_CHECKS = {
    "context_config", "index_files", "sqlite_integrity", "foreign_keys", "fts_index", "embedder",
    "vectors_missing", "vectors_orphaned", "vectors_stale", "fingerprints_without_documents",
    "documents_without_chunks", "origins_without_documents", "documents_without_origins",
    "untracked_documents", "failed_sources", "stale_sources", "last_ingest", "lock",
}
SETUP_ONLY_ROLLOUT = (FIXTURES / "codex-rollout" / "generated-0.169.0" / "legacy" / "sessions" / "2026"
                      / "11" / "22" / "rollout-2026-11-22T02-29-41-01a20116-7f80-7e82-8754-e5125007d434.jsonl")


class Index:
    """A small real index: two code files, a note, a whitespace-only file, a ChatGPT export, a
    Codex rollout and a rollout with no turn yet (the last two kinds have no chunks by right)."""

    def __init__(self, base: Path):
        from chinvex.context.registry import Registry

        self.repo, self.notes, self.chat, self.codex = (base / n for n in ("repo", "notes", "chat", "codex"))
        for folder in (self.repo, self.notes, self.chat, self.codex):
            folder.mkdir(parents=True)
        (self.repo / "alpha.py").write_text(corpus_mod.python_module(corpus_mod.random.Random(1), "alphamarker", 3))
        (self.repo / "beta.py").write_text(
            "class ParseConfigError(Exception):\n    '''Raised by parseConfigFile.'''\n\n\n"
            "def parseConfigFile(path):\n    raise ParseConfigError(path)  # betamarker\n")
        (self.repo / "blank.txt").write_text("   \n\n\t\n")
        (self.notes / "idea.md").write_text("# Idea\n\nThe flux capacitor needs 1.21 gigawatts. ideamarker\n")
        corpus_mod.copy_file(corpus_mod.CHATGPT / "chatlore" / "conversations.json",
                             self.chat / "conversations.json")
        sessions = corpus_mod.ROLLOUTS / "localpush" / "sessions" / "2026" / "02" / "23"
        rollout = "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
        corpus_mod.copy_file(sessions / rollout, self.codex / rollout)
        setup_only = SETUP_ONLY_ROLLOUT.read_bytes().splitlines(keepends=True)[0]
        (self.codex / SETUP_ONLY_ROLLOUT.name).write_bytes(setup_only)
        Registry().create("Doc", includes={
            "repos": [str(self.repo)], "note_roots": [str(self.notes)],
            "chat_roots": [str(self.chat)], "codex_session_roots": [str(self.codex)]})
        self.ingest()

    @property
    def config(self):
        from chinvex.context.registry import Registry

        return Registry().resolve("Doc")

    def ingest(self):
        from chinvex.ingest.pipeline import IngestOptions, run_ingest

        summary = run_ingest(self.config, IngestOptions())
        assert summary.status in ("completed", "completed_with_errors"), summary.errors
        return summary

    def conn(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.config.index.sqlite_path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def store(self):
        from chinvex.storage import db
        from chinvex.storage.vectors import VectorStore

        conn = db.connect(Path(self.config.index.sqlite_path))
        try:
            return VectorStore.open(self.config, conn, create=False)
        finally:
            conn.close()

    def doctor(self, repair: bool = False):
        from chinvex.doctor import diagnose

        report = diagnose("Doc", repair=repair)
        return report, {c.name: c for c in report.checks}

    def chunk_ids(self, where: str = "1", args: tuple = ()) -> list[str]:
        with self.conn() as conn:
            return [r[0] for r in conn.execute(
                f"SELECT c.chunk_id FROM chunks c JOIN documents d USING(doc_id) WHERE {where} "
                "ORDER BY c.chunk_id", args)]


@pytest.fixture
def index(tmp_path: Path, chinvex_home: Path) -> Index:
    return Index(tmp_path / "src")


def _problems(checks) -> dict[str, tuple]:
    return {name: (c.status, c.message, c.examples) for name, c in checks.items() if c.status != "ok"}


def _bad(checks) -> dict[str, str]:
    return {name: c.status for name, c in checks.items() if c.status != "ok"}


def test_clean_index_passes_and_json_has_the_contract_shape(index: Index):
    result = run_cli("doctor", "--context", "Doc", "--json")
    assert_no_traceback(result)
    assert result.code == 0, result
    data = result.json
    assert data["context"] == "Doc" and data["ok"] is True
    names = {c["name"] for c in data["checks"]}
    assert REQUIRED_CHECKS <= names
    for check in data["checks"]:
        assert {"name", "status", "count", "examples", "repairable", "repaired"} <= set(check)
        assert check["status"] == "ok", check  # blank file and turn-less rollout are not flagged
    human = run_cli("doctor", "--context", "Doc")
    assert human.code == 0 and "no problems found" in human.stdout
    unknown = run_cli("doctor", "--context", "Nope", "--json")
    assert unknown.code == 1 and unknown.json["error"]["code"] == "CONTEXT_NOT_FOUND"


def test_every_stored_chunk_can_be_embedded_again_from_its_row(index: Index):
    """The repair re-embeds from what is stored; that must be the exact text the writer
    embedded, for code (identifier parts in the search text), notes and conversations."""
    from chinvex.storage.consistency import embed_text_of, iter_chunk_rows

    with index.conn() as conn:
        ids = [r[0] for r in conn.execute("SELECT chunk_id FROM chunks")]
        rows = list(iter_chunk_rows(conn, ids))
        types = {r["source_type"] for r in rows}
    assert {"repo", "note", "chat", "codex_session"} <= types
    assert rows and all(embed_text_of(r) is not None for r in rows)


def test_missing_vectors_are_re_embedded_to_the_same_vectors(index: Index):
    store = index.store()
    victims = (index.chunk_ids("d.source_type='repo'")[:2] + index.chunk_ids("d.source_type='chat'")[:1]
               + index.chunk_ids("d.source_type='codex_session'")[:1])
    before = store.embeddings(victims)
    store.delete(victims)
    report, checks = index.doctor()
    assert not report.ok
    assert checks["vectors_missing"].status == "error" and checks["vectors_missing"].count == len(victims)
    assert checks["vectors_missing"].repairable
    assert set(checks["vectors_missing"].examples) <= set(victims)

    report, checks = index.doctor(repair=True)
    assert report.ok and _bad(checks) == {}, report.as_json()
    assert checks["vectors_missing"].repaired
    assert any("embedded 4 chunks" in a for a in report.actions)
    after = index.store().embeddings(victims)
    for cid in victims:
        a, b = np.asarray(before[cid]), np.asarray(after[cid])
        assert float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) > 0.999


def test_orphan_vectors_are_deleted(index: Index):
    store = index.store()
    store.upsert(["0rphan000001", "0rphan000002"], np.ones((2, 384), dtype=np.float32),
                 [{"doc_id": "gone", "source_type": "repo"}] * 2)
    _, checks = index.doctor()
    assert checks["vectors_orphaned"].status == "error" and checks["vectors_orphaned"].count == 2
    report, checks = index.doctor(repair=True)
    assert report.ok and _bad(checks) == {}
    assert not index.store().existing(["0rphan000001", "0rphan000002"])


@pytest.mark.parametrize("damage", ["ghost_posting", "missing_posting"])
def test_fts_damage_is_found_and_rebuilt(index: Index, damage: str):
    with index.conn() as conn:
        if damage == "ghost_posting":
            conn.execute("INSERT INTO chunks_fts(rowid, chunk_id, search_text) "
                         "VALUES(987654, 'ghost', 'zyzzyvaghost appears nowhere')")
            term = "zyzzyvaghost"
        else:
            row = conn.execute("SELECT rowid, chunk_id, search_text FROM chunks "
                               "WHERE search_text LIKE '%ideamarker%'").fetchone()
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rowid, chunk_id, search_text) "
                         "VALUES('delete', ?, ?, ?)", tuple(row))
            term = "ideamarker"
        broken = conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (term,)).fetchall()
    assert bool(broken) == (damage == "ghost_posting")
    report, checks = index.doctor()
    assert checks["fts_index"].status == "error" and checks["fts_index"].repairable
    assert not report.ok
    report, checks = index.doctor(repair=True)
    assert report.ok and checks["fts_index"].status == "ok" and checks["fts_index"].repaired
    with index.conn() as conn:
        fixed = conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (term,)).fetchall()
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    assert bool(fixed) == (damage == "missing_posting")


def test_fingerprint_whose_document_is_missing_is_cleared_and_reread(index: Index):
    uri = str(index.repo / "alpha.py")
    with index.conn() as conn:
        conn.execute("DELETE FROM documents WHERE origin_uri=?", (uri,))
        conn.execute("DELETE FROM doc_origins WHERE origin_uri=?", (uri,))
    # Without the repair an ingest trusts the fingerprint and never brings the file back.
    assert index.ingest().sources.unchanged >= 1
    report, checks = index.doctor()
    assert checks["fingerprints_without_documents"].examples == [uri]
    # The deleted chunks' vectors: the ingest saw fewer chunks than its recorded coverage and
    # compared the two stores, so it deleted them already.
    assert checks["vectors_orphaned"].status == "ok"
    report, checks = index.doctor(repair=True)
    assert report.ok, report.as_json()
    summary = index.ingest()
    assert summary.sources.indexed == 1
    assert index.chunk_ids("d.origin_uri=?", (uri,))
    _, checks = index.doctor()
    assert _bad(checks) == {}


def test_document_without_chunks_is_rewritten_by_the_next_ingest(index: Index):
    uri = str(index.repo / "beta.py")
    with index.conn() as conn:
        conn.execute("DELETE FROM chunks WHERE doc_id=(SELECT doc_id FROM documents WHERE origin_uri=?)", (uri,))
    report, checks = index.doctor()
    assert checks["documents_without_chunks"].status == "error"
    assert uri in checks["documents_without_chunks"].examples[0]
    report, checks = index.doctor(repair=True)
    # Scheduled, not done: the report says so and the exit status stays 1 until an ingest.
    assert not report.ok and checks["documents_without_chunks"].status == "error"
    assert any("next 'chinvex ingest'" in a for a in report.actions)
    summary = index.ingest()
    assert summary.sources.indexed == 1
    assert index.chunk_ids("d.origin_uri=?", (uri,))
    report, checks = index.doctor()
    assert report.ok and _bad(checks) == {}


def test_origin_ledger_out_of_step_with_documents(index: Index):
    uri = str(index.repo / "alpha.py")
    with index.conn() as conn:
        conn.execute("INSERT INTO doc_origins(doc_id, origin_uri, precedence_json) VALUES('feedfacefeedface', ?, '[]')",
                     (str(index.chat / "conversations.json"),))
        conn.execute("DELETE FROM doc_origins WHERE origin_uri=?", (uri,))
    _, checks = index.doctor()
    assert checks["origins_without_documents"].count == 1
    assert checks["documents_without_origins"].count == 1
    report, checks = index.doctor(repair=True)
    # The export's fingerprint was cleared: its ledger entries are re-recorded by a re-read,
    # which the report announces as pending.
    assert report.ok and _bad(checks) == {"untracked_documents": "warning"}, report.as_json()
    summary = index.ingest()
    assert summary.sources.indexed == 1
    assert _bad(index.doctor()[1]) == {}


def test_documents_of_a_vanished_unrecorded_source_are_removed(index: Index):
    """An ingest killed after writing a new file's chunks but before its fingerprint, and the
    file deleted before the next run: nothing else would ever remove those documents."""
    uri = str(index.repo / "alpha.py")
    with index.conn() as conn:
        conn.execute("DELETE FROM source_fingerprints WHERE source_uri=?", (uri,))
    report, checks = index.doctor()
    assert checks["untracked_documents"].status == "warning" and report.ok  # the file is still there
    (index.repo / "alpha.py").unlink()
    report, checks = index.doctor()
    assert checks["untracked_documents"].status == "error" and not report.ok
    gone = index.chunk_ids("d.origin_uri=?", (uri,))
    report, checks = index.doctor(repair=True)
    assert report.ok and _bad(checks) == {}, report.as_json()
    assert not index.chunk_ids("d.origin_uri=?", (uri,))
    assert not index.store().existing(gone)


def test_embedder_mismatch_is_reported_and_not_repaired(index: Index):
    with index.conn() as conn:
        conn.execute("UPDATE meta SET value='ollama:nomic-embed-text' WHERE key='embedder'")
    result = run_cli_in_process("doctor", "--context", "Doc", "--repair", "--json")
    assert_no_traceback(result)
    assert result.code == 1
    checks = {c["name"]: c for c in result.json["checks"]}
    assert checks["embedder"]["status"] == "error" and not checks["embedder"]["repairable"]
    assert "--full" in checks["embedder"]["message"]
    assert checks["vectors_missing"]["status"] == "ok" and "not checked" in checks["vectors_missing"]["message"]


def test_vector_dimension_disagreeing_with_meta(index: Index):
    with index.conn() as conn:
        conn.execute("UPDATE meta SET value='768' WHERE key='embedding_dimension'")
    _, checks = index.doctor()
    assert checks["embedder"].status == "error"
    assert "768" in checks["embedder"].examples[0] and "384" in checks["embedder"].examples[0]


def test_context_json_problems(index: Index, chinvex_home: Path):
    import shutil

    shutil.rmtree(index.notes)
    result = run_cli_in_process("doctor", "--context", "Doc", "--json")
    assert result.code == 1
    check = {c["name"]: c for c in result.json["checks"]}["context_config"]
    assert check["status"] == "error" and str(index.notes) in check["examples"][0]
    assert "does not exist" in check["examples"][0]

    path = chinvex_home / "contexts" / "Doc" / "context.json"
    data = json.loads(path.read_text())
    data["weights"] = "heavy"
    path.write_text(json.dumps(data))
    result = run_cli_in_process("doctor", "--context", "Doc", "--json")
    assert_no_traceback(result)
    assert result.code == 1
    [check] = result.json["checks"]
    assert check["name"] == "context_config" and "weights" in check["examples"][0]
    path.write_text("{not json")
    human = run_cli_in_process("doctor", "--context", "Doc")
    assert_no_traceback(human)
    assert human.code == 1 and "not valid JSON" in human.stdout


def test_stale_and_failed_sources_are_warnings_only(index: Index):
    (index.repo / "alpha.py").write_text("def changed():\n    return 1\n")
    (index.notes / "idea.md").unlink()
    (index.codex / "rollout-2026-01-01T00-00-00-0000.jsonl").write_text('{"some": "thing else"}\n')
    index.ingest()  # records the bad rollout as skipped, and removes the note
    (index.repo / "beta.py").write_text("def changed_after():\n    return 2\n")
    (index.repo / "blank.txt").unlink()
    report, checks = index.doctor()
    assert report.ok, _problems(checks)  # warnings do not fail the exit status
    stale = checks["stale_sources"]
    assert stale.status == "warning"
    assert set(stale.examples) == {f"modified: {index.repo / 'beta.py'}", f"deleted: {index.repo / 'blank.txt'}"}
    skipped = checks["skipped_sources"]
    assert skipped.status == "ok" and skipped.count == 1 and "not a Codex rollout" in skipped.examples[0]
    assert checks["failed_sources"].status == "ok"
    result = run_cli_in_process("doctor", "--context", "Doc")
    assert result.code == 0 and "modified" in result.stdout


def test_interrupted_run_and_stale_lock_note(index: Index):
    from chinvex.locking import lock_path

    dead = subprocess.Popen(["true"])
    dead.wait()
    holder = lock_path(index.config).with_suffix(".holder")
    holder.write_text(f"ingest (pid {dead.pid})")
    with index.conn() as conn:
        conn.execute("INSERT INTO ingest_runs(run_id, context_name, started_at, status) "
                     "VALUES('killed', 'Doc', '2999-01-01T00:00:00Z', 'running')")
    report, checks = index.doctor()
    assert report.ok
    assert checks["last_ingest"].status == "warning" and "interrupted" in checks["last_ingest"].message
    assert checks["lock"].status == "warning" and checks["lock"].repairable
    result = run_cli_in_process("doctor", "--context", "Doc", "--repair", "--json")
    assert result.code == 0, result
    checks = {c["name"]: c for c in result.json["checks"]}
    assert checks["lock"]["repaired"]
    assert not holder.exists()
    with index.conn() as conn:
        assert conn.execute("SELECT status FROM ingest_runs WHERE run_id='killed'").fetchone()[0] == "interrupted"


def test_repair_needs_the_lock_but_checking_does_not(index: Index):
    from chinvex.locking import context_lock

    with context_lock(index.config, purpose="ingest"):
        repair = run_cli("doctor", "--context", "Doc", "--repair", "--json")
        check = run_cli("doctor", "--context", "Doc", "--json")
    assert repair.code == 1 and repair.json["error"]["code"] == "LOCKED"
    assert check.code == 0, check
    lock = {c["name"]: c for c in check.json["checks"]}["lock"]
    assert lock["status"] == "ok" and f"pid {os.getpid()}" in lock["message"]


def test_dangling_rows_are_deleted(index: Index):
    with index.conn() as conn:
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("INSERT INTO chunks(chunk_id, doc_id, chunk_index, text, search_text, embed_hash) "
                     "VALUES('dangling0001', 'nodoc', 0, 'orphaned text', 'orphaned quuxword', 'x')")
        conn.execute("INSERT INTO conversation_turns(doc_id, turn_index, turn_json) VALUES('nodoc', 0, '{}')")
    _, checks = index.doctor()
    assert checks["foreign_keys"].status == "error" and checks["foreign_keys"].count == 2
    assert checks["vectors_missing"].status == "error"  # the dangling chunk has no vector either
    report, checks = index.doctor(repair=True)
    assert report.ok and _bad(checks) == {}, report.as_json()
    with index.conn() as conn:
        assert not conn.execute("SELECT 1 FROM chunks WHERE chunk_id='dangling0001'").fetchone()
        assert not conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'quuxword'").fetchall()


def _checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _add_knowledge_item(index: Index, content: str) -> str:
    """A RECALL knowledge item as `recall_add` stores it: a row only hybrid.db holds, and its
    memory document."""
    from chinvex.embedding.factory import make_embedder
    from chinvex.mcp import recall as R
    from chinvex.storage import db

    item = R.make_item("decision", "Falconry storage decision", content, scope="project",
                       tags=["falconry"], metadata={})
    conn = db.connect(Path(index.config.index.sqlite_path))
    try:
        R.insert_item(conn, item)
        prepared, vectors = R.prepare_items([item], make_embedder(index.config.embedding))
        store = index.store()
        R.write_prepared(conn, store, prepared, vectors)
        R.mark_indexed(conn, [item.item_id])
        conn.execute("INSERT INTO flight_recorder(entry_id, session_id, type, content, created_at) "
                     "VALUES('e1', 's1', 'decision', 'kept the hood', '2026-01-01T00:00:00Z')")
    finally:
        conn.close()
    return item.item_id


def test_damaged_database_is_moved_aside_and_rebuilt_from_the_sources(index: Index):
    """Pages of the chunks table overwritten: doctor says how to recover and changes nothing;
    --repair keeps the damaged file (renamed, byte for byte), rebuilds the index from the
    sources, and recovers the rows no source can give back (knowledge items, flight recorder)."""
    path = Path(index.config.index.sqlite_path)
    item_id = _add_knowledge_item(index, "We keep the gyrfalcon ledger in cold storage, xylofalcon.")
    _checkpoint(path)
    with index.conn() as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name='chunks'").fetchone()[0]
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range((root - 1) * page + 100, root * page, 7):
        data[offset] = (data[offset] + 91) % 256
    path.write_bytes(bytes(data))
    damaged = path.read_bytes()

    checked = run_cli_in_process("doctor", "--context", "Doc", "--json")
    assert_no_traceback(checked)
    assert checked.code == 1
    integrity = {c["name"]: c for c in checked.json["checks"]}["sqlite_integrity"]
    assert integrity["status"] == "error" and integrity["repairable"]
    assert "doctor --context Doc --repair" in integrity["message"]
    assert path.read_bytes() == damaged  # checking never writes

    result = run_cli_in_process("doctor", "--context", "Doc", "--repair", "--json")
    assert_no_traceback(result)
    assert result.code == 0, result
    kept = [p for p in path.parent.iterdir() if p.name.startswith("hybrid.db.damaged-")
            and not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1 and kept[0].read_bytes() == damaged
    actions = "\n".join(result.json["actions"])
    assert f"moved the damaged index {path} to {kept[0]}" in actions
    assert "rebuilt" in actions and "from the sources" in actions
    assert "1 knowledge items rows" in actions and "1 flight recorder rows" in actions, actions
    report, checks = index.doctor()
    assert report.ok and _bad(checks) == {}, _problems(checks)
    with index.conn() as conn:
        assert conn.execute("SELECT indexed_at IS NOT NULL FROM knowledge_items WHERE item_id=?",
                            (item_id,)).fetchone()[0] == 1
    for mode in ("fts", "vector"):
        found = run_cli("search", "--context", "Doc", "gyrfalcon ledger cold storage", "--mode", mode, "--json")
        assert any("xylofalcon" in r["text"] for r in found.json["results"]), (mode, found)
    assert run_cli("search", "--context", "Doc", "betamarker", "--json").json["results"]


def test_truncated_database_gets_recovery_guidance(index: Index):
    path = Path(index.config.index.sqlite_path)
    _checkpoint(path)
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)
    for args in (("doctor",), ("search", "betamarker"), ("ingest",)):
        result = run_cli(*args, "--context", "Doc")
        assert_no_traceback(result)
        assert result.code == 1, (args, result)
        said = result.stdout + result.stderr
        assert "damaged" in said and "--repair" in said and "rebuilds the index from the sources" in said, (args, said)


def test_an_export_that_shrinks_leaves_no_dangling_fingerprint(index: Index):
    """A multi-conversation export indexed with one conversation, then with none: its
    fingerprint must not keep naming the conversation that left (the index would depend on its
    history, and doctor would rightly call the fingerprint broken)."""
    export = index.chat / "conversations.json"
    data = json.loads(export.read_text())
    with_turns = [c for c in data if c.get("mapping") and len(c["mapping"]) > 2]
    export.write_text(json.dumps(with_turns[:1]))
    index.ingest()
    export.write_text(json.dumps([c for c in data if not c.get("mapping")]))  # nothing to index
    index.ingest()
    report, checks = index.doctor()
    assert _bad(checks) == {}, _problems(checks)
    with index.conn() as conn:
        row = conn.execute("SELECT doc_id FROM source_fingerprints WHERE source_uri=?", (str(export),)).fetchone()
    assert row[0] == ""


def test_a_vector_that_no_longer_describes_its_chunk_is_found_and_re_embedded(index: Index):
    store = index.store()
    code, chat = index.chunk_ids("d.source_type='repo'")[0], index.chunk_ids("d.source_type='chat'")[0]
    wrong = store.embeddings([chat])[chat]
    store.upsert([code], np.asarray([wrong], dtype=np.float32), [{"doc_id": "x", "source_type": "repo"}])
    _, checks = index.doctor()
    assert checks["vectors_stale"].status == "error" and code in checks["vectors_stale"].examples
    report, checks = index.doctor(repair=True)
    assert report.ok and _bad(checks) == {}, report.as_json()
    assert checks["vectors_stale"].repaired


def test_renaming_a_conversation_re_embeds_its_chunks(index: Index):
    """A conversation's title is in every chunk's header (embedded), not in its text or id:
    after a rename the chunks keep their ids and must get new vectors."""
    export = index.chat / "conversations.json"
    data = json.loads(export.read_text())
    for conv in data:
        conv["title"] = f"Renamed: medieval falconry {conv.get('title')}"
    export.write_text(json.dumps(data))
    summary = index.ingest()
    assert summary.chunks["updated"] >= 1
    _, checks = index.doctor()
    assert checks["vectors_stale"].status == "ok", _problems(checks)


def test_damaged_chroma_store_is_moved_aside_and_rebuilt(index: Index):
    """A garbage chroma.sqlite3 once made doctor advise 'ingest --full', which then failed with
    "'RustBindingsAPI' object has no attribute 'bindings'"."""
    chroma = Path(index.config.index.chroma_dir)
    garbage = os.urandom(64 * 1024)
    (chroma / "chroma.sqlite3").write_bytes(garbage)
    checked = run_cli("doctor", "--context", "Doc", "--json")
    assert_no_traceback(checked)
    embedder = {c["name"]: c for c in checked.json["checks"]}["embedder"]
    assert checked.code == 1 and embedder["status"] == "error" and embedder["repairable"]
    assert "damaged" in embedder["message"] and "--full" not in embedder["message"]
    for args in (("ingest",), ("ingest", "--full")):
        failed = run_cli(*args, "--context", "Doc")
        assert_no_traceback(failed)
        assert failed.code == 1 and "bindings" not in failed.stderr
        assert failed.stderr.count("\n") == 1 and "doctor --context Doc --repair" in failed.stderr, failed

    repaired = run_cli("doctor", "--context", "Doc", "--repair", "--json")
    assert_no_traceback(repaired)
    assert repaired.code == 0, repaired
    kept = [p for p in chroma.parent.iterdir() if p.name.startswith("chroma.damaged-")]
    assert len(kept) == 1 and (kept[0] / "chroma.sqlite3").read_bytes() == garbage
    actions = "\n".join(repaired.json["actions"])
    assert f"moved the damaged Chroma store {chroma} to {kept[0]}" in actions
    total = len(index.chunk_ids())
    assert f"embedded {total} chunks" in actions
    report, checks = index.doctor()
    # The refused ingests are the last runs: a warning a plain ingest settles.
    assert report.ok and _bad(checks) == {"last_ingest": "warning"}, _problems(checks)
    from chinvex.storage import db
    from chinvex.storage.coverage import vector_coverage

    conn = db.connect(Path(index.config.index.sqlite_path))
    try:
        coverage = vector_coverage(conn)
    finally:
        conn.close()
    assert coverage is not None and (coverage.chunks, coverage.with_vector) == (total, total)
    assert index.ingest().chunks["embedded"] == 0
    assert _bad(index.doctor()[1]) == {}


def test_missing_chroma_store_is_an_error_that_repair_fixes(index: Index):
    import shutil

    shutil.rmtree(index.config.index.chroma_dir)
    report, checks = index.doctor()
    assert not report.ok and checks["embedder"].repairable and "missing" in checks["embedder"].message
    assert not Path(index.config.index.chroma_dir).exists()  # checking created nothing
    report, checks = index.doctor(repair=True)
    assert report.ok and _bad(checks) == {}, report.as_json()
    assert any(f"embedded {len(index.chunk_ids())} chunks" in a for a in report.actions)


def test_wait_flag_waits_for_the_lock(index: Index):
    import threading

    from chinvex.locking import context_lock

    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with context_lock(index.config, purpose="ingest"):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    try:
        busy = run_cli("doctor", "--context", "Doc", "--repair")
        assert busy.code == 1 and "pass --wait" in busy.stderr, busy
        timer = threading.Timer(2.0, release.set)
        timer.start()
        waited = run_cli("doctor", "--context", "Doc", "--repair", "--wait", "--json")
        assert waited.code == 0 and waited.json["ok"], waited
        assert release.is_set()  # it returned only after the lock was given back
    finally:
        release.set()
        thread.join()
    plain = run_cli("doctor", "--context", "Doc", "--wait")
    assert plain.code == 0 and "no problems found" in plain.stdout, plain


def test_read_only_index(index: Index, tmp_path: Path):
    """chmod -R a-w on the index folder (the test runs the CLI without root's right to ignore
    file modes): search still works, with vectors; doctor reports no false errors; ingest and
    repair stop with one line and exit 1, changing nothing."""
    from helpers import without_dac_override

    prefix = without_dac_override(tmp_path)
    folder = Path(index.config.index.sqlite_path).parent
    subprocess.run(["chmod", "-R", "a-w", str(folder)], check=True)
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    env = dict(os.environ)

    def run(*args: str) -> subprocess.CompletedProcess:
        from helpers import CHINVEX_BIN

        return subprocess.run([*prefix, str(CHINVEX_BIN), *args], capture_output=True, text=True,
                              env=env, timeout=600)

    try:
        found = run("search", "--context", "Doc", "flux capacitor gigawatts", "--json")
        assert found.returncode == 0, found.stderr
        data = json.loads(found.stdout)
        assert data["stats"]["mode"] == "hybrid", data["stats"]
        assert any("ideamarker" in r["text"] for r in data["results"])
        doctor = run("doctor", "--context", "Doc", "--json")
        assert doctor.returncode == 0, doctor.stdout
        bad = {c["name"]: c["message"] for c in json.loads(doctor.stdout)["checks"] if c["status"] == "error"}
        assert bad == {}
        for args in (("ingest",), ("doctor", "--repair")):
            refused = run(*args, "--context", "Doc")
            assert refused.returncode == 1, (args, refused)
            assert "Traceback" not in refused.stderr and "internal error" not in refused.stderr
            assert refused.stderr.count("\n") == 1 and "read-only" in refused.stderr, refused.stderr
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(folder)], check=True)
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file() and p in before} == before
