"""`chinvex ingest`: enumerate every source of a context, skip what its fingerprint says is
unchanged, parse → redact → chunk → embed → write the rest, and remove what vanished.

A bad source is an error in the run summary, never the end of the run, and never the loss of
what was indexed from it before.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from chinvex.errors import EmbedderMismatchError, StorageError
from chinvex.ingest import fingerprints as fps
from chinvex.ingest import journal
from chinvex.ingest.adapters import adapter as load_adapter
from chinvex.ingest.enumeration import RootEnumeration, SourceWork
from chinvex.ingest.origins import OriginLedger
from chinvex.ingest.source_ingest import SourceIngest
from chinvex.ingest.summary import Decision, IngestSummary, SourceMessage
from chinvex.ingest.vanished import VanishedSources
from chinvex.ingest.writer import IndexWriter
from chinvex.locking import context_lock
from chinvex.models import ContextConfig
from chinvex.models.sources import AdapterOptions
from chinvex.storage import db
from chinvex.storage.access import check_writable
from chinvex.storage.vector_open import check_store_file
from chinvex.storage.vectors import VectorStore
from chinvex.timeutil import now_iso

class ProgressSink(Protocol):
    def start(self, total: int) -> None: ...
    def advance(self, label: str) -> None: ...
    def embedded(self, count: int) -> None: ...
    def decision(self, decision: Decision) -> None: ...
    def finish(self) -> None: ...


@dataclass
class IngestOptions:
    full: bool = False
    verbose: bool = False
    wait: bool | float = False
    progress: ProgressSink | None = None
    embedder_factory: Callable[[], Any] | None = None


def run_ingest(config: ContextConfig, options: IngestOptions | None = None) -> IngestSummary:
    """Ingest one context under its writer lock. Whatever stops the run from writing (a
    read-only index, a full disk or file-size limit, a damaged hybrid.db or Chroma store) is a
    one-line `StorageError`; every batch is atomic, so the index stays as the last completed
    batch left it, readable, and the next run continues from there."""
    options = options or IngestOptions()
    check_writable(config, action="ingest")
    try:
        with context_lock(config, wait=options.wait, purpose="ingest"):
            return run_ingest_locked(config, options)
    except OSError as exc:  # the lock file itself (a permission change between check and lock)
        raise write_failure(config, exc) from None


def run_ingest_locked(config: ContextConfig, options: IngestOptions) -> IngestSummary:
    """`run_ingest` for a caller that already holds the context's lock (`doctor --repair`
    rebuilding a damaged hybrid.db from the sources)."""
    conn = db.connect(Path(config.index.sqlite_path), create=True)
    try:
        return IngestRun(config, conn, options).execute()
    except (sqlite3.Error, OSError) as exc:
        raise write_failure(config, exc) from None
    except StorageError as exc:
        raise _stopped(config, exc) from None
    finally:
        try:
            conn.close()
        except sqlite3.Error:
            # Closing checkpoints the WAL, which fails on a full disk too: the commits are in
            # the WAL (the next opener replays it), and the run's own error is the one to show.
            pass


def _stopped(config: ContextConfig, exc: StorageError) -> StorageError:
    """A store that failed mid-run (Chroma could not write: disk full, a file-size limit, an
    I/O error) gets the same advice as a failed SQLite write; errors that carry their own
    advice (damaged, read-only, busy, another embedder) are kept as they are."""
    from chinvex.storage.vector_errors import DamagedStoreError, ReadOnlyStoreError

    if isinstance(exc, (DamagedStoreError, ReadOnlyStoreError, db.DamagedIndexError,
                        db.ReadOnlyIndexError)) or not exc.message.startswith("could not write"):
        return exc
    return StorageError(f"ingest of context {config.name!r} stopped: {exc.message}; what was "
                        "indexed before is intact and searchable — free disk space (or raise the "
                        "file-size limit, or check the disk) and run 'chinvex ingest' again to "
                        "continue")


def write_failure(config: ContextConfig, exc: BaseException) -> StorageError:
    """One line for a failure to write the index, saying what happened to it and what to do."""
    path = Path(config.index.sqlite_path)
    if isinstance(exc, StorageError):
        return exc
    kind = db.failure_kind(exc)
    detail = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    where = getattr(exc, "filename", None) or path
    if kind == "damaged":
        return db.damaged_error(path, exc)
    if kind == "readonly":
        return db.ReadOnlyIndexError(
            f"ingest of context {config.name!r} cannot write {where} ({detail}); make the index "
            f"folder {path.parent} writable (search still works on a read-only index)")
    if kind in ("full", "io"):
        return StorageError(
            f"ingest of context {config.name!r} stopped: could not write {where} ({detail}); "
            "what was indexed before is intact and searchable — free disk space (or raise the "
            "file-size limit, or check the disk) and run 'chinvex ingest' again to continue")
    return StorageError(f"ingest of context {config.name!r} stopped: could not write {where} "
                        f"({type(exc).__name__}: {detail}); what was indexed before is intact — "
                        "run 'chinvex ingest' again")


class IngestRun(RootEnumeration, SourceIngest, VanishedSources):
    """One ingest of one context under its lock: enumerate the roots (enumeration.py), decide per
    source from its fingerprint, parse, prepare and write what changed (source_ingest.py), remove
    what vanished (vanished.py), and record the run (here)."""

    def __init__(self, config: ContextConfig, conn: sqlite3.Connection, options: IngestOptions):
        from chinvex.chunking import CHUNKER_VERSION
        from chinvex.embedding.factory import make_embedder
        from chinvex.redaction import REDACTION_VERSION, Redactor

        self.config = config
        self.conn = conn
        self.options = options
        self.started = time.monotonic()
        self.summary = IngestSummary(
            run_id=uuid.uuid4().hex, context=config.name, started_at=now_iso(), full=options.full
        )
        self.redact = config.redaction is None or config.redaction.enabled
        # Source uris, adapter state, errors and the run log are redacted like documents
        # (chinvex.redaction.structured); what documents hold is redacted by `prepare`.
        self.redactor = Redactor(self.redact)
        redaction_tag = REDACTION_VERSION if self.redact else "redaction-off"
        self.chunker_version = f"{CHUNKER_VERSION}+{redaction_tag}"
        self._embedder = (options.embedder_factory or (lambda: make_embedder(config.embedding)))()
        self.summary.embedder = self._embedder.name
        self.adapter_options = AdapterOptions(
            context_name=config.name, excludes=list(config.excludes),
            settings=config.model_dump(mode="json"),
        )
        self.redactions: Counter[str] = Counter()
        self.adapter_counts: dict[str, Counter[str]] = {}
        self.skipped: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.unreadable: set[str] = set()
        self.ledger = OriginLedger(conn)
        self.tombstones: dict[str, str | None] = dict(
            conn.execute("SELECT doc_id, content_hash FROM tombstones").fetchall())
        self.pending: dict[str, journal.PendingSource] = {}
        self.reingest: set[str] = set()
        self.work_by_uri: dict[str, SourceWork] = {}
        self.root_adapters: set[str] = set()

    # -- run --------------------------------------------------------------------------------

    def execute(self) -> IngestSummary:
        conn = self.conn
        conn.execute(
            "INSERT INTO ingest_runs(run_id, context_name, started_at, status) VALUES(?,?,?,?)",
            (self.summary.run_id, self.config.name, self.summary.started_at, "running"),
        )
        try:
            check_store_file(self.config)
            vectors_reset = self._check_embedder()

            def open_store() -> VectorStore:
                store = VectorStore.open(self.config, conn, create=True)
                assert store is not None
                if vectors_reset:
                    store.drop()
                    return store
                return self._without_segment_damage(store)

            progress = self.options.progress
            self.writer = IndexWriter(
                conn, open_store, lambda: self._embedder, vectors_reset=vectors_reset,
                on_embedded=progress.embedded if progress else None, overlap=True,
            )
            if vectors_reset:
                _ = self.writer.store  # drop the other model's vectors now, not on first write
            # What an interrupted run left half-written is settled before anything is decided.
            self.writer.settle_vector_journal()
            self.pending = journal.load_pending(conn)
            self.known = fps.load_all(conn, self.config.name)
            roots, work, skipped_uris = self._enumerate()
            if progress:
                progress.start(len(work))
            seen: set[str] = set()
            self.work_by_uri = {item.candidate.source_uri: item for item in work}
            for item in work:
                seen.add(item.candidate.source_uri)
                self._process(item)
                if progress:
                    progress.advance(item.candidate.source_uri)
            self._remove_vanished(roots, seen, skipped_uris)
            self._rewrite_from_other_origins()
            self.writer.flush()
            self._reconcile_vectors()
            self._record_embedder()
            self.summary.status = "completed_with_errors" if self.summary.errors else "completed"
        except BaseException as exc:
            writer = getattr(self, "writer", None)
            if writer is not None and not isinstance(exc, KeyboardInterrupt):
                writer.wait_in_flight()  # unwritten, as after a crash; nothing outlives the run
            self.summary.status = "failed"
            self.summary.errors.append(SourceMessage(source_uri=self.config.name, message=str(exc)))
            raise
        finally:
            self._end_adapters()
            self._finish()
        return self.summary

    def _end_adapters(self) -> None:
        """Adapters that hold something for the length of a run (the Codex app-server child)
        release it here, and report what they can only say about a whole root: errors (a server
        that kept dying), warnings (put first: one line about a root outweighs many about its
        sources), counts, and in verbose mode which path each Codex thread took."""
        notes: list[SourceMessage] = []
        for name in sorted(self.root_adapters):
            try:
                report = load_adapter(name).end_run(self.adapter_options)
            except Exception as exc:  # finishing must never fail a run
                notes.append(SourceMessage(source_uri=name, adapter=name, message=(
                    f"adapter {name} failed to finish the run: {type(exc).__name__}: {exc}")))
                continue
            if not report:
                continue
            for uri, message in report.get("warnings") or ():
                notes.append(SourceMessage(source_uri=uri, adapter=name, message=message))
            for uri, message in report.get("errors") or ():
                self.summary.errors.append(SourceMessage(source_uri=uri, adapter=name, message=message))
            self.adapter_counts.setdefault(name, Counter()).update(report.get("counts") or {})
            self.summary.readers.update(report.get("readers") or {})
            if self.options.verbose:
                self.summary.paths.update(report.get("paths") or {})
        self.summary.warnings[0:0] = notes
        if self.summary.status == "completed" and self.summary.errors:
            self.summary.status = "completed_with_errors"

    def _finish(self) -> None:
        s = self.summary
        s.finished_at = now_iso()
        s.duration_s = round(time.monotonic() - self.started, 3)
        s.sources.skipped = dict(sorted(self.skipped.items()))
        s.sources.reasons = dict(sorted(self.reasons.items()))
        s.redactions = dict(sorted(self.redactions.items()))
        s.adapter_counts = {k: dict(sorted(v.items())) for k, v in sorted(self.adapter_counts.items()) if v}
        writer = getattr(self, "writer", None)
        if writer is not None:
            st = writer.stats
            s.documents = {"written": st.docs_written, "removed": st.docs_deleted}
            s.chunks = {"written": st.chunks_written, "updated": st.chunks_updated,
                        "deleted": st.chunks_deleted, "embedded": st.chunks_embedded,
                        "reused": st.chunks_reused, "vectors_repaired": st.vectors_repaired,
                        "vectors_settled": st.vectors_settled,
                        "vectors_healed": st.vectors_healed,
                        "orphan_vectors_deleted": st.orphan_vectors_deleted}
            from chinvex.storage.coverage import vector_coverage

            try:
                recorded = vector_coverage(self.conn)
            except sqlite3.Error:
                recorded = None
            if recorded is not None:
                s.chunks["total"] = recorded.chunks
                s.chunks["with_vector"] = recorded.with_vector
        if self.options.progress:
            self.options.progress.finish()
        stats = self.redactor.value(s.model_dump(mode="json", exclude={"decisions"}))
        try:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            self.conn.execute(
                "UPDATE ingest_runs SET finished_at=?, status=?, stats_json=? WHERE run_id=?",
                (s.finished_at, s.status, orjson.dumps(stats).decode(), s.run_id),
            )
        except sqlite3.Error:
            pass

    # -- embedder consistency ---------------------------------------------------------------

    def _check_embedder(self) -> bool:
        """True when vectors must be rebuilt (another model, with --full)."""
        stored = db.get_meta(self.conn, "embedder")
        current = self._embedder.name
        if stored is None or stored == current:
            db.set_meta(self.conn, "embedder", current)
            db.set_meta(self.conn, "embedding_provider", self._embedder.provider)
            db.set_meta(self.conn, "embedding_model", self._embedder.model)
            return False
        if not self.options.full:
            raise EmbedderMismatchError(
                f"Context {self.config.name!r} was embedded with {stored}, but it is configured "
                f"for {current}; vectors of two models cannot be mixed. Run "
                f"'chinvex ingest --context {self.config.name} --full' to re-embed everything."
            )
        db.set_meta(self.conn, "embedder", current)
        db.set_meta(self.conn, "embedding_provider", self._embedder.provider)
        db.set_meta(self.conn, "embedding_model", self._embedder.model)
        self.conn.execute("DELETE FROM meta WHERE key='embedding_dimension'")
        return True

    def _without_segment_damage(self, store: VectorStore) -> VectorStore:
        """The store this run writes to, set aside and replaced by an empty one when its vector
        segment cannot be loaded. Chroma rewrites a segment's files in place, so an ingest killed
        while Chroma saved them leaves them unreadable (SQLite's own files cannot be left so):
        that is what a killed run left, and settling it is this run's job, as for the write
        journal. The old folder is kept; the vectors come back from hybrid.db's rows
        (`_reconcile_vectors`). A damaged `chroma.sqlite3` (never a kill's doing) still stops the
        run with the advice to run `doctor --repair`, and so does a Chroma server's store."""
        if self.config.index.chroma_url:
            return store
        damage = store.segment_damage()
        if damage is None:
            return store
        from chinvex.storage.aside import move_aside_damaged_store

        store.close()
        moved = move_aside_damaged_store(self.config)
        self.summary.warnings.append(SourceMessage(
            source_uri=self.config.name,
            message=f"the vector store's index files could not be loaded (as after a process was "
                    f"killed while Chroma saved them: {damage}); {moved}"))
        fresh = VectorStore.open(self.config, self.conn, create=True)
        assert fresh is not None
        return fresh

    def _reconcile_vectors(self) -> None:
        """Every chunk gets its vector, also when the store was lost or replaced since the last
        run (hybrid.db is the truth; Chroma is derived). Said in the summary when it did work."""
        rec = self.writer.reconcile_vectors(self.config)
        notes: list[str] = []
        if rec.missing:
            healed = rec.missing - rec.unrecoverable
            notes.append(f"the vector store had no vector for {rec.missing} of {rec.chunks} chunks "
                         f"(lost or replaced since they were written); embedded {healed} of them "
                         "again from hybrid.db")
        if rec.orphans:
            notes.append(f"deleted {rec.orphans} vectors that belonged to no chunk")
        if rec.unrecoverable:
            notes.append(f"{rec.unrecoverable} chunks could not be embedded from what is stored; "
                         "their sources are read again by the next 'chinvex ingest'")
        for note in notes:
            self.summary.warnings.append(SourceMessage(source_uri=self.config.name, message=note))

    def _record_embedder(self) -> None:
        dimension = getattr(self._embedder, "dimension", None)
        if dimension and getattr(self.writer, "_embedder", None) is not None:
            db.set_meta(self.conn, "embedding_dimension", str(dimension))

    # -- reporting --------------------------------------------------------------------------

    def _error(self, uri: str, adapter: str | None, message: str) -> None:
        self.summary.sources.errors += 1
        self.summary.errors.append(SourceMessage(source_uri=uri, adapter=adapter, message=message))
        self._decide_log(uri, adapter or "?", "error", "error", message)

    def _decide_log(self, uri: str, adapter: str, action: str, reason: str,
                    detail: str | None = None) -> None:
        decision = Decision(source_uri=uri, adapter=adapter, action=action, reason=reason,
                            detail=detail or None)
        if self.options.verbose:
            self.summary.decisions.append(decision)
        if self.options.progress:
            self.options.progress.decision(decision)


def iter_runs(conn: sqlite3.Connection, limit: int = 1) -> Iterator[dict[str, Any]]:
    for row in conn.execute(
        "SELECT run_id, started_at, finished_at, status, stats_json FROM ingest_runs "
        "ORDER BY started_at DESC LIMIT ?", (limit,)
    ):
        yield {"run_id": row[0], "started_at": row[1], "finished_at": row[2], "status": row[3],
               "stats": orjson.loads(row[4]) if row[4] else None}
