"""Arguments several chinvex tools share: source types (unknown ones warn, as a third-party
adapter may produce them), FEL filter expressions (a usage error names the position) and file
paths (recall_context, chinvex_blame: a relative one is looked for where the agent works)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from chinvex.mcp import limits
from chinvex.mcp.limits import ToolFailure

if TYPE_CHECKING:
    from chinvex.models import ContextConfig


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


def source_folders(config: ContextConfig | None) -> list[Path]:
    """The context's source folders (none without a context)."""
    if config is None:
        return []
    from chinvex.ingest.watch import source_roots

    return [root for root, _ in source_roots(config)]


def file_candidates(raw: str, cwd: str, roots: list[Path]) -> list[Path]:
    """Where a file argument may be, in order: as given when absolute; else under the server's
    working directory, then under each of `roots`."""
    given = Path(raw).expanduser()
    if given.is_absolute():
        return [given.resolve()]
    return list(dict.fromkeys([(Path(cwd) / given).resolve(), *((root / given).resolve() for root in roots)]))
