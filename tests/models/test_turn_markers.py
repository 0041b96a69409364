"""The turn markers the conversation chunker writes are the ones front ends read back
(chinvex.models.turn_markers), so a hit's "turns 4-5" is what its text shows."""

from __future__ import annotations

from chinvex.chunking.conversation import _marker, render_conversation
from chinvex.models import ConversationDoc, Turn
from chinvex.models.turn_markers import MARKER, shown_turns


def test_every_marker_form_reads_back():
    for line, number, label in ((_marker(3, 12, "assistant"), "3", "assistant"),
                                (_marker(7, None, "tool (Bash)"), "7", "tool (Bash)"),
                                (_marker(2, 9, "user", (1, 2)), "2", "user")):
        found = MARKER.match(line)
        assert found is not None and found.groups() == (number, label), line


def test_shown_turns_of_real_chunks_match_their_turns():
    turns = [Turn(turn_id=str(i), role="user" if i % 2 == 0 else "assistant", text=f"message {i} " * 40)
             for i in range(6)]
    doc = ConversationDoc(doc_id="d", thread_id="t", source="claude_code", source_type="agent_session",
                          source_uri="s.jsonl", turns=turns)
    _, chunks = render_conversation(doc)
    assert chunks
    for chunk in chunks:
        first, last = shown_turns(chunk.text)
        assert 1 <= first <= last <= len(turns)
        assert f"message {first - 1} " in chunk.text and f"message {last - 1} " in chunk.text
    assert shown_turns("no markers here") is None
