"""Issue 17 (ingest speed): processes that write an embedded Chroma store drive Chroma's compiled
bindings directly (chinvex.storage.chroma_writer) instead of importing the `chromadb` package.
What they write must be what chromadb's own client writes: the same collection configuration,
and a store chromadb reads back exactly (ids, vectors, metadata, neighbours), in both directions.
Real stores, real bindings, chromadb's real client as the reference."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chinvex.storage.chroma_reader import bindings_available
from chinvex.storage.chroma_writer import (CollectionNotFoundError, create_configuration_json, open_writer,
                                           update_configuration_json)
from chinvex.storage.vectors import SYNC_THRESHOLD

pytestmark = [
    pytest.mark.skipif(not bindings_available(), reason="chromadb's Rust bindings changed shape: the writer "
                       "steps aside and chromadb's client is used (tested everywhere else)"),
    # chromadb's own warning when it reads back the configuration it writes for embedding_function=None
    pytest.mark.filterwarnings("ignore:legacy embedding function config:DeprecationWarning"),
]

CONFIGURATION = {"hnsw": {"space": "cosine", "sync_threshold": SYNC_THRESHOLD}}
NAME = "chinvex_0123456789abcdef"


def _chromadb(path: Path):
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False, allow_reset=False))


def _vectors(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 16)).astype(np.float32)


def _metadatas(n: int, offset: int = 0) -> list[dict]:
    return [{"doc_id": f"d{(i + offset) % 5}", "source_type": "chat" if i % 3 else "repo", "ordinal": i + offset}
            for i in range(n)]


def test_configuration_is_serialised_as_chromadb_serialises_it():
    from chromadb.api.collection_configuration import (create_collection_configuration_to_json_str,
                                                       update_collection_configuration_to_json_str)

    assert create_configuration_json(CONFIGURATION) == create_collection_configuration_to_json_str(
        {"hnsw": dict(CONFIGURATION["hnsw"])}, None)
    change = {"hnsw": {"sync_threshold": SYNC_THRESHOLD}}
    assert update_configuration_json(change) == update_collection_configuration_to_json_str(change)
    with pytest.raises(ValueError, match="spann"):
        create_configuration_json({"hnsw": {}, "spann": {}})


def test_a_store_written_here_is_the_store_chromadb_would_have_written(tmp_path: Path):
    ours_path, theirs_path = tmp_path / "direct", tmp_path / "chromadb"
    writer = open_writer(str(ours_path))
    assert writer is not None
    with pytest.raises(CollectionNotFoundError, match="does not exist"):
        writer.get_collection(NAME)
    ours = writer.get_or_create_collection(NAME, configuration=CONFIGURATION)
    theirs = _chromadb(theirs_path).get_or_create_collection(NAME, embedding_function=None,
                                                             configuration=CONFIGURATION)
    assert ours.configuration_json == theirs.configuration_json
    first, second = _vectors(40, 1), _vectors(10, 2)
    ids = [f"c{i:03d}" for i in range(40)]
    for collection in (ours, theirs):
        collection.upsert(ids=ids, embeddings=first, metadatas=_metadatas(40))
        collection.upsert(ids=ids[:10], embeddings=second, metadatas=_metadatas(10, offset=100))  # replaces
        collection.delete(ids=ids[30:35])
        collection.modify(configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD}})
    writer.close()

    reread = _chromadb(ours_path).get_collection(NAME, embedding_function=None)
    assert reread.configuration_json == theirs.configuration_json
    mine = reread.get(include=["embeddings", "metadatas"])
    other = theirs.get(include=["embeddings", "metadatas"])
    assert sorted(mine["ids"]) == sorted(other["ids"]) == sorted(ids[:30] + ids[35:])
    by_id = dict(zip(other["ids"], zip(other["embeddings"], other["metadatas"])))
    for cid, vector, metadata in zip(mine["ids"], mine["embeddings"], mine["metadatas"]):
        assert np.array_equal(np.asarray(vector), np.asarray(by_id[cid][0])) and metadata == by_id[cid][1]
    for probe in (second[0], first[20], first[39]):
        a = reread.query(query_embeddings=[probe], n_results=8, include=["distances"])
        b = theirs.query(query_embeddings=[probe], n_results=8, include=["distances"])
        assert a["ids"] == b["ids"] and a["distances"] == b["distances"]
        a = reread.query(query_embeddings=[probe], n_results=5, where={"source_type": "chat"})
        assert a["ids"] == theirs.query(query_embeddings=[probe], n_results=5, where={"source_type": "chat"})["ids"]


def test_a_store_chromadb_wrote_takes_writes_from_here(tmp_path: Path):
    client = _chromadb(tmp_path)
    theirs = client.get_or_create_collection(NAME, embedding_function=None, configuration=CONFIGURATION)
    theirs.upsert(ids=["a", "b"], embeddings=_vectors(2, 3), metadatas=_metadatas(2))
    writer = open_writer(str(tmp_path))
    assert writer is not None
    ours = writer.get_collection(NAME)
    assert ours.configuration_json == theirs.configuration_json
    ours.upsert(ids=["c"], embeddings=_vectors(1, 4), metadatas=_metadatas(1, offset=2))
    ours.delete(ids=["a"])
    assert [c.name for c in writer.list_collections()] == [NAME]
    writer.get_or_create_collection("chinvex_other_collection", configuration=CONFIGURATION)
    writer.delete_collection("chinvex_other_collection")
    writer.close()
    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # a client loads the index once: read with a new one
    got = _chromadb(tmp_path).get_collection(NAME, embedding_function=None).get(include=["embeddings"])
    assert sorted(got["ids"]) == ["b", "c"]
    # stored as Chroma stores every vector (normalised for cosine, then scaled back): float32-close
    assert np.allclose(got["embeddings"][got["ids"].index("c")], _vectors(1, 4)[0], rtol=1e-6, atol=1e-7)


INGEST = """
import atexit, os, sys
def report():
    print("chromadb imported:", "chromadb" in sys.modules, file=sys.stderr, flush=True)
atexit.register(report)
_exit = os._exit
def exit_now(code):
    report()
    _exit(code)
os._exit = exit_now
sys.argv = ["chinvex", *sys.argv[1:]]
from chinvex.entry import main
main()
"""


def test_an_ingest_writes_its_store_without_importing_chromadb(tmp_path: Path, chinvex_home: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "falcons.md").write_text("# Falcons\n\nThe merlin is a small falcon that hunts songbirds.\n")
    (notes / "rivers.md").write_text("# Rivers\n\nA meander forms where a river bends across its plain.\n")
    env = {**os.environ, "CHINVEX_HOME": str(chinvex_home)}

    def chinvex(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", INGEST, *args], capture_output=True, text=True,
                              timeout=300, env=env)

    assert chinvex("context", "create", "Birds", "--note-root", str(notes)).returncode == 0
    first = chinvex("ingest", "--context", "Birds")
    assert first.returncode == 0, first.stderr
    assert "chromadb imported: False" in first.stderr
    (notes / "falcons.md").write_text("# Falcons\n\nThe peregrine stoops on pigeons at great speed.\n")
    again = chinvex("ingest", "--context", "Birds")
    assert again.returncode == 0 and "chromadb imported: False" in again.stderr, again.stderr
    found = chinvex("search", "--context", "Birds", "falcon diving on pigeons", "--mode", "vector", "--json")
    assert found.returncode == 0, found.stderr
    assert '"falcons.md' in found.stdout or "falcons.md" in found.stdout
    assert "peregrine" in found.stdout and "merlin" not in found.stdout


def test_a_collection_of_an_older_chinvex_is_switched_to_saving_every_write(tmp_path: Path, chinvex_home: Path):
    """A collection made before SYNC_THRESHOLD (Chroma's default, 1,000) is changed through the
    writer's `modify` before the first write, and the write lands."""
    from chromadb.api.shared_system_client import SharedSystemClient

    from chinvex.context.registry import Registry
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore, collection_name
    from helpers import indexed_notes

    indexed_notes(tmp_path / "notes", "Old", {"owls.md": "# Owls\n\nThe barn owl hunts by sound in complete darkness.\n"})
    config = Registry().resolve("Old")
    conn = db.connect(Path(config.index.sqlite_path))
    name = collection_name(conn, create=False)
    older = _chromadb(Path(config.index.chroma_dir)).get_collection(name, embedding_function=None)
    older.modify(configuration={"hnsw": {"sync_threshold": 1000}})
    assert older.configuration_json["hnsw"]["sync_threshold"] == 1000
    SharedSystemClient.clear_system_cache()

    store = VectorStore.open(config, conn)
    assert store is not None
    try:
        store.upsert(["owl000000001"], _vectors(1, 5).repeat(24, axis=1),
                     [{"doc_id": "d-owl", "source_type": "note"}])
    finally:
        store.close()
        conn.close()
    reread = _chromadb(Path(config.index.chroma_dir)).get_collection(name, embedding_function=None)
    assert reread.configuration_json["hnsw"]["sync_threshold"] == SYNC_THRESHOLD
    assert "owl000000001" in reread.get(include=[])["ids"]


def test_bindings_that_take_other_arguments_are_left_to_chromadb(tmp_path: Path, monkeypatch):
    """The writer passes arguments by position, as chromadb does: bindings whose methods were
    renamed, reordered or given a new required parameter are not driven at all (chromadb's
    client, always correct, is used instead)."""
    import chromadb_rust_bindings as rust

    from chinvex.storage import chroma_writer
    from chinvex.storage.chroma_reader import READ_CALLS, calls_match

    assert calls_match(chroma_writer.WRITE_CALLS) and calls_match(READ_CALLS)  # the installed ones
    upsert = chroma_writer.WRITE_CALLS["upsert"]
    assert open_writer(str(tmp_path / "a")) is not None
    swapped = ("collection_id", "embeddings", "ids", *upsert[3:])
    monkeypatch.setattr(chroma_writer, "WRITE_CALLS", {**chroma_writer.WRITE_CALLS, "upsert": swapped})
    assert open_writer(str(tmp_path / "b")) is None

    class Grown:  # the same calls, one of them with a new parameter it cannot do without
        def upsert(self, collection_id, ids, embeddings, metadatas=None, documents=None, uris=None,
                   tenant=None, database=None, *, durability):  # pragma: no cover - never called
            raise AssertionError

    monkeypatch.setattr(rust, "Bindings", Grown)
    assert not calls_match({"upsert": upsert})
    assert calls_match({"upsert": (*upsert, "durability")})
    assert not calls_match({"count": ("collection_id", "tenant", "database")})  # gone


def test_without_usable_bindings_an_ingest_writes_through_chromadb(tmp_path: Path, chinvex_home: Path,
                                                                 monkeypatch):
    """The fallback: `open_writer` stepping aside (bindings of another shape) leaves chromadb's
    own client to write the store, which a `chinvex search` process then reads."""
    from chinvex.storage import chroma_writer
    from helpers import indexed_notes, run_cli

    stepped_aside: list[str] = []
    monkeypatch.setattr(chroma_writer, "open_writer", lambda path: stepped_aside.append(path))
    indexed_notes(tmp_path / "notes", "Fallback",
                  {"kites.md": "# Kites\n\nThe red kite circles low over open farmland.\n"})
    assert stepped_aside  # the writer was asked, and chromadb's client did the writing
    found = run_cli("search", "--context", "Fallback", "bird of prey over fields", "--mode", "vector", "--json")
    assert found.code == 0 and "red kite" in found.json["results"][0]["text"]
