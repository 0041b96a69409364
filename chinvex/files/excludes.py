"""Context `excludes`, matched the same way under every kind of root.

The patterns use gitignore syntax (pathspec's `GitIgnoreSpec`) relative to each include root:
a pattern without a slash matches a name at any depth, `dir/` a folder, `*` stays inside one
path segment, `**` crosses them, `!` re-includes. One matcher for repos, notes, chat exports
and session folders, so the same line in context.json never means two different things.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable

import pathspec


def compile_patterns(patterns: Iterable[str]) -> tuple[pathspec.GitIgnoreSpec | None, list[str]]:
    """A gitignore-style spec from `patterns`, and the patterns that could not be compiled
    (reported by the caller, never fatal: git itself ignores malformed lines)."""
    good: list[str] = []
    bad: list[str] = []
    for line in patterns:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except Exception:  # pathspec raises several error types for malformed patterns
            bad.append(line)
        else:
            good.append(line)
    if not any(line.strip() and not line.lstrip().startswith("#") for line in good):
        return None, bad
    return pathspec.GitIgnoreSpec.from_lines(good), bad


def relative_excludes(patterns: Iterable[str], root_abs: str) -> list[str]:
    """Context excludes are matched relative to each root; an absolute pattern that lies
    under this root is rewritten to the equivalent root-anchored one."""
    prefix = root_abs.rstrip(os.sep) + os.sep
    out = []
    for pattern in patterns:
        if os.path.isabs(pattern) and pattern.startswith(prefix):
            pattern = "/" + pattern[len(prefix):].replace(os.sep, "/")
        out.append(pattern)
    return out


def exclude_spec(patterns: Iterable[str], root_abs: str) -> pathspec.GitIgnoreSpec | None:
    """The compiled excludes of one root, built once per walk (None when nothing is excluded)."""
    return compile_patterns(relative_excludes(patterns, root_abs))[0]


def is_excluded(rel: str, spec: pathspec.GitIgnoreSpec | None, *, is_dir: bool = False) -> bool:
    """Whether the root-relative POSIX path `rel` (a folder when `is_dir`) is excluded."""
    return spec is not None and spec.match_file(rel + "/" if is_dir else rel)


def may_match_inside(patterns: Iterable[str], rel_dir: str) -> bool:
    """Whether some positive pattern could match a path inside the root-relative folder
    `rel_dir` (or the folder itself). Lets a walker prune a folder it would otherwise have to
    list file by file just to find that nothing in it is wanted. Conservative: True when a
    pattern might match (a slash-free pattern such as `*.js` matches at any depth)."""
    parts = rel_dir.strip("/").split("/")
    for raw in patterns:
        pattern = raw.strip()
        if not pattern or pattern.startswith(("#", "!")):
            continue
        pattern = pattern.rstrip("/")
        if "/" not in pattern:
            return True
        segments = pattern.lstrip("/").split("/")
        for i, part in enumerate(parts):
            if i >= len(segments) or segments[i] == "**":
                return True  # the pattern names this folder or one above it, or any depth
            if not fnmatch.fnmatchcase(part, segments[i]):
                break
        else:
            return True  # every folder matched: the pattern continues inside (or is it)
    return False
