"""Arguments several chinvex tools share: source types (unknown ones warn, as a third-party
adapter may produce them) and FEL filter expressions (a usage error names the position)."""

from __future__ import annotations


from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure


def checked_source_types(values: list[str] | None) -> tuple[list[str] | None, list[str]]:
    from chinvex.models.documents import SOURCE_TYPES

    types = limits.require_list("source_types", values, max_items=16, max_chars=limits.TYPE_MAX_CHARS)
    unknown = [t for t in types if t not in SOURCE_TYPES]
    warnings = [f"source type {t!r} is not one chinvex knows ({', '.join(SOURCE_TYPES)}); "
                "only a third-party adapter would produce it" for t in unknown]
    return (types or None), warnings


def checked_filter(expression: str | None) -> str | None:
    """A filter expression checked before searching (INVALID_ARGUMENT naming the column)."""
    if expression is None or not expression.strip():
        return None
    from chinvex.retrieval import fel

    limits.require_text("filter", expression, max_bytes=limits.QUERY_MAX_BYTES)
    try:
        fel.parse(expression)
    except fel.FilterError as exc:
        raise ToolFailure(limits.INVALID_ARGUMENT, str(exc).replace("--filter", "filter", 1)) from None
    return expression
