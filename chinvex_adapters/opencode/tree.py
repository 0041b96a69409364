"""OpenCode's legacy JSON store (`<data>/opencode/storage/`, OpenCode up to 1.1.x, left on disk
after the move to SQLite): `session/<projectID>/<sessionID>.json`,
`message/<sessionID>/<messageID>.json`, `part/<messageID>/<partID>.json`.

A session spans many files, so its candidate is the session file with a size and mtime that
cover the rest, from stats alone: every message file (rewritten when a reply completes) and
each message's part folder (which changes when a part is added). Ids are time-sortable, so
files are read in name order. Files are rewritten in place while OpenCode runs: one that does
not parse is counted and passed over, as OpenCode itself does.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chinvex.models.sources import SourceError, UnrecognisedSource
from chinvex_adapters.kit.jsonl import loads_lenient

LABEL = "an OpenCode session"
SMALL = 64 * 1024
READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)
SESSION_KEYS = ("projectID", "directory", "title", "version")


def is_storage(folder: Path) -> bool:
    """A `storage/` folder of the JSON store: it holds `session/` and `message/` folders."""
    return (folder / "session").is_dir() and (folder / "message").is_dir()


def storage_of(session_file: Path) -> Path | None:
    """The storage folder of `storage/session/<projectID>/<sessionID>.json`, None when the file
    is not laid out like one."""
    parents = session_file.parents
    if len(parents) < 3 or parents[1].name != "session":
        return None
    return parents[2]


@dataclass
class TreeStat:
    size_bytes: int
    mtime_ns: int
    messages: int


def session_stat(storage: Path, session_id: str, size: int, mtime_ns: int) -> TreeStat:
    """The session file's stat combined with its message files' and part folders' (stat only:
    nothing is read). A missing or unlistable folder adds nothing."""
    message_dir = storage / "message" / session_id
    messages = 0
    try:
        st = message_dir.stat()
        mtime_ns = max(mtime_ns, st.st_mtime_ns)
        with os.scandir(message_dir) as entries:
            found = [(e.name, e.stat()) for e in entries if e.name.endswith(".json")]
    except OSError:
        return TreeStat(size, mtime_ns, 0)
    part_root = storage / "part"
    for name, st in found:
        messages += 1
        size += st.st_size
        mtime_ns = max(mtime_ns, st.st_mtime_ns)
        try:
            pst = (part_root / name[:-5]).stat()
        except OSError:
            continue
        size += pst.st_size
        mtime_ns = max(mtime_ns, pst.st_mtime_ns)
    return TreeStat(size, mtime_ns, messages)


def read_session_info(path: Path) -> dict[str, Any]:
    """The session file as Session.Info; its id and project come from the path (earlier
    migrations moved files without updating their JSON)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SourceError(f"{path}: disappeared before it could be read") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not raw.strip():
        raise UnrecognisedSource(f"{path}: not {LABEL} (empty file)")
    try:
        info = loads_lenient(raw)
    except (ValueError, RecursionError) as exc:
        detail = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
        raise UnrecognisedSource(f"{path}: not a readable OpenCode session (invalid or truncated JSON: "
                                 f"{detail})") from None
    if not isinstance(info, dict):
        raise UnrecognisedSource(f"{path}: not {LABEL} (a JSON {type(info).__name__}, not an object)")
    if "role" in info or "messageID" in info:
        raise UnrecognisedSource(f"{path}: not {LABEL} (a message or part, not a session)")
    if not any(key in info for key in SESSION_KEYS):
        raise UnrecognisedSource(f"{path}: not {LABEL} (none of the keys {', '.join(SESSION_KEYS)})")
    info["id"] = path.stem
    info["projectID"] = path.parent.name
    return info


def read_project(storage: Path, project_id: str) -> dict[str, Any] | None:
    """The project's worktree and name (`project/<projectID>.json`), None when unreadable."""
    try:
        data = loads_lenient((storage / "project" / f"{project_id}.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    return {k: data[k] for k in ("worktree", "name", "vcs") if isinstance(data.get(k), str) and data[k]}


def _json_names(folder: str) -> list[str]:
    """The `.json` files of a folder in name order (paths as strings: a session can have tens of
    thousands of files, and Path objects cost more than reading them)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SourceError(f"{folder}: cannot list: {exc.strerror or exc}") from None
    names.sort()
    return [name for name in names if name.endswith(".json")]


def _read(path: str) -> bytes:
    """A whole small file with the fewest system calls (a session is thousands of them)."""
    fd = os.open(path, READ_FLAGS)
    try:
        data = os.read(fd, SMALL)
        if len(data) < SMALL:
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _load(path: str, counts: Counter[str], what: str) -> dict[str, Any] | None:
    try:
        data = loads_lenient(_read(path))
    except FileNotFoundError:
        counts[f"{what}_vanished"] += 1  # deleted while the session was read
        return None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError):
        counts[f"{what}_unreadable"] += 1  # half-written or damaged
        return None
    if not isinstance(data, dict):
        counts[f"{what}_unreadable"] += 1
        return None
    return data


def session_messages(storage: Path, session_id: str,
                     counts: Counter[str]) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The session's messages in id order, each with its parts in id order."""
    message_dir = os.path.join(storage, "message", session_id)
    part_root = os.path.join(storage, "part")
    for name in _json_names(message_dir):
        message = _load(os.path.join(message_dir, name), counts, "messages")
        if message is None:
            continue
        message_id = name[:-5]
        message["id"] = message_id
        part_dir = os.path.join(part_root, message_id)
        parts: list[dict[str, Any]] = []
        for part_name in _json_names(part_dir):
            part = _load(os.path.join(part_dir, part_name), counts, "parts")
            if part is not None:
                part.setdefault("id", part_name[:-5])
                parts.append(part)
        yield message, parts
