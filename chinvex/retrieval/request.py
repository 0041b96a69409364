"""What a search is asked: the request, its limits, and the errors it reports. Kept apart from
the search itself so that the legs and the result assembly (lexical_leg, vector_leg, results)
can name them without importing the searcher."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chinvex.errors import ChinvexError, UsageError
from chinvex.retrieval.filters import SearchFilter
from chinvex.retrieval.lexical import quoted_phrases

MAX_K = 200
Mode = Literal["hybrid", "fts", "vector"]


GLOBAL_CONTEXT = "global"
"""The context RECALL calls the global scope (cross-project knowledge)."""


class RetrievalError(ChinvexError):
    code = "RETRIEVAL_ERROR"


class InvalidFilterError(UsageError):
    """A filter value no searched context can match (an unknown source type): a usage error
    listing the valid values, not an empty answer."""


@dataclass
class SearchRequest:
    query: str
    k: int = 8
    source_types: list[str] | None = None
    path_glob: str | None = None
    since: str | None = None
    until: str | None = None
    explain: bool = False
    mode: Mode = "hybrid"
    fts_depth: int | None = None
    vector_depth: int | None = None
    complete_scores: bool = True
    """Score every candidate of the union on both signals (its true cosine and BM25) instead of
    treating the leg that did not retrieve it as 0."""
    fts_budget: int | None = None
    fts_count_cap: int | None = None
    """Overrides of lexical_leg.FTS_SCORE_BUDGET and of the cap each term's matches are counted
    up to (by default the budget), for benchmarks and tuning."""
    fusion: str | None = None
    """"adaptive" or "seed" leg weights (chinvex.retrieval.fusion.fts_share); None: the first
    context's `retrieval.fusion`."""
    filter_expression: str | None = None
    """`--filter`: a Filter Expression Language predicate (chinvex.retrieval.fel)."""
    per_doc: int | None = None
    """At most this many chunks of one document among the results (`--per-doc`); None: no
    limit. The rest of the ranking moves up into the freed places."""
    rerank: bool | None = None
    """The reranking stage (chinvex.retrieval.rerank): None runs it when the first context
    configures one (`retrieval.rerank`) and falls back to fusion order with a warning when it
    cannot; False skips it; True requires it (an error when it cannot run)."""
    exact_phrases: bool = True
    """The query's "quoted phrases" are required in every result; off when no chunk held them
    and the search fell back to their words (see Searcher.search)."""
    role_priors: bool = True
    """Weigh repository files by their role (chinvex.retrieval.roles); off: every role 1.0
    (benchmarks, and `chinvex eval --no-role-priors`)."""

    @property
    def filter(self) -> SearchFilter:
        return SearchFilter.of(self.source_types, self.path_glob, self.since, self.until,
                               self.filter_expression, quoted_phrases(self.query) if self.exact_phrases else ())
