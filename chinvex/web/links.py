"""Where a chunk opens in the UI: a conversation's chunk at its first turn in the conversation
viewer, any other chunk at its first line in the document view. Search hits, answer citations
and evidence all link through here, so they always land on the same place."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chinvex.models.turn_markers import turns_label
from chinvex.web.render import segment, url


def chunk_link(*, context: str, doc_id: str, chunk_id: str, metadata: Mapping[str, Any],
               line_start: int | None = None, query: str | None = None) -> str:
    thread = metadata.get("thread_id")
    turn = metadata.get("turn_start")
    if thread and turn is not None:
        try:
            number = int(turn)
        except (TypeError, ValueError):
            number = None
        if number is not None:
            return url(f"/conversation/{segment(thread)}", context=context, turn=number, q=query) + f"#turn-{number}"
    anchor = f"#L{line_start}" if line_start is not None else f"#chunk-{chunk_id}"
    return url(f"/document/{segment(doc_id)}", context=context, chunk=chunk_id, q=query) + anchor


def where(metadata: Mapping[str, Any], source_uri: str, line_start: int | None, line_end: int | None,
          text: str = "") -> str:
    """`path:12-30`, or `path turns 3-4` for a conversation (numbered from 1, as the chunk's
    `[Turn N of M]` markers and the conversation view number them), the path relative to its
    source folder when the chunk's header gives it (as answer citations name places)."""
    from chinvex.answer.evidence import relative_path

    place = str(metadata.get("path") or relative_path(str(metadata.get("header") or ""), source_uri) or source_uri)
    if line_start is not None:
        return f"{place}:{line_start}-{line_end if line_end is not None else line_start}"
    turns = turns_label(metadata, text)
    return f"{place} {turns}" if turns else place
