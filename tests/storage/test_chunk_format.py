"""`chinvex chunk get` (format_chunk) of a conversation chunk names its turns, numbered from 1
as search shows them, next to its character range; a file chunk has no turns."""

from __future__ import annotations

from typing import Any

from chinvex.models.turn_markers import turn_range
from chinvex.storage.chunk_reads import format_chunk


def _chunk(text: str, metadata: dict[str, Any], source_type: str = "agent_session") -> dict[str, Any]:
    return {"chunk_id": "abc123", "source_type": source_type, "source_uri": "/s/rollout.jsonl", "title": "Retries",
            "text": text, "metadata": metadata,
            "range": {"char_start": 2119, "char_end": 2433, "line_start": None, "line_end": None},
            "timestamps": {"updated_at": None, "indexed_at": "2026-11-24T14:03:00Z"},
            "neighbours": {"previous": "p1", "next": None}}


def _details(chunk: dict[str, Any]) -> str:
    return format_chunk(chunk).splitlines()[1]


def test_a_conversation_chunk_shows_the_turns_its_text_holds():
    text = "[Turn 3 of 5] user:\nAdd jitter\n[Turn 4 of 5] assistant:\nDone."
    details = _details(_chunk(text, {"turn_start": 2, "turn_end": 3}))
    assert details.startswith("[dim]turns 3-4 · chars 2119-2433 · "), details


def test_one_turn_without_markers_is_numbered_from_one():
    details = _details(_chunk("plain text", {"turn_start": 6, "turn_end": 6}))
    assert "turn 7 · chars 2119-2433" in details and "turns" not in details
    assert turn_range({"turn_start": 0}, "plain text") == (1, 1)


def test_a_file_chunk_has_no_turns():
    details = _details(_chunk("def f():\n    pass\n", {}, source_type="repo"))
    assert "turn" not in details and "chars 2119-2433" in details
