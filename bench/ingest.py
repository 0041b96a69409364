"""Ingest throughput (issue 3).

1. Full ingest of a snapshot of this repository through `chinvex ingest` (real built-in embedder,
   real Chroma), next to the raw embedder's throughput on exactly the same chunk texts: the
   difference is the pipeline's overhead (target: under 15 % of embedding time).
2. No-change re-ingest files/s on a tree of 1,000+ files (an installed package's source; target
   2,000 files/s). Building the first index of that tree with the real embedder would take tens
   of minutes here, so that first, unmeasured run uses a hash embedder; the measured second run
   embeds nothing, so it runs the real no-change code path whatever the embedder.
3. Peak RSS of the full-ingest process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import CHINVEX, REPO, Figure, embedded_texts, print_figures, run_chinvex_measured

OUT = REPO / "bench" / "out" / "ingest"
LARGE_TREE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages" / "anthropic"


def snapshot(target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "chinvex", "chinvex_adapters", "docs", "README.md"],
                           capture_output=True, text=True, check=True).stdout.split()
    for rel in files:  # tokenizer.json is copied and skipped by ingest as a vocabulary (generated data)
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target / rel)
    return target


def full_ingest() -> tuple[list[Figure], Path]:
    home = OUT / "home-full"
    shutil.rmtree(home, ignore_errors=True)
    src = snapshot(OUT / "chinvex-src")
    env = {**os.environ, "CHINVEX_HOME": str(home)}
    subprocess.run([CHINVEX, "context", "create", "self", "--repo", str(src)], env=env, check=True,
                   capture_output=True)
    started = time.perf_counter()
    proc, peak_mb = run_chinvex_measured(["ingest", "--context", "self", "--json"], env=env)
    elapsed = time.perf_counter() - started
    summary = json.loads(proc.stdout)
    chunks = summary["chunks"]["embedded"]

    # The same texts through the raw embedder, in this process, model already loaded.
    os.environ["CHINVEX_HOME"] = str(home)
    from chinvex.embedding.factory import make_embedder

    texts = embedded_texts(home / "indexes" / "self" / "hybrid.db")
    if len(texts) != chunks:
        print(f"note: {len(texts)} distinct texts stored, the ingest embedded {chunks}", file=sys.stderr)
    embedder = make_embedder(None)
    embedder.embed_documents(texts[:8])  # load the model outside the timing
    started = time.perf_counter()
    embedder.embed_documents(texts)
    raw = time.perf_counter() - started
    overhead = (elapsed - raw) / raw
    started = time.perf_counter()
    again = json.loads(subprocess.run([CHINVEX, "ingest", "--context", "self", "--json"], env=env,
                                      capture_output=True, text=True).stdout)
    cli = time.perf_counter() - started
    figures = [
        Figure("full ingest (this repository)", chunks / elapsed, "chunks/s",
               note=f"{summary['sources']['indexed']} files, {chunks} chunks in {elapsed:.1f} s"),
        Figure("raw embedder on the same chunks", len(texts) / raw, "chunks/s",
               note=f"{len(texts)} texts in {raw:.1f} s"),
        Figure("pipeline overhead vs embedding time", overhead * 100, "%", "< 15 %", overhead < 0.15,
               note="includes process start, model load and Chroma start-up"),
        Figure("peak RSS of the full-ingest process", peak_mb, "MB",
               note="VmHWM of the ingest process"),
        Figure("no-change `chinvex ingest` of this repository (whole process)", cli, "s",
               note=f"{again['sources']['unchanged']} files unchanged, interpreter start included"),
    ]
    return figures, home


class HashEmbedder:
    """Only for building the first index of the large tree quickly (see the module docstring)."""

    provider, model, dimension = "bench-hash", "sha256-384", 384

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def embed_documents(self, texts):
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest() * 12
            vec = np.frombuffer(digest, dtype=np.uint8)[: self.dimension].astype(np.float32) - 127.5
            out[i] = vec / np.linalg.norm(vec)
        return out

    def embed_query(self, text):
        return self.embed_documents([text])[0]


def no_change_reingest() -> list[Figure]:
    home = OUT / "home-large"
    os.environ["CHINVEX_HOME"] = str(home)
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.context.registry import Registry

    registry = Registry()
    if not registry.exists("large"):
        registry.create("large", includes={"repos": [str(LARGE_TREE)]})
    config = registry.resolve("large")
    first = run_ingest(config, IngestOptions(embedder_factory=HashEmbedder))
    files = first.sources.scanned
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        again = run_ingest(config, IngestOptions(embedder_factory=HashEmbedder))
        timings.append(time.perf_counter() - started)
        assert again.sources.indexed == 0, "nothing changed, nothing may be re-ingested"
    best = min(timings)
    return [
        Figure("no-change re-ingest (in process)", files / best, "files/s", ">= 2,000 files/s",
               files / best >= 2000, note=f"{files} files of {LARGE_TREE.name}/ in {best:.2f} s"),
    ]


def run(quick: bool = False) -> list[Figure]:
    OUT.mkdir(parents=True, exist_ok=True)
    figures, _ = full_ingest()
    return figures + no_change_reingest()


if __name__ == "__main__":
    print_figures("Ingest", run())
