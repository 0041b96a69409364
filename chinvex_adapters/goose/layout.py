"""Where goose keeps its sessions, and what each file found there is.

goose (Block) writes one data folder per user: `$GOOSE_PATH_ROOT/data` when that variable holds
an absolute path, else the XDG data folder on Linux and macOS alike (`~/.local/share/goose`;
goose's directory strategy is XDG everywhere but Windows) and `%APPDATA%\\Block\\goose\\data` on
Windows. Its `sessions/` folder holds `sessions.db` (goose >= ~1.10) and the one-file-per-session
`*.jsonl` of earlier versions (left in place after goose imported them into the database).
"""

from __future__ import annotations

from pathlib import Path, PurePath

from chinvex_adapters.kit.registry import Where

SESSIONS_DIR = "sessions"
DB_NAME = "sessions.db"
DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
DB_SIDE_FILES = ("-wal", "-shm", "-journal")
NOT_SESSIONS = {
    "projects.json": "goose's index of project folders, not a session",
    "schedule.json": "goose's schedules, not a session",
    "schedules.json": "goose's schedules, not a session",
    "registry.json": "goose's local model registry, not a session",
    "dashboard.json": "goose's dashboard layout, not a session",
}


def data_dirs(where: Where) -> list[Path]:
    """goose's data folder on every system, the override first."""
    found: list[Path] = []
    root = where.var("GOOSE_PATH_ROOT")
    if root is not None and root.is_absolute():
        found.append(root / "data")
    found += [base / "goose" for base in where.xdg("XDG_DATA_HOME", ".local/share")]
    roaming = [p for p in (where.var("APPDATA"),) if p is not None] + [where.home / "AppData" / "Roaming"]
    found += [base / "Block" / "goose" / "data" for base in roaming]
    return found


def session_stores(where: Where) -> list[Path]:
    """The `sessions/` folder of each data folder: what detect and `--sessions auto` read."""
    return [data / SESSIONS_DIR for data in data_dirs(where)]


def walk_root(root: Path) -> Path:
    """The folder to walk for `root`: a data folder is read through its `sessions/` (the rest
    of it is models, apps and settings)."""
    sessions = root / SESSIONS_DIR
    if root.is_dir() and sessions.is_dir() and not (root / DB_NAME).exists():
        return sessions
    return root


def file_role(rel: str, single: bool) -> tuple[str, str]:
    """("db" | "jsonl" | "export" | "skip", why) for a file found under a goose root. `single`:
    the file is the root itself (the user named it), so any database or JSON file is tried."""
    parts = PurePath(rel.replace("\\", "/")).parts
    name = parts[-1] if parts else rel
    lower = name.lower()
    if any(p.lower() == "backups" for p in parts[:-1]):
        return "skip", "a backup copy of goose's sessions database (its sessions are in sessions.db)"
    if lower.endswith(DB_SIDE_FILES):
        return "skip", "part of a SQLite database (read with it)"
    if lower == DB_NAME or (single and lower.endswith(DB_SUFFIXES)):
        return "db", ""
    if lower.endswith(DB_SUFFIXES):
        return "skip", "not goose's sessions.db (a backup copy or another database)"
    if lower.endswith(".jsonl"):
        return "jsonl", ""
    if lower.endswith(".json"):
        if lower in NOT_SESSIONS and not single:
            return "skip", NOT_SESSIONS[lower]
        return "export", ""
    return "skip", "not a goose session file (sessions.db, <id>.jsonl or an exported session .json)"
