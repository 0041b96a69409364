"""Which project folder each IDE composer belongs to, for composers that do not say.

Before Cursor 3.12 a composer's row holds no project path: the link is in the per-workspace
databases (`<User>/workspaceStorage/<hash>/state.vscdb`), which list their composers (Cursor
2: `composer.composerData` `allComposers`; Cursor 3: `workbench.panel.composerChatViewPane*`
keys naming `workbench.panel.aichat.view.<composer id>`), beside a `workspace.json` naming the
folder. Only those few keys are read, and a workspace that cannot be read is passed over:
the project is a detail, never a reason to fail.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from urllib.parse import unquote, urlparse

from chinvex.models.sources import SourceError

from .db import read_only, text_of

MAX_WORKSPACES = 2000
_COMPOSER_ID = re.compile(r'"composerId"\s*:\s*"([0-9A-Za-z-]{8,64})"')
_PANE_ID = re.compile(r"workbench\.panel\.aichat\.view\.([0-9A-Za-z-]{8,64})")


def folder_of(workspace_json: Path) -> str | None:
    """The folder a workspace opened (`folder`, or the directory of a `.code-workspace`)."""
    try:
        data = json.loads(workspace_json.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    uri = data.get("folder") or data.get("workspace")
    if not isinstance(uri, str) or not uri:
        return None
    path = unquote(urlparse(uri).path) if "://" in uri else uri
    if re.match(r"^/[A-Za-z]:/", path):
        path = path[1:]
    if "workspace" in data and "folder" not in data:
        path = path.rsplit("/", 1)[0] or path
    return path or None


def _composer_ids(conn: sqlite3.Connection) -> set[str]:
    found: set[str] = set()
    for key, value in conn.execute(
            "SELECT key, value FROM ItemTable WHERE key = 'composer.composerData' "
            "OR (key >= 'workbench.panel.composerChatViewPane' AND key < 'workbench.panel.composerChatViewPanf')"):
        text = text_of(value) or ""
        pattern = _COMPOSER_ID if key == "composer.composerData" else _PANE_ID
        found.update(pattern.findall(text))
    return found


def composer_folders(global_db: Path) -> dict[str, str]:
    """composer id -> project folder, from the workspace databases beside a global one."""
    storage = global_db.parent.parent / "workspaceStorage"
    if global_db.parent.name.lower() != "globalstorage" or not storage.is_dir():
        return {}
    mapping: dict[str, str] = {}
    try:
        workspaces = sorted(p for p in storage.iterdir() if p.is_dir())[:MAX_WORKSPACES]
    except OSError:
        return {}
    for workspace in workspaces:
        folder = folder_of(workspace / "workspace.json")
        db = workspace / "state.vscdb"
        if folder is None or not db.is_file():
            continue
        try:
            with read_only(db, "a workspace state.vscdb") as conn:
                ids = _composer_ids(conn)
        except (SourceError, sqlite3.Error):
            continue
        for composer_id in ids:
            mapping.setdefault(composer_id, folder)
    return mapping
