"""Retrieval metrics over ranked chunks (DESIGN.md §10). Pure functions.

A retrieved chunk matches an expected item when its source_uri (or the source_uri without its
`#fragment`) ends with the item's `path` at a path-segment boundary and, if `contains` is given,
its text contains that string. Each expected item counts once: a second chunk of the same file
adds nothing. Gains are binary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from chinvex.models import GoldenExpected


def path_matches(source_uri: str, path: str) -> bool:
    wanted = path.replace("\\", "/").strip("/")
    if not wanted:
        return False
    for uri in {source_uri, source_uri.split("#", 1)[0]}:
        uri = uri.replace("\\", "/")
        if uri == wanted or uri.endswith("/" + wanted):
            return True
    return False


def matches(source_uri: str, text: str, expected: GoldenExpected) -> bool:
    if not path_matches(source_uri, expected.path):
        return False
    return expected.contains is None or expected.contains in text


@dataclass(frozen=True)
class QueryScores:
    hit: float
    recall: float
    rr: float
    ndcg: float
    first_match_rank: int | None


def score_ranking(results: Sequence[tuple[str, str]], expected: Sequence[GoldenExpected], k: int) -> QueryScores:
    """`results` are (source_uri, text) in rank order; only the first `k` count."""
    matched: set[int] = set()
    dcg = 0.0
    first: int | None = None
    for rank, (uri, text) in enumerate(results[:k], start=1):
        new = [i for i, item in enumerate(expected) if i not in matched and matches(uri, text, item)]
        if new:
            matched.update(new)
            dcg += 1.0 / math.log2(rank + 1)
            if first is None:
                first = rank
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(expected), k) + 1))
    return QueryScores(
        hit=1.0 if matched else 0.0,
        recall=len(matched) / len(expected) if expected else 0.0,
        rr=1.0 / first if first else 0.0,
        ndcg=dcg / ideal if ideal else 0.0,
        first_match_rank=first,
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in [0, 100])."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
