"""Vector coverage: how many of an index's chunks have a vector, recorded where a search can
read it for the price of one SELECT, and which Chroma store that figure was measured on.

hybrid.db decides which chunks exist; Chroma is derived data that can be lost (a deleted
`chroma/` folder), replaced (a backup copied over it) or damaged, while hybrid.db stays intact.
Search must then say that part of the index has no vectors instead of calling FTS-only hits
"hybrid", and ingest must embed what is missing. Comparing the two id sets costs a Chroma
start-up plus a listing of every id, too much for every search and every no-change
ingest; so ingest (and `doctor --repair`) measure it exactly when something may have changed,
and store the result in `meta.vector_coverage`:

    {"chunks": N, "with_vector": M, "checked_at": ISO, "store": "<collection>@<identity>"}

The writer keeps the figure current across its own writes (`adjust`), so a search after an MCP
`recall_add` reads a right number too. `store` names the store the figure is about: the
collection and, for an embedded store, the device and inode of its `chroma.sqlite3` (a folder
deleted and created again, or copied over, is another file). `store_identity` computes it with
two system calls and no Chroma import, so a reader can tell that the store is gone or was
replaced since the figure was taken (`Coverage.store_lost` / `store_replaced`).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from chinvex.models import ContextConfig
from chinvex.storage.db import get_meta, set_meta
from chinvex.storage.store_files import CHROMA_DB_FILE, COLLECTION_META_KEY, GATE_FILE, TOKEN_BYTES
from chinvex.timeutil import now_iso

COVERAGE_META_KEY = "vector_coverage"
_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Coverage:
    chunks: int
    """Chunk rows in hybrid.db when the figure was taken (kept current by the writer)."""
    with_vector: int
    """How many of them have a vector in the store."""
    checked_at: str
    store: str | None
    """`store_identity` of the store the figure was measured on (None: no store yet)."""
    token: str | None = None
    """The store's write token (`gate_token`) when the figure was taken: any write through
    chinvex since then changed it. Ingest trusts the figure only while it is unchanged."""
    store_now: str | None = None
    """`store_identity` as observed by `current_coverage` (not stored)."""
    observed: bool = False
    """Whether `store_now` was observed (only `current_coverage` fills it in)."""

    @property
    def missing(self) -> int:
        return max(0, self.chunks - self.with_vector)

    @property
    def complete(self) -> bool:
        return self.with_vector >= self.chunks

    @property
    def ratio(self) -> float:
        """Share of chunks with a vector, 1.0 for an empty index."""
        return 1.0 if self.chunks <= 0 else min(1.0, self.with_vector / self.chunks)

    @property
    def store_lost(self) -> bool:
        """The store the figure was measured on no longer exists (e.g. `chroma/` deleted)."""
        return self.observed and self.store is not None and self.store_now is None

    @property
    def store_replaced(self) -> bool:
        """Another store than the measured one is there now (copied over, or re-created):
        the figure says nothing about it."""
        return self.observed and self.store_now is not None and self.store_now != self.store

    def as_json(self) -> dict[str, object]:
        return {"chunks": self.chunks, "with_vector": self.with_vector,
                "checked_at": self.checked_at, "store": self.store, "token": self.token}


def vector_coverage(conn: sqlite3.Connection) -> Coverage | None:
    """The recorded coverage, or None when none was ever recorded (an index last written by a
    chinvex without this record) or the row does not parse. One SELECT; never writes."""
    raw = get_meta(conn, COVERAGE_META_KEY)
    if raw is None:
        return None
    try:
        data = orjson.loads(raw)
        return Coverage(chunks=int(data["chunks"]), with_vector=int(data["with_vector"]),
                        checked_at=str(data.get("checked_at") or ""),
                        store=data.get("store") if isinstance(data.get("store"), str) else None,
                        token=data.get("token") if isinstance(data.get("token"), str) else None)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def current_coverage(config: ContextConfig, conn: sqlite3.Connection) -> Coverage | None:
    """The recorded coverage together with the identity of the store that is there now, so that
    a search can say "the vector store is gone since the last check" (`store_lost`) or "was
    replaced" (`store_replaced`). No Chroma import: a stat and a 16-byte read."""
    recorded = vector_coverage(conn)
    if recorded is None:
        return None
    return replace(recorded, store_now=store_identity(config, conn), observed=True)


def record(conn: sqlite3.Connection, coverage: Coverage) -> None:
    """Store the figure (one autocommit statement, or part of the caller's transaction)."""
    set_meta(conn, COVERAGE_META_KEY, orjson.dumps(coverage.as_json()).decode())


def measured(chunks: int, with_vector: int, store: str | None,
             token: str | None = None) -> Coverage:
    return Coverage(chunks=chunks, with_vector=with_vector, checked_at=now_iso(), store=store,
                    token=token)


def adjusted(previous: Coverage, *, added: int, removed: int, restored: int,
             store: str | None = None) -> Coverage:
    """The figure after one write batch (pure).

    Every chunk row the writer adds comes with its vector, every row it deletes loses its
    vector, and `restored` kept rows that had no vector got one. Whether a deleted row had a
    vector is not known when the figure was already short; it is assumed it had, so the
    shortfall never grows by a write and is exact again at the next measurement. `store`: the
    identity of a store the writer has just created or emptied (the caller then passes as
    `previous` the chunks before the batch, none of them with a vector in it)."""
    chunks = max(0, previous.chunks + added - removed)
    missing = max(0, min(previous.missing - restored, chunks))
    # The write renewed the store's token: the figure stays right, but ingest compares counts
    # once more before it trusts it again (token None).
    return Coverage(chunks=chunks, with_vector=chunks - missing,
                    checked_at=previous.checked_at if store is None else now_iso(),
                    store=previous.store if store is None else store, token=None)


def store_identity(config: ContextConfig, conn: sqlite3.Connection) -> str | None:
    """`<collection>@<dev>:<inode>` of the embedded store's `chroma.sqlite3` (or
    `<collection>@<url>` for a Chroma server), None when there is no collection yet, no store
    file, or a file that is not SQLite (overwritten with garbage). Cheap enough for every
    search and every no-change ingest."""
    name = get_meta(conn, COLLECTION_META_KEY)
    if name is None:
        return None
    if config.index.chroma_url:
        return f"{name}@{config.index.chroma_url}"
    return _file_identity(name, Path(config.index.chroma_dir) / CHROMA_DB_FILE)


def _file_identity(name: str, path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError:
        return None
    if head != _SQLITE_MAGIC:
        return None
    return f"{name}@{st.st_dev}:{st.st_ino}"


def gate_token(config: ContextConfig) -> str | None:
    """The write token of an embedded store (renewed by every write through chinvex, see
    `storage/vector_gate.py`), read without a lock or a Chroma import; None for a server store or
    when there is no gate file."""
    if config.index.chroma_url:
        return None
    try:
        with open(Path(config.index.chroma_dir) / GATE_FILE, "rb") as handle:
            return handle.read(TOKEN_BYTES).decode("ascii", "replace") or None
    except OSError:
        return None


def chunk_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
