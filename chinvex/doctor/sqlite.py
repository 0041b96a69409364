"""Checks of hybrid.db itself: SQLite integrity, foreign keys, the full-text index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from chinvex.doctor.findings import Findings
from chinvex.doctor.report import Check
from chinvex.models import ContextConfig
from chinvex.storage import consistency as cons
from chinvex.storage.doctor_reads import INTEGRITY_CHECK


def check_integrity(conn: sqlite3.Connection, f: Findings,
                    config: ContextConfig | None = None) -> Check:
    check = Check("sqlite_integrity")
    errors = cons.integrity_errors(conn)
    if errors:
        f.damaged = True
        advice = (rebuild_advice(config) if config is not None
                  else "run 'chinvex doctor --repair' for this context")
        return check.problem("error", errors, f"hybrid.db is damaged: {advice}", repairable=True)
    check.message = f"{INTEGRITY_CHECK}: ok"
    return check


def check_foreign_keys(conn: sqlite3.Connection, f: Findings) -> Check:
    check = Check("foreign_keys")
    violations = cons.foreign_key_violations(conn)
    f.fk_rows = [(table, rowid) for table, rowid, _ in violations]
    if violations:
        items = [f"{table} row {rowid} -> missing {parent}" for table, rowid, parent in violations]
        return check.problem("error", items, "rows refer to documents that do not exist",
                             repairable=True)
    check.message = "no dangling rows"
    return check


def check_fts(conn: sqlite3.Connection, path: Path, f: Findings) -> Check:
    check = Check("fts_index")
    state = cons.fts_state(conn, path, deep=not f.ingest_running)
    if not state.ok:
        items = []
        if state.error:
            items.append(f"FTS5 integrity-check: {state.error}")
        if state.indexed_rows != state.chunk_rows:
            items.append(f"{state.indexed_rows} rows indexed for {state.chunk_rows} chunks")
        return check.problem("error", items, "the full-text index does not match the chunks "
                             "(stale or missing postings); a rebuild fixes it", repairable=True,
                             count=abs(state.indexed_rows - state.chunk_rows) or 1)
    check.message = f"{state.chunk_rows} chunks indexed" + (
        "" if state.deep else f" (row counts only: {state.shallow_reason or 'the full check waits until the ingest ends'})")
    return check


def rebuild_advice(config: ContextConfig) -> str:
    return (f"run 'chinvex doctor --context {config.name} --repair': it moves the damaged file "
            "aside (kept, renamed with a timestamp) and rebuilds the index from the sources")
