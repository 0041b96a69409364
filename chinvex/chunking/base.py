"""What every chunker shares: line/token bookkeeping, choosing windows, turning drafts into Chunks.

All chunkers cut the source into contiguous pieces whose token counts are known (whole lines,
or word-aligned atoms of a line too long to keep whole), choose windows of pieces that fit the
embedder's window together with the chunk's header line, and then trim each window to its
non-whitespace extent. Because token counts add up across line and word boundaries (see
tokens.py), a window's size is a sum, never a re-tokenisation.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate
from typing import Any, Callable

from chinvex.embedding.tokenizer import MAX_CONTENT_TOKENS, count_tokens, token_offsets
from chinvex.ids import chunk_id
from chinvex.models.documents import Chunk

from .tokens import header_tokens, line_atoms, line_token_counts, truncate_to_tokens

MAX_TOKENS = MAX_CONTENT_TOKENS
"""Upper bound of `count_tokens(embed_text(chunk))` for every chunk."""
HEADER_MAX_TOKENS = 48
"""Headers are cut to this many tokens so that a chunk always has room for text."""
HEADER_PATH_TOKENS = 20
HEADER_PART_TOKENS = 12
TAIL_JOIN_RATIO = 0.25
"""A run of small units ending in less than this share of the budget, right before a unit that
must be split, joins that unit's split instead of becoming a chunk of its own (a heading or a
comment above a long block)."""
OVERLAP_RATIO = 0.15
"""Share of the budget repeated at the start of the next window when a long unit is cut."""
BALANCE_RATIO = 0.3
"""When what follows a full window would be a last window under this share of the budget, the
two are balanced instead (two medium chunks retrieve better than a full one and a scrap)."""
MIN_FILL = 0.65
"""A window may end at a better break only once it holds this share of its budget."""

_HEADER_SPACE = re.compile(r"\s+")
_CLOSERS = frozenset(")]}")
_TURN_TOTAL = re.compile(r"^\[Turn (\d+) of \d+", re.MULTILINE)


def stable_text(text: str) -> str:
    """`text` with the volatile turn total removed from conversation markers.

    `[Turn 3 of 12] user:` becomes `[Turn 3] user:` (and `[Turn 4 of 12, part 1/3]` becomes
    `[Turn 4, part 1/3]`), so a group of turns embeds and indexes identically before and after
    turns are appended to its thread.
    """
    return _TURN_TOTAL.sub(r"[Turn \1", text)


def embed_text(chunk: Chunk) -> str:
    """What is embedded and full-text indexed for `chunk`: its header line, then its text."""
    text = chunk.text
    if chunk.metadata.get("kind") == "conversation":
        text = stable_text(text)
    header = chunk.metadata.get("header")
    return f"{header}\n{text}" if header else text


def clean_header(header: str) -> str:
    """One line, bounded in tokens."""
    header = _HEADER_SPACE.sub(" ", header).strip()
    if header_tokens(header) > HEADER_MAX_TOKENS:
        header = truncate_to_tokens(header, HEADER_MAX_TOKENS)
    return header


def _shorten_path(path: str) -> str:
    if header_tokens(path) <= HEADER_PATH_TOKENS:
        return path
    parts = path.replace("\\", "/").split("/")
    kept: list[str] = []
    for part in reversed(parts):
        candidate = "/".join(["…", part, *kept])
        if kept and header_tokens(candidate) > HEADER_PATH_TOKENS:
            break
        kept.insert(0, part)
    short = "/".join(["…", *kept])
    return short if header_tokens(short) <= HEADER_PATH_TOKENS else truncate_to_tokens(
        kept[-1], HEADER_PATH_TOKENS
    )


@lru_cache(maxsize=8192)
def build_header(path: str, parts: tuple[str, ...] = (), sep: str = " · ") -> str:
    """`path · part · part` in one line of at most HEADER_MAX_TOKENS tokens.

    Long paths keep their last components, long parts are cut, and when the whole is still too
    long the outermost parts give way first: the innermost name is the most telling.
    """
    path = _shorten_path(_HEADER_SPACE.sub(" ", path).strip())
    items = [_HEADER_SPACE.sub(" ", p).strip() for p in parts]
    items = [truncate_to_tokens(p, HEADER_PART_TOKENS) for p in items if p]
    elided = False
    while True:
        header = sep.join([path, *(["…"] if elided else []), *items])
        if header_tokens(header) <= HEADER_MAX_TOKENS or len(items) <= 1:
            break
        items.pop(0)
        elided = True
    return clean_header(header)


def text_budget(header: str) -> int:
    return MAX_TOKENS - header_tokens(header)


class LineIndex:
    """Lines of a text ("\\n"-separated), their char offsets and token counts."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.starts = [0, *accumulate(len(line) + 1 for line in self.lines[:-1])]
        self.tokens = line_token_counts(self.lines)
        self.prefix = [0, *accumulate(self.tokens)]
        self.blank = [not line.strip() for line in self.lines]

    @property
    def n(self) -> int:
        return len(self.lines)

    def line_of(self, pos: int) -> int:
        """0-based line holding char `pos`."""
        return bisect_right(self.starts, pos) - 1

    def end_of(self, k: int) -> int:
        """Char offset just past line k's newline (or the end of the text)."""
        return self.starts[k + 1] if k + 1 < len(self.starts) else len(self.text)

    def span_tokens(self, a: int, b: int) -> int:
        """Tokens of lines [a, b)."""
        return self.prefix[b] - self.prefix[a]

    def first_nonblank(self, a: int, b: int) -> int | None:
        for k in range(a, b):
            if not self.blank[k]:
                return k
        return None


@dataclass(slots=True)
class Piece:
    """A contiguous char range whose tokens are known; windows are runs of pieces."""

    start: int
    end: int
    tokens: int
    score: float = 1.0  # quality of a break right after this piece
    exact: bool = True  # False: token count relies on our reading of word boundaries


@dataclass
class Draft:
    start: int
    end: int
    header: str
    meta: dict[str, Any] = field(default_factory=dict)
    exact: bool = True


def line_pieces(
    idx: LineIndex,
    a: int,
    b: int,
    cap: int,
    scores: dict[int, float] | None = None,
) -> list[Piece]:
    """Pieces tiling lines [a, b): one per line, lines over `cap` tokens cut into atoms.

    A line's break score is 1, 2 when a blank line follows (a paragraph ends), or what
    `scores` gives (structural boundaries such as the end of a statement).
    """
    out: list[Piece] = []
    blank = idx.blank
    n = idx.n
    for k in range(a, b):
        score = 2.0 if (k + 1 >= n or blank[k + 1] or blank[k]) else 1.0
        if scores:
            score = max(score, scores.get(k, 0.0))
        t = idx.tokens[k]
        end = idx.end_of(k)
        if t <= cap:
            out.append(Piece(idx.starts[k], end, t, score))
            continue
        base = idx.starts[k]
        atoms, exact = line_atoms(idx.lines[k])
        for atom in atoms:
            out.append(Piece(base + atom.start, base + atom.end, atom.tokens, atom.score, exact))
        out[-1].end = end
        out[-1].score = score
    return out


def choose_windows(
    pieces: list[Piece],
    budget: int,
    overlap: int = 0,
    limit: Callable[[int, int], int] | None = None,
    min_fill: float = MIN_FILL,
) -> list[tuple[int, int]]:
    """Windows [i, j) over `pieces`, each summing to at most `budget` tokens.

    A window ends at the best-scored break once it is `min_fill` full (ties go to the longer
    window), and the next one starts up to `overlap` tokens earlier. `limit(i, j)`, when
    given, is the budget of window [i, j) instead (code: a window holding one definition gets
    a longer header). A piece over budget still becomes a window of its own; callers cut such
    pieces first.
    """
    n = len(pieces)
    pre = [0, *accumulate(p.tokens for p in pieces)]
    out: list[tuple[int, int]] = []
    i = 0
    prev_end = 0
    while i < n:
        j = i
        total = 0
        cum: list[int] = []
        while j < n:
            lim = limit(i, j + 1) if limit is not None else budget
            if total + pieces[j].tokens > lim:
                break
            total += pieces[j].tokens
            cum.append(total)
            j += 1
        if j == i:
            j = i + 1
            cum.append(pieces[i].tokens)
        elif j < n:
            floor = min_fill * budget
            best = j
            best_score = pieces[j - 1].score
            rest = pre[n] - pre[j]
            if rest + overlap < BALANCE_RATIO * budget:
                # what is left would make a small last window: cut nearer the middle instead
                target = (pre[n] - pre[i] + overlap) / 2
                chosen = None
                for jj in range(j, max(i, prev_end), -1):
                    c = cum[jj - i - 1]
                    if c < 0.8 * target:
                        break
                    if c > 1.2 * target or (limit is not None and c > limit(i, jj)):
                        continue
                    rank = (pieces[jj - 1].score, -abs(c - target))
                    if chosen is None or rank > chosen[0]:
                        chosen = (rank, jj)
                if chosen is not None:
                    out.append((i, chosen[1]))
                    j = chosen[1]
                    prev_end, i = j, _overlap_start(pieces, i, j, budget, overlap)
                    continue
            for jj in range(j - 1, max(i, prev_end), -1):
                if cum[jj - i - 1] < floor:
                    break
                if limit is not None and cum[jj - i - 1] > limit(i, jj):
                    continue
                if pieces[jj - 1].score > best_score:
                    best, best_score = jj, pieces[jj - 1].score
            j = best
        out.append((i, j))
        if j >= n:
            break
        prev_end = j
        i = _overlap_start(pieces, i, j, budget, overlap)
    return out


def _overlap_start(pieces: list[Piece], i: int, j: int, budget: int, overlap: int) -> int:
    """Where the window after [i, j) starts: the longest tail within `overlap` tokens, trimmed
    to begin after a good break (a line or sentence end)."""
    k = j
    if not overlap or j >= len(pieces):
        return k
    cap = min(overlap, budget - pieces[j].tokens)
    ov = 0
    aligned = None
    while k - 1 > i and ov + pieces[k - 1].tokens <= cap:
        k -= 1
        ov += pieces[k].tokens
        if pieces[k - 1].score >= 0.5:
            aligned = k
    return aligned if aligned is not None else k


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The non-whitespace extent of text[start:end], widened to include a first line's indent."""
    s = start
    while s < end and text[s].isspace():
        s += 1
    if s >= end:
        return s, s
    e = end
    while e > s and text[e - 1].isspace():
        e -= 1
    # Widen to the start of s's line when that line start is inside the range, or when only an
    # indent lies between it and s. The search stays inside the range plus that indent, so a
    # text of one huge line costs linear time, not a scan back to its start at every cut.
    newline = text.rfind("\n", start, s)
    if newline != -1:
        ls = newline + 1
    else:
        ls = start
        while ls > 0 and text[ls - 1] != "\n" and text[ls - 1].isspace():
            ls -= 1
        if ls > 0 and text[ls - 1] != "\n":
            ls = s  # something other than an indent precedes: keep s
    if ls < s:
        s = ls
    return s, e


def split_exact(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """Cut text[start:end] into ranges of at most `limit` tokens, counted by the tokenizer.

    The last resort for ranges whose summed count could not be trusted; it always terminates
    because a range of one token fits any budget left after a bounded header.
    """
    out: list[tuple[int, int]] = []
    todo = [(start, end)]
    while todo:
        s, e = todo.pop()
        seg = text[s:e]
        if count_tokens(seg) <= limit:
            out.append((s, e))
            continue
        offsets = token_offsets(seg)
        k = min(len(offsets) - 1, max(1, (limit * 9) // 10))
        cut = offsets[k][0]
        ws = seg.rfind(" ", offsets[max(1, k // 2)][0], cut)
        if ws > 0:
            cut = ws
        if not 0 < cut < len(seg):
            if len(seg) < 2:
                out.append((s, e))
                continue
            cut = len(seg) // 2
        todo.append((s + cut, e))
        todo.append((s, s + cut))
    return out


def finalize(doc_id: str, idx: LineIndex, drafts: list[Draft], with_lines: bool = True) -> list[Chunk]:
    """Trim drafts, enforce the budget where counts were not exact, number and id the chunks."""
    text = idx.text
    spans: list[tuple[int, int, Draft]] = []
    for d in drafts:
        s, e = trim(text, d.start, d.end)
        if s >= e:
            continue
        if not d.exact:
            limit = MAX_TOKENS - header_tokens(d.header)
            if header_tokens(d.header) + count_tokens(text[s:e]) > MAX_TOKENS:
                for ps, pe in split_exact(text, s, e, limit):
                    ps, pe = trim(text, ps, pe)
                    if ps < pe:
                        spans.append((ps, pe, d))
                continue
        spans.append((s, e, d))
    chunks: list[Chunk] = []
    last: tuple[int, int] | None = None
    for s, e, d in spans:
        if last is not None and last[0] <= s and e <= last[1]:
            continue  # wholly inside the previous chunk: adds nothing
        last = (s, e)
        body = text[s:e]
        index = len(chunks)
        meta = dict(d.meta)
        meta["header"] = d.header
        chunks.append(
            Chunk(
                chunk_id=chunk_id(doc_id, index, body),
                doc_id=doc_id,
                chunk_index=index,
                text=body,
                char_start=s,
                char_end=e,
                line_start=idx.line_of(s) + 1 if with_lines else None,
                line_end=idx.line_of(e - 1) + 1 if with_lines else None,
                metadata=meta,
            )
        )
    return chunks


def window_drafts(
    idx: LineIndex,
    a: int,
    b: int,
    header: str,
    meta: dict[str, Any],
    overlap: bool = True,
    scores: dict[int, float] | None = None,
    prose: bool = False,
) -> list[Draft]:
    """Windows over lines [a, b) under one header (the common case of every chunker).

    With `prose`, lines longer than the overlap are cut into sentence-aligned atoms, so that
    windows can overlap by a sentence or two inside long paragraphs.
    """
    budget = text_budget(header)
    if idx.span_tokens(a, b) <= budget and all(idx.tokens[k] <= budget for k in range(a, b)):
        return [Draft(idx.starts[a], idx.end_of(b - 1), header, dict(meta))]
    ov = int(budget * OVERLAP_RATIO) if overlap else 0
    pieces = line_pieces(idx, a, b, min(budget, ov) if prose and ov else budget, scores)
    out = []
    for i, j in choose_windows(pieces, budget, ov):
        exact = all(p.exact for p in pieces[i:j])
        out.append(Draft(pieces[i].start, pieces[j - 1].end, header, dict(meta), exact))
    return out


def pack_units(
    idx: LineIndex,
    units: list[tuple[int, int]],
    header: str,
    meta: dict[str, Any],
    split,
) -> list[Draft]:
    """Consecutive units (line ranges) merged greedily up to the budget; a unit too big for a
    chunk of its own goes to `split(a, b)`, which returns its drafts. A small last window
    before such a unit joins its split (see TAIL_JOIN_RATIO)."""
    budget = text_budget(header)
    out: list[Draft] = []
    run: list[tuple[int, Piece]] = []

    def flush(hold: bool) -> int | None:
        windows = choose_windows([p for _, p in run], budget)
        held = None
        if hold and windows:
            i, j = windows[-1]
            if sum(p.tokens for _, p in run[i:j]) < TAIL_JOIN_RATIO * budget:
                held = run[i][0]
                windows.pop()
        for i, j in windows:
            out.append(Draft(run[i][1].start, run[j - 1][1].end, header, dict(meta)))
        run.clear()
        return held

    for a, b in units:
        t = idx.span_tokens(a, b)
        if t <= budget:
            run.append((a, Piece(idx.starts[a], idx.end_of(b - 1), t)))
        else:
            held = flush(True)
            out.extend(split(a if held is None else held, b))
    flush(False)
    return out


def partition(starts: list[int], a: int, b: int) -> list[tuple[int, int]]:
    """Line ranges tiling [a, b), one beginning at each of `starts` (the first at `a`)."""
    cuts = sorted({s for s in starts if a < s < b})
    bounds = [a, *cuts, b]
    return [(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]


def indent_scores(idx: LineIndex, a: int, b: int) -> dict[int, float]:
    """Good breaks in code without a parse tree: after a line when the next non-blank line is
    indented no deeper than the shallowest line of the range (a new top-level statement)."""
    indents = {}
    for k in range(a, b):
        if not idx.blank[k]:
            line = idx.lines[k]
            indents[k] = len(line) - len(line.lstrip(" \t"))
    if not indents:
        return {}
    base = min(indents.values())
    scores: dict[int, float] = {}
    prev: int | None = None
    for k in sorted(indents):
        if indents[k] <= base:
            if idx.lines[k].lstrip()[:1] in _CLOSERS:
                scores[k] = 3.0  # a closing bracket ends the statement: break after it
            elif prev is not None:
                scores[prev] = max(scores.get(prev, 0.0), 3.0 if k - prev > 1 else 2.5)
        prev = k
    return scores
