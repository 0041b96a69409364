"""Fixtures of the repo adapter tests."""

from __future__ import annotations

import os
from pathlib import Path
import pytest
from helpers import write
from repo_support import PNG_HEADER, git


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, ".gitignore", "*.log\nignored_dir/\n")
    write(root, "src/app.py", "def main():\n    return 42\n")
    write(root, "src/util.ts", "export const x = 1;\n")
    write(root, "README.md", "# Demo\r\nCRLF kept\r\n")
    write(root, "debug.log", "ignored by *.log\n")
    write(root, "ignored_dir/x.py", "print('ignored')\n")
    write(root, "sub/.gitignore", "local.txt\n!keep.log\n")
    write(root, "sub/local.txt", "ignored by the nested .gitignore\n")
    write(root, "local.txt", "not ignored at the top\n")
    write(root, "sub/keep.log", "re-included by the nested negation\n")
    write(root, "with space/file name.txt", "spaces\n")
    write(root, "new\nline.txt", "a newline in the name\n")
    write(root, "ünïcödé/日本語.md", "unicode names\n")
    write(root, "docs/private/secret.md", "excluded by the context\n")
    write(root, "notes.tmp", "excluded by the context\n")
    write(root, "node_modules/pkg/index.js", "module.exports = 1;\n")
    write(root, "node_modules/pkg/lib/deep.js", "module.exports = 2;\n")
    write(root, "package-lock.json", '{"lockfileVersion": 3}\n')
    write(root, "Cargo.lock", "# lock\n")
    write(root, "image.txt", PNG_HEADER)
    write(root, "nul.py", b"print(1)\n\x00\x00\x01binary\n")
    write(root, "latin.txt", bytes(range(128, 256)) * 8)
    write(root, "empty.txt", b"")
    big = root / "big.txt"  # sparse: all NUL bytes, so only a size check can call it too_large
    with open(big, "wb") as fh:
        fh.truncate(2_000_000)
    os.symlink("..", root / "loop")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside the root\n")
    os.symlink(outside, root / "outside_link.txt")
    os.symlink("src/app.py", root / "app_link.py")
    git(root, "add", "-f", "src", ".gitignore", "sub/.gitignore", "README.md", "node_modules")
    git(root, "commit", "-q", "-m", "init")
    return root
