"""How an ingest run removes what vanished: sources no longer found (deleted, excluded, or
whose root left the context) leave both stores, except under a root that could not be listed;
documents whose writing source went away are rewritten from the best source left. The decisions
are chinvex.ingest.removal's pure functions; this applies them. A part of
chinvex.ingest.pipeline.IngestRun."""

from __future__ import annotations

import os

from chinvex.ingest import fingerprints as fps
from chinvex.ingest import removal
from chinvex.ingest.run_state import (
    MASS_REMOVAL_MIN,
    MASS_REMOVAL_SHARE,
    EnumeratedRoot,
    MassRemoval,
    RunState,
)
from chinvex.ingest.source_ingest import SourceIngester
from chinvex.ingest.summary import SourceMessage
from chinvex.storage import origins as origin_rows
from chinvex.storage import pending as pending_rows


class VanishedSweeper:
    """A run's removals: uses the run state's writer, ledger and fingerprints, reads sources
    again through the run's source ingester, and reports through the state."""

    def __init__(self, state: RunState, ingester: SourceIngester):
        self.state = state
        self.ingester = ingester

    def remove_vanished(self, roots: list[EnumeratedRoot], seen: set[str], skipped: dict[str, str]) -> None:
        """Sources no longer found (deleted, excluded, or whose root left the context) leave
        both stores — except under a root that could not be listed this time (an unmounted
        disk must not wipe an index) or when reported unreadable.

        Besides fingerprinted sources, this covers sources that wrote documents or ledger
        entries without ever being recorded (the run writing them died before their
        fingerprint): nothing else would ever remove those."""
        view = removal.RunView.of(seen, self.state.unreadable, {r.root for r in roots if not r.ok})
        # The ledger must see this run's writes before deciding what a vanished source took
        # with it (a thread that moved from its rollout file to codex://thread/<id>).
        self.state.out.flush()
        fingerprinted = {uri: fp.source_root for uri, fp in self.state.known.items()}
        kept = self._imported_elsewhere(roots)
        planned: list[tuple[str, str | None, str, str | None]] = [
            (uri, self.state.known[uri].adapter, _removal_reason(uri, skipped), None)
            for uri in removal.vanished(fingerprinted, view) if uri not in kept]
        pending_roots = {uri: p.source_root for uri, p in self.state.pending.items()}
        untracked = removal.untracked_vanished(self._unrecorded_origins(), fingerprinted,
                                               pending_roots, view)
        for uri in untracked:
            if uri not in kept:
                pending = self.state.pending.get(uri)
                planned.append((uri, pending.adapter if pending else None, _removal_reason(uri, skipped),
                                "its documents were written but never recorded"))
        if planned and not self._removal_allowed([uri for uri, *_ in planned]):
            return
        for uri, adapter, why, detail in planned:
            self._remove_source(uri, adapter, why, detail)

    def _removal_allowed(self, uris: list[str]) -> bool:
        """Whether the planned removal may go ahead: always when it is small; a mass removal
        only with `--yes` or the caller's confirmation. Held back, it is reported as an error of
        the run (the documents stay; the next run asks again)."""
        from chinvex.storage.document_counts import total_documents

        documents = sum(len(self.state.ledger.docs_of(uri)) for uri in uris)
        total = total_documents(self.state.conn)
        if documents <= max(MASS_REMOVAL_MIN, MASS_REMOVAL_SHARE * total):
            return True
        mass = MassRemoval(documents, total, tuple(sorted(uris)))
        options = self.state.options
        if options.yes or (options.confirm_removal is not None and options.confirm_removal(mass)):
            return True
        message = (f"{mass.describe()}; nothing was removed. If they are really gone, run the ingest "
                   "again with --yes (a folder renamed or unmounted: fix the context's sources instead)")
        self.state.summary.errors.append(SourceMessage(source_uri=self.state.config.name, adapter=None,
                                                       message=message))
        self.state.decide_log(self.state.config.name, "?", "kept", "mass_removal_held", message)
        return False

    def _imported_elsewhere(self, roots: list[EnumeratedRoot]) -> set[str]:
        """Imported sources whose root is none of this context's: an ingest keeps them (it
        cannot see them, and the user never asked to drop them); `chinvex rm` removes them, and
        adding their folder to the context hands them to the ingest."""
        from chinvex.storage import imported

        own = {r.root for r in roots} | {removal._norm(r.root) for r in roots}
        found = imported.imported(self.state.conn, self.state.config.name)
        kept = {uri for uri, root in found.items()
                if not (root and (root in own or removal._norm(root) in own))}
        if kept:
            self.state.summary.imported_kept = len(kept)
        return kept

    def _unrecorded_origins(self) -> set[str]:
        """Sources the index holds documents or ledger entries of but no fingerprint, plus the
        pending ones. Found by SQL over the origin indexes rather than from the journal alone,
        so that indexes written before the journal existed (or fingerprints cleared by
        `doctor --repair`) are covered too."""
        found = set(self.state.pending)
        found |= origin_rows.unrecorded(self.state.conn, self.state.config.name, removal.MEMORY_PREFIX)
        return found

    def _remove_source(self, uri: str, adapter: str | None, why: str,
                       detail: str | None = None) -> None:
        # Journaled like a write: a run killed between deleting the documents and deleting the
        # fingerprint leaves a pending source (doctor: "interrupted"), which the next run
        # removes again.
        known, pending = self.state.known.get(uri), self.state.pending.get(uri)
        root = known.source_root if known is not None else (pending.source_root if pending else None)
        pending_rows.mark_pending(self.state.conn, uri, root, adapter)
        detached = self.state.ledger.detach(uri, self.state.ledger.docs_of(uri))
        self.state.out.delete_docs(detached.delete_docs)
        self.state.reingest |= detached.reingest_origins
        self.state.out.source_removed(self.state.config.name, uri)
        self.state.summary.sources.removed += 1
        self.state.decide_log(uri, adapter or "?", "removed", why, detail)

    def rewrite_from_other_origins(self) -> None:
        """Documents whose writing source went away are rewritten from the best source left."""
        for _ in range(3):  # a rewrite can detach further documents; this converges quickly
            pending, self.state.reingest = sorted(self.state.reingest), set()
            if not pending:
                return
            self.state.out.flush()
            for uri in pending:
                item = self.state.work_by_uri.get(uri)
                if item is None:
                    continue
                versions = self.state.versions(item.adapter)
                self.state.reasons[fps.ORIGIN_CHANGED] += 1
                self.ingester.ingest(item, self.state.known.get(uri), fps.ORIGIN_CHANGED, versions, None)


def _removal_reason(uri: str, skipped: dict[str, str]) -> str:
    """Why a source leaves the index: `excluded` when it, or a folder above it, was skipped by a
    rule this run (an exclude glob added to context.json reports a matching folder once, not
    each file in it) — `generated` when that rule was the generated/data-file one, so the user
    sees why a file they never excluded left — else `vanished`. Walks up the path: O(depth),
    whatever the number of skipped entries."""
    why = skipped.get(uri)
    if why is None and removal._is_path(uri):
        current = uri
        while why is None:
            parent = os.path.dirname(current)
            if parent == current or not parent:
                break
            why = skipped.get(parent)
            current = parent
    if why is None:
        return "vanished"
    return "generated" if why == "generated" else "excluded"
