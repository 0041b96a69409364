"""Evidence chunks cut into the smallest pieces an answer can quote: a `Unit` is a sentence
of prose, a sentence of a dialogue turn, or a meaningful line (or definition) of code.

Each kind is cut by its own module (prose_units, dialogue_units, code_units); evidence_units
chooses the kind of each chunk. What they share lives here: the unit itself, and how text is
cut into sentences. A sentence ending in "?" asks rather than tells and never counts as support.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+(?=[\"'“‘(]?[A-Z0-9]|\[)|\s+(?=\[[a-z][^\]]{8,}\]\s*$)")


@dataclass
class Unit:
    """One quotable piece of an evidence chunk."""

    chunk: int  # index of the chunk in the evidence pack
    order: int  # position within the chunk
    text: str  # what an answer quotes
    analysed: str  # what coverage is measured on (forms of address removed)
    kind: str  # "dialogue", "code" or "prose"
    label: str | None = None  # "[D1:3] Caroline", "assistant", "L42-45"
    speaker: str | None = None
    about: frozenset[str] = field(default_factory=frozenset)  # lower-cased participant names
    question: bool = False
    line_start: int | None = None  # 1-based line within the chunk text
    line_end: int | None = None
    heading: bool = False  # a markdown heading: context for its paragraph, never quoted alone
    block: int = 0  # units of one turn / paragraph share a block; a code chunk is one block
    extent: str = ""
    """A code definition's whole text, body included (`text` is its signature and docstring); for
    a sentence ending in ":", the fenced block it introduces."""


def asks(sentence: str) -> bool:
    """Whether a sentence asks (ends in "?", past closing quotes and emphasis)."""
    return sentence.rstrip(" *_\"'”’)`").endswith("?")


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (a bracketed aside at the end stands alone)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]
