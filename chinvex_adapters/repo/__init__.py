"""Adapter: repo — every text file of a git repository or folder becomes one Document.

Also home of the file helpers the notes adapter shares: listing (`walk`, `gitutil`), screening
(`scan`), binary detection (`sniff`) and safe reading (`textfile`).
"""

from chinvex_adapters.repo.adapter import RepoAdapter

__all__ = ["RepoAdapter"]
