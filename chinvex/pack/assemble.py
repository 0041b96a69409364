"""Context assembly: fit ranked chunks into a token budget, the same way every time.

An agent asks for "what do we know about X, in at most N tokens". The packer takes ranked
candidates and returns the blocks to paste, under three rules from the Recall design:

- the budget is hard: the rendered pack (headers included) never has more than N tokens,
  counted with the tokenizer the caller passes (chinvex passes the built-in embedder's);
- at most `diversity` chunks come from one document, so one long file cannot fill the pack;
- the order is fixed by the candidates alone: score (descending, rounded so that float noise
  in the last bits cannot swap two chunks), then path, then character offset, then chunk id.
  A chunk that does not fit in what is left is cut to its longest token prefix that does, and
  packing stops there; a later, smaller chunk never jumps the queue (that would make the pack
  depend on the budget in ways a reader cannot predict).

Pure: no I/O, the tokenizer comes in as two functions, so tests can drive it with any corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

SCORE_DECIMALS = 6
"""Scores equal to 6 decimals are a tie, broken by path, offset and id."""

MIN_TRUNCATED_TOKENS = 8
"""A cut chunk keeps at least this many tokens of text, or it is left out: a header followed by
two words tells an agent nothing and costs the header."""


@dataclass(frozen=True)
class PackCandidate:
    chunk_id: str
    doc_id: str
    score: float
    path: str
    """What the tie-break sorts by and the header shows (a relative path or a conversation)."""
    offset: int
    text: str
    header: str
    """The line printed above the chunk's text (its place, e.g. `src/a.py:10-40`)."""


@dataclass(frozen=True)
class PackedChunk:
    candidate: PackCandidate
    text: str
    tokens: int
    """Tokens of this chunk's block (header line and text) in the rendered pack."""
    truncated: bool


@dataclass(frozen=True)
class Pack:
    chunks: list[PackedChunk]
    budget: int
    used: int
    diversity: int | None
    considered: int
    skipped_for_diversity: int
    left_out_for_budget: int
    text: str = field(repr=False)

    @property
    def truncated(self) -> bool:
        """Whether something relevant was cut or left out for lack of budget."""
        return self.left_out_for_budget > 0 or any(c.truncated for c in self.chunks)


def pack_order(candidates: Sequence[PackCandidate]) -> list[PackCandidate]:
    """The design's ordering: score descending, then path, offset and chunk id ascending; a
    chunk id seen twice keeps its best-ranked copy. Header and text end the key, so that even two
    copies equal on all of those (which search never returns) are ordered by themselves, not by
    the order they came in."""
    ordered = sorted(candidates, key=lambda c: (-round(c.score, SCORE_DECIMALS), c.path, c.offset, c.chunk_id,
                                                c.header, c.text))
    seen: set[str] = set()
    unique = []
    for c in ordered:
        if c.chunk_id not in seen:
            seen.add(c.chunk_id)
            unique.append(c)
    return unique


def block(header: str, text: str) -> str:
    """One chunk as it appears in the pack. Blocks are joined by nothing: each ends with a
    newline, and the tokenizer splits at whitespace, so a pack's tokens are its blocks' sum."""
    return f"{header}\n{text.rstrip()}\n\n"


def assemble(candidates: Sequence[PackCandidate], *, budget: int, diversity: int | None,
             count_tokens: Callable[[str], int],
             prefix_of: Callable[[str, int], str]) -> Pack:
    """Pack `candidates` into `budget` tokens. `count_tokens(text)` counts tokens;
    `prefix_of(text, n)` returns the longest prefix of `text` holding at most n tokens."""
    if budget < 0:
        raise ValueError("budget must be >= 0")
    if diversity is not None and diversity < 1:
        raise ValueError("diversity must be >= 1")
    ordered = pack_order(candidates)
    per_doc: dict[str, int] = {}
    chosen: list[PackedChunk] = []
    used = skipped = left_out = 0
    for position, c in enumerate(ordered):
        if diversity is not None and per_doc.get(c.doc_id, 0) >= diversity:
            skipped += 1
            continue
        whole = block(c.header, c.text)
        cost = count_tokens(whole)
        if used + cost <= budget:
            chosen.append(PackedChunk(c, c.text, cost, truncated=False))
            used += cost
            per_doc[c.doc_id] = per_doc.get(c.doc_id, 0) + 1
            continue
        cut = _cut_to_fit(c, budget - used, count_tokens, prefix_of)
        if cut is not None:
            chosen.append(cut)
            used += cut.tokens
        left_out = sum(1 for rest in ordered[position + (1 if cut is not None else 0):]
                       if diversity is None or per_doc.get(rest.doc_id, 0) < diversity)
        break
    text = "".join(block(p.candidate.header, p.text) for p in chosen)
    return Pack(chunks=chosen, budget=budget, used=used, diversity=diversity, considered=len(ordered),
                skipped_for_diversity=skipped, left_out_for_budget=left_out, text=text)


def _cut_to_fit(c: PackCandidate, room: int, count_tokens: Callable[[str], int],
                prefix_of: Callable[[str, int], str]) -> PackedChunk | None:
    """The chunk's longest text prefix whose block fits in `room` tokens (None: not even
    MIN_TRUNCATED_TOKENS of text fit). The count is checked on the block itself, never assumed."""
    overhead = count_tokens(block(c.header, ""))
    allowed = room - overhead
    while allowed >= MIN_TRUNCATED_TOKENS:
        text = prefix_of(c.text, allowed).rstrip()
        cost = count_tokens(block(c.header, text))
        if cost <= room and count_tokens(text) >= MIN_TRUNCATED_TOKENS:
            return PackedChunk(c, text, cost, truncated=True)
        allowed -= max(1, cost - room)
    return None
