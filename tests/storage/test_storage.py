"""Issue 2: hybrid.db schema, pragmas, migrations and FTS5 consistency under updates/deletes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chinvex.errors import SchemaTooNewError, StorageError
from chinvex.storage import db

SEED_TABLES = {"documents", "chunks", "chunks_fts", "source_fingerprints", "ingest_runs", "meta"}


def _doc(conn, doc_id="d1"):
    conn.execute(
        "INSERT INTO documents(doc_id, source_type, source_uri, origin_uri) VALUES(?, 'repo', ?, ?)",
        (doc_id, f"/x/{doc_id}", f"/x/{doc_id}"),
    )


def _chunk(conn, chunk_id, text, doc_id="d1", index=0):
    conn.execute(
        "INSERT INTO chunks(chunk_id, doc_id, chunk_index, text, search_text, embed_hash) "
        "VALUES(?, ?, ?, ?, ?, ?)",
        (chunk_id, doc_id, index, text, text, chunk_id),
    )


def _fts(conn, term) -> set[str]:
    rows = conn.execute("SELECT chunk_id FROM chunks_fts WHERE chunks_fts MATCH ?", (term,))
    return {r[0] for r in rows}


def _fts_integrity(conn) -> None:
    # Raises sqlite3.DatabaseError ("database disk image is malformed") on stale postings.
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")


def test_fresh_database_has_every_table_and_pragmas(tmp_path: Path):
    conn = db.connect(tmp_path / "hybrid.db", create=True)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table')")}
    assert SEED_TABLES | {"conversation_turns"} <= tables
    assert db.get_meta(conn, "schema_version") == str(db.latest_version())
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == db.BUSY_TIMEOUT_MS


def test_missing_file_is_not_created_silently(tmp_path: Path):
    with pytest.raises(StorageError, match="index not found"):
        db.connect(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()


def test_migrations_are_numbered_and_rerun_is_a_no_op(tmp_path: Path):
    path = tmp_path / "hybrid.db"
    db.initialise(path)
    conn = db.connect(path)
    assert db.migrate(conn, path) == db.latest_version()
    versions = [m.version for m in db.migrations()]
    assert versions == list(range(1, len(versions) + 1))


def test_newer_schema_is_refused_with_upgrade_message(tmp_path: Path):
    path = tmp_path / "hybrid.db"
    db.initialise(path)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    raw.commit()
    raw.close()
    with pytest.raises(SchemaTooNewError, match="upgrade chinvex"):
        db.connect(path)


def test_garbage_file_is_a_clear_storage_error(tmp_path: Path):
    path = tmp_path / "hybrid.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="not a usable chinvex index"):
        db.connect(path)


def test_fts_follows_updates_and_deletes(tmp_path: Path):
    conn = db.connect(tmp_path / "hybrid.db", create=True)
    _doc(conn)
    _chunk(conn, "c1", "alpha bravo")
    assert _fts(conn, "alpha") == {"c1"}
    conn.execute("UPDATE chunks SET text='charlie', search_text='charlie delta' WHERE chunk_id='c1'")
    assert _fts(conn, "alpha") == set()
    assert _fts(conn, "delta") == {"c1"}
    conn.execute("DELETE FROM chunks WHERE chunk_id='c1'")
    assert _fts(conn, "delta") == set()
    _fts_integrity(conn)


def test_cascade_delete_of_a_document_cleans_fts(tmp_path: Path):
    conn = db.connect(tmp_path / "hybrid.db", create=True)
    _doc(conn)
    _chunk(conn, "c1", "echo foxtrot", index=0)
    _chunk(conn, "c2", "golf echo", index=1)
    conn.execute("DELETE FROM documents WHERE doc_id='d1'")
    assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == 0
    assert _fts(conn, "echo") == set()
    _fts_integrity(conn)


WORDS = st.sampled_from(["apple", "banana", "cherry", "damson", "elder", "fig", "grape"])
OPS = st.lists(
    st.tuples(
        st.sampled_from(["insert", "update", "delete"]),
        st.integers(min_value=0, max_value=5),
        st.lists(WORDS, min_size=1, max_size=4),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_fts_never_keeps_stale_postings(tmp_path: Path, ops):
    """Random insert/update/delete sequences: every FTS answer equals a brute-force scan."""
    path = tmp_path / f"h{abs(hash(str(ops)))}.db"
    conn = db.connect(path, create=True)
    _doc(conn)
    model: dict[str, str] = {}
    for op, slot, words in ops:
        cid = f"c{slot}"
        text = " ".join(words)
        if op == "insert" and cid not in model:
            _chunk(conn, cid, text, index=slot)
            model[cid] = text
        elif op == "update" and cid in model:
            conn.execute("UPDATE chunks SET text=?, search_text=? WHERE chunk_id=?", (text, text, cid))
            model[cid] = text
        elif op == "delete" and cid in model:
            conn.execute("DELETE FROM chunks WHERE chunk_id=?", (cid,))
            del model[cid]
    for word in ["apple", "banana", "cherry", "damson", "elder", "fig", "grape"]:
        expected = {cid for cid, text in model.items() if word in text.split()}
        assert _fts(conn, word) == expected
    _fts_integrity(conn)
    conn.close()
    path.unlink()
