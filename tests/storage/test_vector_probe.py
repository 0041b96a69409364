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


def test_one_vector_missing_itself_is_not_damage_on_a_store_chinvex_left_as_it_is(probed):
    store, conn = probed
    _zero(store, sample_chunk_ids(conn)[:1])
    assert unreadable_vectors(store, conn, strict=False) is None
    why = unreadable_vectors(store, conn, strict=True)
    assert why is not None and "1 of 5 stored vectors did not find them" in why, why


def test_most_vectors_missing_themselves_is_damage(probed):
    store, conn = probed
    sampled = sample_chunk_ids(conn)
    _zero(store, sampled[:3])
    why = unreadable_vectors(store, conn, strict=False)
    assert why is not None and "3 of 5 stored vectors did not find them" in why, why


def test_an_ingest_over_a_store_with_one_unreachable_vector_keeps_it(probed, chinvex_home: Path, tmp_path: Path):
    """The ingest that found one miss on every run of a context with many identical chunks:
    the store chinvex signed after its last write is probed leniently and kept."""
    store, conn = probed
    _zero(store, sample_chunk_ids(conn)[:1])
    from chinvex.context.registry import Registry as _Registry
    from chinvex.storage.vector_signature import record_signature

    record_signature(_Registry().resolve("Probe"), conn)  # as the run that wrote it would
    conn.commit()
    (tmp_path / "notes" / "note0.md").write_text("# sourdough\n\nProof it overnight in the fridge.\n",
                                                 encoding="utf-8")
    again = run_cli_in_process("ingest", "--context", "Probe", "--json", env={"CHINVEX_HOME": str(chinvex_home)})
    assert again.code == 0, again
    assert "was unreadable" not in again.stdout + again.stderr, again.stdout
    assert again.json["chunks"]["vectors_healed"] == 0 and again.json["chunks"]["embedded"] == 1, again.json
