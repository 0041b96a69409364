"""From hits to results: the committed rows behind the hits, what fusion needs of each, how
fresh its source is, and why it ranks where it does (`--explain`)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from chinvex.models import ContextConfig, Range, Scores, SearchResult
from chinvex.retrieval import filters
from chinvex.retrieval.filters import SearchFilter
from chinvex.retrieval.freshness import freshness
from chinvex.retrieval.fusion import FTS_WEIGHT, PLATEAU, Candidate, QuerySignals, fts_share, query_signals
from chinvex.retrieval.lexical_leg import LexicalPlan
from chinvex.retrieval.request import GLOBAL_CONTEXT, SearchRequest
from chinvex.retrieval.roles import role_of
from chinvex.storage import search_reads

@dataclass
class Hit:
    context: str
    chunk_id: str
    fts: float | None = None
    vector: float | None = None
    vector_rank: int | None = None
    lexical: LexicalPlan | None = None


def candidate_of(hit: Hit, row: dict[str, Any], role_table: Mapping[str, float] | None,
                 asks_about_tests: bool) -> Candidate:
    """What fusion needs of one hit: its scores, source type and date, and for a repository
    file its role and that role's weight in `role_table` (1.0 when the table is None, role
    priors off, or the query is about tests)."""
    path = row.get("rel_path") if row["source_type"] == "repo" else None
    role = role_of(path) if path else None
    weight = 1.0 if role is None or role_table is None or asks_about_tests else float(role_table[role])
    return Candidate(key=f"{hit.context}\x00{hit.chunk_id}", chunk_id=hit.chunk_id,
                     source_type=row["source_type"], updated_at=row["updated_at"], fts=hit.fts,
                     vector=hit.vector, weight_table=hit.context, role=role, role_weight=weight,
                     kind=(row["metadata"] or {}).get("kind"))


def result_rows(conn: sqlite3.Connection, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Result rows by chunk id, with the document's relative path (`rel_path`) that the path
    filter and the role priors read."""
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(chunk_ids), 500):
        for row in search_reads.result_rows(conn, chunk_ids[start:start + 500]):
            item = dict(row)
            item["metadata"] = orjson.loads(item.pop("metadata_json") or "{}")
            out[item["chunk_id"]] = item
    return out


def passes_filters(row: dict[str, Any], search_filter: SearchFilter) -> bool:
    if not search_filter.active:
        return True
    return filters.passes(search_filter, source_type=row["source_type"], source_uri=row["source_uri"],
                    rel_path=row.get("rel_path"), updated_at=row["updated_at"],
                    created_at=row["created_at"])


def fts_share_for(req: SearchRequest, configs: Sequence[ContextConfig],
                  candidates: list[Candidate]) -> tuple[float, QuerySignals | None]:
    """The lexical leg's weight in this query's blend: the seed's 0.6, or adapted to the query
    and its candidates (fusion.fts_share); with the signals it was adapted to (None: seed)."""
    fusion = req.fusion or next((c.retrieval.fusion for c in configs if c.retrieval), "adaptive")
    if fusion == "seed":
        return FTS_WEIGHT, None
    signals = query_signals(req.query, candidates)
    return fts_share(signals), signals


def explain(hit: Hit, item: Any, row: dict[str, Any], terms: list[str], share: float,
            signals: QuerySignals | None = None) -> dict[str, Any]:
    haystack = (row.get("search_text") or row["text"]).lower()
    matched = [t for t in terms if re.search(r"(?<!\w)" + re.escape(t), haystack)]
    reasons = []
    if hit.fts is not None:
        reasons.append(f"matched terms: {', '.join(matched) or '(stemmed forms)'}")
    if hit.vector is not None:
        reasons.append(f"vector neighbour #{hit.vector_rank} (cosine {hit.vector:.3f})")
    fts: dict[str, Any] = {"raw_bm25": hit.fts, "normalized": item.fts_norm, "weight": round(share, 6),
                           "matched_terms": matched}
    if signals is not None:
        # What set the share (fusion.fts_share): the same for every result of the query.
        fts["share_signals"] = {"names_code": signals.identifier, "code_share": round(signals.code_share, 3),
                                "lexical_peak": round(signals.lexical_peak, 3)}
        if signals.lexical_peak < PLATEAU:
            reasons.append(f"the query's BM25 scores were a plateau (peak {signals.lexical_peak:.2f}): "
                           "lexical weight lowered")
    if hit.lexical is not None and hit.lexical.common:
        fts["candidate_terms"] = hit.lexical.rare
        reasons.append("lexical candidates were chunks with one of the rarer terms "
                       f"({', '.join(hit.lexical.rare)}); the query's words matched more chunks "
                       "than the scoring budget")
    role = item.candidate.role
    if role is not None and item.role_weight != 1.0:
        reasons.append(f"{role} file weighed {item.role_weight:g}")
    return {
        "fts": fts,
        "vector": {"raw_cosine": hit.vector, "normalized": item.vector_norm, "weight": round(1 - share, 6),
                   "neighbour_rank": hit.vector_rank},
        "blended": item.blended,
        "source_weight": item.weight,
        "role": role,
        "role_weight": item.role_weight,
        "rank": item.rank_score,
        "formula": f"rank = ({share:g} * fts_norm + {1 - share:g} * vector_norm) * source_weight * role_weight",
        "why": "; ".join(reasons) or "no signal",
    }


def search_result(position: int, hit: Hit, item: Any, row: dict[str, Any], terms: list[str] | None,
                  share: float, signals: QuerySignals | None = None,
                  rerank: float | None = None) -> SearchResult:
    """One fused hit as the search returns it: its scores (with the reranker's, when the
    reranking stage reordered it), its row, its freshness, and with `terms` (`--explain`) why
    it ranks where it does."""
    scores = Scores(fts=hit.fts, vector=hit.vector, fts_norm=round(item.fts_norm, 6),
                    vector_norm=round(item.vector_norm, 6), blended=round(item.blended, 6),
                    weight=item.weight, role_weight=item.role_weight, rank=round(item.rank_score, 6),
                    rerank=rerank)
    return SearchResult(
        rank=position, chunk_id=hit.chunk_id, doc_id=row["doc_id"], context=hit.context,
        source_type=row["source_type"], source_uri=row["source_uri"], title=row["title"], text=row["text"],
        range=Range(char_start=row["char_start"], char_end=row["char_end"],
                    line_start=row["line_start"], line_end=row["line_end"]),
        updated_at=row["updated_at"], scores=scores, metadata=row["metadata"], freshness=freshness(row),
        explain=explain(hit, item, row, terms, share, signals) if terms is not None else None,
        scope="global" if hit.context == GLOBAL_CONTEXT else "project",
    )


def overall_mode(modes: set[str]) -> str:
    """The search's mode from its contexts': theirs when they agree, else hybrid if any was."""
    if len(modes) == 1:
        return next(iter(modes))
    if not modes:
        return "none"
    return "hybrid" if "hybrid" in modes else sorted(modes)[0]
