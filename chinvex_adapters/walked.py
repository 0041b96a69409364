"""From a walked file (`chinvex.files.walk.WalkedFile`) to the adapter contract: the walker's own
verdict (excluded, unreadable, ...) as a SkippedSource, a kept file as a SourceCandidate.
Shared by the adapters that enumerate with a `SortedWalk` (chat exports, Claude Code, Codex
session files)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from chinvex.models.sources import SkippedSource, SourceCandidate
from chinvex.files.walk import WalkedFile


def walked_sources(
    found: Iterable[WalkedFile], source_type: str,
    judge: Callable[[WalkedFile], SourceCandidate | SkippedSource],
) -> Iterator[SourceCandidate | SkippedSource]:
    """One record per walked file, in walk order: the walker's own reason not to read it (as a
    SkippedSource), else what the adapter's `judge` makes of it."""
    for entry in found:
        if entry.skip is not None:
            yield SkippedSource(str(entry.path), source_type, entry.skip, entry.detail)
        else:
            yield judge(entry)


def source_candidate(
    found: WalkedFile, *, source_type: str, adapter: str, root: str, extra: dict[str, Any],
    thread_id: str | None = None,
) -> SourceCandidate:
    """A kept file as a candidate, with the size and mtime the walk already stat'ed."""
    return SourceCandidate(
        source_uri=str(found.path), source_type=source_type, adapter=adapter, root=root,
        path=found.path, size_bytes=found.size_bytes, mtime_ns=found.mtime_ns,
        thread_id=thread_id, extra=extra,
    )
