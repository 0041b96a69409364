"""An embedded store's index loaded ahead of the search that will read it, for a cold process.

Chroma loads a collection's whole approximate index into memory on its first query; at ~100k
chunks that is the longest single piece of a cold `chinvex search`, and it is native work that
releases the GIL. `warm` starts it as early as possible: it needs only the store's folder and
hybrid.db, not the configuration models the rest of the process imports (chinvex.models), so it
holds the store's gate as a reader does (chinvex.storage.vector_gate: a shared lock on the gate
file, the write token read under it), opens Chroma's bindings for reading
(chinvex.storage.chroma_reader) and runs one query. The loaded reader is then handed to the
process's shared client for that store (chinvex.storage.vector_clients) by `take`, only if the
token that client reads under its own hold of the gate is the one read here: otherwise a write
came in between, and the client opens the store again as it always does.

Read-only folders (which a search reads from a private copy, chinvex.storage.vector_open) and
Chroma servers are left alone. Nothing here raises: whatever fails is met again, and reported,
by the search's own open.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, NamedTuple

from chinvex.storage.db import read_only_meta
from chinvex.storage.store_files import COLLECTION_META_KEY, DIMENSION_META_KEY
from chinvex.storage.vector_signature import SIGNATURE_META_KEY, folder_signature, parse_signature

GATE_WAIT_SECONDS = 5.0
"""A warm-up waits this long for a write in progress, then gives up (the search waits longer)."""

_WARMED: dict[str, tuple[bytes, Any]] = {}
_PENDING: dict[str, threading.Event] = {}
_SKIPPED: set[str] = set()
_LOCK = threading.Lock()


def _key(folder: str) -> str:
    return os.path.realpath(folder)


def begin(folder: str) -> None:
    """Note that a warm-up of `folder` is under way, so that `take` waits for it; called by the
    thread that starts the one that will run `warm`."""
    with _LOCK:
        _PENDING.setdefault(_key(folder), threading.Event())


class StoreMeta(NamedTuple):
    collection: str
    dimension: int
    signature: str | None
    """The vector files' stat signature as chinvex last left them (vector_signature)."""


def store_meta(sqlite_path: str) -> StoreMeta | None:
    """What hybrid.db records about its store, read without migrating or writing anything; None
    when the collection or the dimension is missing or the file cannot be read."""
    rows = read_only_meta(sqlite_path, (COLLECTION_META_KEY, DIMENSION_META_KEY, SIGNATURE_META_KEY))
    if rows is None:
        return None
    try:
        name, dimension = rows.get(COLLECTION_META_KEY), int(rows.get(DIMENSION_META_KEY) or 0)
    except ValueError:
        return None
    return StoreMeta(str(name), dimension, rows.get(SIGNATURE_META_KEY)) if name and dimension > 0 else None


def warm(folder: str, sqlite_path: str) -> None:
    """Load the index of the embedded store in `folder` (see the module docstring).

    Only a store whose vector files are as chinvex last left them is warmed. Chroma's bindings
    import chromadb's exception types when they fail, and that import, racing the imports the
    process's other threads make at this moment, can leave a module half-initialised, which
    aborts the process; a store changed outside chinvex (the likely failure) is left for the
    search to open on its own, after those imports are done."""
    key = _key(folder)
    begin(folder)
    try:
        meta = store_meta(sqlite_path)
        if meta is not None and _writable(Path(folder)) and _as_left(folder, meta.signature):
            loaded = _load(folder, meta.collection, meta.dimension)
            if loaded is not None:
                with _LOCK:
                    _WARMED[key] = loaded
    except Exception:  # the search's own open meets it again and reports it
        pass
    finally:
        with _LOCK:
            event = _PENDING.pop(key, None)
        if event is not None:
            event.set()


def skip(folder: str) -> None:
    """Nothing will be warmed for `folder` (its vector matrix answers instead,
    chinvex.storage.vector_matrix): `take` stops waiting for it."""
    with _LOCK:
        _SKIPPED.add(_key(folder))
        event = _PENDING.pop(_key(folder), None)
    if event is not None:
        event.set()


def skipped(folder: str) -> bool:
    """Whether this process's cold start found `folder`'s vector matrix current (`skip`)."""
    with _LOCK:
        return _key(folder) in _SKIPPED


def _as_left(folder: str, recorded: str | None) -> bool:
    signature = parse_signature(recorded)
    return signature is not None and signature == folder_signature(Path(folder))


def take(folder: str, token: bytes, wait: float = 60.0) -> Any | None:
    """The reader warmed for `folder`, if it was loaded at `token` (the gate's token, read by
    the caller under its own hold of the gate), waiting up to `wait` seconds for a warm-up in
    progress; None otherwise. Each reader is handed out once."""
    with _LOCK:
        event = _PENDING.get(_key(folder))
    if event is not None:
        event.wait(wait)
    with _LOCK:
        warmed = _WARMED.pop(_key(folder), None)
    if warmed is None:
        return None
    if warmed[0] != token:
        try:
            warmed[1].close()
        except Exception:
            pass
        return None
    return warmed[1]


def _writable(folder: Path) -> bool:
    database = folder / "chroma.sqlite3"
    return database.is_file() and os.access(folder, os.W_OK) and os.access(database, os.W_OK)


def _load(folder: str, collection: str, dimension: int) -> tuple[bytes, Any] | None:
    """Under a shared hold of the gate: the token, and a reader whose index is loaded."""
    from chinvex.storage.chroma_reader import open_reader
    from chinvex.storage.vector_gate import StoreGate

    gate = StoreGate(Path(folder))
    try:
        gate.acquire(exclusive=False, timeout=GATE_WAIT_SECONDS)
        try:
            token = gate.token()
            reader = open_reader(folder)
            if reader is None:
                return None
            reader.get_collection(collection).query([[1.0] + [0.0] * (dimension - 1)], 1)
            return token, reader
        finally:
            gate.release()
    finally:
        gate.close()
