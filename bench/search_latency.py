"""Search latency (issue 4): warm in-process p50/p95 at ~10k and ~100k chunks, and a cold
`chinvex search` process at ~10k and ~100k chunks.

- 10k: the SciFact index built by bench/quality.py (real text, real built-in embeddings).
- 100k: SciFact's chunk rows replicated ten times into a fresh index through the storage layer,
  each copy with its own doc id, a copy tag in its text, and its real vector jittered and
  re-normalised. Embedding 100k chunks with the built-in model would take hours on this machine;
  search cost depends on the index sizes, not on what the vectors mean.
Queries are SciFact training claims.

The cold process at ~100k chunks (issue 41: < 0.45 s without a watcher) runs alternately with
and without its cold start (chinvex.retrieval.cold_start; `CHINVEX_COLD_START=0`), each run a
different query, so that both see the same machine; the load average is printed with it, since
other work on a 2-core machine moves these figures.

`--baseline DIR` (with `--cold-only`) alternates instead with the `chinvex` package of another
checkout (a `git worktree` of an earlier commit), both with their cold start, to measure a change.
Both read the same index; code that predates the store's vector matrix
(chinvex.storage.vector_matrix) ignores its file and loads Chroma's index.

    python bench/search_latency.py [--quick] [--data DIR] [--cold-only [--baseline DIR]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import time
from pathlib import Path

from common import CHINVEX, REPO, Figure, pct, print_figures, time_command
from evalsets import DATA, add_data_argument, scifact_golden

QUALITY_HOME = REPO / "bench" / "out" / "quality" / "scifact" / "home"
BIG_HOME = REPO / "bench" / "out" / "latency" / "home-100k"


def _queries(n: int, data: Path = DATA) -> list[str]:
    golden = json.loads(scifact_golden(data).read_text())
    return [q["query"] for q in golden["queries"][:n]]


WARMUP_QUERIES = 50
"""Queries run before measuring, none of them measured. "Warm" means a process that has served
traffic: with 5 warm-up queries the first measured ones still faulted in index pages the host
had reclaimed since the index was built (DAMON), and the 100k p95 moved between 32 and 55 ms
from run to run on an idle machine."""


def _warm(home: Path, context: str, queries: list[str], warmup: list[str]) -> tuple[list[float], int]:
    os.environ["CHINVEX_HOME"] = str(home)
    from chinvex.context.registry import Registry
    from chinvex.retrieval.search import SearchRequest, Searcher

    config = Registry().resolve(context)
    searcher = Searcher()
    for q in warmup:
        searcher.search([config], SearchRequest(query=q, k=10))
    timings = []
    for q in queries:
        started = time.perf_counter()
        searcher.search([config], SearchRequest(query=q, k=10))
        timings.append((time.perf_counter() - started) * 1000)
    chunks = searcher.handle(config).conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    searcher.close()
    return timings, chunks


def build_100k(copies: int = 10) -> None:
    """Replicate the SciFact index `copies` times (see the module docstring)."""
    import numpy as np

    os.environ["CHINVEX_HOME"] = str(BIG_HOME)
    from chinvex.context.registry import Registry
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    marker = BIG_HOME / ".complete"
    if marker.exists():
        return
    shutil.rmtree(BIG_HOME, ignore_errors=True)
    registry = Registry()
    registry.create("big")
    config = registry.resolve("big")
    source = sqlite3.connect(QUALITY_HOME / "indexes" / "scifact" / "hybrid.db")
    source.row_factory = sqlite3.Row
    src_config = json.loads((QUALITY_HOME / "contexts" / "scifact" / "context.json").read_text())
    os.environ["CHINVEX_HOME"] = str(QUALITY_HOME)
    src_store = VectorStore.open(Registry().resolve("scifact"), source, create=False)
    os.environ["CHINVEX_HOME"] = str(BIG_HOME)
    docs = [dict(r) for r in source.execute("SELECT * FROM documents")]
    chunks = [dict(r) for r in source.execute("SELECT * FROM chunks")]
    vectors = src_store.embeddings([c["chunk_id"] for c in chunks])
    conn = db.connect(Path(config.index.sqlite_path))
    for key in ("embedder", "embedding_provider", "embedding_model", "embedding_dimension"):
        value = db.get_meta(source, key)
        if value:
            db.set_meta(conn, key, value)
    store = VectorStore.open(config, conn, create=True)
    rng = np.random.default_rng(7)
    for copy in range(copies):
        conn.execute("BEGIN")
        for d in docs:
            conn.execute(
                "INSERT INTO documents(doc_id, source_type, source_uri, title, created_at, updated_at, "
                "metadata_json, indexed_at, origin_uri, content_hash) VALUES(?,?,?,?,?,?,?,?,?,?)",
                (f"{d['doc_id']}-{copy}", d["source_type"], f"{d['source_uri']}#copy{copy}", d["title"],
                 d["created_at"], d["updated_at"], d["metadata_json"], d["indexed_at"],
                 f"memory://bench/{copy}/{d['doc_id']}", d["content_hash"]))
        ids, vecs, metas = [], [], []
        for c in chunks:
            cid = f"{c['chunk_id']}{copy:x}"
            text = c["text"] + f"\n(copy {copy})"
            conn.execute(
                "INSERT INTO chunks(chunk_id, doc_id, chunk_index, text, search_text, embed_hash, char_start, "
                "char_end, line_start, line_end, metadata_json) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                (cid, f"{c['doc_id']}-{copy}", c["chunk_index"], text, c["search_text"] + f" copy{copy}",
                 f"{c['embed_hash']}{copy}", c["char_start"], c["char_end"], c["line_start"], c["line_end"],
                 c["metadata_json"]))
            base = np.asarray(vectors[c["chunk_id"]], dtype=np.float32)
            jittered = base + rng.normal(0, 0.02, base.shape).astype(np.float32)
            ids.append(cid)
            vecs.append(jittered / np.linalg.norm(jittered))
            metas.append({"doc_id": f"{c['doc_id']}-{copy}", "source_type": "note"})
        conn.execute("COMMIT")
        store.upsert(ids, np.stack(vecs), metas)
        print(f"  copy {copy + 1}/{copies}: {len(ids)} chunks", flush=True)
    conn.close()
    marker.write_text(f"copies={copies} source={src_config['name']}")


def record_coverage() -> None:
    """Record the 100k index's vector coverage, as an ingest does after writing vectors
    (chinvex.storage.coverage), so that a search reads the figure instead of counting the store:
    an index built before this step had none. Every chunk has its vector here. The vector files'
    signature is recorded too, and the vector matrix written."""
    os.environ["CHINVEX_HOME"] = str(BIG_HOME)
    from chinvex.context.registry import Registry
    from chinvex.storage import coverage, db, vector_matrix_refresh, vector_signature
    from chinvex.storage.vectors import VectorStore

    config = Registry().resolve("big")
    conn = db.connect(Path(config.index.sqlite_path))
    try:
        if coverage.vector_coverage(conn) is None:
            store = VectorStore.open(config, conn, create=False)
            total = coverage.chunk_count(conn)
            if store is not None and store.count() == total:
                coverage.record(conn, coverage.measured(total, total, store.identity(conn),
                                                        coverage.gate_token(config)))
            if store is not None:
                store.close()
        # ... and sign its vector files, as an ingest does at its end: a cold search warms only
        # a store whose files are as chinvex left them (chinvex.storage.chroma_warm)
        vector_signature.record_signature(config, conn)
        # ... and write the store's vector matrix, as an ingest does then (a search reads it
        # instead of Chroma's index: chinvex.storage.vector_matrix); kept while it is current
        vector_matrix_refresh.refresh(config, conn, None)
    finally:
        conn.close()


def _timed(args: list[str], env: dict[str, str]) -> float:
    """Wall-clock seconds of one whole process run."""
    import subprocess

    started = time.perf_counter()
    subprocess.run(args, capture_output=True, env={**os.environ, **env}, check=True)
    return time.perf_counter() - started


def cold_runs(queries: list[str], runs: int, baseline: Path | None = None
              ) -> tuple[list[float], list[float], tuple[float, float]]:
    """Whole `chinvex search --json` processes on the 100k index, alternately with and without
    the cold start (or, given `baseline`, with that checkout's code), one query per pair:
    (this code with its cold start, the other, 1-minute load average at start and end)."""
    env = {"CHINVEX_HOME": str(BIG_HOME), "CHINVEX_NO_RELAY": "1"}
    # The console script puts its own folder first on sys.path, then PYTHONPATH: a checkout
    # named there is imported instead of the installed (editable) package.
    other = {"CHINVEX_COLD_START": "0"} if baseline is None else {"PYTHONPATH": str(baseline)}
    base = [CHINVEX, "search", "--context", "big", "--json"]
    _timed(base + [queries[0]], env)  # page cache, the model's kept graph
    _timed(base + [queries[0]], {**env, **other})
    load_before = os.getloadavg()[0]
    with_it, without = [], []
    for i in range(runs):
        query = queries[1 + i % (len(queries) - 1)]
        with_it.append(_timed(base + [query], env))
        without.append(_timed(base + [query], {**env, **other}))
    return with_it, without, (load_before, os.getloadavg()[0])


def cold_figures(queries: list[str], runs: int, baseline: Path | None = None) -> list[Figure]:
    record_coverage()
    with_it, without, (before, after) = cold_runs(queries, runs, baseline)
    if baseline is not None:
        p50, other = statistics.median(with_it), statistics.median(without)
        return [
            Figure("cold `chinvex search` process p50 at 106,780 chunks", p50, "s", "< 0.45 s", p50 < 0.45,
                   note=(f"p95 {pct(with_it, 95):.3f} s; the code in {baseline}: p50 {other:.3f} s, p95 "
                         f"{pct(without, 95):.3f} s; {runs} runs each, alternating, one query per pair; "
                         f"load average {before:.2f} -> {after:.2f}")),
        ]
    p50 = statistics.median(with_it)
    return [
        Figure("cold `chinvex search` process p50 at 106,780 chunks", p50, "s", "< 0.45 s", p50 < 0.45,
               note=(f"p95 {pct(with_it, 95):.3f} s; without the cold start (CHINVEX_COLD_START=0) "
                     f"p50 {statistics.median(without):.3f} s, p95 {pct(without, 95):.3f} s; {runs} runs "
                     f"each, alternating, one query per pair; load average {before:.2f} -> {after:.2f}")),
    ]


def _read_through(folder: Path) -> int:
    """Read every file of an index once, so that its pages are in the OS page cache; returns
    the bytes read. This VM's host reclaims file pages that have been idle for a while (DAMON),
    and a search whose result rows sit on reclaimed pages reads them from disk: the 100k p95
    then moved between 20 and 24 ms from run to run, and was 17.5 ms twice with the files read
    first (2026-11-28). A server that keeps searching an index keeps its pages; the figure that
    follows measures that case, with queries the first measurement did not ask."""
    total = 0
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    total += len(chunk)
    return total


def run(quick: bool = False, data: Path = DATA, cold_only: bool = False, baseline: Path | None = None,
        runs: int | None = None) -> list[Figure]:
    n = 100 if quick else 300
    claims = _queries(WARMUP_QUERIES + 2 * n, data)
    if cold_only:
        build_100k()
        return cold_figures(claims, runs or (10 if quick else 20), baseline)
    warmup, queries = claims[:WARMUP_QUERIES], claims[WARMUP_QUERIES:WARMUP_QUERIES + n]
    others = claims[WARMUP_QUERIES + n:]
    figures: list[Figure] = []
    import quality  # the SciFact index is quality.py's; build it (or bring it up to date) first

    quality.prepare("scifact", [quality.materialise_scifact(quality.OUT, data)])
    small, count_small = _warm(QUALITY_HOME, "scifact", queries, warmup)
    figures += [
        Figure(f"warm search p50 at {count_small:,} chunks", statistics.median(small), "ms"),
        Figure(f"warm search p95 at {count_small:,} chunks", pct(small, 95), "ms"),
    ]
    build_100k()
    big, count_big = _warm(BIG_HOME, "big", queries, warmup)
    figures += [
        Figure(f"warm search p50 at {count_big:,} chunks", statistics.median(big), "ms"),
        Figure(f"warm search p95 at {count_big:,} chunks", pct(big, 95), "ms", "< 20 ms", pct(big, 95) < 20),
    ]
    cached = _read_through(BIG_HOME / "indexes" / "big")
    again, _ = _warm(BIG_HOME, "big", others, warmup)
    figures.append(Figure(f"warm search p95 at {count_big:,} chunks, index files in the page cache",
                          pct(again, 95), "ms", note=(
                              f"p50 {statistics.median(again):.1f} ms; {len(again)} other queries, after "
                              f"reading the index's {cached / 1e6:,.0f} MB once: the rows above also pay for "
                              "pages the host reclaimed since they were last read (see _read_through)")))
    cold = time_command([CHINVEX, "search", "--context", "scifact", queries[0], "--json"], runs=5 if quick else 10,
                        env={"CHINVEX_HOME": str(QUALITY_HOME)})
    figures.append(Figure("cold `chinvex search` process p50", statistics.median(cold), "s", "< 0.8 s",
                          statistics.median(cold) < 0.8, note=f"p95 {pct(cold, 95):.2f} s"))
    return figures + cold_figures(claims, 10 if quick else 20)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 measured queries instead of 300, 5 cold runs")
    parser.add_argument("--cold-only", action="store_true",
                        help="Only the cold process at ~100k chunks (with and without its cold start)")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="With --cold-only: alternate with the chinvex package of this checkout instead of "
                             "with the cold start turned off")
    parser.add_argument("--runs", type=int, help="Cold runs of each kind (default 20; 10 with --quick)")
    add_data_argument(parser)
    args = parser.parse_args()
    if args.baseline is not None and not (args.cold_only and (args.baseline / "chinvex" / "__init__.py").is_file()):
        parser.error(f"--baseline {args.baseline}: needs --cold-only and a checkout holding chinvex/__init__.py")
    print_figures("Search latency", run(args.quick, args.data, args.cold_only, args.baseline, args.runs))
