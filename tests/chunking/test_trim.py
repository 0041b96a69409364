"""`trim` (a chunk's non-blank extent, widened to its first line's indent) agrees with the plain
definition on every short text, and stays linear on one huge line: it used to search back to the
start of the text for a newline at every cut, so a single-line message chunked in quadratic time
(issue 40)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chinvex.chunking.base import trim


def plain_trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The definition, written the obvious (slow) way."""
    s = start
    while s < end and text[s].isspace():
        s += 1
    if s >= end:
        return s, s
    e = end
    while e > s and text[e - 1].isspace():
        e -= 1
    line_start = text.rfind("\n", 0, s) + 1
    if line_start < s and (line_start >= start or text[line_start:s].isspace()):
        s = line_start
    return s, e


@given(st.text(alphabet="ab \n\t\r", max_size=16), st.data())
def test_trim_matches_the_definition(text, data):
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert trim(text, start, end) == plain_trim(text, start, end)


def test_trim_keeps_a_first_lines_indent_and_drops_blank_edges():
    text = "x\n    indented line  \n\n"
    assert trim(text, 2, len(text)) == (2, 19)
    assert trim(text, 4, len(text)) == (2, 19)  # inside the indent: widened to the line start
    assert trim("ab cd", 3, 5) == (3, 5)  # after a word on the same line: not widened


def test_one_huge_line_is_scanned_once_per_cut():
    """Counted, not timed: the characters `trim` compares stay bounded by the range, however
    far back the line began."""
    calls = 0

    class Counting(str):
        def rfind(self, sub, start=None, end=None):  # type: ignore[override]
            nonlocal calls
            calls += (end or len(self)) - (start or 0)
            return str.rfind(self, sub, start, end)

    text = Counting("word " * 200_000)
    for cut in range(500_000, 1_000_000, 50_000):
        trim(text, cut, cut + 1000)
    assert calls <= 10 * 1000
