"""Code that cannot be parsed (or has no grammar here): paragraphs, then line windows.

Blank lines separate the paragraphs most code is written in (functions, blocks of statements);
paragraphs are merged up to the budget, and one too long for a chunk becomes windows with
overlap that prefer to end before a line as shallowly indented as the paragraph itself.
"""

from __future__ import annotations

from typing import Any

from .base import Draft, LineIndex, indent_scores, pack_units, partition, window_drafts


def paragraphs(idx: LineIndex, a: int, b: int) -> list[tuple[int, int]]:
    """Line ranges tiling [a, b), each starting at the first line of a blank-line paragraph."""
    starts = [k for k in range(a, b) if not idx.blank[k] and (k == a or idx.blank[k - 1])]
    return partition(starts, a, b)


def fallback_drafts(idx: LineIndex, header: str, meta: dict[str, Any]) -> list[Draft]:
    def split(a: int, b: int) -> list[Draft]:
        return window_drafts(idx, a, b, header, meta, overlap=True, scores=indent_scores(idx, a, b))

    return pack_units(idx, paragraphs(idx, 0, idx.n), header, meta, split)
