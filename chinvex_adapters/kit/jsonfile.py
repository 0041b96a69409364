"""A whole JSON session file (Gemini CLI's session-*.json, a Cline task's history, ...).

Such files are rewritten whole by their agent, so one read at a time is consistent; one that
does not parse is truncated or of another shape, and is skipped with one line saying which.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chinvex.models.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonl import loads_lenient

MAX_JSON_BYTES = 512 * 1024 * 1024


def read_json(path: Path, label: str, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The parsed document. Unreadable: SourceError (retried next run). Not JSON, truncated or
    too large: UnrecognisedSource naming `label` (e.g. "Gemini CLI session")."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise UnrecognisedSource(f"{path}: not read as a {label} ({size:,} bytes, over the "
                                     f"{max_bytes:,}-byte limit)")
        raw = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise UnrecognisedSource(f"{path}: not a {label} (empty file)")
    try:
        return loads_lenient(raw)
    except (ValueError, RecursionError) as exc:
        detail = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise UnrecognisedSource(f"{path}: not a readable {label} (invalid or truncated JSON: "
                                 f"{detail})") from None


def expect_object(value: Any, path: Path, label: str, *keys: str) -> dict[str, Any]:
    """`value` as a JSON object holding at least one of `keys`, else UnrecognisedSource."""
    if not isinstance(value, dict):
        raise UnrecognisedSource(f"{path}: not a {label} (a JSON {type(value).__name__}, not an object)")
    if keys and not any(k in value for k in keys):
        raise UnrecognisedSource(f"{path}: not a {label} (no {' or '.join(repr(k) for k in keys)} key)")
    return value
