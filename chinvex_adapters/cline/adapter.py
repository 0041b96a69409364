"""The `cline` adapter: Cline, Roo Code and Kilo Code tasks (legacy task folders in each
editor's extension storage and in ~/.cline/data/tasks) and Cline SDK sessions
(~/.cline/data/sessions). One conversation per task or session; its `source` is the tool whose
store holds it ("cline", "roo" or "kilo"; SDK sessions are Cline's).

A session spans several files: the candidate is one of them (a task's API history, else its UI
messages; a session's messages.json) with the size and mtime of all, so a change to any file
re-reads the session and an unchanged one is skipped without a read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    AdapterOptions,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    UnrecognisedSource,
)
from chinvex.files.walk import WalkedFile
from chinvex_adapters.kit.sessionfile import SessionFileAdapter

from .formats import shape_of
from .history import HistoryIndex
from .layout import Session, complete_single, pick_primary, role_of_file, walk_store
from .legacy import read_task
from .sdk import read_session


class ClineAdapter(SessionFileAdapter):
    name = "cline"
    label = "Cline, Roo Code or Kilo Code session"
    parser_version = "cline_v2"  # v2: streamed command output joined, sub-agent results paired

    def __init__(self) -> None:
        self.index = HistoryIndex()

    # -- enumeration -----------------------------------------------------------------------
    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_str = str(Path(root).expanduser().absolute())
        single = Path(root_str).is_file()
        open_: dict[str, Session] = {}
        folder: Path | None = None
        for entry in walk_store(Path(root), options.excludes):
            if entry.skip is not None:
                yield SkippedSource(str(entry.path), self.source_type, entry.skip, entry.detail)
                continue
            if folder is not None and entry.path.parent != folder:
                yield from self._flush(open_, root_str, single)  # a folder's files come together
            folder = entry.path.parent
            kind, key = role_of_file(entry.path)
            if kind == "skip":
                yield SkippedSource(str(entry.path), self.source_type, "ignored", key)
                continue
            session = open_.setdefault(key, Session(kind, key))
            session.files[entry.path] = (entry.size_bytes, entry.mtime_ns)
        yield from self._flush(open_, root_str, single)

    def _flush(self, open_: dict[str, Session], root: str,
               single: bool) -> Iterator[SourceCandidate | SkippedSource]:
        for session in open_.values():
            primary = pick_primary(session)
            if primary is None:
                for path in session.files:
                    yield SkippedSource(str(path), self.source_type, "ignored",
                                        "a session's side file without its transcript")
                continue
            if single:
                complete_single(primary, session)
            for path in session.files:
                if path != primary:
                    yield SkippedSource(str(path), self.source_type, "ignored",
                                        f"read with {primary.name}")
            yield SourceCandidate(
                source_uri=str(primary), source_type=self.source_type, adapter=self.name, root=root,
                path=primary, size_bytes=session.size_bytes, mtime_ns=session.mtime_ns,
                extra={"layout": session.kind})
        open_.clear()

    def accepts(self, rel: str, entry: WalkedFile) -> bool | str:
        kind, why = role_of_file(entry.path)
        return True if kind != "skip" else why

    # -- routing by content ----------------------------------------------------------------
    def sniff(self, path: Path) -> str | None:
        found, why = shape_of(path)
        return None if found is not None else why or "its content is not of this format"

    # -- reading ---------------------------------------------------------------------------
    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        shape, why = shape_of(path)
        if shape is None:
            raise UnrecognisedSource(f"{path}: not a {self.label} ({why})")
        if shape == "sdk":
            doc = read_session(path, report)
        else:
            doc = read_task(path, report, shape=shape, index=self.index)
        if doc is None:
            report.counts["sessions_without_turns"] += 1
            return
        yield doc
