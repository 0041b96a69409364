"""Where GitHub Copilot CLI keeps its sessions, and which files of a store are sessions.

A Copilot home is `$COPILOT_HOME` or `~/.copilot`; CLIs up to early 2026 honoured XDG with a
dot-prefixed folder (`$XDG_STATE_HOME/.copilot`, `$XDG_CONFIG_HOME/.copilot`), which newer
CLIs migrate from, so those are read too. Inside a home only two folders hold sessions:
- `session-state/<id>/events.jsonl` (CLI >= 0.0.378; `workspace.yaml` beside it gives the
  title and folder) and `session-state/<id>.jsonl` (0.0.342 - 0.0.377, the same events);
- `history-session-state/session_<id>_<ms>.json` (<= 0.0.341, one JSON object).
The rest of a home is never entered: `config.json` holds credentials, `mcp-secrets/` too,
and `logs/`, `pkg/`, plugins and per-session `files/`, `checkpoints/`, `rewind-snapshots/` are
no transcripts. A session folder is one candidate whose size and mtime cover its events and
its `workspace.yaml` (stat only).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from chinvex.files.excludes import exclude_spec, is_excluded
from chinvex.files.walk import absolute_root, inside
from chinvex_adapters.kit.registry import Where

SESSION_STATE = "session-state"
HISTORY = "history-session-state"
EVENTS = "events.jsonl"
WORKSPACE = "workspace.yaml"
LEGACY_NAME = re.compile(r"^session_(.+?)(?:_(\d{10,16}))?\.json$")

NOT_SESSIONS = {
    "config.json": "Copilot CLI's settings and login: credentials, never read",
    "session-store.db": "Copilot CLI's session index (the sessions' own files are read)",
    "command-history-state.json": "the prompt history (Ctrl+R), not a transcript",
}


def copilot_homes(w: Where) -> list[Path]:
    """`$COPILOT_HOME`, `~/.copilot`, and the XDG folders older CLIs used (with their
    defaults `~/.local/state/.copilot` and `~/.config/.copilot`)."""
    homes = [w.var("COPILOT_HOME"), w.home / ".copilot"]
    homes += [base / ".copilot" for base in w.xdg("XDG_STATE_HOME", ".local/state")]
    homes += [base / ".copilot" for base in w.xdg("XDG_CONFIG_HOME", ".config")]
    return [p for p in homes if p is not None]


@dataclass
class Found:
    """What enumerating a root finds: session files with their (combined) stat, or files and
    folders passed over with the reason."""

    path: Path
    size_bytes: int | None = None
    mtime_ns: int | None = None
    layout: str = ""  # events | flat | legacy
    skip: str | None = None  # a SkippedSource reason
    detail: str = ""


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def session_folder(folder: Path) -> Found:
    """A `session-state/<id>/` folder as its events log, stat'ed with its workspace.yaml."""
    events = folder / EVENTS
    st = _stat(events)
    if st is None:
        return Found(folder, skip="ignored", detail="a session folder without events.jsonl")
    size, mtime = st.st_size, st.st_mtime_ns
    found = Found(events, layout="events")
    side = _stat(folder / WORKSPACE)
    if side is not None:
        size += side.st_size
        mtime = max(mtime, side.st_mtime_ns)
    found.size_bytes, found.mtime_ns = size, mtime
    return found


def single_file(path: Path) -> Found:
    """A root that is one file: an events log (with its workspace.yaml), a flat log or a
    legacy session."""
    if path.name == EVENTS:
        return session_folder(path.parent)
    st = _stat(path)
    if st is None:
        return Found(path, skip="unreadable", detail="cannot stat")
    layout = "legacy" if path.suffix == ".json" else "flat"
    return Found(path, st.st_size, st.st_mtime_ns, layout=layout)


class StoreLister:
    """The sessions under one root, listing only the folders sessions live in (never walking
    a home), in name order; excludes apply to paths relative to the root."""

    def __init__(self, root: Path, excludes: list[str]) -> None:
        self.root = absolute_root(root)
        self.root_real = os.path.realpath(self.root)
        self.spec: GitIgnoreSpec | None = exclude_spec(excludes, str(self.root))

    def _rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.name

    def _entries(self, folder: Path) -> Iterator[os.DirEntry[str]] | Found:
        try:
            with os.scandir(folder) as it:
                return iter(sorted(it, key=lambda e: e.name))
        except OSError as exc:
            return Found(folder, skip="unreadable", detail=str(exc))

    def found(self) -> Iterator[Found]:
        root = self.root
        if root.is_file():
            yield single_file(root)
        elif root.is_dir():
            yield from self.place(root, nested=False)

    def place(self, root: Path, *, nested: bool) -> Iterator[Found]:
        """A folder as what it is: a Copilot home (its two session folders only), one
        session's folder, a legacy history folder, or a folder of sessions."""
        state, history = root / SESSION_STATE, root / HISTORY
        if state.is_dir() or history.is_dir() or root.name == ".copilot" or (root / "config.json").exists():
            for name in NOT_SESSIONS:
                if (root / name).exists():
                    yield Found(root / name, skip="ignored", detail=NOT_SESSIONS[name])
            if state.is_dir():
                yield from self.session_state(state, nested=True)
            if history.is_dir():
                yield from self.history(history)
        elif (root / EVENTS).is_file():
            yield self._excluded(session_folder(root))
        elif root.name == HISTORY:
            yield from self.history(root)
        else:
            yield from self.session_state(root, nested=nested)

    def _excluded(self, found: Found) -> Found:
        if found.skip is None and is_excluded(self._rel(found.path), self.spec):
            return Found(found.path, skip="excluded")
        return found

    def _leaves(self, entry: os.DirEntry[str]) -> bool:
        return entry.is_symlink() and not inside(os.path.realpath(entry.path), self.root_real)

    def session_state(self, folder: Path, *, nested: bool) -> Iterator[Found]:
        """`<id>/events.jsonl` folders and flat `<id>.jsonl` logs; anything else is named. A
        folder given as the root may hold Copilot homes (copies of several machines' stores):
        those are read as homes."""
        entries = self._entries(folder)
        if isinstance(entries, Found):
            yield entries
            return
        for entry in entries:
            path = Path(entry.path)
            if entry.name.startswith("."):
                continue
            if is_excluded(self._rel(path), self.spec, is_dir=_is_dir(entry)):
                yield Found(path, skip="excluded")
            elif self._leaves(entry):
                yield Found(path, skip="ignored", detail="symlink outside the store")
            elif _is_dir(entry) and not nested and not (path / EVENTS).exists() and (
                    (path / SESSION_STATE).is_dir() or (path / HISTORY).is_dir()):
                yield from self.place(path, nested=True)
            elif _is_dir(entry):
                yield self._excluded(session_folder(path))
            elif entry.name.endswith(".jsonl"):
                yield self._excluded(single_file(path))
            elif entry.name in NOT_SESSIONS:
                yield Found(path, skip="ignored", detail=NOT_SESSIONS[entry.name])
            else:
                yield Found(path, skip="ignored", detail="not a Copilot CLI session "
                            "(sessions are <id>/events.jsonl or <id>.jsonl)")

    def history(self, folder: Path) -> Iterator[Found]:
        """The legacy `session_<id>_<ms>.json` files."""
        entries = self._entries(folder)
        if isinstance(entries, Found):
            yield entries
            return
        for entry in entries:
            path = Path(entry.path)
            if entry.name.startswith(".") or _is_dir(entry):
                continue
            if is_excluded(self._rel(path), self.spec):
                yield Found(path, skip="excluded")
            elif entry.name.endswith(".json"):
                yield single_file(path)
            else:
                yield Found(path, skip="ignored", detail="not a legacy Copilot CLI session "
                            "(session_<id>_<ms>.json)")


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=True)
    except OSError:
        return False


def legacy_id(path: Path) -> str | None:
    """The session id a legacy file name carries (`session_<id>_<ms>.json`)."""
    match = LEGACY_NAME.match(path.name)
    return match.group(1) if match else None


def folder_id(path: Path) -> str:
    """The session id a current file's place gives: its folder for events.jsonl, else its stem."""
    if path.name == EVENTS:
        return path.parent.name
    return path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
