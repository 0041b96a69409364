"""Where Gemini CLI keeps its chats, which files beside them are not chats, and how a session's
project folder is found again (the session file itself records only its sha256).

Store: `<home>/.gemini`, home being `$GEMINI_CLI_HOME` or the user's home. Chats:
`tmp/<project id>/chats/session-<time>-<id8>.json[l]`, sub-agents (v0.37+) in
`chats/<parent session id>/<id>.json[l]`. The project id is the sha256 of the project path
(<= 0.28) or a short slug (0.29+) that `projects.json` and `tmp/<slug>/.project_root` map back
to the path.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

import orjson

from chinvex_adapters.kit.registry import Where
from chinvex_adapters.kit.walk import WalkEntry

SESSION_NAME = re.compile(r"^session-.+\.jsonl?$")
_HASH_DIR = re.compile(r"^[0-9a-f]{64}$")

NOT_CHATS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:^|/)logs\.json(?:\.invalid_json\.[^/]*)?$"),
     "Gemini CLI's prompt log (logs.json), not a session"),
    (re.compile(r"(?:^|/)checkpoint-[^/]*\.json$"),
     "a /chat save checkpoint (a copy of a conversation without times), not a session"),
    (re.compile(r"(?:^|/)checkpoints/"), "a restore point of Gemini CLI's checkpointing, not a session"),
    (re.compile(r"(?:^|/)logs/"), "Gemini CLI's activity log, not a session"),
    (re.compile(r"(?:^|/)tool-outputs/"), "a tool output Gemini CLI kept aside, not a session"),
    (re.compile(r"\.jsonl?\.(?:tmp|unreadable)-[^/]*$"), "a temporary or preserved-corrupt copy of a chat"),
    (re.compile(r"(?:^|/)(?:oauth_creds|mcp-oauth-tokens|google_accounts)\.json$"),
     "credentials: never read"),
)


def gemini_homes(w: Where) -> list[Path]:
    """`$GEMINI_CLI_HOME/.gemini` (the variable names a home, `.gemini` is still appended) and
    `~/.gemini`."""
    return [base / ".gemini" for base in (w.var("GEMINI_CLI_HOME"), w.home) if base is not None]


def walk_root(root: Path) -> Path | None:
    """The folder to walk: a Gemini home through its `tmp` folder only (never `history/`, the
    shadow git repositories of checkpointing, or its settings and credentials), None when it
    has none yet; any other root as it is."""
    try:
        if (root / "chats").is_dir():
            return root
        if (root / "tmp").is_dir():
            return root / "tmp"
        if root.name == ".gemini" or (root / "history").is_dir() or (root / "settings.json").is_file():
            return None
    except OSError:
        pass
    return root


def chat_verdict(rel: str, entry: WalkEntry) -> bool | str:
    """True for a chat file (`chats/session-*.json[l]`, a sub-agent's `chats/<parent>/*.json[l]`),
    else why the file is not one."""
    rel = rel.replace("\\", "/")
    for pattern, why in NOT_CHATS:
        if pattern.search(rel):
            return why
    path = entry.path
    name = path.name
    if not name.endswith((".json", ".jsonl")):
        return "not a Gemini CLI chat (chats are chats/session-*.json or .jsonl)"
    if path.parent.name == "chats":
        return True if SESSION_NAME.match(name) else "not a chat file (chats are named session-*.json[l])"
    if path.parent.parent.name == "chats":
        return True  # a sub-agent's chat, under its parent session's folder
    if SESSION_NAME.match(name):
        return True  # a chat copied out of its store
    return "not a Gemini CLI chat (chats are chats/session-*.json or .jsonl)"


def parent_session(path: Path) -> str | None:
    """The parent session id of a sub-agent chat (`chats/<parent id>/<id>.json[l]`)."""
    if path.parent.parent.name == "chats" and not path.name.startswith("session-"):
        return path.parent.name
    return None


def project_dir(path: Path) -> Path | None:
    """`tmp/<project id>` of a chat file, when it lies in a store's layout."""
    for parent in path.parents:
        if parent.name == "chats":
            return parent.parent
    return None


def sha256_path(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@lru_cache(maxsize=64)
def _registry(path: str, mtime_ns: int) -> tuple[tuple[str, str], ...]:
    """(project path, project id) pairs of a `projects.json` (cached while it is unchanged)."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return ()
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return ()
    return tuple((k, v) for k, v in projects.items() if isinstance(k, str) and isinstance(v, str))


def registry(home: Path) -> tuple[tuple[str, str], ...]:
    target = home / "projects.json"
    try:
        mtime = os.stat(target).st_mtime_ns
    except OSError:
        return ()
    return _registry(str(target), mtime)


def project_root(path: Path, project_hash: str | None,
                 candidates: list[str]) -> tuple[str | None, str | None]:
    """The project folder of a chat and how it was found: `.project_root` beside the chats
    (0.29+), `projects.json` of the store, else a candidate path (the session's `directories`,
    absolute paths its tools reported) whose sha256 is the session's `projectHash`."""
    folder = project_dir(path)
    if folder is not None:
        try:
            marker = (folder / ".project_root").read_text("utf-8").strip()
        except (OSError, UnicodeDecodeError):
            marker = ""
        if marker:
            return marker, ".project_root"
        if folder.parent.name == "tmp":
            for root, slug in registry(folder.parent.parent):
                if slug == folder.name or (project_hash and sha256_path(root) == project_hash):
                    return root, "projects.json"
        if project_hash is None and _HASH_DIR.match(folder.name):
            project_hash = folder.name
    if project_hash:
        for candidate in candidates:
            if sha256_path(candidate) == project_hash:
                return candidate, "projectHash"
    return None, None


def resolved_base(relative: str, absolute: str) -> str | None:
    """The folder a relative path was resolved against, when a tool reported the absolute path
    it wrote (`GEMINI.md` and `/home/u/repo/GEMINI.md` give `/home/u/repo`)."""
    rel = relative.replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    full = absolute.replace("\\", "/")
    if not rel or rel.startswith("/") or not full.endswith("/" + rel):
        return None
    base = absolute[: len(absolute) - len(rel) - 1]
    return base or None
