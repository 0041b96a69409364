"""The derived vector matrix beside hybrid.db (chinvex.storage.vector_matrix): written by the
writers, trusted only while it holds exactly the store's current vectors, brought up to date
from the run's own writes, never written by a search. Real SQLite, real Chroma, the real
built-in embedder (a real ingest writes the store)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from helpers import run_cli, run_cli_in_process

from chinvex.storage import db, vector_matrix
from chinvex.storage.vector_matrix_refresh import refresh
from chinvex.storage.vector_signature import recorded_signature


def _notes(root: Path, count: int, word: str = "otter") -> Path:
    notes = root / "notes"
    notes.mkdir(exist_ok=True)
    for i in range(count):
        (notes / f"n{i:02d}.md").write_text(f"# {word} {i}\n\nThe {word} number {i} keeps pebble {i * 7} "
                                            "near the river bank.\n")
    return notes


@pytest.fixture
def context(tmp_path, monkeypatch):
    """A context of twelve notes, ingested: (config, notes folder)."""
    monkeypatch.setenv("CHINVEX_HOME", str(tmp_path / "home"))
    notes = _notes(tmp_path, 12)
    assert run_cli_in_process("context", "create", "M", "--note-root", str(notes)).code == 0
    assert run_cli_in_process("ingest", "--context", "M").code == 0
    from chinvex.context.registry import Registry

    return Registry().resolve("M"), notes


def _current(config) -> vector_matrix.VectorMatrix | None:
    conn = db.connect(Path(config.index.sqlite_path))
    try:
        return vector_matrix.current(config.index.chroma_dir, config.index.sqlite_path,
                                     recorded_signature(conn), db.get_meta(conn, "embedder"))
    finally:
        conn.close()


def _store_content(config) -> dict[str, tuple[list[float], str]]:
    from chinvex.storage.vectors import VectorStore

    conn = db.connect(Path(config.index.sqlite_path))
    store = VectorStore.open(config, conn, create=False)
    try:
        ids, vectors, types = store.all_vectors()
    finally:
        store.close()
        conn.close()
    return {cid: (list(np.asarray(v, dtype=np.float32)), t) for cid, v, t in zip(ids, vectors, types)}


def _matrix_content(matrix: vector_matrix.VectorMatrix) -> dict[str, tuple[list[float], str]]:
    return {raw.decode(): (list(matrix.vectors[i]), matrix.header.source_types[int(matrix.types[i])])
            for i, raw in enumerate(matrix.ids.tolist())}


def test_an_ingest_writes_a_matrix_that_holds_exactly_the_stores_vectors(context):
    config, _ = context
    matrix = _current(config)
    assert matrix is not None
    assert _matrix_content(matrix) == _store_content(config)
    assert list(matrix.ids) == sorted(matrix.ids)  # rows by chunk id


def test_an_ingest_that_changes_vectors_merges_them_into_the_matrix(context):
    config, notes = context
    (notes / "n03.md").write_text("# heron\n\nA heron stands in the shallow water at dawn.\n")
    (notes / "n05.md").unlink()
    (notes / "new.md").write_text("# kingfisher\n\nA kingfisher dives for a minnow.\n")
    assert run_cli_in_process("ingest", "--context", "M").code == 0
    matrix = _current(config)
    assert matrix is not None
    assert _matrix_content(matrix) == _store_content(config)


def test_the_run_merges_its_own_writes_and_reads_back_otherwise(context):
    """The writer's hook merges what its store object wrote into the matrix that was current
    before; with no record of the starting content it reads every vector back."""
    from chinvex.storage.vectors import VectorStore

    config, _ = context
    conn = db.connect(Path(config.index.sqlite_path))
    store = VectorStore.open(config, conn, create=False)
    try:
        victim = min(_store_content(config))
        store.delete([victim])
        store.upsert(["extra"], np.full((1, 384), 0.05, dtype=np.float32), [{"doc_id": "d", "source_type": "chat"}])
        assert _current(config) is None  # written since: not trusted
        assert refresh(config, conn, store, sign=True) == "merged"
        assert refresh(config, conn, None) == "current"
        os.remove(vector_matrix.matrix_path(config.index.sqlite_path))
        assert refresh(config, conn, None) == "read"
    finally:
        store.close()
        conn.close()
    matrix = _current(config)
    assert matrix is not None
    content = _matrix_content(matrix)
    assert victim not in content and content["extra"][1] == "chat"
    assert content == _store_content(config)


def test_a_write_through_the_gate_or_behind_its_back_makes_it_stale(context):
    from chinvex.storage.vector_gate import StoreGate

    config, _ = context
    assert _current(config) is not None
    segment = next(p for p in Path(config.index.chroma_dir).rglob("*.bin"))
    stat = segment.stat()
    os.utime(segment, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a file changed outside chinvex
    assert _current(config) is None
    os.utime(segment, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _current(config) is not None
    gate = StoreGate(Path(config.index.chroma_dir))
    try:
        gate.acquire(exclusive=True, timeout=5)
        gate.bump()  # what every write through chinvex does first
        gate.release()
    finally:
        gate.close()
    assert _current(config) is None


def test_another_embedder_or_a_foreign_signature_is_not_trusted(context):
    config, _ = context
    matrix = _current(config)
    assert matrix is not None
    recorded, embedder = matrix.header.stamp.signature, matrix.header.embedder
    assert vector_matrix.current(config.index.chroma_dir, config.index.sqlite_path, recorded, "other") is None
    assert vector_matrix.current(config.index.chroma_dir, config.index.sqlite_path, {}, embedder) is None
    assert vector_matrix.current(config.index.chroma_dir, config.index.sqlite_path, None, embedder) is None


def test_a_store_above_the_limit_gets_no_matrix(context, monkeypatch):
    config, notes = context
    monkeypatch.setattr(vector_matrix, "MAX_VECTORS", 5)
    (notes / "n01.md").write_text("# heron\n\nA heron.\n")
    assert run_cli_in_process("ingest", "--context", "M").code == 0
    assert not vector_matrix.matrix_path(config.index.sqlite_path).exists()
    found = run_cli("search", "--context", "M", "--mode", "vector", "--json", "otter pebble")
    assert found.code == 0 and '"results"' in found.stdout  # from Chroma, as before


def test_a_search_never_writes_it(context):
    config, _ = context
    path = vector_matrix.matrix_path(config.index.sqlite_path)
    os.remove(path)
    found = run_cli("search", "--context", "M", "--json", "otter pebble")
    assert found.code == 0
    assert not path.exists()


def test_a_reader_of_the_old_file_keeps_its_rows_after_a_rewrite(tmp_path):
    path = tmp_path / vector_matrix.MATRIX_FILE
    stamp = vector_matrix.Stamp("t" * 32, {"seg/data.bin": [1, 2, 3]})
    rng = np.random.default_rng(5)
    first = rng.normal(size=(50, 8)).astype(np.float32)
    ids = [f"c{i:02d}" for i in range(50)]
    vector_matrix.write(path, ids, first, ["note"] * 50, stamp, "e")
    old = vector_matrix.open_matrix(path)
    vector_matrix.write(path, ids[:3], first[:3] * 2, ["chat"] * 3, stamp, "e")
    assert old is not None and np.array_equal(old.rows(["c10"])["c10"], first[10])
    new = vector_matrix.open_matrix(path)
    assert new is not None and len(new) == 3 and new.rows(["c10"]) == {}
    assert not [p for p in tmp_path.iterdir() if p.name != vector_matrix.MATRIX_FILE]  # no temporary left


def test_candidates_are_the_best_by_cosine_with_filters(tmp_path):
    path = tmp_path / vector_matrix.MATRIX_FILE
    rng = np.random.default_rng(9)
    vectors = rng.normal(size=(400, 16)).astype(np.float32)
    vectors[7] = 0.0  # a zero vector scores nothing and breaks nothing
    ids = [f"id-{i:03d}" for i in range(400)]
    types = ["note" if i % 3 else "chat" for i in range(400)]
    vector_matrix.write(path, list(reversed(ids)), vectors[::-1], list(reversed(types)),
                        vector_matrix.Stamp("t", {}), None)
    matrix = vector_matrix.open_matrix(path)
    assert matrix is not None
    query = rng.normal(size=16).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1)
    cosine = vectors @ query / (np.where(norms > 0, norms, 1) * np.linalg.norm(query))

    def best(allowed: list[int], n: int) -> list[str]:
        return [ids[i] for i in sorted(allowed, key=lambda i: -cosine[i])[:n]]

    assert [cid for cid, _ in matrix.candidates(query, 10)] == best(list(range(400)), 10)
    chats = [i for i in range(400) if types[i] == "chat"]
    assert [cid for cid, _ in matrix.candidates(query, 10, source_types=["chat"])] == best(chats, 10)
    some = [row for _, row in matrix.positions([ids[i] for i in range(0, 400, 11)])]
    assert [cid for cid, _ in matrix.candidates(query, 5, rows=some)] == best(list(range(0, 400, 11)), 5)
    many = [row for _, row in matrix.positions(ids[:300])]
    assert [cid for cid, _ in matrix.candidates(query, 5, rows=many, source_types=["note"])] == \
        best([i for i in range(300) if types[i] == "note"], 5)
    assert matrix.candidates(query, 5, source_types=["repo"]) == []
    assert matrix.positions(["id-005", "missing"]) == [("id-005", 5)]


def test_a_damaged_or_foreign_file_is_not_used(tmp_path):
    path = tmp_path / vector_matrix.MATRIX_FILE
    path.write_bytes(b"not a matrix")
    assert vector_matrix.open_matrix(path) is None
    vector_matrix.write(path, ["a", "b"], np.ones((2, 4), dtype=np.float32), ["note", "note"],
                        vector_matrix.Stamp("t", {}), None)
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size - 1)  # cut short
    assert vector_matrix.open_matrix(path) is None
    assert vector_matrix.open_matrix(tmp_path / "absent") is None


def test_doctor_calls_a_stale_matrix_unused_not_damage_and_repair_rewrites_it(context):
    import json

    config, _ = context
    from chinvex.storage.vectors import VectorStore

    conn = db.connect(Path(config.index.sqlite_path))
    store = VectorStore.open(config, conn, create=False)
    try:
        store.delete([min(_store_content(config))])  # a write that no run follows up
    finally:
        store.close()
        conn.close()
    assert _current(config) is None
    checked = run_cli_in_process("doctor", "--context", "M", "--json")
    report = json.loads(checked.stdout)
    files = next(c for c in report["checks"] if c["name"] == "index_files")
    assert "vector matrix stale, not used" in files["message"] and not files.get("problems")
    assert run_cli_in_process("doctor", "--context", "M", "--repair").code == 0
    matrix = _current(config)
    assert matrix is not None and _matrix_content(matrix) == _store_content(config)


def test_an_import_writes_the_matrix_of_the_store_it_filled(context, tmp_path):
    config, _ = context
    out = tmp_path / "m.chinvex"
    assert run_cli_in_process("export", "--context", "M", "--out", str(out), "--include-vectors").code == 0
    assert run_cli_in_process("context", "create", "copy").code == 0
    assert run_cli_in_process("import", str(out), "--context", "copy", "--json").code == 0
    from chinvex.context.registry import Registry

    copy = Registry().resolve("copy")
    matrix = _current(copy)
    assert matrix is not None and _matrix_content(matrix) == _store_content(copy)
    assert set(_store_content(copy)) == set(_store_content(config))
