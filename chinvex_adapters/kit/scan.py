"""Enumeration shared by the file-based adapters: list (git or walk), then screen each file
(symlinks, size, emptiness, binary content, generated or data files) into a candidate or a skip
with a reason.

The order of checks keeps the common case cheap: name rules first, then the size from the
one `lstat` the listing already made, and only then the first 8 KB of content (64 KB when
those end inside one long line and the generated-file rules need to see further).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from chinvex.files.excludes import compile_patterns, may_match_inside, relative_excludes
from chinvex.files.walk import inside
from chinvex.models.sources import (
    AdapterOptions,
    SkippedSource,
    SourceCandidate,
    SourceError,
)
from chinvex_adapters.kit import generated, gitutil
from chinvex_adapters.kit.filetype import (
    SNIFF_BYTES,
    Verdict,
    binary_by_name,
    read_head,
    sniff_bytes,
)
from chinvex_adapters.kit.generated import GENERATED
from chinvex_adapters.kit.gitwalk import (
    ALWAYS_SKIP_DIRS,
    VCS_DIRS,
    FoundFile,
    PathFilter,
    Reason,
    list_git,
    walk_tree,
)

NameRule = Callable[[str], Reason | None]
"""A rule on a file's base name, e.g. 'lock files are noise' or 'only .md notes'."""


@dataclass(frozen=True)
class ScanSpec:
    source_type: str
    adapter: str
    kind: str  # how the root is named in errors: "repository", "note folder"
    use_git: bool
    name_rule: NameRule | None = None
    skip_dirs: frozenset[str] = ALWAYS_SKIP_DIRS
    skip_hidden: bool = False
    detect_generated: bool = False
    """Skip generated, vendored and data files (reason `generated`) unless the context's
    `include_generated` globs match them; vendored folders are then judged here, not by
    `skip_dirs`."""


INCLUDE_GENERATED = "include_generated"
"""The context.json key (in `AdapterOptions.settings`) listing generated files to index anyway."""


@dataclass(frozen=True)
class IncludeBack:
    """A context's `include_generated` globs, for one root (gitignore syntax, like excludes):
    what they match is screened like any other file."""

    spec: pathspec.GitIgnoreSpec | None
    patterns: tuple[str, ...]

    def includes(self, rel: str) -> bool:
        return self.spec is not None and self.spec.match_file(rel)

    def dir_rule(self, rel: str, name: str) -> Reason | None:
        """A vendored folder is pruned and reported once, unless a glob may reach inside it:
        then it is listed and each file judged on its own."""
        folder = generated.vendored_folder(rel)
        if folder is None or (self.spec is not None and may_match_inside(self.patterns, rel)):
            return None
        return GENERATED, generated.vendored_detail(folder)


@dataclass
class ScanResult:
    """What one enumeration saw, besides the stream itself."""

    mode: str = "walk"  # "git" or "walk"
    git_sha: str | None = None
    notices: list[SkippedSource] = field(default_factory=list)


def check_root(root: Path, kind: str) -> str:
    """The root as an absolute path (symlinks kept: paths are shown as given)."""
    root_abs = os.path.abspath(os.path.expanduser(os.fspath(root)))
    if not os.path.exists(root_abs):
        raise SourceError(f"{root}: {kind} path does not exist")
    if not os.path.isdir(root_abs):
        raise SourceError(f"{root}: {kind} path is not a directory")
    return root_abs


def scan(
    root: Path, options: AdapterOptions, spec: ScanSpec, result: ScanResult | None = None
) -> Iterator[SourceCandidate | SkippedSource]:
    """Candidates and skips under `root`, sorted by relative path (deterministic runs).

    Root-level notices (git fell back to a walk, an exclude pattern is malformed) come first,
    as SkippedSources whose source_uri is the root itself.
    """
    result = result if result is not None else ScanResult()
    root_abs = check_root(root, spec.kind)
    root_real = os.path.realpath(root_abs)
    excludes, bad = compile_patterns(relative_excludes(options.excludes, root_abs))
    for pattern in bad:
        result.notices.append(SkippedSource(root_abs, spec.source_type, "invalid_pattern",
                                            f"exclude pattern {pattern!r} is malformed and was ignored"))
    include = _include_back(options, root_abs, spec, result) if spec.detect_generated else None
    flt = PathFilter(excludes, skip_dirs=spec.skip_dirs, skip_hidden=spec.skip_hidden,
                     dir_rule=include.dir_rule if include is not None else None)

    listing = _listing(root_abs, flt, spec, result)

    extra_base: dict[str, Any] = {"max_file_bytes": options.max_file_bytes}
    if spec.use_git:  # None outside git: parse need not ask again
        extra_base["git_sha"] = result.git_sha
    keyed: list[tuple[str, SourceCandidate | SkippedSource]] = []
    for item in listing:
        if isinstance(item, SkippedSource):
            key = _rel_key(item.source_uri, root_abs)
            item.source_uri = safe_text(item.source_uri)
            keyed.append((key, item))
            continue
        keyed.append((item.rel, screen(item, root_abs, root_real, options, spec, extra_base,
                                       include=include)))
    keyed.sort(key=lambda pair: pair[0])
    yield from result.notices
    for _, item in keyed:
        yield item


def _include_back(
    options: AdapterOptions, root_abs: str, spec: ScanSpec, result: ScanResult
) -> IncludeBack:
    raw = options.settings.get(INCLUDE_GENERATED) or []
    patterns = relative_excludes([p for p in raw if isinstance(p, str)], root_abs)
    compiled, bad = compile_patterns(patterns)
    for pattern in bad:
        result.notices.append(SkippedSource(
            root_abs, spec.source_type, "invalid_pattern",
            f"include_generated pattern {pattern!r} is malformed and was ignored"))
    return IncludeBack(compiled, tuple(p for p in patterns if p not in bad))


def _listing(
    root_abs: str, flt: PathFilter, spec: ScanSpec, result: ScanResult
) -> Iterator[FoundFile | SkippedSource]:
    """`git ls-files` inside a work tree, else (or when git fails) the .gitignore-aware walk."""
    if spec.use_git and gitutil.in_work_tree(root_abs):
        try:
            paths = gitutil.ls_files(root_abs)
        except gitutil.GitError as exc:
            result.notices.append(SkippedSource(
                root_abs, spec.source_type, "git_unavailable",
                f"{exc}; walked the folder instead, honouring its .gitignore files",
            ))
        else:
            if paths or not _has_entries(root_abs):
                result.mode = "git"
                result.git_sha = gitutil.head_sha(root_abs)
                return list_git(root_abs, paths, flt, spec.source_type)
            # The folder was asked for explicitly, but its enclosing repository ignores it
            # (a build output, a vendored tree): index it anyway, as a plain folder.
            result.notices.append(SkippedSource(
                root_abs, spec.source_type, "ignored_by_git",
                "git lists no files here (the enclosing repository ignores this folder); "
                "walked it instead, honouring its own .gitignore files",
            ))
    return walk_tree(root_abs, flt, spec.source_type)


def _has_entries(path: str) -> bool:
    try:
        with os.scandir(path) as it:
            return any(entry.name not in VCS_DIRS for entry in it)
    except OSError:
        return False


def _rel_key(path: str, root_abs: str) -> str:
    if path == root_abs:
        return ""
    return os.path.relpath(path, root_abs).replace(os.sep, "/")


def _skip(found: FoundFile, spec: ScanSpec, reason: str, detail: str) -> SkippedSource:
    return SkippedSource(safe_text(found.abspath), spec.source_type, reason, safe_text(detail))


def screen(
    found: FoundFile,
    root_abs: str,
    root_real: str,
    options: AdapterOptions,
    spec: ScanSpec,
    extra_base: dict[str, Any],
    *,
    include: IncludeBack | None = None,
) -> SourceCandidate | SkippedSource:
    """Candidate or skip for one listed file; reads at most 8 KB of it (64 KB for a file whose
    first 8 KB are inside one long line, when generated files are detected)."""
    name = found.rel.rpartition("/")[2]
    if safe_text(found.rel) != found.rel:
        return _skip(found, spec, "undecodable_name", "the path is not valid UTF-8")
    st = found.st
    if stat.S_ISLNK(st.st_mode):
        return _symlink_skip(found, root_real, spec)
    if stat.S_ISDIR(st.st_mode):  # git lists submodules as gitlinks
        return _skip(found, spec, "submodule", "git submodule; add it as its own repo source")
    if not stat.S_ISREG(st.st_mode):
        return _skip(found, spec, "not_regular", "not a regular file (fifo, socket or device)")
    if spec.name_rule is not None:
        rule = spec.name_rule(name)
        if rule is not None:
            return _skip(found, spec, *rule)
    judge_generated = include is not None and not include.includes(found.rel)
    if judge_generated:
        by_path = generated.by_path(found.rel)
        if by_path is not None:
            return _skip(found, spec, GENERATED, by_path)
    size = st.st_size
    if size == 0:
        return _skip(found, spec, "empty", "empty file")
    if size > options.max_file_bytes:
        return _skip(found, spec, "too_large",
                     f"{size:,} bytes, over the {options.max_file_bytes:,}-byte limit")
    by_name = binary_by_name(name)
    if by_name is not None:
        return _skip(found, spec, "binary", by_name)
    try:
        sample = read_head(found.abspath, SNIFF_BYTES)
        complete = len(sample) < SNIFF_BYTES or size <= SNIFF_BYTES
        verdict = sniff_bytes(sample, complete=complete)
        if verdict.binary:
            return _skip(found, spec, "binary", verdict.detail)
        by_content = _content_rule(found, sample, verdict, size) if judge_generated else None
    except FileNotFoundError:
        return _skip(found, spec, "vanished", "deleted while the folder was being scanned")
    except OSError as exc:
        return _skip(found, spec, "unreadable", exc.strerror or str(exc))
    if by_content is not None:
        return _skip(found, spec, GENERATED, by_content)
    extra = dict(extra_base)
    extra["path"] = found.rel
    if verdict.encoding != "utf-8":
        extra["encoding"] = verdict.encoding
    return SourceCandidate(
        source_uri=found.abspath,
        source_type=spec.source_type,
        adapter=spec.adapter,
        root=root_abs,
        path=Path(found.abspath),
        size_bytes=size,
        mtime_ns=st.st_mtime_ns,
        extra=extra,
    )


def _content_rule(found: FoundFile, sample: bytes, verdict: Verdict, size: int) -> str | None:
    """The generated/data rule the file's first bytes decide, if any (OSError propagates)."""
    text = sample.decode(verdict.encoding, "replace")
    if len(sample) >= SNIFF_BYTES and generated.wants_more(text, size):
        sample = read_head(found.abspath, generated.EXTENDED_SAMPLE_BYTES)
        text = sample.decode(verdict.encoding, "replace")
    complete = len(sample) >= size
    name = found.rel.rpartition("/")[2]
    return generated.by_content(text, name=name, size=size, complete=complete,
                                sample_bytes=len(sample))


def _symlink_skip(found: FoundFile, root_real: str, spec: ScanSpec) -> SkippedSource:
    """Symlinks are never indexed under their own name: a directory link could loop or leave
    the root, a file link outside the root is not part of it, and one inside the root points
    at a file that is indexed under its real path (indexing it twice would duplicate hits)."""
    real = os.path.realpath(found.abspath)
    try:
        target = os.stat(found.abspath)
    except OSError:
        return _skip(found, spec, "broken_symlink", f"points to {real}, which cannot be reached")
    if stat.S_ISDIR(target.st_mode):
        return _skip(found, spec, "symlink_dir", f"directory symlink to {real}; never followed")
    if not inside(real, root_real):
        return _skip(found, spec, "symlink_outside_root", f"points outside the root, to {real}")
    rel_target = os.path.relpath(real, root_real).replace(os.sep, "/")
    return _skip(found, spec, "symlink_duplicate", f"points to {rel_target}, indexed under that path")


def safe_text(value: str) -> str:
    """A path with undecodable bytes (surrogate escapes) made printable and storable."""
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
