"""Text for the FTS5 index and safe FTS5 queries from arbitrary user text.

FTS5's query language gives meaning to quotes, `-`, `AND`/`OR`/`NOT`, parentheses, `*`, `:` and
`^`; a user typing `foo.bar(x)` or `don't` must never see a syntax error. So queries are never
passed through: they are cut into word tokens, each token is quoted, and the tokens are OR-ed
(any term matches, BM25 ranks). Code identifiers are made searchable by their parts: the
tokenizer already splits `parse_config`; camelCase and PascalCase parts are appended to the
indexed text so `parseConfig` matches "parse config".
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*[a-z0-9][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z][A-Za-z0-9]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")

MAX_QUERY_TERMS = 48

# Function words that match nearly every English chunk: OR-ing them in costs time (long
# posting lists) and adds noise. Dropped unless the query has nothing else.
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its me my of on or our should so than that the their them then there these they
    this to us was we were what when where which who whom why will with would you your""".split()
)


def identifier_parts(text: str) -> list[str]:
    """Lower-cased parts of every camelCase / PascalCase identifier in `text`, in order."""
    parts: list[str] = []
    for ident in _IDENT.findall(text):
        pieces = [p.lower() for p in _PARTS.findall(ident)]
        if len(pieces) > 1:
            parts.extend(pieces)
    return parts


def index_text(text: str) -> str:
    """What FTS5 indexes for a chunk: its text plus the parts of its compound identifiers."""
    parts = identifier_parts(text)
    return f"{text}\n{' '.join(parts)}" if parts else text


def query_terms(query: str) -> list[str]:
    """Distinct lower-cased search terms of a user query (identifier parts included)."""
    seen: dict[str, None] = {}
    words = _WORD.findall(query)
    for word in words:
        seen.setdefault(word.lower(), None)
    for part in identifier_parts(query):
        seen.setdefault(part, None)
    terms = [t for t in seen if t.strip("_")]
    content = [t for t in terms if t not in STOPWORDS]
    return (content or terms)[:MAX_QUERY_TERMS]


def fts_match_expression(query: str) -> str | None:
    """A MATCH expression that cannot be a syntax error: quoted terms joined by OR."""
    terms = query_terms(query)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
