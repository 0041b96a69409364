"""`chinvex doctor` and the vector store: missing, orphaned and stale vectors, a changed embedder
or dimension, and a damaged or missing Chroma store, each found and (where it can be) repaired."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from helpers import assert_no_traceback, run_cli, run_cli_in_process


def test_every_stored_chunk_can_be_embedded_again_from_its_row(index):
    """The repair re-embeds from what is stored; that must be the exact text the writer
    embedded, for code (identifier parts in the search text), notes and conversations."""
    from chinvex.storage.consistency import embed_text_of, iter_chunk_rows

    with index.conn() as conn:
        ids = [r[0] for r in conn.execute("SELECT chunk_id FROM chunks")]
        rows = list(iter_chunk_rows(conn, ids))
        types = {r["source_type"] for r in rows}
    assert {"repo", "note", "chat", "codex_session"} <= types
    assert rows and all(embed_text_of(r) is not None for r in rows)


def test_missing_vectors_are_re_embedded_to_the_same_vectors(index):
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
    assert report.ok and index.bad(checks) == {}, report.as_json()
    assert checks["vectors_missing"].repaired
    assert any("embedded 4 chunks" in a for a in report.actions)
    after = index.store().embeddings(victims)
    for cid in victims:
        a, b = np.asarray(before[cid]), np.asarray(after[cid])
        assert float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) > 0.999


def test_orphan_vectors_are_deleted(index):
    store = index.store()
    store.upsert(["0rphan000001", "0rphan000002"], np.ones((2, 384), dtype=np.float32),
                 [{"doc_id": "gone", "source_type": "repo"}] * 2)
    _, checks = index.doctor()
    assert checks["vectors_orphaned"].status == "error" and checks["vectors_orphaned"].count == 2
    report, checks = index.doctor(repair=True)
    assert report.ok and index.bad(checks) == {}
    assert not index.store().existing(["0rphan000001", "0rphan000002"])


def test_embedder_mismatch_is_reported_and_not_repaired(index):
    with index.conn() as conn:
        conn.execute("UPDATE meta SET value='ollama:nomic-embed-text' WHERE key='embedder'")
    result = run_cli_in_process("doctor", "--context", "Doc", "--repair", "--json")
    assert_no_traceback(result)
    assert result.code == 1
    checks = {c["name"]: c for c in result.json["checks"]}
    assert checks["embedder"]["status"] == "error" and not checks["embedder"]["repairable"]
    assert "--full" in checks["embedder"]["message"]
    assert checks["vectors_missing"]["status"] == "ok" and "not checked" in checks["vectors_missing"]["message"]


def test_vector_dimension_disagreeing_with_meta(index):
    with index.conn() as conn:
        conn.execute("UPDATE meta SET value='768' WHERE key='embedding_dimension'")
    _, checks = index.doctor()
    assert checks["embedder"].status == "error"
    assert "768" in checks["embedder"].examples[0] and "384" in checks["embedder"].examples[0]


def test_a_vector_that_no_longer_describes_its_chunk_is_found_and_re_embedded(index):
    store = index.store()
    code, chat = index.chunk_ids("d.source_type='repo'")[0], index.chunk_ids("d.source_type='chat'")[0]
    wrong = store.embeddings([chat])[chat]
    store.upsert([code], np.asarray([wrong], dtype=np.float32), [{"doc_id": "x", "source_type": "repo"}])
    _, checks = index.doctor()
    assert checks["vectors_stale"].status == "error" and code in checks["vectors_stale"].examples
    report, checks = index.doctor(repair=True)
    assert report.ok and index.bad(checks) == {}, report.as_json()
    assert checks["vectors_stale"].repaired


def test_renaming_a_conversation_re_embeds_its_chunks(index):
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
    assert checks["vectors_stale"].status == "ok", index.problems(checks)


def test_damaged_chroma_store_is_moved_aside_and_rebuilt(index):
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
    assert report.ok and index.bad(checks) == {"last_ingest": "warning"}, index.problems(checks)
    from chinvex.storage import db
    from chinvex.storage.coverage import vector_coverage

    conn = db.connect(Path(index.config.index.sqlite_path))
    try:
        coverage = vector_coverage(conn)
    finally:
        conn.close()
    assert coverage is not None and (coverage.chunks, coverage.with_vector) == (total, total)
    assert index.ingest().chunks["embedded"] == 0
    assert index.bad(index.doctor()[1]) == {}


def test_missing_chroma_store_is_an_error_that_repair_fixes(index):
    import shutil

    shutil.rmtree(index.config.index.chroma_dir)
    report, checks = index.doctor()
    assert not report.ok and checks["embedder"].repairable and "missing" in checks["embedder"].message
    assert not Path(index.config.index.chroma_dir).exists()  # checking created nothing
    report, checks = index.doctor(repair=True)
    assert report.ok and index.bad(checks) == {}, report.as_json()
    assert any(f"embedded {len(index.chunk_ids())} chunks" in a for a in report.actions)
