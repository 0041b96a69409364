"""Context `excludes` mean the same thing under every kind of root (gitignore syntax)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chinvex_adapters.kit.walk import walk
from chinvex_adapters.cx_sessions_jsonl.discover import walk_jsonl
from chinvex.files.excludes import exclude_spec, is_excluded


@pytest.mark.parametrize(("rel", "patterns", "is_dir", "expected"), [
    ("a/b/c.md", ["*.md"], False, True),              # no slash: any depth
    ("a/b/c.md", ["a/*.md"], False, False),           # `*` stays inside one segment
    ("a/b/c.md", ["a/**/*.md"], False, True),         # `**` crosses segments
    ("x/drafts", ["drafts/"], True, True),            # folder pattern at any depth
    ("x/drafts", ["drafts/"], False, False),          # ... but not a file of that name
    ("a/keep.md", ["*.md", "!keep.md"], False, False),  # negation re-includes
    ("a/b.md", ["/b.md"], False, False),              # leading slash anchors at the root
    ("b.md", ["/b.md"], False, True),
    ("a/b.md", [], False, False),
    ("a/b.md", ["", "# comment"], False, False),
])
def test_gitignore_semantics(rel, patterns, is_dir, expected):
    assert is_excluded(rel, exclude_spec(patterns, "/root"), is_dir=is_dir) is expected


def _tree(root: Path) -> None:
    for rel in ("2026/01/a.jsonl", "2026/01/deep/b.jsonl", "2026/c.jsonl", "scratch/d.jsonl"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")


@pytest.mark.parametrize(("patterns", "kept"), [
    (["2026/*.jsonl"], {"2026/01/a.jsonl", "2026/01/deep/b.jsonl", "scratch/d.jsonl"}),
    (["2026/**/*.jsonl"], {"scratch/d.jsonl"}),
    (["deep/", "scratch"], {"2026/01/a.jsonl", "2026/c.jsonl"}),
    (["*.jsonl", "!a.jsonl"], {"2026/01/a.jsonl"}),
])
def test_chat_and_session_walkers_agree(tmp_path: Path, patterns, kept):
    _tree(tmp_path)
    assert _kept_by_each_walker(tmp_path, patterns) == (kept, kept)


def test_absolute_pattern_under_the_root_is_anchored(tmp_path: Path):
    _tree(tmp_path)
    kept = {"2026/c.jsonl", "scratch/d.jsonl"}
    assert _kept_by_each_walker(tmp_path, [str(tmp_path / "2026" / "01")]) == (kept, kept)


def _kept_by_each_walker(root: Path, patterns: list[str]) -> tuple[set[str], set[str]]:
    """What the chat-export walker and the session walker keep under `root`."""
    return ({e.rel for e in walk(root, patterns) if e.skip is None},
            {f.rel for f in walk_jsonl(root, patterns) if f.skip is None})
