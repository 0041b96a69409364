"""The Chroma side of an index: one vector per chunk_id, cosine space, filterable metadata.

Chroma is derived data: hybrid.db decides which chunks exist. An embedded store by default,
opened through Chroma's Rust bindings without importing chromadb (chinvex.storage.chroma_reader
for read-only processes, chroma_writer for the rest; chromadb's `PersistentClient` when the
installed bindings are not the expected ones); `index.chroma_url` points the same code at a
`chroma run` server, always through chromadb. Vectors are always
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
from chinvex.storage.coverage import CHROMA_DB_FILE, COLLECTION_META_KEY, GATE_FILE, store_identity
from chinvex.storage.db import get_meta, set_meta

try:  # POSIX: shared and exclusive locks
    import fcntl
except ImportError:  # pragma: no cover - Windows: exclusive byte-range lock for both
    fcntl = None  # type: ignore[assignment]
    import msvcrt

SYNC_THRESHOLD = 1
"""Chroma's `hnsw.sync_threshold` for chinvex collections: its HNSW index is saved after every
write. With Chroma's default (1,000) the records written since the last save live only in its
log, and every process that opens the store inserts them into its own copy of the graph in
parallel and in a random order (rayon over a randomly seeded hash map): each process then had a
slightly different graph, the approximate search returned slightly different neighbours, and
the same query gave different results from one `chinvex search` to the next. Saved after each
write, the graph on disk is the one every reader uses. Chroma saves only the elements a write
changed, plus the id map."""
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


_READ_ONLY_PROCESS = False


def read_only_process() -> None:
    """Declare that this process reads embedded stores and never writes them (`chinvex search`,
    `chinvex answer`): its stores are then opened by chinvex.storage.chroma_reader, whose client
    has no write calls, so a write from such a process fails loudly. Every process opens
    embedded stores through Chroma's Rust bindings without importing the `chromadb` package
    (~0.7 s less CPU); a Chroma server (`index.chroma_url`) is always reached through chromadb."""
    global _READ_ONLY_PROCESS
    _READ_ONLY_PROCESS = True


def reads_only() -> bool:
    """Whether `read_only_process` was declared in this process."""
    return _READ_ONLY_PROCESS


def _settings():
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def _client(config: ContextConfig):
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    url = config.index.chroma_url
    path = config.index.chroma_dir
    if not url:
        try:
            if not _may_write(Path(path)):
                path = _private_copy(config)
            if _READ_ONLY_PROCESS:
                from chinvex.storage.chroma_reader import open_reader

                direct: Any = open_reader(path)
            else:
                from chinvex.storage.chroma_writer import open_writer

                direct = open_writer(path)
        except StorageError:
            raise
        except Exception as exc:
            raise open_error(config, exc) from None
        if direct is not None:
            return direct
    from chinvex.embedding.heavy_imports import load

    load("chromadb")  # a prefetch thread may be importing it, an embed thread onnxruntime
    import chromadb

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
        # `path` is the folder the bindings were tried on: the store, or its private copy.
        return chromadb.PersistentClient(path=path, settings=_settings())
    except StorageError:
        raise
    except Exception as exc:
        if not url:
            _forget_failed_system(path)
        raise open_error(config, exc) from None


_COPY_PREFIX = "chinvex-readonly-store-"


def _remove_dead_copies() -> None:
    """Copies left by processes that ended without running exit handlers (`chinvex search`
    leaves through `os._exit`): the owner's pid is in the folder name."""
    import shutil
    import tempfile

    if os.name == "nt":  # pragma: no cover - os.kill(pid, 0) would terminate the process there
        return
    try:
        entries = list(Path(tempfile.gettempdir()).glob(f"{_COPY_PREFIX}*"))
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(_COPY_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


READONLY_COPY_LIMIT = 512 * 1024 * 1024
"""Largest read-only store read through a private copy (see `_private_copy`)."""
_COPIES: dict[str, str] = {}


def _may_write(folder: Path) -> bool:
    database = folder / CHROMA_DB_FILE
    return os.access(folder, os.W_OK) and (not database.exists() or os.access(database, os.W_OK))


def _private_copy(config: ContextConfig) -> str:
    """Chroma cannot open a store it may not write (its Rust bindings open `chroma.sqlite3`
    read-write and fail with "attempt to write a readonly database"). A read-only index (a
    folder made read-only, a read-only mount) is still searchable: the store is copied into a
    private temporary folder, removed at exit, and read there. Nobody can write the original
    while it is read-only; if it becomes writable and changes, the gate's token changes and the
    reopened client copies it again. Stores over `READONLY_COPY_LIMIT` are refused instead
    (search then answers from the full-text index, and says why)."""
    import atexit
    import shutil
    import tempfile

    source = Path(config.index.chroma_dir)
    size = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    if size > READONLY_COPY_LIMIT:
        raise ReadOnlyStoreError(
            f"Chroma store at {source} is read-only and too large ({size // (1024 * 1024)} MB) "
            "to read from a private copy; Chroma cannot open a store it may not write, so "
            "vector search is unavailable until it is writable")
    old = _COPIES.pop(str(source), None)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    _remove_dead_copies()
    base = tempfile.mkdtemp(prefix=f"{_COPY_PREFIX}{os.getpid()}-")
    atexit.register(shutil.rmtree, base, True)
    target = Path(base) / "chroma"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(GATE_FILE))
    for item in [target, *target.rglob("*")]:  # the copy keeps the original's read-only modes
        item.chmod(item.stat().st_mode | 0o200)
    _COPIES[str(source)] = base
    return str(target)


def _forget_failed_system(path: str) -> None:
    """chromadb caches one System per persist directory and puts it in the cache *before*
    starting it: when the start fails (a damaged or read-only `chroma.sqlite3`), the next client
    for that path in this process gets the half-started System and fails with "'RustBindingsAPI'
    object has no attribute 'bindings'" instead of the real reason. Drop such an entry (one no
    client holds a reference to), so every attempt reports, or gets past, the real problem."""
    try:
        from chromadb.api.shared_system_client import SharedSystemClient as Shared
    except Exception:  # pragma: no cover - another chromadb layout: nothing to clean
        return
    try:
        with Shared._refcount_lock:
            for key in [path, os.path.abspath(path)]:
                if key in Shared._identifier_to_system and not Shared._identifier_to_refcount.get(key):
                    del Shared._identifier_to_system[key]
    except Exception:  # pragma: no cover - private API changed: nothing to clean
        pass


def check_store_file(config: ContextConfig) -> None:
    """Raise `DamagedStoreError` at once when the embedded store's database file exists but is
    not SQLite (overwritten with garbage), so that an ingest stops before it reads any source
    rather than after. Deeper damage shows when the store is opened."""
    if config.index.chroma_url:
        return
    path = Path(config.index.chroma_dir) / CHROMA_DB_FILE
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return  # missing (rebuilt by the ingest) or unreadable (reported when opened)
    if head and head != b"SQLite format 3\x00":
        raise DamagedStoreError(
            f"Chroma store at {config.index.chroma_dir} is damaged ({path.name} is not a SQLite "
            f"database); run 'chinvex doctor --context {config.name} --repair' to rebuild it "
            "from hybrid.db (the damaged folder is kept)")


def forget_store(config: ContextConfig) -> None:
    """Let go of every client this process holds on an embedded store, before its folder is
    moved (a repair rebuilding it): the next access opens the new folder."""
    key = "dir:" + os.path.realpath(config.index.chroma_dir)
    with _SharedClient._registry_lock:
        shared = _SharedClient._registry.pop(key, None)
    if shared is not None:
        with shared.lock:
            shared.drop_client()
            if shared.gate is not None:
                shared.gate.close()
    _forget_failed_system(config.index.chroma_dir)


def open_error(config: ContextConfig, exc: BaseException) -> StorageError:
    """The one-line error for a store Chroma cannot open, classified so that the user is told
    what to do: a read-only folder is not damage, a file that is not a database is."""
    where = config.index.chroma_url or config.index.chroma_dir
    text = f"{exc}"
    if _says_any(text, READ_ONLY_MARKERS):
        return ReadOnlyStoreError(
            f"Chroma store at {where} is read-only ({text}); Chroma cannot open a store it may "
            "not write, so vector search is unavailable until it is writable")
    if is_damage(text):
        return DamagedStoreError(
            f"Chroma store at {where} is damaged ({text}); run 'chinvex doctor --context "
            f"{config.name} --repair' to rebuild it from hybrid.db (the damaged folder is kept)")
    return StorageError(f"Chroma store at {where} is not available: {text}")


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
        self.path = folder / GATE_FILE
        self.writable = True
        binary = getattr(os, "O_BINARY", 0)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT | binary, 0o644)
        except PermissionError as exc:
            # A read-only index: a shared lock needs no write access, so readers may still
            # take the gate (no writer can write this store anyway).
            try:
                self._fd = os.open(self.path, os.O_RDONLY | binary)
            except OSError:
                raise ReadOnlyStoreError(f"Chroma store at {folder} is read-only and has no gate "
                                         f"file {self.path}: {exc.strerror or exc}") from None
            self.writable = False
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
        if not self.writable:
            raise ReadOnlyStoreError(f"Chroma store at {self.path.parent} is read-only: it cannot "
                                     "be written")
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
        self.fresh = False
        """This object created the collection (or emptied it): nothing older is in it."""
        self._shared: _SharedClient | None = None
        self._collection: Any = None
        self._generation = -1
        if not config.index.chroma_url:
            db_file = Path(config.index.chroma_dir) / CHROMA_DB_FILE
            if not db_file.exists():
                if not create:  # read paths never create a store (an empty one would hide the loss)
                    raise MissingStoreError(
                        f"Chroma store at {config.index.chroma_dir} is missing; run 'chinvex "
                        f"ingest --context {config.name}' to embed the chunks again")
                self.fresh = True
        self._shared = _SharedClient.acquire(config)
        try:
            try:
                with self._shared.access(write=False) as client:
                    self._collection_of(client, create=False)
            except Exception as exc:
                if not create or isinstance(exc, (DamagedStoreError, ReadOnlyStoreError)):
                    raise
                if _is_not_found(exc):
                    self.fresh = True
                with self._shared.access(write=True) as client:
                    self._collection_of(client, create=True)
        except StorageError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            if not create and _is_not_found(exc):
                raise MissingStoreError(
                    f"Chroma collection {name!r} is missing from {config.index.chroma_url or config.index.chroma_dir}; "
                    f"run 'chinvex ingest --context {config.name}' to embed the chunks again") from None
            raise StorageError(f"Chroma collection {name!r} is not available: {exc}") from None

    def identity(self, conn: sqlite3.Connection) -> str | None:
        """This store's `coverage.store_identity` (the collection name is read from `conn`)."""
        return store_identity(self.config, conn)

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
                    self.name, embedding_function=None,
                    configuration={"hnsw": {"space": "cosine", "sync_threshold": SYNC_THRESHOLD}},
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
        """Hold the gate exclusively around one write; whatever Chroma raises (a full disk, a
        file-size limit, a damaged file) becomes a one-line `StorageError` naming the store."""
        try:
            with self._shared_client().access(write=True) as client:
                collection = self._collection_of(client, create=True)
                if _sync_threshold(collection) != SYNC_THRESHOLD:
                    collection = self._save_every_write(collection)
                yield collection
        except StorageError:
            raise
        except Exception as exc:
            if isinstance(exc, OSError) or _is_storage_failure(exc):
                raise write_error(self.config, exc) from None
            raise

    def _save_every_write(self, collection: Any) -> Any:
        """A collection made by an older chinvex keeps Chroma's default threshold: set it (see
        SYNC_THRESHOLD), then reopen the client (callers hold the write gate), whose segment
        writer read the old value when it loaded; its first write then also saves the records
        the log held."""
        collection.modify(configuration={"hnsw": {"sync_threshold": SYNC_THRESHOLD}})
        self._collection = None
        return self._collection_of(self._shared_client().reopen(), create=True)

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

    def segment_damage(self) -> str | None:
        """Why the collection's vector segment cannot be loaded (see SEGMENT_DAMAGE_MARKERS), or
        None. Reading one stored vector makes Chroma load the segment's files (a count or an id
        listing may be answered from its SQLite file alone)."""
        try:
            self._read(lambda collection: collection.get(limit=1, include=["embeddings"]))
        except StorageError as exc:
            if is_segment_damage(exc.message):
                return exc.message
            raise
        return None

    def query(
        self, vector: Any, n: int, *, source_types: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest chunks as (chunk_id, cosine similarity); `ids` restricts the search to those
        chunks (search filters on paths and dates, which the vectors' metadata does not hold)."""
        return self._query(vector, n, source_types, ids, with_vectors=False)[0]

    def query_with_vectors(self, vector: Any, n: int, *, source_types: Sequence[str] | None = None,
                           ) -> tuple[list[tuple[str, float]], dict[str, Any]]:
        """`query`, and the stored vector of every neighbour from the same call: the exact
        rescoring needs them, and a second lookup by id cost ~1.5 ms a search at 100k."""
        return self._query(vector, n, source_types, None, with_vectors=True)

    def _query(self, vector: Any, n: int, source_types: Sequence[str] | None,
               ids: Sequence[str] | None, *, with_vectors: bool,
               ) -> tuple[list[tuple[str, float]], dict[str, Any]]:
        if n <= 0 or (ids is not None and not ids):
            return [], {}
        restrict = list(ids) if ids is not None else None
        where = None
        if source_types:
            types = list(source_types)
            where = {"source_type": types[0]} if len(types) == 1 else {"source_type": {"$in": types}}

        def run(collection: Any) -> tuple[list[tuple[str, float]], dict[str, Any]]:
            # No count() to clamp n_results: Chroma (>= 1.5) returns what it has, and counting
            # costs ~10 ms a query at 100k vectors.
            got = collection.query(
                query_embeddings=[vector], n_results=n, where=where, ids=restrict,
                include=["distances", "embeddings"] if with_vectors else ["distances"],
            )
            ids = got["ids"][0] if got["ids"] else []
            dists = got["distances"][0] if got.get("distances") else []
            found = [(cid, 1.0 - float(d)) for cid, d in zip(ids, dists)]
            if not with_vectors:
                return found, {}
            vectors = got["embeddings"][0] if got.get("embeddings") is not None and len(got["embeddings"]) else []
            return found, dict(zip(ids, vectors))

        return self._read(run)

    def drop_other_collections(self) -> int:
        """Delete every other collection of this (embedded, one-context) store; returns how
        many. Never used on a Chroma server, whose collections may be other contexts'."""
        if self.config.index.chroma_url:
            return 0
        dropped = 0
        with self._writing():
            client = self._shared_client().current()
            for collection in client.list_collections():
                name = getattr(collection, "name", collection)
                if name != self.name:
                    client.delete_collection(name)
                    dropped += 1
        return dropped

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
        self.fresh = True


def _sync_threshold(collection: Any) -> int | None:
    try:
        hnsw = (collection.configuration_json or {}).get("hnsw") or {}
    except Exception:  # pragma: no cover - another chromadb layout: leave the collection as it is
        return SYNC_THRESHOLD
    return hnsw.get("sync_threshold")


def is_damage(text: str) -> bool:
    """Whether Chroma's error text says the store's files are damaged (DAMAGE_MARKERS)."""
    return _says_any(text, DAMAGE_MARKERS)


def is_segment_damage(text: str) -> bool:
    return _says_any(text, SEGMENT_DAMAGE_MARKERS)


def _says_any(text: str, markers: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in markers)


def _is_not_found(exc: BaseException) -> bool:
    return type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc)


def _is_storage_failure(exc: BaseException) -> bool:
    """Chroma's own errors (raised from its Rust bindings as `chromadb.errors.*`): a write that
    failed inside the store, not a bug of the caller's."""
    return type(exc).__module__.startswith("chromadb")


def write_error(config: ContextConfig, exc: BaseException) -> StorageError:
    where = config.index.chroma_url or config.index.chroma_dir
    text = (getattr(exc, "strerror", None) or str(exc)).strip() or type(exc).__name__
    if _says_any(text, READ_ONLY_MARKERS):
        return ReadOnlyStoreError(f"Chroma store at {where} is read-only: {text}")
    if is_damage(text):
        return DamagedStoreError(
            f"Chroma store at {where} is damaged ({text}); run 'chinvex doctor --context "
            f"{config.name} --repair' to rebuild it from hybrid.db")
    return StorageError(f"could not write the Chroma store at {where}: {text}")
