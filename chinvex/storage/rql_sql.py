"""The SQL of an RQL statement (`chinvex query --rql`): one parameterised SELECT per plan, over
`documents d` and `chunks c`, and with USING over the search's hits. The plan itself (parsing,
checks, the default order) is chinvex.retrieval.rql's; this module reads only what the
`SelectPlan` protocol names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from chinvex.models.filter_expr import fields_of
from chinvex.storage import filter_sql

SCORE = "score"
"""The search's rank score: a column only a statement with USING has."""

HITS = object()
"""Stands in the parameters for the search's hits (a JSON list of [chunk_id, score]), which the
executor knows only after searching."""


class OrderKeyLike(Protocol):
    column: str
    descending: bool


class SelectPlan(Protocol):
    table: str
    columns: tuple[str, ...]
    filter: Any
    order: tuple[OrderKeyLike, ...]
    limit: int
    offset: int

    @property
    def searches(self) -> bool: ...


@dataclass(frozen=True)
class Query:
    sql: str
    params: tuple[Any, ...]
    """Positional parameters; `HITS` marks where the search's hits go."""
    columns: tuple[str, ...]
    """The result columns in SQL order: the plan's columns (values to show)."""


def _value(column: str, params: list[Any], context: str, table: str) -> str:
    if column == SCORE:
        return "MAX(h.score)" if table == "doc" else "h.score"
    return filter_sql.column(column, params, context)


def select(plan: SelectPlan, context: str) -> Query:
    """One SELECT for the plan; every value of the statement is a parameter.

    FROM chunk reads `chunks c JOIN documents d`; FROM doc reads `documents d`, kept when one of
    its chunks (or, for a document without chunks, the document alone) satisfies the FILTER.
    With USING, the rows are the search's hits (`json_each` of HITS) joined the same way."""
    params: list[Any] = []
    parts: list[str] = []
    if plan.searches:
        parts.append("WITH h(chunk_id, score) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') "
                     "FROM json_each(?))")
        params.append(HITS)
    parts.append("SELECT " + ", ".join(f"{_value(c, params, context, plan.table)} AS \"{c}\"" for c in plan.columns))
    where, where_params = (filter_sql.expression_where(plan.filter, context) if plan.filter is not None
                           else ("1", []))
    reads_chunks = plan.filter is not None and any(f.startswith("chunk.") for f in fields_of(plan.filter))
    if plan.searches:
        parts.append("FROM h JOIN chunks c ON c.chunk_id = h.chunk_id JOIN documents d ON d.doc_id = c.doc_id")
        parts.append(f"WHERE {where}")
        if plan.table == "doc":
            parts.append("GROUP BY d.doc_id")
    elif plan.table == "chunk":
        parts.append("FROM chunks c JOIN documents d ON d.doc_id = c.doc_id")
        parts.append(f"WHERE {where}")
    elif reads_chunks:
        parts.append("FROM documents d WHERE d.doc_id IN (SELECT d.doc_id FROM documents d "
                     f"LEFT JOIN chunks c ON c.doc_id = d.doc_id WHERE {where})")
    else:
        parts.append(f"FROM documents d WHERE {where}")
    params.extend(where_params)
    keys = [f"{_value(key.column, params, context, plan.table)} {'DESC' if key.descending else 'ASC'} NULLS LAST"
            for key in plan.order]
    parts.append("ORDER BY " + ", ".join(keys))
    parts.append("LIMIT ? OFFSET ?")
    params.extend([plan.limit, plan.offset])
    return Query(sql="\n".join(parts), params=tuple(params), columns=plan.columns)
