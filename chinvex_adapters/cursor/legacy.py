"""Chats that Cursor before 0.43 (2024) kept in a workspace's own state.vscdb.

Up to late 2024 Cursor wrote no `cursorDiskKV` rows: each workspace's
`<User>/workspaceStorage/<hash>/state.vscdb` held, in its `ItemTable`,
- `workbench.panel.aichat.view.aichat.chatdata`: the Chat panel's tabs (`tabs[]`: `tabId`,
  `chatTitle`, `lastSendTime` in epoch ms, `bubbles[]` of `type` "user" / "ai" with `text`,
  the model in `modelType`, no time of their own);
- `composer.composerData`: `allComposers[]`, each composer with its bubbles inline in
  `conversation[]` (`type` 1 / 2, as the global database's 2024 composers).
Newer Cursor keeps only composer ids there (the conversations are in globalStorage), so a
workspace database holding bubbles is one of those older installs, whose chats are nowhere else.
Both keys are read, nothing else of the table (it also holds terminal buffers and settings).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from chinvex.models import ConversationDoc
from chinvex.models.sources import ParseReport
from chinvex.timeutil import to_utc
from chinvex_adapters.kit.sessionfile import conversation
from chinvex_adapters.kit.text import as_str
from chinvex_adapters.kit.turns import ConversationBuilder

from .bubbles import BubbleContext, add_bubble
from .db import text_of
from .ide import doc_of_composer
from .workspaces import folder_of

CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSERS_KEY = "composer.composerData"
STORE = "ide_workspace_db"


def _values(conn: sqlite3.Connection) -> dict[str, Any]:
    """The two keys' JSON values (absent, unreadable or not objects: left out)."""
    found: dict[str, Any] = {}
    try:
        rows = conn.execute("SELECT key, value FROM ItemTable WHERE key IN (?, ?)",
                            (CHAT_KEY, COMPOSERS_KEY)).fetchall()
    except sqlite3.OperationalError:  # no ItemTable
        return found
    for key, value in rows:
        try:
            data = json.loads(text_of(value) or "")
        except ValueError:
            continue
        if isinstance(data, dict):
            found[key] = data
    return found


def _chat_tabs(values: dict[str, Any]) -> list[dict[str, Any]]:
    tabs = values.get(CHAT_KEY, {}).get("tabs")
    return [t for t in tabs if isinstance(t, dict) and isinstance(t.get("bubbles"), list) and t["bubbles"]] \
        if isinstance(tabs, list) else []


def _inline_composers(values: dict[str, Any]) -> list[dict[str, Any]]:
    """Composers that carry their bubbles (newer Cursor lists bare ids here: those are skipped)."""
    composers = values.get(COMPOSERS_KEY, {}).get("allComposers")
    return [c for c in composers if isinstance(c, dict) and as_str(c.get("composerId"))
            and isinstance(c.get("conversation"), list) and c["conversation"]] \
        if isinstance(composers, list) else []


def has_legacy_chats(conn: sqlite3.Connection) -> bool:
    values = _values(conn)
    return bool(_chat_tabs(values) or _inline_composers(values))


def _chat_bubble(bubble: dict[str, Any]) -> dict[str, Any]:
    """A Chat panel bubble in the shape `add_bubble` reads: its id is `id` (not `bubbleId`)
    and its model is named in `modelType` (not `modelInfo`)."""
    out = dict(bubble)
    if not as_str(out.get("bubbleId")) and as_str(out.get("id")):
        out["bubbleId"] = out["id"]
    if not isinstance(out.get("modelInfo"), dict) and as_str(out.get("modelType")):
        out["modelInfo"] = {"modelName": out["modelType"]}
    return out


def _chat_tab_doc(tab: dict[str, Any], db: Path, report: ParseReport, cwd: str | None) -> ConversationDoc | None:
    tab_id = as_str(tab.get("tabId")) or ""
    b = ConversationBuilder(report.counts, cwd=cwd)
    ctx = BubbleContext(content_of=lambda _cid: None)
    for n, bubble in enumerate(tab["bubbles"]):
        if not isinstance(bubble, dict):
            report.counts["bubbles_invalid"] += 1
            continue
        try:
            add_bubble(b, _chat_bubble(bubble), n, ctx)
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            report.counts["bubbles_failed"] += 1
    # The bubbles carry no time: the tab's last send is the only one there is.
    turns = b.finish(fallback_ts=to_utc(tab.get("lastSendTime")))
    model = b.models.most_common(1)[0][0] if b.models else None
    return conversation(agent="cursor", source_uri=f"{db}#{tab_id}", thread_id=tab_id, turns=turns,
                        title=as_str(tab.get("chatTitle")), cwd=cwd, model=model, models=list(b.models),
                        metadata={"store": STORE, "database": str(db), "legacy_kind": "chat_tab"})


def legacy_docs(conn: sqlite3.Connection, db: Path, report: ParseReport,
                skip_ids: set[str] | frozenset[str] = frozenset()) -> list[ConversationDoc]:
    """The Chat panel tabs and inline composers of a workspace database, one conversation
    each; the project folder is the one `workspace.json` beside the database names."""
    values = _values(conn)
    cwd = folder_of(db.parent / "workspace.json")
    docs: list[ConversationDoc] = []
    for tab in _chat_tabs(values):
        doc = _chat_tab_doc(tab, db, report, cwd)
        if doc is not None:
            docs.append(doc)
    for composer in _inline_composers(values):
        composer_id = composer["composerId"]
        if composer_id in skip_ids:
            continue
        bubbles = [b for b in composer["conversation"] if isinstance(b, dict)]
        doc = doc_of_composer(composer, composer_id, bubbles, db, report, cwd, store=STORE)
        if doc is not None:
            docs.append(doc)
    report.counts["legacy_workspace_conversations"] += len(docs)
    return docs
