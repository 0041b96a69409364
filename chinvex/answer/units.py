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
    fenced: bool = False
    """A line of a fenced code block in prose (a command, a config line): an answer shows it as
    code, not as quoted words."""
    form: str = ""
    """What a piece of text that is not a statement is ("tool call", "tool output", "patch", "listing",
    "usage", "checklist", "request", "fragment"; "" for a statement): it answers only questions about it
    (`asks_about_form`); a fragment (a sentence cut by its chunk's edge) answers none."""


def asks(sentence: str) -> bool:
    """Whether a sentence asks (ends in "?", past closing quotes and emphasis)."""
    return sentence.rstrip(" *_\"'”’)`").endswith("?")


_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:(?i:e\.g|i\.e|vs|approx|ca|cf|dr|mr|mrs|ms|prof|st|mt|jr|sr|inc|ltd|corp|dept|incl|resp)|[A-Z])\.$")
_NUMBERED = re.compile(r"(?:^|[\s(])(?i:no|nos|fig|figs|eq|vol|ch|sec|p|pp|v|ver|ca|min|max)\.$")
"""Words that end in a full stop without ending a sentence ("approx. 47 minutes", "e.g. Python",
"Dr. Smith", "J. Smith"): a sentence is never cut after one, so no number, name or version that
follows is cut from what it belongs to."""


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (a bracketed aside at the end stands alone), never after an
    abbreviation or an initial."""
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        before = text[start:match.start()].rstrip("\"'”’)]")
        if _ABBREVIATION.search(before) or (_NUMBERED.search(before) and text[match.end():][:1].isdigit()):
            continue
        out.append(text[start:match.start()])
        start = match.end()
    out.append(text[start:])
    return [s.strip() for s in out if s and s.strip()]


CHECKBOX = re.compile(r"^\s*(?:[-*+]\s+)?\[([ xX])\]\s+")
"""A checklist item's box, its mark captured; the item is what follows it."""
_CHECKBOX_STATES = {
    " ": "open remaining left pending todo unchecked unfinished outstanding incomplete undone",
    "x": "done completed complete finished checked closed resolved ticked",
}
"""What a checklist item's box says of it, in the words a question asks with ("Which follow-ups
are still open?", "What is done?"): an unticked box states that the item is open."""


def checkbox_words(text: str) -> str:
    """The state words a checklist item's box states ("" for text that is no checklist item)."""
    found = CHECKBOX.match(text)
    return _CHECKBOX_STATES[found.group(1).lower()] if found else ""
_PATCH = re.compile(r"^\s*(?:diff\s+--git\s|@@\s.*@@|\+\+\+\s|---\s+a/|index\s+[0-9a-f]{6,}\.\.)")
_LISTING = re.compile(r"^\s*(?:[├└│|`]\S*[─-]*\s*\S+|[dl-][rwx-]{9}\s.*|(?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]*"
                      r"|[\w@-]+(?:\.[\w-]+)+(?:\s{2,}[\w@-]+(?:\.[\w-]+)+)*)\s*$")
_SYNOPSIS = re.compile(r"^\s*(?:[-*+]\s+|\d+\.\s+)?`[a-z][\w.-]*(?:\s[^`\n]*)?\s\[-{1,2}\w")
"""A command synopsis opening a line or a sentence (`` `chinvex pack TASK [--budget-tokens N]`
searches…``): what the command takes, not an answer to what it does inside."""
_USAGE = re.compile(r"^\s*(?:(?i:usage):\s|\$\s+[a-z][\w.-]*(?:\s|$)|>\s+[a-z][\w-]*\s+-)")
_TOOL_ARGUMENTS = re.compile(r"^\s*(?:input|output):\s|\"(?:old_string|new_string|file_path|command|old_str|new_str|"
                             r"pattern|content)\"\s*:")
FORMS = {
    "tool call": "tool call calls edit edited edits editing change changed changes replace replaced command "
                 "commands ran run argument arguments",
    "patch": "patch patches diff diffs change changed changes edit edited replace replaced commit line lines",
    "listing": "file files folder folders directory directories listing list tree contain contains path paths",
    "usage": "usage flag flags option options argument arguments syntax command commands invoke run",
    "checklist": "checklist todo task tasks step steps item items remaining left open done pending check",
    "tool output": "output outputs print printed prints error errors fail fails failed failing failure log logs "
                   "result results return returns returned show showed shows report reports reported warning "
                   "warnings traceback exception stdout stderr exit status install installed version",
    "request": "ask asked asking request requested requests want wanted prompt prompted instruct instructed "
               "told tell task tasks constraint constraints requirement requirements",
    "fragment": "",
}
"""Words of a question asking about each form of text that is not a statement."""
EXPLAINED = frozenset({"manner", "reason"})
"""Kinds of answer a request cannot give: "Add jitter to the backoff" says what was wanted, not how
it was done nor why (`forms_asked`: a request answers every other question)."""


def sentence_form(sentence: str) -> str:
    """The form a sentence of a wrapped paragraph has on its own: a command synopsis ("usage")."""
    return "usage" if _SYNOPSIS.match(sentence) else ""


def form_of(line: str, fence: str = "") -> str:
    """The form of a line that is not a statement ("" for one that is): a checklist item, a line
    of a patch (or of a fenced `diff` block), a file listing's entry, a CLI usage or prompt line,
    or tool-call arguments."""
    if _TOOL_ARGUMENTS.search(line):
        return "tool call"
    if CHECKBOX.match(line):
        return "checklist"
    if fence in ("diff", "patch") or _PATCH.match(line):
        return "patch"
    if _USAGE.match(line) or _SYNOPSIS.match(line):
        return "usage"
    if _LISTING.match(line):
        return "listing"
    return ""
