"""The `[Turn 3 of 12] assistant:` lines a conversation chunk's text starts each turn with
(written by chinvex.chunking.conversation), read back for display. Kept here, light, so a
front end can read them without importing the chunkers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MARKER = re.compile(r"^\[Turn (\d+)(?: of \d+)?(?:, part \d+/\d+)?\] ([^:\n]{1,60}):\s*$")
"""A marker line: the turn's number (from 1) and its label (the role, or `tool (Name)`)."""


def shown_turns(text: str) -> tuple[int, int] | None:
    """The first and last turn numbers (from 1) whose markers a chunk's text shows, which is
    what a reader sees; None for text without markers."""
    numbers = [int(m.group(1)) for m in map(MARKER.match, text.split("\n")) if m]
    return (min(numbers), max(numbers)) if numbers else None


def turn_range(metadata: Mapping[str, Any], text: str = "") -> tuple[int, int] | None:
    """A conversation chunk's first and last turn, numbered from 1: the turns its text shows,
    else the stored zero-based `turn_start`/`turn_end` moved to one-based; None for a chunk that
    is not a conversation's."""
    if metadata.get("turn_start") is None:
        return None
    shown = shown_turns(text)
    if shown is not None:
        return shown
    start = int(metadata["turn_start"])
    return start + 1, int(metadata.get("turn_end", start)) + 1


def turns_label(metadata: Mapping[str, Any], text: str = "") -> str:
    """`turns 3-4` (or `turn 3`) for a conversation chunk, as every human output names its
    place; "" for other chunks."""
    found = turn_range(metadata, text)
    if found is None:
        return ""
    return f"turn {found[0]}" if found[0] == found[1] else f"turns {found[0]}-{found[1]}"
