"""Where VS Code keeps Copilot Chat sessions, which files are sessions, and which folder a
workspace's sessions belong to.

VS Code itself writes the chat store (not the extension), in each editor's user folder:
`workspaceStorage/<workspace id>/chatSessions/<session id>.json` (flat, VS Code < 1.109) or
`.jsonl` (a mutation log, >= 1.109), and `globalStorage/emptyWindowChatSessions/` for chats
opened without a folder. The user folder is `$VSCODE_PORTABLE/user-data/User`,
`$VSCODE_APPDATA/<product>/User`, else `<config dir>/<product>/User` (Code, Insiders, VSCodium,
Code - OSS, forks). workspaceStorage holds every extension's data (often gigabytes): only its
`*/chatSessions/` folders are listed, never walked. The workspace's folder is the sibling
`workspace.json` (`folder` or `workspace` URI).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson
from pathspec import GitIgnoreSpec

from chinvex.files.excludes import exclude_spec, is_excluded
from chinvex.files.walk import absolute_root
from chinvex_adapters.kit.registry import VSCODE_APPS, Where

CHAT_FOLDERS = ("chatSessions", "emptyWindowChatSessions")
WORKSPACE_STORAGE = "workspaceStorage"
PRODUCTS = VSCODE_APPS + ("Code - Exploration", "VSCodium - Insiders", "Code - OSS",
                          "code-oss-dev", "Positron", "Antigravity")
REMOTE_SERVERS = (".vscode-server", ".vscode-server-insiders", ".vscode-remote", ".cursor-server",
                  ".windsurf-server")
_DRIVE = re.compile(r"^/[A-Za-z]:")
_PATH_LIKE = re.compile(r"^(?:/|~/|[A-Za-z]:[\\/]|\\\\)")
"""A string that is a path by itself (absolute, home-relative, a drive or a share)."""
MAX_WORKSPACE_JSON = 64 * 1024


# -- the stores ----------------------------------------------------------------------------

def user_dirs(w: Where) -> list[Path]:
    """Every VS Code-based editor's `User` folder: portable and VSCODE_APPDATA installs first,
    then each product under each system's config folder, then remote servers."""
    users: list[Path] = []
    portable = w.var("VSCODE_PORTABLE")
    if portable is not None:
        users.append(portable / "user-data" / "User")
    appdata = w.var("VSCODE_APPDATA")
    if appdata is not None:
        users += [appdata / product / "User" for product in PRODUCTS]
    users += w.vscode_users(PRODUCTS)
    users += [w.home / server / "data" / "User" for server in REMOTE_SERVERS]
    return list(dict.fromkeys(users))


def chat_stores(w: Where) -> list[Path]:
    """Each user folder's workspaceStorage (its chats are found by listing
    `*/chatSessions/`) and its empty-window chats folder."""
    out: list[Path] = []
    for user in user_dirs(w):
        out += [user / WORKSPACE_STORAGE, user / "globalStorage" / "emptyWindowChatSessions"]
    return out


# -- enumeration ---------------------------------------------------------------------------

@dataclass
class Found:
    path: Path
    size_bytes: int | None = None
    mtime_ns: int | None = None
    skip: str | None = None
    detail: str = ""


def _scan(folder: Path) -> list[os.DirEntry[str]] | OSError:
    try:
        with os.scandir(folder) as it:
            return sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    except OSError as exc:
        return exc


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=True)
    except OSError:
        return False


class ChatLister:
    """The session files under a root: a user folder, a workspaceStorage, one workspace's
    folder, a chatSessions folder, or one file. Excludes apply to root-relative paths."""

    def __init__(self, root: Path, excludes: list[str]) -> None:
        self.root = absolute_root(root)
        self.spec: GitIgnoreSpec | None = exclude_spec(excludes, str(self.root))

    def _rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.name

    def found(self) -> Iterator[Found]:
        root = self.root
        if root.is_file():
            yield self.file(root, None)
        elif not root.is_dir():
            return
        elif root.name in CHAT_FOLDERS:
            yield from self.sessions(root)
        elif (root / "chatSessions").is_dir():
            yield from self.sessions(root / "chatSessions")
        elif (root / WORKSPACE_STORAGE).is_dir():  # a `User` folder
            yield from self.storage(root / WORKSPACE_STORAGE)
            empty = root / "globalStorage" / "emptyWindowChatSessions"
            if empty.is_dir():
                yield from self.sessions(empty)
        else:
            yield from self.storage(root)

    def storage(self, folder: Path) -> Iterator[Found]:
        """`<workspace id>/chatSessions/` of every workspace: one stat per workspace folder."""
        entries = _scan(folder)
        if isinstance(entries, OSError):
            yield Found(folder, skip="unreadable", detail=str(entries))
            return
        for entry in entries:
            chats = Path(entry.path) / "chatSessions"
            if not _is_dir(entry) or not chats.is_dir():
                continue
            if is_excluded(self._rel(chats), self.spec, is_dir=True):
                yield Found(chats, skip="excluded", detail="directory")
                continue
            yield from self.sessions(chats)

    def sessions(self, folder: Path) -> Iterator[Found]:
        entries = _scan(folder)
        if isinstance(entries, OSError):
            yield Found(folder, skip="unreadable", detail=str(entries))
            return
        for entry in entries:
            if not _is_dir(entry):
                yield self.file(Path(entry.path), entry)

    def file(self, path: Path, entry: os.DirEntry[str] | None) -> Found:
        if is_excluded(self._rel(path), self.spec):
            return Found(path, skip="excluded")
        if not path.name.endswith((".json", ".jsonl")):
            return Found(path, skip="ignored", detail="not a chat session (sessions are <id>.json "
                                                      "or <id>.jsonl)")
        try:
            st = entry.stat(follow_symlinks=True) if entry is not None else path.stat()
        except OSError as exc:
            return Found(path, skip="unreadable", detail=str(exc))
        return Found(path, st.st_size, st.st_mtime_ns)


# -- URIs and the workspace's folder -------------------------------------------------------

def uri_path(value: Any) -> str | None:
    """A file path from a serialised URI (`{fsPath, path, scheme}`), a `{uri, range}`
    location or a URI string; None when there is none."""
    if isinstance(value, dict):
        if "uri" in value and isinstance(value["uri"], dict | str):
            return uri_path(value["uri"])
        for key in ("fsPath", "path"):
            found = value.get(key)
            if isinstance(found, str) and found:
                return found[1:] if key == "path" and _DRIVE.match(found) else found
        external = value.get("external")
        return uri_path(external) if isinstance(external, str) else None
    if isinstance(value, str) and value:
        if "://" not in value:
            return value if _PATH_LIKE.match(value) and "\n" not in value and len(value) < 4096 else None
        parsed = urlparse(value)
        path = unquote(parsed.path)
        return path[1:] if _DRIVE.match(path) else path or None
    return None


@dataclass
class Workspace:
    folder: str | None = None
    uri: str | None = None
    kind: str | None = None  # folder | workspace
    remote: str | None = None


def read_workspace(folder: Path) -> Workspace:
    """A workspace storage folder's `workspace.json`: the folder it was opened on (a
    `.code-workspace` file's folder for multi-root workspaces), and the remote authority of a
    `vscode-remote://` one. Empty when missing or unreadable."""
    path = folder / "workspace.json"
    try:
        if path.stat().st_size > MAX_WORKSPACE_JSON:
            return Workspace()
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return Workspace()
    if not isinstance(data, dict):
        return Workspace()
    for kind in ("folder", "workspace"):
        uri = data.get(kind)
        if isinstance(uri, str) and uri:
            parsed = urlparse(uri)
            path = uri_path(uri)
            if kind == "workspace" and path:
                path = path.rsplit("/", 1)[0] if "/" in path else path
            remote = unquote(parsed.netloc) if parsed.scheme not in ("", "file") else None
            return Workspace(folder=path, uri=uri, kind=kind, remote=remote)
    return Workspace()


def workspace_dir(path: Path) -> Path | None:
    """The workspace storage folder of a session file (`<id>/chatSessions/<file>`)."""
    return path.parent.parent if path.parent.name == "chatSessions" else None
