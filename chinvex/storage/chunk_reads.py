"""Reading chunks by id (for `chunk get`, MCP `chinvex_get_chunks`, and answers)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from chinvex.models import ContextConfig
from chinvex.models.turn_markers import turns_label
from chinvex.storage import db


def fetch_chunks(conn: sqlite3.Connection, chunk_ids: list[str], context: str) -> list[dict[str, Any]]:
    """Chunks in the order asked, each with its document's identity and neighbours' ids."""
    if not chunk_ids:
        return []
    marks = ",".join("?" * len(chunk_ids))
    rows = {
        row["chunk_id"]: row
        for row in conn.execute(
            f"""SELECT c.*, d.source_type, d.source_uri, d.title, d.created_at, d.updated_at,
                       d.indexed_at,
                       (SELECT p.chunk_id FROM chunks p WHERE p.doc_id=c.doc_id
                          AND p.chunk_index=c.chunk_index-1) AS prev_id,
                       (SELECT n.chunk_id FROM chunks n WHERE n.doc_id=c.doc_id
                          AND n.chunk_index=c.chunk_index+1) AS next_id
                FROM chunks c JOIN documents d ON d.doc_id=c.doc_id
                WHERE c.chunk_id IN ({marks})""",
            chunk_ids,
        )
    }
    out = []
    for cid in chunk_ids:
        row = rows.get(cid)
        if row is None:
            continue
        out.append({
            "chunk_id": cid,
            "context": context,
            "doc_id": row["doc_id"],
            "chunk_index": row["chunk_index"],
            "source_type": row["source_type"],
            "source_uri": row["source_uri"],
            "title": row["title"],
            "text": row["text"],
            "range": {"char_start": row["char_start"], "char_end": row["char_end"],
                      "line_start": row["line_start"], "line_end": row["line_end"]},
            "metadata": orjson.loads(row["metadata_json"] or "{}"),
            "timestamps": {"created_at": row["created_at"], "updated_at": row["updated_at"],
                           "indexed_at": row["indexed_at"]},
            "neighbours": {"previous": row["prev_id"], "next": row["next_id"]},
        })
    return out


def get_chunks(config: ContextConfig, chunk_ids: list[str]) -> list[dict[str, Any]]:
    conn = db.connect(Path(config.index.sqlite_path))
    try:
        return fetch_chunks(conn, chunk_ids, config.name)
    finally:
        conn.close()


def format_chunk(chunk: dict[str, Any]) -> str:
    """A `fetch_chunks` row for a person (rich markup): where it comes from, its neighbours and
    timestamps, then its text; absent values are left out rather than printed as None."""
    from rich.markup import escape

    from chinvex import fmt

    rng = chunk["range"]
    where = chunk["source_uri"]
    if rng.get("line_start") is not None:
        where += f":{rng['line_start']}-{fmt.text(rng.get('line_end'))}"
    title = f" · {chunk['title']}" if chunk.get("title") and chunk["title"] not in where else ""
    details = []
    meta = chunk.get("metadata") or {}
    turns = turns_label(meta, chunk["text"])  # a conversation chunk: its turns, as search shows them
    if turns:
        details.append(turns)
    details.append(f"chars {fmt.text(rng.get('char_start'))}-{fmt.text(rng.get('char_end'))}")
    neighbours = chunk.get("neighbours") or {}
    details.append(f"previous {neighbours.get('previous') or 'none (first chunk)'}")
    details.append(f"next {neighbours.get('next') or 'none (last chunk)'}")
    stamps = chunk.get("timestamps") or {}
    if stamps.get("updated_at"):
        details.append(f"updated {fmt.when(stamps['updated_at'])}")
    details.append(f"indexed {fmt.when(stamps.get('indexed_at'))}")
    head = f"[{chunk['source_type']}] {where}{title}"
    return "\n".join([
        f"[bold]{escape(chunk['chunk_id'])}[/bold] {escape(head)}",
        f"[dim]{escape(' · '.join(details))}[/dim]",
        escape(chunk["text"]),
    ])
