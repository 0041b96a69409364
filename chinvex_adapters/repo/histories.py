"""Agents' chat histories kept inside a repository: Aider's `.aider.chat.history.md` and
SpecStory's `.specstory/history/*.md`. They are conversations about the repository, not its
files: the repo adapter hands them to the adapter of their format (with the repository as
their project), whether git lists them, ignores them (Aider adds `.aider*` to .gitignore) or
they are too large for the source-file limit (an Aider history only grows).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from chinvex.models.sources import SkippedSource, SourceCandidate

AIDER_HISTORY = ".aider.chat.history.md"
SPECSTORY_DIR = ".specstory"


def history_kind(rel: str) -> str | None:
    """The adapter that reads the file at `rel` (POSIX, relative to the repository), if any."""
    parts = rel.split("/")
    if parts[-1] == AIDER_HISTORY:
        return "aider"
    if (len(parts) >= 3 and parts[-1].lower().endswith(".md") and SPECSTORY_DIR in parts
            and parts[parts.index(SPECSTORY_DIR) + 1] == "history"):
        return "specstory"
    return None


def _rel(uri: str, root: str) -> str:
    try:
        return os.path.relpath(uri, root).replace(os.sep, "/")
    except ValueError:
        return uri


def split_histories(items: Iterator[SourceCandidate | SkippedSource], root: str
                    ) -> tuple[list[SourceCandidate | SkippedSource], set[str]]:
    """The scan's items without the histories (listed, or skipped by the file rules), and the
    absolute paths of those histories."""
    kept: list[SourceCandidate | SkippedSource] = []
    found: set[str] = set()
    for item in items:
        if item.source_uri != root and history_kind(_rel(item.source_uri, root)):
            found.add(item.source_uri)
            continue
        kept.append(item)
    return kept, found


def probe(root: str) -> set[str]:
    """Histories at the repository's top, which git may ignore."""
    found: set[str] = set()
    aider = os.path.join(root, AIDER_HISTORY)
    if os.path.isfile(aider):
        found.add(aider)
    history = os.path.join(root, SPECSTORY_DIR, "history")
    if os.path.isdir(history):
        for folder, dirs, files in os.walk(history):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found.update(os.path.join(folder, f) for f in files if f.lower().endswith(".md"))
    return found


def candidates(paths: set[str], root: str) -> Iterator[SourceCandidate | SkippedSource]:
    for uri in sorted(paths):
        kind = history_kind(_rel(uri, root))
        try:
            st = os.stat(uri)
        except OSError as exc:
            yield SkippedSource(uri, "agent_session", "unreadable", exc.strerror or str(exc))
            continue
        if kind is None or not os.path.isfile(uri):
            continue
        yield SourceCandidate(source_uri=uri, source_type="agent_session", adapter=kind, root=root,
                              path=Path(uri), size_bytes=st.st_size, mtime_ns=st.st_mtime_ns,
                              extra={"path": _rel(uri, root), "project": root})
