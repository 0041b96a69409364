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


_COMPOUND = re.compile(r"\w+(?:[./:\\-]+\w+)+", re.UNICODE)
_QUOTED = re.compile(r'"([^"]*)"')


def compound_terms(query: str) -> list[str]:
    """The query's multi-word tokens as typed: dotted names (`requests.exceptions.InvalidJSONError`),
    paths, flags and quoted phrases. Each is matched as a phrase; a rare one is an exact term
    even when each of its parts is common."""
    found: dict[str, None] = {}
    for text in [*_QUOTED.findall(query), *_COMPOUND.findall(query)]:
        if len(_WORD.findall(text)) > 1:
            found.setdefault(text.lower(), None)
    return list(found)


def quoted_phrases(query: str) -> tuple[str, ...]:
    """The phrases a query puts in double quotes: every result must hold each of them."""
    return tuple(dict.fromkeys(p.strip() for p in _QUOTED.findall(query) if _WORD.search(p)))


def phrase(term: str) -> str:
    """One term as a quoted FTS5 phrase (never a syntax error)."""
    return '"' + term.replace('"', '""') + '"'


def or_expression(terms: list[str]) -> str | None:
    """A MATCH expression that cannot be a syntax error: quoted terms joined by OR."""
    return " OR ".join(phrase(t) for t in terms) if terms else None


def rare_terms(counts: dict[str, int], cap: int, budget: int) -> list[str]:
    """The query terms whose matches are the lexical leg's candidates. `counts` holds each
    term's matches counted up to `cap` (a term at the cap may match far more).

    BM25 costs FTS5 time for every match, and a long question of common words can match a large
    share of a big index. When the matches may exceed `budget`, only the rarest terms
    that fit it (at least one) choose candidates; the search still scores those with every term
    (see lexical_leg.LexicalPlan). Returned in the query's order (the order of `counts`).
    """
    terms = list(counts)
    if all(n < cap for n in counts.values()) and sum(counts.values()) <= budget:
        return terms
    kept: set[str] = set()
    total = 0
    for term in sorted(terms, key=lambda t: counts[t]):  # stable: ties keep the query's order
        if kept and (counts[term] >= cap or total + counts[term] > budget):
            break
        kept.add(term)
        total += counts[term]
    return [t for t in terms if t in kept]
