"""What can go wrong with a Chroma store, and how Chroma's error text is classified.

Chroma reports every failure as free text from its Rust bindings; the user needs to know which
of three things happened, because each asks for something different: the store may not be
written (not damage: no rebuild helps), its files are damaged (`doctor --repair` rebuilds them
from hybrid.db), or it is merely unavailable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from chinvex.errors import StorageError

if TYPE_CHECKING:
    from chinvex.models import ContextConfig


class VectorStoreBusyError(StorageError):
    """The store's gate could not be taken in time (a writer or reader is stuck)."""


class MissingStoreError(StorageError):
    """The embedded store's folder or database file is gone (read paths never create one)."""


class ReadOnlyStoreError(StorageError):
    """The store's files may not be written; Chroma cannot open such a store at all."""


class DamagedStoreError(StorageError):
    """The store's files are not a usable Chroma database; `doctor --repair` rebuilds it."""


READ_ONLY_MARKERS = ("readonly", "read-only", "permission denied")
"""How Chroma and the OS word a store it may not write: not damage, and no rebuild helps."""

SEGMENT_DAMAGE_MARKERS = ("hnsw segment reader", "hnsw segment writer", "deserializing pickle",
                          "error loading hnsw", "error getting embedding")
"""How Chroma words a vector segment whose files it cannot load. Chroma rewrites those files in
place with no journal of its own, so a process killed while it persists them leaves them
half-written (seen: an empty `index_metadata.pickle` after a SIGKILL during an ingest)."""

DAMAGE_MARKERS = ("file is not a database", "malformed", "code: 26", "code: 11",
                  "no such table", "not a database", "corrupt", *SEGMENT_DAMAGE_MARKERS)
"""How Chroma's Rust bindings word a damaged `chroma.sqlite3` (SQLite codes 26 NOTADB and 11
CORRUPT), a file missing its tables, or an unloadable vector segment."""


def is_damage(text: str) -> bool:
    """Whether Chroma's error text says the store's files are damaged (DAMAGE_MARKERS)."""
    return says_any(text, DAMAGE_MARKERS)


def is_segment_damage(text: str) -> bool:
    """Whether Chroma's error text says a vector segment cannot be loaded."""
    return says_any(text, SEGMENT_DAMAGE_MARKERS)


def says_any(text: str, markers: Sequence[str]) -> bool:
    """Whether `text` holds any of `markers`, ignoring case."""
    lowered = text.lower()
    return any(marker in lowered for marker in markers)


def is_not_found(exc: BaseException) -> bool:
    """Whether Chroma says the collection does not exist."""
    return type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc)


def is_storage_failure(exc: BaseException) -> bool:
    """Chroma's own errors (raised from its Rust bindings as `chromadb.errors.*`): a write that
    failed inside the store, not a bug of the caller's."""
    return type(exc).__module__.startswith("chromadb")


def open_error(config: ContextConfig, exc: BaseException) -> StorageError:
    """The one-line error for a store Chroma cannot open, classified so that the user is told
    what to do: a read-only folder is not damage, a file that is not a database is."""
    where = config.index.chroma_url or config.index.chroma_dir
    text = f"{exc}"
    if says_any(text, READ_ONLY_MARKERS):
        return ReadOnlyStoreError(
            f"Chroma store at {where} is read-only ({text}); Chroma cannot open a store it may "
            "not write, so vector search is unavailable until it is writable")
    if is_damage(text):
        return DamagedStoreError(
            f"Chroma store at {where} is damaged ({text}); run 'chinvex doctor --context "
            f"{config.name} --repair' to rebuild it from hybrid.db (the damaged folder is kept)")
    return StorageError(f"Chroma store at {where} is not available: {text}")


def write_error(config: ContextConfig, exc: BaseException) -> StorageError:
    """The one-line error for a write Chroma refused (a full disk, a read-only or damaged file)."""
    where = config.index.chroma_url or config.index.chroma_dir
    text = (getattr(exc, "strerror", None) or str(exc)).strip() or type(exc).__name__
    if says_any(text, READ_ONLY_MARKERS):
        return ReadOnlyStoreError(f"Chroma store at {where} is read-only: {text}")
    if is_damage(text):
        return DamagedStoreError(
            f"Chroma store at {where} is damaged ({text}); run 'chinvex doctor --context "
            f"{config.name} --repair' to rebuild it from hybrid.db")
    return StorageError(f"could not write the Chroma store at {where}: {text}")
