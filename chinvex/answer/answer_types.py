"""Does a sentence hold the kind of thing a question asks for (a date, a number, a place...)?

Surface patterns, on purpose: they are cheap, predictable, and only ever *add* to a sentence's
score or let it through; they never invent an answer. A "when" question is served by a sentence
with a date or a time expression ("last week", "two days ago", "in 2022"), a "how many" question
by a number, "who" by a name or a kinship/role noun, "where" by a place noun or a capitalised
name after a locative preposition, "why" by a causal connective.
"""

from __future__ import annotations

import re

_MONTH = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december|"
          r"jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)")
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
_SPAN = (r"(?:year|month|week|weekend|day|night|hour|minute|decade|summer|winter|spring|fall|autumn|"
         r"morning|evening|afternoon)s?")
_COUNT_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
               r"forty|fifty|hundred|thousand|million|couple|few|several)")

DATE = re.compile(
    rf"\b(?:(?:19|20)\d\d|{_MONTH}\b|{_WEEKDAY}\b|yesterday|today|tonight|tomorrow|"
    rf"(?:last|next|this|past|previous|coming)\s+(?:{_SPAN}|{_WEEKDAY})|"
    rf"(?:\d+|{_COUNT_WORD}|a|an)\s+{_SPAN}\s+ago|ago\b|recently|lately|"
    rf"\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?|\d{{4}}-\d\d-\d\d)",
    re.IGNORECASE,
)
NUMBER = re.compile(rf"\b(?:\d+(?:[.,]\d+)?|{_COUNT_WORD}|dozens?|hundreds|thousands|once|twice)\b", re.IGNORECASE)
DURATION = re.compile(
    rf"\b(?:\d+(?:\.\d+)?\s*(?:seconds?|secs?|milliseconds?|ms)\b|(?:\d+|{_COUNT_WORD}|a|an)\s+(?:more\s+)?{_SPAN}|since\s+(?:(?:19|20)\d\d|{_MONTH}|i|we|\w+ing)\b|"
    rf"for\s+(?:ages|years|months|weeks|a\s+while|a\s+long\s+time)|all\s+(?:my|his|her|our|their)\s+life)",
    re.IGNORECASE,
)
FREQUENCY = re.compile(
    r"\b(?:every|daily|weekly|monthly|yearly|annually|once|twice|times\s+a|often|usually|always|"
    r"sometimes|regularly|each)\b",
    re.IGNORECASE,
)
REASON = re.compile(
    r"\b(?:because|cause|since|so\s+that|so|due\s+to|thanks\s+to|that's\s+why|reasons?|inspired|inspires?|"
    r"inspiration|motivat\w*|made\s+me|makes\s+me|wanted\s+to|want\s+to|in\s+order\s+to|helps?\s+me|helped|"
    r"led\s+me|as\s+a\s+way|to\s+\w+)\b",
    re.IGNORECASE,
)
PLACE_WORDS = (r"(?:park|beach|museum|city|town|country|cafe|café|restaurant|school|church|shelter|cent(?:er|re)|"
               r"studio|store|shop|lake|mountains?|library|gallery|home|house|office|hospital|festival|"
               r"conference|camp|forest|woods|trail|island|coast|river|street|club|gym|bar|market|hotel|"
               r"airport|university|college|zoo|garden|department|company|farm|breeder|pond|backyard|yard|"
               r"kitchen|room|bedroom|slipper|car|field|stadium|theater|theatre|hall|bookstore|"
               r"neighbou?rhood|village|county|state|province|region|abroad|downtown|folder|directory|file|"
               r"module|repo(?:sitory)?)")
"""The nouns of places a "where" answer names. One list for the gate (`holds`: does a sentence hold
a place?) and for the span cut from it (spans.py): a sentence the span reader finds a place in
("in room Orion") must not be refused first for holding none."""
_PLACE_NOUN = re.compile(rf"\b{PLACE_WORDS}\b", re.IGNORECASE)
_PLACE_NAME = re.compile(r"\b(?:in|at|to|from|near|visit(?:ed|ing)?|around)\s+(?:the\s+)?[A-Z]")
_SPOT = re.compile(r"\b(?:in|inside|under|behind|beneath|next\s+to)\s+(?:my|his|her|their|our|your|the)\s+"
                   r"(?!(?:life|lives|way|end|past|future|meantime|morning|evening|afternoon|night|day|week|"
                   r"weekend|month|year|moment|mood|process|beginning|middle|first|last|same)\b)[a-z]+")
_PERSON_NOUN = re.compile(
    r"\b(?:mom|mum|dad|mother|father|parents?|sister|brother|siblings?|friends?|buddy|kids?|son|daughter|"
    r"children|husband|wife|partner|boyfriend|girlfriend|grandma|grandpa|grandmother|grandfather|mentor|"
    r"teacher|boss|colleague|coworker|neighbou?r|cousin|aunt|uncle|family|team|author|artist|singer|band|"
    r"maintainer|user|developer)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<!^)(?<![.!?:]\s)\b[A-Z][a-z]+")
CODE_SPAN = re.compile(r"`[^`\n]*`")
"""A `code span` of prose: a name, not a statement (statements.words_only), never cut in two
(compose), and never a person's name (`holds`)."""
_LEADING_MARKS = re.compile(r"^[\W_]+")
CODE_NAME = re.compile(r"`[^`\n]+`|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|"
                        r"(?<!\w)--[a-z][\w-]*|\b[\w-]+/[\w./-]+|\b\w+\.(?:py|toml|json|md|yaml|yml|sql|js|ts)\b")
"""A name from code: a `code span`, CONSTANT_NAME, snake_case, camelCase, a --flag, a path."""


_TITLE = re.compile(r"[\"“*]\s*[A-Z0-9][^\"”*\n]{0,60}?[\"”*]")
_TITLE_CASE = re.compile(r"(?<!^)(?<![.!?:]\s)\b[A-Z][\w'’]+(?:\s+(?:of|the|and|a|an|in|on|to|for)?\s*[A-Z][\w'’]+)+")
"""A title as people write one: in quotes or emphasis, opening with a capital ("The Lean Startup"),
or two or more capitalised words inside a sentence (I'm reading The Lean Startup)."""


def titles(text: str) -> list[str]:
    """The titles `text` names, as written (without their quotes or emphasis), quoted ones first."""
    quoted = [m.group(0)[1:-1].strip() for m in _TITLE.finditer(text)]
    found = quoted or [m.group(0) for m in _TITLE_CASE.finditer(text.strip())]
    return list(dict.fromkeys(t for t in found if t))


def holds(expects: str, text: str) -> bool:
    """Does `text` contain something of the kind `expects` (question.Question.expects)?"""
    if expects == "date":
        return bool(DATE.search(text))
    if expects == "number":
        return bool(NUMBER.search(text))
    if expects == "duration":
        return bool(DURATION.search(text) or DATE.search(text))
    if expects == "frequency":
        return bool(FREQUENCY.search(text) or NUMBER.search(text))
    if expects == "reason":
        return bool(REASON.search(text))
    if expects == "place":
        return bool(_PLACE_NOUN.search(text) or _PLACE_NAME.search(text) or _SPOT.search(text))
    if expects == "name":
        return bool(CODE_NAME.search(text))
    if expects == "title":
        return bool(titles(text))
    if expects == "person":
        # `VectorStore` names code, not a person; nor does the first word after opening quotes
        words = _LEADING_MARKS.sub("", CODE_SPAN.sub(" ", text))
        return bool(_PERSON_NOUN.search(words) or _NAME.search(words))
    return True
