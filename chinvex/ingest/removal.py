"""Which sources that were not found in this run leave the index: a pure decision.

Two kinds of sources can vanish. Fingerprinted ones were recorded by an earlier run. Untracked
ones wrote documents or origin ledger entries but were never recorded, because the run writing
them died before their fingerprint: without this decision nothing would ever remove their
documents, and search would find a deleted file forever.

Both get the same protections, because removal is the one step that can lose indexed data by
mistake: a source under a root that could not be listed this time (an unmounted disk, a
permission glitch on the folder) stays, and so does one reported unreadable (an unreadable file
is an error, not a deletion). An untracked source whose root is unknown (recorded before the
pending-sources journal existed) is attributed to a root by its path; one that is not a path
(`codex://thread/...`) cannot be attributed and stays while any root failed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MEMORY_PREFIX = "memory://"
"""Documents of the MCP RECALL tools: no source file and no fingerprint by design."""


def _norm(path: str) -> str:
    return os.path.normpath(path) if path else path


def _is_path(uri: str) -> bool:
    return uri.startswith("/") or (len(uri) > 2 and uri[1] == ":" and uri[2] in "\\/")


def _under(uri: str, folders: Iterable[str]) -> bool:
    """True when `uri` names `folder` itself or something inside it (a file, a zip member
    `file!member`, a fragment `file#part`)."""
    for folder in folders:
        if not folder:
            continue
        if uri == folder:
            return True
        for sep in {"/", os.sep}:
            if uri.startswith(folder.rstrip(sep) + sep):
                return True
        if uri.startswith(folder) and uri[len(folder):len(folder) + 1] in ("!", "#"):
            return True
    return False


@dataclass(frozen=True)
class RunView:
    """What this run saw: the inputs every removal decision is checked against."""

    seen: frozenset[str]
    """Sources enumerated (and so processed) in this run."""
    unreadable: frozenset[str]
    """Files and folders reported unreadable: they and everything inside them stay."""
    failed_roots: frozenset[str]
    """Configured roots whose listing failed."""

    @classmethod
    def of(cls, seen: Iterable[str], unreadable: Iterable[str], failed_roots: Iterable[str]) -> "RunView":
        roots = {r for r in failed_roots if r} | {_norm(r) for r in failed_roots if r}
        return cls(frozenset(seen), frozenset(unreadable), frozenset(roots))


def keep_reason(uri: str, root: str | None, view: RunView) -> str | None:
    """Why a source that was not enumerated must stay, or None when it leaves the index."""
    if uri in view.seen:
        return "seen"
    if uri in view.unreadable or _under(uri, view.unreadable):
        return "unreadable"
    if root is not None and (root in view.failed_roots or _norm(root) in view.failed_roots):
        return "root_not_listed"
    if _under(uri, view.failed_roots) or _under(_norm(uri) if _is_path(uri) else uri, view.failed_roots):
        return "root_not_listed"
    if root is None and view.failed_roots and not _is_path(uri):
        return "root_not_listed"  # cannot tell which root it came from: keep it while any failed
    return None


def vanished(fingerprinted: Mapping[str, str | None], view: RunView) -> list[str]:
    """Fingerprinted sources (uri -> the root recorded with the fingerprint) that leave."""
    return sorted(uri for uri in fingerprinted.keys() - view.seen
                  if keep_reason(uri, fingerprinted[uri], view) is None)


def untracked_vanished(origins: Iterable[str], fingerprinted: Iterable[str],
                       pending_roots: Mapping[str, str | None], view: RunView) -> list[str]:
    """Origins of documents or ledger entries that have no fingerprint and were not found in
    this run, and so leave. `pending_roots` gives the root of the sources the pending-sources
    journal knows; the others are attributed by path."""
    out: list[str] = []
    for uri in set(origins) - set(fingerprinted) - view.seen:
        if uri.startswith(MEMORY_PREFIX):
            continue
        if keep_reason(uri, pending_roots.get(uri), view) is None:
            out.append(uri)
    return sorted(out)
