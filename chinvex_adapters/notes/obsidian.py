"""Obsidian conventions read from a note body: inline #tags, [[wikilinks]], the first H1.

Code is not prose: fenced blocks and inline code spans are blanked out first (same length, so
offsets are preserved) so that `#include` or `a[[0]]` inside code are neither tags nor links.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# A fence opens with 3+ backticks or tildes (up to 3 spaces of indent) and closes with a run
# of the same character at least as long; an unclosed fence runs to the end of the note.
_FENCE_OPEN = re.compile(r"^[ ]{0,3}(`{3,}|~{3,})[^\n]*$", re.MULTILINE)
# A code span closes with a backtick run of the same length within its paragraph.
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(?:(?!\r?\n[ \t]*\r?\n).)+?(?<!`)\1(?!`)", re.DOTALL)
_COMMENT = re.compile(r"%%.*?%%|<!--.*?-->", re.DOTALL)

# Obsidian tags: after whitespace or line start (so not `[[Note#Heading]]`, `(#anchor)` or a
# URL fragment); letters, digits, _ - / ; not only digits. `# Heading` has a space: no tag.
_TAG = re.compile(r"(?<!\S)#(\w[\w/\-]*)")
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_NOT_NEWLINE = re.compile(r"[^\r\n]")
_H1_START = re.compile(r"^[ ]{0,3}#[ \t]", re.MULTILINE)
_H1 = re.compile(r"[ ]{0,3}#[ \t]+(.+?)[ \t]*(?:[ \t]#+[ \t]*)?\r?$")


def _blank(match_text: str) -> str:
    return _NOT_NEWLINE.sub(" ", match_text)


def mask_code(text: str) -> str:
    """`text` with code blocks, inline code and comments replaced by spaces (newlines kept)."""
    parts: list[str] = []
    pos = 0
    while True:
        opening = _FENCE_OPEN.search(text, pos)
        if opening is None:
            break
        fence = opening.group(1)
        closing = re.compile(
            rf"^[ ]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*\r?$", re.MULTILINE
        ).search(text, opening.end())
        end = closing.end() if closing else len(text)
        parts.append(_mask_inline(text[pos : opening.start()]))
        parts.append(_blank(text[opening.start() : end]))
        pos = end
    parts.append(_mask_inline(text[pos:]))
    return "".join(parts)


def _mask_inline(text: str) -> str:
    for pattern in (_INLINE_CODE, _COMMENT):
        text = pattern.sub(lambda m: _blank(m.group(0)), text)
    return text


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


def inline_tags(masked_body: str) -> list[str]:
    """`#tag` and `#parent/child` outside code, in order of appearance, without '#'."""
    tags = []
    for match in _TAG.finditer(masked_body):
        tag = match.group(1).rstrip("/-")
        if tag and not tag.replace("/", "").replace("_", "").replace("-", "").isdigit():
            tags.append(tag)
    return _dedupe(tags)


def wikilinks(masked_body: str) -> list[str]:
    """Targets of [[Note]], [[Note|alias]], [[Note#Heading]], [[Note#^block]], ![[embed]].

    Links to a heading of the same note (`[[#Heading]]`) have no target and are left out.
    """
    targets = []
    for match in _WIKILINK.finditer(masked_body):
        inner = match.group(1)
        target = inner.split("|", 1)[0].split("#", 1)[0].rstrip("\\").strip()
        targets.append(target)
    return _dedupe(targets)


def first_h1(masked_body: str, body: str) -> str | None:
    """The text of the first `# Heading` outside code: the marker is looked for in the masked
    text, the heading read from the original line so inline code in it survives."""
    for marker in _H1_START.finditer(masked_body):
        line_end = body.find("\n", marker.start())
        line = body[marker.start() : line_end if line_end >= 0 else len(body)]
        match = _H1.match(line)
        if match is not None and match.group(1).strip():
            return match.group(1).strip()
    return None


def string_list(value: Any) -> list[str]:
    """A front matter list property (`tags`, `aliases`) that may also be a single string:
    'a, b' or 'a b' for tags is split; each item loses a leading '#'."""
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = re.split(r"[,\s]+", value)
    elif isinstance(value, list):
        items = value
    else:
        items = [value]
    out = []
    for item in items:
        if item is None or isinstance(item, (dict, list)):
            continue
        text = str(item).strip().lstrip("#").strip()
        if text:
            out.append(text)
    return _dedupe(out)


def alias_list(value: Any) -> list[str]:
    """Aliases are names and may contain spaces or commas only when given as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return _dedupe([part.strip() for part in value.split(",")])
    if isinstance(value, list):
        return _dedupe([str(v).strip() for v in value if v is not None and not isinstance(v, (dict, list))])
    return [str(value)]
