"""How an ingest run finds its sources: every include root through the adapters that read it,
one work item per source (a file reachable from two roots belongs to the most specific one),
skips and unreadable entries reported. A part of chinvex.ingest.pipeline.IngestRun."""

from __future__ import annotations

from pathlib import Path

from chinvex.ingest.adapters import adapter as load_adapter
from chinvex.ingest.adapters import adapters_for
from chinvex.ingest.run_state import EnumeratedRoot, RunState, SourceWork
from chinvex.models.context import SESSIONS_KEY
from chinvex.models.sources import SkippedSource, SourceError

ERROR_SKIP_REASONS = {"unreadable"}
"""Skips that are not a choice but a failure: reported as errors, and what was indexed from the
source before is kept (a permission glitch must not wipe it)."""


class RootEnumerator:
    """Lists a run's sources from its configuration, redacted by its redactor, and reports
    through its state (errors, the decision log, skip counts, unreadable entries)."""

    def __init__(self, state: RunState):
        self.state = state

    def _roots(self) -> list[EnumeratedRoot]:
        roots: list[EnumeratedRoot] = []
        for key, values in self.state.config.includes.entries():
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
                self.state.error(str(entry), None, f"includes.sessions: {exc}")
                continue
            roots.extend(EnumeratedRoot(include_key=SESSIONS_KEY, root=root, adapter=adapter)
                         for adapter, root in found)
        return roots

    def enumerate(self) -> tuple[list[EnumeratedRoot], list[SourceWork], dict[str, str]]:
        roots = self._roots()
        chosen: dict[str, tuple[int, SourceWork]] = {}
        skipped_uris: dict[str, str] = {}  # uri -> skip reason
        for order, root in enumerate(roots):
            self.state.root_adapters.add(root.adapter)
            try:
                adapter = load_adapter(root.adapter)
                items = [self.state.redactor.source(item)
                         for item in adapter.enumerate(Path(root.root), self.state.adapter_options)]
            except SourceError as exc:
                root.ok = False
                self.state.error(root.root, root.adapter, str(exc))
                continue
            except Exception as exc:  # an adapter bug must not end the run
                root.ok = False
                self.state.error(root.root, root.adapter, f"internal error while listing: {type(exc).__name__}: {exc}")
                continue
            depth = len(Path(root.root).parts)
            for item in items:
                if isinstance(item, SkippedSource) and item.reason in ERROR_SKIP_REASONS:
                    self.state.error(item.source_uri, root.adapter,
                                f"{item.source_uri}: {item.reason}: {item.detail}".rstrip(": "))
                    self.state.unreadable.add(item.source_uri)
                    continue
                if isinstance(item, SkippedSource):
                    self.state.skipped[item.reason] += 1
                    skipped_uris[item.source_uri] = item.reason
                    self.state.decide_log(item.source_uri, root.adapter, "excluded", item.reason, item.detail)
                    continue
                previous = chosen.get(item.source_uri)
                # A file reachable from two roots is indexed once, by the most specific root.
                if previous is None or depth > previous[0]:
                    # A composite adapter may hand a candidate to another adapter (the Codex
                    # app-server lists threads whose legacy rollout files the JSONL parser reads).
                    chosen[item.source_uri] = (depth, SourceWork(item, item.adapter or root.adapter))
        work = [w for _, w in chosen.values()]
        self.state.summary.sources.scanned = len(work)
        return roots, work, {uri: why for uri, why in skipped_uris.items() if uri not in chosen}
