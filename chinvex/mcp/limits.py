"""Input limits and error codes of the MCP tools.

An agent's mistake (an empty query, a 5 MB paste, k=10_000, an unknown context) must come back
as a tool error it can read and correct, never as a crash of the server or an unbounded amount
of work. Every failure a tool reports is a `ToolFailure` with a stable code: the codes of
DESIGN.md §7 where they apply, plus a few for what only the MCP interface can get wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# -- error codes --------------------------------------------------------------------------------

CONTEXT_NOT_FOUND = "CONTEXT_NOT_FOUND"
EMPTY_QUERY = "EMPTY_QUERY"
RETRIEVAL_ERROR = "RETRIEVAL_ERROR"
GROUNDING_FAILED = "GROUNDING_FAILED"
INVALID_ARGUMENT = "INVALID_ARGUMENT"
NOT_FOUND = "NOT_FOUND"
UNKNOWN_TOOL = "UNKNOWN_TOOL"
LOCKED = "LOCKED"
STORAGE_ERROR = "STORAGE_ERROR"
EMBEDDER_ERROR = "EMBEDDER_ERROR"
EMBEDDER_MISMATCH = "EMBEDDER_MISMATCH"
NOT_AVAILABLE = "NOT_AVAILABLE"
INTERNAL_ERROR = "INTERNAL_ERROR"

# -- limits -------------------------------------------------------------------------------------

QUERY_MAX_BYTES = 10 * 1024
CONTENT_MAX_BYTES = 1024 * 1024
TITLE_MAX_CHARS = 500
TYPE_MAX_CHARS = 64
TAGS_MAX = 32
TAG_MAX_CHARS = 64
ID_MAX_CHARS = 128
METADATA_MAX_BYTES = 64 * 1024
NOTE_MAX_BYTES = 16 * 1024
"""Free-text side fields: a feedback reason, a rationale."""
K_MIN, K_MAX = 1, 50
"""chinvex_search / chinvex_answer: chunks per call."""
LIMIT_MIN, LIMIT_MAX = 1, 50
"""recall_search: results per call (RECALL's own maximum)."""
CHUNK_IDS_MAX = 100
CONTEXTS_MAX = 16

# -- the wire (one JSON-RPC message per line, read by `chinvex.mcp.transport`) ------------------

LINE_MAX_BYTES = 8 * 1024 * 1024
"""One message line. The largest legitimate one is a recall_add with 1 MB of content, which JSON
with every character escaped (`\\u00e9`) makes at most 6 MB; a longer line is refused unread."""
DEPTH_MAX = 64
"""Nesting of objects and arrays in one message; tool arguments need fewer than ten levels."""
INT_MAX_DIGITS = 19
"""Integers must fit in 64 bits (what SQLite, orjson and every client's JSON can hold); the
digits of a longer literal are never converted (Python refuses past 4,300 of them anyway)."""
PARSE_ERROR = -32700
"""JSON-RPC: the line is not JSON text (truncated, not UTF-8, a lone surrogate escape, NaN)."""
INVALID_REQUEST = -32600
"""JSON-RPC: JSON, but not a message this server accepts (not a JSON-RPC 2.0 envelope, too long,
too deep, an integer beyond 64 bits or a number beyond float range, a batch)."""


class ToolFailure(Exception):
    """A failure reported to the agent as an `isError` result carrying `code`."""

    def __init__(self, code: str, message: str, **details: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def payload(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"ok": False, "error": error}


def _size(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _human(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} bytes"


def require_query(query: str, name: str = "query") -> str:
    """The query as given (not stripped: whitespace may matter to nobody, but it is theirs)."""
    if not isinstance(query, str):
        raise ToolFailure(INVALID_ARGUMENT, f"{name} must be a string.")
    if not query.strip():
        raise ToolFailure(EMPTY_QUERY, f"{name} is empty or whitespace.")
    size = _size(query)
    if size > QUERY_MAX_BYTES:
        raise ToolFailure(
            INVALID_ARGUMENT,
            f"{name} is {_human(size)}; the limit is {_human(QUERY_MAX_BYTES)}. "
            "Ask a shorter question (the key terms are enough).",
            limit_bytes=QUERY_MAX_BYTES, size_bytes=size,
        )
    return query


def require_text(name: str, value: str | None, *, max_bytes: int, required: bool = True) -> str | None:
    if value is None:
        if required:
            raise ToolFailure(INVALID_ARGUMENT, f"{name} is required.")
        return None
    if required and not value.strip():
        raise ToolFailure(INVALID_ARGUMENT, f"{name} must not be empty.")
    size = _size(value)
    if size > max_bytes:
        raise ToolFailure(
            INVALID_ARGUMENT, f"{name} is {_human(size)}; the limit is {_human(max_bytes)}.",
            limit_bytes=max_bytes, size_bytes=size,
        )
    return value


def require_short(name: str, value: str | None, *, max_chars: int, required: bool = True) -> str | None:
    if value is None or not value.strip():
        if required:
            raise ToolFailure(INVALID_ARGUMENT, f"{name} must not be empty.")
        return None
    value = value.strip()
    if len(value) > max_chars:
        raise ToolFailure(INVALID_ARGUMENT, f"{name} is {len(value)} characters; the limit is {max_chars}.")
    if any(ch in value for ch in "\x00\r\n"):
        raise ToolFailure(INVALID_ARGUMENT, f"{name} must be one line without NUL characters.")
    return value


def require_range(name: str, value: int, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ToolFailure(INVALID_ARGUMENT, f"{name} must be an integer from {lo} to {hi} (got {value!r}).")
    return value


def require_list(name: str, values: Sequence[str] | None, *, max_items: int, max_chars: int) -> list[str]:
    """Distinct non-empty strings, in the order given."""
    if values is None:
        return []
    if len(values) > max_items:
        raise ToolFailure(INVALID_ARGUMENT, f"{name} has {len(values)} items; the limit is {max_items}.")
    out: dict[str, None] = {}
    for value in values:
        item = require_short(f"{name} item", value, max_chars=max_chars)
        assert item is not None
        out[item] = None
    return list(out)


def check_json_size(name: str, value: Any, max_bytes: int = METADATA_MAX_BYTES) -> None:
    import orjson

    try:
        size = len(orjson.dumps(value, default=str))
    except TypeError as exc:
        raise ToolFailure(INVALID_ARGUMENT, f"{name} is not JSON-serialisable: {exc}") from None
    if size > max_bytes:
        raise ToolFailure(INVALID_ARGUMENT, f"{name} is {_human(size)} as JSON; the limit is {_human(max_bytes)}.")
