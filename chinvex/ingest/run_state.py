"""The state one ingest run shares between its parts: the enumerator (enumeration.py), the source
ingester (source_ingest.py) and the sweeper of vanished sources (vanished.py), which
chinvex.ingest.pipeline.IngestRun composes. One explicit object, handed to each part, instead of
attributes each part assumed the others had set."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from chinvex.ingest import fingerprints as fps
from chinvex.ingest.adapters import adapter as load_adapter
from chinvex.ingest.origins import OriginLedger
from chinvex.ingest.summary import Decision, IngestSummary, SourceMessage
from chinvex.models import ContextConfig
from chinvex.models.sources import AdapterOptions, SourceCandidate
from chinvex.storage.pending import PendingSource
from chinvex.storage.writer import IndexWriter

if TYPE_CHECKING:
    from chinvex.redaction import Redactor


class ProgressSink(Protocol):
    def start(self, total: int) -> None: ...
    def advance(self, label: str) -> None: ...
    def embedded(self, count: int) -> None: ...
    def decision(self, decision: Decision) -> None: ...
    def finish(self) -> None: ...


@dataclass
class IngestOptions:
    full: bool = False
    verbose: bool = False
    wait: bool | float = False
    progress: ProgressSink | None = None
    embedder_factory: Callable[[], Any] | None = None
    yes: bool = False
    """Remove what vanished even when it is a large part of the index (see `MassRemoval`)."""
    confirm_removal: Callable[[MassRemoval], bool] | None = None
    """Asked before a mass removal when `yes` is not set (the CLI asks on a terminal); without
    it, or when it says no, the documents stay and the run reports why."""


@dataclass(frozen=True)
class MassRemoval:
    """A removal large enough to ask about first: more than MASS_REMOVAL_SHARE of the context's
    documents and more than MASS_REMOVAL_MIN of them, as when a source folder is renamed or a
    disk is mounted elsewhere and every file under it looks deleted."""

    documents: int
    total: int
    sources: tuple[str, ...]

    def describe(self) -> str:
        shown = ", ".join(self.sources[:3]) + (f" and {len(self.sources) - 3} more" if len(self.sources) > 3 else "")
        return (f"{self.documents} of {self.total} documents would be removed because their "
                f"{len(self.sources)} sources are gone ({shown})")


MASS_REMOVAL_SHARE = 0.05
MASS_REMOVAL_MIN = 10


@dataclass
class EnumeratedRoot:
    """One include root and the adapter that enumerated it. `ok` is False when enumeration
    failed: then nothing under it may be taken as deleted."""

    include_key: str
    root: str
    adapter: str
    ok: bool = True


@dataclass
class SourceWork:
    """A source found by enumeration and the adapter that will read it."""

    candidate: SourceCandidate
    adapter: str


@dataclass
class RunState:
    """One run's configuration, connection, writer, options and summary, what it loaded from the
    index (fingerprints, pending sources, tombstones), and what it counts as it goes."""

    config: ContextConfig
    conn: sqlite3.Connection
    options: IngestOptions
    summary: IngestSummary
    redactor: Redactor
    """Source uris, adapter state, errors and the run log are redacted like documents
    (chinvex.redaction.structured); what documents hold is redacted by `prepare`."""
    redact: bool
    chunker_version: str
    """The chunker's version with the redaction switch: either change rebuilds every chunk."""
    embedder: Any
    adapter_options: AdapterOptions
    ledger: OriginLedger
    tombstones: dict[str, str | None]
    """doc id -> content hash of the documents `chinvex rm` removed."""
    writer: IndexWriter | None = None
    """Set once the run has opened its stores (see IngestRun.execute)."""
    known: dict[str, fps.Fingerprint] = field(default_factory=dict)
    pending: dict[str, PendingSource] = field(default_factory=dict)
    reingest: set[str] = field(default_factory=set)
    """Sources that must rewrite documents another source had written and gave up."""
    work_by_uri: dict[str, SourceWork] = field(default_factory=dict)
    root_adapters: set[str] = field(default_factory=set)
    unreadable: set[str] = field(default_factory=set)
    redactions: Counter[str] = field(default_factory=Counter)
    adapter_counts: dict[str, Counter[str]] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)
    store_set_aside: str | None = None
    """Why and where the run set an unreadable vector store aside; said once, with the number
    of vectors rebuilt, when the run has rebuilt it (IngestRun._reconcile_vectors)."""

    @property
    def out(self) -> IndexWriter:
        """The writer, which every part but the enumerator needs."""
        assert self.writer is not None, "the run's writer is opened first"
        return self.writer

    def versions(self, adapter_name: str) -> fps.Versions:
        adapter = load_adapter(adapter_name)
        return fps.Versions(adapter.parser_version, self.chunker_version, self.embedder.name)

    # -- reporting --------------------------------------------------------------------------

    def error(self, uri: str, adapter: str | None, message: str) -> None:
        self.summary.sources.errors += 1
        self.summary.errors.append(SourceMessage(source_uri=uri, adapter=adapter, message=message))
        self.decide_log(uri, adapter or "?", "error", "error", message)

    def decide_log(self, uri: str, adapter: str, action: str, reason: str,
                   detail: str | None = None) -> None:
        decision = Decision(source_uri=uri, adapter=adapter, action=action, reason=reason,
                            detail=detail or None)
        if self.options.verbose:
            self.summary.decisions.append(decision)
        if self.options.progress:
            self.options.progress.decision(decision)
