"""The Cursor IDE's global `state.vscdb`: one conversation per composer.

`cursorDiskKV` holds `composerData:<id>` (title, times in epoch ms, model, mode, workspace,
and either the bubbles inline in `conversation[]` (2024) or their order in
`fullConversationHeadersOnly`) and one `bubbleId:<id>:<bubble>` row per bubble. The database
can be gigabytes: rows are selected by key ranges the index serves, never by scanning. Listing
reads only what the run needs to skip an unchanged composer (its `lastUpdatedAt` and last
bubble id), computed inside SQLite.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport, UnrecognisedSource
from chinvex.timeutil import iso_z, to_utc
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder

from .bubbles import BubbleContext, add_bubble, bubble_time
from .db import decode, tables, text_of

LABEL = "Cursor state.vscdb"
COMPOSER = "composerData:"
CONTENT = "composer.content."

_LIST = """
SELECT key, ok,
  CASE WHEN ok THEN json_extract(j, '$.lastUpdatedAt') END,
  CASE WHEN ok THEN coalesce(json_array_length(j, '$.fullConversationHeadersOnly'), 0)
                  + coalesce(json_array_length(j, '$.conversation'), 0) END,
  CASE WHEN ok THEN json_extract(j, '$.fullConversationHeadersOnly[#-1].bubbleId') END,
  length(j)
FROM (SELECT key, CAST(value AS TEXT) AS j, json_valid(CAST(value AS TEXT)) AS ok
      FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;')
"""


@dataclass
class ComposerRow:
    composer_id: str
    valid: bool
    updated_ms: Any
    messages: int
    last_bubble: str | None
    size: int

    @property
    def updated_at(self) -> str:
        """What tells an unchanged composer: its lastUpdatedAt (else its size)."""
        ts = to_utc(self.updated_ms) if isinstance(self.updated_ms, int | float) else None
        return iso_z(ts) if ts is not None else f"size:{self.size}"

    @property
    def deleted(self) -> bool:
        """A row whose value is NULL (or empty): real global databases keep such rows for
        composers the user deleted (one had 16 beside 17 live ones). There is nothing to read;
        it is not an unreadable conversation."""
        return not self.valid and self.size == 0

    @property
    def last_turn(self) -> str:
        return f"{self.messages}:{self.last_bubble or ''}"


def is_cursor_db(conn: sqlite3.Connection) -> bool:
    return "cursorDiskKV" in tables(conn)


def _python_row(key: str, value: Any) -> ComposerRow:
    data = decode(value)
    text = text_of(value) or ""
    if not isinstance(data, dict):
        return ComposerRow(key[len(COMPOSER):], False, None, 0, None, len(text))
    headers = data.get("fullConversationHeadersOnly")
    inline = data.get("conversation")
    count = (len(headers) if isinstance(headers, list) else 0) + (len(inline) if isinstance(inline, list) else 0)
    last = headers[-1].get("bubbleId") if isinstance(headers, list) and headers and isinstance(headers[-1], dict) else None
    return ComposerRow(key[len(COMPOSER):], True, data.get("lastUpdatedAt"), count, as_str(last), len(text))


def list_composers(conn: sqlite3.Connection) -> Iterator[ComposerRow]:
    """Every composer of the database (key range on the index), without its bubbles."""
    try:
        rows = conn.execute(_LIST).fetchall()
    except sqlite3.OperationalError as exc:  # an SQLite without JSON functions or `#-1` paths
        if "locked" in str(exc) or "busy" in str(exc):
            raise
        for key, value in conn.execute("SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?",
                                       (COMPOSER, "composerData;")):
            yield _python_row(key, value)
        return
    for key, ok, updated, count, last, size in rows:
        yield ComposerRow(key[len(COMPOSER):], bool(ok), updated, int(count or 0), as_str(last), int(size or 0))


def content_reader(conn: sqlite3.Connection) -> Any:
    """Looks up `composer.content.<sha256>` rows (file texts that edits point at)."""

    def content_of(content_id: str) -> str | None:
        key = content_id if content_id.startswith(CONTENT) else CONTENT + content_id
        row = conn.execute("SELECT value FROM cursorDiskKV WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        value = decode(row[0])
        return value if isinstance(value, str) else text_of(row[0])

    return content_of


def read_bubbles(conn: sqlite3.Connection, composer: dict[str, Any], composer_id: str,
                 counts: Counter[str]) -> list[dict[str, Any]]:
    """The composer's bubbles in display order: inline ones, else the rows its headers list,
    then rows written after the last of those (before the headers were flushed)."""
    inline = composer.get("conversation")
    if isinstance(inline, list) and inline:
        return [b for b in inline if isinstance(b, dict)]
    prefix = f"bubbleId:{composer_id}:"
    rows: dict[str, dict[str, Any]] = {}
    for key, value in conn.execute("SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?",
                                   (prefix, f"bubbleId:{composer_id};")):
        bubble = decode(value)
        if not isinstance(bubble, dict):
            counts["bubbles_invalid"] += 1
            continue
        rows[key[len(prefix):]] = bubble
    ordered: list[dict[str, Any]] = []
    headers = composer.get("fullConversationHeadersOnly")
    for header in headers if isinstance(headers, list) else ():
        bid = header.get("bubbleId") if isinstance(header, dict) else None
        bubble = rows.pop(bid, None) if isinstance(bid, str) else None
        if bubble is None:
            counts["bubbles_missing"] += 1
            continue
        if bubble.get("type") is None and isinstance(header, dict):
            bubble["type"] = header.get("type")
        ordered.append(bubble)
    last = max((t for b in ordered if (t := bubble_time(b)) is not None), default=None)
    later = [b for b in rows.values() if (t := bubble_time(b)) is not None and (last is None or t > last)]
    counts["bubbles_off_conversation"] += len(rows) - len(later)
    counts["bubbles_after_headers"] += len(later)
    return ordered + sorted(later, key=lambda b: bubble_time(b))  # type: ignore[arg-type, return-value]


def _workspace(composer: dict[str, Any]) -> str | None:
    ident = composer.get("workspaceIdentifier")
    uri = ident.get("uri") if isinstance(ident, dict) else None
    if isinstance(uri, dict):
        return as_str(uri.get("fsPath")) or as_str(uri.get("path"))
    return None


def _metadata(composer: dict[str, Any], db: Path, ctx: BubbleContext) -> dict[str, Any]:
    meta: dict[str, Any] = {"store": "ide_db", "database": str(db)}
    for key, name in (("_v", "composer_version"), ("unifiedMode", "mode"), ("forceMode", "force_mode"),
                      ("isAgentic", "agentic"), ("agentBackend", "agent_backend"), ("status", "status"),
                      ("isArchived", "archived"), ("isSubagent", "subagent")):
        value = composer.get(key)
        if isinstance(value, str | int | bool) and value != "":
            meta[name] = value
    subs = composer.get("subComposerIds")
    if isinstance(subs, list) and subs:
        meta["sub_composer_ids"] = [s for s in subs if isinstance(s, str)][:100]
    ident = composer.get("workspaceIdentifier")
    if isinstance(ident, dict) and as_str(ident.get("id")):
        meta["workspace_id"] = ident["id"]
    config = composer.get("modelConfig")
    if isinstance(config, dict):
        if as_str(config.get("modelName")):
            meta["model_setting"] = config["modelName"]
        if isinstance(config.get("maxMode"), bool):
            meta["max_mode"] = config["maxMode"]
    if ctx.usage:
        meta["usage"] = ctx.usage
    if isinstance(composer.get("capabilities"), list) and composer["capabilities"]:
        meta["v1_capabilities_not_read"] = True
    return meta


def composer_doc(conn: sqlite3.Connection, db: Path, composer_id: str, report: ParseReport,
                 cwd_hint: str | None = None) -> ConversationDoc | None:
    """One composer as a conversation (None when it is gone or holds no message)."""
    uri = f"{db}#{composer_id}"
    row = conn.execute("SELECT value FROM cursorDiskKV WHERE key=?", (COMPOSER + composer_id,)).fetchone()
    if row is None:
        report.warnings.append(f"{uri}: the composer is no longer in the database")
        return None
    composer = decode(row[0])
    if not isinstance(composer, dict):
        raise UnrecognisedSource(f"{uri}: not a readable Cursor composer (its composerData is not a JSON object)")
    bubbles = read_bubbles(conn, composer, composer_id, report.counts)
    return doc_of_composer(composer, composer_id, bubbles, db, report, cwd_hint, content_of=content_reader(conn))


def doc_of_composer(composer: dict[str, Any], composer_id: str, bubbles: list[dict[str, Any]], db: Path,
                    report: ParseReport,
                    cwd_hint: str | None = None, *, content_of: Any = None,
                    store: str = "ide_db") -> ConversationDoc | None:
    """A composer already read (its JSON object and its bubbles in order) as a conversation.
    Shared by the global database's composers and the ones Cursor before 0.43 kept inline in a
    workspace's own state.vscdb (`legacy.py`), which have no rows to look file contents up in."""
    uri = f"{db}#{composer_id}"
    cwd = _workspace(composer) or cwd_hint
    b = ConversationBuilder(report.counts, cwd=cwd)
    ctx = BubbleContext(content_of=content_of or (lambda _cid: None))
    for n, bubble in enumerate(bubbles):
        try:
            add_bubble(b, bubble, n, ctx)
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            report.counts["bubbles_failed"] += 1
    created = to_utc(composer.get("createdAt"))
    updated = to_utc(composer.get("lastUpdatedAt"))
    if b.turns and b.turns[0].ts is None and created is not None:
        b.turns[0].ts = created
    turns = b.finish(fallback_ts=updated or created)
    config = composer.get("modelConfig")
    model = b.models.most_common(1)[0][0] if b.models else None
    if model is None and isinstance(config, dict) and as_str(config.get("modelName")) not in (None, "default"):
        model = config["modelName"]
    doc = conversation(agent="cursor", source_uri=uri, thread_id=composer_id, turns=turns,
                       title=as_str(composer.get("name")), cwd=cwd, model=model,
                       models=list(b.models), metadata={**_metadata(composer, db, ctx), "store": store})
    if doc is None:
        report.counts["composers_without_messages"] += 1
    return doc
