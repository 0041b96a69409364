"""`chinvex export` and `chinvex import`: a context's index as one JSONL file, and back.

Every line is one record `{"kind": ..., "v": 1, ...}`: a `header` (the context's settings, its
embedder), then `source` (fingerprints), `document` (with its origins and conversation turns),
`chunk` (with its vector when asked for), `memory` (knowledge items) and `feedback` records, and
an `end` record with the counts. The export reads row by row (a document's chunks and vectors a
page at a time), so memory stays flat however large the context; the `end` record lets an
import tell a file cut short from a complete one.

Import checks every line before it writes anything (JSON, kind, version, fields, the counts of
`end`), so a damaged file changes nothing and the error names the first bad line. Then it writes
through the ingest's writer (Chroma, then SQLite, journalled) under the target context's lock:
vectors from the file when the embedder is the same, else embedded again; a document already
there with the same content is left alone, so importing a file twice changes nothing. It reads
the file line by line and writes a batch of documents at a time, keeping only that batch's
vectors, so its memory too is bounded (bench/export_stream.py measures both on a 1 GB file).

An imported document keeps its source (origin) and fingerprint: an ingest of the target context
keeps the documents whose sources are among its own and removes the others, as it would for a
folder taken out of a context.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import TypeAdapter, ValidationError

from chinvex import __version__
from chinvex.errors import ChinvexError, UsageError
from chinvex.models import ContextConfig
from chinvex.models.export import ExportRecord
from chinvex.timeutil import now_iso

VERSION = 1
_ADAPTER = TypeAdapter(ExportRecord)
KINDS = ("header", "source", "document", "chunk", "memory", "feedback", "end")
DATA_KINDS = frozenset({"source", "document", "chunk", "memory", "feedback"})
"""The records that carry data (what progress counts); the header and the end record frame them."""


EXPORT_PAGE = 256
"""Chunks (and their vectors) read at a time by an export."""

EMBED_SLICE = 64
"""Texts embedded per call by an import, so its progress moves during a batch's embedding."""

IMPORT_BATCH_CHUNKS = 256
IMPORT_BATCH_DOCS = 400
"""An import writes a batch of documents once it holds this many chunks or documents (the
ingest's batch sizes), then forgets the batch's vectors: its memory stays that of one batch and
of the largest document, not of the file."""


class ImportFileError(UsageError):
    pass


def _line(record: dict[str, Any]) -> bytes:
    return orjson.dumps({"v": VERSION, **record}) + b"\n"


# -- export -------------------------------------------------------------------------------------

def export(config: ContextConfig, out: IO[bytes], *, include_vectors: bool = False,
           on_record: Callable[[str], None] | None = None) -> Counter[str]:
    """Write the context's index to `out`, streamed; the counts per kind. `on_record(kind)` is
    told of each record written (progress)."""
    from chinvex.storage import db
    from chinvex.storage import export_reads as rows

    path = Path(config.index.sqlite_path)
    if not path.exists():
        raise ChinvexError(f"context {config.name} has no index yet ({path}); run 'chinvex ingest' first")
    conn = db.connect(path, create=False, readonly=True)
    counts: Counter[str] = Counter()
    store = None
    try:
        if include_vectors:
            from chinvex.storage.vectors import VectorStore

            store = VectorStore.open(config, conn, create=False)
        out.write(_line({"kind": "header", "context": config.name, "config": config.model_dump(mode="json"),
                         "embedder": db.get_meta(conn, "embedder"), "include_vectors": include_vectors and store is not None,
                         "chinvex": __version__, "exported_at": now_iso()}))
        for row in rows.iter_fingerprints(conn, config.name):
            out.write(_line({"kind": "source", **dict(row)}))
            counts["source"] += 1
            if on_record is not None:
                on_record("source")
        for doc in rows.iter_documents(conn):
            record = dict(doc)
            record["metadata"] = orjson.loads(record.pop("metadata_json") or "{}")
            record["origins"] = rows.origins_of(conn, doc["doc_id"])
            record["turns"] = [orjson.loads(t) for t in rows.turn_jsons_of(conn, doc["doc_id"])]
            out.write(_line({"kind": "document", **record}))
            counts["document"] += 1
            if on_record is not None:
                on_record("document")
            last = -1
            while True:  # a page of chunks at a time, however long the document
                chunks = rows.chunk_page(conn, doc["doc_id"], last, EXPORT_PAGE)
                if not chunks:
                    break
                last = chunks[-1]["chunk_index"]
                vectors = store.embeddings([c["chunk_id"] for c in chunks]) if store is not None else {}
                for chunk in chunks:
                    chunk["metadata"] = orjson.loads(chunk.pop("metadata_json") or "{}")
                    vector = vectors.get(chunk["chunk_id"])
                    if vector is not None:
                        chunk["vector"] = [float(x) for x in vector]
                    out.write(_line({"kind": "chunk", **chunk}))
                    counts["chunk"] += 1
                    if on_record is not None:
                        on_record("chunk")
        for row in rows.iter_knowledge_items(conn):
            out.write(_line({"kind": "memory", **dict(row)}))
            counts["memory"] += 1
            if on_record is not None:
                on_record("memory")
        for row in rows.iter_feedback(conn):
            out.write(_line({"kind": "feedback", **dict(row)}))
            counts["feedback"] += 1
            if on_record is not None:
                on_record("feedback")
        out.write(_line({"kind": "end", "counts": dict(counts)}))
    finally:
        if store is not None:
            store.close()
        conn.close()
    return counts


# -- import -------------------------------------------------------------------------------------

def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            yield number, orjson.loads(raw)


def validate(path: Path) -> dict[str, Any]:
    """Check every line; the header. ImportFileError names the first bad line."""
    header: dict[str, Any] | None = None
    counts: Counter[str] = Counter()
    ended = False
    number = 0
    try:
        for number, record in _records(path):
            where = f"{path}:{number}"
            if not isinstance(record, dict):
                raise ImportFileError(f"{where}: not a JSON object")
            if ended:
                raise ImportFileError(f"{where}: a record after the end record")
            kind = record.get("kind")
            if kind not in KINDS:
                raise ImportFileError(f"{where}: unknown kind {kind!r}")
            if record.get("v") != VERSION:
                raise ImportFileError(f"{where}: record version {record.get('v')!r}; this chinvex reads {VERSION}")
            try:  # every field of every kind: chinvex.models.export
                _ADAPTER.validate_python(record)
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(p) for p in first["loc"][1:]) or kind
                raise ImportFileError(f"{where}: {kind} record: {field}: {first['msg']}") from None
            if (kind == "header") != (number == 1 and header is None):
                raise ImportFileError(f"{where}: the header must be the first line, and only it")
            if kind == "header":
                header = record
            elif kind == "end":
                ended = True
                if {k: v for k, v in record["counts"].items() if v} != {k: v for k, v in counts.items() if v}:
                    raise ImportFileError(f"{where}: the end record counts {record['counts']}, the file holds {dict(counts)}")
            else:
                counts[kind] += 1
    except orjson.JSONDecodeError as exc:
        raise ImportFileError(f"{path}:{number + 1}: not JSON ({exc})") from None
    except OSError as exc:
        raise ImportFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if header is None:
        raise ImportFileError(f"{path}: empty, or no header line")
    if not ended:
        raise ImportFileError(f"{path}:{number + 1}: the file ends before its end record (cut short?)")
    return {"header": header, "counts": dict(counts)}


def import_file(config: ContextConfig, path: Path, *,
                on_record: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Import a validated export into `config`'s index (see the module docstring);
    `on_record(kind)` is told of each data record imported (not the header and end records) and
    of each chunk embedded ("chunk embedded"), the slow part (progress)."""
    from chinvex.chunking import embed_text  # noqa: F401  (the writer's dependency, loaded before the lock)
    from chinvex.embedding.factory import make_embedder
    from chinvex.locking import context_lock
    from chinvex.storage import db

    checked = validate(path)
    header = checked["header"]
    embedder = make_embedder(config.embedding)
    reuse = bool(header.get("include_vectors") and header.get("embedder") == embedder.name)
    conn = db.connect(Path(config.index.sqlite_path), create=True)
    try:
        with context_lock(config, wait=30.0, purpose="import"):
            stored = db.get_meta(conn, "embedder")
            if stored is not None and stored != embedder.name:
                raise ChinvexError(f"context {config.name} holds vectors of {stored}, not {embedder.name}; "
                                   f"run 'chinvex ingest --context {config.name} --full' first")
            # What an ingest records about its embedder (`stats` shows it), the dimension once
            # vectors were written.
            db.set_meta(conn, "embedder", embedder.name)
            db.set_meta(conn, "embedding_provider", embedder.provider)
            db.set_meta(conn, "embedding_model", embedder.model)
            importer = _Importer(config, conn, path, embedder, reuse, from_context=header.get("context"),
                                 on_record=on_record)
            for _, record in _records(path):
                kind = str(record.get("kind"))  # (the importer takes the record apart)
                importer.add(record)
                if on_record is not None and kind in DATA_KINDS:
                    on_record(kind)
            importer.close()
            stats = importer.stats
            # The store's vector matrix, which searches read instead of Chroma's index
            from chinvex.storage.vector_matrix_refresh import refresh

            refresh(config, conn, importer.writer.store, sign=True)
    except sqlite3.Error as exc:
        raise ChinvexError(f"import into {config.name} failed: {exc}") from None
    finally:
        conn.close()
    return {"context": config.name, "file": str(path), "from_context": header.get("context"),
            "vectors_reused": reuse, **{k: stats.get(k, 0) for k in (
                "sources", "documents_imported", "documents_unchanged", "chunks_imported", "chunks_embedded",
                "memories", "feedback")}}


class _FileVectors:
    """The import's embedder, as the index writer calls it: vectors from the file for the texts
    it has them for, the real embedder for the rest."""

    def __init__(self, embedder: Any, stats: Counter[str], on_record: Callable[[str], None] | None = None):
        self.embedder, self.stats, self.on_record = embedder, stats, on_record
        self.known: dict[str, Any] = {}
        self.dimension: int | None = None

    def embed_documents(self, texts: list[str]) -> Any:
        import numpy as np

        missing = [t for t in texts if t not in self.known]
        for start in range(0, len(missing), EMBED_SLICE):
            part = missing[start:start + EMBED_SLICE]
            self.known.update(zip(part, self.embedder.embed_documents(part)))
            self.stats["chunks_embedded"] += len(part)
            for _ in part if self.on_record is not None else ():
                self.on_record("chunk embedded")
        stacked = np.stack([np.asarray(self.known[t], dtype=np.float32) for t in texts])
        self.dimension = int(stacked.shape[1])
        return stacked


class _Importer:
    """Writes an export's records, in file order, into an open index: one method per kind of
    record; a document is written with its chunks once the next document starts, in batches
    (IMPORT_BATCH_*), so memory stays bounded whatever the file's size."""

    def __init__(self, config: ContextConfig, conn: sqlite3.Connection, path: Path, embedder: Any, reuse: bool,
                 from_context: str | None = None, on_record: Callable[[str], None] | None = None):
        from chinvex.storage.writer import IndexWriter
        from chinvex.timeutil import now_iso

        self.from_context, self.stamp = from_context, now_iso()
        from chinvex.storage.vectors import VectorStore

        self.config, self.conn, self.path, self.reuse = config, conn, path, reuse
        self.stats: Counter[str] = Counter()
        self.vectors = _FileVectors(embedder, self.stats, on_record)
        store = VectorStore.open(config, conn, create=True)
        # The writer's own thresholds are out of reach; `_finish_document` flushes.
        self.writer = IndexWriter(conn, lambda: store, lambda: self.vectors,
                                  max_pending_chunks=1 << 62, max_pending_docs=1 << 62)
        self.current: Any = None
        self.origins: list[tuple[str, str, str]] = []
        self.batch_docs = self.batch_chunks = 0

    def add(self, record: dict[str, Any]) -> None:
        kind = record.pop("kind")
        record.pop("v", None)
        handler = {"source": self._source, "document": self._document, "chunk": self._chunk,
                   "memory": self._memory, "feedback": self._feedback}.get(kind)
        if handler is not None:  # the header and the end record carry nothing to write
            handler(record)

    def close(self) -> None:
        from chinvex.storage import db

        self._finish_document()
        self._flush()
        if self.vectors.dimension:
            db.set_meta(self.conn, "embedding_dimension", str(self.vectors.dimension))

    def _source(self, record: dict[str, Any]) -> None:
        from chinvex.storage import import_writes, imported

        import_writes.insert_fingerprint(self.conn, self.config.name, record)

        imported.record(self.conn, self.config.name, record["source_uri"], record.get("source_root"),
                        self.from_context, self.stamp)
        self.stats["sources"] += 1

    def _document(self, record: dict[str, Any]) -> None:
        from chinvex.ingest.prepare import PreparedDoc
        from chinvex.models import Turn
        from chinvex.storage.import_writes import has_document_with_hash

        self._finish_document()
        if has_document_with_hash(self.conn, record["doc_id"], record["content_hash"]):
            self.stats["documents_unchanged"] += 1
            return
        self.origins += [(record["doc_id"], o["origin_uri"], o["precedence_json"]) for o in record.get("origins", [])]
        turns = [Turn.model_validate(t) for t in record.get("turns") or []] or None
        self.current = PreparedDoc(doc_id=record["doc_id"], source_type=record["source_type"],
                                   source_uri=record["source_uri"], origin_uri=record["origin_uri"],
                                   title=record.get("title"), created_at=record.get("created_at"),
                                   updated_at=record.get("updated_at"), metadata=record["metadata"],
                                   content_hash=record["content_hash"], chunks=[], turns=turns)
        self.stats["documents_imported"] += 1

    def _chunk(self, record: dict[str, Any]) -> None:
        from chinvex.ingest.prepare import PreparedChunk
        from chinvex.models import Chunk
        from chinvex.storage.consistency import embed_text_of

        if self.current is None or record["doc_id"] != self.current.doc_id:
            return  # its document was unchanged
        row = {**record, "metadata_json": orjson.dumps(record["metadata"]).decode()}
        text = embed_text_of(row)
        if text is None:
            raise ChinvexError(f"{self.path}: chunk {record['chunk_id']} does not match its embed hash")
        if self.reuse and isinstance(record.get("vector"), list):
            self.vectors.known.setdefault(text, record["vector"])
        chunk = Chunk(chunk_id=record["chunk_id"], doc_id=record["doc_id"], chunk_index=record["chunk_index"],
                      text=record["text"], char_start=record.get("char_start") or 0,
                      char_end=record.get("char_end") or 0, line_start=record.get("line_start"),
                      line_end=record.get("line_end"), metadata=record["metadata"])
        self.current.chunks.append(PreparedChunk(chunk=chunk, embed_text=text, embed_hash=record["embed_hash"],
                                                 search_text=record["search_text"]))
        self.stats["chunks_imported"] += 1

    def _memory(self, record: dict[str, Any]) -> None:
        from chinvex.storage.import_writes import insert_knowledge_item

        insert_knowledge_item(self.conn, record)
        self.stats["memories"] += 1

    def _feedback(self, record: dict[str, Any]) -> None:
        from chinvex.storage.import_writes import insert_feedback

        insert_feedback(self.conn, record)
        self.stats["feedback"] += 1

    def _finish_document(self) -> None:
        if self.current is None:
            return
        self.writer.add(self.current)
        self.batch_docs += 1
        self.batch_chunks += len(self.current.chunks)
        self.current = None
        if self.batch_chunks >= IMPORT_BATCH_CHUNKS or self.batch_docs >= IMPORT_BATCH_DOCS:
            self._flush()

    def _flush(self) -> None:
        self.writer.flush()
        from chinvex.storage.import_writes import insert_ledger_entries

        insert_ledger_entries(self.conn, self.origins)
        self.origins.clear()
        self.vectors.known.clear()
        self.batch_docs = self.batch_chunks = 0
