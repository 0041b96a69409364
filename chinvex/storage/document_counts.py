"""What an index holds, counted for `chinvex stats`: documents and chunks per source type, and
conversations per agent."""

from __future__ import annotations

import sqlite3

from chinvex.models.documents import agent_of


def total_documents(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0])


def by_source_type(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """source type -> {"documents": n, "chunks": n}."""
    counts: dict[str, dict[str, int]] = {}
    for source_type, docs in conn.execute(
        "SELECT source_type, COUNT(*) FROM documents GROUP BY source_type"
    ):
        counts.setdefault(source_type, {"documents": 0, "chunks": 0})["documents"] = docs
    for source_type, chunks in conn.execute(
        "SELECT d.source_type, COUNT(*) FROM chunks c JOIN documents d USING(doc_id) "
        "GROUP BY d.source_type"
    ):
        counts.setdefault(source_type, {"documents": 0, "chunks": 0})["chunks"] = chunks
    return counts


def conversations_by_agent(conn: sqlite3.Connection) -> dict[str, int]:
    counts: dict[str, int] = {}
    for source, docs in conn.execute(
        "SELECT json_extract(metadata_json, '$.source'), COUNT(*) FROM documents "
        "WHERE json_extract(metadata_json, '$.doc_type') = 'conversation' GROUP BY 1"
    ):
        if isinstance(source, str):
            agent = agent_of(source)
            counts[agent] = counts.get(agent, 0) + docs
    return counts
