"""Checks of sources and runs: failed and changed sources, the last ingest, and the context's
lock and the process holding it."""

from __future__ import annotations

import os
import re
import sqlite3
from collections import defaultdict

import orjson

from chinvex.doctor.findings import Findings
from chinvex.doctor.report import Check
from chinvex.locking import lock_holder, process_alive
from chinvex.models import ContextConfig
from chinvex.redaction.paths import real_path
from chinvex.storage import doctor_reads as reads


def is_path(uri: str) -> bool:
    return uri.startswith("/") or bool(re.match(r"^[A-Za-z]:[\\/]", uri))


def check_failed_sources(conn: sqlite3.Connection, config: ContextConfig) -> Check:
    check = Check("failed_sources")
    rows = reads.sources_with_status(conn, config.name, "error")
    if rows:
        items = [str(err or uri).splitlines()[0][:300] for uri, err in rows]
        return check.problem("warning", items, "sources that could not be ingested last time "
                             "(retried on every ingest; what they had indexed before is kept)",
                             repairable=False)
    check.message = "no source failed"
    return check


def check_skipped_sources(conn: sqlite3.Connection, config: ContextConfig) -> Check:
    """Files under a root that are not sessions of its kind (logs, settings, another tool's
    files): not a problem, but worth a look when a store's sessions are missing."""
    check = Check("skipped_sources")
    rows = reads.sources_with_status(conn, config.name, "skipped")
    check.count = len(rows)
    check.examples = [str(err or uri).splitlines()[0][:300] for uri, err in rows][:5]
    check.message = (f"{len(rows)} files under the sources are not sessions of their kind and are "
                     "passed over until they change" if rows else "none")
    return check


def check_stale_sources(conn: sqlite3.Connection, config: ContextConfig) -> Check:
    """Fingerprinted files that changed, vanished or became unreadable since they were indexed."""
    from chinvex.ingest.fingerprints import Fingerprint

    check = Check("stale_sources")
    found: dict[str, list[str]] = defaultdict(list)
    for row in reads.fingerprint_rows(conn, config.name):
        fp = Fingerprint.from_row(row)
        if not is_path(fp.source_uri):
            continue  # app-server threads: their freshness is the thread's updatedAt
        path = real_path(fp.source_uri.split("#", 1)[0])  # a name holding a secret is stored redacted
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            found["deleted"].append(fp.source_uri)
            continue
        except OSError:
            found["unreadable"].append(fp.source_uri)
            continue
        if not os.access(path, os.R_OK):
            found["unreadable"].append(fp.source_uri)
        elif fp.size_bytes is not None and st.st_size != fp.size_bytes:
            found["modified"].append(fp.source_uri)
        elif fp.mtime_ns is not None and st.st_mtime_ns != fp.mtime_ns:
            found["modified"].append(fp.source_uri)
        elif fp.mtime_ns is None and fp.mtime_unix is not None and int(st.st_mtime) != fp.mtime_unix:
            found["modified"].append(fp.source_uri)
    if found:
        items = [f"{reason}: {uri}" for reason in sorted(found) for uri in found[reason]]
        summary = ", ".join(f"{len(v)} {k}" for k, v in sorted(found.items()))
        return check.problem("warning", items, f"{summary} since the last ingest; run "
                             "'chinvex ingest' to bring the index up to date", repairable=False)
    check.message = "every indexed file is as it was indexed"
    return check


def ingest_running(config: ContextConfig) -> bool:
    text, pid = lock_holder(config)
    return (text is not None and text.startswith("ingest") and pid is not None
            and pid != os.getpid() and process_alive(pid))


def check_last_run(conn: sqlite3.Connection, config: ContextConfig, f: Findings) -> Check:
    check = Check("last_ingest")
    running = ingest_running(config)
    f.interrupted_runs = [] if running else reads.running_run_ids(conn, config.name)
    row = reads.last_run(conn, config.name)
    if row is None:
        return check.problem("warning", [], "never ingested: run 'chinvex ingest'",
                             repairable=False)
    run_id, started, _, status, stats_json = row
    if status == "running" and running:
        check.message = f"an ingest is running (started {started})"
        return check
    if status in ("running", "interrupted"):
        return check.problem("warning", [f"{run_id} started {started}"], "the last ingest was "
                             "interrupted; its finished sources are kept and the next 'chinvex "
                             "ingest' completes the rest", repairable=bool(f.interrupted_runs))
    if status == "failed":
        stats = orjson.loads(stats_json) if stats_json else {}
        errors = [m for m in (e.get("message", "") for e in (stats.get("errors") or [])) if m.strip()][-1:]
        if not errors:  # stopped (Ctrl-C, a signal) rather than failed on something it could name
            return check.problem("warning", [f"{run_id} started {started}"], "the last ingest was stopped "
                                 "before it finished; its finished sources are kept and the next 'chinvex "
                                 "ingest' completes the rest", repairable=False)
        return check.problem("warning", errors, "the last ingest failed; see the message, then run "
                             "'chinvex ingest' again", repairable=False)
    if status == "completed_with_errors":
        from chinvex.fmt import counted

        stats = orjson.loads(stats_json) if stats_json else {}
        errors = [e.get("message", "") for e in (stats.get("errors") or [])]
        return check.problem("warning", errors, f"the last ingest ({started}) completed with "
                             f"{counted(len(errors), 'source error')}", repairable=False)
    check.message = f"{status} at {row[2] or started}"
    return check


def check_lock(config: ContextConfig) -> Check:
    check = Check("lock")
    text, pid = lock_holder(config)
    if text is None:
        check.message = "not held"
        return check
    if pid == os.getpid():
        check.message = "held by this repair until it ends"
        return check
    if pid is not None and process_alive(pid):
        check.message = f"held by {text}"
        return check
    return check.problem("warning", [text], "a lock note left by a process that no longer runs "
                         "(the lock itself is free); repair removes the note", repairable=True)


def wait_for_writer(config: ContextConfig, wait: bool | float) -> None:
    """Wait until no process holds the context's lock (an ingest ends), without keeping it:
    checking takes no lock, so an ingest may start again right after."""
    from chinvex.locking import context_lock

    try:
        with context_lock(config, wait=wait, purpose="doctor --wait"):
            pass
    except OSError:  # a read-only index folder: no ingest can be writing it
        return
