"""One timestamp representation for the whole engine: timezone-aware UTC, ISO 8601 with 'Z'.

Inputs arrive as ISO strings with offsets, naive strings, unix seconds or milliseconds; they are
normalised once at the model boundary so that sorting and comparisons downstream are plain.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_MS_THRESHOLD = 10_000_000_000  # values above this are unix milliseconds, not seconds


def to_utc(value: Any) -> datetime | None:
    """Parse the many timestamp shapes found in exports; None for missing or unparseable."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if abs(value) > _MS_THRESHOLD else value
        try:
            return datetime.fromtimestamp(seconds, timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        text = value.strip()
        parsed = parse_iso(text)
        if parsed is not None:
            return parsed
        try:
            return to_utc(float(text))
        except ValueError:
            return None
    return None


def parse_iso(text: str) -> datetime | None:
    """An ISO 8601 string (a trailing 'Z' allowed) as UTC; None when it is not one."""
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return as_utc(dt)


def as_utc(dt: datetime) -> datetime:
    """The datetime in UTC; a naive one is taken to be UTC already."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def iso_z(dt: datetime | None) -> str | None:
    """ISO 8601 in UTC with millisecond precision and a 'Z' suffix."""
    if dt is None:
        return None
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def now_iso() -> str:
    return iso_z(datetime.now(timezone.utc))  # type: ignore[return-value]


def _validate(value: Any) -> datetime | None:
    if value is None:
        return None
    parsed = to_utc(value)
    if parsed is None:
        raise ValueError(f"not a timestamp: {value!r}")
    return parsed


Timestamp = Annotated[
    datetime,
    BeforeValidator(_validate),
    PlainSerializer(iso_z, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
"""A UTC datetime that validates from ISO strings or unix (milli)seconds and dumps as ISO 'Z'."""
