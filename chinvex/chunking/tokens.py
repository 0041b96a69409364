"""Exact WordPiece token counts of lines, fast enough for megabyte files.

Running the tokenizer over a whole 1 MB file costs about half a second on this hardware, more than
all the rest of chunking put together. Counts are exact and cheap because of how the BERT pipeline
works: the normaliser is per character and the pre-tokeniser splits at every whitespace and
punctuation character, so a line's count is the sum of its words' counts and a text's count is
the sum of its lines' counts. For lines of printable ASCII the words are found with one regular
expression over the whole text and each distinct word is tokenised once (and remembered); any
other line goes to the real tokenizer as a whole. Tests compare both paths with the tokenizer.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from chinvex.embedding.tokenizer import count_tokens, count_tokens_batch, token_offsets

# A printable-ASCII line splits into BERT words exactly like this: runs of letters and digits,
# and single punctuation characters (every ASCII punctuation character is one vocabulary token).
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
_ASCII_WORDS_NL = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]|\n")
# Lines with any other character (non-ASCII, control characters) go to the real tokenizer.
_SLOW = re.compile(r"[^\t\n\r\x20-\x7e]")

_WORD_CACHE: dict[str, int] = {}
_WORD_CACHE_LIMIT = 400_000


def _ensure_words(words: set[str]) -> None:
    missing = [w for w in words if w not in _WORD_CACHE]
    if not missing:
        return
    if len(_WORD_CACHE) + len(missing) > _WORD_CACHE_LIMIT:
        _WORD_CACHE.clear()
    missing.sort()
    for word, n in zip(missing, count_tokens_batch(missing)):
        _WORD_CACHE[word] = n


def is_fast_line(line: str) -> bool:
    return _SLOW.search(line) is None


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
        _ensure_words(set(words))
        cache = _WORD_CACHE
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


def text_tokens(text: str) -> int:
    """Tokens of `text`, through the same exact path as lines."""
    return sum(line_token_counts(text.split("\n")))


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


_SENTENCE_END = frozenset(".!?")
_CLAUSE_END = frozenset(",:")
_STATEMENT_END = frozenset(";}")


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


def _break_score(line: str, end: int) -> float:
    """Prefer breaks after a sentence, then after a statement or clause, then between words."""
    if end <= 0 or end >= len(line):
        return 0.0
    spaced = line[end].isspace() or line[end - 1].isspace()
    k = end - 1
    while k > 0 and line[k].isspace() and end - k < 16:
        k -= 1
    last = line[k]
    if last in _SENTENCE_END and spaced:
        return 0.6
    if last in _STATEMENT_END:
        return 0.4
    if last in _CLAUSE_END and spaced:
        return 0.3
    return 0.1 if spaced else 0.0


def line_atoms(line: str) -> tuple[list[Atom], bool]:
    """Split one line into atoms at word boundaries; returns (atoms, exact).

    `exact` is False when the line needed the real tokenizer's offsets: then the sums are exact
    only as far as our reading of BERT's word boundaries is, and callers re-count the result.
    """
    atoms: list[Atom] = []
    if _SLOW.search(line) is None:
        lowered = line.lower()
        matches = list(_ASCII_WORDS.finditer(lowered))
        if not matches:
            return [Atom(0, len(line), 0, 0.0)], True
        _ensure_words({m.group() for m in matches})
        cache = _WORD_CACHE
        starts = [m.start() for m in matches]
        starts[0] = 0
        for k, m in enumerate(matches):
            end = starts[k + 1] if k + 1 < len(matches) else len(line)
            atoms.append(Atom(starts[k], end, cache[m.group()], 0.0))
        for a in atoms:
            a.score = _break_score(line, a.end)
        return atoms, True
    offsets = token_offsets(line)
    if not offsets:
        return [Atom(0, len(line), 0, 0.0)], False
    # group tokens into words: cut only where BERT would split anyway
    groups: list[list[int]] = [[0, offsets[0][0], offsets[0][1], 1]]
    for s, e in offsets[1:]:
        g = groups[-1]
        if s > g[2] or s >= len(line) or _word_edge(line[s]) or _word_edge(line[s - 1]):
            groups.append([0, s, e, 1])
        else:
            g[2] = max(g[2], e)
            g[3] += 1
    starts = [g[1] for g in groups]
    starts[0] = 0
    for k, g in enumerate(groups):
        end = starts[k + 1] if k + 1 < len(groups) else len(line)
        atoms.append(Atom(starts[k], end, g[3], _break_score(line, end)))
    return atoms, False


def truncate_to_tokens(text: str, limit: int) -> str:
    """`text` cut after at most `limit` tokens (with an ellipsis when cut)."""
    offsets = token_offsets(text)
    if len(offsets) <= limit:
        return text
    cut = offsets[max(limit - 1, 0)][0]
    return text[:cut].rstrip() + "…"
