"""The flight recorder: an agent's log entries and the queries recall_search answered, every
text of them redacted."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from chinvex.memory.items import default_redactor
from chinvex.storage import events as rows
from chinvex.timeutil import now_iso

if TYPE_CHECKING:
    from chinvex.redaction import Redactor


def log_event(conn: sqlite3.Connection, *, session_id: str, event_type: str, content: str,
              redactor: Redactor | None = None, rationale: str | None = None,
              metadata: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Append one flight-recorder entry, every text of it redacted: type, content, rationale and
    metadata (related files, the query, EDI's variables)."""
    redactor = default_redactor(redactor)
    entry_id = uuid.uuid4().hex
    stamp = now_iso()
    # `default=str` turns what JSON cannot hold into text first, so that text is redacted too.
    meta = redactor.value(orjson.loads(orjson.dumps(dict(metadata or {}), default=str)))
    rows.insert_event(conn, entry_id=entry_id, session_id=redactor.text(session_id),
                      event_type=redactor.text(event_type), content=redactor.text(content),
                      rationale=redactor.optional(rationale), metadata_json=orjson.dumps(meta).decode(),
                      stamp=stamp)
    return {"event_id": entry_id, "timestamp": stamp}
