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
from pathlib import Path

from chinvex.errors import EmbedderMismatchError, StorageError
from chinvex.ingest.adapters import adapter as load_adapter
from chinvex.ingest.enumeration import RootEnumerator
from chinvex.ingest.origins import OriginLedger
from chinvex.ingest.run_state import IngestOptions, ProgressSink, RunState
from chinvex.ingest.source_ingest import SourceIngester
from chinvex.ingest.summary import IngestSummary, SourceMessage
from chinvex.ingest.vanished import VanishedSweeper
from chinvex.locking import context_lock
from chinvex.models import ContextConfig
from chinvex.models.sources import AdapterOptions
from chinvex.storage import db, runs
from chinvex.storage import fingerprints as fingerprint_rows
from chinvex.storage import pending as pending_rows
from chinvex.storage import tombstones as tombstone_rows
from chinvex.storage.access import check_writable
from chinvex.storage.vector_open import check_store_file
from chinvex.storage.vectors import VectorStore
from chinvex.storage.writer import IndexWriter
from chinvex.timeutil import now_iso

FIRST_BATCH_CHUNKS = 16
"""The first write batch of a run, doubled batch by batch up to the writer's full size: a run
killed a few seconds after it began keeps the documents written so far."""
COMMIT_EVERY_S = 4.0
"""Documents queued this long after the last commit are written without waiting for a full
batch (sources that are slow to read)."""

__all__ = ["IngestOptions", "IngestRun", "ProgressSink", "run_ingest", "run_ingest_locked",
           "write_failure"]


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
        return IngestRun(config, conn, options).run()
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


class IngestRun:
    """One ingest of one context under its lock: enumerate the roots (RootEnumerator), decide per
    source from its fingerprint, parse, prepare and write what changed (SourceIngester), remove
    what vanished (VanishedSweeper), and record the run (here). The parts share one RunState."""

    def __init__(self, config: ContextConfig, conn: sqlite3.Connection, options: IngestOptions):
        from chinvex.chunking import CHUNKER_VERSION
        from chinvex.embedding.factory import make_embedder
        from chinvex.redaction import REDACTION_VERSION, Redactor

        redact = config.redaction is None or config.redaction.enabled
        redaction_tag = REDACTION_VERSION if redact else "redaction-off"
        embedder = (options.embedder_factory or (lambda: make_embedder(config.embedding)))()
        summary = IngestSummary(run_id=uuid.uuid4().hex, context=config.name,
                                started_at=now_iso(), full=options.full)
        summary.embedder = embedder.name
        self.state = RunState(
            config=config, conn=conn, options=options, summary=summary,
            redactor=Redactor(redact), redact=redact,
            chunker_version=f"{CHUNKER_VERSION}+{redaction_tag}", embedder=embedder,
            adapter_options=AdapterOptions(context_name=config.name, excludes=list(config.excludes),
                                           settings=config.model_dump(mode="json")),
            ledger=OriginLedger(conn), tombstones=tombstone_rows.hashes(conn),
        )
        self.enumerator = RootEnumerator(self.state)
        self.ingester = SourceIngester(self.state)
        self.sweeper = VanishedSweeper(self.state, self.ingester)

    # -- run --------------------------------------------------------------------------------

    def run(self) -> IngestSummary:
        state = self.state
        runs.start(state.conn, state.summary.run_id, state.config.name, state.summary.started_at)
        try:
            check_store_file(state.config)
            state.writer = self._open_writer(self._check_embedder())
            # What an interrupted run left half-written is settled before anything is decided.
            state.writer.settle_vector_journal()
            state.pending = pending_rows.load_pending(state.conn)
            state.known = fingerprint_rows.load_all(state.conn, state.config.name)
            self._ingest_sources()
            state.writer.flush()
            self._reconcile_vectors()
            self._record_embedder()
            state.summary.status = "completed_with_errors" if state.summary.errors else "completed"
        except BaseException as exc:
            if state.writer is not None and not isinstance(exc, KeyboardInterrupt):
                state.writer.wait_in_flight()  # unwritten, as after a crash; nothing outlives the run
            state.summary.status = "failed"
            state.summary.errors.append(SourceMessage(source_uri=state.config.name, message=str(exc)))
            raise
        finally:
            self._end_adapters()
            self._finish()
        return state.summary

    def _open_writer(self, vectors_reset: bool) -> IndexWriter:
        """The run's writer; its vector store opens on first need (dropped first when the
        vectors of another model are being replaced)."""
        state = self.state

        def open_store() -> VectorStore:
            store = VectorStore.open(state.config, state.conn, create=True)
            assert store is not None
            if vectors_reset:
                store.drop()
                return store
            return self._without_segment_damage(store)

        progress = state.options.progress
        writer = IndexWriter(
            state.conn, open_store, lambda: state.embedder, vectors_reset=vectors_reset,
            on_embedded=progress.embedded if progress else None, overlap=True,
            first_batch_chunks=FIRST_BATCH_CHUNKS, commit_every_s=COMMIT_EVERY_S,
        )
        if vectors_reset:
            _ = writer.store  # drop the other model's vectors now, not on first write
        return writer

    def _ingest_sources(self) -> None:
        """Every source enumerated, read or skipped; then what vanished is removed and what
        another source gave up is rewritten."""
        state = self.state
        roots, work, skipped_uris = self.enumerator.enumerate()
        progress = state.options.progress
        if progress:
            progress.start(len(work))
        seen: set[str] = set()
        state.work_by_uri = {item.candidate.source_uri: item for item in work}
        for item in work:
            seen.add(item.candidate.source_uri)
            self.ingester.process(item)
            if progress:
                progress.advance(item.candidate.source_uri)
        self.sweeper.remove_vanished(roots, seen, skipped_uris)
        self.sweeper.rewrite_from_other_origins()

    def _end_adapters(self) -> None:
        """Adapters that hold something for the length of a run (the Codex app-server child)
        release it here, and report what they can only say about a whole root: errors (a server
        that kept dying), warnings (put first: one line about a root outweighs many about its
        sources), counts, and in verbose mode which path each Codex thread took."""
        state, summary = self.state, self.state.summary
        notes: list[SourceMessage] = []
        for name in sorted(state.root_adapters):
            try:
                report = load_adapter(name).end_run(state.adapter_options)
            except Exception as exc:  # finishing must never fail a run
                notes.append(SourceMessage(source_uri=name, adapter=name, message=(
                    f"adapter {name} failed to finish the run: {type(exc).__name__}: {exc}")))
                continue
            if not report:
                continue
            for uri, message in report.get("warnings") or ():
                notes.append(SourceMessage(source_uri=uri, adapter=name, message=message))
            for uri, message in report.get("errors") or ():
                summary.errors.append(SourceMessage(source_uri=uri, adapter=name, message=message))
            state.adapter_counts.setdefault(name, Counter()).update(report.get("counts") or {})
            summary.readers.update(report.get("readers") or {})
            if state.options.verbose:
                summary.paths.update(report.get("paths") or {})
        summary.warnings[0:0] = notes
        if summary.status == "completed" and summary.errors:
            summary.status = "completed_with_errors"

    def _finish(self) -> None:
        state, s = self.state, self.state.summary
        s.finished_at = now_iso()
        s.duration_s = round(time.monotonic() - state.started, 3)
        s.sources.skipped = dict(sorted(state.skipped.items()))
        s.sources.reasons = dict(sorted(state.reasons.items()))
        s.redactions = dict(sorted(state.redactions.items()))
        s.adapter_counts = {k: dict(sorted(v.items())) for k, v in sorted(state.adapter_counts.items()) if v}
        if state.writer is not None:
            self._write_counts(state.writer)
        if state.options.progress:
            state.options.progress.finish()
        stats = state.redactor.value(s.model_dump(mode="json", exclude={"decisions"}))
        try:
            runs.finish(state.conn, s.run_id, s.finished_at, s.status, stats)
        except sqlite3.Error:
            pass

    def _write_counts(self, writer: IndexWriter) -> None:
        """The writer's counters and the recorded vector coverage, into the summary."""
        from chinvex.storage.coverage import vector_coverage

        s, st = self.state.summary, writer.stats
        s.documents = {"written": st.docs_written, "removed": st.docs_deleted}
        s.chunks = {"written": st.chunks_written, "updated": st.chunks_updated,
                    "deleted": st.chunks_deleted, "embedded": st.chunks_embedded,
                    "reused": st.chunks_reused, "vectors_repaired": st.vectors_repaired,
                    "vectors_settled": st.vectors_settled,
                    "vectors_healed": st.vectors_healed,
                    "orphan_vectors_deleted": st.orphan_vectors_deleted}
        try:
            recorded = vector_coverage(self.state.conn)
        except sqlite3.Error:
            recorded = None
        if recorded is not None:
            s.chunks["total"] = recorded.chunks
            s.chunks["with_vector"] = recorded.with_vector

    # -- embedder consistency ---------------------------------------------------------------

    def _check_embedder(self) -> bool:
        """True when vectors must be rebuilt (another model, with --full)."""
        state, embedder = self.state, self.state.embedder
        stored = db.get_meta(state.conn, "embedder")
        current = embedder.name
        if stored is None or stored == current:
            runs.record_embedder(state.conn, current, embedder.provider, embedder.model)
            return False
        if not state.options.full:
            raise EmbedderMismatchError(
                f"Context {state.config.name!r} was embedded with {stored}, but it is configured "
                f"for {current}; vectors of two models cannot be mixed. Run "
                f"'chinvex ingest --context {state.config.name} --full' to re-embed everything."
            )
        runs.record_embedder(state.conn, current, embedder.provider, embedder.model, switched=True)
        return True

    def _without_segment_damage(self, store: VectorStore) -> VectorStore:
        """The store this run writes to, set aside and replaced by an empty one when its vector
        segment cannot be loaded or gives back garbage (chinvex.storage.vector_probe). Chroma
        rewrites a segment's files in place, so an ingest killed while Chroma saved them leaves
        them unreadable, and bytes written over them from outside (noticed by a no-change
        ingest through their stat signature, chinvex.storage.vector_signature) do the same:
        settling it is this run's job, as for the write journal. The old folder is kept; the
        vectors come back from hybrid.db's rows (`_reconcile_vectors`). A damaged
        `chroma.sqlite3` (never a kill's doing) still stops the run with the advice to run
        `doctor --repair`, and so does a Chroma server's store."""
        from chinvex.storage.vector_probe import unreadable_vectors
        from chinvex.storage.vector_signature import files_unchanged

        config = self.state.config
        if config.index.chroma_url:
            return store
        # strict where the files changed behind chinvex's back; lenient on its own last writes
        strict = not files_unchanged(config, self.state.conn)
        damage = store.segment_damage() or unreadable_vectors(store, self.state.conn, strict=strict)
        if damage is None:
            return store
        from chinvex.storage.aside import move_aside_damaged_store

        store.close()
        moved = move_aside_damaged_store(config)
        self.state.store_set_aside = (
            f"the vector store was unreadable: its index files could not be loaded or gave back "
            f"garbage ({damage}), as after a process was killed while Chroma saved them or bytes "
            f"were written over them; {moved}")
        fresh = VectorStore.open(config, self.state.conn, create=True)
        assert fresh is not None
        return fresh

    def _reconcile_vectors(self) -> None:
        """Every chunk gets its vector, also when the store was lost, replaced or set aside since
        the last run (hybrid.db is the truth; Chroma is derived). Said in the summary when it
        did work; a store set aside and rebuilt is said in one line."""
        from chinvex.storage.vector_signature import record_signature

        config = self.state.config
        rec = self.state.out.reconcile_vectors(config)
        record_signature(config, self.state.conn)
        # The store's vector matrix, which searches read instead of Chroma's index
        from chinvex.storage.vector_matrix_refresh import refresh

        refresh(config, self.state.conn, self.state.out.opened_store)
        notes: list[str] = []
        if self.state.store_set_aside is not None:
            notes.append(f"{self.state.store_set_aside} ({rec.with_vector} vectors)")
        elif rec.missing:
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
            self.state.summary.warnings.append(SourceMessage(source_uri=config.name, message=note))

    def _record_embedder(self) -> None:
        dimension = getattr(self.state.embedder, "dimension", None)
        if dimension and getattr(self.state.writer, "_embedder", None) is not None:
            db.set_meta(self.state.conn, "embedding_dimension", str(dimension))
