"""Where Cline, Roo Code and Kilo Code keep their tasks, and which files of a store are
transcripts.

Two layouts share this adapter: the legacy task folder (`tasks/<task id>/` holding
`api_conversation_history.json`, `ui_messages.json`, `task_metadata.json`), written by Cline
up to 3.x, Roo Code and Kilo Code 4.x inside each editor's extension storage; and the Cline
SDK session (`sessions/<id>/<id>.messages.json` with its `<id>.json` manifest), written by
Cline 4.x and its CLI. A session spans several files, so one file per session is the candidate
and its size and mtime combine every file of the session (stat only).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from chinvex.files.walk import WalkedFile
from chinvex_adapters.kit.registry import VSCODE_APPS, Where
from chinvex_adapters.kit.walk import walk

API_HISTORY = "api_conversation_history.json"
UI_MESSAGES = "ui_messages.json"
OLD_UI_MESSAGES = "claude_messages.json"  # Claude Dev, before ui_messages.json
TASK_TRANSCRIPTS = (API_HISTORY, UI_MESSAGES, OLD_UI_MESSAGES)
"""A task folder's transcripts, the first present being its candidate."""
TASK_COMPANIONS = ("task_metadata.json", "history_item.json")
"""Read with their task (files in context, the task's index entry)."""
SDK_MESSAGES = ".messages.json"

EXTENSION_IDS = {
    "saoudrizwan.claude-dev": "cline",
    "rooveterinaryinc.roo-cline": "roo",
    "kilocode.kilo-code": "kilo",
}
"""Extension storage folder (VS Code lower-cases the id) -> the tool, i.e. the `source`."""
HOME_FOLDERS = {".cline": "cline", ".vscode-mock": "roo", ".kilocode": "kilo"}
"""Stores outside an editor: Cline's own data folder, the Roo CLI's and Kilo CLI's VS Code shims."""

PRUNED = {
    "checkpoints": "checkpoints (a shadow git repository), not a transcript",
    "cache": "model and tool caches, not transcripts",
    "puppeteer": "the browser tool's download, not transcripts",
    "node_modules": "not transcripts",
}
"""Folders beside (or inside) tasks that are never entered: one skip line each."""

SIDE_FILES = {
    "context_history.json": "context-window edits of a Cline task, not a transcript",
    "settings.json": "a task's or the extension's settings, not a transcript",
    "secrets.json": "credentials: never read",
    "globalstate.json": "the extension's settings, not a transcript",
    "_index.json": "the task index, read with the tasks",
    "taskhistory.json": "the task index, read with the tasks",
    "task_history.json": "the task index, read with the tasks",
    "hooks.jsonl": "hook telemetry, not a transcript",
    "cline_mcp_settings.json": "MCP settings, not a transcript",
    "mcp_settings.json": "MCP settings, not a transcript",
    "custom_modes.json": "custom modes, not a transcript",
    "custom_modes.yaml": "custom modes, not a transcript",
    "sessions.db": "the SDK's session index (the sessions' own files are read)",
}

_TEMP = re.compile(r"\.tmp\.\d+\.[^/]*$|\.(?:new|bak)_\d+_[^/]*\.tmp$|\.tmp$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_CLINE_TASK_ID = re.compile(r"^\d{13}$")
EXTRA_APPS = ("Antigravity", "Code - OSS")
REMOTE_SERVERS = (".vscode-server-insiders", ".vscode-remote", ".windsurf-server", ".trae-server")


# -- which tool a file belongs to ------------------------------------------------------------

def tool_of_path(path: Path) -> str | None:
    """The tool whose store holds `path`, from the folder names on the way (None when no
    folder names it)."""
    for part in reversed(path.parts):
        low = part.lower()
        if low in EXTENSION_IDS:
            return EXTENSION_IDS[low]
        if low in HOME_FOLDERS:
            return HOME_FOLDERS[low]
    return None


def tool_of_task_id(task_id: str) -> str | None:
    """Cline names a task by its creation time in ms; Roo and Kilo by a UUID."""
    if _CLINE_TASK_ID.match(task_id):
        return "cline"
    if _UUID.match(task_id):
        return "roo"
    return None


def is_cline_task_id(task_id: str) -> bool:
    return bool(_CLINE_TASK_ID.match(task_id))


# -- the stores --------------------------------------------------------------------------

def editor_users(w: Where) -> list[Path]:
    """The `User` folder of every VS Code-based editor, local and remote."""
    users = w.vscode_users(VSCODE_APPS + EXTRA_APPS)
    users += [w.home / server / "data" / "User" for server in REMOTE_SERVERS]
    return users


def cline_data(w: Where) -> Path:
    """Cline's data folder: CLINE_DATA_DIR, else $CLINE_DIR/data, else ~/.cline/data."""
    return w.var("CLINE_DATA_DIR") or (w.var("CLINE_DIR") or w.home / ".cline") / "data"


def cline_stores(w: Where) -> list[Path]:
    """Cline's legacy task folders in each editor and in ~/.cline/data (JetBrains, CLI 1-2,
    standalone), and the SDK's sessions (Cline 4.x, CLI 3.x)."""
    data = cline_data(w)
    sessions = w.var("CLINE_SESSION_DATA_DIR") or data / "sessions"
    extension = [u / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" for u in editor_users(w)]
    return [*extension, data / "tasks", sessions]


def roo_stores(w: Where) -> list[Path]:
    return [*(u / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks" for u in editor_users(w)),
            w.home / ".vscode-mock" / "global-storage" / "tasks"]


def kilo_stores(w: Where) -> list[Path]:
    return [*(u / "globalStorage" / "kilocode.kilo-code" / "tasks" for u in editor_users(w)),
            w.home / ".kilocode" / "cli" / "global" / "tasks"]


# -- enumeration ---------------------------------------------------------------------------

@dataclass
class Session:
    """The files of one task folder or SDK session, as walked (path -> (size, mtime_ns))."""

    kind: str  # task | sdk
    key: str
    files: dict[Path, tuple[int | None, int | None]] = field(default_factory=dict)
    primary: Path | None = None

    @property
    def size_bytes(self) -> int:
        return sum(size or 0 for size, _ in self.files.values())

    @property
    def mtime_ns(self) -> int | None:
        stamps = [m for _, m in self.files.values() if m is not None]
        return max(stamps) if stamps else None


def _pruned(path: Path, rel: str, entry: os.DirEntry[str]) -> WalkedFile | None:
    """Checkpoints, caches and browser sessions hold no transcript: never entered."""
    reason = PRUNED.get(entry.name.lower())
    return WalkedFile(path, rel, skip="ignored", detail=reason) if reason else None


def walk_store(root: Path, excludes: list[str]) -> Iterator[WalkedFile]:
    """The files of a store root in name order, a folder's files before its subfolders (so a
    task's files arrive together); a root that is a file: that file alone."""
    return walk(root, excludes, files_first=True, folder_rule=_pruned)


def role_of_file(path: Path) -> tuple[str, str]:
    """What a file of a store is: ("task" | "sdk", group key) for a session's file, else
    ("skip", reason)."""
    name = path.name
    low = name.lower()
    if _TEMP.search(low):
        return "skip", "a temporary file being written (read once renamed)"
    if name in TASK_TRANSCRIPTS or name in TASK_COMPANIONS:
        return "task", str(path.parent)
    if name.endswith(SDK_MESSAGES):
        return "sdk", str(path.parent / name[: -len(SDK_MESSAGES)])
    if name.endswith(".compaction.json"):
        return "skip", "the compacted view of an SDK session (its messages.json is read)"
    if low.startswith("focus_chain_taskid_"):
        return "skip", "a Cline task's todo list, not a transcript"
    if low in SIDE_FILES:
        return "skip", SIDE_FILES[low]
    if name.endswith(".json") and path.parent.name == name[: -len(".json")]:
        return "sdk", str(path.parent / path.parent.name)  # an SDK session's manifest
    return "skip", "not a Cline, Roo Code or Kilo Code transcript"


def pick_primary(session: Session) -> Path | None:
    """The candidate file of a session: a task's API history, else its UI messages; an SDK
    session's messages.json (never its manifest alone)."""
    names = {p.name: p for p in session.files}
    if session.kind == "task":
        return next((names[n] for n in TASK_TRANSCRIPTS if n in names), None)
    return next((p for p in session.files if p.name.endswith(SDK_MESSAGES)), None)


def complete_single(path: Path, session: Session) -> None:
    """A root that is one file of a session: stat the session's other files too, so that a
    change in any of them is seen."""
    folder = path.parent
    if session.kind == "task":
        names = TASK_TRANSCRIPTS + TASK_COMPANIONS
    else:
        stem = path.name[: -len(SDK_MESSAGES)] if path.name.endswith(SDK_MESSAGES) else path.stem
        names = (f"{stem}{SDK_MESSAGES}", f"{stem}.json")
    for name in names:
        other = folder / name
        if other in session.files:
            continue
        try:
            st = other.stat()
        except OSError:
            continue
        session.files[other] = (st.st_size, st.st_mtime_ns)
