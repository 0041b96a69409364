"""Which edit put each line where it is: pure functions over hashed lines, candidate edits and
the commit git gives each line.

A line is explained by an edit that added its text (modulo whitespace) to this file. When
several did (a later session rewrote the whole file, or the same line was written twice), the
one that comes last before the line's commit is taken (its text was there when the commit was
made); an uncommitted line takes the latest edit. Lines with almost no word characters (`}`)
are only explained by an edit that explains a neighbouring line too, else they would match
every edit of the file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chinvex.blame.lines import is_trivial, line_hash, normalise
from chinvex.timeutil import to_utc

COMMIT_SLACK_S = 15 * 60
"""An edit up to this long after its commit's author date still counts as before it (clocks of
the agent's machine and of git differ; a commit amended later keeps its first date)."""
NEIGHBOURHOOD = 3


@dataclass(frozen=True)
class Candidate:
    edit_id: int
    doc_id: str
    ts: str | None


@dataclass(frozen=True)
class LineInput:
    line: int
    text: str
    commit_date: str | None  # None: uncommitted, or no git


def epoch(ts: str | None) -> float | None:
    moment = to_utc(ts)
    return moment.timestamp() if moment is not None else None


def order(candidates: Sequence[Candidate], commit_date: str | None) -> list[Candidate]:
    """Best first: with a commit, the latest edit not after it (with slack), then later ones
    nearest first; without, the latest. Edits without a time come last."""
    ref = epoch(commit_date)

    def key(c: Candidate) -> tuple[int, float]:
        t = epoch(c.ts)
        if t is None:
            return (2, 0.0)
        if ref is None:
            return (0, -t)
        if t <= ref + COMMIT_SLACK_S:
            return (0, ref - t)
        return (1, t - ref)

    return sorted(candidates, key=key)


def attribute(lines: Sequence[LineInput], added: Mapping[int, set[int]],
              edits: Sequence[Candidate]) -> dict[int, list[Candidate]]:
    """line number -> the edits that explain it, best first (absent: none does). `added` maps
    an edit id to the hashes of the lines it added; `lines` are the file's lines in order (the
    asked range and a few neighbours, so that trivial lines can borrow)."""
    by_hash: dict[int, list[Candidate]] = {}
    for edit in edits:
        for h in added.get(edit.edit_id, ()):
            by_hash.setdefault(h, []).append(edit)
    found: dict[int, list[Candidate]] = {}
    trivial: list[int] = []
    for index, item in enumerate(lines):
        norm = normalise(item.text)
        if not norm:
            continue
        if is_trivial(norm):
            trivial.append(index)
            continue
        matched = by_hash.get(line_hash(norm))
        if matched:
            found[item.line] = order(matched, item.commit_date)
    for index in trivial:
        item = lines[index]
        near: set[int] = set()
        for step in (-1, 1):
            j, seen = index + step, 0
            while 0 <= j < len(lines) and seen < NEIGHBOURHOOD:
                other = lines[j]
                norm = normalise(other.text)
                if norm and not is_trivial(norm):
                    if other.line in found:
                        near.add(found[other.line][0].edit_id)
                    break
                j, seen = j + step, seen + 1
        matched = [c for c in by_hash.get(line_hash(normalise(item.text)), []) if c.edit_id in near]
        if matched:
            found[item.line] = order(matched, item.commit_date)
    return found
