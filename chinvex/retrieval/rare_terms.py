"""The word you typed is never lost: a query term that occurs in few chunks keeps its best
lexical matches in the results, whatever the vector leg thinks of them.

Hybrid fusion min-max normalises each leg and blends them; a chunk holding the only occurrence of
an identifier, a flag or an error code can score near the bottom of the vector leg (its text says
little else the query says) and fall below k although full-text search ranks it first. So when a
term of the query matches at most RARE_DF chunks of a context, that context's best full-text hits
(as many as the rare terms match, at most `pin_limit(k)` over all the contexts searched) are
kept in the top k: those already there stay where fusion put them, the others take the last
places, in fusion order, pushing out the lowest-ranked results that are not kept. Their scores are lower than those above them (they
ranked below k), so the list stays ordered by score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

RARE_DF = 10
"""A term matching at most this many chunks of a context is rare (counted by the full-text
index itself, with its stemming)."""

T = TypeVar("T")


def pin_limit(k: int) -> int:
    """At most a third of the results (one at least) are kept this way."""
    return max(1, k // 3)


def wanted_pins(counts: dict[str, int], k: int) -> int:
    """How many of a context's best full-text hits to keep: the matches of its rare terms,
    capped by `pin_limit`; 0 when no term is rare."""
    rare = [n for n in counts.values() if 1 <= n <= RARE_DF]
    return min(sum(rare), pin_limit(k)) if rare else 0


def best_lexical(hits: Iterable[tuple[str, float | None]], count: int) -> list[str]:
    """The keys of the `count` hits with the highest full-text score (ties by key)."""
    scored = [(key, score) for key, score in hits if score is not None]
    scored.sort(key=lambda item: (-item[1], item[0]))
    return [key for key, _ in scored[:count]]


def best_rare(hits: Iterable[tuple[str, float | None, int]], count: int) -> list[str]:
    """The keys of `count` hits holding a rare term: those holding the rarest first (the third
    value: how many chunks match the rarest term a hit holds), then by full-text score (ties by
    key). A dotted name matching one chunk goes before its last part matching five."""
    ranked = sorted(hits, key=lambda item: (item[2], -(item[1] if item[1] is not None else float("-inf")), item[0]))
    return [key for key, _, _ in ranked[:count]]


def keep_pinned(ordered: Sequence[T], pinned: set[str], k: int, key_of: Callable[[T], str]) -> list[T]:
    """`ordered` with every pinned item inside its first `k` (see the module docstring)."""
    top, rest = list(ordered[:k]), list(ordered[k:])
    room_for_pins = pin_limit(k) - sum(1 for item in top if key_of(item) in pinned)
    # the cap holds over every context searched: two contexts holding the same rare chunk would
    # otherwise each lift one, and push the second-best result out of a top 3
    lifted = [item for item in rest if key_of(item) in pinned][:max(0, room_for_pins)]
    if not lifted:
        return list(ordered)
    room = len(lifted)
    for i in range(len(top) - 1, -1, -1):
        if room == 0:
            break
        if key_of(top[i]) not in pinned:
            rest.insert(0, top.pop(i))
            room -= 1
    kept = top + lifted[: len(lifted) - room]
    chosen = {key_of(item) for item in kept}
    return kept + [item for item in ordered if key_of(item) not in chosen]
