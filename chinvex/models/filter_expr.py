"""The parsed form of a filter expression (`--filter`, RQL's FILTER clause): what the parser in
chinvex.retrieval.fel builds and what the SQL compiler in chinvex.storage.filter_sql reads. It
lives here, below both, so that storage can compile a tree without importing the parser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Value = str | int | bool


@dataclass(frozen=True)
class Compare:
    field: str
    op: str
    value: Value
    column: int
    line: int = 1


@dataclass(frozen=True)
class Member:
    field: str
    values: tuple[Value, ...]
    column: int
    line: int = 1


@dataclass(frozen=True)
class Not:
    term: Any


@dataclass(frozen=True)
class Junction:
    op: Literal["AND", "OR"]
    terms: tuple[Any, ...]


def fields_of(node: Any) -> set[str]:
    """Every field the expression reads."""
    if isinstance(node, Junction):
        return set().union(*(fields_of(t) for t in node.terms))
    if isinstance(node, Not):
        return fields_of(node.term)
    return {node.field}
