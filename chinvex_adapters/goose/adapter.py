"""The `goose` adapter: Block's goose sessions in `sessions.db` (one candidate per session),
the legacy `<data>/sessions/<id>.jsonl` files, and `goose session export` JSON files.

A database session is a thread of the database (`<db>#<session id>`): its candidate carries the
session's `updated_at` and its message count and last row (goose bumps `updated_at` with every
message it adds, and rewrites every row when it compacts), so an unchanged session is skipped
without reading its messages. A session without messages (goose makes one per start) is no
conversation. The same session found in the database, its legacy file and an export is one
document (the thread id is goose's session id); the most recent copy writes it.
"""

from __future__ import annotations

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
from chinvex.timeutil import iso_z, to_utc
from chinvex.files.walk import absolute_root
from chinvex_adapters.kit.sessionfile import SessionFileAdapter
from chinvex_adapters.kit.walk import WalkEntry, walk
from chinvex_adapters.walked import source_candidate

from . import store
from .files import read_export, read_legacy, recognises_export, recognises_legacy
from .layout import DB_SUFFIXES, file_role, walk_root
from .session import json_field, session_doc


class GooseAdapter(SessionFileAdapter):
    name = "goose"
    label = "goose session"
    parser_version = "goose_v1"

    # -- enumeration -----------------------------------------------------------------------
    def enumerate(self, root: Path, options: AdapterOptions) -> Iterator[SourceCandidate | SkippedSource]:
        root_abs = absolute_root(root)
        base = walk_root(root_abs)
        single = base.is_file()
        for entry in walk(base, options.excludes):
            if entry.skip is not None:
                yield SkippedSource(str(entry.path), self.source_type, entry.skip, entry.detail)
                continue
            role, why = file_role(entry.rel, single)
            if role == "db":
                yield from self._sessions(entry.path, str(root_abs))
            elif role == "skip":
                yield SkippedSource(str(entry.path), self.source_type, "ignored", why)
            else:
                yield source_candidate(entry, source_type=self.source_type, adapter=self.name,
                                       root=str(root_abs), extra={"store": role})

    def _sessions(self, db: Path, root: str) -> Iterator[SourceCandidate | SkippedSource]:
        """One candidate per session of a database; the database itself reported when it
        cannot be listed (what was indexed from it stays)."""
        try:
            with store.read_only(db) as conn:
                rows = store.list_sessions(conn)
        except UnrecognisedSource as exc:
            yield SkippedSource(str(db), self.source_type, "not_supported", str(exc))
            return
        except SourceError as exc:
            yield SkippedSource(str(db), self.source_type, "unreadable", str(exc))
            return
        for row in rows:
            uri = f"{db}#{row.session_id}"
            if row.messages == 0:
                yield SkippedSource(uri, self.source_type, "ignored", "a session without messages")
                continue
            updated = to_utc(row.updated_at) or to_utc(row.created_at)
            yield SourceCandidate(
                source_uri=uri, source_type=self.source_type, adapter=self.name, root=root,
                path=None, mtime_ns=int(updated.timestamp() * 1e9) if updated else None,
                thread_id=row.session_id,
                thread_updated_at=iso_z(updated) if updated else str(row.updated_at or ""),
                last_turn_id=f"{row.messages}:{row.last_row}",
                extra={"store": "db", "db": str(db), "session_id": row.session_id})

    def accepts(self, rel: str, entry: WalkEntry) -> bool | str:
        role, why = file_role(rel, False)
        return True if role != "skip" else why

    # -- reading ---------------------------------------------------------------------------
    def parse(self, candidate: SourceCandidate, report: ParseReport,
              previous_state: dict[str, Any] | None) -> Iterator[ParsedDoc]:
        extra = candidate.extra or {}
        db_path, _, session_id = candidate.source_uri.rpartition("#")
        if extra.get("store") == "db" and extra.get("session_id"):
            db_path, session_id = extra["db"], str(extra["session_id"])
        if candidate.path is None and db_path and session_id:
            db = Path(db_path)
            with store.read_only(db) as conn:
                doc = db_session_doc(conn, db, session_id, report)
            if doc is not None:
                yield doc
            return
        yield from super().parse(candidate, report, previous_state)

    def parse_file(self, path: Path, report: ParseReport, candidate: SourceCandidate | None,
                   previous_state: dict[str, Any] | None) -> Iterator[ConversationDoc]:
        if store.is_sqlite(path):
            with store.read_only(path) as conn:
                docs = [doc for row in store.list_sessions(conn) if row.messages
                        if (doc := db_session_doc(conn, path, row.session_id, report)) is not None]
            yield from docs
            return
        doc = read_legacy(path, report) if path.name.endswith(".jsonl") else read_export(path, report)
        if doc is not None:
            yield doc

    # -- routing by content (chinvex_adapters.agents) -------------------------------------
    def recognises(self, path: Path) -> bool:
        """goose's sessions database (tables `sessions` and `messages` with `content_json`),
        a legacy session `.jsonl`, or an exported session `.json`."""
        name = path.name.lower()
        if name.endswith(DB_SUFFIXES):
            return store.is_sqlite(path) and _goose_db(path)
        if name.endswith(".jsonl"):
            return recognises_legacy(path)
        if name.endswith(".json"):
            return recognises_export(path)
        return False

    def why_not(self, path: Path) -> str:
        try:
            if path.stat().st_size == 0:
                return "empty file"
        except OSError:
            pass
        name = path.name.lower()
        if name.endswith(".jsonl"):
            return "its lines are not goose session metadata and messages"
        if name.endswith(".json"):
            return "no goose session fields: id, working_dir, extension_data ..."
        return "not a sessions database, session .jsonl or exported session .json"


def _goose_db(path: Path) -> bool:
    try:
        with store.read_only(path):
            return True
    except SourceError:
        return False


def db_session_doc(conn: Any, db: Path, session_id: str, report: ParseReport) -> ConversationDoc | None:
    """One session of a database; None when it is gone or has no message to show."""
    fields = store.session_row(conn, session_id)
    if fields is None:
        report.counts["sessions_gone"] += 1
        return None
    ids: list[str] = []
    version = store.schema_version(conn)

    def messages() -> Iterator[Any]:
        for row in store.message_rows(conn, session_id):
            message = _message(row, session_id)
            if message is None:
                report.counts["rows_unreadable"] += 1
                continue
            ids.append(str(row.get("id")))
            yield message

    extra: dict[str, Any] = {"database": str(db)}
    if version is not None:
        extra["schema_version"] = version
    doc = session_doc(fields, messages(), thread_id=session_id, source_uri=f"{db}#{session_id}",
                      store="sessions.db", report=report, extra=extra)
    if doc is not None:
        doc.metadata["message_rows"] = len(ids)
    return doc


def _message(row: dict[str, Any], session_id: str) -> dict[str, Any] | None:
    """A message row as goose's Message JSON (the row's columns around its content)."""
    content = store_json(row.get("content_json"))
    if not isinstance(content, list):
        return None
    metadata = store_json(row.get("metadata_json"))
    msg_id = row.get("message_id") or f"msg_{session_id}_{row.get('id')}"
    return {"id": msg_id, "role": row.get("role"), "created": row.get("created_timestamp"),
            "content": content, "metadata": metadata if isinstance(metadata, dict) else {}}


def store_json(value: Any) -> Any:
    """A JSON column parsed (None when it holds broken JSON; other text as it is)."""
    return json_field({"v": value}, "v") if isinstance(value, (str, bytes)) else value
