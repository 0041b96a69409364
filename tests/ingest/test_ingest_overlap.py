"""The ingest writer embeds a full batch on a worker thread while the next sources are parsed
(chinvex.storage.writer, `overlap`), and whatever the writer raises (an embedder that stops
working, possibly for a batch of other sources still in flight) stops the run instead of
failing the source being parsed at that moment.

The embedder is the real built-in model, wrapped to observe or to fail at a chosen call; the
writer's batch is made small (8 chunks) so that a few dozen notes are written in many batches.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from chinvex.errors import EmbedderError

NOTES = 40


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(NOTES):
        (root / f"note{i:02d}.md").write_text(
            f"# Note {i}\n\nThe deployment checklist item {i} covers topic {i % 5} of the rollout.\n")
    return root


@pytest.fixture
def small_batches(monkeypatch):
    from chinvex.storage import writer

    defaults = dict(writer.IndexWriter.__init__.__kwdefaults__)
    defaults.update(max_pending_chunks=8, max_pending_docs=8)
    monkeypatch.setattr(writer.IndexWriter.__init__, "__kwdefaults__", defaults)


def _context(root: Path):
    from chinvex.context.registry import Registry

    registry = Registry()
    registry.create("Ov", includes={"note_roots": [str(root)]})
    return registry.resolve("Ov")


class _Observed:
    """The real built-in embedder, recording on which thread each batch is embedded and how
    many documents the run had prepared by the time the first batch finished embedding."""

    def __init__(self, prepared: list[int], hold_first: bool):
        from chinvex.embedding.builtin import BuiltinEmbedder

        self.inner = BuiltinEmbedder()
        self.prepared = prepared
        self.hold_first = hold_first
        self.threads: list[str] = []
        self.prepared_when_first_done: int | None = None

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_documents(self, texts):
        self.threads.append(threading.current_thread().name)
        first = len(self.threads) == 1
        seen = self.prepared[0]
        vectors = self.inner.embed_documents(texts)
        if first and self.hold_first:
            # Give the caller's thread time to prepare more documents, if it is free to: with
            # the overlap it is; embedding on the caller's thread, nothing moves meanwhile.
            pause = threading.Event()  # never set: a 50 ms sleep that reads as one
            for _ in range(100):
                if self.prepared[0] > seen:
                    break
                pause.wait(0.05)
        if first:
            self.prepared_when_first_done = self.prepared[0]
        return vectors


def _count_prepare(monkeypatch) -> list[int]:
    from chinvex.ingest import source_ingest

    count = [0]
    original = source_ingest.prepare

    def counted(*args, **kwargs):
        count[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(source_ingest, "prepare", counted)
    return count


def _vector_count(config) -> int:
    from chinvex.storage import db
    from chinvex.storage.vectors import VectorStore

    conn = db.connect(Path(config.index.sqlite_path))
    try:
        store = VectorStore.open(config, conn, create=False)
        return store.count()
    finally:
        conn.close()


def test_a_batch_is_embedded_while_the_next_sources_are_parsed(chinvex_home: Path, notes: Path,
                                                             small_batches, monkeypatch):
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    prepared = _count_prepare(monkeypatch)
    observed = _Observed(prepared, hold_first=True)
    config = _context(notes)
    summary = run_ingest(config, IngestOptions(embedder_factory=lambda: observed))
    assert summary.status == "completed", summary.errors
    assert summary.chunks["embedded"] == NOTES
    assert set(observed.threads) == {"chinvex-ingest-embed"}, observed.threads
    # The first batch (8 notes) was still being embedded when later notes were prepared.
    assert observed.prepared_when_first_done is not None and observed.prepared_when_first_done > 8
    with sqlite3.connect(config.index.sqlite_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == NOTES
        assert conn.execute("SELECT COUNT(*) FROM vector_journal").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM pending_sources").fetchone()[0] == 0
    assert _vector_count(config) == NOTES


def test_an_embedder_without_import_stack_runs_on_the_callers_thread(chinvex_home: Path, notes: Path,
                                                                    small_batches, monkeypatch):
    """A third-party embedder that cannot import its stack ahead is never run on a worker
    thread (two threads importing one package can deadlock, see chinvex.embedding.heavy_imports)."""
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    prepared = _count_prepare(monkeypatch)
    observed = _Observed(prepared, hold_first=False)

    class Plain:
        name, provider, model, dimension = (observed.inner.name, observed.inner.provider,
                                            observed.inner.model, observed.inner.dimension)

        def embed_documents(self, texts):
            return observed.embed_documents(texts)

        def embed_query(self, text):
            return observed.inner.embed_query(text)

    summary = run_ingest(_context(notes), IngestOptions(embedder_factory=Plain))
    assert summary.status == "completed", summary.errors
    assert set(observed.threads) == {threading.main_thread().name}
    assert observed.prepared_when_first_done == 8  # nothing was parsed while it embedded


class _FailsOnCall:
    def __init__(self, call: int):
        from chinvex.embedding.builtin import BuiltinEmbedder

        self.inner = BuiltinEmbedder()
        self.call = call
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_documents(self, texts):
        self.calls += 1
        if self.calls == self.call:
            raise EmbedderError("the embedding server went away")
        return self.inner.embed_documents(texts)


def test_an_embedder_failure_mid_run_stops_the_run_and_fails_no_source(chinvex_home: Path, notes: Path,
                                                                      small_batches):
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    config = _context(notes)
    with pytest.raises(EmbedderError, match="the embedding server went away"):
        run_ingest(config, IngestOptions(embedder_factory=lambda: _FailsOnCall(2)))
    with sqlite3.connect(config.index.sqlite_path) as conn:
        statuses = dict(conn.execute(
            "SELECT last_status, COUNT(*) FROM source_fingerprints GROUP BY last_status").fetchall())
        assert "error" not in statuses, statuses  # no note is blamed for the embedder
        written = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        assert 0 < written < NOTES  # the first batch is in; the failed one is not
        run = conn.execute("SELECT status FROM ingest_runs").fetchone()[0]
        assert run == "failed"
    # The next run (a working embedder) settles what the failed batch left and finishes.
    summary = run_ingest(config, IngestOptions())
    assert summary.status == "completed", summary.errors
    assert summary.sources.errors == 0
    with sqlite3.connect(config.index.sqlite_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == NOTES
        assert conn.execute("SELECT COUNT(*) FROM vector_journal").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM pending_sources").fetchone()[0] == 0
    assert _vector_count(config) == NOTES


def test_an_embedder_failure_is_a_one_line_cli_error(chinvex_home: Path, notes: Path):
    """Through the CLI: an embedder that cannot start (its model folder unwritable, for the
    derived q8 model) is one line naming the folder, exit 1, and no source is blamed."""
    import json

    from helpers import assert_no_traceback, run_cli

    config = _context(notes)
    path = chinvex_home / "contexts" / "Ov" / "context.json"
    data = json.loads(path.read_text())
    data["embedding"] = {"provider": "builtin", "model": "all-MiniLM-L6-v2-q8"}
    path.write_text(json.dumps(data))
    result = run_cli("ingest", "--context", "Ov", env={"CHINVEX_MODELS_DIR": "/proc/chinvex-nope"})
    assert_no_traceback(result)
    assert result.code == 1, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and "/proc" in lines[-1] and "internal error" not in result.stderr, result.stderr
    with sqlite3.connect(config.index.sqlite_path) as conn:
        assert conn.execute(
            "SELECT COUNT(*) FROM source_fingerprints WHERE last_status='error'").fetchone()[0] == 0


def test_ctrl_c_during_an_ingest_leaves_at_once_and_the_next_run_converges(chinvex_home: Path, tmp_path: Path):
    """A real `chinvex ingest` interrupted while a batch is being embedded on the worker thread
    exits 130 within a second, saying so (the interpreter's teardown would wait for the
    embedder's threads to finish the batch); what it left is settled by the next run."""
    import signal
    import subprocess
    import time

    from helpers import CHINVEX_BIN, assert_no_traceback, run_cli

    root = tmp_path / "many"
    root.mkdir()
    sentence = "The rollout of service {i} depends on the schema migration and the cache warm-up. "
    for i in range(150):
        (root / f"n{i:03d}.md").write_text(f"# Service {i}\n\n" + sentence.format(i=i) * 12 + "\n")
    config = _context(root)
    proc = subprocess.Popen([str(CHINVEX_BIN), "ingest", "--context", "Ov"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        # Wait until the first batch is being embedded (its ids are journalled first).
        deadline = time.monotonic() + 60
        journalled = 0
        while time.monotonic() < deadline and proc.poll() is None and not journalled:
            time.sleep(0.05)
            try:
                with sqlite3.connect(config.index.sqlite_path, timeout=0.2) as conn:
                    journalled = conn.execute("SELECT COUNT(*) FROM vector_journal").fetchone()[0]
            except sqlite3.Error:
                pass
        assert journalled, "the first batch never started"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err)
    assert "interrupted" in err and "Traceback" not in err, err
    assert took < 1.5, took
    done = run_cli("ingest", "--context", "Ov", "--json")
    assert_no_traceback(done)
    assert done.code == 0 and done.json["status"] == "completed", done
    with sqlite3.connect(config.index.sqlite_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM vector_journal").fetchone()[0] == 0
        chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    assert _vector_count(config) == chunks


def test_a_full_reingest_with_the_same_model_does_not_load_it(chinvex_home: Path, notes: Path):
    """Every vector is reused by embed hash: the early model load (started when a queued
    document needs embedding) must not start, so the run stays as cheap as before."""
    from chinvex.embedding.builtin import BuiltinEmbedder
    from chinvex.ingest.pipeline import IngestOptions, run_ingest

    config = _context(notes)
    assert run_ingest(config, IngestOptions()).status == "completed"
    embedder = BuiltinEmbedder()
    summary = run_ingest(config, IngestOptions(full=True, embedder_factory=lambda: embedder))
    assert summary.status == "completed", summary.errors
    assert summary.chunks["embedded"] == 0 and summary.sources.indexed == NOTES
    assert not embedder.loaded
    # One note gets new text: now the model is needed, and loaded.
    (notes / "note00.md").write_text("# Note 0\n\nThe canary release now waits for the error budget.\n")
    summary = run_ingest(config, IngestOptions(embedder_factory=lambda: embedder))
    assert summary.chunks["embedded"] == 1 and embedder.loaded
