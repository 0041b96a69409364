"""Which edit explains a line when several could (chinvex.blame.attribute)."""

from __future__ import annotations

from chinvex.blame.attribute import Candidate, LineInput, attribute, order
from chinvex.blame.lines import line_hash, normalise

A = Candidate(1, "doc-a", "2026-01-01T10:00:00.000Z")
B = Candidate(2, "doc-b", "2026-01-05T10:00:00.000Z")
UNDATED = Candidate(3, "doc-c", None)


def _h(*texts: str) -> set[int]:
    return {line_hash(normalise(t)) for t in texts}


def test_the_last_edit_before_the_commit_wins():
    assert order([A, B], "2026-01-02T00:00:00.000Z") == [A, B]
    assert order([A, B], "2026-01-06T00:00:00.000Z") == [B, A]
    # an edit a few minutes after its commit's date still counts as before it
    assert order([A, B], "2026-01-05T09:55:00.000Z")[0] == B


def test_uncommitted_lines_take_the_latest_edit_and_undated_edits_come_last():
    assert order([A, UNDATED, B], None) == [B, A, UNDATED]


def test_trivial_lines_are_explained_only_through_a_neighbour():
    added = {1: _h("def f():", "return 1", "}"), 2: _h("}")}
    lines = [LineInput(1, "def f():", None), LineInput(2, "    return 1", None), LineInput(3, "}", None),
             LineInput(4, "by_hand = 2", None), LineInput(5, "}", None)]
    found = attribute(lines, added, [A, Candidate(2, "doc-b", A.ts)])
    assert [c.doc_id for c in found[1]] == ["doc-a"]
    assert [c.doc_id for c in found[3]] == ["doc-a"]  # its neighbour's edit also added `}`
    assert 4 not in found
    assert 5 not in found  # `}` next to a person's line only: every edit of the file has one


def test_a_line_no_edit_added_is_not_explained():
    found = attribute([LineInput(1, "written_by_hand = True", None)], {1: _h("x = 1")}, [A])
    assert found == {}
