"""The Filter Expression Language (`--filter`, the Recall design's FEL): exact predicates over
documents and chunks, compiled to parameterised SQL.

    doc.source_type = 'codex_session' AND doc.updated_at >= '2026-03-01'
        AND doc.updated_at < '2026-04-01' AND chunk.text LIKE '%auth.py%'
    doc.tag IN ('runbook', 'ops') AND NOT doc.path GLOB 'archive/**'

Grammar: `expr := term ((AND|OR) term)*` with AND binding tighter than OR, `term := [NOT] term |
'(' expr ')' | field op value | field IN '(' value, ... ')'`, `op := = != < <= > >= LIKE GLOB`.
Keywords are case-insensitive; strings are quoted with ' or " (the quote doubled inside);
numbers are integers. Fields are qualified (`doc.*`, `chunk.*`); the catalogue is `FIELDS`.

Semantics: a predicate on a missing value is false (and NOT of it true: predicates are
two-valued, unlike SQL's NULL); strings compare case-sensitively, LIKE too (`%` any run, `_` one
character); GLOB matches `*` within a path segment, `**` across segments and `?` one character;
dates are ISO-8601 strings and compare as strings (`doc.updated_at >= '2026-03-01'`); `doc.tag`
is true when any of the document's front-matter tags satisfies the predicate.

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

GRAMMAR = r"""
?start: or_expr
?or_expr: and_expr (_OR and_expr)*
?and_expr: not_expr (_AND not_expr)*
?not_expr: _NOT not_expr -> negation
         | atom
?atom: "(" or_expr ")"
     | FIELD OP value -> compare
     | FIELD _IN "(" value ("," value)* ")" -> member
value: STRING | NUMBER
OP: "!=" | "<=" | ">=" | "=" | "<" | ">" | /LIKE/i | /GLOB/i
FIELD: /(doc|chunk)\.[A-Za-z_][A-Za-z0-9_]*/
STRING: /'([^']|'')*'/ | /"([^"]|"")*"/
NUMBER: /-?[0-9]+/
_OR: /OR\b/i
_AND: /AND\b/i
_NOT: /NOT\b/i
_IN: /IN\b/i
%import common.WS
%ignore WS
"""

Kind = Literal["text", "int", "date", "tags"]


@dataclass(frozen=True)
class Field:
    sql: str
    kind: Kind
    about: str


FIELDS: dict[str, Field] = {
    "doc.id": Field("d.doc_id", "text", "document id"),
    "doc.path": Field("COALESCE(json_extract(d.metadata_json, '$.path'), d.source_uri)", "text",
                      "path relative to its source root (else the source)"),
    "doc.source": Field("d.source_uri", "text", "the source: file path, or path#thread"),
    "doc.source_type": Field("d.source_type", "text", "repo, note, chat, codex_session, agent_session, memory"),
    "doc.title": Field("d.title", "text", "title"),
    "doc.hash": Field("d.content_hash", "text", "content hash"),
    "doc.mtime": Field("COALESCE(NULLIF(d.updated_at, ''), d.created_at)", "date", "last update (ISO-8601)"),
    "doc.updated_at": Field("d.updated_at", "date", "last update (ISO-8601)"),
    "doc.created_at": Field("d.created_at", "date", "creation (ISO-8601)"),
    "doc.thread_id": Field("json_extract(d.metadata_json, '$.thread_id')", "text",
                           "Codex thread / Claude Code session / ChatGPT conversation id"),
    "doc.tag": Field("json_extract(d.metadata_json, '$.front_matter.tags')", "tags", "a front-matter tag"),
    "doc.context": Field("?", "text", "the context's name"),
    "chunk.id": Field("c.chunk_id", "text", "chunk id"),
    "chunk.doc_id": Field("c.doc_id", "text", "its document's id"),
    "chunk.offset": Field("c.char_start", "int", "character offset in its document"),
    "chunk.line_start": Field("c.line_start", "int", "first line"),
    "chunk.line_end": Field("c.line_end", "int", "last line"),
    "chunk.text": Field("c.text", "text", "the chunk's text"),
}

LIKE_FUNCTION = "chinvex_fel_like"
GLOB_FUNCTION = "chinvex_fel_glob"
_ISO_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?)?)?)?$")


class FilterError(ValueError):
    def __init__(self, message: str, column: int | None = None):
        where = f"at column {column}: " if column else ""
        super().__init__(f"--filter {where}{message}")
        self.column = column


# -- syntax tree --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Compare:
    field: str
    op: str
    value: str | int
    column: int


@dataclass(frozen=True)
class Member:
    field: str
    values: tuple[str | int, ...]
    column: int


@dataclass(frozen=True)
class Not:
    term: Any


@dataclass(frozen=True)
class Junction:
    op: Literal["AND", "OR"]
    terms: tuple[Any, ...]


def _literal(token: Token) -> str | int:
    text = str(token)
    if token.type == "NUMBER":
        return int(text)
    quote = text[0]
    return text[1:-1].replace(quote * 2, quote)


class _Tree(Transformer):
    def value(self, items: list[Token]) -> Token:
        return items[0]

    def compare(self, items: list[Any]) -> Compare:
        field, op, value = items
        return Compare(str(field), str(op).upper(), _literal(value), field.column)

    def member(self, items: list[Any]) -> Member:
        field, *values = items
        return Member(str(field), tuple(_literal(v) for v in values), field.column)

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
        tree = _Tree().transform(_parser().parse(text))
    except UnexpectedInput as exc:
        token = getattr(exc, "token", None)
        if token is not None and token.type == "$END":
            raise FilterError("unexpected end of expression", len(text.rstrip()) + 1) from None
        got = text[exc.pos_in_stream:exc.pos_in_stream + 12] if exc.pos_in_stream is not None else ""
        raise FilterError(f"unexpected {got!r}" if got else "unexpected end of expression",
                          getattr(exc, "column", None)) from None
    _check(tree)
    return tree


def _check(node: Any) -> None:
    if isinstance(node, Junction):
        for term in node.terms:
            _check(term)
    elif isinstance(node, Not):
        _check(node.term)
    else:
        field = FIELDS.get(node.field)
        if field is None:
            raise FilterError(f"unknown field {node.field}; fields: {', '.join(FIELDS)}", node.column)
        values = [node.value] if isinstance(node, Compare) else list(node.values)
        op = node.op if isinstance(node, Compare) else "IN"
        for value in values:
            if field.kind == "int" and (not isinstance(value, int) or op in ("LIKE", "GLOB")):
                raise FilterError(f"{node.field} is a number; {op} {value!r} compares it with text", node.column)
            if field.kind != "int" and isinstance(value, int):
                raise FilterError(f"{node.field} is text; quote {value}", node.column)
            if field.kind == "date" and op not in ("LIKE", "GLOB") and not _ISO_DATE.match(str(value)):
                raise FilterError(f"{node.field} is a date; {value!r} is not ISO-8601 (e.g. '2026-03-01')",
                                  node.column)


# -- SQL -------------------------------------------------------------------------------------------

def to_sql(tree: Any, context: str) -> tuple[str, list[Any]]:
    """A WHERE expression over `documents d` and `chunks c`, and its parameters; every predicate
    is wrapped so that it is 0 or 1, never NULL (two-valued NOT)."""
    params: list[Any] = []

    def emit(node: Any) -> str:
        if isinstance(node, Junction):
            return "(" + f" {node.op} ".join(emit(t) for t in node.terms) + ")"
        if isinstance(node, Not):
            return f"(NOT {emit(node.term)})"
        field = FIELDS[node.field]
        if field.kind == "tags":  # any tag satisfies it (a lone tag is a list of one)
            inner = _predicate("j.value", node, params)
            return ("COALESCE((SELECT 1 FROM json_each(CASE json_type(d.metadata_json, '$.front_matter.tags') "
                    "WHEN 'array' THEN json_extract(d.metadata_json, '$.front_matter.tags') "
                    "ELSE json_array(json_extract(d.metadata_json, '$.front_matter.tags')) END) j "
                    f"WHERE COALESCE({inner}, 0) LIMIT 1), 0)")
        if field.sql == "?":
            params.append(context)
        return f"COALESCE({_predicate(field.sql, node, params)}, 0)"

    return emit(tree), params


def _predicate(column: str, node: Any, params: list[Any]) -> str:
    if isinstance(node, Member):
        params.extend(node.values)
        return f"({column} IN ({','.join('?' * len(node.values))}))"
    params.append(node.value)
    if node.op == "LIKE":
        return f"{LIKE_FUNCTION}({column}, ?)"
    if node.op == "GLOB":
        return f"{GLOB_FUNCTION}({column}, ?)"
    return f"({column} {node.op} ?)"


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


def register(conn: sqlite3.Connection) -> None:
    """The case-sensitive LIKE and the path GLOB of the module docstring, for this connection."""
    conn.create_function(LIKE_FUNCTION, 2, like, deterministic=True)
    conn.create_function(GLOB_FUNCTION, 2, glob, deterministic=True)
