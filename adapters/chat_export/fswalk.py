"""Walking an include root safely: sorted, excludes applied, symlink loops impossible.

Chat roots and `~/.claude/projects` are user folders full of symlinks (dotfile managers,
synced drives). A symlinked directory is followed only when it resolves inside the root, and
each real directory is entered once, so a link to an ancestor can never loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from pathspec import GitIgnoreSpec

from chinvex.excludes import exclude_spec, is_excluded
from chinvex.walking import WalkedFile
from chinvex.walking import inside as _inside


WalkEntry = WalkedFile
"""A file found under the root (the walkers' shared record, `chinvex.walking`)."""


def walk(root: Path, excludes: Iterable[str] = (), *, skip_hidden: bool = True) -> Iterator[WalkEntry]:
    """Yield every file under `root` in sorted order with one stat each.

    A root that is a file yields that file alone. Hidden entries (dot-names) are not visited:
    `.git`, `.obsidian`, `.DS_Store` are never sources.
    """
    root_abs = Path(os.path.abspath(os.path.expanduser(os.fspath(root))))
    spec = exclude_spec(excludes, str(root_abs))
    if root_abs.is_file():
        try:
            st = root_abs.stat()
        except OSError as exc:
            yield WalkEntry(root_abs, root_abs.name, skip="unreadable", detail=str(exc))
            return
        yield WalkEntry(root_abs, root_abs.name, st.st_size, st.st_mtime_ns)
        return
    root_real = os.path.realpath(root_abs)
    try:
        root_stat = root_abs.stat()
    except OSError as exc:
        yield WalkEntry(root_abs, "", skip="unreadable", detail=str(exc))
        return
    visited = {(root_stat.st_dev, root_stat.st_ino)}
    yield from _walk_dir(root_abs, "", root_real, spec, skip_hidden, visited)


def _walk_dir(
    folder: Path, rel_dir: str, root_real: str, spec: GitIgnoreSpec | None, skip_hidden: bool,
    visited: set[tuple[int, int]],
) -> Iterator[WalkEntry]:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        yield WalkEntry(folder, rel_dir or ".", skip="unreadable", detail=str(exc))
        return
    for entry in entries:
        if skip_hidden and entry.name.startswith("."):
            continue
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        path = folder / entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=True)
        except OSError:
            is_dir = False
        if is_dir:
            if is_excluded(rel, spec, is_dir=True):
                yield WalkEntry(path, rel, skip="excluded", detail="directory")
                continue
            if entry.is_symlink() and not _inside(os.path.realpath(path), root_real):
                yield WalkEntry(path, rel, skip="ignored", detail="symlinked directory outside the root")
                continue
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError as exc:
                yield WalkEntry(path, rel, skip="unreadable", detail=str(exc))
                continue
            key = (st.st_dev, st.st_ino)
            if key in visited:
                continue  # a second way into a directory already walked (symlink loop or alias)
            visited.add(key)
            yield from _walk_dir(path, rel, root_real, spec, skip_hidden, visited)
            continue
        if is_excluded(rel, spec):
            yield WalkEntry(path, rel, skip="excluded")
            continue
        try:
            st = entry.stat(follow_symlinks=True)
        except OSError as exc:
            yield WalkEntry(path, rel, skip="unreadable", detail=f"broken link or unreadable: {exc}")
            continue
        if not entry.is_file(follow_symlinks=True):
            yield WalkEntry(path, rel, skip="not_supported", detail="not a regular file")
            continue
        yield WalkEntry(path, rel, st.st_size, st.st_mtime_ns)
