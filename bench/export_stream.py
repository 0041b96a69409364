"""Export streaming (issue 19): peak memory of `chinvex export --include-vectors` writing a ~1 GB
file, and of `chinvex import` reading it into a new context, against the same commands on a
~10 MB export. Each command runs in a fresh interpreter; its own peak RSS is its VmHWM.

The context: tests/fixtures/samples (Codex sessions, ChatGPT exports, Claude Code transcripts:
documents, chunks, conversation turns, origins, fingerprints) is ingested once with the
real embedder, then its rows are replicated into a fresh context through the storage layer, as
many times as the export size asks: each copy with its own document and chunk ids, its sources
suffixed `#copyN`, a copy tag in every chunk's text (embed hash and search text recomputed the
way ingest computes them, so the import checks them as it would any file), and its real vectors
jittered and re-normalised. Embedding that many chunks with the built-in model would take far
longer than the bench itself; what export and import cost depends on the rows and vectors, not
on what they mean.
Vectors are most of the file (each is hundreds of numbers written out as JSON text).

Any process that reads or writes a context's vectors holds Chroma's whole HNSW index of it in
memory, in proportion to the number of vectors: the vector store's cost, which a search or an
ingest of that context pays too. It is measured beside each command (a process that opens the
store and reads one vector); bounded means that what export and import hold beyond it does not
grow with the file.

    python bench/export_stream.py [--quick]    # --quick: ~100 MB instead of ~1 GB
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sqlite3
import time
from pathlib import Path

from common import FIXTURES, REPO, Figure, print_figures, run_chinvex_measured

OUT = REPO / "bench" / "out" / "export_stream"
SEED_HOME = OUT / "seed-home"
SEED = "fixtures"
SMALL_BYTES = 10_000_000
BIG_BYTES = 1_000_000_000
TOLERANCE_MB = 32
"""Bounded: the large file's peak RSS within this much of the small one's."""
META_KEYS = ("embedder", "embedding_provider", "embedding_model", "embedding_dimension")


def _chinvex(home: Path, *args: str) -> dict:
    proc, _ = run_chinvex_measured([*args, "--json"], env={"CHINVEX_HOME": str(home)})
    if proc.returncode not in (0, 1):  # the fixtures hold one file that is deliberately not a rollout: exit 1
        raise RuntimeError(f"chinvex {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def seed() -> float:
    """The fixtures context, ingested once with the real embedder; seconds spent (0: reused)."""
    marker = SEED_HOME / ".complete"
    if marker.exists():
        return 0.0
    shutil.rmtree(SEED_HOME, ignore_errors=True)
    started = time.perf_counter()
    _chinvex(SEED_HOME, "context", "create", SEED, "--codex-sessions", str(FIXTURES / "codex-rollout"),
             "--chat-root", str(FIXTURES / "chatgpt-export"), "--claude-sessions", str(FIXTURES / "claude-code"))
    summary = _chinvex(SEED_HOME, "ingest", "--context", SEED)
    if not summary["chunks"]["embedded"]:
        raise RuntimeError(f"the seed ingest embedded nothing: {summary['chunks']}")
    marker.write_text("seeded")
    return time.perf_counter() - started


def replicate(home: Path, name: str, copies: int) -> dict:
    """A context `name` in `home` holding `copies` copies of the seed context (module docstring)."""
    import numpy as np

    from chinvex.context.registry import Registry
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    started = time.perf_counter()
    shutil.rmtree(home, ignore_errors=True)
    rows = _read_seed()
    os.environ["CHINVEX_HOME"] = str(home)
    registry = Registry()
    registry.create(name)
    config = registry.resolve(name)
    conn = db.connect(Path(config.index.sqlite_path))
    for key, value in rows["meta"].items():
        if value:
            db.set_meta(conn, key, value)
    store = VectorStore.open(config, conn, create=True)
    rng = np.random.default_rng(19)
    for copy in range(copies):
        _write_copy(conn, store, rows, name, copy, rng)
    counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("documents", "chunks")}
    store.close()
    conn.close()
    return {**counts, "seconds": time.perf_counter() - started}


def _read_seed() -> dict:
    """Every row of the seed context that a copy repeats, its vectors and its embedder meta."""
    from chinvex.context.registry import Registry
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    os.environ["CHINVEX_HOME"] = str(SEED_HOME)
    source_config = Registry().resolve(SEED)
    source = db.connect(Path(source_config.index.sqlite_path), create=False, readonly=True)
    source_store = VectorStore.open(source_config, source, create=False)
    rows = {
        "docs": [dict(r) for r in source.execute("SELECT * FROM documents ORDER BY doc_id")],
        "chunks": [dict(r) for r in source.execute("SELECT * FROM chunks ORDER BY doc_id, chunk_index")],
        "turns": [dict(r) for r in source.execute("SELECT * FROM conversation_turns")],
        "origins": [dict(r) for r in source.execute("SELECT * FROM doc_origins")],
        "fingerprints": [dict(r) for r in source.execute("SELECT * FROM source_fingerprints")],
    }
    rows["vectors"] = source_store.embeddings([c["chunk_id"] for c in rows["chunks"]])
    rows["meta"] = {key: db.get_meta(source, key) for key in META_KEYS}
    source_store.close()
    source.close()
    return rows


def _write_copy(conn: sqlite3.Connection, store, rows: dict, name: str, copy: int, rng) -> None:
    """Copy number `copy` of the seed's rows (one transaction) and its jittered vectors."""
    import numpy as np

    def insert(table: str, row: dict) -> None:
        conn.execute(f"INSERT INTO {table}({', '.join(row)}) VALUES({', '.join('?' * len(row))})", list(row.values()))

    def doc_id(old: str) -> str:
        return f"{old}-{copy}" if old else old

    def uri(old: str | None) -> str | None:
        return f"{old}#copy{copy}" if old else old

    docs, vectors = rows["docs"], rows["vectors"]
    conn.execute("BEGIN")
    for d in docs:
        insert("documents", {**d, "doc_id": doc_id(d["doc_id"]), "source_uri": uri(d["source_uri"]),
                             "origin_uri": uri(d["origin_uri"])})
    for t in rows["turns"]:
        insert("conversation_turns", {**t, "doc_id": doc_id(t["doc_id"])})
    for o in rows["origins"]:
        insert("doc_origins", {**o, "doc_id": doc_id(o["doc_id"]), "origin_uri": uri(o["origin_uri"])})
    for f in rows["fingerprints"]:
        insert("source_fingerprints", {**f, "context_name": name, "source_uri": uri(f["source_uri"]),
                                       "doc_id": doc_id(f["doc_id"])})
    ids, vecs, metas = [], [], []
    types = {d["doc_id"]: d["source_type"] for d in docs}
    for c in rows["chunks"]:
        row = _copied_chunk(c, copy, doc_id(c["doc_id"]))
        insert("chunks", row)
        base = np.asarray(vectors[c["chunk_id"]], dtype=np.float32)
        jittered = base + rng.normal(0, 0.02, base.shape).astype(np.float32)
        ids.append(row["chunk_id"])
        vecs.append(jittered / np.linalg.norm(jittered))
        metas.append({"doc_id": doc_id(c["doc_id"]), "source_type": types[c["doc_id"]]})
    conn.execute("COMMIT")
    store.upsert(ids, np.stack(vecs), metas)


def _copied_chunk(c: dict, copy: int, doc_id: str) -> dict:
    """A chunk row's copy: its own id, a copy tag in its text, and the embed hash and search text
    recomputed from that text the way ingest computes them."""
    from chinvex.chunking import embed_text
    from chinvex.ids import sha256_hex
    from chinvex.models import Chunk
    from chinvex.retrieval.lexical import index_text

    text = f"{c['text']}\n(copy {copy})"
    metadata = json.loads(c["metadata_json"] or "{}")
    cid = sha256_hex(f"{c['chunk_id']}/copy{copy}")[:len(c["chunk_id"])]
    chunk = Chunk.model_construct(chunk_id=cid, doc_id=doc_id, chunk_index=c["chunk_index"],
                                  text=text, char_start=c["char_start"] or 0, char_end=c["char_end"] or 0,
                                  line_start=c["line_start"], line_end=c["line_end"], metadata=metadata)
    embedded = embed_text(chunk)
    return {**c, "chunk_id": cid, "doc_id": doc_id, "text": text,
            "search_text": index_text(embedded), "embed_hash": sha256_hex(embedded)}


STORE_PEAK = r"""
import sys
from pathlib import Path
from chinvex.context.registry import Registry
from chinvex.storage import db
from chinvex.storage.vectors import VectorStore
config = Registry().resolve(sys.argv[1])
conn = db.connect(Path(config.index.sqlite_path), create=False, readonly=True)
store = VectorStore.open(config, conn, create=False)
store.embeddings([conn.execute("SELECT chunk_id FROM chunks LIMIT 1").fetchone()[0]])
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024)
"""


def store_peak(home: Path, name: str) -> float:
    """Peak RSS (MB) of a process that opens the context's vector store and reads one vector:
    Chroma then holds the collection's whole HNSW index (vectors and graph) in
    memory, as every process that reads or writes vectors does. An export or
    import is bounded when its peak beyond this reference does not grow with the file."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", STORE_PEAK, name], capture_output=True, text=True,
                          env={**os.environ, "CHINVEX_HOME": str(home)}, check=True)
    return float(proc.stdout.strip().splitlines()[-1])


def export(home: Path, name: str, out: Path) -> dict:
    started = time.perf_counter()
    proc, peak = run_chinvex_measured(["export", "--context", name, "--out", str(out), "--include-vectors"],
                                      env={"CHINVEX_HOME": str(home)})
    seconds = time.perf_counter() - started
    if proc.returncode:
        raise RuntimeError(f"export failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return {"seconds": seconds, "peak_mb": peak, "bytes": out.stat().st_size, "store_mb": store_peak(home, name)}


def import_(home: Path, file: Path, name: str) -> dict:
    env = {"CHINVEX_HOME": str(home)}
    created, _ = run_chinvex_measured(["context", "create", name], env=env)
    if created.returncode:
        raise RuntimeError(created.stderr)
    started = time.perf_counter()
    proc, peak = run_chinvex_measured(["import", str(file), "--context", name, "--json"], env=env)
    seconds = time.perf_counter() - started
    if proc.returncode:
        raise RuntimeError(f"import failed ({proc.returncode}): {proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout)
    if not summary["vectors_reused"] or summary["chunks_embedded"]:
        raise RuntimeError(f"the import embedded chunks instead of reusing the file's vectors: {summary}")
    return {"seconds": seconds, "peak_mb": peak, "chunks": summary["chunks_imported"], "store_mb": store_peak(home, name)}


def measure(label: str, copies: int) -> dict:
    home = OUT / label
    built = replicate(home / "home", "big", copies)
    file = home / "export.jsonl"
    try:
        out = export(home / "home", "big", file)
        imported = import_(home / "home", file, "copy")
    finally:  # gigabytes of bench output are not kept (the seed context is)
        shutil.rmtree(home, ignore_errors=True)
    return {"copies": copies, "built": built, "export": out, "import": imported}


def run(quick: bool = False) -> list[Figure]:
    seeded = seed()
    probe = OUT / "seed.jsonl"  # one copy's size: the seed context itself, exported
    per_copy = export(SEED_HOME, SEED, probe)["bytes"]
    probe.unlink()
    small = measure("small", math.ceil(SMALL_BYTES / per_copy))
    big = measure("big", max(1, round((BIG_BYTES // 10 if quick else BIG_BYTES) / per_copy)))
    mb = 1_000_000
    size, small_size = (f"{item['export']['bytes'] / mb:,.0f} MB" for item in (big, small))
    figures = [
        Figure(f"context for the {size} export: build", big["built"]["seconds"], "s",
               note=f"{big['copies']} copies of the fixtures context: {big['built']['documents']:,} documents, "
                    f"{big['built']['chunks']:,} chunks with vectors; the {small_size} one: {small['copies']} copies, "
                    f"{small['built']['chunks']:,} chunks; " + (f"seed ingest {seeded:.0f} s" if seeded else "seed context reused")),
    ]
    for step, what in (("export", "`chinvex export --include-vectors`"), ("import", "`chinvex import` into a new context")):
        grown = {key: item[step]["peak_mb"] - item[step]["store_mb"] for key, item in (("small", small), ("big", big))}
        figures += [
            Figure(f"{what}, {size}", big[step]["seconds"], "s",
                   note=f"{big['export']['bytes'] / mb / big[step]['seconds']:.1f} MB/s of export file"
                        + ("; vectors reused from the file" if step == "import" else "")),
            Figure(f"{step} peak RSS, {size}", big[step]["peak_mb"], "MB",
                   note=f"{small_size}: {small[step]['peak_mb']:.0f} MB; VmHWM of the {step} process"),
            Figure(f"reference: peak RSS of opening the {'imported' if step == 'import' else 'exported'} store "
                   f"and reading one vector, {size}", big[step]["store_mb"], "MB",
                   note=f"{small_size}: {small[step]['store_mb']:.0f} MB; Chroma loads the collection's whole HNSW "
                        "index (~2 KB a vector), as every process that reads or writes vectors does"),
            Figure(f"{step} peak RSS beyond that reference, {size}", grown["big"], "MB",
                   f"bounded: {small_size}'s ± {TOLERANCE_MB} MB", abs(grown["big"] - grown["small"]) <= TOLERANCE_MB,
                   note=f"{small_size}: {grown['small']:.1f} MB"),
        ]
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~100 MB instead of ~1 GB")
    args = parser.parse_args()
    print_figures("Export streaming", run(args.quick))
