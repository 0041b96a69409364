"""Opening a Chroma client for a context's store: embedded (Rust bindings) or a server.

An embedded store is opened through Chroma's Rust bindings without importing chromadb
(chinvex.storage.chroma_reader for read-only processes, chroma_writer for the rest; chromadb's
`PersistentClient` when the installed bindings are not the expected ones); `index.chroma_url`
points the same code at a `chroma run` server, always through chromadb. A store the process may
not write is read from a private copy, because Chroma cannot open such a store at all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from chinvex.errors import StorageError
from chinvex.models import ContextConfig
from chinvex.storage.coverage import CHROMA_DB_FILE, GATE_FILE
from chinvex.storage.vector_errors import (
    DamagedStoreError,
    ReadOnlyStoreError,
    open_error,
)

_READ_ONLY_PROCESS = False


def read_only_process() -> None:
    """Declare that this process reads embedded stores and never writes them (`chinvex search`,
    `chinvex answer`): its stores are then opened by chinvex.storage.chroma_reader, whose client
    has no write calls, so a write from such a process fails loudly. Every process opens
    embedded stores through Chroma's Rust bindings without importing the `chromadb` package,
    whose import is a large share of a short command's start-up; a Chroma server
    (`index.chroma_url`) is always reached through chromadb."""
    global _READ_ONLY_PROCESS
    _READ_ONLY_PROCESS = True


def reads_only() -> bool:
    """Whether `read_only_process` was declared in this process."""
    return _READ_ONLY_PROCESS


def _settings():
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def open_client(config: ContextConfig) -> Any:
    """A new Chroma client for `config`'s store; failures become a classified `StorageError`."""
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
            forget_failed_system(path)
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


def forget_failed_system(path: str) -> None:
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
