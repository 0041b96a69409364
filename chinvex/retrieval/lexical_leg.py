"""The lexical leg: BM25 over the FTS5 index, restricted in SQL to what the filters allow.

A query whose words would match more chunks than FTS_SCORE_BUDGET is pruned to its rarer terms
(lexical.rare_terms): only chunks holding one of them are candidates, and they are still scored
by every term, exactly (see LexicalPlan.candidate_expression). Every ordering ends in a rowid
tie-break, so the depth cut never depends on the order rows came in.

When the plan's counts show that its candidates fit the budget and no filter applies (the usual
case), the leg fetches every candidate's score at once and keeps them (`LexicalLeg.scores`): the
vector-only candidates' BM25 is then looked up (a pruned query still subtracts its rare terms'
second count, one statement) instead of asked of FTS5 again, which would score candidate rows
with bm25() a second time."""

from __future__ import annotations

import heapq
import sqlite3
from dataclasses import dataclass

import orjson

from chinvex.retrieval import filters
from chinvex.retrieval.lexical import or_expression, query_terms, rare_terms
from chinvex.retrieval.request import RetrievalError, SearchRequest
from chinvex.retrieval.scope import Allowed
from chinvex.retrieval.term_counts import TermCounts, count_matches
from chinvex.storage import lexical as lexical_rows

FTS_SCORE_BUDGET = 3_000
"""Chunks the lexical leg may rank with BM25 for one query before it takes its candidates from
the rarer terms only (see lexical.rare_terms). Each term's matches are counted up to this many
too: a term matching more could never fit the budget, so it is "common".

bm25() costs FTS5 per row ranked, more the more phrases the expression has: the budget bounds
a search's latency at 100k chunks (bench/search_latency.py). A count cap below the budget left
out the informative middle (a term in a few percent of the chunks) and cost ranking quality on
SciFact (bench/quality.py), so the cap equals the budget."""


@dataclass(frozen=True)
class LexicalPlan:
    """How the lexical leg searches one query in one context (see lexical.rare_terms)."""

    terms: list[str]
    rare: list[str]
    """All of `terms`, unless the query would match more chunks than the budget: then the rarest,
    and only chunks containing one of them are candidates."""
    bounded: bool = False
    """Every term of `rare` was counted under the cap and together they match at most the
    budget: the candidates are known to be few enough to score them all."""

    @property
    def expression(self) -> str | None:
        return or_expression(self.terms)

    @property
    def common(self) -> list[str]:
        return [t for t in self.terms if t not in self.rare]

    @property
    def rare_expression(self) -> str | None:
        return or_expression(self.rare)

    @property
    def candidate_expression(self) -> str | None:
        """Chunks with a rare term, scored by every term. FTS5's bm25() sums one term per phrase
        of the expression, so the rare terms count twice here; subtracting the BM25 of
        `rare_expression` leaves exactly the BM25 of `expression`."""
        rare = or_expression(self.rare)
        return f"({rare}) AND ({rare} OR {or_expression(self.common)})" if self.common else rare


def count_cap(req: SearchRequest) -> int:
    """How far each query term's matches are counted (the plan's key in TermCounts)."""
    budget = req.fts_budget or FTS_SCORE_BUDGET
    return min(req.fts_count_cap or budget, budget)


def lexical_plan(conn: sqlite3.Connection, req: SearchRequest,
                 counter: TermCounts | None = None) -> LexicalPlan:
    """`counter` remembers term counts between the searches of a warm searcher (see
    term_counts); without one every term is counted afresh."""
    terms = query_terms(req.query)
    if len(terms) <= 1:
        return LexicalPlan(terms, terms)
    budget = req.fts_budget or FTS_SCORE_BUDGET
    cap = count_cap(req)
    try:
        if counter is not None:
            counts = counter.counts(conn, terms, cap)
        else:
            counts = {t: count_matches(conn, t, cap) for t in terms}
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    rare = rare_terms(counts, cap, budget)
    bounded = all(counts[t] < cap for t in rare) and sum(counts[t] for t in rare) <= budget
    return LexicalPlan(terms, rare, bounded)


@dataclass(frozen=True)
class LexicalLeg:
    """What the lexical leg found for one query in one context."""

    plan: LexicalPlan
    hits: list[tuple[str, float]]
    """The BM25 top `depth` as (chunk id, score), best first."""
    scores: dict[int, float] | None = None
    """Every candidate's score under `plan.candidate_expression` (the rare terms counted twice
    when the plan is pruned) by FTS rowid, when the leg scored them all (a bounded plan, no
    filter); None otherwise. A chunk missing from it matches none of the candidate terms."""


def fts_leg(conn: sqlite3.Connection, req: SearchRequest, depth: int,
             allowed: Allowed | None = None, counter: TermCounts | None = None) -> LexicalLeg:
    """The query's lexical plan, and its BM25 top `depth` among the chunks the filters allow (in
    the SQL, so the depth counts only allowed chunks). Scores are higher-is-better (FTS5's bm25()
    is negative)."""
    lexical = lexical_plan(conn, req, counter)
    if lexical.expression is None or (allowed is not None and not allowed.doc_ids):
        return LexicalLeg(lexical, [])
    # A pruned query ranks its candidates with the rare terms counted twice: a pool twice the
    # depth, then exact BM25 (see LexicalPlan.candidate_expression) decides.
    size = 2 * depth if lexical.common else depth
    if lexical.bounded and allowed is None and not req.source_types:
        # Every candidate's score at once, kept for the completion step (fts_scores_for).
        every = all_matches(conn, lexical.candidate_expression or "")
        pool = dict(heapq.nsmallest(size, every.items(), key=lambda item: (-item[1], item[0])))
        return LexicalLeg(lexical, top(conn, lexical, pool, depth), every)
    pool = ranked_matches(conn, req, lexical.candidate_expression or "", size, allowed)
    return LexicalLeg(lexical, top(conn, lexical, dict(pool), depth))


def top(conn: sqlite3.Connection, lexical: LexicalPlan, pool: dict[int, float],
        depth: int) -> list[tuple[str, float]]:
    """The best `depth` of a pool scored under the candidate expression, by exact BM25, as
    (chunk id, score). Equal BM25 scores (a text indexed twice) are ordered by rowid, here and
    where the pool was chosen, so the depth cut never depends on the order rows came in."""
    scores = without_doubled_rare(conn, lexical, pool)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:depth]
    names = chunk_ids_of(conn, [rowid for rowid, _ in ranked])
    return [(names[rowid], score) for rowid, score in ranked if rowid in names]


def all_matches(conn: sqlite3.Connection, expression: str) -> dict[int, float]:
    """-bm25 of `expression` for every row matching it. No ORDER BY: SQLite would sort what
    Python sorts anyway, and a bounded plan returns at most the budget's rows."""
    try:
        rows = lexical_rows.bm25_of_all(conn, expression)
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    return {rowid: -float(score) for rowid, score in rows}


def without_doubled_rare(conn: sqlite3.Connection, lexical: LexicalPlan,
                          doubled: dict[int, float]) -> dict[int, float]:
    """Exact BM25 of `lexical.expression` from scores under `candidate_expression`: subtract the
    rare terms' second count (see LexicalPlan.candidate_expression). An unpruned query counts each
    term once already."""
    if not lexical.common:
        return doubled
    rare = bm25_of(conn, lexical.rare_expression or "", list(doubled))
    return {rowid: score - rare.get(rowid, 0.0) for rowid, score in doubled.items()}


def ranked_matches(conn: sqlite3.Connection, req: SearchRequest, expression: str, limit: int,
            allowed: Allowed | None) -> list[tuple[int, float]]:
    """(FTS rowid, -bm25) of the best `limit` matches of `expression` the filters allow."""
    rowids_json = doc_ids_json = None
    if allowed is not None:
        # Source types are part of `allowed`. A few chunks: FTS5 looks up each rowid; otherwise
        # every match is checked against the allowed documents (about the cost of an unfiltered
        # query). See filters.FTS_ROWID_LIMIT.
        if len(allowed.chunk_rowids) <= filters.FTS_ROWID_LIMIT:
            rowids_json = orjson.dumps(allowed.chunk_rowids).decode()
        else:
            doc_ids_json = allowed.doc_ids_json()
    try:
        rows = lexical_rows.bm25_best(conn, expression, limit, rowids_json=rowids_json, doc_ids_json=doc_ids_json,
                                      source_types=None if allowed is not None else req.source_types)
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    return [(rowid, -float(score)) for rowid, score in rows]


def bm25_of(conn: sqlite3.Connection, expression: str, rowids: list[int]) -> dict[int, float]:
    """-bm25 of `expression` for the given rows (those that match it). The test is written
    `+rowid` (chinvex.storage.lexical.bm25_among) so that FTS5 walks the matches once."""
    if not rowids:
        return {}
    try:
        rows = lexical_rows.bm25_among(conn, expression, orjson.dumps(rowids).decode())
    except sqlite3.OperationalError as exc:
        raise RetrievalError(f"full-text search failed: {exc}") from None
    return {rowid: -float(score) for rowid, score in rows}


def chunk_ids_of(conn: sqlite3.Connection, rowids: list[int]) -> dict[int, str]:
    if not rowids:
        return {}
    return lexical_rows.chunk_ids_by_rowid(conn, orjson.dumps(rowids).decode())


def fts_scores_for(conn: sqlite3.Connection, leg: LexicalLeg,
                    chunk_ids: list[str]) -> list[tuple[str, float]]:
    """BM25 of the given chunks (vector-only candidates) under the lexical leg's rules: exact
    for every chunk that could have been a lexical candidate; a chunk with none of the rare
    terms of a pruned query has no lexical score, as if it matched nothing. Looked up in
    `leg.scores` when the leg kept them, else asked of FTS5."""
    lexical = leg.plan
    if lexical.expression is None or not chunk_ids:
        return []
    names = lexical_rows.rowids_by_chunk_id(conn, orjson.dumps(chunk_ids).decode())
    if not names:
        return []
    if leg.scores is not None:
        known = {rowid: leg.scores[rowid] for rowid in names if rowid in leg.scores}
        return [(names[rowid], score) for rowid, score in without_doubled_rare(conn, lexical, known).items()]
    candidates = bm25_of(conn, lexical.candidate_expression or "", list(names))
    scores = without_doubled_rare(conn, lexical, candidates)
    return [(names[rowid], score) for rowid, score in scores.items() if rowid in names]
