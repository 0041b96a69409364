"""Retrieval quality on the public sets in bench/data (bench/data/README.md): SciFact (train
claims against 5,183 abstracts) and LoCoMo (conv-26 + conv-30, turn level). Prints nDCG@10 /
recall@10 / MRR for fts-only, vector-only and hybrid, with the real built-in embedder.

    python bench/quality.py [--set locomo|scifact|both] [--quick] [--data DIR]

Indexes and SciFact's notes are materialised under bench/out/ (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import CHINVEX, REPO, Figure, print_figures
from evalsets import (DATA, add_data_argument, is_current, locomo, mark, require, scifact_corpus,
                      scifact_golden)

OUT = REPO / "bench" / "out" / "quality"
MODES = ("fts", "vector", "hybrid")


def _cli(home: Path, *args: str, timeout: float = 7200) -> dict:
    env = {**os.environ, "CHINVEX_HOME": str(home)}
    proc = subprocess.run([CHINVEX, *args, "--json"], capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise RuntimeError(f"chinvex {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def materialise_scifact(target: Path, data: Path = DATA) -> Path:
    """One note per abstract: `# <title>` then one sentence per line (bench/data/README.md).
    Written once per corpus file: the folder's marker names the corpus it was made from."""
    notes = target / "scifact-notes"
    source = require(data / "scifact" / "corpus.jsonl.gz")
    if is_current(notes, source):
        return notes
    notes.mkdir(parents=True, exist_ok=True)
    for doc in scifact_corpus(data):
        sentences = [s.strip() for s in doc["text"].replace(". ", ".\n").splitlines() if s.strip()]
        (notes / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n" + "\n".join(sentences) + "\n",
                                                 encoding="utf-8")
    mark(notes, source)
    return notes


def prepare(name: str, roots: list[Path]) -> Path:
    home = OUT / name / "home"
    if not (home / "contexts" / name / "context.json").exists():
        args = ["context", "create", name]
        for root in roots:
            args += ["--note-root", str(root)]
        _cli(home, *args)
    started = time.perf_counter()
    summary = _cli(home, "ingest", "--context", name)
    print(f"  {name}: ingest {summary['sources']['indexed']} sources, {summary['chunks']['embedded']} chunks "
          f"embedded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return home


def evaluate(home: Path, name: str, golden: Path, k: int = 10) -> dict[str, dict]:
    results = {}
    for mode in MODES:
        report = _cli(home, "eval", "--context", name, "--golden", str(golden), "--k", str(k), "--mode", mode)
        results[mode] = report
    return results


def _figures(label: str, results: dict[str, dict], targets: dict[str, float]) -> list[Figure]:
    figures: list[Figure] = []
    for mode in MODES:
        m = results[mode]["metrics"]
        for metric, key in (("nDCG@10", "ndcg"), ("recall@10", "recall"), ("MRR", "mrr")):
            target = targets.get(key) if mode == "hybrid" else None
            figures.append(Figure(f"{label} {mode} {metric}", m[key], "",
                                  f">= {target}" if target else "",
                                  (m[key] >= target) if target else None))
    best_leg = max(results["fts"]["metrics"]["ndcg"], results["vector"]["metrics"]["ndcg"])
    hybrid = results["hybrid"]["metrics"]["ndcg"]
    figures.append(Figure(f"{label} hybrid nDCG@10 minus best single leg", hybrid - best_leg, "",
                          "> 0 (hybrid beats both)", hybrid > best_leg))
    return figures


def settings_figures(home: Path, name: str, golden: Path, label: str) -> list[Figure]:
    """The measurements behind the search defaults, on the same index and questions: each leg's
    candidate depth (default 30), completing both signals for every candidate (default on; off
    is the seed spec's "missing = 0"), and the lexical scoring budget scaled to this index the
    way the defaults meet a 100k-chunk index (budget 10 % of the chunks, a term in 1 % of them
    counts as common), so its effect on ranking is measured where the answers are known. The
    scaled budget is only meaningful on an index of thousands of chunks (on LoCoMo's few hundred,
    1 % is a couple of chunks and nearly every word would count as common), so SciFact only."""
    os.environ["CHINVEX_HOME"] = str(home)
    from chinvex.eval.golden import load_golden
    from chinvex.eval.runner import run_eval
    from chinvex.registry import Registry
    from chinvex.retrieval.search import Searcher

    registry = Registry()
    config = registry.resolve(name)
    questions = load_golden(golden)
    searcher = Searcher()
    chunks = searcher.handle(config).conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    scaled = {"fts_budget": max(1, chunks // 10), "fts_count_cap": max(1, chunks // 100)}
    variants = [
        ("hybrid, depth 20", "hybrid", {"fts_depth": 20, "vector_depth": 20}),
        ("hybrid, depth 50", "hybrid", {"fts_depth": 50, "vector_depth": 50}),
        ("hybrid, depth 100", "hybrid", {"fts_depth": 100, "vector_depth": 100}),
        ("hybrid, missing leg = 0 (no score completion)", "hybrid", {"complete_scores": False}),
    ]
    if chunks >= 5_000:
        variants += [
            (f"fts, scoring budget {scaled['fts_budget']:,} chunks (10 %)", "fts", scaled),
            (f"hybrid, scoring budget {scaled['fts_budget']:,} chunks (10 %)", "hybrid", scaled),
        ]
    figures: list[Figure] = []
    try:
        for title, mode, options in variants:
            m = run_eval(config, questions, resolve=registry.resolve, k=10, searcher=searcher, mode=mode,
                         request_options=options)["metrics"]
            figures.append(Figure(f"{label} {title} nDCG@10", m["ndcg"], "",
                                  note=f"recall@10 {m['recall']:.3f}, MRR {m['mrr']:.3f}"))
    finally:
        searcher.close()
    return figures


def run_locomo(data: Path = DATA) -> list[Figure]:
    base = locomo(data)
    home = prepare("locomo", [base / "conv-26", base / "conv-30"])
    golden = base / "golden-conv26-conv30.json"
    results = evaluate(home, "locomo", golden)
    label = "LoCoMo conv-26+30 turn level"
    return _figures(label, results, {"recall": 0.65}) + settings_figures(home, "locomo", golden, label)


def run_scifact(data: Path = DATA) -> list[Figure]:
    golden = scifact_golden(data)
    notes = materialise_scifact(OUT, data)
    home = prepare("scifact", [notes])
    results = evaluate(home, "scifact", golden)
    return _figures("SciFact train", results, {"ndcg": 0.70}) + settings_figures(home, "scifact", golden,
                                                                                "SciFact train")


def run(quick: bool = False, data: Path = DATA) -> list[Figure]:
    figures = run_locomo(data)
    if not quick:
        figures += run_scifact(data)
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=["locomo", "scifact", "both"], default="both")
    parser.add_argument("--quick", action="store_true", help="LoCoMo only (same as --set locomo)")
    add_data_argument(parser)
    args = parser.parse_args()
    figures: list[Figure] = []
    if args.set in ("locomo", "both"):
        figures += run_locomo(args.data)
    if args.set in ("scifact", "both") and not args.quick:
        figures += run_scifact(args.data)
    print_figures(f"Retrieval quality ({args.data})", figures)
