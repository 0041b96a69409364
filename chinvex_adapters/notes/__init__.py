"""Adapter: notes — markdown and plain-text notes (Obsidian conventions understood)."""

from chinvex_adapters.notes.adapter import NotesAdapter

__all__ = ["NotesAdapter"]
