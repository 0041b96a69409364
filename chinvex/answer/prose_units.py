"""Prose evidence (notes, docs, markdown) cut into units: sentences grouped by paragraph, each
analysed with the heading above it, table rows as records, fenced code lines on their own."""

from __future__ import annotations

import re

from chinvex.answer.units import Unit, asks, form_of, sentence_form, sentences
from chinvex.retrieval.lexical import index_text

_LIST_ITEM = re.compile(r"^\s{0,6}(?:[-*+]|\d+[.)])\s+")
_MARKDOWN_PREFIX = re.compile(r"^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s*)")
_SENTENCE_CLOSE = re.compile(r"[.!?:;]['\"”’)\]*_`]*$")


def begun_before(sentence: str) -> bool:
    """Whether a chunk's first sentence is the tail of one its chunk does not hold: it starts
    in lower case, or closes a bracket it never opened ("…keeps the first commits)")."""
    return sentence[:1].islower() or sentence.count(")") > sentence.count("(")


def ends_after(sentence: str) -> bool:
    """Whether a paragraph's last sentence at the end of its chunk runs on past it: it has no
    closing punctuation, or opens a bracket it never closes."""
    return not _SENTENCE_CLOSE.search(sentence) or sentence.count("(") > sentence.count(")")


def _fragments(found: list[str], lines: list[str], first: int, last: int) -> list[bool]:
    """For each sentence of the paragraph on lines `first`..`last` of its chunk: is it a piece
    cut by the chunk's edge? Only the first sentence of a paragraph opening the chunk and the
    last of one closing it can be (a list item is read as whole)."""
    list_item = bool(_LIST_ITEM.match(lines[first - 1]))
    cut_after = not list_item and not any(line.strip() for line in lines[last:])
    return [(first == 1 and i == 0 and not list_item and begun_before(sentence))
            or (cut_after and i == len(found) - 1 and ends_after(sentence)) for i, sentence in enumerate(found)]


def prose_units(text: str, chunk: int) -> list[Unit]:
    """Sentences of paragraphs (wrapped lines joined first), grouped into blocks: a blank line,
    a heading or a list item starts a new one. The nearest heading is analysed with each
    sentence under it ("### Retrieval" tells what the list below it is about)."""
    units: list[Unit] = []
    block = 0
    pending: list[tuple[int, str]] = []
    heading = ""
    lines = text.splitlines()

    def flush() -> None:
        """The paragraph so far as sentences. A chunk cut inside a paragraph (at its first or
        last line) holds a piece of a sentence there: a fragment, which states nothing."""
        if not pending:
            return
        first, last = pending[0][0], pending[-1][0]
        body = " ".join(part for _, part in pending)
        # a checklist item, a listing's entry, a usage line: the form of the line it starts on
        form = form_of(lines[first - 1]) if len(pending) == 1 else ""
        pending.clear()
        found = sentences(body)
        for sentence, fragment in zip(found, _fragments(found, lines, first, last)):
            units.append(Unit(chunk=chunk, order=len(units), text=sentence,
                              analysed=index_text(f"{sentence} {heading}".strip()),
                              kind="prose", question=asks(sentence), line_start=first, line_end=last,
                              block=block, form="fragment" if fragment else form or sentence_form(sentence)))

    in_fence = False
    language = ""
    introduced: Unit | None = None  # the sentence ending in ":" that the open fence follows
    fenced: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            flush()
            in_fence = not in_fence
            if in_fence:
                last = units[-1] if units else None
                introduced = last if last is not None and not last.heading and last.text.rstrip().endswith(":") \
                    and last.line_end is not None and last.line_end >= number - 2 else None
                fenced = [line]
                language = stripped.lstrip("`~").strip().lower()
            elif introduced is not None:
                # "Codex — add to `~/.codex/config.toml`:" is answered by the block it introduces
                introduced.extent = "\n".join([*fenced, line])
                introduced = None
            continue
        if in_fence:
            fenced.append(line)
            if stripped:
                units.append(Unit(chunk=chunk, order=len(units), text=stripped, analysed=index_text(stripped),
                                  kind="prose", question=asks(stripped), line_start=number,
                                  line_end=number, block=block, form=form_of(stripped, language), fenced=True))
            continue
        if not stripped or set(stripped) <= set("-=*_|: "):
            flush()
            block += 1
            continue
        if stripped.startswith("#"):
            flush()
            block += 1
            heading = _MARKDOWN_PREFIX.sub("", line).strip().strip("#").strip()
            units.append(Unit(chunk=chunk, order=len(units), text=heading, analysed=index_text(heading),
                              kind="prose", heading=True, line_start=number, line_end=number, block=block))
            continue
        if stripped.startswith("|"):
            # a table row is a record of its own, not a clause of a sentence spanning the table
            flush()
            block += 1
            row = " | ".join(cell.strip() for cell in stripped.strip("|").split("|"))
            units.append(Unit(chunk=chunk, order=len(units), text=row, analysed=index_text(f"{row} {heading}".strip()),
                              kind="prose", line_start=number, line_end=number, block=block))
            continue
        if _LIST_ITEM.match(line):
            flush()
            block += 1
        pending.append((number, _MARKDOWN_PREFIX.sub("", line).strip()))
    flush()
    return units
