"""Lines as blame compares them (chinvex.blame.lines)."""

from __future__ import annotations

from chinvex.blame.lines import (
    added_hashes,
    added_lines,
    is_trivial,
    line_hash,
    normalise,
)


def test_whitespace_does_not_change_a_line():
    assert normalise("    return  x +\t1  ") == "return x + 1"
    assert line_hash(normalise("  a = 1")) == line_hash(normalise("a  =  1"))
    assert line_hash("a = 1") != line_hash("a = 2")


def test_an_edit_adds_only_the_lines_its_old_text_did_not_hold():
    old = "def f(x):\n    return x\n"
    new = "def f(x):\n    if x is None:\n        return 0\n    return x\n"
    assert added_lines(old, new) == ["if x is None:", "return 0"]


def test_a_repeated_line_counts_once_more_than_before():
    old = "group.add(\n  a,\n)\n"
    new = "group.add(\n  a,\n)\ngroup.add(\n  b,\n)\n"
    assert set(added_lines(old, new)) == {"group.add(", "b,", ")"}


def test_a_write_adds_every_non_blank_line():
    assert added_lines(None, "a = 1\n\n  b = 2\n") == ["a = 1", "b = 2"]
    assert added_lines("x", None) == [] and added_lines("x", "") == []
    assert added_hashes(None, "a = 1") == {line_hash("a = 1")}


def test_lines_without_words_are_trivial():
    assert is_trivial("}") and is_trivial("});") and is_trivial("") and is_trivial("x = 1")
    assert not is_trivial("end") and not is_trivial("items = []")
