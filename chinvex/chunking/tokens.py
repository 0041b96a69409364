"""Exact WordPiece token counts of lines, fast enough for megabyte files.

Running the tokenizer over a whole large file costs more than all the rest of chunking put
together. Counts are exact and cheap because of how the BERT pipeline
works: the normaliser is per character and the pre-tokeniser splits at every whitespace and
punctuation character, so a line's count is the sum of its words' counts and a text's count is
the sum of its lines' counts. For lines of printable ASCII the words are found with one regular
expression over the whole text and each distinct word is tokenised once (and remembered); any
other line goes to the real tokenizer as a whole. Tests compare both paths with the tokenizer.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

from chinvex.embedding.tokenizer import count_tokens, count_tokens_batch, token_offsets

# A printable-ASCII line splits into BERT words exactly like this: runs of letters and digits,
# and single punctuation characters (every ASCII punctuation character is one vocabulary token).
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
_ASCII_WORDS_NL = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]|\n")
# Lines with any other character (non-ASCII, control characters) go to the real tokenizer, and
# so do lines holding one of its special tokens' texts: the tokenizer reads "[PAD]" or "[SEP]"
# in a text as that one token (case-sensitively), where words would count three.
_SLOW = re.compile(r"[^\t\n\r\x20-\x7e]|\[(?:PAD|UNK|CLS|SEP|MASK)\]")

_WORD_CACHE: dict[str, int] = {}
_WORD_CACHE_LIMIT = 400_000


def _word_counts(words: set[str]) -> dict[str, int]:
    """Token counts of distinct words, remembered across calls (a local copy is returned so
    that a concurrent reset of the shared cache cannot lose an entry)."""
    cache = _WORD_CACHE
    out: dict[str, int] = {}
    missing: list[str] = []
    for w in words:
        n = cache.get(w)
        if n is None:
            missing.append(w)
        else:
            out[w] = n
    if missing:
        missing.sort()
        counted = count_tokens_batch(missing)
        if len(cache) + len(missing) > _WORD_CACHE_LIMIT:
            cache.clear()
        for w, n in zip(missing, counted):
            cache[w] = n
            out[w] = n
    return out


def line_token_counts(lines: list[str]) -> list[int]:
    """WordPiece tokens of each line (lines contain no newline)."""
    counts = [0] * len(lines)
    fast: list[int] = []
    slow: list[int] = []
    for i, line in enumerate(lines):
        if not line:
            continue
        (fast if _SLOW.search(line) is None else slow).append(i)
    if fast:
        joined = "\n".join(lines[i] for i in fast).lower()
        words = _ASCII_WORDS_NL.findall(joined)
        cache = _word_counts(set(words))
        cache["\n"] = 0
        k = 0
        n = 0
        for w in words:
            if w == "\n":
                counts[fast[k]] = n
                k += 1
                n = 0
            else:
                n += cache[w]
        counts[fast[k]] = n
    if slow:
        unique = sorted({lines[i] for i in slow})
        by_line = dict(zip(unique, count_tokens_batch(unique)))
        for i in slow:
            counts[i] = by_line[lines[i]]
    return counts


@lru_cache(maxsize=4096)
def header_tokens(header: str) -> int:
    return count_tokens(header) if header else 0


@dataclass(slots=True)
class Atom:
    """A piece of one long line; cutting between atoms never changes the token total."""

    start: int  # offsets relative to the line
    end: int
    tokens: int
    score: float  # how good a break right after this atom is


# Break candidates inside a long line, best first: after a sentence, after a statement or a
# block, after a clause, between words.
_BREAKS = re.compile(r"""([.!?]['")\]]*\s+)|([;}]\s*)|([,:]\s+)|(\s+)""")
_BREAK_SCORES = (0.0, 0.6, 0.4, 0.3, 0.1)
_MIN_ATOM = 8  # tokens: finer atoms only cost time
_MAX_ATOM = 24  # tokens: coarser atoms waste budget; cut between words beyond this


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _word_edge(ch: str) -> bool:
    """True when BERT's pre-tokenizer always splits next to `ch` (whitespace, punctuation, CJK)."""
    cp = ord(ch)
    if ch.isspace() or (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126):
        return True
    return unicodedata.category(ch).startswith("P") or _is_cjk(cp)


def _words(line: str) -> tuple[list[int], list[int], bool]:
    """Start offsets and token counts of the line's words (BERT pre-tokens), and whether the
    counts are exact (printable ASCII) or read from the tokenizer's offsets."""
    if _SLOW.search(line) is None:
        lowered = line.lower()
        words = _ASCII_WORDS.findall(lowered)
        cache = _word_counts(set(words))
        starts = [m.start() for m in _ASCII_WORDS.finditer(lowered)]
        return starts, list(map(cache.__getitem__, words)), True
    starts: list[int] = []
    counts: list[int] = []
    last_end = -1
    for s, e in token_offsets(line):
        if starts and s <= last_end and s < len(line) and not (
            _word_edge(line[s]) or _word_edge(line[s - 1])
        ):
            counts[-1] += 1
        else:
            starts.append(s)
            counts.append(1)
        last_end = max(last_end, e)
    return starts, counts, False


def line_atoms(line: str) -> tuple[list[Atom], bool]:
    """Split one long line into atoms that tile it, cut only between words; returns
    (atoms, exact).

    Atoms end at break candidates once they hold a few tokens, so a window can end after a
    sentence or statement without the cost of one atom per word. `exact` is False when the
    line needed the real tokenizer's offsets: the sums then rest on our reading of BERT's word
    boundaries, and callers re-count what they build from them.
    """
    starts, counts, exact = _words(line)
    n = len(line)
    if not starts:
        return [Atom(0, n, 0, 0.0)], exact
    starts[0] = 0
    cum = [0, *accumulate(counts)]
    nw = len(starts)
    cuts: list[tuple[int, int, float]] = []  # (char position, word index, score)
    gk = 0
    k = 0
    for m in _BREAKS.finditer(line):
        p = m.end()
        if p >= n:
            break
        k = bisect_left(starts, p, k)
        tok = cum[k] - cum[gk]
        score = _BREAK_SCORES[m.lastindex or 4]
        if tok >= _MIN_ATOM or (score >= 0.6 and tok >= 2):
            cuts.append((p, k, score))
            gk = k
    cuts.append((n, nw, 0.0))
    atoms: list[Atom] = []
    pos, wk = 0, 0
    for p, k, score in cuts:
        # an atom over _MAX_ATOM tokens (no break candidate for long) is cut between words
        while cum[k] - cum[wk] > _MAX_ATOM:
            nk = bisect_left(cum, cum[wk] + _MAX_ATOM // 2, wk + 1)
            nk = min(max(nk, wk + 1), k)
            if nk >= k:
                break
            atoms.append(Atom(pos, starts[nk], cum[nk] - cum[wk], 0.0))
            pos, wk = starts[nk], nk
        if p > pos:
            atoms.append(Atom(pos, p, cum[k] - cum[wk], score))
            pos, wk = p, k
    return atoms, exact


def truncate_to_tokens(text: str, limit: int) -> str:
    """`text` cut after at most `limit` tokens (with an ellipsis when cut)."""
    offsets = token_offsets(text)
    if len(offsets) <= limit:
        return text
    cut = offsets[max(limit - 1, 0)][0]
    return text[:cut].rstrip() + "…"
