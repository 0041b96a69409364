"""The Filter Expression Language (`--filter`, the Recall design's FEL): exact predicates over
documents and chunks, compiled to parameterised SQL.

    doc.source_type = 'codex_session' AND doc.updated_at >= '2026-03-01'
        AND doc.updated_at < '2026-04-01' AND chunk.text LIKE '%auth.py%'
    doc.tag IN ('runbook', 'ops') AND NOT doc.path GLOB 'archive/**'

Grammar: `expr := term ((AND|OR) term)*` with AND binding tighter than OR, `term := [NOT] term |
'(' expr ')' | field op value | field IN '(' value, ... ')'`, `op := = != < <= > >= LIKE GLOB`.
Keywords are case-insensitive; strings are quoted with ' or " (the quote doubled inside);
numbers are integers; `true` and `false` are the values of `doc.stale`. Fields are qualified
(`doc.*`, `chunk.*`); the catalogue is `FIELDS`.

Semantics: a predicate on a missing value is false (and NOT of it true: predicates are
two-valued, unlike SQL's NULL); strings compare case-sensitively, LIKE too (`%` any run, `_` one
character); GLOB matches `*` within a path segment, `**` across segments and `?` one character;
dates are ISO-8601 strings and compare as strings (`doc.updated_at >= '2026-03-01'`); `doc.tag`
is true when any of the document's front-matter tags satisfies the predicate; `doc.role` is a
repository file's role as search weighs it (chinvex.retrieval.roles; missing for other sources);
`doc.stale` is true when the document's source file changed or vanished since it was indexed
(the freshness check search results carry), so it reads the file system and is not cached.

The values never enter the SQL text: every literal is a parameter. A parse error, an unknown
field or a value of the wrong type is a `FilterError` naming the column.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from dataclasses import dataclass
from typing import Any, Literal

from lark import Lark, Token, Transformer, UnexpectedInput

from chinvex.models.filter_expr import Compare, Junction, Member, Not, Value
from chinvex.retrieval.roles import ROLES, role_of
from chinvex.storage.filter_sql import (
    GLOB_FUNCTION,
    LIKE_FUNCTION,
    ROLE_FUNCTION,
    STALE_FUNCTION,
)

EXPRESSION_GRAMMAR = r"""
?or_expr: and_expr (_OR and_expr)*
?and_expr: not_expr (_AND not_expr)*
?not_expr: _NOT not_expr -> negation
         | atom
?atom: "(" or_expr ")"
     | FIELD OP value -> compare
     | FIELD _IN "(" value ("," value)* ")" -> member
value: STRING | NUMBER | BOOLEAN
OP: "!=" | "<=" | ">=" | "=" | "<" | ">" | /LIKE/i | /GLOB/i
FIELD: /(doc|chunk)\.[A-Za-z_][A-Za-z0-9_]*/ | /agent\b/
STRING: /'([^']|'')*'/ | /"([^"]|"")*"/
NUMBER: /-?[0-9]+/
BOOLEAN: /TRUE\b/i | /FALSE\b/i
_OR: /OR\b/i
_AND: /AND\b/i
_NOT: /NOT\b/i
_IN: /IN\b/i
"""
"""The expression rules without a start rule or whitespace handling, so that a larger language
(RQL's FILTER clause, chinvex.retrieval.rql) embeds exactly this grammar instead of a copy."""

GRAMMAR = "?start: or_expr\n" + EXPRESSION_GRAMMAR + "%import common.WS\n%ignore WS\n"

Kind = Literal["text", "int", "date", "tags", "bool"]


@dataclass(frozen=True)
class Field:
    kind: Kind
    about: str


FIELDS: dict[str, Field] = {
    "doc.id": Field("text", "document id"),
    "doc.path": Field("text", "path relative to its source root (else the source)"),
    "doc.source": Field("text", "the source: file path, or path#thread"),
    "doc.source_type": Field("text", "repo, note, chat, codex_session, agent_session, memory"),
    "doc.title": Field("text", "title"),
    "doc.hash": Field("text", "content hash"),
    "doc.mtime": Field("date", "last update (ISO-8601)"),
    "doc.updated_at": Field("date", "last update (ISO-8601)"),
    "doc.created_at": Field("date", "creation (ISO-8601)"),
    "doc.thread_id": Field("text", "an agent session's, Codex thread's or chat export conversation's own id"),
    "doc.agent": Field("text", "the agent or export a conversation comes from: claude_code, codex, gemini, "
                               "copilot_cli, cline, opencode, cursor, aider, specstory, chatgpt, claude_ai, ... "
                               "(also written `agent`)"),
    "doc.tag": Field("tags", "a front-matter tag"),
    "doc.context": Field("text", "the context's name"),
    "doc.role": Field("text", "a repository file's role: " + ", ".join(ROLES)),
    "doc.stale": Field("bool", "true when its source file changed or vanished since indexing"),
    "chunk.id": Field("text", "chunk id"),
    "chunk.doc_id": Field("text", "its document's id"),
    "chunk.offset": Field("int", "character offset in its document"),
    "chunk.line_start": Field("int", "first line"),
    "chunk.line_end": Field("int", "last line"),
    "chunk.text": Field("text", "the chunk's text"),
}
"""The fields a filter may test, with their types and meanings; their SQL is
chinvex.storage.filter_sql.COLUMNS."""

_ISO_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?)?)?)?$")


class FilterError(ValueError):
    """A filter that cannot run. `reason` is the message without its position, so that a larger
    statement embedding the expression (RQL) can name the position in its own terms."""

    def __init__(self, message: str, column: int | None = None, line: int | None = None):
        where = f"at column {column}: " if column else ""
        super().__init__(f"--filter {where}{message}")
        self.reason = message
        self.column = column
        self.line = line


def literal(token: Token) -> Value:
    text = str(token)
    if token.type == "NUMBER":
        return int(text)
    if token.type == "BOOLEAN":
        return text.lower() == "true"
    quote = text[0]
    return text[1:-1].replace(quote * 2, quote)


BARE_FIELDS = {"agent": "doc.agent"}
"""Fields that may be written without their `doc.` prefix (`agent = 'gemini'`)."""


def _qualified(field: Token) -> str:
    return BARE_FIELDS.get(str(field), str(field))


class ExpressionBuilder(Transformer):
    """Lark tree -> the syntax tree above. Public so that RQL's transformer inherits these rules
    for its FILTER clause."""

    def value(self, items: list[Token]) -> Token:
        return items[0]

    def compare(self, items: list[Any]) -> Compare:
        field, op, value = items
        return Compare(_qualified(field), str(op).upper(), literal(value), field.column, field.line)

    def member(self, items: list[Any]) -> Member:
        field, *values = items
        return Member(_qualified(field), tuple(literal(v) for v in values), field.column, field.line)

    def negation(self, items: list[Any]) -> Not:
        return Not(items[0])

    def and_expr(self, items: list[Any]) -> Junction:
        return Junction("AND", tuple(items))

    def or_expr(self, items: list[Any]) -> Junction:
        return Junction("OR", tuple(items))


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", propagate_positions=True)


@functools.lru_cache(maxsize=256)
def parse(text: str) -> Any:
    """The syntax tree of a filter, checked against the field catalogue and value types."""
    if not text.strip():
        raise FilterError("empty expression")
    try:
        tree = ExpressionBuilder().transform(_parser().parse(text))
    except UnexpectedInput as exc:
        token = getattr(exc, "token", None)
        if token is not None and token.type == "$END":
            raise FilterError("unexpected end of expression", len(text.rstrip()) + 1) from None
        got = text[exc.pos_in_stream:exc.pos_in_stream + 12] if exc.pos_in_stream is not None else ""
        raise FilterError(f"unexpected {got!r}" if got else "unexpected end of expression",
                          getattr(exc, "column", None)) from None
    check(tree)
    return tree


def check(node: Any) -> None:
    """Raise FilterError (with the predicate's line and column) for an unknown field or a value
    of the wrong type: a mistake that would otherwise quietly match nothing."""
    if isinstance(node, Junction):
        for term in node.terms:
            check(term)
    elif isinstance(node, Not):
        check(node.term)
    else:
        _check_predicate(node)


def _check_predicate(node: Compare | Member) -> None:
    def fail(message: str) -> FilterError:
        return FilterError(message, node.column, node.line)

    field = FIELDS.get(node.field)
    if field is None:
        raise fail(f"unknown field {node.field}; fields: {', '.join(FIELDS)}")
    values = [node.value] if isinstance(node, Compare) else list(node.values)
    op = node.op if isinstance(node, Compare) else "IN"
    for value in values:
        if field.kind == "bool":
            if op not in ("=", "!=", "IN"):
                raise fail(f"{node.field} is true or false; compare it with = or !=, not {op}")
            if not isinstance(value, bool):
                raise fail(f"{node.field} is true or false; {value!r} is neither")
            continue
        if isinstance(value, bool):
            raise fail(f"{node.field} is {_KIND_NAMES[field.kind]}, not true or false")
        if field.kind == "int" and (not isinstance(value, int) or op in ("LIKE", "GLOB")):
            raise fail(f"{node.field} is a number; {op} {value!r} compares it with text")
        if field.kind != "int" and isinstance(value, int):
            raise fail(f"{node.field} is text; quote {value}")
        if field.kind == "date" and op not in ("LIKE", "GLOB") and not _ISO_DATE.match(str(value)):
            raise fail(f"{node.field} is a date; {value!r} is not ISO-8601 (e.g. '2026-03-01')")
        if node.field == "doc.role" and op in ("=", "!=", "IN") and value not in ROLES:
            raise fail(f"doc.role is one of {', '.join(ROLES)}; {value!r} is none of them")


_KIND_NAMES = {"text": "text", "int": "a number", "date": "a date", "tags": "text"}


def unparse(node: Any) -> str:
    """The expression as FEL text that parses back to the same tree (positions aside): how a
    filter parsed inside a larger statement is handed to code that takes FEL text (search)."""
    if isinstance(node, Junction):
        return "(" + f" {node.op} ".join(unparse(t) for t in node.terms) + ")"
    if isinstance(node, Not):
        return f"NOT {unparse(node.term)}"
    if isinstance(node, Member):
        return f"{node.field} IN ({', '.join(_quoted(v) for v in node.values)})"
    return f"{node.field} {node.op} {_quoted(node.value)}"


def _quoted(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"


# -- the SQL functions filters call -----------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _like_regex(pattern: str) -> re.Pattern[str]:
    parts = ["." + "*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern]
    return re.compile("".join(parts), re.DOTALL)


@functools.lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            if pattern.startswith("/", i):  # `**/` also matches no folder at all
                out[-1] = "(?:.*/)?"
                i += 1
            continue
        ch = pattern[i]
        out.append("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def like(value: Any, pattern: Any) -> int | None:
    if value is None or pattern is None:
        return None
    return int(_like_regex(str(pattern)).fullmatch(str(value)) is not None)


def glob(value: Any, pattern: Any) -> int | None:
    if value is None or pattern is None:
        return None
    return int(_glob_regex(str(pattern)).fullmatch(str(value)) is not None)


def role(source_type: Any, rel_path: Any) -> str | None:
    """`doc.role`: what search's role priors read (chinvex.retrieval.results.candidate_of), so a
    filter on it selects what the weights weigh: repository files with a relative path only."""
    if source_type != "repo" or not rel_path:
        return None
    return role_of(str(rel_path))


def stale(origin_uri: Any, size_bytes: Any, mtime_unix: Any, state_json: Any) -> int:
    """`doc.stale`: the freshness check of search results, on the document's source and its
    recorded fingerprint (0 for sources that are not files: memories, app-server threads)."""
    from chinvex.retrieval.freshness import freshness

    row = {"origin_uri": origin_uri, "indexed_at": None, "size_bytes": size_bytes,
           "mtime_unix": mtime_unix, "state_json": state_json}
    return int(freshness(row).stale)


def register(conn: sqlite3.Connection) -> None:
    """The SQL functions filters call (the case-sensitive LIKE and the path GLOB of the module
    docstring, the role and the staleness of a document), for this connection. `stale` reads
    the file system, so SQLite must not treat it as deterministic."""
    conn.create_function(LIKE_FUNCTION, 2, like, deterministic=True)
    conn.create_function(GLOB_FUNCTION, 2, glob, deterministic=True)
    conn.create_function(ROLE_FUNCTION, 2, role, deterministic=True)
    conn.create_function(STALE_FUNCTION, 4, stale)
