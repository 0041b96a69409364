"""An optional stage after fusion (RECALL spec §6.3): a model that reads the question together
with each of the top N passages and scores how well the passage answers it. Fusion only sees
how each leg scored a passage on its own; a cross-encoder reads both texts at once, which is
what lifts retrieval most where one is available.

No reranker ships with chinvex: no cross-encoder, QA or NLI model installs its weights from a
package registry, and chinvex downloads nothing at run time (ARCHITECTURE "Answers"). A package
adds one through the entry-point group `chinvex.rerankers`, as embedders and generators are
added (chinvex.plugins): a class with `from_settings(settings: RerankConfig)` whose instances
have a `name` and `score(query, passages) -> one float per passage` (higher is better). A
context turns the stage on with `retrieval.rerank` in context.json (`provider`, `model`,
`top_n`); a search can turn it off (`--no-rerank`, MCP `recall_search` `rerank: false`).

The stage reorders the top `top_n` fused results by the reranker's scores and leaves the rest
below them in fusion order. Ties keep fusion order, so the result is as repeatable as the
reranker's scores are. A reranker that fails, or returns something other than one finite
number per passage, leaves the fusion order and says why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from chinvex import plugins
from chinvex.errors import ChinvexError
from chinvex.models.context import RerankConfig

GROUP = "chinvex.rerankers"
BUILTIN: dict[str, str] = {}
"""None: see the module docstring."""


class RerankerError(ChinvexError):
    code = "RERANKER_ERROR"


class Reranker(Protocol):
    name: str

    def score(self, query: str, passages: Sequence[str]) -> Sequence[float]: ...


def reranker_names() -> list[str]:
    return plugins.names(BUILTIN, GROUP)


def make_reranker(settings: RerankConfig) -> Reranker:
    """The reranker `settings` name, made by its package; a RerankerError naming what is
    installed when no package registers that name or making it fails."""
    cls = plugins.find(settings.provider, BUILTIN, GROUP)
    if cls is None:
        installed = ", ".join(reranker_names()) or "none"
        raise RerankerError(
            f"Unknown reranker {settings.provider!r} (retrieval.rerank.provider): no installed package "
            f"registers it in the entry-point group {GROUP} (installed: {installed}).")
    try:
        return cls.from_settings(settings)
    except ChinvexError:
        raise
    except Exception as exc:  # a plug-in's own failure, reported in one line
        raise RerankerError(f"Reranker {settings.provider!r} could not start: {type(exc).__name__}: {exc}") from None


def checked_scores(scores: Any, count: int, name: str) -> list[float]:
    """`scores` as floats when they are one finite number per passage, else a RerankerError."""
    try:
        values = [float(s) for s in scores]
    except (TypeError, ValueError):
        raise RerankerError(f"Reranker {name!r} returned scores that are not numbers.") from None
    if len(values) != count:
        raise RerankerError(f"Reranker {name!r} returned {len(values)} scores for {count} passages.")
    if not all(math.isfinite(v) for v in values):
        raise RerankerError(f"Reranker {name!r} returned a score that is not a finite number.")
    return values


def reranked_order(scores: Sequence[float]) -> list[int]:
    """Positions of the scored passages, best score first; equal scores keep their order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))
