"""How hybrid retrieval combines the scores of its two legs (seed spec §4).

Each candidate's lexical (BM25) and vector (cosine) scores are min-max normalised over the
query's candidate set, blended (the seed's 0.6 x lexical + 0.4 x vector; by default the
lexical share adapts to the query, see `fts_share`: lower when plain words meet code, higher
when the query names code), and multiplied by the weight of the source type and, for a
repository file, the weight of its role (chinvex.retrieval.roles: the implementation and its
docs over tests, fixtures and benchmark output). Normalising first
matters: BM25 is unbounded and cosine lives in [-1, 1], so a blend of raw scores would let
BM25's scale decide and make the weights meaningless. Blended = relevance only; the weights are
applied after, as priors. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chinvex.models.documents import DEFAULT_WEIGHTS, UNKNOWN_SOURCE_WEIGHT

FTS_WEIGHT = 0.6
VEC_WEIGHT = 0.4

SOURCE_PRIORITY = {
    "repo": 0,
    "codex_session": 1,
    "agent_session": 1,
    "memory": 1,
    "chat": 2,
    "note": 3,
}
"""Tie-break order (seed spec: repo > codex_session > chat > note); unknown types come last."""


def normalize(scores: Sequence[float]) -> list[float]:
    """Min-max into [0, 1]; all-equal scores are all 1.0 (seed spec §4)."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    span = high - low
    return [(s - low) / span for s in scores]


def blend(fts_norm: float, vec_norm: float, fts_weight: float = FTS_WEIGHT) -> float:
    return fts_weight * fts_norm + (1.0 - fts_weight) * vec_norm


_IDENTIFIER = re.compile(
    r"\b(?:[A-Za-z]\w*_\w+|[a-z]+[A-Z][a-z]\w*|[A-Z][a-z]+[A-Z][a-z]\w*|[A-Za-z_]\w+\.[A-Za-z_]\w+|\w+\(\))")
"""A word a person types only to name code: snake_case, camelCase, PascalCase, dotted.name,
call(). Not mixed-case abbreviations of prose ("iPSC", "lncRNAs")."""


@dataclass(frozen=True)
class QuerySignals:
    """What is known of a query when its candidates are fused."""

    identifier: bool
    """The query names code (it holds an identifier): the lexical leg finds exact names."""
    code_share: float
    """Share of the candidates that are code chunks: natural-language words meet code."""


def query_signals(query: str, candidates: Sequence[Candidate]) -> QuerySignals:
    code = sum(1 for c in candidates if c.kind == "code")
    return QuerySignals(bool(_IDENTIFIER.search(query)), code / len(candidates) if candidates else 0.0)


SHARE_BASE = FTS_WEIGHT
SHARE_NATURAL_CODE = -0.35
SHARE_IDENTIFIER = 0.2


def fts_share(signals: QuerySignals, base: float = SHARE_BASE, natural_code: float = SHARE_NATURAL_CODE,
              identifier: float = SHARE_IDENTIFIER) -> float:
    """The lexical leg's weight in the blend for this query (the vector leg gets the rest).

    The seed's 0.6 is right where the question and the corpus share words (notes, chats,
    abstracts, docs). A question in plain words over code is different: code says `os.path.isfile`
    where the question says "check if a file exists", so BM25 ranks on the few words that do
    occur (often in the wrong function) while the embedding matches meaning. The share therefore
    moves toward the vector leg in proportion to how much of the candidate set is code, unless
    the question itself names code. Fitted on the visible sets with cross-validation
    (bench/tune_fusion.py, ARCHITECTURE "Retrieval")."""
    share = base + (0.0 if signals.identifier else natural_code * signals.code_share)
    if signals.identifier:
        share += identifier
    return min(0.95, max(0.05, share))


def weight_for(source_type: str, weights: Mapping[str, float]) -> float:
    if source_type in weights:
        return float(weights[source_type])
    return DEFAULT_WEIGHTS.get(source_type, UNKNOWN_SOURCE_WEIGHT)


@dataclass
class Candidate:
    """One chunk found by either leg. `fts` is BM25 relevance (higher is better, i.e. the
    negated FTS5 bm25()), `vector` the cosine similarity; None when that leg missed it."""

    key: str  # unique across contexts, e.g. "context/chunk_id"
    chunk_id: str
    source_type: str
    updated_at: str | None
    fts: float | None = None
    vector: float | None = None
    weight_table: str = ""  # which context's weights apply
    role: str | None = None  # a repository file's role (chinvex.retrieval.roles), else None
    role_weight: float = 1.0
    kind: str | None = None  # the chunk's kind ("code", "text", ...), from its metadata


@dataclass
class Fused:
    candidate: Candidate
    fts_norm: float
    vector_norm: float
    blended: float
    weight: float
    rank_score: float
    role_weight: float = 1.0


def fuse(candidates: Sequence[Candidate], weights: Mapping[str, Mapping[str, float]],
         fts_weight: float = FTS_WEIGHT) -> list[Fused]:
    """Blend, weight and order candidates; `weights` maps a candidate's weight_table to its
    source-type weights (several contexts can be searched at once). rank = blended x source
    weight x the candidate's role weight."""
    fts_present = [c for c in candidates if c.fts is not None]
    vec_present = [c for c in candidates if c.vector is not None]
    fts_norm = dict(zip((c.key for c in fts_present), normalize([c.fts for c in fts_present])))  # type: ignore[misc]
    vec_norm = dict(zip((c.key for c in vec_present), normalize([c.vector for c in vec_present])))  # type: ignore[misc]
    fused: list[Fused] = []
    for c in candidates:
        f = fts_norm.get(c.key, 0.0)
        v = vec_norm.get(c.key, 0.0)
        b = blend(f, v, fts_weight)
        w = weight_for(c.source_type, weights.get(c.weight_table, {}))
        fused.append(Fused(c, f, v, b, w, b * w * c.role_weight, c.role_weight))
    return ordered(fused)


def ordered(fused: list[Fused]) -> list[Fused]:
    """Higher rank score first; equal rank scores are tie-broken as seed spec §4 orders them
    (newer updated_at, then source priority, then chunk id), so the same index and query always
    give the same ranking. Stable sorts from the last key to the first: each later sort keeps the
    order of the earlier one among its ties, which lets dates sort descending without a key
    that inverts them (that inversion was most of fusion's cost)."""
    items = sorted(fused, key=lambda i: (SOURCE_PRIORITY.get(i.candidate.source_type, 99),
                                         i.candidate.chunk_id, i.candidate.key))
    # Newer first; ISO 8601 'Z' strings sort chronologically and a missing date ("") sorts last.
    items.sort(key=lambda i: i.candidate.updated_at or "", reverse=True)
    items.sort(key=lambda i: -i.rank_score)
    return items
