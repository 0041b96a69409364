"""Feedback on memories and their usage stats (retrievals, useful / not useful / outdated /
duplicate counts, the usefulness rate RECALL defines)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chinvex.memory.items import default_redactor
from chinvex.storage import feedback as rows
from chinvex.timeutil import now_iso

if TYPE_CHECKING:
    from chinvex.redaction import Redactor

FEEDBACK_KINDS = ("useful", "not_useful", "outdated", "duplicate")

_COUNTS = ("retrieval_count", "useful_count", "not_useful_count", "outdated_count", "duplicate_count")


def record_feedback(conn: sqlite3.Connection, *, item_id: str, session_id: str, kind: str,
                    context: str | None, duplicate_of: str | None,
                    redactor: Redactor | None = None) -> str:
    """Store one feedback row and count it; its free-text `context` note is redacted."""
    feedback_id = uuid.uuid4().hex
    rows.insert_feedback(
        conn, feedback_id=feedback_id, item_id=item_id, session_id=session_id, kind=kind,
        useful={"useful": 1, "not_useful": 0}.get(kind), context=default_redactor(redactor).optional(context),
        duplicate_of=duplicate_of, stamp=now_iso(),
    )
    return feedback_id


def count_retrievals(conn: sqlite3.Connection, item_ids: Sequence[str]) -> None:
    """One more retrieval for each of these memories."""
    if not item_ids:
        return
    rows.count_retrievals(conn, item_ids, now_iso())


def memory_stats(conn: sqlite3.Connection, item_id: str) -> dict[str, Any]:
    """A memory's counters, its usefulness rate and its outdated / duplicate flags."""
    row = rows.stats_row(conn, item_id)
    counts = {key: (row[key] if row else 0) for key in _COUNTS}
    judged = counts["useful_count"] + counts["not_useful_count"] + counts["outdated_count"] + counts["duplicate_count"]
    # RECALL defines the rate as useful / retrievals; feedback without a counted retrieval (an
    # id from recall_get, or judged twice) must not push it above 1.
    denominator = max(counts["retrieval_count"], judged)
    return {
        **counts,
        "usefulness_rate": round(counts["useful_count"] / denominator, 4) if denominator else None,
        "flagged_outdated": counts["outdated_count"] > 0,
        "flagged_duplicate_of": row["flagged_duplicate_of"] if row else None,
    }


def recent_feedback(conn: sqlite3.Connection, item_id: str, limit: int) -> list[sqlite3.Row]:
    """A memory's latest feedback notes, newest first."""
    return rows.recent_feedback_rows(conn, item_id, limit)
