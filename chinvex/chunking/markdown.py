"""Markdown chunks by sections: each heading starts one, its path of headings is the header.

markdown-it-py (block rules only: inline parsing is not needed and costs more than half the
time) gives every block its line range. Sections that fit are merged with their neighbours
under the headings they share; a section that does not fit is cut between its blocks (a list
or quote between its items, a table between its rows), so a code fence stays whole unless it
alone exceeds the budget, in which case it, like an overlong paragraph, becomes windows.

Front matter (YAML between `---` lines at the very start) is in no section: it gets a chunk of
its own, flagged `front_matter`, so its tags and aliases can still be found.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

from .base import (
    TAIL_JOIN_RATIO,
    Draft,
    LineIndex,
    build_header,
    pack_units,
    partition,
    text_budget,
    window_drafts,
)

_FM_OPEN = re.compile(r"\A\ufeff?---[ \t]*\r?\n")
_FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$")
_LONE_CR = re.compile(r"\r(?!\n)")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table")
    md.disable(["inline", "text_join"])
    return md


@dataclass
class _Block:
    type: str
    a: int  # lines [a, b)
    b: int
    level: int = 0  # heading level
    title: str = ""
    children: list[_Block] = field(default_factory=list)


def front_matter_lines(idx: LineIndex) -> int:
    """Number of lines of front matter at the start of the text (0 when there is none)."""
    if not _FM_OPEN.match(idx.text):
        return 0
    for k in range(1, idx.n):
        if _FM_CLOSE.match(idx.lines[k]):
            return k + 1
    return 0


def _blocks(text: str) -> list[_Block]:
    """Top-level blocks with their nested blocks, line ranges as markdown-it maps them."""
    root = _Block("root", 0, 0)
    stack = [root]
    for tok in _parser().parse(text):
        if tok.nesting == 1:
            if tok.map is None:
                blk = _Block(tok.type[:-5], stack[-1].a, stack[-1].a)
                blk.b = -1  # no range: its children are taken by the parent instead
            else:
                blk = _Block(tok.type[:-5], tok.map[0], tok.map[1])
            if tok.type == "heading_open":
                blk.level = int(tok.tag[1:]) if tok.tag[1:].isdigit() else 1
            stack[-1].children.append(blk)
            stack.append(blk)
        elif tok.nesting == -1:
            if len(stack) > 1:
                done = stack.pop()
                if done.b == -1:
                    parent = stack[-1]
                    parent.children.remove(done)
                    parent.children.extend(done.children)
        elif tok.type == "inline":
            if stack[-1].type == "heading":
                stack[-1].title = " ".join(tok.content.split())
        elif tok.map is not None:
            stack[-1].children.append(_Block(tok.type, tok.map[0], tok.map[1]))
    return root.children


@dataclass
class _Section:
    a: int
    b: int
    path: list[str]
    blocks: list[_Block]


def _sections(blocks: list[_Block], a: int, b: int) -> list[_Section]:
    """Sections tiling lines [a, b): content before the first heading, then one per heading."""
    sections: list[_Section] = [_Section(a, b, [], [])]
    stack: list[tuple[int, str]] = []
    for blk in blocks:
        if blk.type == "heading":
            while stack and stack[-1][0] >= blk.level:
                stack.pop()
            stack.append((blk.level, blk.title))
            sections.append(_Section(blk.a, b, [t for _, t in stack], []))
        sections[-1].blocks.append(blk)
    out = [s for s in sections if s.blocks]
    for s, (ta, tb) in zip(out, partition([a] + [s.a for s in out[1:]], a, b)):
        s.a, s.b = ta, tb
    return out


def _common(paths: list[list[str]]) -> list[str]:
    first = paths[0]
    n = len(first)
    for p in paths[1:]:
        n = min(n, len(p))
        for k in range(n):
            if p[k] != first[k]:
                n = k
                break
    return first[:n]


class _Markdown:
    def __init__(self, idx: LineIndex, path: str) -> None:
        self.idx = idx
        self.path = path

    def header(self, heading_path: list[str]) -> str:
        return build_header(self.path, tuple(heading_path), " › ")

    def meta(self, heading_path: list[str]) -> dict[str, Any]:
        return {"heading_path": list(heading_path)}

    def sections(self, sections: list[_Section]) -> list[Draft]:
        """Adjacent sections merged while they fit under their shared headings."""
        idx = self.idx
        out: list[Draft] = []
        group: list[_Section] = []

        def fits(secs: list[_Section]) -> bool:
            header = self.header(_common([s.path for s in secs]))
            return idx.span_tokens(secs[0].a, secs[-1].b) <= text_budget(header)

        def flush() -> None:
            if group:
                common = _common([s.path for s in group])
                out.append(
                    Draft(
                        idx.starts[group[0].a],
                        idx.end_of(group[-1].b - 1),
                        self.header(common),
                        self.meta(common),
                    )
                )
                group.clear()

        for sec in sections:
            if group and fits(group + [sec]):
                group.append(sec)
                continue
            if fits([sec]):
                flush()
                group.append(sec)
                continue
            # too big: split it; a small group just before (a parent heading) joins the split
            lead: list[_Section] = []
            if group:
                size = idx.span_tokens(group[0].a, group[-1].b)
                if size < TAIL_JOIN_RATIO * text_budget(self.header(sec.path)):
                    lead = list(group)
                    group.clear()
            flush()
            blocks = [blk for s in lead for blk in s.blocks] + sec.blocks
            start = lead[0].a if lead else sec.a
            out.extend(self.blocks(blocks, start, sec.b, sec.path))
        flush()
        return out

    def blocks(self, blocks: list[_Block], a: int, b: int, path: list[str]) -> list[Draft]:
        idx = self.idx
        header = self.header(path)
        meta = self.meta(path)
        starts = [blk.a for blk in blocks]
        units = partition(starts, a, b)

        def split(ua: int, ub: int) -> list[Draft]:
            # the range holds one big block, maybe after small ones held back (a heading):
            # cut it between its children, the first child taking the lines before it
            k = bisect_left(starts, ub) - 1
            blk = blocks[k] if k >= 0 and blocks[k].a >= ua else (blocks[0] if blocks else None)
            kids = [c for c in blk.children if c.a < ub] if blk is not None else []
            if kids and (len(partition([c.a for c in kids], ua, ub)) > 1 or kids[0].children):
                return self.blocks(kids, ua, ub, path)
            return window_drafts(idx, ua, ub, header, meta, overlap=True, prose=True)

        return pack_units(idx, units, header, meta, split)


def markdown_drafts(idx: LineIndex, path: str) -> list[Draft]:
    md = _Markdown(idx, path)
    fm = front_matter_lines(idx)
    drafts: list[Draft] = []
    if fm:
        meta = {"heading_path": [], "front_matter": True}
        drafts.extend(window_drafts(idx, 0, fm, md.header([]), meta, overlap=True))
    body = "\n" * fm + idx.text[idx.end_of(fm - 1) :] if fm else idx.text
    body = _LONE_CR.sub(" ", body)
    if fm >= idx.n:
        return drafts
    blocks = _blocks(body)
    if not blocks:
        if idx.first_nonblank(fm, idx.n) is not None:
            drafts.extend(window_drafts(idx, fm, idx.n, md.header([]), md.meta([]), overlap=True))
        return drafts
    drafts.extend(md.sections(_sections(blocks, fm, idx.n)))
    return drafts
