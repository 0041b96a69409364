"""Walking an include root safely: sorted, excludes applied, symlink loops impossible.

Chat roots and `~/.claude/projects` are user folders full of symlinks (dotfile managers,
synced drives). A symlinked directory is followed only when it resolves inside the root, and
each real directory is entered once, so a link to an ancestor can never loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pathspec import GitIgnoreSpec

from chinvex.files.excludes import exclude_spec, is_excluded
from chinvex.files.walk import SortedWalk, WalkedFile, absolute_root

WalkEntry = WalkedFile
"""A file found under the root (the walkers' shared record, `chinvex.files.walk`)."""


FolderRule = Callable[[Path, str, os.DirEntry[str]], "WalkEntry | bool | None"]
"""A store's own say on a folder: a skip record (pruned and reported), False (passed over
silently), True (entered), or None (no opinion: the walker's rules decide)."""


def walk(root: Path, excludes: Iterable[str] = (), *, skip_hidden: bool = True,
         files_first: bool = False, folder_rule: FolderRule | None = None) -> Iterator[WalkEntry]:
    """Yield every file under `root` in sorted order with one stat each.

    A root that is a file yields that file alone. Hidden entries (dot-names) are not visited:
    `.git`, `.obsidian`, `.DS_Store` are never sources. `files_first` yields a folder's files
    before its subfolders' (a task folder's files arrive together); `folder_rule` lets a store
    prune the folders that never hold its sessions (checkpoints, caches).
    """
    root_abs = absolute_root(root)
    spec = exclude_spec(excludes, str(root_abs))
    if root_abs.is_file():
        try:
            st = root_abs.stat()
        except OSError as exc:
            yield WalkEntry(root_abs, root_abs.name, skip="unreadable", detail=str(exc))
            return
        yield WalkEntry(root_abs, root_abs.name, st.st_size, st.st_mtime_ns)
        return
    yield from _EveryFile(root_abs, spec, skip_hidden, files_first, folder_rule).files()


class _EveryFile(SortedWalk):
    """Every file, with a record of each one that must not be read and of why."""

    def __init__(self, root_abs: Path, spec: GitIgnoreSpec | None, skip_hidden: bool,
                 files_first: bool = False, folder_rule: FolderRule | None = None) -> None:
        super().__init__(root_abs)
        self.spec = spec
        self.skip_hidden = skip_hidden
        self.files_first = files_first
        self.folder_rule = folder_rule

    def folder(self, path: Path, rel: str, entry: os.DirEntry[str]) -> WalkEntry | bool:
        if is_excluded(rel, self.spec, is_dir=True):
            return WalkEntry(path, rel, skip="excluded", detail="directory")
        verdict = self.folder_rule(path, rel, entry) if self.folder_rule is not None else None
        if verdict is not None and verdict is not True:
            return verdict
        if self.leaves_root(path, entry):
            return WalkEntry(path, rel, skip="ignored", detail="symlinked directory outside the root")
        return True

    def file(self, path: Path, rel: str, entry: os.DirEntry[str]) -> WalkEntry:
        if is_excluded(rel, self.spec):
            return WalkEntry(path, rel, skip="excluded")
        try:
            st = entry.stat(follow_symlinks=True)
        except OSError as exc:
            return WalkEntry(path, rel, skip="unreadable", detail=f"broken link or unreadable: {exc}")
        if not entry.is_file(follow_symlinks=True):
            return WalkEntry(path, rel, skip="not_supported", detail="not a regular file")
        return WalkEntry(path, rel, st.st_size, st.st_mtime_ns)

    def cannot_stat(self, path: Path, rel: str, exc: OSError) -> WalkEntry:
        return WalkEntry(path, rel, skip="unreadable", detail=str(exc))

    def cannot_list(self, path: Path, rel: str, exc: OSError) -> WalkEntry:
        return WalkEntry(path, rel or ".", skip="unreadable", detail=str(exc))
