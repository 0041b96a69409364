"""Retrieval quality on the public sets in bench/data (bench/data/README.md) and on this
repository's own golden questions: fts-only, vector-only and hybrid through `chinvex eval
--mode`, with the real built-in embedder.

| set (context) | corpus | questions | headline metric, target (issue 17) |
|---|---|---|---|
| scifact | 5,183 abstracts as notes | 809 train claims | nDCG@10 >= 0.76 |
| locomo | LoCoMo conv-26 + conv-30 as notes | 302 (231 answerable), turn level | recall@10 >= 0.88 |
| cosqa-dev | 6,267 Python functions (repo) | 500 dev web queries | MRR@10 >= 0.55 |
| swe-qa-requests | psf/requests (repo) | 47, every file the answer names | nDCG@10 >= 0.85 |
| chinvex | a snapshot of this repository's tracked files (repo) | golden_queries/chinvex.json (40) | nDCG@10 |

On every set hybrid must reach the better single leg on the headline metric. The full run adds
the measurements behind the search defaults: depths, score completion and the lexical budget
on SciFact and LoCoMo, and on the repository sets the same search without the file-role
priors (chinvex.retrieval.roles).

    python bench/quality.py [--set NAME ...] [--quick] [--data DIR]

`--quick`: at most QUICK_QUESTIONS questions a set (the first ones), the three legs only.
Indexes, SciFact's notes and the repository snapshot are materialised under bench/out/quality
(git-ignored), once; later runs only re-ingest what changed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common import CHINVEX, REPO, Figure, print_figures
from evalsets import (DATA, add_data_argument, cosqa_functions, is_current, locomo, mark, require,
                      scifact_corpus, scifact_golden, swe_qa_requests)

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


def snapshot_repository(target: Path) -> Path:
    """This repository's tracked files, copied (once; later runs copy what changed and delete
    what left), so that edits made while the bench runs and the bench's own output under
    bench/out do not move the index under it."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, text=True,
                           check=True).stdout.split("\0")
    wanted = {rel for rel in files if rel and (REPO / rel).is_file() and not (REPO / rel).is_symlink()}
    present = ({str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()}
               if target.exists() else set())
    for rel in present - wanted:
        (target / rel).unlink()
    for rel in sorted(wanted):
        source, copy = REPO / rel, target / rel
        if not copy.exists() or copy.read_bytes() != source.read_bytes():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
    return target


def prepare(name: str, roots: list[Path], include: str = "--note-root") -> Path:
    """The context `name` over `roots` (`include` is the `chinvex context create` option that
    adds them), created once and ingested (incrementally after the first time)."""
    home = OUT / name / "home"
    build_context(home, name, roots, include)
    return home


def build_context(home: Path, name: str, roots: list[Path], include: str,
                  embedding: dict | None = None) -> tuple[float, int]:
    """Create the context under `home` once (with `embedding` written into its context.json, as
    a user sets it) and ingest it; returns the ingest's seconds and the chunks it embedded."""
    context_file = home / "contexts" / name / "context.json"
    if not context_file.exists():
        args = ["context", "create", name]
        for root in roots:
            args += [include, str(root)]
        _cli(home, *args)
        if embedding is not None:
            config = json.loads(context_file.read_text(encoding="utf-8"))
            config["embedding"] = embedding
            context_file.write_text(json.dumps(config, indent=2), encoding="utf-8")
    started = time.perf_counter()
    summary = _cli(home, "ingest", "--context", name)
    seconds, embedded = time.perf_counter() - started, summary["chunks"]["embedded"]
    print(f"  {name}: ingest {summary['sources']['indexed']} sources, {embedded} chunks "
          f"embedded in {seconds:.0f} s", file=sys.stderr)
    return seconds, embedded


def evaluate(home: Path, name: str, golden: Path, k: int = 10) -> dict[str, dict]:
    results = {}
    for mode in MODES:
        report = _cli(home, "eval", "--context", name, "--golden", str(golden), "--k", str(k), "--mode", mode)
        results[mode] = report
    return results


METRICS = (("nDCG@10", "ndcg"), ("recall@10", "recall"), ("MRR@10", "mrr"))
QUICK_QUESTIONS = 150


@dataclass(frozen=True)
class EvalSet:
    """One evaluation set: its context, how its corpus is made, its golden file and the figure
    the issue judges it by."""

    name: str
    label: str
    include: str
    roots: Callable[[Path], list[Path]]
    golden: Callable[[Path], Path]
    metric: str
    target: float | None


def _scifact_roots(data: Path) -> list[Path]:
    return [materialise_scifact(OUT, data)]


SETS: dict[str, EvalSet] = {s.name: s for s in (
    EvalSet("scifact", "SciFact train", "--note-root", _scifact_roots, scifact_golden, "ndcg", 0.76),
    EvalSet("locomo", "LoCoMo conv-26+30 turn level", "--note-root",
            lambda data: [locomo(data) / "conv-26", locomo(data) / "conv-30"],
            lambda data: locomo(data) / "golden-conv26-conv30.json", "recall", 0.88),
    EvalSet("cosqa-dev", "CoSQA dev", "--repo", lambda data: [cosqa_functions(data) / "cosqa_functions"],
            lambda data: require(data / "cosqa-dev" / "golden-dev.json"), "mrr", 0.55),
    EvalSet("swe-qa-requests", "SWE-QA requests (all named files)", "--repo",
            lambda data: [swe_qa_requests(data) / "requests"],
            lambda data: require(data / "swe-qa-requests" / "golden-requests.json"), "ndcg", 0.85),
    EvalSet("chinvex", "chinvex golden queries (this repository)", "--repo",
            lambda data: [snapshot_repository(OUT / "chinvex-src")],
            lambda data: require(REPO / "golden_queries" / "chinvex.json"), "ndcg", None),
)}


def golden_subset(golden: Path, limit: int, target: Path) -> Path:
    """The first `limit` questions of a golden file, written beside the set's index."""
    data = json.loads(golden.read_text(encoding="utf-8"))
    if len(data["queries"]) <= limit:
        return golden
    data["queries"] = data["queries"][:limit]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return target


def _figures(label: str, results: dict[str, dict], metric: str = "ndcg", target: float | None = None,
             note: str = "") -> list[Figure]:
    figures: list[Figure] = []
    for mode in MODES:
        m = results[mode]["metrics"]
        for title, key in METRICS:
            aim = target if mode == "hybrid" and key == metric else None
            figures.append(Figure(f"{label} {mode} {title}", m[key], "", f">= {aim}" if aim else "",
                                  (m[key] >= aim) if aim else None, note if mode == "hybrid" else ""))
    best_leg = max(results["fts"]["metrics"][metric], results["vector"]["metrics"][metric])
    hybrid = results["hybrid"]["metrics"][metric]
    title = dict((key, title) for title, key in METRICS)[metric]
    figures.append(Figure(f"{label} hybrid {title} minus best single leg", hybrid - best_leg, "",
                          ">= 0 (hybrid at least the better leg)", hybrid >= best_leg - 1e-9))
    return figures


def run_set(name: str, data: Path = DATA, quick: bool = False) -> list[Figure]:
    """The three legs on one set (and, unless quick, the settings behind the defaults)."""
    spec = SETS[name]
    home = prepare(spec.name, spec.roots(data), spec.include)
    golden = spec.golden(data)
    note = ""
    if quick:
        golden = golden_subset(golden, QUICK_QUESTIONS, OUT / spec.name / "golden-quick.json")
        note = f"quick: first {QUICK_QUESTIONS} questions"
    figures = _figures(spec.label, evaluate(home, spec.name, golden), spec.metric, spec.target, note)
    if not quick and name in ("locomo", "scifact"):
        figures += settings_figures(home, spec.name, golden, spec.label)
    if not quick and spec.include == "--repo":
        figures += settings_figures(home, spec.name, golden, spec.label, variants=ROLE_VARIANTS)
    return figures


PER_DOC_VARIANT = ("hybrid, --per-doc 1 (one chunk a document)", "hybrid", {"per_doc": 1})
"""Not a default: it helps where a set's answers are files and hurts where they are passages
(ARCHITECTURE, "--per-doc"); measured on every set so that the trade stays visible."""
ROLE_VARIANTS = [("hybrid, no role priors (every file role 1.0)", "hybrid", {"role_priors": False}), PER_DOC_VARIANT]


def settings_figures(home: Path, name: str, golden: Path, label: str,
                     variants: list[tuple[str, str, dict]] | None = None) -> list[Figure]:
    """The measurements behind the search defaults, on the same index and questions: each leg's
    candidate depth (default 30), completing both signals for every candidate (default on; off
    is the seed spec's "missing = 0"), and the lexical scoring budget scaled to this index the
    way the default meets a 100k-chunk index (FTS_SCORE_BUDGET is 3 % of 100k chunks; each term
    is counted up to the budget), so its effect on ranking is measured where the answers are
    known. The scaled budget is only meaningful on an index of thousands of chunks (on LoCoMo's
    few hundred, 3 % is a handful of chunks and nearly every word would count as common), so
    SciFact only."""
    os.environ["CHINVEX_HOME"] = str(home)
    from chinvex.eval.golden import load_golden
    from chinvex.eval.runner import run_eval
    from chinvex.context.registry import Registry
    from chinvex.retrieval.lexical_leg import FTS_SCORE_BUDGET
    from chinvex.retrieval.search import Searcher

    registry = Registry()
    config = registry.resolve(name)
    questions = load_golden(golden)
    searcher = Searcher()
    chunks = searcher.handle(config).conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    share = FTS_SCORE_BUDGET / 100_000
    scaled = {"fts_budget": max(1, round(chunks * share))}
    variants = list(variants) if variants else [
        ("hybrid, depth 20", "hybrid", {"fts_depth": 20, "vector_depth": 20}),
        ("hybrid, depth 50", "hybrid", {"fts_depth": 50, "vector_depth": 50}),
        ("hybrid, depth 100", "hybrid", {"fts_depth": 100, "vector_depth": 100}),
        ("hybrid, missing leg = 0 (no score completion)", "hybrid", {"complete_scores": False}),
        PER_DOC_VARIANT,
    ]
    if chunks >= 5_000 and name == "scifact":
        variants += [
            (f"fts, scoring budget {scaled['fts_budget']:,} chunks ({share:.0%})", "fts", scaled),
            (f"hybrid, scoring budget {scaled['fts_budget']:,} chunks ({share:.0%})", "hybrid", scaled),
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


def run(quick: bool = False, data: Path = DATA, sets: list[str] | None = None) -> list[Figure]:
    figures: list[Figure] = []
    for name in sets or list(SETS):
        figures += run_set(name, data, quick)
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", choices=sorted(SETS), dest="sets",
                        help="only this set (repeatable; default: all)")
    parser.add_argument("--quick", action="store_true",
                        help=f"at most {QUICK_QUESTIONS} questions a set, the three legs only")
    add_data_argument(parser)
    args = parser.parse_args()
    print_figures(f"Retrieval quality ({args.data})", run(args.quick, args.data, args.sets))
