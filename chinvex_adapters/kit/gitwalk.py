"""List the files under a source root, as git would: honouring .gitignore files, pruning
directories that are never worth indexing, never following directory symlinks.

Two listings give the same `FoundFile` stream: `walk_tree` (the engine's `SortedWalk`, with the
.gitignore frames of the folders it is in) and `list_git` (from `git ls-files`). Each file costs
one `lstat`, each folder one `stat`; nothing here opens files besides .gitignore.
Directories that are pruned are reported once, not once per file inside them, so a skipped
`node_modules/` counts as one skipped source.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from chinvex.files.excludes import compile_patterns
from chinvex.files.walk import SortedWalk
from chinvex.models.sources import SkippedSource
from chinvex_adapters.kit.generated import VENDORED_DIRS

TOOL_STATE_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
        ".ruff_cache", ".tox", ".nox", ".cache", ".eggs", ".gradle", ".terraform",
    }
)
"""Version control, environments and tool caches: never content, whatever a context says."""

ALWAYS_SKIP_DIRS = TOOL_STATE_DIRS | VENDORED_DIRS
"""What a walker without generated-file detection prunes (the notes adapter): tool state plus
vendored and build folders. The repo adapter prunes tool state here and reports vendored
folders as `generated` (which a context can include back)."""

VCS_DIRS = frozenset({".git", ".hg", ".svn"})
"""Version-control state: pruned silently, as git itself never lists its own folder."""

Reason = tuple[str, str]  # (reason code, one-line detail)
DirRule = Callable[[str, str], Reason | None]
"""An extra verdict on a folder (root-relative path, name), asked after the built-in ones."""


@dataclass(frozen=True)
class FoundFile:
    rel: str  # POSIX path relative to the root
    abspath: str
    st: os.stat_result  # lstat: a symlink is seen as a symlink


class PathFilter:
    """Decides, from names alone, which directories to prune and which files to drop."""

    def __init__(
        self,
        excludes: pathspec.GitIgnoreSpec | None,
        skip_dirs: frozenset[str] = ALWAYS_SKIP_DIRS,
        skip_hidden: bool = False,
        skip_dir_suffixes: tuple[str, ...] = (".egg-info",),
        dir_rule: DirRule | None = None,
    ) -> None:
        self.excludes = excludes
        self.skip_dirs = skip_dirs
        self.skip_hidden = skip_hidden
        self.skip_dir_suffixes = skip_dir_suffixes
        self.dir_rule = dir_rule

    def _excluded(self, path: str) -> Reason | None:
        if self.excludes is None:
            return None
        result = self.excludes.check_file(path)
        if not result.include:
            return None
        pattern = getattr(self.excludes.patterns[result.index], "pattern", "") if result.index is not None else ""
        return "excluded", f"matches exclude pattern {pattern!r}" if pattern else "excluded"

    def dir_reason(self, rel: str, name: str) -> Reason | None:
        if name in self.skip_dirs or name.endswith(self.skip_dir_suffixes):
            return "excluded_dir", f"{name}/ is never indexed"
        if self.skip_hidden and name.startswith("."):
            return "hidden", f"hidden folder {name}/"
        excluded = self._excluded(rel + "/")
        if excluded is not None or self.dir_rule is None:
            return excluded
        return self.dir_rule(rel, name)

    def file_reason(self, rel: str, name: str) -> Reason | None:
        if self.skip_hidden and name.startswith("."):
            return "hidden", "hidden file"
        return self._excluded(rel)


def _skip(abspath: str, source_type: str, reason: Reason) -> SkippedSource:
    return SkippedSource(source_uri=abspath, source_type=source_type, reason=reason[0], detail=reason[1])


# ---------------------------------------------------------------------------- plain walk

Frames = tuple[tuple[str, pathspec.GitIgnoreSpec], ...]  # (dir prefix, its .gitignore)


def _load_gitignore(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, "rb") as fh:
            lines = fh.read(1_000_000).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    spec, _bad = compile_patterns(lines)  # git ignores malformed lines too
    return spec


def _ignored(frames: Frames, path: str) -> bool:
    """Git semantics: the deepest .gitignore with a matching pattern decides, and within one
    file the last matching pattern (a `!negation` re-includes)."""
    for base, spec in reversed(frames):
        result = spec.check_file(path[len(base):])
        if result.include is not None:
            return bool(result.include)
    return False


def walk_tree(
    root_abs: str, flt: PathFilter, source_type: str, honour_gitignore: bool = True
) -> Iterator[FoundFile | SkippedSource]:
    """Every file under `root_abs` that is not ignored or pruned (the caller sorts them).

    Directory symlinks are reported as files (their lstat says symlink) and never entered,
    so symlink loops cannot make the walk run forever.
    """
    return _GitignoreWalk(root_abs, flt, source_type, honour_gitignore).files()


class _GitignoreWalk(SortedWalk[FoundFile | SkippedSource]):
    """The `SortedWalk` of a folder outside git: each folder's .gitignore joins the frames of
    the folders above it, and decides (deepest first) what is silently left out."""

    follow_folder_links = False

    def __init__(self, root_abs: str, flt: PathFilter, source_type: str, honour_gitignore: bool) -> None:
        super().__init__(Path(root_abs))
        self.root_str = root_abs
        self.flt = flt
        self.source_type = source_type
        self.honour_gitignore = honour_gitignore
        self.frames: dict[str, Frames] = {}
        """Folder rel ("" for the root) → the .gitignore frames that apply inside it."""

    def _frames_of(self, rel: str) -> Frames:
        """The frames that apply to an entry: those of the folder holding it."""
        return self.frames.get(rel.rpartition("/")[0], ())

    def _unreadable_folder(self, rel: str, exc: OSError) -> SkippedSource:
        dir_abs = os.path.join(self.root_str, rel + "/") if rel else self.root_str
        return _skip(dir_abs, self.source_type, ("unreadable", f"folder cannot be listed ({exc.strerror or exc})"))

    def cannot_stat(self, path: Path, rel: str, exc: OSError) -> SkippedSource:
        return self._unreadable_folder(rel, exc)

    def cannot_list(self, path: Path, rel: str, exc: OSError) -> SkippedSource:
        return self._unreadable_folder(rel, exc)

    def listed(self, path: Path, rel: str, entries: list[os.DirEntry[str]]) -> None:
        frames = self._frames_of(rel) if rel else ()
        if self.honour_gitignore:
            for entry in entries:
                if entry.name == ".gitignore":
                    spec = _load_gitignore(entry.path)
                    if spec is not None:
                        frames = frames + ((rel + "/" if rel else "", spec),)
                    break
        self.frames[rel] = frames

    def folder(self, path: Path, rel: str, entry: os.DirEntry[str]) -> SkippedSource | bool:
        frames = self._frames_of(rel)
        if entry.name in VCS_DIRS or (frames and _ignored(frames, rel + "/")):
            return False
        reason = self.flt.dir_reason(rel, entry.name)
        return _skip(entry.path, self.source_type, reason) if reason is not None else True

    def file(self, path: Path, rel: str, entry: os.DirEntry[str]) -> FoundFile | SkippedSource | None:
        frames = self._frames_of(rel)
        if frames and _ignored(frames, rel):
            return None
        reason = self.flt.file_reason(rel, entry.name)
        if reason is not None:
            return _skip(entry.path, self.source_type, reason)
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError):  # vanished mid-walk: just gone
                return None
            return _skip(entry.path, self.source_type, ("unreadable", exc.strerror or str(exc)))
        return FoundFile(rel, entry.path, st)


# ----------------------------------------------------------------------------- git listing


def list_git(
    root_abs: str, paths: list[bytes], flt: PathFilter, source_type: str
) -> Iterator[FoundFile | SkippedSource]:
    """Turn `git ls-files` output into the same stream as `walk_tree`.

    Directory verdicts are cached, so each directory is checked once however many files it
    holds, and each pruned directory is reported once.
    """
    # rel dir -> None (kept) or (outermost pruned dir, its reason)
    verdicts: dict[str, tuple[str, Reason] | None] = {"": None}

    def dir_verdict(rel_dir: str) -> tuple[str, Reason] | None:
        if rel_dir in verdicts:
            return verdicts[rel_dir]
        parent, _, name = rel_dir.rpartition("/")
        verdict = dir_verdict(parent)
        if verdict is None:
            reason = flt.dir_reason(rel_dir, name)
            verdict = None if reason is None else (rel_dir, reason)
        verdicts[rel_dir] = verdict
        return verdict

    reported: set[str] = set()
    for raw in paths:
        rel = os.fsdecode(raw)
        nested_repo = rel.endswith("/")
        rel = rel.rstrip("/")
        abspath = os.path.join(root_abs, *rel.split("/"))
        parent, _, name = rel.rpartition("/")
        verdict = dir_verdict(parent)
        if verdict is not None:
            top, reason = verdict
            if top not in reported:
                reported.add(top)
                yield _skip(os.path.join(root_abs, *top.split("/")), source_type, reason)
            continue
        if nested_repo:
            reason = flt.dir_reason(rel, name) or (
                "nested_repo", "a separate git repository; add it as its own repo source"
            )
            yield _skip(abspath, source_type, reason)
            continue
        reason = flt.file_reason(rel, name)
        if reason is not None:
            yield _skip(abspath, source_type, reason)
            continue
        try:
            st = os.lstat(abspath)
        except FileNotFoundError:
            continue  # tracked but deleted in the work tree: nothing to index
        except OSError as exc:
            yield _skip(abspath, source_type, ("unreadable", exc.strerror or str(exc)))
            continue
        yield FoundFile(rel, abspath, st)


