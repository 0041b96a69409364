"""One writer per context: ingest, rename and delete take the context's lock.

Readers never take it; SQLite WAL lets searches continue from the last committed state.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from chinvex.errors import LockedError, StorageError
from chinvex.models import ContextConfig


def lock_path(config: ContextConfig) -> Path:
    return Path(config.index.sqlite_path).parent / "chinvex.lock"


def lock_holder(config: ContextConfig) -> tuple[str | None, int | None]:
    """What holds the context's lock, as it wrote itself down (`ingest (pid 123)`), and its pid;
    (None, None) when nothing is written (no holder, or one that never got that far)."""
    info = lock_path(config).with_suffix(".holder")
    try:
        text = info.read_text(encoding="utf-8").strip()
    except OSError:
        return None, None
    match = re.search(r"\(pid (\d+)\)", text)
    return text, int(match.group(1)) if match else None


def process_alive(pid: int) -> bool:
    """Whether `pid` is a running process (a zombie its parent has not reaped is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def ingest_alive(config: ContextConfig) -> bool:
    """Whether an ingest of the context is running in some process, this one included."""
    text, pid = lock_holder(config)
    return text is not None and text.startswith("ingest") and pid is not None and process_alive(pid)


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
