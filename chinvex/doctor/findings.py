"""What the checks found, kept for the repairs: the checks stay pure reports, and the repairs
act on the rows and ids they collected."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


MID_WRITE_CHECKS = frozenset({
    "vectors_missing", "vectors_orphaned", "fingerprints_without_documents",
    "documents_without_chunks", "origins_without_documents", "documents_without_origins",
    "untracked_documents"})
"""Checks that compare states an ingest changes one after the other (Chroma, then SQLite, then
fingerprints): while it runs, a mismatch may be a batch in flight rather than damage."""


@dataclass
class Findings:
    """What the checks found, kept for the repairs (the checks themselves stay pure reports)."""

    ingest_running: bool = False
    fk_rows: list[tuple[str, int]] = field(default_factory=list)
    embedder_ok: bool = True
    chroma_ids: set[str] = field(default_factory=set)
    fingerprints_without_docs: list[str] = field(default_factory=list)
    docs_without_chunks: list[tuple[str, str]] = field(default_factory=list)
    origins_without_docs: list[tuple[str, str]] = field(default_factory=list)
    docs_without_origins: list[tuple[str, str]] = field(default_factory=list)
    untracked_gone: list[str] = field(default_factory=list)
    interrupted_runs: list[str] = field(default_factory=list)
    stale_docs: list[str] = field(default_factory=list)
    rows_deleted: bool = False
    damaged: bool = False
    store_damaged: bool = False
    """The Chroma store's files are not a usable database: repair moves them aside and rebuilds."""
    store: Any = None
    """The VectorStore the checks opened (closed before a repair touches the store's files)."""

    def close_store(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            store.close()
