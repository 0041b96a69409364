"""The vector probe (chinvex.storage.vector_probe) on a real index: one stored vector that does
not find itself is not damage (a sound HNSW graph can leave a chunk unreachable, as when many
chunks share one text), most of them missing is. A zero vector is how a test makes a stored
vector miss itself for certain: its cosine to everything, itself included, is 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli_in_process

from chinvex.context.registry import Registry
from chinvex.storage import db
from chinvex.storage.vector_probe import sample_chunk_ids, unreadable_vectors
from chinvex.storage.vectors import VectorStore

TOPICS = ("sourdough starters and proofing times", "rust borrow checker lifetimes",
          "kubernetes pod autoscaling rules", "postgres vacuum and bloat", "bird migration routes",
          "tidal energy turbines", "medieval bookbinding")


@pytest.fixture
def probed(tmp_path: Path, chinvex_home: Path, monkeypatch):
    notes = tmp_path / "notes"
    notes.mkdir()
    for n, topic in enumerate(TOPICS):
        (notes / f"note{n}.md").write_text(f"# {topic}\n\nA short note about {topic}.\n", encoding="utf-8")
    env = {"CHINVEX_HOME": str(chinvex_home)}
    assert run_cli_in_process("context", "create", "Probe", "--note-root", str(notes), env=env).code == 0
    assert run_cli_in_process("ingest", "--context", "Probe", env=env).code == 0
    monkeypatch.setenv("CHINVEX_HOME", str(chinvex_home))
    config = Registry().resolve("Probe")
    conn = db.connect(Path(config.index.sqlite_path))
    store = VectorStore.open(config, conn, create=False)
    assert store is not None
    yield store, conn
    store.close()
    conn.close()


def _zero(store: VectorStore, ids: list[str]) -> None:
    store.upsert(ids, [[0.0] * 384 for _ in ids], [{"source_type": "note"} for _ in ids])


def test_a_sound_store_passes(probed):
    store, conn = probed
    assert len(sample_chunk_ids(conn)) == 5
    assert unreadable_vectors(store, conn) is None


def test_one_vector_missing_itself_is_not_damage(probed):
    store, conn = probed
    _zero(store, sample_chunk_ids(conn)[:1])
    assert unreadable_vectors(store, conn) is None


def test_most_vectors_missing_themselves_is_damage(probed):
    store, conn = probed
    sampled = sample_chunk_ids(conn)
    _zero(store, sampled[:3])
    why = unreadable_vectors(store, conn)
    assert why is not None and "3 of 5 stored vectors did not find them" in why, why
