"""Whether an index may be written, asked before a writer starts.

A read-only index (a folder made read-only, a read-only mount, files of another user) must
leave readers working and make writers stop at once with one line that says why, instead of
failing half-way with "attempt to write a readonly database" or a PermissionError from the lock
file. The question is answered from the permissions (`os.access`, which honours the caller's
real capabilities), before anything is opened.
"""

from __future__ import annotations

import os
from pathlib import Path

from chinvex.models import ContextConfig
from chinvex.storage.coverage import CHROMA_DB_FILE
from chinvex.storage.db import ReadOnlyIndexError


def read_only_parts(config: ContextConfig) -> list[str]:
    """The index files and folders a writer needs and may not write (empty: all writable).
    Missing files are fine when their folder may be written (they are created)."""
    index_dir = Path(config.index.sqlite_path).parent
    wanted: list[Path] = []
    existing = _nearest_existing(index_dir)
    wanted.append(existing)
    if index_dir.exists():
        for name in (Path(config.index.sqlite_path).name, "chinvex.lock"):
            if (index_dir / name).exists():
                wanted.append(index_dir / name)
    if not config.index.chroma_url:
        chroma = Path(config.index.chroma_dir)
        if chroma.exists():
            wanted.append(chroma)
            try:
                wanted += [p for p in chroma.iterdir() if p.name == CHROMA_DB_FILE or p.is_dir()]
            except OSError:
                pass  # an unreadable store folder: its own W_OK test above speaks for it
    blocked = [str(p) for p in dict.fromkeys(wanted) if not os.access(p, os.W_OK)]
    return blocked


def check_writable(config: ContextConfig, *, action: str) -> None:
    """Raise `ReadOnlyIndexError` (one line, exit 1) when `action` could not write the index."""
    blocked = read_only_parts(config)
    if blocked:
        more = f" (and {len(blocked) - 1} more)" if len(blocked) > 1 else ""
        raise ReadOnlyIndexError(
            f"{action} needs to write the index of context {config.name!r}, but {blocked[0]} is "
            f"read-only{more}; make the index folder {Path(config.index.sqlite_path).parent} "
            "writable (search still works on a read-only index)")


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path
