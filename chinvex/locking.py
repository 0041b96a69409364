"""One writer per context: ingest, rename and delete take the context's lock.

Readers never take it; SQLite WAL lets searches continue from the last committed state.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from chinvex.errors import LockedError, StorageError
from chinvex.models import ContextConfig


def lock_path(config: ContextConfig) -> Path:
    return Path(config.index.sqlite_path).parent / "chinvex.lock"


def _holder(info: Path) -> str:
    try:
        return info.read_text(encoding="utf-8").strip()
    except OSError:
        return "another process"


@contextmanager
def context_lock(
    config: ContextConfig, *, wait: bool | float = False, purpose: str = "ingest"
) -> Iterator[None]:
    """Hold the context's lock; `wait` False fails at once, True waits, a number waits that long."""
    path = lock_path(config)
    info = path.with_suffix(".holder")
    timeout = -1 if wait is True else (0 if wait is False else float(wait))
    lock = FileLock(str(path), timeout=timeout)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout:
        raise LockedError(
            f"Context {config.name!r} is busy: {_holder(info)} holds {path}. "
            "Wait for it to finish, or pass --wait."
        ) from None
    except OSError as exc:  # a read-only index folder, a full disk
        raise StorageError(f"Cannot lock context {config.name!r} for {purpose}: {path}: "
                           f"{exc.strerror or exc}") from None
    try:
        try:
            info.write_text(f"{purpose} (pid {os.getpid()})", encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"Cannot write {info} for {purpose}: {exc.strerror or exc}") from None
        yield
    finally:
        try:
            info.unlink()
        except OSError:
            pass
        lock.release()
