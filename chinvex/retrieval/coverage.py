"""How many of the searched chunks a search could score by vector, and what it tells the user
when that is not all of them.

A chunk without a vector is found by its words alone; a search that called itself "hybrid"
while the Chroma store was lost or half-filled would hide that. So every search that asks for
vectors states the coverage: a figure in `stats`, a warning naming the context whenever it is
under 100 %, and a mode line "hybrid (vectors for 23 % of chunks)".

The figure is the one ingest and doctor keep in hybrid.db (chinvex.storage.coverage), read in
the search's own snapshot; none when the vector leg could not run; counted afresh, once per
state of the index, when there is no figure or it is about another store or an older state of
it (ARCHITECTURE, Retrieval, "Vector coverage", says how each case is told apart). It is over
the whole context, whatever the search's filters.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class VectorCoverage:
    chunks: int
    """Chunk rows of the searched contexts."""
    with_vector: int
    """How many of them this search could score by vector."""

    @property
    def missing(self) -> int:
        return max(0, self.chunks - self.with_vector)

    @property
    def ratio(self) -> float:
        """Share of chunks with a usable vector; 1.0 for an empty index."""
        return 1.0 if self.chunks <= 0 else min(1.0, self.with_vector / self.chunks)

    @property
    def complete(self) -> bool:
        return self.missing == 0

    def as_json(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "with_vector": self.with_vector, "ratio": round(self.ratio, 4)}


def total(parts: Iterable[VectorCoverage]) -> VectorCoverage | None:
    """The coverage of several contexts searched together (None: none asked for vectors)."""
    parts = list(parts)
    if not parts:
        return None
    return VectorCoverage(sum(p.chunks for p in parts), sum(p.with_vector for p in parts))


def from_record(recorded: Any, *, vector_leg_ran: bool, token_now: str | None,
                writer_active: bool = False) -> VectorCoverage | None:
    """The coverage a search reports for one context, from what `meta.vector_coverage` says
    (`chinvex.storage.coverage.current_coverage`, None when nothing is recorded), the store's
    write token now, whether a writer holds the context's lock, and whether the vector leg could
    run. None: the record cannot be trusted here and the store must be counted (`counted`). A
    record without a token (the writer drops it with each batch it keeps the figure current
    for) is judged by the store's identity alone."""
    if not vector_leg_ran:
        return VectorCoverage(recorded.chunks, 0) if recorded is not None else None
    if recorded is None or recorded.store_lost or recorded.store_replaced:
        return None
    if recorded.token is not None and recorded.token != token_now and not writer_active:
        return None
    return VectorCoverage(recorded.chunks, min(recorded.with_vector, recorded.chunks))


def counted(chunks: int, vectors: int | None, *, vector_leg_ran: bool) -> VectorCoverage:
    """The coverage from a count of chunk rows and of the store's vectors (None: not counted)."""
    if not vector_leg_ran or vectors is None:
        return VectorCoverage(chunks, 0 if not vector_leg_ran else chunks)
    return VectorCoverage(chunks, min(vectors, chunks))


def percent(ratio: float) -> str:
    """`23 %`; never rounds a shortfall up to "100 %" nor a few vectors down to "0 %"."""
    value = ratio * 100
    if 0 < value < 1:
        return f"{math.ceil(value * 10) / 10:g} %" if value >= 0.1 else "< 0.1 %"
    if 99 < value < 100:
        return f"{math.floor(value * 10) / 10:g} %"
    return f"{round(value)} %"


def warning(context: str, coverage: VectorCoverage, *, vector_leg_ran: bool) -> str | None:
    """The warning for one context whose coverage is under 100 % (None when it is complete).
    When the vector leg did not run, another warning has said why and what to do."""
    if coverage.complete:
        return None
    figure = (f"vector coverage {percent(coverage.ratio)} ({coverage.with_vector} of "
              f"{coverage.chunks} chunks have a usable vector)")
    if coverage.with_vector == 0:
        return f"{context}: {figure}: this search is full-text only"
    others = ("the other chunk is found by its words only" if coverage.missing == 1 else
              f"the other {coverage.missing} chunks are found by their words only")
    fix = (f" (run 'chinvex ingest --context {context}' to embed "
           f"{'it' if coverage.missing == 1 else 'them'})") if vector_leg_ran else ""
    return f"{context}: {figure}: this search is not fully hybrid, {others}{fix}"


def mode_label(mode: str, coverage: VectorCoverage | None) -> str:
    """The mode as human output names it: plain "hybrid" only when every chunk had a vector."""
    if coverage is None or coverage.complete or mode not in ("hybrid", "vector"):
        return mode
    return f"{mode} (vectors for {percent(coverage.ratio)} of chunks)"
