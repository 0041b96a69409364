"""Pieces of sentences are not answers (issue 39, item 4): a chunk cut inside a paragraph holds
the tail or the head of a sentence at its edge, and a clause is never cut out of the middle of a
bracketed aside. Both were seen answering the demo's questions over this repository's docs/
("a kill early in a big ingest keeps the first commits)")."""

from __future__ import annotations

from chinvex.answer.compose import _top_level_parts
from chinvex.answer.prose_units import begun_before, ends_after, prose_units


def test_a_chunk_that_starts_or_ends_inside_a_paragraph_marks_those_pieces_as_fragments():
    text = ("while healing a lost store) the ingest writes every vector again.\n"
            "It keeps the old folder.\n\n"
            "The writer commits every batch. Its first batch is small and the\n"
            "next ones double up to")
    units = prose_units(text, chunk=0)
    forms = {u.text: u.form for u in units}
    assert forms["while healing a lost store) the ingest writes every vector again."] == "fragment"
    assert forms["It keeps the old folder."] == ""
    assert forms["The writer commits every batch."] == ""
    assert forms["Its first batch is small and the next ones double up to"] == "fragment"


def test_whole_sentences_list_items_and_headings_at_the_edges_are_not_fragments():
    text = "# Ingest\n\nThe writer commits every batch.\n\n- a list item without a full stop"
    assert all(u.form == "" for u in prose_units(text, chunk=0))
    assert not begun_before("The writer (the one in storage) commits.")
    assert begun_before("keeps the first commits).") and begun_before("commits) early.")
    assert not ends_after("It commits (early).") and not ends_after("It says “done.”")
    assert ends_after("It commits early and") and ends_after("It commits (early, and.")


def test_clauses_are_cut_outside_brackets_only():
    text = "Tried and not kept: a small batch (since today, for a reason: a kill keeps commits), and more"
    parts = _top_level_parts(text)
    assert parts == ["Tried and not kept", "a small batch (since today, for a reason: a kill keeps commits)", "and more"]
    assert _top_level_parts("a, b; c") == ["a", "b", "c"]
