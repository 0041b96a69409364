"""Query terms marked in text that is escaped first: the only place the UI builds HTML from
indexed content outside a template's autoescaping, so it is kept small and tested with
`<script>` content.

A word is marked when it shares a stem with the query under the tokenizer the full-text index
uses (`chinvex.retrieval.matching.QueryMatcher`), so "retries" is marked for the
query "retry", as the index matched it.
"""

from __future__ import annotations

from collections.abc import Iterable

from markupsafe import Markup, escape

from chinvex.retrieval.matching import WORD


class Highlighter:
    """Marks the words of texts that match `terms`. Owns an in-memory SQLite connection (the
    stemmer): create one per request and `close()` it, or use it as a context manager."""

    def __init__(self, terms: Iterable[str]):
        from chinvex.retrieval.matching import QueryMatcher

        self._matcher = QueryMatcher(terms)
        self.terms = self._matcher.terms

    def __enter__(self) -> Highlighter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._matcher.close()

    def __call__(self, text: str | None) -> Markup:
        """`text` escaped, with every matching word wrapped in `<mark>`."""
        text = text or ""
        if not self._matcher.active:
            return escape(text)
        found = list(WORD.finditer(text))
        self._matcher.learn([m.group(0) for m in found])
        parts: list[str] = []
        last = 0
        for match in found:
            if self._matcher.word_matches(match.group(0)):
                parts.append(escape(text[last:match.start()]))
                parts.append(Markup("<mark>") + escape(match.group(0)) + Markup("</mark>"))
                last = match.end()
        parts.append(escape(text[last:]))
        return Markup("").join(parts)

    def matches(self, text: str) -> bool:
        """Whether `text` holds a word the query matches."""
        return self._matcher.matches(text)

    def snippet(self, text: str, *, max_lines: int = 6, line_chars: int = 200) -> Markup:
        """A few non-blank lines of a chunk, starting just before the first of its lines holding
        the most of the query's words (a result's words are often deep in a long chunk, and a
        heading with one common query word comes before the line that answers), highlighted."""
        lines = [line for line in text.strip().splitlines() if line.strip()]
        held = [self._matcher.held(line) for line in lines]
        first = held.index(max(held)) if held and max(held) else 0
        start = max(0, min(first - 1, len(lines) - max_lines))
        shown = [line[:line_chars] for line in lines[start:start + max_lines]]
        marker = "…\n" if start > 0 else ""
        more = "\n…" if start + max_lines < len(lines) else ""
        return self(marker + "\n".join(shown) + more)
