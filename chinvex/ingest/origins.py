"""The ledger of which sources produce which documents, and which of them wins.

Precedence keys come from the adapter (`precedence_key(doc) -> tuple`, greatest wins; ties go to
the greater origin uri so the choice is deterministic); adapters without one rank copies by
`updated_at`, then by number of turns.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from typing import Any

import orjson

from chinvex.models.sources import complete
from chinvex.storage import origins as rows


def precedence_of(adapter: Any, doc: Any) -> str:
    return orjson.dumps(_encode(tuple(complete(adapter).precedence_key(doc)))).decode()


def _encode(key: tuple[Any, ...]) -> list[list[Any]]:
    """A JSON form of a tuple that compares like the tuple (±inf and None included)."""
    out: list[list[Any]] = []
    for value in key:
        if value is None:
            out.append([0, 0])
        elif isinstance(value, bool):
            out.append([1, int(value)])
        elif isinstance(value, (int, float)):
            if isinstance(value, float) and math.isnan(value):
                value = -1e308
            out.append([1, max(-1e308, min(1e308, float(value)))])
        else:
            out.append([2, str(value)])
    return out


@dataclass
class Detached:
    delete_docs: list[str]
    reingest_origins: set[str]


class OriginLedger:
    """Which sources produce which documents, and which of them writes each (the table access
    is chinvex.storage.origins)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def origins(self, doc_id: str) -> list[tuple[str, list[Any]]]:
        return rows.origins_of(self.conn, doc_id)

    def record(self, doc_id: str, origin: str, precedence: str) -> bool:
        """Record that `origin` produces `doc_id`; True when `origin` is the one that should write it."""
        rows.record(self.conn, doc_id, origin, precedence)
        return self.winner(doc_id) == origin

    def winner(self, doc_id: str) -> str | None:
        found = self.origins(doc_id)
        if not found:
            return None
        return max(found, key=lambda item: (item[1], item[0]))[0]

    def docs_of(self, origin: str) -> list[str]:
        return rows.docs_of(self.conn, origin)

    def detach(self, origin: str, doc_ids: list[str]) -> Detached:
        """`origin` no longer produces these documents: delete the ones nobody else produces,
        and name the sources that must rewrite the ones `origin` had written."""
        delete: list[str] = []
        reingest: set[str] = set()
        for doc_id in doc_ids:
            rows.forget(self.conn, doc_id, origin)
            best = self.winner(doc_id)
            written = rows.written_from(self.conn, doc_id)
            if best is None:
                if written is not None:
                    delete.append(doc_id)
            elif written is None or written[0] == origin:
                reingest.add(best)
        return Detached(delete, reingest)
