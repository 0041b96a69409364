"""`chinvex eval`: run a golden file through search and report retrieval quality and latency."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from chinvex.eval.metrics import path_matches, percentile, score_ranking
from chinvex.models import ContextConfig, GoldenFile
from chinvex.retrieval.search import SearchRequest, Searcher
from chinvex.storage.document_lookup import documents_with_uri_containing

DEFAULT_K = 10


def _expected_types(searcher: Searcher, config: ContextConfig, paths: list[str]) -> list[str]:
    """The source types of the documents a query expects (as indexed)."""
    conn = searcher.handle(config).conn
    types: list[str] = []
    for path in paths:
        tail = path.replace("\\", "/").strip("/").split("/")[-1]
        for uri, source_type in documents_with_uri_containing(conn, tail):
            if path_matches(uri, path):
                types.append(source_type)
                break
    return sorted(set(types)) or ["unknown"]


def run_eval(
    default: ContextConfig,
    golden: GoldenFile,
    *,
    resolve: Callable[[str], ContextConfig],
    k: int | None = None,
    output: Path | None = None,
    searcher: Searcher | None = None,
    mode: str = "hybrid",
    progress: Callable[[int, int], None] | None = None,
    request_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`request_options` are extra SearchRequest fields (depths, ...) for tuning experiments."""
    searcher = searcher or Searcher()
    file_k = k or golden.k or DEFAULT_K
    per_query: list[dict[str, Any]] = []
    configs: dict[str, ContextConfig] = {default.name: default}
    if golden.queries:
        # Load the embedder and stores once before timing, so latency figures are warm ones.
        searcher.search([default], SearchRequest(query=golden.queries[0].query, k=1, mode=mode))  # type: ignore[arg-type]
    handle = open(output, "wb") if output else None
    try:
        for index, query in enumerate(golden.queries):
            qk = query.k or file_k
            config = default
            if query.context:
                config = configs.get(query.context) or resolve(query.context)
                configs[query.context] = config
            response = searcher.search([config], SearchRequest(query=query.query, k=qk, mode=mode,  # type: ignore[arg-type]
                                                               **(request_options or {})))
            ranked = [(r.source_uri, r.text) for r in response.results]
            scores = score_ranking(ranked, query.expected, qk) if query.expected else None
            record = {
                "id": query.id, "query": query.query, "k": qk, "context": config.name,
                "answerable": query.answerable,
                "results": [{"rank": r.rank, "chunk_id": r.chunk_id, "source_uri": r.source_uri,
                             "source_type": r.source_type, "score": r.scores.rank, "text": r.text}
                            for r in response.results],
                "hit": scores.hit if scores else None,
                "recall": scores.recall if scores else None,
                "rr": scores.rr if scores else None,
                "ndcg": scores.ndcg if scores else None,
                "took_ms": response.stats.took_ms,
            }
            if scores is not None:
                record["_types"] = _expected_types(searcher, config, [e.path for e in query.expected])
            per_query.append(record)
            if handle:
                line = {key: value for key, value in record.items() if not key.startswith("_")}
                handle.write(orjson.dumps(line) + b"\n")
            if progress:
                progress(index + 1, len(golden.queries))
    finally:
        if handle:
            handle.close()
    return summarize(golden, per_query, file_k)


def _means(records: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "hit": round(statistics.fmean(r["hit"] for r in records), 4),
        "recall": round(statistics.fmean(r["recall"] for r in records), 4),
        "mrr": round(statistics.fmean(r["rr"] for r in records), 4),
        "ndcg": round(statistics.fmean(r["ndcg"] for r in records), 4),
    }


def summarize(golden: GoldenFile, per_query: list[dict[str, Any]], k: int) -> dict[str, Any]:
    scored = [r for r in per_query if r["hit"] is not None and r["answerable"]]
    unanswerable = [r for r in per_query if not r["answerable"]]
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in scored:
        for source_type in record.get("_types", ["unknown"]):
            by_type[source_type].append(record)
    latencies = [r["took_ms"] for r in per_query]
    return {
        "name": golden.name,
        "k": k,
        "queries": len(per_query),
        "scored_queries": len(scored),
        "metrics": _means(scored) if scored else None,
        "by_source_type": {t: {"queries": len(rs), **_means(rs)} for t, rs in sorted(by_type.items())},
        "unanswerable": {
            "queries": len(unanswerable),
            "mean_top_score": round(statistics.fmean(r["results"][0]["score"] for r in unanswerable
                                                     if r["results"]), 4)
            if any(r["results"] for r in unanswerable) else None,
        },
        "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95),
                       "mean": round(statistics.fmean(latencies), 2) if latencies else None},
        "misses": [r["id"] for r in scored if not r["hit"]],
    }
