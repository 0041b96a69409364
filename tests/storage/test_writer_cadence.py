"""When the index writer commits (issue 40: "the first commit of an ingest within a few seconds
of its start, then regularly"): a small first batch that doubles up to the full size, and a
queue written once it waited `commit_every_s` since the last commit. Real hybrid.db, the
in-memory Chroma stand-in and fake embedder of test_writer."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_writer import _doc, _Embedder, _Store

from chinvex.storage import db, writer_rows
from chinvex.storage.writer import IndexWriter


@pytest.fixture
def conn(tmp_path: Path):
    connection = db.connect(tmp_path / "hybrid.db", create=True)
    yield connection
    connection.close()


def _committed(conn, n: int) -> int:
    return len(writer_rows.chunks_of(conn, [f"d{i}" for i in range(n)]))


def test_batches_start_small_and_double_up_to_the_full_size(conn):
    store, embedder = _Store(), _Embedder()
    sizes: list[int] = []
    writer = IndexWriter(conn, lambda: store, lambda: embedder, max_pending_chunks=16,
                         max_pending_docs=1000, first_batch_chunks=2)
    original = writer._begin

    def begin(queued):
        if queued.docs:
            sizes.append(queued.chunk_count)
        original(queued)

    writer._begin = begin  # type: ignore[method-assign]
    docs = [_doc(f"d{i}", f"# D{i}\n\nLine {i} of the ledger.\n", f"/r/d{i}.md") for i in range(60)]
    assert all(len(d.chunks) == 1 for d in docs)
    for doc in docs:
        writer.add(doc)
    writer.flush()
    assert sizes[:5] == [2, 4, 8, 16, 16] and sum(sizes) == 60, sizes
    assert _committed(conn, 60) == 60


def test_without_a_first_size_every_batch_is_full(conn):
    store, embedder = _Store(), _Embedder()
    writer = IndexWriter(conn, lambda: store, lambda: embedder, max_pending_chunks=8)
    for i in range(7):
        writer.add(_doc(f"d{i}", f"# D{i}\n\nLine {i}.\n", f"/r/d{i}.md"))
    assert _committed(conn, 7) == 0  # nothing written before the batch is full or flushed


def test_a_queue_older_than_the_interval_is_written_without_being_full(conn):
    store, embedder = _Store(), _Embedder()
    writer = IndexWriter(conn, lambda: store, lambda: embedder, max_pending_chunks=256,
                         commit_every_s=0.05)
    writer.add(_doc("d0", "# D0\n\nLine 0.\n", "/r/d0.md"))
    assert _committed(conn, 1) == 0
    writer._last_commit -= 1.0  # the interval has passed since the last commit
    writer.add(_doc("d1", "# D1\n\nLine 1.\n", "/r/d1.md"))
    assert _committed(conn, 2) == 2
