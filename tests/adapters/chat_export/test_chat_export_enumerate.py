"""Enumerating export folders: symlinks, excludes and limits."""

from __future__ import annotations

import os
from pathlib import Path
from chinvex.models.sources import SkippedSource, SourceCandidate
from chat_export_support import ADAPTER, options


def test_enumerate_excludes_symlinks_and_limits(tmp_path):
    root = tmp_path / "chats"
    (root / "keep").mkdir(parents=True)
    (root / "drafts").mkdir()
    (root / "keep" / "a.md").write_text("# A\n")
    (root / "drafts" / "b.md").write_text("# B\n")
    (root / "keep" / "notes.txt").write_text("x")
    (root / "keep" / "huge.md").write_text("x" * 2000)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "c.md").write_text("# hidden\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "d.md").write_text("# D\n")
    os.symlink(outside, root / "link-out")
    os.symlink(root, root / "keep" / "loop")  # a link back to the root must not loop
    found = list(ADAPTER.enumerate(root, options(excludes=["drafts"], settings={"chat_markdown_max_bytes": 1000})))
    cands = [Path(c.source_uri).relative_to(root).as_posix() for c in found if isinstance(c, SourceCandidate)]
    skipped = {Path(s.source_uri).relative_to(root).as_posix(): s.reason for s in found
               if isinstance(s, SkippedSource)}
    assert cands == ["keep/a.md"]
    assert skipped == {"drafts": "excluded", "keep/huge.md": "too_large", "keep/notes.txt": "not_supported",
                       "link-out": "ignored"}
