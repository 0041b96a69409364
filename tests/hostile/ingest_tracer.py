"""Run the real `chinvex` CLI with a trace of its write points, so a test can SIGKILL it at a
chosen phase of a write.

    python -m hostile.ingest_tracer TRACE_FILE BATCH [EVENT:N] -- ingest --context X

Nothing is replaced: every traced method runs unchanged, it just appends one line to TRACE_FILE
(unbuffered, O_APPEND) before and after itself. The test process reads the trace and sends
SIGKILL from outside, so the kill lands wherever the ingest is by then, inside Chroma or SQLite
included. BATCH lowers the writer's flush size (chunks per batch) so that even a small corpus is
written in many batches, each with its own Chroma upsert, SQLite transaction, Chroma delete and
fingerprint transaction. EVENT:N makes the process SIGKILL itself at the N-th EVENT, for tests
that need one exact crash point rather than a random one.
"""

from __future__ import annotations

import functools
import os
import signal
import sys


def _tracer(fd: int, kill_at: tuple[str, int] | None):
    seen: dict[str, int] = {}

    def emit(event: str) -> None:
        os.write(fd, (event + "\n").encode())
        seen[event] = seen.get(event, 0) + 1
        if kill_at is not None and kill_at == (event, seen[event]):
            os.kill(os.getpid(), signal.SIGKILL)

    return emit


def _wrap(owner: object, name: str, emit, *, after: bool = True) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def traced(*args, **kwargs):
        emit(f"{name}:start")
        result = original(*args, **kwargs)
        if after:
            emit(f"{name}:end")
        return result

    setattr(owner, name, traced)


def install(trace_path: str, batch: int, kill_at: tuple[str, int] | None = None) -> None:
    from chinvex.ingest import origins, source_ingest
    from chinvex.storage import fingerprints, writer
    from chinvex.storage import pending as journal
    from chinvex.storage import vectors

    fd = os.open(trace_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    emit = _tracer(fd, kill_at)
    defaults = dict(writer.IndexWriter.__init__.__kwdefaults__)
    defaults["max_pending_chunks"] = batch
    defaults["max_pending_docs"] = max(4, batch // 2)
    writer.IndexWriter.__init__.__kwdefaults__ = defaults
    _wrap(source_ingest.SourceIngester, "_consume", emit)      # parsing a source
    _wrap(origins.OriginLedger, "record", emit)            # ledger rows (autocommit)
    _wrap(origins.OriginLedger, "detach", emit)            # removal of a source's documents
    _wrap(writer.IndexWriter, "_embed", emit)              # the embedder
    _wrap(vectors.VectorStore, "upsert", emit)             # 1. Chroma upsert
    _wrap(writer.IndexWriter, "_insert_chunk", emit, after=False)  # 2. inside the SQLite transaction
    _wrap(vectors.VectorStore, "ids_for_docs", emit)       # 3. after the SQLite commit
    _wrap(vectors.VectorStore, "delete", emit)             # 3. Chroma delete
    _wrap(fingerprints, "write", emit, after=False)        # 4. fingerprint transaction
    _wrap(fingerprints, "delete", emit, after=False)
    _wrap(journal, "mark_pending", emit)                   # a source about to be written
    _wrap(journal, "journal_upserts", emit)                # 0. ids about to reach Chroma
    _wrap(writer.IndexWriter, "_adjust_coverage", emit, after=False)  # 2. coverage, in the transaction
    _wrap(writer.IndexWriter, "settle_vector_journal", emit)  # what a killed run left
    _wrap(writer.IndexWriter, "reconcile_vectors", emit)   # the two stores compared, healed
    _wrap(vectors.VectorStore, "all_ids", emit)            # the id listing of a comparison
    emit("ready")


def main() -> None:
    split = sys.argv.index("--")
    own, args = sys.argv[1:split], sys.argv[split + 1:]
    kill_at = None
    if len(own) > 2:
        event, _, nth = own[2].rpartition(":")
        kill_at = (event, int(nth))
    install(own[0], int(own[1]), kill_at)
    from chinvex.cli import main as cli_main

    cli_main(args)


if __name__ == "__main__":
    main()
