"""Markdown chunks by sections: each heading starts one, its path of headings is the header.

markdown-it-py (block rules only: inline parsing is not needed and costs more than half the
time) gives every block its line range. Sections that fit are merged with their neighbours
under the headings they share; a section that does not fit is cut between its blocks (a list
or quote between its items, a table between its rows), so a code fence stays whole unless it
alone exceeds the budget, in which case it, like an overlong paragraph, becomes windows.

Front matter (YAML between `---` lines at the very start, read by `chinvex.files.frontmatter`) is
the document's properties, not a passage: its lines are in no chunk, and a summary of it (title,
aliases, tags, description, other short properties; dates are left to the document's metadata)
ends every chunk's header, so a search for a tag or a title finds the note's own passages
instead of a chunk of YAML. Each chunk carries it, as each conversation chunk carries its
thread's title: whichever passage matches the question also matches what the note is about.
Front matter whose YAML cannot be read is prose like the rest (it joins the first section), and
a note that holds nothing but properties is chunked as it is (it has no other text to be found
by).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt

from .base import (
    HEADER_PART_TOKENS,
    TAIL_JOIN_RATIO,
    Draft,
    LineIndex,
    build_header,
    pack_units,
    partition,
    text_budget,
    window_drafts,
)
from .tokens import truncate_to_tokens

_LONE_CR = re.compile(r"\r(?!\n)")
_SPACE = re.compile(r"\s+")
_HASH = re.compile(r"(?:^|(?<=[\s,]))#(?=\w)")

PROPERTIES_TOKENS = 40
"""Most tokens the front matter summary adds to a header (on top of the path and headings):
enough for a title, a few tags and a one-line description, while a chunk keeps about
254 - 48 - 41 = 165 tokens of text (41: the " · " before the summary)."""
_SUMMARY_CHARS = 2000
"""Characters looked at for the summary: far more than PROPERTIES_TOKENS tokens can hold, and it
keeps a front matter of thousands of keys or a megabyte-long value from costing more."""
_TITLE_KEYS = ("title", "name")
_LIST_KEYS = (("aliases", ("aliases", "alias")), ("tags", ("tags", "tag", "keywords")))
_DESCRIPTION_KEYS = ("description", "summary")
_LEFT_OUT = frozenset({
    # dates are the document's created/updated metadata (filters), not words to search for
    "created", "updated", "date", "modified", "created_at", "updated_at", "last_modified",
    "date_created", "date_modified", "create_time", "update_time", "lastmod",
    # presentation settings say nothing about the content
    "cssclasses", "cssclass", "publish", "permalink", "layout", "template", "draft", "weight",
})


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


@dataclass(frozen=True)
class FrontMatterBlock:
    lines: int = 0  # lines the block spans at the start of the text (0: none)
    properties: bool = False  # read as a mapping: its lines are in no chunk
    summary: str = ""  # the properties as one header line ("" when there are none to show)


def front_matter_block(idx: LineIndex) -> FrontMatterBlock:
    """Where the front matter of `idx.text` ends and what it says, as the chunker uses it."""
    from chinvex.files.frontmatter import split_front_matter  # PyYAML only when a text has front matter

    if not idx.text.startswith(("---", "\ufeff---")):
        return FrontMatterBlock()
    fm = split_front_matter(idx.text)
    if not fm.present:
        return FrontMatterBlock()
    lines = idx.line_of(fm.end - 1) + 1
    if not fm.is_properties:
        return FrontMatterBlock(lines)
    return FrontMatterBlock(lines, True, properties_summary(fm.data))


def _flat(value: Any) -> str:
    """A scalar, or a list of scalars joined by commas; "" for anything else (mappings, nested
    lists, booleans and nulls say nothing searchable)."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, (str, int, float)):
        return _SPACE.sub(" ", str(value)).strip()
    if isinstance(value, list):
        return ", ".join(item for item in (_flat(v) for v in value if not isinstance(v, list)) if item)
    return ""


def properties_summary(data: dict[str, Any]) -> str:
    """The front matter as one line for chunk headers (pure): title, aliases, tags,
    description, then other short properties as `key: value`, at most PROPERTIES_TOKENS
    tokens, most telling first, so that a cut loses the least."""
    keyed: dict[str, Any] = {}
    for key, value in data.items():
        keyed.setdefault(str(key).strip().lower(), value)
    used: set[str] = set()
    items: list[str] = []

    def first(keys: tuple[str, ...]) -> str:
        used.update(keys)
        return next((text for key in keys if (text := _flat(keyed.get(key)))), "")

    title = first(_TITLE_KEYS)
    if title:
        items.append(title)
    for label, keys in _LIST_KEYS:
        used.update(keys)
        names = [_flat(keyed.get(key)) for key in keys]
        joined = _HASH.sub("", ", ".join(name for name in names if name))  # `#tag` is `tag`
        if joined:
            items.append(f"{label}: {joined}")
    description = first(_DESCRIPTION_KEYS)
    if description:
        items.append(description)
    for key, value in keyed.items():
        if sum(map(len, items)) > _SUMMARY_CHARS:
            break  # already more than the budget can hold: the rest would be cut anyway
        if key in used or key in _LEFT_OUT or not key:
            continue
        text = _flat(value)
        if text:
            items.append(truncate_to_tokens(f"{key}: {text[:_SUMMARY_CHARS]}", HEADER_PART_TOKENS))
    summary = _SPACE.sub(" ", " · ".join(items)).strip()
    return truncate_to_tokens(summary[:_SUMMARY_CHARS], PROPERTIES_TOKENS) if summary else ""


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
    def __init__(self, idx: LineIndex, path: str, properties: str = "") -> None:
        self.idx = idx
        self.path = path
        self.properties = properties

    def header(self, heading_path: list[str]) -> str:
        base = build_header(self.path, tuple(heading_path), " › ")
        # " · " like code headers: the path stays the first part (evidence display reads it)
        return f"{base} · {self.properties}" if self.properties else base

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
    fm = front_matter_block(idx)
    md = _Markdown(idx, path, fm.summary)
    # The block is blanked for markdown-it whatever it holds: its closing `---` would make a
    # setext heading of the line above it.
    body = "\n" * fm.lines + idx.text[idx.end_of(fm.lines - 1) :] if fm.lines else idx.text
    body = _LONE_CR.sub(" ", body)
    start = fm.lines if fm.properties else 0
    if idx.first_nonblank(start, idx.n) is None:
        # nothing but properties: they are all there is to find the document by
        return window_drafts(idx, 0, idx.n, md.header([]), md.meta([]), overlap=True)
    blocks = _blocks(body)
    if not blocks:
        return window_drafts(idx, start, idx.n, md.header([]), md.meta([]), overlap=True)
    return md.sections(_sections(blocks, start, idx.n))
