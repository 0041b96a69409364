"""The contract between the ingest pipeline and source adapters.

An adapter does two things: `enumerate` the candidate sources under one include root (cheaply,
with their stat, so unchanged sources are skipped without being read) and `parse` one candidate
into `Document`s or `ConversationDoc`s. Adapters depend only on `chinvex.models` and this module;
storage, embedding and retrieval never leak into them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from chinvex.models import ConversationDoc, Document

ParsedDoc = Document | ConversationDoc


class SourceError(Exception):
    """This one source cannot be ingested (unreadable, not the expected format, ...).

    The message is shown to the user as-is next to the source, so it must say what is wrong
    in one line; the run records it and goes on with the other sources.
    """


class UnrecognisedSource(SourceError):
    """This file is not a source of the kind its root holds: a log, a settings file, another
    tool's file kept beside the sessions, or a format no adapter reads.

    Not a failure: the run reports it once (`skipped: not a <kind> session (why)`), remembers it
    by its fingerprint until the file changes, and keeps whatever was indexed from it before.
    The message says what the file is not and why, in one line.
    """


@dataclass
class SourceCandidate:
    """A source found by enumeration, identified by `source_uri` (the fingerprint key)."""

    source_uri: str
    source_type: str
    adapter: str
    root: str
    path: Path | None = None
    size_bytes: int | None = None
    mtime_ns: int | None = None
    thread_id: str | None = None
    thread_updated_at: str | None = None
    last_turn_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mtime_unix(self) -> int | None:
        return None if self.mtime_ns is None else self.mtime_ns // 1_000_000_000


@dataclass
class SkippedSource:
    """A file seen during enumeration and deliberately not indexed, with the reason."""

    source_uri: str
    source_type: str
    reason: str  # binary, too_large, excluded, ignored, unreadable, not_supported, ...
    detail: str = ""


@dataclass
class ParseReport:
    """What an adapter tells the pipeline besides the documents it yields.

    - `warnings`: one line each, shown in the run summary for this source.
    - `counts`: e.g. {"lines_unknown_type": 3, "lines_drift": 2, "tool_outputs_truncated": 1}.
    - `state`: JSON-able adapter state stored with the fingerprint and handed back to the next
      `parse` of the same source (e.g. the byte offset a growing rollout was read up to).
    - `append_from`: set when the yielded conversation holds only turns from this index on and
      the turns before it are unchanged since the last ingest (append-aware re-ingest).
    """

    warnings: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    state: dict[str, Any] | None = None
    append_from: int | None = None


@runtime_checkable
class Adapter(Protocol):
    """What the pipeline calls. `include_key` names the context.json include list whose roots the
    adapter enumerates (None: it parses only what other adapters hand it, or `sessions` roots);
    `end_run` releases what an adapter held for a run and reports about whole roots;
    `precedence_key` orders the copies of one document read from several sources (the larger
    key wins). Third-party adapters may leave the last three out: `complete` supplies them."""

    name: str
    source_type: str
    parser_version: str
    include_key: str | None

    def enumerate(
        self, root: Path, options: "AdapterOptions"
    ) -> Iterator[SourceCandidate | SkippedSource]:
        """Yield candidates under `root` with their stat; never read file contents here
        beyond what is needed to decide skip rules (binary sniffing, size)."""
        ...

    def parse(
        self, candidate: SourceCandidate, report: ParseReport, previous_state: dict[str, Any] | None
    ) -> Iterator[ParsedDoc]:
        """Yield the documents of one source. Raise `SourceError` when the whole source is bad;
        problems with parts of it go into `report` and parsing continues."""
        ...

    def end_run(self, options: "AdapterOptions") -> dict[str, Any] | None:
        """Called once after a run that enumerated this adapter's roots: {"errors", "warnings",
        "counts", "verbose"} to report, or None."""
        ...

    def precedence_key(self, doc: ParsedDoc) -> tuple[Any, ...]:
        ...


def default_precedence(doc: Any) -> tuple[Any, ...]:
    """The copy updated last wins, then the one with more turns."""
    import math

    updated = doc.updated_at.timestamp() if getattr(doc, "updated_at", None) else -math.inf
    turns = len(doc.turns) if isinstance(doc, ConversationDoc) else 0
    return (updated, turns)


class AdapterDefaults:
    """The optional parts of the Adapter protocol, for adapters to inherit: no include list of
    their own, nothing to release after a run, and the default precedence of copies."""

    include_key: str | None = None

    def end_run(self, options: AdapterOptions) -> dict[str, Any] | None:
        return None

    def precedence_key(self, doc: ParsedDoc) -> tuple[Any, ...]:
        return default_precedence(doc)


class _Completed:
    """A third-party adapter with the optional parts of the protocol filled in."""

    def __init__(self, inner: Any):
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def include_key(self) -> str | None:
        return getattr(self._inner, "include_key", None)

    def end_run(self, options: AdapterOptions) -> dict[str, Any] | None:
        hook = getattr(self._inner, "end_run", None)
        return hook(options) if callable(hook) else None

    def precedence_key(self, doc: ParsedDoc) -> tuple[Any, ...]:
        hook = getattr(self._inner, "precedence_key", None)
        return tuple(hook(doc)) if callable(hook) else default_precedence(doc)


def complete(adapter: Any) -> Adapter:
    """`adapter` itself when it implements the whole protocol, else it with the defaults."""
    whole = all(callable(getattr(adapter, hook, None)) for hook in ("end_run", "precedence_key")) \
        and hasattr(adapter, "include_key")
    return adapter if whole else _Completed(adapter)  # type: ignore[return-value]


@dataclass
class AdapterOptions:
    """Context settings an adapter may need."""

    context_name: str
    excludes: list[str] = field(default_factory=list)
    max_file_bytes: int = 1_000_000
    settings: dict[str, Any] = field(default_factory=dict)
