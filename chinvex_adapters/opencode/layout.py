"""Where OpenCode keeps its sessions, and what a root holds.

OpenCode's data folder is `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`, on every
system (it uses xdg-basedir, which does not special-case macOS or Windows). It holds the SQLite
store (`opencode.db`, `opencode-<channel>.db` for other install channels, or the file
`OPENCODE_DB` names) and, from before 1.2, the JSON store `storage/`, often both. Beside them are
things that are not sessions and are never entered: `auth.json` (credentials), `snapshot/` (a
git object store), `tool-output/`, `log/`, `bin/`.

A root may be the data folder, its `storage/` folder, one database, one session file, or a
folder holding copies of data folders (searched a few levels down).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

from chinvex.files.excludes import is_excluded
from chinvex.models.sources import SkippedSource
from chinvex_adapters.kit.registry import Where

from .tree import is_storage

SOURCE_TYPE = "agent_session"
MAX_DEPTH = 3
DB_COMPANIONS = ("-wal", "-shm", "-journal")

NOT_SESSIONS = {
    "snapshot": "undo snapshots (a git object store), not sessions",
    "tool-output": "full outputs of truncated tool calls, not sessions",
    "log": "OpenCode's logs, not sessions",
    "bin": "downloaded tools and language servers, not sessions",
    "repos": "repositories OpenCode cloned, not sessions",
    "worktree": "git worktrees OpenCode made, not sessions",
    "node_modules": "packages, not sessions",
}
"""Folders of the data folder that are never entered: one skip line each."""
STORAGE_SIDE = {
    "project": "project records, read with their sessions",
    "session_diff": "per-session file diffs (the edits are read from the tool calls)",
    "todo": "todo lists, not transcripts",
    "permission": "permission settings, not transcripts",
    "session_share": "share links and their secrets: never read",
}
"""Folders of `storage/` besides session, message and part."""
SECRETS = {"auth.json": "credentials: never read", "mcp-auth.json": "credentials: never read"}


def data_dirs(w: Where) -> list[Path]:
    return [base / "opencode" for base in w.xdg("XDG_DATA_HOME", ".local/share")]


def opencode_stores(w: Where) -> list[Path]:
    """The data folder (with or without XDG_DATA_HOME), and the database `OPENCODE_DB` names
    when it lies elsewhere (a relative name is inside the data folder)."""
    return _with_named_db(w, data_dirs(w), "OPENCODE_DB")


def _with_named_db(w: Where, dirs: list[Path], variable: str) -> list[Path]:
    """`dirs`, and the database the environment variable `variable` names when it lies elsewhere
    (a relative name is inside each of `dirs`; ":memory:" is no file)."""
    found = list(dirs)
    named = w.env.get(variable, "").strip()
    if named and named != ":memory:":
        path = Path(named).expanduser()
        found += [path] if path.is_absolute() else [d / path for d in dirs]
    return found


def kilo_stores(w: Where) -> list[Path]:
    """Kilo Code (VS Code extension and `kilo` CLI), an OpenCode fork with OpenCode's schema:
    `$XDG_DATA_HOME/kilo`, else `~/.local/share/kilo` (Windows too), holding `kilo.db`
    (`kilo-<channel>.db` for other channels, or the `opencode-<channel>.db` an older install
    left there), and the database `KILO_DB` names (a relative name is inside the data folder).
    The old Roo-shaped task folders of Kilo Code are read by the cline adapter."""
    return _with_named_db(w, [base / "kilo" for base in w.xdg("XDG_DATA_HOME", ".local/share")], "KILO_DB")


def agent_of(store: Path) -> str:
    """Whose sessions a database or `storage/` folder holds: "kilo" for Kilo Code's (a
    `kilo*.db`, or anything in a data folder named `kilo`), else "opencode"."""
    name = store.name.lower()
    if store.parent.name.lower() == "kilo" or (name.startswith("kilo") and name.endswith(".db")):
        return "kilo"
    return "opencode"


@dataclass
class Found:
    """What a root holds: JSON stores, databases, and what was passed over (and why)."""

    trees: list[Path] = field(default_factory=list)
    dbs: list[Path] = field(default_factory=list)
    skipped: list[SkippedSource] = field(default_factory=list)

    def skip(self, path: Path, reason: str, detail: str) -> None:
        self.skipped.append(SkippedSource(str(path), SOURCE_TYPE, reason, detail))


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def scan(root: Path, spec: GitIgnoreSpec | None, found: Found, folder: Path | None = None,
         depth: int = 0) -> None:
    """Fill `found` with the stores under `folder` (the root at first). A folder holding a
    store is a data folder: its other sub-folders are not searched."""
    folder = folder or root
    if is_storage(folder):
        _storage(folder, found)
        return
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        found.skip(folder, "unreadable", str(exc))
        return
    others: list[Path] = []
    holds = False
    for entry in entries:
        path = Path(entry.path)
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        if is_excluded(_rel(path, root), spec, is_dir=is_dir):
            found.skip(path, "excluded", "directory" if is_dir else "")
        elif is_dir:
            if entry.name == "storage" and is_storage(path):
                _storage(path, found)
                holds = True
            elif entry.name in NOT_SESSIONS:
                found.skip(path, "ignored", NOT_SESSIONS[entry.name])
            else:
                others.append(path)
        elif entry.name.endswith(".db"):
            found.dbs.append(path)
            holds = True
        elif entry.name in SECRETS:
            found.skip(path, "ignored", SECRETS[entry.name])
        elif not entry.name.endswith(DB_COMPANIONS):
            found.skip(path, "ignored", "not an OpenCode session store")
    for other in others:
        if holds or depth >= MAX_DEPTH:
            found.skip(other, "ignored", "not an OpenCode session folder")
        else:
            scan(root, spec, found, other, depth + 1)


def _storage(storage: Path, found: Found) -> None:
    found.trees.append(storage)
    try:
        with os.scandir(storage) as it:
            names = sorted(e.name for e in it if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return
    for name in names:
        if name not in ("session", "message", "part"):
            found.skip(storage / name, "ignored", STORAGE_SIDE.get(name, "not a session folder"))


def session_files(storage: Path, root: Path, spec: GitIgnoreSpec | None,
                  found: Found) -> Iterator[os.DirEntry[str]]:
    """The session files `session/<projectID>/<sessionID>.json` of a JSON store, in name order."""
    base = storage / "session"
    try:
        with os.scandir(base) as it:
            projects = sorted((e for e in it if e.is_dir()), key=lambda e: e.name)
    except OSError as exc:
        found.skip(base, "unreadable", str(exc))
        return
    for project in projects:
        try:
            with os.scandir(project.path) as it:
                files = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            found.skip(Path(project.path), "unreadable", str(exc))
            continue
        for entry in files:
            path = Path(entry.path)
            if not entry.name.endswith(".json") or not entry.is_file():
                found.skip(path, "ignored", "not an OpenCode session file")
            elif _inside(path, root) and is_excluded(_rel(path, root), spec):
                found.skip(path, "excluded", "")
            else:
                yield entry


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True
