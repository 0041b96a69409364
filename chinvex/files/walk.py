"""What every adapter's file walker shares: the record of a file found under an include root,
the test that a resolved path stays inside the root (a symlink must never lead a walk out
of the folder the user configured), and the sorted, symlink-safe walk itself (`SortedWalk`),
which each adapter's walker specialises with its own verdicts on folders and files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar


@dataclass
class WalkedFile:
    """A file found under a root; `skip` is a SkippedSource reason when it must not be read."""

    path: Path
    rel: str
    size_bytes: int | None = None
    mtime_ns: int | None = None
    skip: str | None = None
    detail: str = ""


def within(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or lies under it (both already resolved)."""
    return path == root or root in path.parents


def inside(real: str, root_real: str) -> bool:
    """Whether the resolved path `real` is the resolved root or lies under it."""
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def absolute_root(root: str | os.PathLike[str]) -> Path:
    """An include root as the walkers see it: `~` expanded, absolute, symlinks kept."""
    return Path(os.path.abspath(os.path.expanduser(os.fspath(root))))


@dataclass(frozen=True)
class _Enter:
    """A walk step: enter this folder next (`entry` is None for the root)."""

    path: Path
    rel: str
    entry: os.DirEntry[str] | None


Record = TypeVar("Record")
"""What a walker yields: `WalkedFile` for most; the repo walker yields its own records."""


class SortedWalk(Generic[Record]):
    """The files under a root folder, in name order, each entry stat'ed at most once.

    A symlinked folder is followed only when it resolves inside the root (`leaves_root`), and
    each real folder is entered once, so a link to an ancestor cannot make the walk loop. The
    walk keeps its own stack: the depth of a tree is not bounded by Python's recursion limit.

    A subclass says what each entry becomes: `folder` (enter it, pass over it, or report it),
    `file` (a record or nothing), and what a folder that cannot be stat'ed or listed
    becomes (`cannot_stat`, `cannot_list`; nothing by default). `listed` sees each folder's
    entries before any verdict on them (the repo walker reads its .gitignore there).
    """

    skip_hidden = False
    """Pass over dot-names (`.git`, `.obsidian`, `.DS_Store`) without a word."""

    files_first = False
    """Yield a folder's files before entering its subfolders (else one name order for both)."""

    follow_folder_links = True
    """Treat a symlink to a folder as a folder (entered when `folder` says so); when False it is
    handed to `file` like any other link."""

    def __init__(self, root_abs: Path) -> None:
        self.root_abs = root_abs
        self.root_real = os.path.realpath(root_abs)

    # -- verdicts, for subclasses ---------------------------------------------------------

    def folder(self, path: Path, rel: str, entry: os.DirEntry[str]) -> Record | bool:
        """True enters a subfolder, False passes over it; a record reports it instead."""
        return True

    def file(self, path: Path, rel: str, entry: os.DirEntry[str]) -> Record | None:
        """The record of a file that is not a folder; None passes over it."""
        raise NotImplementedError

    def cannot_stat(self, path: Path, rel: str, exc: OSError) -> Record | None:
        return None

    def cannot_list(self, path: Path, rel: str, exc: OSError) -> Record | None:
        return None

    def listed(self, path: Path, rel: str, entries: list[os.DirEntry[str]]) -> None:
        """A folder's entries, sorted, before the verdicts on them."""

    def leaves_root(self, path: Path, entry: os.DirEntry[str]) -> bool:
        """Whether the entry is a symlink that resolves outside the root."""
        return entry.is_symlink() and not inside(os.path.realpath(path), self.root_real)

    # -- the walk -------------------------------------------------------------------------

    def files(self) -> Iterator[Record]:
        """Walk the root folder; every record the verdicts return, in walk order."""
        visited: set[tuple[int, int]] = set()
        stack = [self._enter(_Enter(self.root_abs, "", None), visited)]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
            elif isinstance(step, _Enter):
                stack.append(self._enter(step, visited))
            else:
                yield step

    def _enter(self, at: _Enter, visited: set[tuple[int, int]]) -> Iterator[Any]:
        try:
            st = at.entry.stat(follow_symlinks=True) if at.entry is not None else os.stat(at.path)
        except OSError as exc:
            record = self.cannot_stat(at.path, at.rel, exc)
            if record is not None:
                yield record
            return
        key = (st.st_dev, st.st_ino)
        if key in visited:
            return  # a second way into a folder already walked (a symlink loop or an alias)
        visited.add(key)
        try:
            with os.scandir(at.path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            record = self.cannot_list(at.path, at.rel, exc)
            if record is not None:
                yield record
            return
        self.listed(at.path, at.rel, entries)
        later: list[_Enter] = []
        for entry in entries:
            if self.skip_hidden and entry.name.startswith("."):
                continue
            rel = f"{at.rel}/{entry.name}" if at.rel else entry.name
            path = at.path / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=self.follow_folder_links)
            except OSError:
                is_dir = False
            if not is_dir:
                record = self.file(path, rel, entry)
                if record is not None:
                    yield record
                continue
            verdict = self.folder(path, rel, entry)
            if verdict is True:
                if self.files_first:
                    later.append(_Enter(path, rel, entry))
                else:
                    yield _Enter(path, rel, entry)
            elif verdict is not False and verdict is not None:
                yield verdict
        yield from later
