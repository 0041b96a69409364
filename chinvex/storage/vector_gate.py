"""The gate of an embedded Chroma store: a cross-process reader/writer lock and change token.

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
shared for reads and exclusive for writes (a write is one Chroma call, so a reader never waits
for more than one batch). A writer stores a fresh token in the gate file before each write; a
reader holding the gate compares it with the token its client was opened at and opens the
client again when they differ, at a moment no writer is touching the files. Checking costs a
few system calls per access, nothing that grows with the collection; the reload (which does)
happens only after a write.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from chinvex.errors import StorageError
from chinvex.storage.store_files import GATE_FILE, TOKEN_BYTES
from chinvex.storage.vector_errors import ReadOnlyStoreError, VectorStoreBusyError

try:  # POSIX: shared and exclusive locks
    import fcntl
except ImportError:  # pragma: no cover - Windows: exclusive byte-range lock for both
    fcntl = None  # type: ignore[assignment]
    import msvcrt

READ_WAIT_SECONDS = 60.0
"""A reader waits for the write in progress (one Chroma call), never for a whole ingest."""
WRITE_WAIT_SECONDS = 600.0
_WINDOWS_LOCK_OFFSET = 1 << 20
"""Windows locks are mandatory: lock a byte far from the token so reading it is never refused."""


class StoreGate:
    """Cross-process reader/writer lock on one embedded store, and its change token.

    The token (the first bytes of the lock file) is only written under the exclusive lock and
    only read under a lock, so a reader never sees half of one. The callers serialise the
    threads of one process (`SharedClient.lock`), so the file offset is never raced."""

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
        return os.read(self._fd, TOKEN_BYTES)

    def bump(self) -> bytes:
        assert self._fd is not None
        if not self.writable:
            raise ReadOnlyStoreError(f"Chroma store at {self.path.parent} is read-only: it cannot "
                                     "be written")
        token = uuid.uuid4().hex.encode()[:TOKEN_BYTES]
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
