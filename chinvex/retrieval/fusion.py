"""How hybrid retrieval combines the scores of its two legs (seed spec §4).

Each candidate's lexical (BM25) and vector (cosine) scores are min-max normalised over the
query's candidate set, blended (the seed's 0.6 x lexical + 0.4 x vector; by default the
lexical share adapts to the query, see `fts_share`: lower when plain words meet code or when
the lexical scores are a plateau, higher when the query names code), and multiplied by the
weight of the source type and, for a repository file, the weight of its role
(chinvex.retrieval.roles: the implementation and its docs over tests, fixtures and benchmark
output). Normalising first matters: BM25 is unbounded and cosine lives in [-1, 1], so a blend
of raw scores would let BM25's scale decide and make the weights meaningless. Blended =
relevance only; the weights are applied after, as priors. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
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
    lexical_peak: float = 0.5
    """How far the lexical leg's best candidates stand out (`lexical_peak`), in [0, 1]; 0.5
    (PLATEAU) changes nothing."""


PEAK_DEPTH = 10
"""The lexical peak compares the best BM25 score with the one this many places below it: the
depth a reader looks at."""

PLATEAU = 0.5
"""A lexical peak below this is a plateau (the top ten span less than half of the lexical
scores' range) and lowers the lexical share; also the value when the peak cannot be measured."""


def lexical_peak(candidates: Sequence[Candidate], depth: int = PEAK_DEPTH) -> float:
    """(best − the `depth`-th next) / (best − worst) of the candidates' BM25 scores.

    Near 1: a few chunks share far more of the query's rare words than the rest, and BM25's
    order is informative. Near 0: the top of the lexical list is a plateau of chunks matching the
    same common words about equally (typical of plain words over code, or of a vague question).
    Min-max normalisation stretches whatever range there is to [0, 1], so on a plateau it turns
    small, mostly accidental BM25 differences into full-scale ones; that is what the share
    corrects for. Scale-free, so it means the same on any corpus."""
    scores = sorted((c.fts for c in candidates if c.fts is not None), reverse=True)
    if len(scores) <= depth or scores[0] == scores[-1]:
        return PLATEAU
    return (scores[0] - scores[depth]) / (scores[0] - scores[-1])


def query_signals(query: str, candidates: Sequence[Candidate]) -> QuerySignals:
    code = sum(1 for c in candidates if c.kind == "code")
    return QuerySignals(bool(_IDENTIFIER.search(query)), code / len(candidates) if candidates else 0.0,
                        lexical_peak(candidates))


SHARE_BASE = FTS_WEIGHT
SHARE_NATURAL_CODE = -0.35
SHARE_IDENTIFIER = 0.1
SHARE_LEXICAL_PEAK = 0.5


def fts_share(signals: QuerySignals, base: float = SHARE_BASE, natural_code: float = SHARE_NATURAL_CODE,
              identifier: float = SHARE_IDENTIFIER, lexical_peak: float = SHARE_LEXICAL_PEAK) -> float:
    """The lexical leg's weight in the blend for this query (the vector leg gets the rest).

    The seed's 0.6 is right where the question and the corpus share words (notes, chats,
    abstracts, docs). A question in plain words over code is different: code says `os.path.isfile`
    where the question says "check if a file exists", so BM25 ranks on the few words that do
    occur (often in the wrong function) while the embedding matches meaning. The share therefore
    moves toward the vector leg in proportion to how much of the candidate set is code, unless
    the question itself names code. It also falls when the lexical scores are a plateau
    (`signals.lexical_peak` below PLATEAU), in proportion to how flat they are. It does not rise
    when the best matches stand out: min-max normalisation already gives a standout its full
    lexical score and the rest little. Fitted on the visible sets with cross-validation
    (bench/tune_fusion.py, ARCHITECTURE "Retrieval")."""
    share = base + (0.0 if signals.identifier else natural_code * signals.code_share)
    if signals.identifier:
        share += identifier
    share += lexical_peak * min(0.0, signals.lexical_peak - PLATEAU)
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


def at_most_per_document(fused: Sequence[Fused], limit: int, document_of: Callable[[Fused], Hashable]) -> list[Fused]:
    """`fused` in its order, less every chunk past the first `limit` of its document. For a
    question whose answer is a list of files ("which files handle retries?"), a second chunk of
    an already-listed file takes a place another file could have had; a question answered by a
    passage keeps them (the default: no limit)."""
    seen: dict[Hashable, int] = {}
    kept: list[Fused] = []
    for item in fused:
        doc = document_of(item)
        count = seen.get(doc, 0)
        if count < limit:
            kept.append(item)
            seen[doc] = count + 1
    return kept
