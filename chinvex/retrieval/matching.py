"""Which words of a text match a query, as the full-text index matched them.

A word matches when it shares a stem with a query term under the index's tokenizer (FTS5's
porter, through `chinvex.answer.text.Stemmer`), so "retries" matches the query "retry". The web
UI marks such words and the CLI shows the lines that hold them, so both agree with the ranking.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

WORD = re.compile(r"\w+", re.UNICODE)


class QueryMatcher:
    """Owns an in-memory SQLite connection (the stemmer): use it as a context manager or
    `close()` it. Words already judged are remembered, so long texts cost one stemming pass."""

    def __init__(self, terms: Iterable[str]):
        from chinvex.answer.text import Stemmer

        self.terms = [t for t in terms if t]
        self._stemmer = Stemmer() if self.terms else None
        self._wanted: frozenset[str] = (
            frozenset().union(*self._stemmer.stem_sets(self.terms)) if self._stemmer else frozenset())
        self._judged: dict[str, frozenset[str]] = {}
        """word -> the query stems it carries (empty: it does not match)."""

    def __enter__(self) -> QueryMatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._stemmer is not None:
            self._stemmer.close()
            self._stemmer = None

    @property
    def active(self) -> bool:
        """False for a query with no terms: nothing can match."""
        return bool(self._wanted)

    def learn(self, words: list[str]) -> None:
        new = [w for w in dict.fromkeys(words) if w not in self._judged]
        if not new or self._stemmer is None:
            for word in new:
                self._judged[word] = frozenset()
            return
        for word, stems in zip(new, self._stemmer.stem_sets(new)):
            self._judged[word] = stems & self._wanted

    def word_matches(self, word: str) -> bool:
        self.learn([word])
        return bool(self._judged[word])

    def matches(self, text: str) -> bool:
        """Whether `text` holds a word the query matches."""
        return self.held(text) > 0

    def held(self, text: str) -> int:
        """How many of the query's stems `text` holds: a line with two of the query's words says
        more about the query than one with one of them, however often it repeats it."""
        if not self._wanted:
            return 0
        words = WORD.findall(text)
        self.learn(words)
        return len(frozenset().union(*(self._judged.get(w, frozenset()) for w in words)))
