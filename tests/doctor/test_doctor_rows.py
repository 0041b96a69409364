"""`chinvex doctor` and the rows of hybrid.db: the full-text index, fingerprints without documents,
documents without chunks, the origin ledger, documents of vanished sources and dangling rows."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("damage", ["ghost_posting", "missing_posting"])
def test_fts_damage_is_found_and_rebuilt(index, damage: str):
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


def test_fingerprint_whose_document_is_missing_is_cleared_and_reread(index):
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
    assert index.bad(checks) == {}


def test_document_without_chunks_is_rewritten_by_the_next_ingest(index):
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
    assert report.ok and index.bad(checks) == {}


def test_origin_ledger_out_of_step_with_documents(index):
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
    assert report.ok and index.bad(checks) == {"untracked_documents": "warning"}, report.as_json()
    summary = index.ingest()
    assert summary.sources.indexed == 1
    assert index.bad(index.doctor()[1]) == {}


def test_documents_of_a_vanished_unrecorded_source_are_removed(index):
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
    assert report.ok and index.bad(checks) == {}, report.as_json()
    assert not index.chunk_ids("d.origin_uri=?", (uri,))
    assert not index.store().existing(gone)


def test_dangling_rows_are_deleted(index):
    with index.conn() as conn:
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("INSERT INTO chunks(chunk_id, doc_id, chunk_index, text, search_text, embed_hash) "
                     "VALUES('dangling0001', 'nodoc', 0, 'orphaned text', 'orphaned quuxword', 'x')")
        conn.execute("INSERT INTO conversation_turns(doc_id, turn_index, turn_json) VALUES('nodoc', 0, '{}')")
    _, checks = index.doctor()
    assert checks["foreign_keys"].status == "error" and checks["foreign_keys"].count == 2
    assert checks["vectors_missing"].status == "error"  # the dangling chunk has no vector either
    report, checks = index.doctor(repair=True)
    assert report.ok and index.bad(checks) == {}, report.as_json()
    with index.conn() as conn:
        assert not conn.execute("SELECT 1 FROM chunks WHERE chunk_id='dangling0001'").fetchone()
        assert not conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'quuxword'").fetchall()


def test_an_export_that_shrinks_leaves_no_dangling_fingerprint(index):
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
    assert index.bad(checks) == {}, index.problems(checks)
    with index.conn() as conn:
        row = conn.execute("SELECT doc_id FROM source_fingerprints WHERE source_uri=?", (str(export),)).fetchone()
    assert row[0] == ""
