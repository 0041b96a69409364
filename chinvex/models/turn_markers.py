"""The `[Turn 3 of 12] assistant:` lines a conversation chunk's text starts each turn with
(written by chinvex.chunking.conversation), read back for display. Kept here, light, so a
front end can read them without importing the chunkers."""

from __future__ import annotations

import re

MARKER = re.compile(r"^\[Turn (\d+)(?: of \d+)?(?:, part \d+/\d+)?\] ([^:\n]{1,60}):\s*$")
"""A marker line: the turn's number (from 1) and its label (the role, or `tool (Name)`)."""


def shown_turns(text: str) -> tuple[int, int] | None:
    """The first and last turn numbers (from 1) whose markers a chunk's text shows, which is
    what a reader sees; None for text without markers."""
    numbers = [int(m.group(1)) for m in map(MARKER.match, text.split("\n")) if m]
    return (min(numbers), max(numbers)) if numbers else None
