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
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from chinvex.storage import coverage, pending, transactions, writer_vectors
from chinvex.storage import fingerprints as fps
from chinvex.storage import writer_rows as rows
from chinvex.storage.vectors import VectorStore
from chinvex.storage.writer_batches import Batch, InFlight, Pending, WriteStats
from chinvex.storage.writer_vectors import Reconciled
from chinvex.timeutil import now_iso

if TYPE_CHECKING:
    from chinvex.ingest.prepare import PreparedChunk, PreparedDoc

__all__ = ["IndexWriter", "Reconciled", "WriteStats"]


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
        first_batch_chunks: int | None = None,
        commit_every_s: float | None = None,
    ):
        """`first_batch_chunks`: the first batch's size, doubled for each batch after it up to
        `max_pending_chunks`, so that a long run commits its first documents early (the first
        batch also waits for the model to load) and later batches keep their full size.
        `commit_every_s`: a queue older than this since the last commit is written even when
        not full (slow sources: a kill then loses at most that much work, besides the batch in
        flight). Both off by default."""
        self.conn = conn
        self._store_factory = store
        self._store: VectorStore | None = None
        self._embedder_factory = embedder
        self._embedder: Any = None
        self.vectors_reset = vectors_reset
        self.max_pending_chunks = max_pending_chunks
        self._batch_chunks = (min(first_batch_chunks, max_pending_chunks) if first_batch_chunks
                              else max_pending_chunks)
        """The size at which the queue is written now (see `first_batch_chunks`)."""
        self.commit_every_s = commit_every_s
        self._last_commit = time.monotonic()
        self.max_pending_docs = max_pending_docs
        self.on_embedded = on_embedded
        self.stats = WriteStats()
        self.overlap = overlap
        self._pending = Pending()
        self._in_flight: InFlight | None = None
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

    @property
    def opened_store(self) -> VectorStore | None:
        """The store if this run opened it, else None (without opening it)."""
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
        if len(self._pending.fingerprints) >= self.max_pending_docs or self._due():
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
        self._finish_in_flight()
        return writer_vectors.settle_vector_journal(self)

    def _maybe_flush(self) -> None:
        if (self._pending.chunk_count >= self._batch_chunks
                or len(self._pending.docs) + len(self._pending.delete_doc_ids) >= self.max_pending_docs
                or self._due()):
            self._flush_full()

    def _due(self) -> bool:
        """Whether the queue waited long enough since the last commit (`commit_every_s`) and
        the batch in flight is embedded: writing then never makes the caller wait for the
        embedder, which keeps parsing and embedding overlapped."""
        if self.commit_every_s is None or time.monotonic() - self._last_commit < self.commit_every_s:
            return False
        job = self._in_flight
        if job is not None and job.embedding is not None and not job.embedding.done():
            return False
        return bool(self._pending.docs or self._pending.delete_doc_ids or self._pending.fingerprints)

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
            candidates = rows.ids_with_hashes(self.conn, hashes)
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
        return len(rows.ids_with_hashes(self.conn, hashes, limit=1)) < len(hashes)

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

    def _take_pending(self) -> Pending:
        queued, self._pending = self._pending, Pending()
        return queued

    def _begin(self, queued: Pending) -> None:
        """Finish the batch in flight, then plan this one, journal its vector ids (0) and start
        embedding what the store cannot give back."""
        self._finish_in_flight()
        if not (queued.docs or queued.delete_doc_ids or queued.fingerprints
                or queued.fingerprint_deletes):
            return
        batch = self._plan(queued)
        self._batch_chunks = min(self._batch_chunks * 2, self.max_pending_chunks)
        job = InFlight(queued, batch)
        if batch.need_vector:
            pending.journal_upserts(self.conn, [(cid, batch.new_chunks[cid].embed_hash)
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
        self._last_commit = time.monotonic()

    def _plan(self, queued: Pending) -> Batch:
        """What the queued documents change: their stored chunks, which chunks are new, and
        which need a vector."""
        # The same document may be queued twice in one batch (a thread seen by two adapters):
        # the last one wins.
        docs_by_id: dict[str, PreparedDoc] = {}
        for doc in queued.docs:
            docs_by_id[doc.doc_id] = doc
        docs = list(docs_by_id.values())
        doc_ids = [d.doc_id for d in docs]
        delete_ids = [d for d in dict.fromkeys(queued.delete_doc_ids) if d not in docs_by_id]

        existing = rows.chunks_of(self.conn, doc_ids + delete_ids)
        new_chunks = {c.chunk.chunk_id: c for d in docs for c in d.chunks}
        kept = [cid for cid in new_chunks if cid in existing]
        added = [cid for cid in new_chunks if cid not in existing]
        need_vector, restored = self._needing_vectors(existing, new_chunks, kept, added)
        removed_ids = [cid for cid, row in existing.items() if cid not in new_chunks]
        return Batch(docs, delete_ids, existing, new_chunks, added, need_vector, restored,
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

    def _write_rows(self, batch: Batch) -> None:
        """The documents' rows, chunks and turns, in one transaction with the journal's
        bookkeeping and the coverage figure."""
        conn = self.conn
        with transactions.write(conn):
            for doc_id in batch.delete_ids:
                rows.delete_document(conn, doc_id)
            self.stats.docs_deleted += len(batch.delete_ids)
            for cid in batch.removed_ids:
                rows.delete_chunk(conn, cid)
            pending.journal_removals(conn, batch.removed_ids)
            pending.clear_vectors(conn, batch.need_vector)
            stamp = now_iso()
            for doc in batch.docs:
                rows.write_document(conn, doc, stamp)
                for chunk in doc.chunks:
                    cid = chunk.chunk.chunk_id
                    if cid in batch.existing:
                        self._update_if_changed(chunk, batch.existing[cid])
                    else:
                        self._insert_chunk(chunk)
                if doc.turns is not None:
                    rows.write_turns(conn, doc)
            rebased = self._adjust_coverage(added=len(batch.added), removed=len(batch.removed_ids),
                                            restored=batch.restored)
        self._rebased = self._rebased or rebased
        self.stats.docs_written += len(batch.docs)
        self.stats.chunks_written += len(batch.added)
        self.stats.chunks_deleted += len(batch.removed_ids)

    def _delete_stale_vectors(self, batch: Batch) -> None:
        """Vectors of chunks that left SQLite, plus leftovers of interrupted runs."""
        stale = set(batch.removed_ids)
        touched = [d.doc_id for d in batch.docs] + batch.delete_ids
        if touched and (batch.removed_ids or batch.added or batch.delete_ids):
            stale |= self.store.ids_for_docs(touched) - set(batch.new_chunks)
        if stale:
            self.store.delete(sorted(stale))

    def _write_fingerprints(self, pending_work: Pending, removed_ids: list[str]) -> None:
        """The fingerprints of the sources whose documents are all written (and the removals),
        with their pending-sources entries and the journal entries of the deleted ids."""
        if not (pending_work.fingerprints or pending_work.fingerprint_deletes or removed_ids):
            return
        conn = self.conn
        with transactions.write(conn):
            pending.clear_vectors(conn, removed_ids)
            for fp in pending_work.fingerprints:
                fps.write(conn, fp)
            for context_name, uri in pending_work.fingerprint_deletes:
                fps.delete(conn, context_name, uri)
            pending.clear_pending(conn, [fp.source_uri for fp in pending_work.fingerprints]
                                  + [uri for _, uri in pending_work.fingerprint_deletes])

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
        self._finish_in_flight()
        return writer_vectors.reconcile_vectors(self, config)

    def _insert_chunk(self, p: PreparedChunk) -> None:
        rows.insert_chunk(self.conn, p)

    def _update_if_changed(self, p: PreparedChunk, row: sqlite3.Row) -> None:
        if rows.update_chunk_if_changed(self.conn, p, row):
            self.stats.chunks_updated += 1
