"""The `cursor` adapter: Cursor's agent transcripts (plain text and JSONL), the cursor-agent
CLI's `store.db` blob stores, and the IDE's global `state.vscdb`.

One candidate per transcript file, per `store.db` (its size and mtime include the
write-ahead log), and per IDE composer: a composer is a thread of the database
(`<db>#<composer id>`, `thread_updated_at` its lastUpdatedAt), so an unchanged composer is not
read again. The same conversation can be in several stores under one id (an IDE chat's
transcript stem is its composer id; a CLI chat's transcript stem is its agent id): they make
one document, written from the copy with the most prompts, then the richest store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import (
    AdapterDefaults,
    AdapterOptions,
    ParsedDoc,
    ParseReport,
    SkippedSource,
    SourceCandidate,
    SourceError,
    UnrecognisedSource,
)
from chinvex.files.walk import WalkedFile
from chinvex_adapters.kit.sessionfile import SOURCE_TYPE, a

from . import ide, legacy
from .clidoc import store_doc
from .db import is_sqlite, one_line, read_only, tables
from .layout import classify, db_stat, walk_root
from .transcripts import is_jsonl_transcript, is_txt_transcript, parse_jsonl, parse_txt
from .workspaces import composer_folders

STORE_RANK = {"ide_db": 3, "cli_store": 2, "agent_transcript": 1, "ide_workspace_db": 0}
"""A workspace database's copy of a composer (Cursor before 0.43) loses to the global one."""


class CursorAdapter(AdapterDefaults):
    name = "cursor"
    label = "Cursor session"
    source_type = SOURCE_TYPE
    parser_version = "cursor_v1"
    include_key: str | None = None

    # -- listing -------------------------------------------------------------------------
    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_abs, files = walk_root(root, options.excludes)
        root_str = str(root_abs)
        if files is None:
            try:
                st = root_abs.stat()
            except OSError as exc:
                yield SkippedSource(str(root_abs), self.source_type, "unreadable", str(exc))
                return
            files = [WalkedFile(root_abs, "", st.st_size, st.st_mtime_ns)]
        for entry in files:
            if entry.skip is not None:
                yield SkippedSource(str(entry.path), self.source_type, entry.skip, entry.detail)
                continue
            place = classify(entry.path, entry.rel)
            if place.kind == "skip":
                yield SkippedSource(str(entry.path), self.source_type, "ignored", place.detail)
            elif place.kind == "ide":
                yield from self._composers(entry.path, root_str)
            elif place.kind == "workspace":
                yield self._workspace_db(entry, root_str)
            else:
                size, mtime = (db_stat(entry.path, entry.size_bytes, entry.mtime_ns) if place.kind == "cli"
                               else (entry.size_bytes, entry.mtime_ns))
                yield SourceCandidate(source_uri=str(entry.path), source_type=self.source_type,
                                      adapter=self.name, root=root_str, path=entry.path,
                                      size_bytes=size, mtime_ns=mtime, extra={"store": place.kind})

    def _composers(self, db: Path, root: str) -> Iterator[SourceCandidate | SkippedSource]:
        """One candidate per composer of an IDE database; the database itself reported
        unreadable when it cannot be listed (what it indexed before stays)."""
        try:
            with read_only(db, a(ide.LABEL)) as conn:
                rows = list(ide.list_composers(conn)) if ide.is_cursor_db(conn) else None
        except UnrecognisedSource as exc:
            yield SkippedSource(str(db), self.source_type, "not_supported", str(exc))
            return
        except (SourceError, sqlite3.Error) as exc:
            yield SkippedSource(str(db), self.source_type, "unreadable", one_line(exc))
            return
        if rows is None:
            yield SkippedSource(str(db), self.source_type, "not_supported",
                                "an editor state database without Cursor's chats (no cursorDiskKV table)")
            return
        folders = composer_folders(db) if rows else {}
        for row in rows:
            yield self._composer(db, root, row, folders.get(row.composer_id))

    def _workspace_db(self, entry: WalkedFile, root: str) -> SourceCandidate | SkippedSource:
        """A workspace's own state.vscdb is a source only while it holds chats of Cursor before
        0.43 (legacy.py); newer ones only name composers that globalStorage holds."""
        try:
            with read_only(entry.path, "a Cursor workspace state.vscdb") as conn:
                holds = legacy.has_legacy_chats(conn)
        except (SourceError, sqlite3.Error) as exc:
            return SkippedSource(str(entry.path), self.source_type, "unreadable", one_line(exc))
        if not holds:
            return SkippedSource(str(entry.path), self.source_type, "ignored",
                                 "a per-workspace state.vscdb without chats (Cursor keeps them in globalStorage)")
        size, mtime = db_stat(entry.path, entry.size_bytes, entry.mtime_ns)
        return SourceCandidate(source_uri=str(entry.path), source_type=self.source_type, adapter=self.name,
                               root=root, path=entry.path, size_bytes=size, mtime_ns=mtime,
                               extra={"store": "workspace"})

    def _composer(self, db: Path, root: str, row: ide.ComposerRow,
                  folder: str | None) -> SourceCandidate | SkippedSource:
        uri = f"{db}#{row.composer_id}"
        if row.valid and row.messages == 0:
            return SkippedSource(uri, self.source_type, "ignored", "an empty composer (a draft)")
        if row.deleted:
            return SkippedSource(uri, self.source_type, "ignored", "a deleted composer (its row holds no value)")
        mtime = int(row.updated_ms * 1_000_000) if isinstance(row.updated_ms, int | float) \
            and not isinstance(row.updated_ms, bool) else None
        return SourceCandidate(source_uri=uri, source_type=self.source_type, adapter=self.name,
                               root=root, path=None, size_bytes=row.size, mtime_ns=mtime,
                               thread_id=row.composer_id, thread_updated_at=row.updated_at,
                               last_turn_id=row.last_turn,
                               extra={"store": "ide", "db": str(db), "composer_id": row.composer_id,
                                      **({"cwd": folder} if folder else {})})

    # -- reading -------------------------------------------------------------------------
    def parse(self, candidate: SourceCandidate, report: ParseReport,
              previous_state: dict[str, Any] | None) -> Iterator[ParsedDoc]:
        extra = candidate.extra or {}
        if extra.get("store") == "ide" and extra.get("composer_id"):
            db = Path(extra["db"])
            with read_only(db, a(ide.LABEL)) as conn:
                if not ide.is_cursor_db(conn):
                    raise UnrecognisedSource(f"{db}: not {a(ide.LABEL)} (no cursorDiskKV table)")
                doc = ide.composer_doc(conn, db, extra["composer_id"], report, extra.get("cwd"))
            if doc is not None:
                yield doc
            return
        path = Path(candidate.path or candidate.source_uri).absolute()
        if not path.exists():
            raise SourceError(f"{path}: disappeared before it could be read")
        if extra.get("store") in ("cli", "workspace") or is_sqlite(path) or self.recognises(path):
            yield from self.parse_file(path, report, candidate, previous_state)
            return
        from chinvex_adapters.agents import identify

        try:
            other = identify(path, exclude=self.name)
        except Exception:  # noqa: BLE001 - another adapter's sniff failing must not fail this file
            other = None
        if other is None:
            raise UnrecognisedSource(f"{path}: not {a(self.label)} ({self.why_not(path)})")
        report.counts[f"routed_to:{other.name}"] += 1
        yield from other.parse_file(path, report, candidate, None)

    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate | None,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        if path.name.endswith(".jsonl"):
            doc = parse_jsonl(path, report)
        elif is_sqlite(path):
            yield from self._database(path, report)
            return
        else:
            doc = parse_txt(path, report)
        if doc is not None:
            yield doc

    def _database(self, path: Path, report: ParseReport) -> Iterator[ConversationDoc]:
        """A store.db (one conversation) or a whole state.vscdb (one per composer; a composer
        that cannot be read is counted and passed over)."""
        written = db_stat(path)[1]
        stamp = datetime.fromtimestamp(written / 1e9, timezone.utc) if written else None
        docs: list[ConversationDoc] = []
        with read_only(path, "a Cursor database") as conn:
            names = tables(conn)
            if {"blobs", "meta"} <= names:
                report.state = {"database": "cli"}  # never compared by content hash: the WAL changes it
                doc = store_doc(conn, path, report, stamp)
                docs = [doc] if doc is not None else []
            elif "cursorDiskKV" in names or legacy.has_legacy_chats(conn):
                if "cursorDiskKV" in names:
                    docs = self._global_composers(conn, path, report)
                docs += legacy.legacy_docs(conn, path, report, skip_ids={d.thread_id for d in docs})
            else:
                raise UnrecognisedSource(f"{path}: not a Cursor database (no blobs/meta or cursorDiskKV table, "
                                         "and no chats of Cursor before 0.43)")
        yield from docs

    @staticmethod
    def _global_composers(conn: sqlite3.Connection, path: Path, report: ParseReport) -> list[ConversationDoc]:
        docs: list[ConversationDoc] = []
        for row in ide.list_composers(conn):
            if row.valid and not row.messages:
                continue  # an empty composer (a draft)
            if row.deleted:
                report.counts["composers_deleted"] += 1
                continue
            try:
                doc = ide.composer_doc(conn, path, row.composer_id, report)
            except UnrecognisedSource:
                report.counts["composers_unreadable"] += 1
                continue
            docs.extend([doc] if doc is not None else [])
        return docs

    # -- routing by content (chinvex_adapters.agents) -------------------------------------
    def recognises(self, path: Path) -> bool:
        """A plain-text transcript (`user:` then a tag), a JSONL transcript (top-level role,
        content-only message, no envelope), or a Cursor SQLite store."""
        name = path.name
        if name.endswith(".jsonl"):
            return is_jsonl_transcript(path)
        if name.endswith(".txt"):
            return is_txt_transcript(path)
        if name == "store.db" or name.endswith(".vscdb"):
            return is_sqlite(path) and self._cursor_tables(path)
        return False

    @staticmethod
    def _cursor_tables(path: Path) -> bool:
        try:
            with read_only(path, "a Cursor database") as conn:
                names = tables(conn)
                return {"blobs", "meta"} <= names or "cursorDiskKV" in names or legacy.has_legacy_chats(conn)
        except (SourceError, sqlite3.Error):
            return False

    def why_not(self, path: Path) -> str:
        try:
            if path.stat().st_size == 0:
                return "empty file"
        except OSError:
            pass
        if path.name.endswith(".jsonl"):
            return "its lines are not Cursor's role/message records"
        if path.name.endswith(".txt"):
            return "it does not start with 'user:' and a prompt tag"
        return "not a Cursor transcript, store.db or state.vscdb"

    # -- which copy of a conversation wins (chinvex.ingest.origins) ------------------------
    def precedence_key(self, doc: Any) -> tuple[Any, ...]:
        prompts = sum(1 for t in getattr(doc, "turns", ()) if t.role == "user")
        meta = getattr(doc, "metadata", {}) or {}
        updated = doc.updated_at.timestamp() if getattr(doc, "updated_at", None) else 0.0
        return (prompts, STORE_RANK.get(meta.get("store"), 0), updated)
