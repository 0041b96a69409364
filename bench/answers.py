"""Grounded answers on LoCoMo (conv-26 + conv-30) with the extractive generator.

Both conversations are ingested as note roots (one markdown transcript per session; every turn
is a line `**[D3:7] Caroline:** ...`) in a dedicated CHINVEX_HOME under bench/out/ (git-ignored;
ingest is incremental, so a second run only checks fingerprints). Note roots rather than chat
roots: the markdown-chat parser finds no user/assistant headings in these files and indexes
them as plain markdown either way, and as notes the chunk headers carry the relative file name
instead of the absolute path, which retrieves turns a little better (hit@8 0.87 vs 0.85 when
measured for this benchmark).

Figures:
- answered: share of the 231 answerable questions answered grounded with at least one citation
  whose chunk is in the expected session file and contains an expected turn tag (target >= 0.6);
- refused: share of the 71 adversarial questions (`"answerable": false`) refused, i.e.
  grounded=false with the refusal text (target >= 0.8);
- answer latency (warm, in-process, including retrieval).

    python bench/answers.py [--quick] [--k 8] [--details OUT.jsonl] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, Figure, median, pct, print_figures  # noqa: E402
from evalsets import DATA, add_data_argument, locomo  # noqa: E402

GOLDEN_NAME = "golden-conv26-conv30.json"
HOME = REPO / "bench" / "out" / "answers" / "home"
CONTEXT = "locomo"


def prepare(data: Path = DATA) -> object:
    """Create (once) and ingest (incrementally) the benchmark context; return its config."""
    os.environ["CHINVEX_HOME"] = str(HOME)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from chinvex.ingest.pipeline import IngestOptions, run_ingest
    from chinvex.registry import Registry

    base = locomo(data)
    Registry().create(CONTEXT, includes={"note_roots": [str(base / "conv-26"), str(base / "conv-30")]},
                      idempotent=True)
    summary = run_ingest(Registry().resolve(CONTEXT), IngestOptions())
    if not summary.ok:
        raise SystemExit(f"ingest of the LoCoMo context failed: {summary.errors}")
    return Registry().resolve(CONTEXT)


def _matches(citation_uri: str, text: str, expected: list[dict]) -> bool:
    plain = citation_uri.split("#", 1)[0].replace("\\", "/")
    for item in expected:
        path = item["path"].replace("\\", "/").strip("/")
        if (plain == path or plain.endswith("/" + path)) and (not item.get("contains") or item["contains"] in text):
            return True
    return False


def evaluate(config, *, k: int = 8, sample: int = 1, details: Path | None = None, data: Path = DATA) -> dict:
    from chinvex.answer.grounding import REFUSAL
    from chinvex.answer.service import answer
    from chinvex.retrieval.search import Searcher

    golden = json.loads((locomo(data) / GOLDEN_NAME).read_text("utf-8"))
    queries = golden["queries"]
    if sample > 1:  # --quick: every n-th question, so both conversations and all kinds stay in
        queries = queries[::sample]
    searcher = Searcher()
    answer(config, "warm up", k=k, searcher=searcher, generator="extractive")
    rows, latencies = [], []
    for q in queries:
        started = time.perf_counter()
        response = answer(config, q["query"], k=k, searcher=searcher, generator="extractive")
        latencies.append(time.perf_counter() - started)
        texts = {c.chunk_id: c.text for c in response.evidence_pack.chunks}
        hit = response.grounded and any(
            _matches(c.source_uri, texts.get(c.chunk_id, ""), q["expected"]) for c in response.citations)
        in_evidence = any(_matches(c.metadata["source_uri"], c.text, q["expected"])
                          for c in response.evidence_pack.chunks)
        rows.append({
            "id": q["id"], "query": q["query"], "answerable": q.get("answerable", True),
            "grounded": response.grounded, "refused": response.answer == REFUSAL, "hit": hit,
            "expected_in_evidence": in_evidence, "answer": response.answer,
            "errors": [e.model_dump() for e in response.errors],
        })
    searcher.close()
    if details:
        details.parent.mkdir(parents=True, exist_ok=True)
        details.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    ans = [r for r in rows if r["answerable"]]
    adv = [r for r in rows if not r["answerable"]]
    return {
        "answerable": len(ans), "adversarial": len(adv),
        "answered_share": sum(r["hit"] for r in ans) / len(ans) if ans else None,
        "grounded_share": sum(r["grounded"] for r in ans) / len(ans) if ans else None,
        "evidence_share": sum(r["expected_in_evidence"] for r in ans) / len(ans) if ans else None,
        "refused_share": sum(r["refused"] for r in adv) / len(adv) if adv else None,
        "latency_p50_ms": median(latencies) * 1000, "latency_p95_ms": pct(latencies, 95) * 1000,
    }


def run(quick: bool = False, k: int = 8, details: Path | None = None, data: Path = DATA) -> list[Figure]:
    config = prepare(data)
    result = evaluate(config, k=k, sample=4 if quick else 1, details=details, data=data)
    answered, refused = result["answered_share"], result["refused_share"]
    scope = f"{result['answerable']} answerable, {result['adversarial']} adversarial questions, k={k}"
    return [
        Figure("LoCoMo answerable answered grounded with an expected turn cited", answered, "share",
               ">= 0.6", answered >= 0.6,
               f"{scope}; grounded at all {result['grounded_share']:.3f}; expected turn in evidence "
               f"{result['evidence_share']:.3f}"),
        Figure("LoCoMo adversarial questions refused", refused, "share", ">= 0.8", refused >= 0.8, scope),
        Figure("answer latency p50 (extractive, warm)", result["latency_p50_ms"], "ms"),
        Figure("answer latency p95 (extractive, warm)", result["latency_p95_ms"], "ms"),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--details", type=Path, help="write one JSON line per question here")
    add_data_argument(parser)
    args = parser.parse_args()
    print_figures("grounded answers (LoCoMo, extractive)", run(args.quick, args.k, args.details, args.data))
