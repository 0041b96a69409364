"""Where Cursor keeps its conversations, and what each file of those folders is.

Three stores: the agent transcripts (`<cfg>/projects/<slug>/agent-transcripts/`, plain text
up to early 2026, JSONL since), the cursor-agent CLI's blob stores (`<cfg>/chats/<md5 of
cwd>/<agent id>/store.db`), and the IDE's global `state.vscdb`. `<cfg>` is
`$CURSOR_CONFIG_DIR`, else `$XDG_CONFIG_HOME/cursor`, else `~/.cursor`; all three are looked
at, since the CLI may have run with or without the variables. Beside the sessions live
terminal captures, pasted images, MCP descriptors and settings holding credentials: the walk
never enters those folders.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from chinvex.files.walk import WalkedFile, absolute_root
from chinvex_adapters.kit.registry import Where
from chinvex_adapters.kit.walk import walk

TRANSCRIPTS_DIR = "agent-transcripts"
SUBAGENTS_DIR = "subagents"
CLI_STORE = "store.db"
IDE_DB = "state.vscdb"

PRUNED = {
    "terminals": "terminal captures that prompts refer to, not transcripts",
    "assets": "images pasted into prompts (kept as references of their turns)",
    "mcps": "MCP tool descriptors, not transcripts",
    "history": "the editor's local file history, not conversations",
    "node_modules": "not transcripts",
    "logs": "logs, not transcripts",
}
"""Folders of a Cursor root that are never entered (one skip line each). In `globalStorage`
and in each `workspaceStorage/<hash>/` only the folder's own files are read."""

SIDE_FILES = {
    "cli-config.json": "the CLI's settings and credentials: never read",
    "permissions.json": "permissions and credentials: never read",
    "mcp.json": "MCP settings, not a transcript",
    "hooks.json": "hook settings, not a transcript",
    "state.vscdb.backup": "the editor's backup of state.vscdb (the live database is read)",
    "storage.json": "the editor's settings, not conversations",
    "meta.json": "an ACP session's index entry",
    "workspace.json": "the folder a workspace opened (read with its state.vscdb)",
}

_DB_COMPANION = re.compile(r"-(?:wal|shm|journal)$")


def config_roots(w: Where) -> list[Path]:
    """The CLI config roots, most specific first: CURSOR_CONFIG_DIR, $XDG_CONFIG_HOME/cursor
    (and ~/.config/cursor), ~/.cursor."""
    roots = [w.var("CURSOR_CONFIG_DIR"), *(p / "cursor" for p in w.xdg("XDG_CONFIG_HOME", ".config")),
             w.home / ".cursor"]
    return [p for p in roots if p is not None]


def transcript_stores(w: Where) -> list[Path]:
    return [root / "projects" for root in config_roots(w)]


def chat_stores(w: Where) -> list[Path]:
    return [root / "chats" for root in config_roots(w)]


def ide_stores(w: Where) -> list[Path]:
    """`<Cursor user dir>/globalStorage` on every system, and Cursor's remote server's."""
    users = [u for u in w.vscode_users(("Cursor",)) if ".vscode-server" not in u.parts]
    return [u / "globalStorage" for u in users]


def workspace_stores(w: Where) -> list[Path]:
    """`<Cursor user dir>/workspaceStorage`: the chats of Cursor before 0.43 (legacy.py)."""
    users = [u for u in w.vscode_users(("Cursor",)) if ".vscode-server" not in u.parts]
    return [u / "workspaceStorage" for u in users]


# -- what a file is ------------------------------------------------------------------------

@dataclass(frozen=True)
class Place:
    """What a file of a Cursor folder is: `kind` is txt | jsonl | cli | ide | skip."""

    kind: str
    detail: str = ""


def classify(path: Path, rel: str = "") -> Place:
    """A file's role from its name and the folders above it (no reading)."""
    name = path.name
    low = name.lower()
    if _DB_COMPANION.search(low):
        return Place("skip", "a SQLite companion file, read with its database")
    if low in SIDE_FILES:
        return Place("skip", SIDE_FILES[low])
    if name == CLI_STORE:
        return Place("cli")
    if low == IDE_DB or low.endswith(".vscdb"):
        parent = path.parent.name.lower()
        if parent == "globalstorage" or not rel or "/" not in rel:
            return Place("ide")
        if path.parent.parent.name.lower() == "workspacestorage":
            return Place("workspace")
        return Place("skip", "a state.vscdb outside globalStorage and workspaceStorage")
    parts = path.parts
    if TRANSCRIPTS_DIR in parts[:-1] or not rel or "/" not in rel:
        if low.endswith(".txt"):
            return Place("txt")
        if low.endswith(".jsonl"):
            return Place("jsonl")
    return Place("skip", "not a Cursor transcript, store.db or state.vscdb")


@dataclass(frozen=True)
class TranscriptPlace:
    """A transcript's session id, its parent's (sub-agents), and the project slug above it."""

    thread_id: str
    parent_id: str | None
    slug: str | None
    layout: str  # flat | nested | subagent | loose


def transcript_place(path: Path) -> TranscriptPlace:
    stem = path.name.rsplit(".", 1)[0]
    parts = path.parts
    if TRANSCRIPTS_DIR not in parts[:-1]:
        return TranscriptPlace(stem, None, None, "loose")
    at = len(parts) - 1 - parts[::-1].index(TRANSCRIPTS_DIR)
    slug = parts[at - 1] if at >= 1 else None
    inner = parts[at + 1:-1]
    if len(inner) >= 2 and inner[-1] == SUBAGENTS_DIR:
        return TranscriptPlace(stem, inner[-2], slug, "subagent")
    if inner:
        return TranscriptPlace(stem, None, slug, "nested")
    return TranscriptPlace(stem, None, slug, "flat")


def _squash(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def cwd_from_slug(slug: str | None, paths: list[str]) -> str | None:
    """The project folder whose slug is `slug`, found among the ancestors of the absolute
    paths the session touched (the slug alone is lossy: '-', '_', '.' and ' ' all become '-')."""
    if not slug:
        return None
    want = _squash(slug)
    want_low = want.lower()
    fallback = None
    for raw in paths[:400]:
        if not isinstance(raw, str) or not raw or not (raw.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", raw)):
            continue
        windows = not raw.startswith("/")
        sep = "\\" if windows and "\\" in raw else "/"
        pieces = raw.rstrip(sep).split(sep)
        for n in range(len(pieces), 0, -1):
            candidate = sep.join(pieces[:n]) or sep
            squashed = _squash(candidate)
            if squashed == want:
                return candidate
            if fallback is None and squashed.lower() == want_low:
                fallback = candidate
    return fallback


# -- the walk ------------------------------------------------------------------------------

def _folder_rule(path: Path, rel: str, entry: os.DirEntry[str]) -> WalkedFile | bool | None:
    """Folders that hold no conversations are pruned; in a `globalStorage` folder only its own
    files are read (other extensions' storage is theirs)."""
    reason = PRUNED.get(entry.name.lower())
    if reason and path.parent.name != "projects":  # a project's slug may be any word
        return WalkedFile(path, rel, skip="ignored", detail=reason)
    if path.parent.name.lower() == "globalstorage":
        return False
    if path.parent.parent.name.lower() == "workspacestorage":
        return False  # a workspace's own files only: its subfolders are extensions' storage
    return None


def walk_root(root: Path, excludes: list[str]) -> tuple[Path, list[WalkedFile] | None]:
    """(the root as walked, its files in name order); a root that is a file gives None (read it
    alone)."""
    root_abs = absolute_root(root)
    if root_abs.is_file():
        return root_abs, None
    return root_abs, list(walk(root_abs, excludes, folder_rule=_folder_rule))


def db_stat(path: Path, size: int | None = None, mtime_ns: int | None = None) -> tuple[int, int | None]:
    """A SQLite database's size and mtime with its write-ahead log (recent writes live there
    until a checkpoint): stat only."""
    total, newest = size, mtime_ns
    if total is None or newest is None:
        try:
            st = path.stat()
            total, newest = st.st_size, st.st_mtime_ns
        except OSError:
            total, newest = 0, None
    try:
        wal = os.stat(f"{path}-wal")
        total = (total or 0) + wal.st_size
        newest = max(newest or 0, wal.st_mtime_ns)
    except OSError:
        pass
    return total or 0, newest
