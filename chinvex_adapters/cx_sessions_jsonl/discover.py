"""Finding rollout files under a root (a CODEX_HOME, a `sessions` folder, or any folder).

Walks are sorted (deterministic), never leave the root through a symlinked directory and
enter each real directory once (a link to an ancestor cannot loop). Codex's own companion
JSONL files are recognised by name and reported as skipped, not parsed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pathspec import GitIgnoreSpec

from chinvex.files.excludes import exclude_spec, is_excluded
from chinvex.files.walk import SortedWalk, WalkedFile, absolute_root

ROLLOUT_NAME = re.compile(
    r"^rollout-(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})-"
    r"(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"\.jsonl(?:\.zst)?$"
)

COMPANION_FILES = {
    "session_index.jsonl": "thread-name index (id, thread_name, updated_at)",
    "history.jsonl": "prompt history (session_id, ts, text)",
}
"""Codex's non-rollout JSONL files in CODEX_HOME (FORMATS.md §2.1)."""

SUFFIXES = (".jsonl", ".jsonl.zst")
SESSION_DIRS = ("sessions", "archived_sessions")


def is_rollout_like(name: str) -> bool:
    return name.endswith(SUFFIXES)


def thread_id_from_name(name: str) -> str | None:
    match = ROLLOUT_NAME.match(name)
    return match.group("uuid").lower() if match else None


Found = WalkedFile
"""A rollout-like file found under the root (the walkers' shared record, `chinvex.files.walk`)."""


def walk_jsonl(root: Path, excludes: Iterable[str] = ()) -> Iterator[Found]:
    """Every `*.jsonl` / `*.jsonl.zst` under `root`, with one stat each, in sorted order."""
    root_abs = absolute_root(root)
    spec = exclude_spec(excludes, str(root_abs))
    if root_abs.is_file():
        if is_rollout_like(root_abs.name):
            yield _stat(root_abs, root_abs.name)
        return
    if not root_abs.is_dir():
        return
    yield from _RolloutFiles(root_abs, spec).files()


class _RolloutFiles(SortedWalk):
    """Rollout-like files only, a folder's files before its subfolders; folders that cannot
    be read, are excluded or lead out of the root are passed over without a word."""

    files_first = True

    def __init__(self, root_abs: Path, spec: GitIgnoreSpec | None) -> None:
        super().__init__(root_abs)
        self.spec = spec

    def folder(self, path: Path, rel: str, entry: os.DirEntry[str]) -> bool:
        if self.leaves_root(path, entry):
            return False  # never leave the root through a link
        return not is_excluded(rel, self.spec, is_dir=True)

    def file(self, path: Path, rel: str, entry: os.DirEntry[str]) -> Found | None:
        if not is_rollout_like(entry.name):
            return None
        if self.leaves_root(path, entry):
            return Found(path, rel, skip="outside_root", detail="symlink to a file outside the root")
        if is_excluded(rel, self.spec):
            return Found(path, rel, skip="excluded")
        return _stat(path, rel)


def _stat(path: Path, rel: str) -> Found:
    try:
        st = os.stat(path)
    except OSError as exc:
        return Found(path, rel, skip="unreadable", detail=exc.strerror or str(exc))
    return Found(path, rel, size_bytes=st.st_size, mtime_ns=st.st_mtime_ns)


def plain_sibling(path: Path) -> Path | None:
    """For `x.jsonl.zst`, the `x.jsonl` that wins over it when both exist (Codex's rule)."""
    if path.name.endswith(".jsonl.zst"):
        return path.with_name(path.name[: -len(".zst")])
    return None


# -- thread id → file ----------------------------------------------------------------------

def _session_bases(root: Path) -> list[Path]:
    """Folders worth searching: CODEX_HOME's session dirs when root is a CODEX_HOME."""
    subs = [root / name for name in SESSION_DIRS if (root / name).is_dir()]
    return subs or [root]


def _uuid7_dates(thread_id: str) -> list[str]:
    """`YYYY/MM/DD` folders a UUIDv7 thread was probably written under (±1 day for time zones)."""
    hexdigits = thread_id.replace("-", "")
    if len(hexdigits) != 32 or hexdigits[12] != "7":
        return []
    try:
        millis = int(hexdigits[:12], 16)
        day = datetime.fromtimestamp(millis / 1000, timezone.utc)
    except (ValueError, OverflowError, OSError):
        return []
    return [(day + timedelta(days=d)).strftime("%Y/%m/%d") for d in (0, -1, 1)]


def _match_in(folder: Path, thread_id: str) -> Path | None:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    hits = [n for n in names if thread_id_from_name(n) == thread_id]
    plain = [n for n in hits if n.endswith(".jsonl")]
    chosen = (plain or hits)[:1]
    return folder / chosen[0] if chosen else None


def find_rollout_for_thread(roots: list[Path], thread_id: str) -> Path | None:
    """The rollout file of `thread_id` under any of `roots` (CODEX_HOMEs or session folders).

    Codex names every rollout after its thread id, so this looks at names only: first in the
    date folders a UUIDv7 id points at, then in a full walk. A plain `.jsonl` wins over its
    `.jsonl.zst` sibling; `sessions/` is searched before `archived_sessions/`.
    """
    wanted = thread_id.strip().lower()
    if not wanted:
        return None
    bases = [b for r in roots for b in _session_bases(Path(os.path.expanduser(os.fspath(r))))]
    for base in bases:
        for day in _uuid7_dates(wanted):
            hit = _match_in(base / day, wanted)
            if hit is not None:
                return hit
    for base in bases:
        best: Path | None = None
        for found in walk_jsonl(base):
            if found.skip is None and thread_id_from_name(found.path.name) == wanted:
                if found.path.name.endswith(".jsonl"):
                    return found.path
                best = best or found.path
        if best is not None:
            return best
    return None
