"""How an ingest run finds its sources: every include root through the adapters that read it,
one work item per source (a file reachable from two roots belongs to the most specific one),
skips and unreadable entries reported. A mixin of chinvex.ingest.pipeline.IngestRun."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from chinvex.ingest.adapters import adapter as load_adapter
from chinvex.ingest.adapters import adapters_for
from chinvex.models.context import SESSIONS_KEY
from chinvex.models.sources import SkippedSource, SourceCandidate, SourceError

if TYPE_CHECKING:
    from collections import Counter

    from chinvex.ingest.summary import IngestSummary
    from chinvex.models import ContextConfig
    from chinvex.redaction import Redactor
    from chinvex.models.sources import AdapterOptions

ERROR_SKIP_REASONS = {"unreadable"}
"""Skips that are not a choice but a failure: reported as errors, and what was indexed from the
source before is kept (a permission glitch must not wipe it)."""


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


class RootEnumeration:
    """IngestRun's enumeration. Reads the run's configuration and redactor, and reports through
    its `_error` and `_decide_log`."""

    config: ContextConfig
    adapter_options: AdapterOptions
    redactor: Redactor
    summary: IngestSummary
    skipped: Counter[str]
    unreadable: set[str]
    root_adapters: set[str]

    if TYPE_CHECKING:  # provided by IngestRun (or another of its parts)
        def _error(self, uri: str, adapter: str | None, message: str) -> None: ...
        def _decide_log(self, uri: str, adapter: str, action: str, reason: str, detail: str | None = None) -> None: ...

    def _roots(self) -> list[EnumeratedRoot]:
        roots: list[EnumeratedRoot] = []
        for key, values in self.config.includes.entries():
            if not isinstance(values, list):
                continue
            if key == SESSIONS_KEY:
                roots.extend(self._session_roots(values))
                continue
            for root in values:
                for name in adapters_for(key):
                    roots.append(EnumeratedRoot(include_key=key, root=str(root), adapter=name))
        return roots

    def _session_roots(self, entries: list[object]) -> list[EnumeratedRoot]:
        """`includes.sessions`: "auto" is every agent store found under the home folder now
        (agents installed since are picked up), KIND=PATH one store. A malformed entry is an
        error of the run's summary, not the end of the run."""
        from chinvex.errors import UsageError
        from chinvex.ingest.session_stores import resolve

        roots: list[EnumeratedRoot] = []
        for entry in entries:
            try:
                found = resolve([str(entry)])
            except UsageError as exc:
                self._error(str(entry), None, f"includes.sessions: {exc}")
                continue
            roots.extend(EnumeratedRoot(include_key=SESSIONS_KEY, root=root, adapter=adapter)
                         for adapter, root in found)
        return roots

    def _enumerate(self) -> tuple[list[EnumeratedRoot], list[SourceWork], dict[str, str]]:
        roots = self._roots()
        chosen: dict[str, tuple[int, SourceWork]] = {}
        skipped_uris: dict[str, str] = {}  # uri -> skip reason
        for order, root in enumerate(roots):
            self.root_adapters.add(root.adapter)
            try:
                adapter = load_adapter(root.adapter)
                items = [self.redactor.source(item)
                         for item in adapter.enumerate(Path(root.root), self.adapter_options)]
            except SourceError as exc:
                root.ok = False
                self._error(root.root, root.adapter, str(exc))
                continue
            except Exception as exc:  # an adapter bug must not end the run
                root.ok = False
                self._error(root.root, root.adapter, f"internal error while listing: {type(exc).__name__}: {exc}")
                continue
            depth = len(Path(root.root).parts)
            for item in items:
                if isinstance(item, SkippedSource) and item.reason in ERROR_SKIP_REASONS:
                    self._error(item.source_uri, root.adapter,
                                f"{item.source_uri}: {item.reason}: {item.detail}".rstrip(": "))
                    self.unreadable.add(item.source_uri)
                    continue
                if isinstance(item, SkippedSource):
                    self.skipped[item.reason] += 1
                    skipped_uris[item.source_uri] = item.reason
                    self._decide_log(item.source_uri, root.adapter, "excluded", item.reason, item.detail)
                    continue
                previous = chosen.get(item.source_uri)
                # A file reachable from two roots is indexed once, by the most specific root.
                if previous is None or depth > previous[0]:
                    # A composite adapter may hand a candidate to another adapter (the Codex
                    # app-server lists threads whose legacy rollout files the JSONL parser reads).
                    chosen[item.source_uri] = (depth, SourceWork(item, item.adapter or root.adapter))
        work = [w for _, w in chosen.values()]
        self.summary.sources.scanned = len(work)
        return roots, work, {uri: why for uri, why in skipped_uris.items() if uri not in chosen}
