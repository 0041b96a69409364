"""Issue 9: one writer per context, readers never blocked.

- A second ingest of a context exits at once with a clear LOCKED message, or waits with --wait.
- Searches running while an ingest writes (a warm searcher in another process, and cold CLI
  searches) all succeed, and only ever return chunks that exist in a committed state: every
  result id is in the index as it was before the ingest or as it is after it.
- A long-lived searcher (the MCP server keeps one) sees what a later ingest committed.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from helpers import CHINVEX_BIN, REPO_ROOT, assert_no_traceback, indexed_notes, run_cli, run_cli_in_process
from hostile import corpus as corpus_mod

TESTS_DIR = REPO_ROOT / "tests"


def _chunk_ids(home: Path, context: str) -> set[str]:
    import sqlite3

    with sqlite3.connect(home / "indexes" / context / "hybrid.db") as conn:
        return {r[0] for r in conn.execute("SELECT chunk_id FROM chunks")}


def _popen(*args: str) -> subprocess.Popen:
    return subprocess.Popen([str(CHINVEX_BIN), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _rewrite_modules(corpus: corpus_mod.Corpus, seed: int) -> None:
    """Every module gets new functions: the next ingest replaces most code chunks."""
    rng = random.Random(seed)
    for i, path in enumerate(sorted(corpus.repo.rglob("*.py"))):
        path.write_text(corpus_mod.python_module(rng, f"codemarker{i}", 4))
    for i in range(4):
        (corpus.notes / f"fresh{i}.md").write_text(corpus_mod.markdown_note(rng, f"freshmarker{i}", 3))


def test_second_ingest_fails_fast_or_waits(tmp_path: Path, chinvex_home: Path):
    corpus = corpus_mod.build(tmp_path / "corpus")
    assert run_cli_in_process("context", "create", "Busy", *corpus.cli_flags()).code == 0
    holder = chinvex_home / "indexes" / "Busy" / "chinvex.holder"
    first = _popen("ingest", "--context", "Busy", "--json")
    _wait_for(lambda: holder.exists() or first.poll() is not None)
    assert first.poll() is None, "the first ingest ended before the test could race it"

    second = run_cli("ingest", "--context", "Busy", "--json")
    assert first.poll() is None, "the refusal must come at once, not after the first ingest"
    assert second.code == 1, second
    error = second.json["error"]
    assert error["code"] == "LOCKED"
    assert f"pid {first.pid}" in error["message"] and "--wait" in error["message"]
    human = run_cli("ingest", "--context", "Busy")
    assert_no_traceback(human)
    assert human.code == 1 and human.stderr.startswith("error: Context 'Busy' is busy")

    waiting = _popen("ingest", "--context", "Busy", "--wait", "--json")
    out, err = first.communicate(timeout=600)
    first_done = time.monotonic()
    assert first.returncode == 0, err
    out_wait, err_wait = waiting.communicate(timeout=600)
    assert waiting.returncode == 0, err_wait
    summary = json.loads(out_wait)
    # It ran after the first one: everything was already indexed.
    assert summary["sources"]["indexed"] == 0 and summary["sources"]["unchanged"] == summary["sources"]["scanned"]
    assert time.monotonic() >= first_done
    assert not holder.exists()


def test_searches_during_an_ingest_see_only_committed_chunks(tmp_path: Path, chinvex_home: Path):
    corpus = corpus_mod.build(tmp_path / "corpus")
    assert run_cli_in_process("context", "create", "Live", *corpus.cli_flags()).code == 0
    assert run_cli_in_process("ingest", "--context", "Live").code == 0
    before = _chunk_ids(chinvex_home, "Live")
    _rewrite_modules(corpus, seed=99)

    out, stop = tmp_path / "searches.jsonl", tmp_path / "stop"
    loop = subprocess.Popen(
        [sys.executable, "-m", "hostile.search_loop", "Live", str(out), str(stop),
         "codemarker3 value", "freshmarker1", "math sqrt value", "note"],
        cwd=TESTS_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: out.exists() and out.read_text().count("\n") >= 3 or loop.poll() is not None)
    assert loop.poll() is None, loop.stderr.read() if loop.stderr else ""

    started = time.time()
    ingest = _popen("ingest", "--context", "Live", "--json")
    cold = []
    while ingest.poll() is None and len(cold) < 2:
        cold.append(run_cli("search", "--context", "Live", "codemarker3 value", "--json"))
    ingest_out, ingest_err = ingest.communicate(timeout=600)
    finished = time.time()
    assert ingest.returncode == 0, ingest_err
    time.sleep(1.0)
    stop.write_text("")
    _, loop_err = loop.communicate(timeout=120)
    after = _chunk_ids(chinvex_home, "Live")
    assert after - before and before - after, "the ingest replaced nothing"

    records = [json.loads(line) for line in out.read_text().splitlines()]
    during = [r for r in records if started <= r["t"] <= finished]
    errors = [r for r in records if "error" in r]
    assert not errors, errors[:3]
    assert len(during) >= 3, f"only {len(during)} searches ran during the ingest"
    foreign = [(r["query"], r["mode"], sorted(set(r["ids"]) - before - after))
               for r in records if set(r["ids"]) - before - after]
    assert not foreign, foreign[:3]
    failed = [w for r in records for w in r["warnings"] if "failed" in w or "locked" in w.lower()]
    assert not failed, failed[:3]
    for result in cold:
        assert_no_traceback(result)
        assert result.code == 0, result
        ids = {r["chunk_id"] for r in result.json["results"]}
        assert ids <= before | after
        assert not [w for w in result.json["stats"]["warnings"] if "failed" in w]
    print(f"\n{len(records)} warm searches ({len(during)} during the ingest), {len(cold)} cold CLI "
          f"searches during it; {len(before - after)} chunks replaced by {len(after - before)}")


def test_a_warm_searcher_sees_what_a_later_ingest_committed(tmp_path: Path, chinvex_home: Path):
    """The MCP server keeps one Searcher for its lifetime; an ingest run meanwhile by the CLI
    (another process) must show up in both legs, vector included."""
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    notes = indexed_notes(tmp_path / "notes", "Warm",
                          {"old.md": "# Old\n\nGardening notes about tomatoes and basil.\n"})
    config = Registry().resolve("Warm")
    searcher = Searcher()
    try:
        query = "Kubernetes pod eviction under memory pressure"
        first = searcher.search([config], SearchRequest(query=query, k=5, mode="vector"))
        assert first.stats.mode == "vector" and first.results
        (notes / "new.md").write_text("# Cluster\n\nKubernetes evicts pods when the node runs out "
                                      "of memory; set requests and limits. warmmarker\n")
        assert run_cli("ingest", "--context", "Warm").code == 0
        new_ids = _chunk_ids(chinvex_home, "Warm") - {r.chunk_id for r in first.results}
        fts = searcher.search([config], SearchRequest(query="warmmarker", k=5, mode="fts"))
        assert {r.chunk_id for r in fts.results} & new_ids, "FTS leg does not see the new commit"
        vector = searcher.search([config], SearchRequest(query=query, k=5, mode="vector"))
        assert not vector.stats.warnings, vector.stats.warnings
        assert vector.results and vector.results[0].chunk_id in new_ids, (
            "the warm searcher's vector leg does not see vectors another process added")
    finally:
        searcher.close()


def test_doctor_beside_a_running_ingest(tmp_path: Path, chinvex_home: Path):
    """A plain doctor takes no lock and must neither fail nor make the ingest fail (FTS5's
    integrity-check holds SQLite's write lock, so it is skipped while an ingest writes)."""
    corpus = corpus_mod.build(tmp_path / "corpus")
    assert run_cli_in_process("context", "create", "Side", *corpus.cli_flags()).code == 0
    holder = chinvex_home / "indexes" / "Side" / "chinvex.holder"
    ingest = _popen("ingest", "--context", "Side", "--json")
    _wait_for(lambda: holder.exists() or ingest.poll() is not None)
    doctor = run_cli("doctor", "--context", "Side", "--json")
    still_running = ingest.poll() is None
    out, err = ingest.communicate(timeout=600)
    assert_no_traceback(doctor)
    assert ingest.returncode == 0, err
    assert doctor.code == 0, doctor
    if still_running:
        fts = {c["name"]: c for c in doctor.json["checks"]}["fts_index"]
        assert "row counts only" in fts["message"]
    after = run_cli("doctor", "--context", "Side", "--json")
    assert after.code == 0 and all(c["status"] == "ok" for c in after.json["checks"]), after


_RAW_UPSERT = """
import sys, chromadb
from chromadb.config import Settings
path, name, new_id, source_id = sys.argv[1:]
client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
collection = client.get_collection(name, embedding_function=None)
got = collection.get(ids=[source_id], include=["embeddings", "metadatas"])
collection.upsert(ids=[new_id], embeddings=[got["embeddings"][0]], metadatas=[got["metadatas"][0]])
"""


def _warm_context(tmp_path: Path):
    from chinvex.context.registry import Registry

    indexed_notes(tmp_path / "notes", "Raw", {
        "a.md": "# Garden\n\nTomatoes, basil and peppers need full sun.\n",
        "b.md": "# Cluster\n\nKubernetes evicts pods under memory pressure.\n"})
    return Registry().resolve("Raw")


def test_a_store_reloads_after_a_write_that_bypassed_the_gate(tmp_path: Path, chinvex_home: Path):
    """A writer that does not take chinvex's gate (a crashed run, another tool) leaves a warm
    client whose loaded HNSW index lacks the new record while chroma.sqlite3 has it: Chroma
    answers "Error finding id". The store reopens its client and retries once."""
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    config = _warm_context(tmp_path)
    conn = db.connect(Path(config.index.sqlite_path))
    store = VectorStore.open(config, conn, create=False)
    try:
        source_id = sorted(_chunk_ids(chinvex_home, "Raw"))[0]
        assert set(store.embeddings([source_id])) == {source_id}  # the index is loaded now
        raw = subprocess.run(
            [sys.executable, "-c", _RAW_UPSERT, config.index.chroma_dir, store.name, "bypass00001",
             source_id], capture_output=True, text=True, timeout=300)
        assert raw.returncode == 0, raw.stderr
        got = store.embeddings(["bypass00001", source_id])
        assert set(got) == {"bypass00001", source_id}
        assert list(got["bypass00001"]) == list(got[source_id])
    finally:
        store.close()
        conn.close()


def test_vector_hits_not_committed_in_sqlite_are_dropped(tmp_path: Path, chinvex_home: Path):
    """An ingest upserts vectors before it commits their chunks: a search in between finds
    vectors whose chunk ids SQLite does not know yet. They are never results."""
    from chinvex.retrieval.search import SearchRequest, Searcher
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    config = _warm_context(tmp_path)
    searcher = Searcher()
    try:
        query = "Kubernetes pod eviction under memory pressure"
        before = searcher.search([config], SearchRequest(query=query, k=5, mode="vector"))
        top = before.results[0].chunk_id
        conn = db.connect(Path(config.index.sqlite_path))
        store = VectorStore.open(config, conn, create=False)
        try:
            # An uncommitted twin of the best hit: same vector, an id SQLite does not have.
            [vector] = store.embeddings([top]).values()
            store.upsert(["uncommitted01"], [vector], [{"doc_id": "nodoc", "source_type": "note"}])
        finally:
            store.close()
            conn.close()
        for mode in ("vector", "hybrid"):
            after = searcher.search([config], SearchRequest(query=query, k=5, mode=mode))
            assert after.stats.mode == mode and not after.stats.warnings, after.stats
            ids = [r.chunk_id for r in after.results]
            assert "uncommitted01" not in ids and ids[0] == top
    finally:
        searcher.close()
