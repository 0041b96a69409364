"""What a unit of evidence states in words, as opposed to what it only names.

Code states things in its comments, docstrings, SQL schema headers and message literals; the
names it gives (identifiers) state what a definition is only outside tests. Prose states things
outside its code spans and identifiers. Support counts stated words fully and named ones less.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from chinvex.answer.answer_types import CODE_SPAN
from chinvex.answer.code_units import DEFINED, SQL_CREATE
from chinvex.answer.text import Stemmer
from chinvex.answer.units import EXPLAINED, FORMS, Unit
from chinvex.retrieval.lexical import index_text

AUTHORED_ROLES = frozenset({"code", "docs", "config"})
"""Files whose words and names are their authors' statements; tests, fixtures and benchmarks
quote inputs and name behaviour checked elsewhere."""
IDENTIFIER = re.compile(r"\b(?:[a-z]+_[a-z0-9_]+|[a-z]+[A-Z]\w*|\w+\.\w+\(?\)?|\w+\(\))")
_CODE_PROSE = re.compile(
    r'#(.*)$|//(.*)$|^\s*--\s(.*)$|/\*(.*?)(?:\*/|\Z)|"""(.*?)(?:"""|\Z)|\'\'\'(.*?)(?:\'\'\'|\Z)|'
    r'^\s*(' + SQL_CREATE + r'[^\n(]*)|'
    r'"([^"\n]{12,})"',
    re.M | re.S)
"""What code says in words: comments, docstrings, the header of a SQL schema statement
("CREATE TRIGGER chunks_ad AFTER DELETE ON chunks" is declarative: it reads as what it does),
and string literals (the last group; see prose_literal)."""
_PROSE_LITERAL = re.compile(r"^(?!.*\b(?:SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|CREATE|VALUES)\b)[^{}()=<>\[\]]*$")
_PLACEHOLDER = re.compile(r"\{[^{}\n]*\}|%[sdr]")
_ADJACENT_LITERALS = re.compile(r'"[ \t]*\n\s*[frbuFRBU]{0,2}"')


def statements(units: list[Unit], roles: list[str], terms: frozenset[str], stemmer: Stemmer,
                names_said: bool = False, asked_forms: frozenset[str] = frozenset(),
                ) -> tuple[list[frozenset[str]], list[frozenset[str]], list[bool]]:
    """Per unit: the stems it states in words, the stems of the names its definitions give, and
    whether one of those names is what the question asks about.

    What a unit states in words: for code, its comments, docstrings and (outside tests and
    sample data, whose literals are inputs) string literals; for prose, its text without code
    spans and identifiers. The name a definition gives states what it is ("def chunk_id"
    defines chunk ids), except in tests, fixtures and benchmarks, whose names describe behaviour
    checked elsewhere; and a definition named for what is asked ("def chunk_id" for "how are
    chunk ids computed") is the thing itself, not talk about it. When the question asks for a
    name (`names_said`: "which environment variables…"), the names a sentence gives are what it
    says: "`CHINVEX_CONTEXTS_ROOT` moves the contexts root" names the variable asked for. Text
    that is not a statement (a tool call's arguments, a patch, a listing, a usage line, a
    checklist: `Unit.form`) states nothing unless the question asks about that form
    (`asked_forms`: `forms_asked`, which the analysis has read once)."""
    naming = _names_of(terms, stemmer)
    keep = (lambda name: True) if names_said else naming
    authored = [u.kind == "code" and role in AUTHORED_ROLES for u, role in zip(units, roles)]
    said = stemmer.stem_sets([
        "" if u.form and u.form not in asked_forms else
        words_only(code_prose(u.extent or u.text, literals=role in AUTHORED_ROLES)
                   if u.kind == "code" else u.analysed, keep=keep)
        for u, role in zip(units, roles)])
    names = [[name for match in DEFINED.findall(u.text) for name in match if name] if own else []
             for u, own in zip(units, authored)]
    defined = stemmer.stem_sets([index_text(" ".join(found)) for found in names])
    return said, defined, [any(naming(name) for name in found) for found in names]


def forms_asked(terms: frozenset[str], stemmer: Stemmer, expects: str = "") -> frozenset[str]:
    """The forms of text that is not a statement (units.FORMS) a question asks about: "What did
    the last edit change?" asks about tool calls and patches; "Who is the CEO?" about none, so a
    tool call's `old_string` holding "CEO" states nothing. A user's request is asked about by
    every question but one asking how or why (`EXPLAINED`)."""
    asked = {form for form, words in FORMS.items() if stemmer.stems(words) & terms}
    if expects not in EXPLAINED:
        asked.add("request")
    return frozenset(asked)


def words_only(text: str, keep: Callable[[str], bool] = lambda name: False) -> str:
    """Prose without its code: `code spans` and identifiers (snake_case, camelCase, dotted) are
    names, not statements, unless the name is the thing asked about (`keep`): "`chunk_id` = …"
    states how chunk ids are made; `test_meaning_of_life_is_refused` says nothing of life."""
    def drop(match: re.Match[str]) -> str:
        return match.group(0) if keep(match.group(0)) else " "

    text = CODE_SPAN.sub(drop, text)
    return IDENTIFIER.sub(drop, text)


def _names_of(terms: frozenset[str], stemmer: Stemmer) -> Callable[[str], bool]:
    """Is an identifier a name of what the question asks about: at least two thirds of its
    parts are the question's terms?"""
    cache: dict[str, bool] = {}

    def naming(name: str) -> bool:
        if name not in cache:
            parts = [p for p in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", name.strip("`")) if p]
            stems = [stemmer.stems(p.lower()) for p in parts]
            hits = sum(1 for s in stems if s & terms)
            cache[name] = bool(parts) and hits * 3 >= 2 * len(parts)
        return cache[name]

    return naming


def code_prose(text: str, *, literals: bool = True) -> str:
    """The words a code unit states: comments, docstrings and string literals (a literal that
    asks a question, as tests often hold, states nothing; in tests every literal is an input)."""
    pieces = []
    for match in _CODE_PROSE.finditer(join_literals(text)):
        piece = next(g for g in match.groups() if g is not None)
        if piece.startswith("!") or piece.rstrip().endswith("?"):
            continue  # a shebang; a literal that asks
        if match.group(len(match.groups())) is not None:
            piece = prose_literal(piece) if literals else None
            if piece is None:
                continue  # a string literal holding code (SQL, a format template), or a test's input
        pieces.append(piece)
    return "\n".join(pieces)


def join_literals(code: str) -> str:
    """`code` with implicitly concatenated string literals joined: a message spelled over three
    lines ("... cannot be " / f"mixed. Run ...") is one statement."""
    return _ADJACENT_LITERALS.sub("", code)


def prose_literal(literal: str) -> str | None:
    """A string literal's words when it reads as a statement (an error or help message), with
    its format placeholders taken out ("vectors of two models cannot be mixed for {current}"
    says what the code refuses); None for code held in a string (SQL, a template, a pattern)."""
    words = _PLACEHOLDER.sub(" ", literal)
    return words if _PROSE_LITERAL.match(words) and len(words.split()) >= 3 else None
