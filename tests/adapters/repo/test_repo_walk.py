"""The walk outside git: nested .gitignore, excludes, symlink loops, FIFOs."""

from __future__ import annotations

import os
import time
from pathlib import Path
from helpers import write
from repo_support import GITIGNORE_TREE, enumerate_map, git, needs_git, parse_one


def test_walk_honours_nested_gitignore_and_negations(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for rel, text in GITIGNORE_TREE.items():
        write(root, rel, text + "\n")
    cands, skips = enumerate_map(root)
    assert set(cands) == {
        ".gitignore", "a/.gitignore", "important.log", "a/debug.log", "a/b/debug.log",
        "readme.md", "a/only-root.txt", "c/sp ace.txt",
    }
    assert skips == {}  # ignored files are not sources at all, as with git
    assert cands["readme.md"].extra["git_sha"] is None
    doc, _ = parse_one(cands["readme.md"])
    assert doc.metadata["git_sha"] is None


@needs_git
def test_walk_matches_git_on_the_same_tree(tmp_path: Path) -> None:
    """The walker's .gitignore semantics are checked against git itself."""
    root = tmp_path / "plain"
    for rel, text in GITIGNORE_TREE.items():
        write(root, rel, text + "\n")
    walked = set(enumerate_map(root)[0])
    git(root, "init", "-q")
    listed = {p for p in git(root, "ls-files", "-co", "--exclude-standard", "-z").split("\0") if p}
    assert walked == listed


def test_walk_skips_always_skipped_dirs_and_excludes(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for d in ("node_modules", ".venv", "venv", "__pycache__", "dist", "build", "target",
              ".mypy_cache", ".pytest_cache", ".tox", ".next", ".cache", "pkg.egg-info"):
        write(root, f"{d}/f.py", "x = 1\n")
        write(root, f"deep/{d}/f.py", "x = 1\n")
    write(root, "deep/.git/config", "[core]\n")  # a VCS folder is pruned without a report
    write(root, "keep.py", "x = 1\n")
    write(root, "gen/out.py", "x = 1\n")
    write(root, "app.min.js", "var a=1;\n")
    write(root, ".env", "TOKEN=abc\n")
    write(root, ".env.example", "TOKEN=\n")
    cands, skips = enumerate_map(root, excludes=["gen/", str(root / "deep" / "target")])
    assert set(cands) == {"keep.py", ".env.example"}
    assert skips["gen"].reason == "excluded"
    assert skips["node_modules"].reason == "generated"
    assert skips["deep/node_modules"].reason == "generated"
    assert skips[".venv"].reason == "excluded_dir"
    assert skips["pkg.egg-info"].reason == "excluded_dir"
    assert skips["app.min.js"].reason == "generated"
    assert skips[".env"].reason == "secret"
    assert not any(rel.endswith("/f.py") for rel in skips)  # one entry per pruned folder
    assert "deep/.git" not in skips and "deep/.git/config" not in cands


def test_symlink_loops_do_not_hang(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, "a/file.py", "x = 1\n")
    os.symlink("..", root / "a" / "up")
    os.symlink(".", root / "self")
    os.symlink(root, root / "a" / "abs_loop")
    os.symlink("missing.txt", root / "dangling.txt")
    outside = write(tmp_path, "outside.md", "secret\n")
    os.symlink(outside, root / "out.md")
    started = time.monotonic()
    cands, skips = enumerate_map(root)
    assert time.monotonic() - started < 5
    assert set(cands) == {"a/file.py"}
    assert {k: v.reason for k, v in skips.items()} == {
        "a/up": "symlink_dir", "self": "symlink_dir", "a/abs_loop": "symlink_dir",
        "dangling.txt": "broken_symlink", "out.md": "symlink_outside_root",
    }


def test_fifo_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    os.mkfifo(root / "pipe.txt")
    cands, skips = enumerate_map(root)
    assert cands == {} and skips["pipe.txt"].reason == "not_regular"
