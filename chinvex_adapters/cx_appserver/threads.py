"""What the app-server says about one thread: its summary (listing), and the outcome of reading it.

`ThreadSummary` is what the pipeline decides on without reading; `ThreadReadOutcome` (and
`ThreadReadError`) say what a read gave, or why it gave nothing and which rollout file can
be read instead.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from chinvex.models import ConversationDoc
from chinvex.models.sources import SourceError
from chinvex.timeutil import iso_z, to_utc

from . import schemas
from .normalize import (
    source_uri_for,
)


@dataclass(frozen=True)
class ThreadSummary:
    """What the pipeline needs to decide whether to read a thread, without reading it."""

    thread_id: str
    updated_at: str
    updated_at_unix: int
    created_at: str
    history_mode: str
    source_kind: str
    preview: str
    name: str | None
    archived: bool
    path: str | None
    rollout_path: str | None
    model_provider: str | None
    cli_version: str | None
    cwd: str | None
    duplicate_paths: tuple[str, ...] = ()
    thread: schemas.Thread | None = field(default=None, repr=False, compare=False)

    @property
    def source_uri(self) -> str:
        return source_uri_for(self.thread_id)

    @property
    def is_subagent(self) -> bool:
        return self.source_kind in schemas.SUBAGENT_KINDS


@dataclass
class ThreadReadOutcome:
    """`doc` is None when the server could not give the content; `reason` says why and
    `fallback_path` names the rollout file the JSONL adapter can read instead."""

    thread_id: str
    doc: ConversationDoc | None
    reason: str | None = None
    detail: str = ""
    fallback_path: str | None = None
    counts: Counter[str] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)
    error: bool = False


class ThreadReadError(SourceError):
    """One thread could not be read or validated; the others are unaffected."""

    def __init__(self, outcome: ThreadReadOutcome):
        self.outcome = outcome
        super().__init__(f"codex thread {outcome.thread_id}: {outcome.detail}")


def resolve_rollout_path(path: str | None) -> str | None:
    """The file behind Thread.path: 0.169.0 reports `….jsonl` even when only `….jsonl.zst`
    exists on disk."""
    if not path:
        return None
    candidate = Path(path)
    if candidate.is_file():
        return str(candidate)
    zst = Path(path + ".zst")
    if zst.is_file():
        return str(zst)
    return None


def _iso(unix: int) -> str:
    return iso_z(to_utc(unix)) or ""


def summarize(thread: schemas.Thread, archived: bool) -> ThreadSummary:
    return ThreadSummary(
        thread_id=thread.id,
        updated_at=_iso(thread.updated_at),
        updated_at_unix=thread.updated_at,
        created_at=_iso(thread.created_at),
        history_mode=thread.history_mode,
        source_kind=schemas.source_kind(thread.source),
        preview=thread.preview,
        name=thread.name,
        archived=archived,
        path=thread.path,
        rollout_path=resolve_rollout_path(thread.path),
        model_provider=thread.model_provider,
        cli_version=thread.cli_version,
        cwd=thread.cwd,
        thread=thread,
    )
