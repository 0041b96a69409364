"""The Chroma side of an index: one vector per chunk_id, cosine space, filterable metadata.

Chroma is derived data: hybrid.db decides which chunks exist. Embedded `PersistentClient` by
default; `index.chroma_url` points the same code at a `chroma run` server. Vectors are always
passed explicitly (`embedding_function=None`): Chroma never embeds or downloads anything.

Several processes share one embedded store: an ingest writes while the MCP server and CLI
searches read. Embedded Chroma (1.x, Rust bindings) is not built for that. Each client loads a
collection's HNSW index into memory once and keeps it, while the id and metadata tables in
`chroma.sqlite3` are read live; the HNSW label of a record is its row id there. After another
process writes, the two disagree: a metadata-filtered query or a `get` of a new id fails with
"Error executing plan: Internal error: Error finding id" (the tables name a label the loaded
index lacks), and an unfiltered query quietly answers from the old index (deleted ids in, new
ones out). Re-opening the client is the only way to reload, but a client that loads the index
files while a writer is rewriting them in place may read a torn file (we saw the reader
segfault), and readers starting or querying mid-write made the writer's own compaction fail
("Failed to apply logs to the metadata segment").

So every access to an embedded store passes a gate: a lock file in the Chroma folder, held
shared for reads and exclusive for writes (a write is one Chroma call, a few milliseconds to a
batch's worth; a reader waits at most that). A writer stores a fresh token in the gate file
before each write; a reader holding the gate compares it with the token its client was opened
at and opens the client again when they differ, at a moment no writer is touching the files.
Checking costs a few system calls per access, nothing that grows with the collection; the
reload (which does) happens only after a write. If a read still fails, the client is opened
again and the read retried once, for writers that bypass the gate (a crashed run, another tool).

chromadb keeps one System per persist directory per process; this module likewise keeps one
client per store per process (`_SharedClient`), so re-opening really reloads and every
`VectorStore` of that store sees the reloaded one.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlparse

from chinvex.errors import StorageError
from chinvex.models import ContextConfig
from chinvex.storage.db import get_meta, set_meta

try:  # POSIX: shared and exclusive locks
    import fcntl
except ImportError:  # pragma: no cover - Windows: exclusive byte-range lock for both
    fcntl = None  # type: ignore[assignment]
    import msvcrt

COLLECTION_META_KEY = "chroma_collection"
GATE_FILE = "chinvex-gate.lock"
READ_WAIT_SECONDS = 60.0
"""A reader waits for the write in progress (one Chroma call), never for a whole ingest."""
WRITE_WAIT_SECONDS = 600.0
_TOKEN_BYTES = 32
_WINDOWS_LOCK_OFFSET = 1 << 20
"""Windows locks are mandatory: lock a byte far from the token so reading it is never refused."""
_GET_PAGE = 5000

T = TypeVar("T")


class VectorStoreBusyError(StorageError):
    """The store's gate could not be taken in time (a writer or reader is stuck)."""


def _settings():
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def _client(config: ContextConfig):
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from chinvex.heavy_imports import load

    load("chromadb")  # a prefetch thread may be importing it, an embed thread onnxruntime
    import chromadb

    url = config.index.chroma_url
    try:
        if url:
            parsed = urlparse(url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise StorageError(f"index.chroma_url {url!r}: expected http(s)://host:port")
            return chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=_settings(),
            )
        return chromadb.PersistentClient(path=config.index.chroma_dir, settings=_settings())
    except StorageError:
        raise
    except Exception as exc:
        where = url or config.index.chroma_dir
        raise StorageError(f"Chroma store at {where} is not available: {exc}") from None


def collection_name(conn: sqlite3.Connection, *, create: bool) -> str | None:
    """The collection's name is fixed at first use and kept in hybrid.db, so renaming a context
    never orphans its vectors on a shared Chroma server."""
    name = get_meta(conn, COLLECTION_META_KEY)
    if name is None and create:
        name = f"chinvex_{uuid.uuid4().hex[:16]}"
        set_meta(conn, COLLECTION_META_KEY, name)
    return name


class _Gate:
    """Cross-process reader/writer lock on one embedded store, and its change token.

    The token (the first bytes of the lock file) is only written under the exclusive lock and
    only read under a lock, so a reader never sees half of one. The callers serialise the
    threads of one process (`_SharedClient.lock`), so the file offset is never raced."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / GATE_FILE
        try:
            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
        except OSError as exc:
            raise StorageError(f"Chroma store at {folder} is not available: cannot open {self.path}: "
                               f"{exc.strerror or exc}") from None

    def _try(self, exclusive: bool) -> bool:
        assert self._fd is not None
        try:
            if fcntl is not None:
                fcntl.flock(self._fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            else:  # pragma: no cover - Windows
                os.lseek(self._fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
                msvcrt.locking(self._fd, msvcrt.LK_NBLCK, 1)
        except (BlockingIOError, PermissionError):
            return False
        except OSError as exc:
            if fcntl is None:  # pragma: no cover - msvcrt reports contention as a plain OSError
                return False
            raise StorageError(f"{self.path}: cannot lock: {exc.strerror or exc}") from None
        return True

    def acquire(self, *, exclusive: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.0005
        while not self._try(exclusive):
            if time.monotonic() >= deadline:
                what = "written" if not exclusive else "used"
                raise VectorStoreBusyError(
                    f"Chroma store {self.path.parent} is being {what} by another process and stayed "
                    f"busy for {timeout:.0f}s")
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def release(self) -> None:
        assert self._fd is not None
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        else:  # pragma: no cover - Windows
            os.lseek(self._fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(self._fd, msvcrt.LK_UNLCK, 1)

    def token(self) -> bytes:
        assert self._fd is not None
        os.lseek(self._fd, 0, os.SEEK_SET)
        return os.read(self._fd, _TOKEN_BYTES)

    def bump(self) -> bytes:
        assert self._fd is not None
        token = uuid.uuid4().hex.encode()[:_TOKEN_BYTES]
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.write(self._fd, token)
        return token

    def is_current(self) -> bool:
        """Whether the lock file is still the one at `path` (not deleted or replaced)."""
        if self._fd is None:
            return False
        try:
            here, mine = os.stat(self.path), os.fstat(self._fd)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _SharedClient:
    """This process's one Chroma client for one store, reopened when another process wrote."""

    _registry: ClassVar[dict[str, "_SharedClient"]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, key: str, config: ContextConfig):
        self.key = key
        self.config = config
        self.lock = threading.RLock()
        self.gate = None if config.index.chroma_url else _Gate(Path(config.index.chroma_dir))
        self.client: Any = None
        self.generation = 0
        """Bumped on every (re)open: collections fetched from an older client are stale."""
        self.max_batch = 5000
        self._token: bytes | None = None
        self._held: str | None = None
        self._users = 0

    @classmethod
    def acquire(cls, config: ContextConfig) -> "_SharedClient":
        url = config.index.chroma_url
        key = f"url:{url}" if url else "dir:" + os.path.realpath(config.index.chroma_dir)
        with cls._registry_lock:
            shared = cls._registry.get(key)
            if shared is not None and shared.gate is not None and not shared.gate.is_current():
                # The folder was deleted and made again (context deleted and re-created in this
                # process): the old client reads files that are gone.
                with shared.lock:
                    shared.drop_client()
                del cls._registry[key]
                shared = None
            if shared is None:
                shared = cls(key, config)
                cls._registry[key] = shared
            shared._users += 1
            return shared

    def release(self) -> None:
        with self._registry_lock:
            self._users -= 1
            if self._users > 0:
                return
            if self._registry.get(self.key) is self:
                del self._registry[self.key]
        with self.lock:
            self.drop_client()
            if self.gate is not None:
                self.gate.close()

    def current(self) -> Any:
        """The open client (opened now if needed); callers hold `access`."""
        if self.client is None:
            self.client = _client(self.config)
            self.generation += 1
            getter = getattr(self.client, "get_max_batch_size", None)
            try:
                self.max_batch = int(getter()) if getter else 5000
            except Exception:
                self.max_batch = 5000
        return self.client

    def reopen(self) -> Any:
        """Open a new client now (callers hold `access`, so no writer is touching the files)."""
        self.drop_client()
        client = self.current()
        if self.gate is not None:
            self._token = self.gate.token()
        return client

    def drop_client(self) -> None:
        """Forget the client: the next access opens a new one, reloading the index files."""
        client, self.client = self.client, None
        self._token = None
        if client is not None:
            try:
                client.close()
            except Exception:
                pass

    @contextmanager
    def access(self, *, write: bool) -> Iterator[Any]:
        """Hold the gate (shared to read, exclusive to write) and yield an up-to-date client."""
        with self.lock:
            if self._held is not None:  # nested call on this thread: the outer hold covers it
                if write and self._held != "write":
                    raise RuntimeError("a Chroma write nested inside a read of the same store")
                yield self.current()
                return
            if self.gate is not None:
                self.gate.acquire(exclusive=write,
                                  timeout=WRITE_WAIT_SECONDS if write else READ_WAIT_SECONDS)
            self._held = "write" if write else "read"
            try:
                if self.gate is not None:
                    token = self.gate.token()
                    if self.client is not None and token != self._token:
                        self.drop_client()  # another process wrote since this client loaded
                    if write:
                        # Before writing, so that even a write that dies half-way leaves readers
                        # a new token to reload at.
                        token = self.gate.bump()
                    client = self.current()
                    self._token = token
                else:
                    client = self.current()
                try:
                    yield client
                except BaseException:
                    if write:  # a failed write may leave this client's index out of step
                        self.drop_client()
                    raise
            finally:
                self._held = None
                if self.gate is not None:
                    self.gate.release()


class VectorStore:
    def __init__(self, config: ContextConfig, name: str, *, create: bool = True):
        self.config = config
        self.name = name
        self._shared: _SharedClient | None = _SharedClient.acquire(config)
        self._collection: Any = None
        self._generation = -1
        try:
            try:
                with self._shared.access(write=False) as client:
                    self._collection_of(client, create=False)
            except Exception:
                if not create:
                    raise
                with self._shared.access(write=True) as client:
                    self._collection_of(client, create=True)
        except StorageError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise StorageError(f"Chroma collection {name!r} is not available: {exc}") from None

    @classmethod
    def open(cls, config: ContextConfig, conn: sqlite3.Connection, *, create: bool = True) -> "VectorStore | None":
        name = collection_name(conn, create=create)
        if name is None:
            return None
        return cls(config, name, create=create)

    def close(self) -> None:
        """Let go of the shared client (closed with its last user)."""
        shared, self._shared = self._shared, None
        self._collection = None
        if shared is not None:
            shared.release()

    def _shared_client(self) -> _SharedClient:
        if self._shared is None:
            raise StorageError(f"Chroma collection {self.name!r} was closed")
        return self._shared

    def _collection_of(self, client: Any, *, create: bool) -> Any:
        shared = self._shared_client()
        if self._collection is None or self._generation != shared.generation:
            if create:
                self._collection = client.get_or_create_collection(
                    self.name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
                )
            else:
                self._collection = client.get_collection(self.name, embedding_function=None)
            self._generation = shared.generation
        return self._collection

    def _read(self, fn: Callable[[Any], T]) -> T:
        """Run a read under the gate; if Chroma fails, reopen the client and retry once."""
        shared = self._shared_client()
        with shared.access(write=False) as client:
            try:
                return fn(self._collection_of(client, create=False))
            except StorageError:
                raise
            except Exception:
                pass
            try:
                return fn(self._collection_of(shared.reopen(), create=False))
            except StorageError:
                raise
            except Exception as exc:
                shared.drop_client()
                raise StorageError(f"Chroma collection {self.name!r} cannot be read even after "
                                   f"reopening it: {type(exc).__name__}: {exc}") from None

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        with self._shared_client().access(write=True) as client:
            yield self._collection_of(client, create=True)

    def _batches(self, n: int) -> Iterable[slice]:
        step = max(1, min(self._shared_client().max_batch, 1000))
        for start in range(0, n, step):
            yield slice(start, min(n, start + step))

    def upsert(self, ids: Sequence[str], embeddings: Any, metadatas: Sequence[dict[str, Any]]) -> None:
        if not ids:
            return
        with self._writing() as collection:
            for part in self._batches(len(ids)):
                collection.upsert(
                    ids=list(ids[part]), embeddings=embeddings[part], metadatas=list(metadatas[part])
                )

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        if not ids:
            return
        with self._writing() as collection:
            for part in self._batches(len(ids)):
                collection.delete(ids=ids[part])

    def existing(self, ids: Sequence[str]) -> set[str]:
        def run(collection: Any) -> set[str]:
            found: set[str] = set()
            for part in self._batches(len(ids)):
                found.update(collection.get(ids=list(ids[part]), include=[])["ids"])
            return found

        return self._read(run) if ids else set()

    def embeddings(self, ids: Sequence[str]) -> dict[str, Any]:
        def run(collection: Any) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for part in self._batches(len(ids)):
                got = collection.get(ids=list(ids[part]), include=["embeddings"])
                for cid, vec in zip(got["ids"], got["embeddings"]):
                    out[cid] = vec
            return out

        return self._read(run) if ids else {}

    def ids_for_docs(self, doc_ids: Sequence[str]) -> set[str]:
        def run(collection: Any) -> set[str]:
            found: set[str] = set()
            for start in range(0, len(doc_ids), 200):
                part = list(doc_ids[start:start + 200])
                where = {"doc_id": part[0]} if len(part) == 1 else {"doc_id": {"$in": part}}
                found.update(collection.get(where=where, include=[])["ids"])
            return found

        return self._read(run) if doc_ids else set()

    def all_ids(self) -> set[str]:
        """Every id, paged under one hold of the gate so no write shifts the pages."""

        def run(collection: Any) -> set[str]:
            found: set[str] = set()
            offset = 0
            while True:
                got = collection.get(include=[], limit=_GET_PAGE, offset=offset)["ids"]
                found.update(got)
                if len(got) < _GET_PAGE:
                    return found
                offset += _GET_PAGE

        return self._read(run)

    def count(self) -> int:
        return self._read(lambda collection: collection.count())

    def query(
        self, vector: Any, n: int, *, source_types: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest chunks as (chunk_id, cosine similarity); `ids` restricts the search to those
        chunks (search filters on paths and dates, which the vectors' metadata does not hold)."""
        if n <= 0 or (ids is not None and not ids):
            return []
        restrict = list(ids) if ids is not None else None
        where = None
        if source_types:
            types = list(source_types)
            where = {"source_type": types[0]} if len(types) == 1 else {"source_type": {"$in": types}}

        def run(collection: Any) -> list[tuple[str, float]]:
            # No count() to clamp n_results: Chroma (>= 1.5) returns what it has, and counting
            # costs ~10 ms a query at 100k vectors.
            got = collection.query(
                query_embeddings=[vector], n_results=n, where=where, ids=restrict,
                include=["distances"],
            )
            ids = got["ids"][0] if got["ids"] else []
            dists = got["distances"][0] if got.get("distances") else []
            return [(cid, 1.0 - float(d)) for cid, d in zip(ids, dists)]

        return self._read(run)

    def drop(self) -> None:
        """Remove the whole collection (re-embedding with another model)."""
        shared = self._shared_client()
        with shared.access(write=True) as client:
            try:
                client.delete_collection(self.name)
            except Exception:
                pass
            self._collection = None
            self._collection_of(client, create=True)
