"""What the index writer (chinvex.storage.writer) keeps between calls: its counters, the queue
of a batch, the batch worked out, and the batch in flight."""

from __future__ import annotations

import sqlite3
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chinvex.storage.fingerprints import Fingerprint

if TYPE_CHECKING:
    from chinvex.ingest.prepare import PreparedChunk, PreparedDoc


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


@dataclass
class Pending:
    docs: list[PreparedDoc] = field(default_factory=list)
    delete_doc_ids: list[str] = field(default_factory=list)
    fingerprints: list[Fingerprint] = field(default_factory=list)
    fingerprint_deletes: list[tuple[str, str]] = field(default_factory=list)
    chunk_count: int = 0


@dataclass
class Batch:
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
class InFlight:
    """A begun batch: planned, its vector ids journalled, the texts to embed on their way."""

    pending: Pending
    batch: Batch
    prepared: list[PreparedChunk] = field(default_factory=list)
    """The chunks of `batch.need_vector`, in that order."""
    by_hash: dict[str, Any] = field(default_factory=dict)
    """Vectors reused from the store by embed hash, then the embedded ones."""
    missing: dict[str, str] = field(default_factory=dict)
    """Embed hash -> text of what is being embedded; the other chunks reuse a stored vector."""
    embedding: Future | None = None
