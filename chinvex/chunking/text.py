"""Plain text: windows with overlap that prefer to end at a paragraph, then a line, then a
sentence boundary (see `line_pieces` and the atom scores in tokens.py)."""

from __future__ import annotations

from typing import Any

from .base import Draft, LineIndex, window_drafts


def text_drafts(idx: LineIndex, header: str, meta: dict[str, Any]) -> list[Draft]:
    return window_drafts(idx, 0, idx.n, header, meta, overlap=True, prose=True)
