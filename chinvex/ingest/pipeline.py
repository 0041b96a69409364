"""`chinvex ingest`: enumerate every source of a context, skip what its fingerprint says is
unchanged, parse → redact → chunk → embed → write the rest, and remove what vanished.

A bad source is an error in the run summary, never the end of the run, and never the loss of
what was indexed from it before.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import orjson

from chinvex.errors import EmbedderMismatchError, StorageError
from chinvex.ingest import fingerprints as fps
from chinvex.ingest import journal, removal
from chinvex.ingest.adapters import adapter as load_adapter
from chinvex.ingest.adapters import adapters_for
from chinvex.ingest.origins import OriginLedger, precedence_of
from chinvex.ingest.prepare import prepare
from chinvex.ingest.summary import Decision, IngestSummary, SourceMessage
from chinvex.ingest.writer import IndexWriter, stored_turns
from chinvex.locking import context_lock
from chinvex.models import ContextConfig, ConversationDoc
from chinvex.sources import AdapterOptions, ParseReport, SkippedSource, SourceCandidate, SourceError
from chinvex.storage import db
from chinvex.storage.access import check_writable
from chinvex.storage.vectors import VectorStore, check_store_file
from chinvex.timeutil import now_iso

HASH_LIMIT_BYTES = 8 * 1024 * 1024
"""Files up to this size get a content hash, so that a `touch` is not mistaken for a change."""

RESUMABLE_REASONS = {
    fps.SIZE_CHANGED, fps.CONTENT_CHANGED, fps.MTIME_CHANGED, fps.THREAD_UPDATED,
    fps.RETRY_AFTER_ERROR,
}
"""Reasons for which an adapter may continue from its saved state (append-aware re-ingest).
Not `chunker_upgraded` nor `embed_model_changed`: those change what every stored turn and chunk
must be (the chunker version includes the redaction switch, and a resumed read keeps the stored
turns as they were: switching redaction on would leave their secrets in the index), or need a
vector from the new model for every chunk; the whole source is parsed again, as for
`full_reingest`."""

ERROR_SKIP_REASONS = {"unreadable"}
"""Skips that are not a choice but a failure: reported as errors, and what was indexed from the
source before is kept (a permission glitch must not wipe it)."""

CONTENT_SKIP_REASONS = {fps.SIZE_CHANGED, fps.CONTENT_CHANGED, fps.MTIME_CHANGED,
                        fps.RETRY_AFTER_ERROR, fps.THREAD_UPDATED, fps.NEW_FILE, fps.NEW_THREAD,
                        fps.INTERRUPTED}
"""Reasons for which a document whose parsed content is unchanged need not be rewritten (a
document row is committed with its chunks, and its vectors before them, so a stored content
hash equal to the parsed one means the document is complete — also after a crash)."""


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


@dataclass
class EnumeratedRoot:
    """One include root and the adapter that enumerated it. `ok` is False when enumeration
    failed: then nothing under it may be taken as deleted."""

    include_key: str
    root: str
    adapter: str
    ok: bool = True


@dataclass
class SourceWork:
    """A source found by enumeration and the adapter that will read it."""

    candidate: SourceCandidate
    adapter: str


def _sha256_file(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _doc_hash(doc: Any, tag: str) -> str:
    return hashlib.sha256(doc.model_dump_json().encode("utf-8", "surrogatepass") + tag.encode()).hexdigest()


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
    from chinvex.storage.vectors import DamagedStoreError, ReadOnlyStoreError

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
    """One ingest of one context under its lock: enumerate the roots, decide per source from its
    fingerprint, parse, prepare and write what changed, remove what vanished, and record the run."""

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

            progress = self.options.progress
            self.writer = IndexWriter(
                conn, open_store, lambda: self._embedder, vectors_reset=vectors_reset,
                on_embedded=progress.embedded if progress else None,
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
                end = getattr(load_adapter(name), "end_run", None)
                report = end(self.adapter_options) if callable(end) else None
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

    # -- enumeration ------------------------------------------------------------------------

    def _roots(self) -> list[EnumeratedRoot]:
        roots: list[EnumeratedRoot] = []
        for key, values in self.config.includes.entries():
            if not isinstance(values, list):
                continue
            for root in values:
                for name in adapters_for(key):
                    roots.append(EnumeratedRoot(include_key=key, root=str(root), adapter=name))
        return roots

    def _enumerate(self) -> tuple[list[EnumeratedRoot], list[SourceWork], dict[str, str]]:
        roots = self._roots()
        chosen: dict[str, tuple[int, SourceWork]] = {}
        skipped_uris: dict[str, str] = {}  # uri -> skip reason
        for order, root in enumerate(roots):
            self.root_adapters.add(root.adapter)
            try:
                adapter = load_adapter(root.adapter)
                items = [self.redactor.source(item)
                         for item in adapter.enumerate(Path(root.root), self.adapter_options)]
            except SourceError as exc:
                root.ok = False
                self._error(root.root, root.adapter, str(exc))
                continue
            except Exception as exc:  # an adapter bug must not end the run
                root.ok = False
                self._error(root.root, root.adapter, f"internal error while listing: {type(exc).__name__}: {exc}")
                continue
            depth = len(Path(root.root).parts)
            for item in items:
                if isinstance(item, SkippedSource) and item.reason in ERROR_SKIP_REASONS:
                    self._error(item.source_uri, root.adapter,
                                f"{item.source_uri}: {item.reason}: {item.detail}".rstrip(": "))
                    self.unreadable.add(item.source_uri)
                    continue
                if isinstance(item, SkippedSource):
                    self.skipped[item.reason] += 1
                    skipped_uris[item.source_uri] = item.reason
                    self._decide_log(item.source_uri, root.adapter, "excluded", item.reason, item.detail)
                    continue
                previous = chosen.get(item.source_uri)
                # A file reachable from two roots is indexed once, by the most specific root.
                if previous is None or depth > previous[0]:
                    # A composite adapter may hand a candidate to another adapter (the Codex
                    # app-server lists threads whose legacy rollout files the JSONL parser reads).
                    chosen[item.source_uri] = (depth, SourceWork(item, item.adapter or root.adapter))
        work = [w for _, w in chosen.values()]
        self.summary.sources.scanned = len(work)
        return roots, work, {uri: why for uri, why in skipped_uris.items() if uri not in chosen}

    # -- one source -------------------------------------------------------------------------

    def _versions(self, adapter_name: str) -> fps.Versions:
        adapter = load_adapter(adapter_name)
        return fps.Versions(adapter.parser_version, self.chunker_version, self._embedder.name)

    def _process(self, item: SourceWork) -> None:
        cand = item.candidate
        fp = self.known.get(cand.source_uri)
        versions = self._versions(item.adapter)
        decision = fps.decide(fp, cand, versions, full=self.options.full,
                              interrupted=cand.source_uri in self.pending)
        content_sha = None
        if decision.verify_content and cand.path is not None:
            content_sha = _sha256_file(cand.path)
            decision = fps.verified(decision, fp, content_sha)
        if decision.refresh_only and fp is not None:
            self.writer.source_done(replace(
                fp, mtime_unix=cand.mtime_unix, mtime_ns=cand.mtime_ns,
                last_ingested_at_unix=fps.now_unix()))
            self.summary.sources.refreshed += 1
            self._decide_log(cand.source_uri, item.adapter, "refreshed", decision.reason,
                             "content unchanged")
            return
        if not decision.ingest:
            self.summary.sources.unchanged += 1
            self._decide_log(cand.source_uri, item.adapter, "skipped", decision.reason)
            return
        self.reasons[decision.reason] += 1
        self._ingest(item, fp, decision.reason, versions, content_sha)

    def _ingest(self, item: SourceWork, fp: fps.Fingerprint | None, reason: str,
                versions: fps.Versions, content_sha: str | None) -> None:
        cand = item.candidate
        adapter = load_adapter(item.adapter)
        resume_state = fp.state if (fp is not None and reason in RESUMABLE_REASONS
                                    and fp.parser_version == versions.parser_version) else None
        produced: list[str] = []
        report = ParseReport()
        # Before the first ledger entry or document: a crash from here on leaves the source
        # pending, and the next run reads it again or removes what it wrote.
        journal.mark_pending(self.conn, cand.source_uri, cand.root, item.adapter)
        try:
            try:
                report = ParseReport()
                produced = self._consume(adapter, cand, report, resume_state, reason)
            except _NeedFullParse:
                report = ParseReport()
                produced = self._consume(adapter, cand, report, None, reason)
        except (sqlite3.Error, StorageError):
            # The index could not be written (a full disk, a file-size limit, a damaged file):
            # not this source's fault, and no later source would fare better. The run stops;
            # the source stays pending, so the next run reads it again.
            raise
        except SourceError as exc:
            self._source_failed(cand, item.adapter, fp, versions, str(exc))
            return
        except OSError as exc:
            self._source_failed(cand, item.adapter, fp, versions,
                                f"{cand.source_uri}: {exc.strerror or exc}")
            return
        except Exception as exc:
            self._source_failed(cand, item.adapter, fp, versions,
                                f"{cand.source_uri}: internal error in adapter {item.adapter}: "
                                f"{type(exc).__name__}: {exc}")
            return

        produced_set = set(produced)
        gone = [d for d in self.ledger.docs_of(cand.source_uri) if d not in produced_set]
        if gone:
            detached = self.ledger.detach(cand.source_uri, gone)
            self.writer.delete_docs(detached.delete_docs)
            self.reingest |= detached.reingest_origins
        for warning in report.warnings:
            self.summary.warnings.append(SourceMessage(source_uri=cand.source_uri,
                                                       adapter=item.adapter, message=warning))
        self.adapter_counts.setdefault(item.adapter, Counter()).update(report.counts)
        if content_sha is None and report.state is None and cand.path is not None \
                and (cand.size_bytes or 0) <= HASH_LIMIT_BYTES:
            content_sha = _sha256_file(cand.path)
        # A fingerprint names its document only when the source has exactly one; a source with
        # none or several (an export) names none, so it never keeps naming a document it lost.
        doc_id = produced[0] if len(produced) == 1 else ""
        self.writer.source_done(fps.Fingerprint(
            source_uri=cand.source_uri, context_name=self.config.name,
            source_type=cand.source_type, doc_id=doc_id or "", size_bytes=cand.size_bytes,
            mtime_unix=cand.mtime_unix, content_sha256=content_sha,
            thread_updated_at=cand.thread_updated_at,
            last_turn_id=(report.state or {}).get("last_turn_id", cand.last_turn_id),
            parser_version=versions.parser_version, chunker_version=versions.chunker_version,
            embedded_model=versions.embedded_model, last_ingested_at_unix=fps.now_unix(),
            last_status="ok", last_error=None, source_root=cand.root, adapter=item.adapter,
            state=self.redactor.value(report.state), mtime_ns=cand.mtime_ns,
        ))
        self.summary.sources.indexed += 1
        self._decide_log(cand.source_uri, item.adapter, "ingested", reason,
                         f"{len(produced)} document(s)" if len(produced) != 1 else None)

    def _consume(self, adapter: Any, cand: SourceCandidate, report: ParseReport,
                 state: dict[str, Any] | None, reason: str) -> list[str]:
        produced: list[str] = []
        tag = f"{self.chunker_version}|{adapter.parser_version}"
        may_skip = reason in CONTENT_SKIP_REASONS
        for doc in adapter.parse(cand, report, state):
            append_from = report.append_from if isinstance(doc, ConversationDoc) else None
            prior = None
            if append_from is not None:
                prior = stored_turns(self.conn, doc.doc_id)
                if len(prior) < append_from:
                    raise _NeedFullParse()
                report.counts["sessions_resumed"] += 1  # only the turns after append_from were read
            content_hash = _doc_hash(doc, tag)
            if doc.doc_id in self.tombstones:
                if self.tombstones[doc.doc_id] == content_hash:
                    report.counts["documents_removed_by_user"] += 1  # `chinvex rm`: stays removed
                    continue
                # Its content changed since it was removed: it is a new document now.
                self.conn.execute("DELETE FROM tombstones WHERE doc_id=?", (doc.doc_id,))
                del self.tombstones[doc.doc_id]
            produced.append(doc.doc_id)
            if not self.ledger.record(doc.doc_id, cand.source_uri, precedence_of(adapter, doc)):
                # Another source holds a better copy of this document (e.g. a newer export).
                report.counts["documents_shadowed"] += 1
                continue
            if append_from is None and may_skip:
                row = self.conn.execute(
                    "SELECT content_hash, origin_uri FROM documents WHERE doc_id=?",
                    (doc.doc_id,)).fetchone()
                if row is not None and row[0] == content_hash and row[1] == cand.source_uri:
                    continue
            prepared = prepare(doc, origin_uri=cand.source_uri, redact=self.redact,
                               stored_turns=prior, append_from=append_from)
            prepared.content_hash = content_hash if append_from is None else prepared.content_hash
            self.redactions.update(prepared.redactions)
            self.writer.add(prepared)
        return produced

    def _source_failed(self, cand: SourceCandidate, adapter: str, fp: fps.Fingerprint | None,
                       versions: fps.Versions, message: str) -> None:
        message = self.redactor.text(message)
        self._error(cand.source_uri, adapter, message)
        if fp is not None:
            failed = replace(fp, last_status="error", last_error=message,
                             last_ingested_at_unix=fps.now_unix())
        else:
            failed = fps.Fingerprint(
                source_uri=cand.source_uri, context_name=self.config.name,
                source_type=cand.source_type, doc_id="", size_bytes=cand.size_bytes,
                mtime_unix=cand.mtime_unix, content_sha256=None,
                thread_updated_at=cand.thread_updated_at, last_turn_id=None,
                parser_version=versions.parser_version, chunker_version=versions.chunker_version,
                embedded_model=versions.embedded_model, last_ingested_at_unix=fps.now_unix(),
                last_status="error", last_error=message, source_root=cand.root, adapter=adapter,
                state=None, mtime_ns=cand.mtime_ns,
            )
        self.writer.source_done(failed)

    # -- removal ----------------------------------------------------------------------------

    def _remove_vanished(self, roots: list[EnumeratedRoot], seen: set[str], skipped: dict[str, str]) -> None:
        """Sources no longer found (deleted, excluded, or whose root left the context) leave
        both stores — except under a root that could not be listed this time (an unmounted
        disk must not wipe an index) or when reported unreadable.

        Besides fingerprinted sources, this covers sources that wrote documents or ledger
        entries without ever being recorded (the run writing them died before their
        fingerprint): nothing else would ever remove those."""
        view = removal.RunView.of(seen, self.unreadable, {r.root for r in roots if not r.ok})
        # The ledger must see this run's writes before deciding what a vanished source took
        # with it (a thread that moved from its rollout file to codex://thread/<id>).
        self.writer.flush()
        fingerprinted = {uri: fp.source_root for uri, fp in self.known.items()}
        for uri in removal.vanished(fingerprinted, view):
            self._remove_source(uri, self.known[uri].adapter, _removal_reason(uri, skipped))
        pending_roots = {uri: p.source_root for uri, p in self.pending.items()}
        untracked = removal.untracked_vanished(self._unrecorded_origins(), fingerprinted,
                                               pending_roots, view)
        for uri in untracked:
            pending = self.pending.get(uri)
            self._remove_source(uri, pending.adapter if pending else None,
                                _removal_reason(uri, skipped),
                                "its documents were written but never recorded")

    def _unrecorded_origins(self) -> set[str]:
        """Sources the index holds documents or ledger entries of but no fingerprint, plus the
        pending ones. Found by SQL over the origin indexes rather than from the journal alone,
        so that indexes written before the journal existed (or fingerprints cleared by
        `doctor --repair`) are covered too; ≈0.15 s for 100k documents."""
        found = set(self.pending)
        for table in ("doc_origins", "documents"):
            found.update(row[0] for row in self.conn.execute(
                f"SELECT DISTINCT o.origin_uri FROM {table} o WHERE o.origin_uri NOT LIKE ? "
                "AND NOT EXISTS (SELECT 1 FROM source_fingerprints f "
                "WHERE f.source_uri = o.origin_uri AND f.context_name = ?)",
                (removal.MEMORY_PREFIX + "%", self.config.name)))
        return found

    def _remove_source(self, uri: str, adapter: str | None, why: str,
                       detail: str | None = None) -> None:
        # Journaled like a write: a run killed between deleting the documents and deleting the
        # fingerprint leaves a pending source (doctor: "interrupted"), which the next run
        # removes again.
        known, pending = self.known.get(uri), self.pending.get(uri)
        root = known.source_root if known is not None else (pending.source_root if pending else None)
        journal.mark_pending(self.conn, uri, root, adapter)
        detached = self.ledger.detach(uri, self.ledger.docs_of(uri))
        self.writer.delete_docs(detached.delete_docs)
        self.reingest |= detached.reingest_origins
        self.writer.source_removed(self.config.name, uri)
        self.summary.sources.removed += 1
        self._decide_log(uri, adapter or "?", "removed", why, detail)

    def _rewrite_from_other_origins(self) -> None:
        """Documents whose writing source went away are rewritten from the best source left."""
        for _ in range(3):  # a rewrite can detach further documents; this converges quickly
            pending, self.reingest = sorted(self.reingest), set()
            if not pending:
                return
            self.writer.flush()
            for uri in pending:
                item = self.work_by_uri.get(uri)
                if item is None:
                    continue
                versions = self._versions(item.adapter)
                self.reasons[fps.ORIGIN_CHANGED] += 1
                self._ingest(item, self.known.get(uri), fps.ORIGIN_CHANGED, versions, None)

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


def _removal_reason(uri: str, skipped: dict[str, str]) -> str:
    """Why a source leaves the index: `excluded` when it, or a folder above it, was skipped by a
    rule this run (an exclude glob added to context.json reports a matching folder once, not
    each file in it) — `generated` when that rule was the generated/data-file one, so the user
    sees why a file they never excluded left — else `vanished`. Walks up the path: O(depth),
    whatever the number of skipped entries."""
    why = skipped.get(uri)
    if why is None and removal._is_path(uri):
        current = uri
        while why is None:
            parent = os.path.dirname(current)
            if parent == current or not parent:
                break
            why = skipped.get(parent)
            current = parent
    if why is None:
        return "vanished"
    return "generated" if why == "generated" else "excluded"


class _NeedFullParse(Exception):
    """The stored turns do not match the adapter's resume point: parse the whole source."""


def iter_runs(conn: sqlite3.Connection, limit: int = 1) -> Iterator[dict[str, Any]]:
    for row in conn.execute(
        "SELECT run_id, started_at, finished_at, status, stats_json FROM ingest_runs "
        "ORDER BY started_at DESC LIMIT ?", (limit,)
    ):
        yield {"run_id": row[0], "started_at": row[1], "finished_at": row[2], "status": row[3],
               "stats": orjson.loads(row[4]) if row[4] else None}
