"""How many chunks each query term matches, remembered until the index changes.

The lexical leg counts every term's matches (up to a cap) to decide whether a query must be
pruned to its rarer terms (lexical_leg.lexical_plan). Counting walks the term's match list in
FTS5, a cost paid for each common word of every query, and again by the next query that uses
the word. A warm searcher (the MCP server, the web UI, an
eval run) keeps the counts here instead. They are exact functions of the committed index, so a
remembered count equals a fresh one for as long as the index is unchanged, and the same query
plans the same way in every process. The memory is dropped when another connection commits
(`PRAGMA data_version` moves) or this one writes (`total_changes` moves)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from chinvex.retrieval.lexical import phrase
from chinvex.storage import lexical as lexical_rows
from chinvex.storage.search_reads import data_version

MAX_TERMS = 8_192
"""Remembered (term, cap) pairs per connection; the oldest go first (a dict keeps insertion
order)."""


def count_matches(conn: sqlite3.Connection, term: str, cap: int) -> int:
    """Chunks matching `term`, counted up to `cap`."""
    return lexical_rows.count_matches(conn, phrase(term), cap)


class TermCounts:
    """`count_matches` for one connection, remembered while its index state is unchanged."""

    def __init__(self, limit: int = MAX_TERMS) -> None:
        self._limit = limit
        self._state: tuple[int, int] | None = None
        self._counts: dict[tuple[str, int], int] = {}

    def counts(self, conn: sqlite3.Connection, terms: Iterable[str], cap: int) -> dict[str, int]:
        """Each term's matches up to `cap`, in the order of `terms`."""
        state = (data_version(conn), conn.total_changes)
        if state != self._state:
            self._counts.clear()
            self._state = state
        found: dict[str, int] = {}
        for term in terms:
            key = (term, cap)
            n = self._counts.get(key)
            if n is None:
                n = count_matches(conn, term, cap)
                if len(self._counts) >= self._limit:
                    del self._counts[next(iter(self._counts))]
                self._counts[key] = n
            found[term] = n
        return found
