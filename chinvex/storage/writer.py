"""Writes prepared documents into hybrid.db and Chroma in batches.

Order inside a flush, chosen so that a crash at any point converges on the next run:
0. the ids about to be upserted are recorded in `vector_journal` (committed);
1. vectors of new chunk ids, and of kept ids whose embedded text changed (a renamed
   conversation's header), are upserted into Chroma (reused by embed hash where the same text
   was embedded before, embedded otherwise);
2. one SQLite transaction replaces the documents' rows, chunks and turns — so SQLite never
   references a chunk whose vector is missing — drops the upserted ids from the journal (their
   rows own them now) and records the ids of the rows it deletes;
3. vectors of chunk ids that left SQLite (and leftovers of an earlier crash) are deleted;
4. one transaction stores the fingerprints of the sources whose documents are all written,
   drops those sources from `pending_sources`, and drops the deleted ids from the journal.
With `overlap` (the ingest pipeline), a batch that fills up is only begun: its ids are
journalled (0) and its texts handed to a worker thread to embed, while the caller goes on
parsing and chunking the next sources; steps 1 to 4 run when the next batch is begun or at
`flush()`, which leaves nothing in flight. One batch is in flight at most, and only the
embedder runs on the worker: SQLite and Chroma are used from the caller's thread alone, so the
order above is unchanged, and a batch in flight is, to a crash, a batch not yet written.
A crash before 4 leaves the source pending, to be ingested again; its unchanged chunks keep
their ids and vectors, so the retry costs little. A crash between 0 and 3 leaves journal
entries that `settle_vector_journal` (run first by the next ingest) resolves: vectors of ids no
row owns are deleted, owned ids whose vector may be another text's are embedded again.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import orjson

from chinvex.ingest import fingerprints as fps
from chinvex.ingest import journal
from chinvex.ingest.prepare import PreparedChunk, PreparedDoc
from chinvex.models import Turn
from chinvex.storage import coverage, edits
from chinvex.storage.vectors import VectorStore
from chinvex.timeutil import now_iso

_SQL_BATCH = 500
_HEAL_BATCH = 256


@dataclass
class WriteStats:
    docs_written: int = 0
    docs_deleted: int = 0
    chunks_written: int = 0
    chunks_updated: int = 0
    chunks_deleted: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    vectors_repaired: int = 0
    vectors_settled: int = 0
    """Vectors an interrupted write left behind: orphans deleted plus doubtful ones re-embedded."""
    vectors_healed: int = 0
    """Chunks whose vector was missing from the store (lost, replaced), embedded from their rows."""
    orphan_vectors_deleted: int = 0
    """Vectors of no chunk found when the two stores were compared."""


@dataclass(frozen=True)
class Reconciled:
    """What `reconcile_vectors` found and did."""

    chunks: int
    with_vector: int
    compared: bool
    """Whether the id sets were listed and compared (not just the cheap checks)."""
    missing: int = 0
    orphans: int = 0
    unrecoverable: int = 0


@dataclass
class _Pending:
    docs: list[PreparedDoc] = field(default_factory=list)
    delete_doc_ids: list[str] = field(default_factory=list)
    fingerprints: list[fps.Fingerprint] = field(default_factory=list)
    fingerprint_deletes: list[tuple[str, str]] = field(default_factory=list)
    chunk_count: int = 0


@dataclass
class _Batch:
    """One flush worked out before anything is written: the documents to write (the last of
    each id), the ids to delete, their stored chunk rows, and what changes."""

    docs: list[PreparedDoc]
    delete_ids: list[str]
    existing: dict[str, sqlite3.Row]
    """The stored chunk rows of the documents written or deleted, by chunk id."""
    new_chunks: dict[str, PreparedChunk]
    added: list[str]
    """Chunk ids with no row yet."""
    need_vector: list[str]
    restored: int
    """Kept rows whose vector is upserted again (missing, or the store was emptied)."""
    removed_ids: list[str]
    """Stored chunk ids the documents no longer have."""


@dataclass
class _InFlight:
    """A begun batch: planned, its vector ids journalled, the texts to embed on their way."""

    pending: _Pending
    batch: _Batch
    prepared: list[PreparedChunk] = field(default_factory=list)
    """The chunks of `batch.need_vector`, in that order."""
    by_hash: dict[str, Any] = field(default_factory=dict)
    """Vectors reused from the store by embed hash, then the embedded ones."""
    missing: dict[str, str] = field(default_factory=dict)
    """Embed hash -> text of what is being embedded; the other chunks reuse a stored vector."""
    embedding: Future | None = None


def _chunks_of(conn: sqlite3.Connection, doc_ids: list[str]) -> dict[str, sqlite3.Row]:
    rows: dict[str, sqlite3.Row] = {}
    for start in range(0, len(doc_ids), _SQL_BATCH):
        part = doc_ids[start:start + _SQL_BATCH]
        marks = ",".join("?" * len(part))
        for row in conn.execute(
            f"SELECT chunk_id, doc_id, chunk_index, char_start, char_end, line_start, line_end, "
            f"metadata_json, search_text, embed_hash FROM chunks WHERE doc_id IN ({marks})",
            part,
        ):
            rows[row["chunk_id"]] = row
    return rows


REUSE_CANDIDATES = 4
"""Chunk ids looked up per embed hash when a vector may be reused (the first whose vector the
store has is taken). Bounded per hash: a text repeated in thousands of chunks (the same short
message across a chat export's conversations) fetched every one of them for every batch that
repeated it again, so each batch's lookup grew with the index (100,000 such conversations took
146 s to ingest instead of 105 s)."""


def _ids_with_hashes(conn: sqlite3.Connection, hashes: list[str],
                     limit: int = REUSE_CANDIDATES) -> dict[str, list[str]]:
    """Up to `limit` chunk ids (oldest rows first) for each of `hashes` that some chunk has."""
    found: dict[str, list[str]] = {}
    for embed_hash in hashes:
        ids = [row[0] for row in conn.execute(
            "SELECT chunk_id FROM chunks WHERE embed_hash=? ORDER BY rowid LIMIT ?", (embed_hash, limit))]
        if ids:
            found[embed_hash] = ids
    return found


def _metadata_json(chunk: PreparedChunk) -> str:
    return orjson.dumps(chunk.chunk.metadata, option=orjson.OPT_SORT_KEYS, default=str).decode()


class IndexWriter:
    def __init__(
        self,
        conn: sqlite3.Connection,
        store: Callable[[], VectorStore],
        embedder: Callable[[], Any],
        *,
        vectors_reset: bool = False,
        max_pending_chunks: int = 256,
        max_pending_docs: int = 400,
        on_embedded: Callable[[int], None] | None = None,
        overlap: bool = False,
    ):
        self.conn = conn
        self._store_factory = store
        self._store: VectorStore | None = None
        self._embedder_factory = embedder
        self._embedder: Any = None
        self.vectors_reset = vectors_reset
        self.max_pending_chunks = max_pending_chunks
        self.max_pending_docs = max_pending_docs
        self.on_embedded = on_embedded
        self.stats = WriteStats()
        self.overlap = overlap
        self._pending = _Pending()
        self._in_flight: _InFlight | None = None
        self._embedding: Future | None = None
        """The last embedding handed to the worker thread (see wait_in_flight)."""
        self._warming = False
        self._loading: Future | None = None
        """The model load `_warm` began, if any (see _wait_for_load)."""
        self._rebased = False

    @property
    def store(self) -> VectorStore:
        """Opened on first need: a run where nothing changed never pays Chroma's start-up."""
        if self._store is None:
            self._store = self._store_factory()
        return self._store

    # -- queueing ---------------------------------------------------------------------------

    def add(self, doc: PreparedDoc) -> None:
        if self.overlap and not self._warming and self._will_embed(doc):
            self._warm()
        self._pending.docs.append(doc)
        self._pending.chunk_count += len(doc.chunks)
        self._maybe_flush()

    def delete_docs(self, doc_ids: Iterable[str]) -> None:
        self._pending.delete_doc_ids.extend(doc_ids)
        self._maybe_flush()

    def source_done(self, fingerprint: fps.Fingerprint) -> None:
        """Queue a source's fingerprint; it is written after all its documents."""
        self._pending.fingerprints.append(fingerprint)
        if len(self._pending.fingerprints) >= self.max_pending_docs:
            self._flush_full()

    def source_removed(self, context_name: str, source_uri: str) -> None:
        """Queue the removal of a source's fingerprint (and of its pending-sources entry), done
        after the deletion of its documents."""
        self._pending.fingerprint_deletes.append((context_name, source_uri))

    # -- crash recovery ---------------------------------------------------------------------

    def settle_vector_journal(self) -> set[str]:
        """Resolve what an interrupted write left in `vector_journal`, before anything else is
        written: delete the vectors of ids that no chunk row owns (upserted for a batch whose
        SQLite transaction never committed, or whose rows were deleted before Chroma was), and
        embed again, from their stored rows, owned ids whose vector is missing or was upserted
        for another embedded text. Costs one SELECT when the last write finished.

        Returns the origins of documents whose rows no longer yield their embedded text (never
        expected: the hash check of `embed_text_of` failed). Their vectors are deleted, their
        content hash is cleared and they are recorded in `pending_sources`, so the run (which
        loads that journal after this) reads them again and writes the missing vectors."""
        from chinvex.storage import consistency as cons

        self._finish_in_flight()
        entries = journal.load_vector_journal(self.conn)
        if not entries:
            return set()
        reread: set[str] = set()
        if not self.vectors_reset:  # after a reset the collection is empty: nothing to settle
            ids = sorted(entries)
            owned = journal.owned_hashes(self.conn, ids)
            present = self.store.existing(sorted(owned)) if owned else set()
            plan = journal.plan_vector_recovery(entries, owned, present)
            if plan.delete:
                self.store.delete(plan.delete)
            rows = list(cons.iter_chunk_rows(self.conn, plan.reembed)) if plan.reembed else []
            texts = [cons.embed_text_of(row) for row in rows]
            usable = [(row, text) for row, text in zip(rows, texts) if text is not None]
            lost = [row for row, text in zip(rows, texts) if text is None]
            if usable:
                vectors = self._embed([text for _, text in usable])
                self._embedded(len(usable))
                self.stats.chunks_embedded += len(usable)
                self.store.upsert([row["chunk_id"] for row, _ in usable], vectors,
                                  [{"doc_id": row["doc_id"], "source_type": row["source_type"]}
                                   for row, _ in usable])
            if lost:
                self.store.delete([row["chunk_id"] for row in lost])
                for row in lost:
                    origin = self.conn.execute("SELECT origin_uri FROM documents WHERE doc_id=?",
                                               (row["doc_id"],)).fetchone()
                    if origin is not None:
                        reread.add(origin[0])
            self.stats.vectors_settled += len(plan.delete) + len(usable)
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for origin in sorted(reread):
                conn.execute("UPDATE documents SET content_hash=NULL WHERE origin_uri=?", (origin,))
                conn.execute("INSERT OR IGNORE INTO pending_sources(source_uri) VALUES(?)", (origin,))
            journal.clear_vectors(conn, entries)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return reread

    def _maybe_flush(self) -> None:
        if (self._pending.chunk_count >= self.max_pending_chunks
                or len(self._pending.docs) + len(self._pending.delete_doc_ids) >= self.max_pending_docs):
            self._flush_full()

    def _flush_full(self) -> None:
        """A full queue: written now, or with `overlap` begun (see the module docstring)."""
        if self.overlap:
            self._begin(self._take_pending())
        else:
            self.flush()

    # -- flushing ---------------------------------------------------------------------------

    def _embedder_now(self) -> Any:
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    def _embed(self, texts: list[str]):
        """The embedder's work (on the worker thread for a begun batch with `overlap`)."""
        return self._embedder_now().embed_documents(texts)

    def _embedded(self, count: int) -> None:
        """Progress, reported from the caller's thread."""
        if self.on_embedded:
            self.on_embedded(count)

    def _reusable(self, needed: list[PreparedChunk]) -> tuple[dict[str, Any], dict[str, str]]:
        """(vectors already in the store, by embed hash; embed hash -> text of the rest)."""
        by_hash: dict[str, Any] = {}
        hashes = list(dict.fromkeys(c.embed_hash for c in needed))
        if not self.vectors_reset and hashes:
            candidates = _ids_with_hashes(self.conn, hashes)
            wanted_ids = [ids[0] for ids in candidates.values()]
            # Several ids may share a hash; one present vector is enough.
            extra_ids = [cid for ids in candidates.values() for cid in ids[1:]]
            stored = self.store.embeddings(wanted_ids + extra_ids) if candidates else {}
            for embed_hash, ids in candidates.items():
                for cid in ids:
                    if cid in stored:
                        by_hash[embed_hash] = stored[cid]
                        break
        missing: dict[str, str] = {}
        for c in needed:
            if c.embed_hash not in by_hash:
                missing.setdefault(c.embed_hash, c.embed_text)
        return by_hash, missing

    def _embed_later(self, texts: list[str]) -> Future:
        """The texts' vectors, computed on a worker thread with `overlap`, else now. The worker
        is a daemon thread: an interrupted run does not wait for it at exit (the batch is then
        unwritten, as after a crash). Heavy imports happen here, on the caller's thread, so
        the worker imports nothing that the caller may be importing too (chinvex.embedding.heavy_imports)."""
        future: Future = Future()
        if not self._worker_ready():
            future.set_result(self._embed(texts))
            return future

        def work() -> None:
            try:
                future.set_result(self._embed(texts))
            except BaseException as exc:  # handed to the caller's thread, which raises it
                future.set_exception(exc)

        threading.Thread(target=work, name="chinvex-ingest-embed", daemon=True).start()
        self._embedding = future
        return future

    def _worker_ready(self) -> bool:
        """Whether embedding may run on a worker thread: with `overlap`, for an embedder that
        can import its stack on this thread first (`import_stack`, see embedding.base)."""
        if not self.overlap:
            return False
        prepare = getattr(self._embedder_now(), "import_stack", None)
        if not callable(prepare):
            return False
        prepare()
        return True

    def _will_embed(self, doc: PreparedDoc) -> bool:
        """Whether the document has a text no chunk row was embedded from (one indexed lookup):
        a `--full` run with the same model, or a renamed file, reuses every vector and must not
        load the model."""
        hashes = list(dict.fromkeys(c.embed_hash for c in doc.chunks))
        if not hashes:
            return False
        if self.vectors_reset:
            return True
        return len(_ids_with_hashes(self.conn, hashes, limit=1)) < len(hashes)

    def _warm(self) -> None:
        """Load the model on a worker thread as soon as a queued document needs it, so the
        load overlaps the parsing of the first batch instead of delaying its embedding. A
        failure is left for the embedding itself to raise, in the run's own order."""
        self._warming = True
        embedder = self._embedder_now()
        if getattr(embedder, "loaded", True) or not callable(getattr(embedder, "load", None)) \
                or not self._worker_ready():
            return

        loading: Future = Future()

        def work() -> None:
            try:
                embedder.load()
            except BaseException:
                pass
            loading.set_result(None)

        threading.Thread(target=work, name="chinvex-ingest-load", daemon=True).start()
        self._loading = loading

    def flush(self) -> None:
        """Write what is queued and the batch in flight, in the order the module docstring
        gives (0 to 4); nothing is in flight afterwards."""
        self._begin(self._take_pending())
        self._finish_in_flight()
        self._wait_for_load()

    def _wait_for_load(self) -> None:
        """A model load begun by `_warm` ends before the run does, also when nothing needed
        embedding: a process must not tear down the interpreter under a thread still inside
        onnxruntime (it aborts)."""
        if self._loading is not None:
            self._loading.result()

    def wait_in_flight(self) -> None:
        """After a failure: let the last embedding finish, its batch unwritten (as after a
        crash), so that no embedding outlives the run (a watcher's next run uses the same
        embedder)."""
        self._in_flight = None
        if self._embedding is not None:
            try:
                self._embedding.result()
            except BaseException:
                pass
        self._wait_for_load()

    def _take_pending(self) -> _Pending:
        pending, self._pending = self._pending, _Pending()
        return pending

    def _begin(self, pending: _Pending) -> None:
        """Finish the batch in flight, then plan this one, journal its vector ids (0) and start
        embedding what the store cannot give back."""
        self._finish_in_flight()
        if not (pending.docs or pending.delete_doc_ids or pending.fingerprints
                or pending.fingerprint_deletes):
            return
        batch = self._plan(pending)
        job = _InFlight(pending, batch)
        if batch.need_vector:
            journal.journal_upserts(self.conn, [(cid, batch.new_chunks[cid].embed_hash)
                                                for cid in batch.need_vector])
            job.prepared = [batch.new_chunks[cid] for cid in batch.need_vector]
            job.by_hash, job.missing = self._reusable(job.prepared)
            if job.missing:
                job.embedding = self._embed_later(list(job.missing.values()))
        self._in_flight = job

    def _finish_in_flight(self) -> None:
        """Steps 1 to 4 of the batch in flight (see the module docstring)."""
        job, self._in_flight = self._in_flight, None
        if job is None:
            return
        batch = job.batch
        if batch.need_vector:  # 1. vectors first
            store = self.store  # opened (the first time) while the worker embeds
            if job.embedding is not None:
                vectors = job.embedding.result()
                for embed_hash, vector in zip(job.missing, vectors):
                    job.by_hash[embed_hash] = vector
                self._embedded(len(job.missing))
            self.stats.chunks_embedded += len(job.missing)
            self.stats.chunks_reused += sum(1 for c in job.prepared if c.embed_hash not in job.missing)
            doc_types = {d.doc_id: d.source_type for d in batch.docs}
            store.upsert(batch.need_vector, [job.by_hash[p.embed_hash] for p in job.prepared],
                         [{"doc_id": p.chunk.doc_id, "source_type": doc_types[p.chunk.doc_id]}
                          for p in job.prepared])
        self._write_rows(batch)  # 2. SQLite, one transaction
        self._delete_stale_vectors(batch)  # 3. vectors that left SQLite
        self._write_fingerprints(job.pending, batch.removed_ids)  # 4. fingerprints last

    def _plan(self, pending: _Pending) -> _Batch:
        """What the queued documents change: their stored chunks, which chunks are new, and
        which need a vector."""
        # The same document may be queued twice in one batch (a thread seen by two adapters):
        # the last one wins.
        docs_by_id: dict[str, PreparedDoc] = {}
        for doc in pending.docs:
            docs_by_id[doc.doc_id] = doc
        docs = list(docs_by_id.values())
        doc_ids = [d.doc_id for d in docs]
        delete_ids = [d for d in dict.fromkeys(pending.delete_doc_ids) if d not in docs_by_id]

        existing = _chunks_of(self.conn, doc_ids + delete_ids)
        new_chunks = {c.chunk.chunk_id: c for d in docs for c in d.chunks}
        kept = [cid for cid in new_chunks if cid in existing]
        added = [cid for cid in new_chunks if cid not in existing]
        need_vector, restored = self._needing_vectors(existing, new_chunks, kept, added)
        removed_ids = [cid for cid, row in existing.items() if cid not in new_chunks]
        return _Batch(docs, delete_ids, existing, new_chunks, added, need_vector, restored,
                      removed_ids)

    def _needing_vectors(
        self, existing: dict[str, sqlite3.Row], new_chunks: dict[str, PreparedChunk],
        kept: list[str], added: list[str],
    ) -> tuple[list[str], int]:
        """(chunk ids to upsert a vector for, how many of them are kept rows getting theirs
        back)."""
        if self.vectors_reset:
            return list(new_chunks), len(kept)  # the store was emptied: kept rows get theirs again
        # Same id, other embedded text (the id hashes the chunk text, not its header): the
        # stored vector describes the old text.
        reembedded = [cid for cid in kept
                      if existing[cid]["embed_hash"] != new_chunks[cid].embed_hash]
        unchanged = [cid for cid in kept if existing[cid]["embed_hash"] == new_chunks[cid].embed_hash]
        present = self.store.existing(unchanged) if unchanged else set()
        repaired = [cid for cid in unchanged if cid not in present]
        self.stats.vectors_repaired += len(repaired)
        return added + reembedded + repaired, len(repaired)

    def _write_rows(self, batch: _Batch) -> None:
        """The documents' rows, chunks and turns, in one transaction with the journal's
        bookkeeping and the coverage figure."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for doc_id in batch.delete_ids:
                conn.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
            self.stats.docs_deleted += len(batch.delete_ids)
            for cid in batch.removed_ids:
                conn.execute("DELETE FROM chunks WHERE chunk_id=?", (cid,))
            journal.journal_removals(conn, batch.removed_ids)
            journal.clear_vectors(conn, batch.need_vector)
            stamp = now_iso()
            for doc in batch.docs:
                self._write_document(doc, stamp)
                for chunk in doc.chunks:
                    cid = chunk.chunk.chunk_id
                    if cid in batch.existing:
                        self._update_if_changed(chunk, batch.existing[cid])
                    else:
                        self._insert_chunk(chunk)
                if doc.turns is not None:
                    self._write_turns(doc)
            rebased = self._adjust_coverage(added=len(batch.added), removed=len(batch.removed_ids),
                                            restored=batch.restored)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._rebased = self._rebased or rebased
        self.stats.docs_written += len(batch.docs)
        self.stats.chunks_written += len(batch.added)
        self.stats.chunks_deleted += len(batch.removed_ids)

    def _delete_stale_vectors(self, batch: _Batch) -> None:
        """Vectors of chunks that left SQLite, plus leftovers of interrupted runs."""
        stale = set(batch.removed_ids)
        touched = [d.doc_id for d in batch.docs] + batch.delete_ids
        if touched and (batch.removed_ids or batch.added or batch.delete_ids):
            stale |= self.store.ids_for_docs(touched) - set(batch.new_chunks)
        if stale:
            self.store.delete(sorted(stale))

    def _write_fingerprints(self, pending: _Pending, removed_ids: list[str]) -> None:
        """The fingerprints of the sources whose documents are all written (and the removals),
        with their pending-sources entries and the journal entries of the deleted ids."""
        if not (pending.fingerprints or pending.fingerprint_deletes or removed_ids):
            return
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            journal.clear_vectors(conn, removed_ids)
            for fp in pending.fingerprints:
                fps.write(conn, fp)
            for context_name, uri in pending.fingerprint_deletes:
                fps.delete(conn, context_name, uri)
            journal.clear_pending(conn, [fp.source_uri for fp in pending.fingerprints]
                                  + [uri for _, uri in pending.fingerprint_deletes])
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    # -- vector coverage --------------------------------------------------------------------

    def _adjust_coverage(self, *, added: int, removed: int, restored: int) -> bool:
        """Keep `meta.vector_coverage` current inside the batch's transaction (every added row
        comes with its vector). A store this writer created or emptied holds nothing older
        than its writes: the figure is then rebased on it. Returns whether it rebased."""
        store = self._store
        if store is not None and store.fresh and not self._rebased:
            before = coverage.chunk_count(self.conn) - added + removed
            coverage.record(self.conn, coverage.adjusted(
                coverage.measured(before, 0, None), added=added, removed=removed,
                restored=restored, store=store.identity(self.conn)))
            return True
        previous = coverage.vector_coverage(self.conn)
        if previous is not None:  # never measured: the next reconciliation measures it
            coverage.record(self.conn, coverage.adjusted(previous, added=added, removed=removed,
                                                         restored=restored))
        return False

    def reconcile_vectors(self, config: Any) -> Reconciled:
        """Make the store hold a vector for every chunk row and nothing else, and record the
        coverage. Cheap when nothing can have changed: a no-change run whose recorded coverage
        is complete, for as many chunks as there are, on the store that is there now
        (`coverage.store_identity`: same file, still SQLite), does not even open Chroma; a run
        that wrote compares counts. The id sets are listed (in pages) and compared only when
        the figure is short, the counts differ, or the store was lost, replaced or never
        measured; then orphans are deleted and missing vectors embedded from the stored rows.

        Rows whose stored text no longer matches its hash (never expected) cannot be embedded:
        their sources are scheduled to be read again by the next run, as `settle_vector_journal`
        does."""
        from chinvex.storage import consistency as cons
        from chinvex.storage.db import get_meta

        self._finish_in_flight()
        conn = self.conn
        total = coverage.chunk_count(conn)
        recorded = coverage.vector_coverage(conn)
        if total == 0 and self._store is None and get_meta(conn, coverage.COLLECTION_META_KEY) is None:
            coverage.record(conn, coverage.measured(0, 0, None))
            return Reconciled(chunks=0, with_vector=0, compared=False)
        identity = coverage.store_identity(config, conn)
        token_now = coverage.gate_token(config)
        trusted = (recorded is not None and recorded.complete and recorded.chunks == total
                   and identity is not None and recorded.store == identity)
        if trusted and self._store is None and recorded is not None \
                and recorded.token == token_now:
            return Reconciled(chunks=total, with_vector=total, compared=False)
        # A figure taken at a known token that is no longer the store's: the store was written
        # behind the figure's back (a crash between the Chroma write and the SQLite commit, or
        # a backup copied over the folder, which often gets the old file's inode). Equal counts
        # prove nothing then; only comparing the ids does.
        moved_on = recorded is not None and recorded.token is not None and recorded.token != token_now
        store = self.store
        if trusted and not moved_on and store.count() == total:
            coverage.record(conn, coverage.measured(total, total, store.identity(conn),
                                                    coverage.gate_token(config)))
            return Reconciled(chunks=total, with_vector=total, compared=False)
        in_chroma = store.all_ids()
        in_sqlite = cons.chunk_ids(conn)
        orphans = sorted(in_chroma - in_sqlite)
        missing = sorted(in_sqlite - in_chroma)
        if orphans:
            store.delete(orphans)
            self.stats.orphan_vectors_deleted += len(orphans)
        embedded, lost = 0, []
        for start in range(0, len(missing), _HEAL_BATCH):
            rows = list(cons.iter_chunk_rows(conn, missing[start:start + _HEAL_BATCH]))
            usable = [(row, cons.embed_text_of(row)) for row in rows]
            lost += [row for row, text in usable if text is None]
            usable = [(row, text) for row, text in usable if text is not None]
            if not usable:
                continue
            vectors = self._embed([text for _, text in usable])
            self._embedded(len(usable))
            store.upsert([row["chunk_id"] for row, _ in usable], vectors,
                         [{"doc_id": row["doc_id"], "source_type": row["source_type"]}
                          for row, _ in usable])
            embedded += len(usable)
        self.stats.vectors_healed += embedded
        self.stats.chunks_embedded += embedded
        if lost:
            self._schedule_reread({row["doc_id"] for row in lost})
        with_vector = total - (len(missing) - embedded)
        coverage.record(conn, coverage.measured(total, with_vector, store.identity(conn),
                                                coverage.gate_token(config)))
        return Reconciled(chunks=total, with_vector=with_vector, compared=True,
                          missing=len(missing), orphans=len(orphans), unrecoverable=len(lost))

    def _schedule_reread(self, doc_ids: set[str]) -> None:
        """The next run reads these documents' sources again and rewrites them (their chunks'
        stored text cannot give back what was embedded)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for doc_id in sorted(doc_ids):
                row = conn.execute("SELECT origin_uri FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
                conn.execute("UPDATE documents SET content_hash=NULL WHERE doc_id=?", (doc_id,))
                if row is not None:
                    conn.execute("INSERT OR IGNORE INTO pending_sources(source_uri) VALUES(?)", (row[0],))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _write_document(self, doc: PreparedDoc, stamp: str) -> None:
        self.conn.execute(
            """INSERT INTO documents(doc_id, source_type, source_uri, title, created_at, updated_at,
                   metadata_json, indexed_at, origin_uri, content_hash)
               VALUES(?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT(doc_id) DO UPDATE SET source_type=excluded.source_type,
                   source_uri=excluded.source_uri, title=excluded.title,
                   created_at=excluded.created_at, updated_at=excluded.updated_at,
                   metadata_json=excluded.metadata_json, indexed_at=excluded.indexed_at,
                   origin_uri=excluded.origin_uri, content_hash=excluded.content_hash""",
            (doc.doc_id, doc.source_type, doc.source_uri, doc.title, doc.created_at,
             doc.updated_at, orjson.dumps(doc.metadata, default=str).decode(), stamp,
             doc.origin_uri, doc.content_hash),
        )

    def _insert_chunk(self, p: PreparedChunk) -> None:
        c = p.chunk
        self.conn.execute(
            """INSERT INTO chunks(chunk_id, doc_id, chunk_index, text, search_text, embed_hash,
                   char_start, char_end, line_start, line_end, metadata_json)
               VALUES(?,?,?,?,?,?,?,?,?,?,?)""",
            (c.chunk_id, c.doc_id, c.chunk_index, c.text, p.search_text, p.embed_hash,
             c.char_start, c.char_end, c.line_start, c.line_end, _metadata_json(p)),
        )

    def _update_if_changed(self, p: PreparedChunk, row: sqlite3.Row) -> None:
        c = p.chunk
        meta = _metadata_json(p)
        if (row["char_start"], row["char_end"], row["line_start"], row["line_end"],
                row["metadata_json"], row["search_text"], row["embed_hash"]) == (
                c.char_start, c.char_end, c.line_start, c.line_end, meta, p.search_text,
                p.embed_hash):
            return
        self.conn.execute(
            """UPDATE chunks SET char_start=?, char_end=?, line_start=?, line_end=?,
                   metadata_json=?, search_text=?, embed_hash=? WHERE chunk_id=?""",
            (c.char_start, c.char_end, c.line_start, c.line_end, meta, p.search_text,
             p.embed_hash, c.chunk_id),
        )
        self.stats.chunks_updated += 1

    def _write_turns(self, doc: PreparedDoc) -> None:
        assert doc.turns is not None
        self.conn.execute(
            "DELETE FROM conversation_turns WHERE doc_id=? AND turn_index>=?",
            (doc.doc_id, doc.turns_from),
        )
        self.conn.executemany(
            "INSERT INTO conversation_turns(doc_id, turn_index, turn_json) VALUES(?,?,?)",
            [(doc.doc_id, index, turn.model_dump_json())
             for index, turn in enumerate(doc.turns) if index >= doc.turns_from],
        )
        edits.record(self.conn, doc.doc_id, doc.turns, doc.turns_from, doc.updated_at)


def stored_turns(conn: sqlite3.Connection, doc_id: str) -> list[Turn]:
    rows = conn.execute(
        "SELECT turn_json FROM conversation_turns WHERE doc_id=? ORDER BY turn_index", (doc_id,)
    )
    return [Turn.model_validate_json(row[0]) for row in rows]
