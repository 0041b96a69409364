"""The index writer (chinvex.storage.writer) and the row modules beside it, on a real hybrid.db
with an in-memory stand-in for Chroma: documents, chunks and fingerprints land in one flush, a
vector is reused by embed hash, the pending-sources and vector journals are emptied by the
writes that settle them, and the origin ledger and fingerprint tables read back what they
stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chinvex.ingest.origins import OriginLedger
from chinvex.ingest.prepare import prepare
from chinvex.models import Document
from chinvex.storage import db, pending, writer_rows
from chinvex.storage import fingerprints as fingerprint_rows
from chinvex.storage.writer import IndexWriter


class _Store:
    """The part of VectorStore the writer uses, in a dict."""

    fresh = False

    def __init__(self) -> None:
        self.vectors: dict[str, tuple[Any, dict[str, Any]]] = {}

    def upsert(self, ids, embeddings, metadatas) -> None:
        for cid, vector, meta in zip(ids, embeddings, metadatas):
            self.vectors[cid] = (vector, meta)

    def delete(self, ids) -> None:
        for cid in ids:
            self.vectors.pop(cid, None)

    def existing(self, ids) -> set[str]:
        return {cid for cid in ids if cid in self.vectors}

    def embeddings(self, ids) -> dict[str, Any]:
        return {cid: self.vectors[cid][0] for cid in ids if cid in self.vectors}

    def ids_for_docs(self, doc_ids) -> set[str]:
        return {cid for cid, (_, meta) in self.vectors.items() if meta["doc_id"] in doc_ids}

    def identity(self, conn) -> str | None:
        return None


class _Embedder:
    name = "fake"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += texts
        return [[float(len(text)), 1.0] for text in texts]


@pytest.fixture
def conn(tmp_path: Path):
    connection = db.connect(tmp_path / "hybrid.db", create=True)
    yield connection
    connection.close()


def _doc(doc_id: str, text: str, origin: str, title: str | None = None) -> Any:
    doc = Document(doc_id=doc_id, source_type="note", source_uri=origin, title=title or doc_id,
                   text=text)
    return prepare(doc, origin_uri=origin, redact=False, content_hash=f"hash-of-{doc_id}")


def _fingerprint(uri: str, status: str = "ok") -> fingerprint_rows.Fingerprint:
    return fingerprint_rows.Fingerprint(
        source_uri=uri, context_name="T", source_type="note", doc_id="", size_bytes=3,
        mtime_unix=1, content_sha256=None, thread_updated_at=None, last_turn_id=None,
        parser_version="p", chunker_version="c", embedded_model="fake", last_ingested_at_unix=1,
        last_status=status, last_error=None, source_root="/r", adapter="notes",
        state={"k": 1}, mtime_ns=1_000_000_123)


def test_a_flush_writes_rows_vectors_and_fingerprints_and_settles_both_journals(conn):
    store, embedder = _Store(), _Embedder()
    writer = IndexWriter(conn, lambda: store, lambda: embedder)
    pending.mark_pending(conn, "/r/a.md", "/r", "notes")
    doc = _doc("a", "# A\n\nThe frobnicator turns widgets into gadgets.\n", "/r/a.md")
    writer.add(doc)
    writer.source_done(_fingerprint("/r/a.md"))
    writer.flush()

    chunks = writer_rows.chunks_of(conn, ["a"])
    assert set(chunks) == {c.chunk.chunk_id for c in doc.chunks} == set(store.vectors)
    assert conn.execute("SELECT content_hash FROM documents WHERE doc_id='a'").fetchone()[0] == "hash-of-a"
    assert pending.load_pending(conn) == {}
    assert pending.load_vector_journal(conn) == {}
    assert set(fingerprint_rows.load_all(conn, "T")) == {"/r/a.md"}
    assert writer.stats.docs_written == 1 and writer.stats.chunks_embedded == len(doc.chunks)

    # The same embedded text (header included) in another document reuses the stored vector.
    embedded = len(embedder.texts)
    twin = _doc("b", "# A\n\nThe frobnicator turns widgets into gadgets.\n", "/r/a.md", title="a")
    writer.add(twin)
    writer.flush()
    assert len(embedder.texts) == embedded
    assert writer.stats.chunks_reused == len(twin.chunks)

    writer.delete_docs(["a"])
    writer.source_removed("T", "/r/a.md")
    writer.flush()
    assert writer_rows.chunks_of(conn, ["a"]) == {}
    assert not store.ids_for_docs(["a"])
    assert fingerprint_rows.load_all(conn, "T") == {}


def test_fingerprints_read_back_what_was_written(conn):
    fp = _fingerprint("/r/x.md")
    fingerprint_rows.write(conn, fp)
    fingerprint_rows.write(conn, _fingerprint("/r/y.md", status="error"))
    assert fingerprint_rows.load_all(conn, "T")["/r/x.md"] == fp  # mtime_ns kept beside the state
    assert fingerprint_rows.counts_by_status(conn, "T") == {"ok": 1, "error": 1}
    fingerprint_rows.delete(conn, "T", "/r/x.md")
    assert set(fingerprint_rows.load_all(conn, "T")) == {"/r/y.md"}


def test_the_origin_ledger_names_the_winner_and_what_a_leaving_source_takes(conn):
    ledger = OriginLedger(conn)
    assert ledger.record("d", "/old.json", "[[1, 1.0]]")
    assert ledger.record("d", "/new.json", "[[1, 2.0]]")  # a greater precedence takes over
    assert not ledger.record("d", "/old.json", "[[1, 1.0]]")
    store, embedder = _Store(), _Embedder()
    writer = IndexWriter(conn, lambda: store, lambda: embedder)
    writer.add(_doc("d", "A conversation export copy.\n", "/new.json"))
    writer.flush()
    assert ledger.docs_of("/new.json") == ["d"]
    # The writing source leaves: the other one must write the document again.
    detached = ledger.detach("/new.json", ["d"])
    assert detached.delete_docs == [] and detached.reingest_origins == {"/old.json"}
    # The last source leaves: the document goes.
    assert ledger.detach("/old.json", ["d"]).delete_docs == ["d"]
