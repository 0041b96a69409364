"""The Recall Query Language (`chinvex query --rql`, the Recall design's RQL subset): exact,
repeatable questions over one context's documents and chunks, parsed and planned here, compiled
by chinvex.storage.rql_sql and run by chinvex.retrieval.rql_run. The statement's form and its
meaning for users are in README, "Exact queries (RQL)".

    SELECT doc.path, chunk.line_start, score FROM chunk
    USING semantic('retry with back-off'), lexical('backoff')
    FILTER doc.role = 'code' LIMIT 5

The FILTER clause is the Filter Expression Language itself: this grammar embeds
`fel.EXPRESSION_GRAMMAR` and builds its tree with FEL's own transformer and checks, so
`--filter` and FILTER cannot drift apart. With USING the rows are the `SEARCH_DEPTH` best chunks
the filter allows, ranked by the search, and ORDER BY / OFFSET / LIMIT act on those, so the
pages of one statement never overlap or skip a row. Every plan ends its order with a unique
tie-break (`TIE_BREAK`), so a statement on an unchanged index always returns the same rows.

Strictness: unknown columns, filter type errors, `score` without USING, a chunk column in a FROM
doc statement or a bad LIMIT are an `RqlError` (exit 2) naming the line and column. (The
design's v0.1 ignores unknown SELECT fields; a mistyped column would vanish without a word.)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal

from lark import Lark, Token, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from chinvex.errors import UsageError
from chinvex.retrieval import fel
from chinvex.storage import rql_sql
from chinvex.storage.rql_sql import SCORE

GRAMMAR = r"""
start: _SELECT columns _FROM TABLE using? filter? order? limit? _SEMI?
columns: column ("," column)*
column: FIELD | NAME | STAR
using: _USING search ("," search)*
search: LEG "(" STRING ")"
filter: _FILTER or_expr
order: _ORDER _BY order_key ("," order_key)*
order_key: (FIELD | NAME) DIRECTION?
limit: _LIMIT NUMBER (_OFFSET NUMBER)?
TABLE: /doc\b/ | /chunk\b/
LEG: /semantic\b/i | /lexical\b/i
DIRECTION: /ASC\b/i | /DESC\b/i
NAME: /[A-Za-z_][A-Za-z0-9_]*/
STAR: "*"
_SEMI: ";"
_SELECT: /SELECT\b/i
_FROM: /FROM\b/i
_USING: /USING\b/i
_FILTER: /FILTER\b/i
_ORDER: /ORDER\b/i
_BY: /BY\b/i
_LIMIT: /LIMIT\b/i
_OFFSET: /OFFSET\b/i
COMMENT: /--[^\n]*/
%ignore COMMENT
%import common.WS
%ignore WS
""" + fel.EXPRESSION_GRAMMAR

Table = Literal["doc", "chunk"]
Mode = Literal["sql", "vector", "fts", "hybrid"]

DEFAULT_LIMIT = 100
"""Rows returned when LIMIT is omitted (the design's `max_limit`)."""
MAX_LIMIT = 10_000
"""The largest LIMIT: more rows than anyone reads in a terminal; page with OFFSET beyond it."""
SEARCH_DEPTH = 200
"""Chunks a USING search ranks (chinvex.retrieval.request.MAX_K). A fixed depth, whatever the
LIMIT and OFFSET, so that a page's rows do not depend on the page size."""

STAR_COLUMNS: dict[Table, tuple[str, ...]] = {
    "doc": ("doc.id", "doc.path", "doc.source_type", "doc.title", "doc.mtime"),
    "chunk": ("chunk.id", "doc.path", "chunk.line_start", "chunk.line_end", "chunk.text"),
}
TIE_BREAK: dict[Table, tuple[str, ...]] = {
    "doc": ("doc.path", "doc.id"),
    "chunk": ("doc.path", "chunk.offset", "chunk.id"),
}
"""The default order (after `score DESC` when searching); its last key is unique per row."""

_TOKEN_NAMES = {
    "_SELECT": "SELECT", "_FROM": "FROM", "_USING": "USING", "_FILTER": "FILTER", "_ORDER": "ORDER BY",
    "_BY": "BY", "_LIMIT": "LIMIT", "_OFFSET": "OFFSET", "_SEMI": "';'", "COMMA": "','", "LPAR": "'('",
    "RPAR": "')'", "FIELD": "a field", "NAME": "a column", "STAR": "'*'", "TABLE": "doc or chunk",
    "LEG": "semantic(...) or lexical(...)", "STRING": "a quoted string", "NUMBER": "a number",
    "BOOLEAN": "true or false", "OP": "an operator", "_IN": "IN", "_AND": "AND", "_OR": "OR",
    "_NOT": "NOT", "DIRECTION": "ASC or DESC", "$END": "the end", "<END-OF-FILE>": "the end",
}


class RqlError(UsageError):
    """A statement that cannot run: one line naming where in the statement (exit 2)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 multiline: bool = False):
        if column is None:
            where = ""
        elif multiline and line is not None:
            where = f"at line {line}, column {column}: "
        else:
            where = f"at column {column}: "
        super().__init__(f"--rql {where}{message}")
        self.line = line
        self.column = column


@dataclass(frozen=True)
class OrderKey:
    column: str
    """A catalogue field or `score`."""
    descending: bool
    implicit: bool = False
    """Added by the default order (a tie-break), not written in the statement."""

    def __str__(self) -> str:
        return f"{self.column} {'DESC' if self.descending else 'ASC'}"


@dataclass(frozen=True)
class Plan:
    """A checked statement: everything the executor needs, nothing it must re-derive."""

    statement: str
    table: Table
    columns: tuple[str, ...]
    semantic: str | None = None
    lexical: str | None = None
    filter: Any = None
    """The FILTER's FEL tree (chinvex.retrieval.fel), or None."""
    order: tuple[OrderKey, ...] = ()
    """The whole order: the statement's keys, then the default order's remaining keys."""
    limit: int = DEFAULT_LIMIT
    offset: int = 0
    limit_given: bool = False

    @property
    def searches(self) -> bool:
        return self.semantic is not None or self.lexical is not None

    @property
    def mode(self) -> Mode:
        """Which retrieval runs: plain SQL, or the search's vector leg, FTS leg or both."""
        if self.semantic is not None and self.lexical is not None:
            return "hybrid"
        if self.semantic is not None:
            return "vector"
        if self.lexical is not None:
            return "fts"
        return "sql"

    @property
    def filter_text(self) -> str | None:
        """The FILTER as FEL text (what `--filter` would take)."""
        return fel.unparse(self.filter) if self.filter is not None else None


# -- parsing ----------------------------------------------------------------------------------------

@dataclass
class _Parsed:
    columns: list[Token] = field(default_factory=list)
    table: Token | None = None
    searches: list[tuple[Token, Token]] = field(default_factory=list)
    filter: Any = None
    order: list[tuple[Token, Token | None]] = field(default_factory=list)
    limit: Token | None = None
    offset: Token | None = None


class _Builder(fel.ExpressionBuilder):
    """Lark tree -> _Parsed; the FILTER's subtree becomes FEL's syntax tree (inherited rules)."""

    def start(self, items: list[Any]) -> _Parsed:
        parsed = _Parsed()
        for item in items:
            if isinstance(item, Token) and item.type == "TABLE":
                parsed.table = item
            elif isinstance(item, tuple):
                kind, value = item
                if kind == "columns":
                    parsed.columns = value
                elif kind == "using":
                    parsed.searches = value
                elif kind == "filter":
                    parsed.filter = value
                elif kind == "order":
                    parsed.order = value
                elif kind == "limit":
                    parsed.limit, parsed.offset = value
        return parsed

    def columns(self, items: list[Token]) -> tuple[str, list[Token]]:
        return "columns", items

    def column(self, items: list[Token]) -> Token:
        return items[0]

    def using(self, items: list[tuple[Token, Token]]) -> tuple[str, list[tuple[Token, Token]]]:
        return "using", items

    def search(self, items: list[Token]) -> tuple[Token, Token]:
        return items[0], items[1]

    def filter(self, items: list[Any]) -> tuple[str, Any]:
        return "filter", items[0]

    def order(self, items: list[tuple[Token, Token | None]]) -> tuple[str, list[tuple[Token, Token | None]]]:
        return "order", items

    def order_key(self, items: list[Token]) -> tuple[Token, Token | None]:
        return items[0], (items[1] if len(items) > 1 else None)

    def limit(self, items: list[Token]) -> tuple[str, tuple[Token, Token | None]]:
        return "limit", (items[0], items[1] if len(items) > 1 else None)


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", propagate_positions=True)


def parse(statement: str) -> Plan:
    """The plan of an RQL statement, or RqlError naming the position of the first mistake."""
    if not statement.strip():
        raise RqlError("empty statement")
    multiline = "\n" in statement.strip()

    def error(message: str, line: int | None, column: int | None) -> RqlError:
        return RqlError(message, line, column, multiline)

    try:
        parsed = _Builder().transform(_parser().parse(statement))
    except UnexpectedInput as exc:
        raise _syntax_error(statement, exc, multiline) from None
    try:
        if parsed.filter is not None:
            fel.check(parsed.filter)
    except fel.FilterError as exc:
        raise error(exc.reason, exc.line, exc.column) from None
    return _plan(statement, parsed, error)


def _syntax_error(statement: str, exc: UnexpectedInput, multiline: bool) -> RqlError:
    if isinstance(exc, UnexpectedToken) and exc.token.type == "$END":
        lines = statement.rstrip().split("\n")
        return RqlError(f"unexpected end of statement (expected {_expected(exc.expected)})",
                        len(lines), len(lines[-1]) + 1, multiline)
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        got = str(token)
        if token.type == "NAME" and "FIELD" in exc.expected:
            qualified = [f"{t}.{got}" for t in ("doc", "chunk") if f"{t}.{got}" in fel.FIELDS]
            hint = f" (FILTER fields are qualified: {' or '.join(qualified)})" if qualified else \
                " (FILTER fields are qualified: doc.* or chunk.*)"
            return RqlError(f"unexpected {got!r}{hint}", token.line, token.column, multiline)
        return RqlError(f"unexpected {got[:24]!r} (expected {_expected(exc.expected)})",
                        token.line, token.column, multiline)
    if isinstance(exc, UnexpectedCharacters):
        got = statement[exc.pos_in_stream:exc.pos_in_stream + 12]
        return RqlError(f"unexpected {got!r}", exc.line, exc.column, multiline)
    return RqlError(str(exc).splitlines()[0], getattr(exc, "line", None), getattr(exc, "column", None),
                    multiline)  # pragma: no cover - lark raises the three kinds above


def _expected(names: set[str]) -> str:
    words = sorted({_TOKEN_NAMES.get(n, n) for n in names})
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _plan(statement: str, parsed: _Parsed, error: Any) -> Plan:
    assert parsed.table is not None
    table: Table = str(parsed.table)  # type: ignore[assignment]
    semantic = lexical = None
    for leg, text in parsed.searches:
        name = str(leg).lower()
        value = fel.literal(text)
        assert isinstance(value, str)
        if (semantic if name == "semantic" else lexical) is not None:
            raise error(f"{name}(...) is given twice", leg.line, leg.column)
        if not value.strip():
            raise error(f"{name}('') is empty", text.line, text.column)
        if name == "semantic":
            semantic = value
        else:
            lexical = value
    searches = semantic is not None or lexical is not None

    def resolve(token: Token, where: str) -> str:
        name = str(token)
        if name == SCORE:
            if not searches:
                raise error("score needs USING semantic(...) or lexical(...): without it rows have no score",
                            token.line, token.column)
            return SCORE
        if "." in name:
            column = name
        else:
            column = next((c for c in (f"{table}.{name}", f"doc.{name}") if c in fel.FIELDS), name)
        if column not in fel.FIELDS:
            raise error(f"unknown column {name}; columns: {', '.join(fel.FIELDS)}, score", token.line, token.column)
        if table == "doc" and column.startswith("chunk."):
            raise error(f"{column} is a chunk field; FROM doc gives one row per document "
                        f"(use FROM chunk, or FILTER on {column})", token.line, token.column)
        if where == "ORDER BY" and fel.FIELDS[column].kind == "tags":
            raise error(f"{column} has several values per document; it cannot order rows",
                        token.line, token.column)
        return column

    columns: list[str] = []
    for token in parsed.columns:
        names = STAR_COLUMNS[table] + ((SCORE,) if searches else ()) if token.type == "STAR" else (resolve(token, "SELECT"),)
        columns.extend(c for c in names if c not in columns)

    order: list[OrderKey] = []
    for token, direction in parsed.order:
        column = resolve(token, "ORDER BY")
        if any(k.column == column for k in order):
            raise error(f"ORDER BY names {column} twice", token.line, token.column)
        order.append(OrderKey(column, direction is not None and str(direction).upper() == "DESC"))
    defaults = ((OrderKey(SCORE, True, True),) if searches else ()) + tuple(
        OrderKey(c, False, True) for c in TIE_BREAK[table])
    order.extend(k for k in defaults if not any(o.column == k.column for o in order))

    limit, offset = DEFAULT_LIMIT, 0
    if parsed.limit is not None:
        limit = int(parsed.limit)
        if not 0 <= limit <= MAX_LIMIT:
            raise error(f"LIMIT {limit}: expected 0 to {MAX_LIMIT}", parsed.limit.line, parsed.limit.column)
    if parsed.offset is not None:
        offset = int(parsed.offset)
        if offset < 0:
            raise error(f"OFFSET {offset}: expected 0 or more", parsed.offset.line, parsed.offset.column)
    return Plan(statement=statement, table=table, columns=tuple(columns), semantic=semantic, lexical=lexical,
                filter=parsed.filter, order=tuple(order), limit=limit, offset=offset,
                limit_given=parsed.limit is not None)


# -- explain ---------------------------------------------------------------------------------------

def explain(plan: Plan, context: str) -> dict[str, Any]:
    """The plan as data (`--explain`): what retrieval runs, the filter, the whole order and the
    compiled SQL with its parameters."""
    query = rql_sql.select(plan, context)
    legs = []
    if plan.semantic is not None:
        legs.append({"leg": "vector", "function": "semantic", "text": plan.semantic})
    if plan.lexical is not None:
        legs.append({"leg": "fts", "function": "lexical", "text": plan.lexical})
    return {
        "table": plan.table,
        "mode": plan.mode,
        "legs": legs,
        "search_depth": SEARCH_DEPTH if plan.searches else None,
        "filter": plan.filter_text,
        "columns": list(plan.columns),
        "order": [{"key": k.column, "direction": "DESC" if k.descending else "ASC", "tie_break": k.implicit}
                  for k in plan.order],
        "limit": plan.limit,
        "limit_default": not plan.limit_given,
        "offset": plan.offset,
        "sql": query.sql,
        "params": [f"<{SEARCH_DEPTH} best search hits as [chunk_id, score]>" if p is rql_sql.HITS else p
                   for p in query.params],
    }
