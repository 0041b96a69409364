"""Answers over documentation prose: golden_queries/requests_docs.json on the requests tree.

LoCoMo measures answers over chat; a developer's own context is mostly prose and code (READMEs,
design notes, docstrings). This set asks 34 questions of the requests library's user
documentation, each with a short reference answer and the words of the sentence that states it,
and 10 questions the tree does not answer. They were written from the documentation before
chinvex answered any of them, and nothing is fitted on them: they measure.

The context is the whole requests tree (package, tests, docs), as a user would index a
repository, so code and other pages compete with the page that answers.

Figures: answerable questions answered grounded; grounded with a cited chunk holding the stating
sentence (whitespace and markup backticks ignored); token F1 against the reference answer (a
refusal scores 0); median answer length; questions the tree does not answer refused.

    python bench/prose_answers.py [--data DIR] [--details FILE] [--k 8]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answers import token_f1
from common import REPO, Figure, print_figures
from evalsets import add_data_argument, swe_qa_requests

GOLDEN = REPO / "golden_queries" / "requests_docs.json"
HOME = REPO / "bench" / "out" / "prose_answers" / "home"
CONTEXT = "requests-docs"


def _plain(text: str) -> str:
    """Text as the evidence is matched: no backticks, one space for any whitespace, lower case."""
    return re.sub(r"\s+", " ", text.replace("`", "")).strip().lower()


def _visible(answer: str) -> str:
    return re.sub(r"\s*\[chunk:[^\]]*\]", "", answer)


def prepare(data: Path):
    """The context over the unpacked requests tree (created once, ingested incrementally)."""
    os.environ["CHINVEX_HOME"] = str(HOME)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from chinvex.context.registry import Registry
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    tree = swe_qa_requests(data) / "requests"
    Registry().create(CONTEXT, includes={"repos": [str(tree)]}, idempotent=True)
    summary = run_ingest(Registry().resolve(CONTEXT), IngestOptions())
    if not summary.ok:
        raise SystemExit(f"ingest of the {CONTEXT} context failed: {summary.errors}")
    return Registry().resolve(CONTEXT)


def ask(config, queries: list[dict], k: int) -> list[dict]:
    """One row per question: what was answered, whether the stating sentence was cited."""
    from chinvex.answer.service import answer_and_verdict
    from chinvex.retrieval.search import Searcher

    searcher = Searcher()
    rows = []
    try:
        for q in queries:
            started = time.perf_counter()
            response, _ = answer_and_verdict(config, q["query"], k=k, searcher=searcher, generator="extractive")
            texts = {c.chunk_id: c.text for c in response.evidence_pack.chunks}
            cited = [texts.get(c.chunk_id, "") for c in response.citations]
            evidence = _plain(q.get("evidence", "")) if not q.get("refuse") else ""
            rows.append({
                "id": q["id"], "query": q["query"], "refuse": bool(q.get("refuse")),
                "grounded": response.grounded, "answer": _visible(response.answer),
                "gold": q.get("answer"), "confidence": response.confidence,
                "f1": token_f1(response.answer, q["answer"]) if response.grounded and q.get("answer") else 0.0,
                "evidence_cited": bool(evidence) and response.grounded and any(evidence in _plain(t) for t in cited),
                "evidence_retrieved": bool(evidence) and any(evidence in _plain(t) for t in texts.values()),
                "took_s": time.perf_counter() - started,
            })
    finally:
        searcher.close()
    return rows


def figures(rows: list[dict]) -> list[Figure]:
    answerable = [r for r in rows if not r["refuse"]]
    off = [r for r in rows if r["refuse"]]
    grounded = [r for r in answerable if r["grounded"]]
    lengths = [len(r["answer"]) for r in grounded]
    n = len(answerable)
    return [
        Figure("requests docs: answerable answered grounded", len(grounded) / n, "share",
               note=f"{len(grounded)} of {n}"),
        Figure("requests docs: the stating sentence cited", sum(r["evidence_cited"] for r in answerable) / n, "share",
               note="a cited chunk holds the sentence that states the answer"),
        Figure("requests docs: the stating sentence among the evidence",
               sum(r["evidence_retrieved"] for r in answerable) / n, "share",
               note="in the k chunks the answer was chosen from: what the choice could reach"),
        Figure("requests docs: token F1 against the reference answer", statistics.mean(r["f1"] for r in answerable),
               "F1", note="a refusal scores 0"),
        Figure("requests docs: median answer length", statistics.median(lengths) if lengths else None, "chars"),
        Figure("requests docs: questions the tree does not answer, refused",
               sum(not r["grounded"] for r in off) / len(off), "share", ">= 0.95",
               sum(not r["grounded"] for r in off) / len(off) >= 0.95, note=f"{len(off)} questions"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--details", type=Path, help="write every question's row (JSON lines) here")
    args = parser.parse_args()
    config = prepare(args.data)
    rows = ask(config, json.loads(GOLDEN.read_text("utf-8"))["queries"], args.k)
    if args.details:
        args.details.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print_figures("Answers over documentation prose (requests)", figures(rows))


if __name__ == "__main__":
    main()
