"""`chinvex stats`: what a context's index holds, read without modifying it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from chinvex.models import ContextConfig
from chinvex.storage import db, document_counts
from chinvex.storage import fingerprints as fingerprint_rows
from chinvex.storage.runs import iter_runs


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                pass
    return total


def index_bytes(config: ContextConfig) -> dict[str, int | None]:
    """Bytes on disk of a context's hybrid.db (with its WAL and shared-memory files) and of its
    embedded Chroma store (None for a Chroma server or a store not created yet)."""
    sqlite_path = Path(config.index.sqlite_path)
    chroma = Path(config.index.chroma_dir)
    return {
        "hybrid_db": sum(_size(Path(str(sqlite_path) + s)) for s in ("", "-wal", "-shm")
                         if Path(str(sqlite_path) + s).exists()),
        "chroma": _size(chroma) if not config.index.chroma_url and chroma.exists() else None,
    }


def _with_live_status(config: ContextConfig, run: dict[str, Any]) -> dict[str, Any]:
    """A run recorded as running whose process is gone (killed, the machine restarted) is
    `interrupted`: its finished sources are kept and the next ingest completes the rest."""
    from chinvex.locking import ingest_alive

    if run.get("status") == "running" and not ingest_alive(config):
        return {**run, "status": "interrupted"}
    return run


def collect_stats(config: ContextConfig) -> dict[str, Any]:
    sqlite_path = Path(config.index.sqlite_path)
    conn = db.connect(sqlite_path, create=True)
    try:
        by_type = document_counts.by_source_type(conn)
        by_agent = document_counts.conversations_by_agent(conn)
        fingerprints = fingerprint_rows.counts_by_status(conn, config.name)
        runs = list(iter_runs(conn, 1))
        embedder = {key: db.get_meta(conn, key) for key in
                    ("embedder", "embedding_provider", "embedding_model", "embedding_dimension")}
        totals = {
            "documents": sum(v["documents"] for v in by_type.values()),
            "chunks": sum(v["chunks"] for v in by_type.values()),
            "file_edits": _file_edits(conn),
        }
    finally:
        conn.close()
    on_disk = index_bytes(config)
    sizes = {"hybrid_db_bytes": on_disk["hybrid_db"], "chroma_bytes": on_disk["chroma"]}
    return {
        "context": config.name,
        "totals": totals,
        "by_source_type": dict(sorted(by_type.items())),
        "conversations_by_agent": dict(sorted(by_agent.items())),
        "fingerprints": fingerprints,
        "last_run": _with_live_status(config, runs[0]) if runs else None,
        "embedder": embedder,
        "index": {"sqlite_path": str(sqlite_path), "chroma_dir": config.index.chroma_dir,
                  "chroma_url": config.index.chroma_url, **sizes},
    }


def _file_edits(conn: Any) -> int | None:
    """Edits recorded for blame; None on an index opened read-only before its migration added them."""
    import sqlite3

    from chinvex.storage import edits

    try:
        return edits.count(conn)
    except sqlite3.OperationalError:
        return None


def format_stats(data: dict[str, Any]) -> str:
    """`collect_stats` for a person: readable dates and sizes, nothing printed as None."""
    from rich.markup import escape

    from chinvex import fmt

    lines = [f"{data['context']}: {data['totals']['documents']} documents, {data['totals']['chunks']} chunks"]
    for source_type, counts in data["by_source_type"].items():
        lines.append(f"  {source_type:<14} {counts['documents']:>7} docs {counts['chunks']:>8} chunks")
    agents = data.get("conversations_by_agent") or {}
    if agents:
        lines.append("  conversations by agent: " + " · ".join(f"{a} {n}" for a, n in agents.items()))
    if data["totals"].get("file_edits"):
        lines.append(f"  file edits recorded: {data['totals']['file_edits']} (chinvex blame, chinvex timeline)")
    run = data["last_run"]
    if run:
        stats = run.get("stats") or {}
        sources = stats.get("sources", {})
        took = f" in {stats['duration_s']:.1f} s" if isinstance(stats.get("duration_s"), (int, float)) else ""
        lines.append(
            f"last ingest: {fmt.when(run.get('started_at'), missing=fmt.MISSING)} {run.get('status') or fmt.MISSING}"
            f"{took} ({sources.get('indexed', 0)} ingested, {sources.get('errors', 0)} errors)"
        )
        for root, info in sorted(((run.get("stats") or {}).get("readers") or {}).items()):
            stopped = "; stopped mid-run" if info.get("stopped") else ""
            why = f"; {info['why']}" if info.get("why") else ""  # its own words may hold parentheses
            lines.append(f"codex sessions {escape(root)}: read by {escape(str(info.get('reader')))}"
                         f"{escape(why)}{stopped}")
    else:
        lines.append("last ingest: never")
    failing = (data.get("fingerprints") or {}).get("error")
    if failing:
        lines.append(f"sources failing: {failing} (read again by the next ingest; 'chinvex doctor' lists them)")
    passed_over = (data.get("fingerprints") or {}).get("skipped")
    if passed_over:
        lines.append(f"files passed over: {passed_over} (not sessions of their folder's kind; "
                     "'chinvex doctor' lists them)")
    emb = data["embedder"]
    if emb.get("embedder"):
        dimension = f" ({emb['embedding_dimension']} dimensions)" if emb.get("embedding_dimension") else ""
        lines.append(f"embedder: {emb['embedder']}{dimension}")
    else:
        lines.append("embedder: none yet (nothing embedded)")
    idx = data["index"]
    vectors = (f"chroma server {idx['chroma_url']}" if idx.get("chroma_url")
               else f"chroma {fmt.size(idx.get('chroma_bytes'))}")
    lines.append(f"on disk: hybrid.db {fmt.size(idx.get('hybrid_db_bytes'))}, {vectors}")
    return escape("\n".join(lines))
