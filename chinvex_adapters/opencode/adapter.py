"""The `opencode` adapter: OpenCode sessions from its SQLite store (`opencode.db`, OpenCode >=
1.2) and its legacy JSON store (`storage/`, up to 1.1.x), one conversation per session.

Candidates: a database session is a thread of the database (`<db>#<session id>`, no file to
stat): `thread_updated_at` is the session's `time_updated` and the change token in
`last_turn_id` (message count, last message id, part count) catches the writes that leave it,
so an unchanged session is not read again. A JSON session is its session file, with a size and
mtime covering its message files and part folders (tree.py).

OpenCode 1.2+ imports the JSON store into the database once and leaves the files behind, so a
session is often in both, under the same id: both copies are one document (the doc id comes
from the session id) and `precedence_key` writes it from the copy with more turns, then the
later one, then the database's. Sub-agent sessions (made by the `task` tool) are conversations
of their own, linked both ways in the metadata (`parent_session_id`, `sub_sessions`).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    AdapterOptions,
    ParsedDoc,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex.files.excludes import exclude_spec
from chinvex.timeutil import iso_z, to_utc
from chinvex.files.walk import absolute_root
from chinvex_adapters.kit.sessionfile import SOURCE_TYPE, SessionFileAdapter
from chinvex_adapters.kit.walk import WalkEntry

from . import db, tree
from .layout import Found, agent_of, scan, session_files
from .sniff import export_doc, file_kind
from .transcript import build

STORE_RANK = {"sqlite": 2, "json": 1, "export": 0}
OUTSIDE_STORE = "an OpenCode session file outside its store's storage/session/<project>/ folder: its messages cannot be found"


class OpenCodeAdapter(SessionFileAdapter):
    name = "opencode"
    label = "OpenCode session"
    parser_version = "opencode_v1"

    # -- listing -------------------------------------------------------------------------
    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_abs = absolute_root(root)
        root_str = str(root_abs)
        if not root_abs.exists():
            raise SourceError(f"{root_abs}: OpenCode data folder not found")
        if root_abs.is_file():
            yield from self._single(root_abs, root_str)
            return
        found = Found()
        spec = exclude_spec(options.excludes, root_str)
        scan(root_abs, spec, found)
        for storage in found.trees:
            for entry in session_files(storage, root_abs, spec, found):
                try:
                    st = entry.stat()
                except OSError as exc:
                    yield SkippedSource(entry.path, SOURCE_TYPE, "unreadable", str(exc))
                    continue
                yield self._tree_candidate(storage, Path(entry.path), st.st_size, st.st_mtime_ns, root_str)
        for path in found.dbs:
            yield from self._db_candidates(path, root_str)
        yield from found.skipped

    def _single(self, path: Path, root: str) -> Iterator[SourceCandidate | SkippedSource]:
        """A root that is one file: a database, a session file of a JSON store, or an export."""
        if db.is_sqlite(path):  # its own listing says why when it is not OpenCode's
            yield from self._db_candidates(path, root)
            return
        kind = file_kind(path)
        storage = tree.storage_of(path)
        try:
            st = path.stat()
        except OSError as exc:
            yield SkippedSource(str(path), SOURCE_TYPE, "unreadable", str(exc))
            return
        if kind == "session" and storage is not None:
            yield self._tree_candidate(storage, path, st.st_size, st.st_mtime_ns, root)
        elif kind == "session":
            yield SkippedSource(str(path), SOURCE_TYPE, "not_supported", OUTSIDE_STORE)
        elif kind == "export":
            yield SourceCandidate(source_uri=str(path), source_type=SOURCE_TYPE, adapter=self.name,
                                  root=root, path=path, size_bytes=st.st_size, mtime_ns=st.st_mtime_ns)
        else:
            yield SkippedSource(str(path), SOURCE_TYPE, "not_supported",
                                "not an OpenCode database, session file or export")

    def _tree_candidate(self, storage: Path, path: Path, size: int, mtime_ns: int,
                        root: str) -> SourceCandidate | SkippedSource:
        stat = tree.session_stat(storage, path.stem, size, mtime_ns)
        if stat.messages == 0:
            return SkippedSource(str(path), SOURCE_TYPE, "ignored", "a session without messages")
        return SourceCandidate(source_uri=str(path), source_type=SOURCE_TYPE, adapter=self.name, root=root,
                               path=path, size_bytes=stat.size_bytes, mtime_ns=stat.mtime_ns,
                               thread_id=path.stem, extra={"store": "json", "storage": str(storage)})

    def _db_candidates(self, path: Path, root: str) -> Iterator[SourceCandidate | SkippedSource]:
        """One candidate per session of a database; the database reported unreadable when it
        cannot be listed (what it indexed before stays)."""
        try:
            with db.read_only(path) as conn:
                rows = db.list_sessions(conn)
        except UnrecognisedSource as exc:
            yield SkippedSource(str(path), SOURCE_TYPE, "not_supported", str(exc))
            return
        except (SourceError, sqlite3.Error) as exc:
            yield SkippedSource(str(path), SOURCE_TYPE, "unreadable", db.one_line(exc))
            return
        for row in rows:
            uri = f"{path}#{row.session_id}"
            if row.messages == 0:
                yield SkippedSource(uri, SOURCE_TYPE, "ignored", "a session without messages")
                continue
            stamp = to_utc(row.updated_ms) if row.updated_ms is not None else None
            yield SourceCandidate(
                source_uri=uri, source_type=SOURCE_TYPE, adapter=self.name, root=root, path=None,
                mtime_ns=row.updated_ms * 1_000_000 if row.updated_ms is not None else None,
                thread_id=row.session_id, thread_updated_at=iso_z(stamp) or "unknown",
                last_turn_id=f"{row.messages}:{row.last_message}:{row.parts}",
                extra={"store": "sqlite", "db": str(path), "session_id": row.session_id})

    # -- reading -------------------------------------------------------------------------
    def parse(self, candidate: SourceCandidate, report: ParseReport,
              previous_state: dict[str, Any] | None) -> Iterator[ParsedDoc]:
        extra = candidate.extra or {}
        if extra.get("store") == "sqlite":
            doc = self._db_session(Path(extra["db"]), extra["session_id"], report)
            if doc is not None:
                yield doc
            return
        if extra.get("store") == "json" and candidate.path is not None:
            doc = self._tree_session(Path(candidate.path), Path(extra["storage"]), report)
            if doc is not None:
                yield doc
            return
        path = Path(candidate.path or candidate.source_uri).absolute()
        if db.is_sqlite(path):  # read without a sniff, so that a locked database is an error
            yield from self.parse_file(path, report, candidate, previous_state)
            return
        yield from super().parse(candidate, report, previous_state)

    def _db_session(self, path: Path, session_id: str, report: ParseReport,
                    conn: sqlite3.Connection | None = None) -> ConversationDoc | None:
        if conn is None:
            with db.read_only(path) as opened:
                return self._db_session(path, session_id, report, opened)
        with db.snapshot(conn):
            info = db.session_info(conn, session_id)
            if info is None:
                report.counts["sessions_gone"] += 1  # deleted since it was listed
                return None
            doc = build(info, db.session_messages(conn, session_id, report.counts), report.counts,
                        source_uri=f"{path}#{session_id}", thread_id=session_id, store="sqlite",
                        location={"db": str(path)}, agent=agent_of(path))
        return _counted(doc, report)

    def _tree_session(self, path: Path, storage: Path, report: ParseReport) -> ConversationDoc | None:
        info = tree.read_session_info(path)
        project = tree.read_project(storage, info["projectID"])
        if project:
            info["project"] = project
        doc = build(info, tree.session_messages(storage, info["id"], report.counts), report.counts,
                    source_uri=str(path), thread_id=info["id"], store="json",
                    location={"storage": str(storage)}, agent=agent_of(storage))
        # A state keeps the pipeline from fingerprinting this file by its own hash: the
        # session's other files change without it.
        report.state = {"messages": doc.metadata.get("messages") if doc else 0,
                        "parts": doc.metadata.get("parts") if doc else 0}
        return _counted(doc, report)

    # -- files handed over by content ----------------------------------------------------
    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        return True if rel.endswith((".json", ".db")) else "not an OpenCode session file"

    def recognises(self, path: Path) -> bool:
        return file_kind(path) is not None

    def why_not(self, path: Path) -> str:
        return "neither an OpenCode database nor a session file or export"

    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        if db.is_sqlite(path):
            with db.read_only(path) as conn:
                for row in db.list_sessions(conn):
                    doc = self._db_session(path, row.session_id, report, conn)
                    if doc is not None:
                        yield doc
            return
        kind = file_kind(path)
        storage = tree.storage_of(path)
        if kind == "session" and storage is not None:
            doc = self._tree_session(path, storage, report)
        elif kind == "session":
            raise UnrecognisedSource(f"{path}: not read ({OUTSIDE_STORE})")
        elif kind == "export":
            doc = _counted(export_doc(path, report.counts), report)
        else:
            raise UnrecognisedSource(f"{path}: not an {self.label} ({self.why_not(path)})")
        if doc is not None:
            yield doc

    # -- one document from several stores ------------------------------------------------
    @staticmethod
    def precedence_key(doc: Any) -> tuple[Any, ...]:
        """The copy with more turns, then the later one, then the database's (the live store),
        then the JSON store's, then an export's."""
        turns = len(doc.turns) if isinstance(doc, ConversationDoc) else 0
        updated = doc.updated_at.timestamp() if getattr(doc, "updated_at", None) else -math.inf
        store = (getattr(doc, "metadata", None) or {}).get("store")
        return (turns, updated, STORE_RANK.get(store, 0))


def _counted(doc: ConversationDoc | None, report: ParseReport) -> ConversationDoc | None:
    if doc is None:
        report.counts["sessions_without_turns"] += 1
    return doc
