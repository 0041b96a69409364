"""Running a doctor: resolve the context, run every check in order (reading only, unless
repairing), and with `--repair` take the lock, repair in dependency order and check again."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from chinvex.doctor.documents import (
    check_documents_without_chunks,
    check_fingerprints,
    check_ledger,
    check_untracked_documents,
)
from chinvex.doctor.files import check_config, check_index_files
from chinvex.doctor.findings import Findings, MID_WRITE_CHECKS
from chinvex.doctor.repair import Progress, reembed_documents, repair_rows, repair_runs, repair_vectors
from chinvex.doctor.report import Check, DoctorReport
from chinvex.doctor.runs import (
    check_failed_sources,
    check_skipped_sources,
    check_last_run,
    check_lock,
    check_stale_sources,
    ingest_running,
    wait_for_writer,
)
from chinvex.doctor.sqlite import check_foreign_keys, check_fts, check_integrity, rebuild_advice
from chinvex.doctor.vectors import check_embedder_and_store, check_stale_vectors, check_vectors
from chinvex.errors import ChinvexError, ConfigError
from chinvex.models import ContextConfig
from chinvex.storage import db
from chinvex.storage.repair import rebuild_fulltext_index


def diagnose(name: str, *, repair: bool = False, wait: bool | float = False,
             progress: Progress | None = None) -> DoctorReport:
    """Resolve `name` and examine its index. A context.json that does not load is itself the
    finding (nothing else can be checked without its index paths). `wait`: wait for an ingest
    in progress to end (with `repair`, for the context's lock) instead of reporting a batch in
    flight or failing with LOCKED. `progress(kind, n)` hears of the repair's long steps (vectors
    embedded again), so a front end can show them."""
    from chinvex.context.registry import Registry

    registry = Registry()
    try:
        config = registry.resolve(name)
    except ConfigError as exc:
        check = Check("context_config").problem(
            "error", [exc.message], "context.json does not load; fix it by hand",
            repairable=False)
        return DoctorReport(context=name, checks=[check], repair=repair)
    return Doctor(config, progress).run(repair=repair, wait=wait)


class Doctor:
    def __init__(self, config: ContextConfig, progress: Progress | None = None):
        self.config = config
        self.progress = progress
        self.sqlite_path = Path(config.index.sqlite_path)
        self._findings = Findings()

    def run(self, *, repair: bool = False, wait: bool | float = False) -> DoctorReport:
        from chinvex.locking import context_lock

        if not repair:
            if wait:
                wait_for_writer(self.config, wait)
            return DoctorReport(self.config.name, self._all_checks(readonly=True))
        from chinvex.storage.access import check_writable

        check_writable(self.config, action="doctor --repair")
        unlocked = check_lock(self.config)  # before our own lock note replaces a stale one
        with context_lock(self.config, wait=wait, purpose="doctor --repair"):
            before = [unlocked if c.name == "lock" else c for c in self._all_checks(readonly=False)]
            self._findings.close_store()  # a repair may move the store's files
            actions = self._repair(before)
            after = self._all_checks(readonly=False)
            self._findings.close_store()
        was = {c.name: c for c in before}
        for check in after:
            old = was.get(check.name)
            if old is not None and old.status != "ok" and old.repairable:
                check.repaired = check.status == "ok" or check.count < old.count
                check.repairable = True
        return DoctorReport(self.config.name, after, repair=True, actions=actions)

    # -- running the checks ------------------------------------------------------------------

    def _all_checks(self, *, readonly: bool) -> list[Check]:
        checks = [check_config(self.config)]
        files = check_index_files(self.config)
        checks.append(files)
        if not self.sqlite_path.exists():
            return checks
        try:
            conn = db.connect(self.sqlite_path, readonly=readonly)
        except db.DamagedIndexError as exc:
            self._findings.damaged = True
            checks.append(Check("sqlite_integrity").problem(
                "error", [exc.message.split("; run ", 1)[0]],
                "hybrid.db is damaged: " + rebuild_advice(self.config), repairable=True))
            return checks
        except ChinvexError as exc:
            checks.append(Check("sqlite_integrity").problem(
                "error", [exc.message], "hybrid.db cannot be opened", repairable=False))
            return checks
        try:
            self._findings = Findings(ingest_running=ingest_running(self.config))
            checks += self._index_checks(conn)
        finally:
            conn.close()
        if self._findings.ingest_running:
            for check in checks:
                if check.name in MID_WRITE_CHECKS and check.status == "error":
                    check.status = "warning"
                    check.repairable = False
                    check.message = ("an ingest is writing, so this may be a half-written batch; "
                                     "check again when it ends: " + check.message)
        return checks

    def _index_checks(self, conn: sqlite3.Connection) -> list[Check]:
        f, config, path = self._findings, self.config, self.sqlite_path
        store: list[Any] = [None]

        def embedder() -> Check:
            check, store[0] = check_embedder_and_store(config, conn, f)
            return check

        steps: list[tuple[str, Any]] = [
            ("sqlite_integrity", lambda: check_integrity(conn, f, config)),
            ("foreign_keys", lambda: check_foreign_keys(conn, f)),
            ("fts_index", lambda: check_fts(conn, path, f)),
            ("embedder", embedder),
            ("vectors_missing", lambda: check_vectors(conn, store[0], f)),
            ("vectors_stale", lambda: check_stale_vectors(conn, config, store[0], f)),
            ("fingerprints_without_documents", lambda: check_fingerprints(conn, config, f)),
            ("documents_without_chunks", lambda: check_documents_without_chunks(conn, f)),
            ("origins_without_documents", lambda: check_ledger(conn, f)),
            ("untracked_documents", lambda: check_untracked_documents(conn, config, f)),
            ("failed_sources", lambda: check_failed_sources(conn, config)),
            ("skipped_sources", lambda: check_skipped_sources(conn, config)),
            ("stale_sources", lambda: check_stale_sources(conn, config)),
            ("last_ingest", lambda: check_last_run(conn, config, f)),
            ("lock", lambda: check_lock(config)),
        ]
        checks: list[Check] = []
        for name, step in steps:
            try:
                result = step()
            except sqlite3.DatabaseError as exc:  # a damaged file: report, never a traceback
                damaged = db.failure_kind(exc) == "damaged"
                f.damaged = f.damaged or damaged
                result = Check(name).problem(
                    "error", [f"{type(exc).__name__}: {exc}"],
                    "could not be checked: hybrid.db cannot be read"
                    + (f" ({rebuild_advice(config)})" if damaged else ""), repairable=damaged)
            checks += result if isinstance(result, list) else [result]
        return checks

    # -- repairing ---------------------------------------------------------------------------

    def _repair(self, before: list[Check]) -> list[str]:
        f = self._findings
        if f.damaged:
            from chinvex.doctor.rebuild import rebuild_damaged_index

            return rebuild_damaged_index(self.config, self.progress)
        if any(c.name == "sqlite_integrity" and c.status == "error" for c in before):
            return ["hybrid.db cannot be opened (see the check): nothing was changed"]
        problems = {c.name for c in before if c.status != "ok" and c.repairable}
        if not problems or not self.sqlite_path.exists():
            return []
        actions: list[str] = []
        conn = db.connect(self.sqlite_path)
        try:
            repair_rows(conn, self.config, f, problems, actions)
            if "fts_index" in problems:
                rebuild_fulltext_index(conn)
                actions.append("rebuilt the full-text index from the chunks table")
            repair_runs(conn, f, problems, actions)
            if "embedder" in problems and f.store_damaged:
                from chinvex.storage.aside import move_aside_damaged_store

                actions.append(move_aside_damaged_store(self.config))
            if problems & {"vectors_missing", "vectors_orphaned", "embedder"} or f.rows_deleted:
                repair_vectors(conn, self.config, actions, self.progress)
            if "vectors_stale" in problems and f.stale_docs:
                reembed_documents(conn, self.config, f.stale_docs, actions, self.progress)
        finally:
            conn.close()
        return actions
