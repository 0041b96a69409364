"""Issue 17 (cold search): a read-only process (`chinvex search`, `chinvex answer`) reads its
embedded Chroma stores through Chroma's compiled bindings without importing the `chromadb`
package (chinvex.storage.chroma_reader). It must read exactly what chromadb's own client reads
from the same files: same ids, same stored vectors, same neighbours and distances; and a search
through it must give byte-identical results. Real store: a context ingested with the real
embedder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from chinvex.storage.chroma_reader import bindings_available, open_reader

pytestmark = pytest.mark.skipif(not bindings_available(), reason="chromadb's Rust bindings changed shape: "
                                "the reader steps aside and chromadb's client is used (tested everywhere else)")


def _store(fixtures_context):
    config = json.loads((fixtures_context["home"] / "contexts" / "fixtures" / "context.json").read_text())
    return config["index"]["chroma_dir"]


def test_the_reader_reads_what_chromadb_reads(fixtures_context):
    import chromadb
    from chromadb.config import Settings

    path = _store(fixtures_context)
    reference = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    reader = open_reader(path)
    assert reader is not None
    names = [c.name for c in reference.list_collections()]
    assert names
    for name in names:
        ours, theirs = reader.get_collection(name), reference.get_collection(name, embedding_function=None)
        assert ours.count() == theirs.count() > 0
        mine = ours.get(include=["embeddings"])
        other = theirs.get(include=["embeddings"])
        assert mine["ids"] == other["ids"]
        assert [list(map(float, v)) for v in mine["embeddings"]] == [list(map(float, v)) for v in other["embeddings"]]
        some = other["ids"][:: max(1, len(other["ids"]) // 5)]
        assert ours.get(ids=some)["ids"] == theirs.get(ids=some, include=[])["ids"]
        for vector in other["embeddings"][:: max(1, len(other["embeddings"]) // 5)]:
            a = ours.query([vector], n_results=7, include=["distances", "embeddings"])
            b = theirs.query(query_embeddings=[vector], n_results=7, include=["distances", "embeddings"])
            assert a["ids"] == b["ids"]
            assert a["distances"] == [[float(d) for d in row] for row in b["distances"]]
            assert [list(map(float, v)) for v in a["embeddings"][0]] == \
                [list(map(float, v)) for v in b["embeddings"][0]]
        filtered = ours.query([other["embeddings"][0]], n_results=5, where={"source_type": "chat"},
                              include=["distances"])
        assert filtered["ids"] == theirs.query(query_embeddings=[other["embeddings"][0]], n_results=5,
                                               where={"source_type": "chat"}, include=["distances"])["ids"]


COLD_SEARCH = """
import atexit, os, sys
def report():
    print("chromadb imported:", "chromadb" in sys.modules, file=sys.stderr, flush=True)
atexit.register(report)
_exit = os._exit
def exit_now(code):  # the CLI leaves with os._exit once its output is flushed
    report()
    _exit(code)
os._exit = exit_now
if sys.argv[2] == "chroma":  # a store without a current vector matrix: Chroma's files are read
    import chinvex.retrieval.context_search as context_search
    context_search.matrix_store = lambda *args: None
sys.argv = ["chinvex", "search", "--context", "fixtures", sys.argv[1], "--json"]
from chinvex.entry import main
main()
"""

WARM_SEARCH = """
import json, sys
import chinvex.storage.chroma_writer as writer
writer.open_writer = lambda path: None  # the reference: chromadb's own client
import chinvex.retrieval.context_search as context_search
context_search.matrix_store = lambda *args: None  # not the vector matrix
from chinvex.context.registry import Registry
from chinvex.retrieval.search import SearchRequest, Searcher
config = Registry().resolve("fixtures")
response = Searcher().search([config], SearchRequest(query=sys.argv[1], k=8))
print(json.dumps([[r.chunk_id, r.scores.fts, r.scores.vector, r.scores.rank] for r in response.results]))
print("chromadb imported:", "chromadb" in sys.modules, file=sys.stderr)
"""


@pytest.mark.parametrize("vectors", ["matrix", "chroma"])
def test_a_cold_search_reads_without_chromadb_and_finds_the_same(fixtures_context, vectors):
    """`chinvex search` (the console script's entry point, a fresh process) never imports
    chromadb, whether it reads the store's vector matrix or (without a current one) Chroma's
    files, and ranks exactly as an in-process searcher that reads through chromadb's client."""
    query = "how do I rename a git branch"
    env = {**os.environ, **fixtures_context["env"]}
    cold = subprocess.run([sys.executable, "-c", COLD_SEARCH, query, vectors], capture_output=True,
                          text=True, timeout=300, env=env)
    assert cold.returncode == 0, cold.stderr
    assert "chromadb imported: False" in cold.stderr
    warm = subprocess.run([sys.executable, "-c", WARM_SEARCH, query], capture_output=True, text=True,
                          timeout=300, env=env)
    assert warm.returncode == 0, warm.stderr
    assert "chromadb imported: True" in warm.stderr
    results = json.loads(cold.stdout)["results"]
    assert results and results[0]["scores"]["vector"] is not None
    assert [[r["chunk_id"], r["scores"]["fts"], r["scores"]["vector"], r["scores"]["rank"]]
            for r in results] == json.loads(warm.stdout)


def test_neighbours_come_with_the_vectors_a_lookup_by_id_gives(fixtures_context, monkeypatch):
    """VectorStore.query_with_vectors (the warm search's one Chroma call) returns the neighbours
    `query` returns and, for each, exactly the vector `embeddings` looks up by id."""
    from pathlib import Path

    import numpy as np

    from chinvex.context.registry import Registry
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    monkeypatch.setenv("CHINVEX_HOME", str(fixtures_context["home"]))
    config = Registry().resolve("fixtures")
    conn = db.connect(Path(config.index.sqlite_path))
    store = VectorStore.open(config, conn, create=False)
    assert store is not None
    try:
        some = sorted(store.all_ids())[::7][:6]
        for cid, probe in store.embeddings(some).items():
            found, vectors = store.query_with_vectors(probe, 12)
            assert found == store.query(probe, 12) and cid in dict(found)
            looked_up = store.embeddings([c for c, _ in found])
            assert set(vectors) == set(looked_up) == {c for c, _ in found}
            assert all(np.array_equal(np.asarray(vectors[c]), np.asarray(looked_up[c])) for c in vectors)
        chat, _ = store.query_with_vectors(probe, 12, source_types=["chat"])
        assert chat == store.query(probe, 12, source_types=["chat"])
    finally:
        store.close()
        conn.close()
