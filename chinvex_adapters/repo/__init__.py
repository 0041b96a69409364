"""Adapter: repo — every text file of a git repository or folder becomes one Document.

The file helpers it shares with the notes and Claude Code memory adapters live in the kit:
listing (`kit.gitwalk`, `kit.gitutil`), screening (`kit.scan`, `kit.generated`), binary
detection (`kit.filetype`) and safe reading (`kit.textfile`).
"""

from chinvex_adapters.repo.adapter import RepoAdapter

__all__ = ["RepoAdapter"]
