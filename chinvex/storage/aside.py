"""Setting a damaged index file aside: renamed with a UTC timestamp beside the original, never
deleted, so that `doctor --repair` and an ingest that meets a damaged vector store can build a
new one while the old stays for the user to inspect."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from chinvex.models import ContextConfig


def stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def aside_path(path: Path, stamp: str) -> Path:
    """`<name>.damaged-<UTC stamp>` next to `path`, never an existing name."""
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 2
    while target.exists() or Path(f"{target}-wal").exists():
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
        n += 1
    return target


def move_aside_damaged_store(config: ContextConfig) -> str:
    """Rename the embedded Chroma folder out of the way (kept) so a new store can be built; the
    caller then embeds every chunk into the new one. Returns the action line."""
    from chinvex.storage.vector_clients import forget_store

    if config.index.chroma_url:
        return (f"the Chroma server at {config.index.chroma_url} reports its store as damaged; "
                "repair it on the server (nothing was moved here)")
    chroma = Path(config.index.chroma_dir)
    forget_store(config)
    kept = aside_path(chroma, stamp())
    os.replace(chroma, kept)
    return (f"moved the damaged Chroma store {chroma} to {kept} (kept: delete it once you no "
            "longer need it) and rebuilt the store from hybrid.db")
