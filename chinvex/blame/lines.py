"""Lines as blame compares them: pure functions, shared by the ingest (which stores the hashes
of the lines each edit added) and by `blame` (which hashes the file's lines the same way).

A line is compared modulo whitespace (re-indentation, a formatter's spacing), so a line an agent
wrote still matches after `black` or a move into a nested block. Lines with almost no word
characters (`}`, `)`, `*/`) match everywhere; they are stored but explained only through a
neighbour (see `chinvex.blame.attribute`).
"""

from __future__ import annotations

from collections import Counter
from hashlib import blake2b

MIN_WORD_CHARS = 3


def normalise(line: str) -> str:
    return " ".join(line.split())


def line_hash(normalised: str) -> int:
    """A signed 64-bit hash (SQLite's INTEGER): collisions among a file's few thousand lines
    are negligible, and the index stays a fraction of the text's size."""
    return int.from_bytes(blake2b(normalised.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


def is_trivial(normalised: str) -> bool:
    return sum(ch.isalnum() for ch in normalised) < MIN_WORD_CHARS


def added_lines(old_text: str | None, new_text: str | None) -> list[str]:
    """The normalised, non-blank lines `new_text` holds more often than `old_text` did: an
    `Edit`'s new string repeats the context lines of its old string, and those lines were not
    written by this edit. Counting rather than aligning the two texts keeps the answer
    independent of how a diff would pair repeated lines (git and difflib pair them differently).
    A whole-file write (no old text) added all of its lines."""
    if not new_text:
        return []
    new = [line for line in (normalise(raw) for raw in new_text.splitlines()) if line]
    if not old_text:
        return new
    before = Counter(line for line in (normalise(raw) for raw in old_text.splitlines()) if line)
    after = Counter(new)
    return [line for line in after if after[line] > before[line]]


def added_hashes(old_text: str | None, new_text: str | None) -> set[int]:
    return {line_hash(line) for line in added_lines(old_text, new_text)}
