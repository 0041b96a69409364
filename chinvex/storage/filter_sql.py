"""The SQL of the filters a user writes: a filter expression's tree (`--filter`, RQL's FILTER)
and the search filter's source types, path glob and dates, compiled to WHERE conditions over
`documents d` (and `chunks c`). Values are always parameters, never SQL text.

Some predicates cannot be SQL (a case-sensitive LIKE, the path GLOB, a repository file's role, a
source's freshness): they are SQLite functions named here, whose Python bodies the retrieval
layer registers on each connection (chinvex.retrieval.fel.register and
chinvex.retrieval.filters.register_sql_functions)."""

from __future__ import annotations

from typing import Any

from chinvex.models.documents import AGENT_OF_SOURCE
from chinvex.models.filter_expr import Junction, Member, Not
from chinvex.storage.search_reads import REL_PATH_SQL

LIKE_FUNCTION = "chinvex_fel_like"
GLOB_FUNCTION = "chinvex_fel_glob"
ROLE_FUNCTION = "chinvex_fel_role"
STALE_FUNCTION = "chinvex_fel_stale"
PATH_MATCH_FUNCTION = "chinvex_path_match"

CONTEXT = "?"
"""The column of `doc.context`: the context's name, passed as a parameter."""

STAMP_SQL = "COALESCE(NULLIF({d}.updated_at, ''), {d}.created_at)"
"""The document's date for filters: `updated_at or created_at` in Python terms ('' counts as
missing in both)."""

TAGS = "json_extract(d.metadata_json, '$.front_matter.tags')"

COLUMNS: dict[str, str] = {
    "doc.id": "d.doc_id",
    "doc.path": "COALESCE(" + REL_PATH_SQL.format(d="d") + ", d.source_uri)",
    "doc.source": "d.source_uri",
    "doc.source_type": "d.source_type",
    "doc.title": "d.title",
    "doc.hash": "d.content_hash",
    "doc.mtime": STAMP_SQL.format(d="d"),
    "doc.updated_at": "d.updated_at",
    "doc.created_at": "d.created_at",
    "doc.thread_id": "json_extract(d.metadata_json, '$.thread_id')",
    "doc.agent": ("CASE json_extract(d.metadata_json, '$.source') "
                  + " ".join(f"WHEN '{src}' THEN '{agent}'" for src, agent in AGENT_OF_SOURCE.items())
                  + " ELSE json_extract(d.metadata_json, '$.source') END"),
    "doc.tag": TAGS,
    "doc.context": CONTEXT,
    "doc.role": f"{ROLE_FUNCTION}(d.source_type, " + REL_PATH_SQL.format(d="d") + ")",
    "doc.stale": (f"(SELECT {STALE_FUNCTION}(d.origin_uri, f.size_bytes, f.mtime_unix, f.state_json) "
                  "FROM (SELECT 1) LEFT JOIN source_fingerprints f ON f.source_uri = d.origin_uri LIMIT 1)"),
    "chunk.id": "c.chunk_id",
    "chunk.doc_id": "c.doc_id",
    "chunk.offset": "c.char_start",
    "chunk.line_start": "c.line_start",
    "chunk.line_end": "c.line_end",
    "chunk.text": "c.text",
}
"""The SQL expression of every filter field (the field catalogue with its types and meanings is
chinvex.retrieval.fel.FIELDS; a test keeps the two in step)."""

TAG_FIELDS = frozenset({"doc.tag"})
"""Fields holding a list: a predicate on them holds when any element satisfies it."""


def column(field: str, params: list[Any], context: str) -> str:
    """The SQL expression of `field` as a value (a SELECT column or an ORDER BY key); a tag
    field is always a JSON array (a lone tag is a list of one, none an empty list)."""
    if field in TAG_FIELDS:
        return "(SELECT json_group_array(j.value) FROM json_each(d.metadata_json, '$.front_matter.tags') j)"
    if COLUMNS[field] == CONTEXT:
        params.append(context)
    return COLUMNS[field]


def expression_where(tree: Any, context: str) -> tuple[str, list[Any]]:
    """A WHERE expression for a filter tree, and its parameters; every predicate is wrapped so
    that it is 0 or 1, never NULL (two-valued NOT)."""
    params: list[Any] = []

    def emit(node: Any) -> str:
        if isinstance(node, Junction):
            return "(" + f" {node.op} ".join(emit(t) for t in node.terms) + ")"
        if isinstance(node, Not):
            return f"(NOT {emit(node.term)})"
        if node.field in TAG_FIELDS:
            inner = _predicate("j.value", node, params)
            return (f"COALESCE((SELECT 1 FROM json_each(CASE json_type(d.metadata_json, '$.front_matter.tags') "
                    f"WHEN 'array' THEN {TAGS} ELSE json_array({TAGS}) END) j "
                    f"WHERE COALESCE({inner}, 0) LIMIT 1), 0)")
        sql = COLUMNS[node.field]
        if sql == CONTEXT:
            params.append(context)
        return f"COALESCE({_predicate(sql, node, params)}, 0)"

    return emit(tree), params


def _predicate(sql: str, node: Any, params: list[Any]) -> str:
    if isinstance(node, Member):
        params.extend(int(v) if isinstance(v, bool) else v for v in node.values)
        return f"({sql} IN ({','.join('?' * len(node.values))}))"
    params.append(int(node.value) if isinstance(node.value, bool) else node.value)
    if node.op == "LIKE":
        return f"{LIKE_FUNCTION}({sql}, ?)"
    if node.op == "GLOB":
        return f"{GLOB_FUNCTION}({sql}, ?)"
    return f"({sql} {node.op} ?)"


def search_conditions(*, source_types: Any = None, path_glob: str | None = None, since: str | None = None,
                      until: str | None = None, doc: str = "d") -> tuple[list[str], list[Any]]:
    """WHERE conditions (AND-ed) on a `documents` alias for a search filter, with their
    parameters. The path test calls PATH_MATCH_FUNCTION."""
    conds: list[str] = []
    params: list[Any] = []
    if source_types:
        conds.append(f"{doc}.source_type IN ({','.join('?' * len(source_types))})")
        params.extend(source_types)
    if path_glob:
        conds.append(f"{PATH_MATCH_FUNCTION}(?, {doc}.source_uri, {REL_PATH_SQL.format(d=doc)})")
        params.append(path_glob)
    stamp = STAMP_SQL.format(d=doc)
    if since:
        conds.append(f"{stamp} >= ?")
        params.append(since)
    if until:
        conds.append(f"{stamp} <= ?")
        params.append(until)
    return conds, params
