"""What a question asks for: its kind of answer, the things it names, whether it is about tests.

An answer is judged by what the question expects. "When" wants a date, "how many" a number,
"who" a person, "where" a place, "why" a reason; a sentence that shares every word of the
question but holds none of that does not answer it ("I went camping" does not say when).
The kind of answer is read from the question's first words, with the common rewrites ("what
year", "in which city", "how long ago"); anything else expects a thing or an explanation, which
any statement can give.

Pure functions over text; no index, no model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from chinvex.answer.text import content_words

_AUXILIARIES = frozenset(
    "is are was were do does did has have had can could would will should shall may might must am".split()
)
_TIME_NOUNS = frozenset("year years month months day days date dates time week weekend".split())
_PLACE_NOUNS = frozenset(
    """city cities country countries place places town towns state states park parks restaurant
    restaurants store stores school schools venue location locations""".split()
)
_NAME_NOUNS = frozenset(
    """environment variable variables flag flags function functions command commands module modules file
    files parameter parameters endpoint endpoints""".split()
)
"""A question asking which of these wants a name from the code ("which environment variables…",
"what function…"): an identifier, a flag, a path. Not nouns that just as often mean something
else in notes and chats: a class, a table, a key, an option, an argument."""
_TITLE_NOUNS = frozenset(
    """book books novel novels movie movies film films song songs album albums show shows
    podcast podcasts poem poems""".split()
)
"""A question asking which of these wants a title ("What book is Jon reading?"): people write
titles in quotes or emphasis, so a sentence holding one names the thing asked for."""
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december")
_PERIOD = re.compile(
    r"\b(?:in|during|on|of|since|by)\s+(?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?:early\s+|late\s+|mid-?)?(?P<month>" + "|".join(_MONTH_NAMES) +
    r")(?:,?\s+(?P<year>(?:19|20)\d\d))?\b|\bin\s+(?P<only_year>(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_FUTURE = re.compile(r"\b(?:plan(?:s|ned|ning)?|going\s+to|gonna|will|intend\w*|hop(?:e|es|ing)\s+to|next|"
                     r"upcoming|future|want(?:s)?\s+to)\b", re.IGNORECASE)
_HOW_TO = re.compile(r"^\s*(?:how\s+(?:do|can|should|would)\s+(?:i|we|you|one)\b|how\s+to\b|"
                     r"where\s+do\s+(?:i|we|you)\b|what\s+do\s+(?:i|we|you)\s+need\s+to\b)", re.IGNORECASE)
_TEST_WORDS = re.compile(r"\b(?:tests?|testing|tested|pytest|unittest|fixtures?|mocks?|benchmarks?|bench|"
                         r"golden|datasets?|samples?|eval(?:uation)?\s+sets?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Question:
    text: str
    wh: str
    """The question word: when, where, who, why, how, how many, how long, how often, what, which,
    yesno (starts with an auxiliary: "Did she...?"), or "topic" (a phrase, not a question)."""
    expects: str
    """date, place, person, number, duration, frequency, reason, manner, name (of something in
    code: a variable, a function, a flag, a file), title (of a book, a song, a film…), or thing."""
    words: tuple[str, ...]
    """Content words in order (text.content_words)."""
    about_tests: bool
    """The question is about tests, fixtures or benchmarks: those are then the thing itself."""
    period: tuple[int | None, int | None] = (None, None)
    """(year, month) the question confines itself to ("in July", "in 2022"), if any."""
    how_to: bool = False
    """The question asks how to do something oneself ("How do I register…", "how to install…"):
    its answer is in the docs, which say it to a user, more than in the code that does it."""
    future: bool = False
    """The question asks about a plan or intention ("When is she planning to...", "going to").
    Otherwise a "when did" question is about something that happened, not something planned."""
    kind_noun: str = ""
    """The noun after "what"/"which" that names the kind of answer ("book" in "What book…")."""
    also: tuple[tuple[str, str], ...] = ()
    """(wh, expects) of each further thing asked after "and" ("…and how long did it last?")."""
    many: bool = False
    """It asks for several things ("What activities…", "Which cities…"): the answer gathers them."""
    asked_by: tuple[str, ...] = ()
    """The words a question asks by rather than about: the measure of "how long / old / far…" and
    the verb of a duration ("last", "take"). A passage need not say them ("failed for 47
    minutes" answers "How long did the outage last?"), though one that does ("lasted 47 minutes",
    "for a long time", "three years old") says more of the question."""


def analyse_question(text: str) -> Question:
    low = text.strip().lower()
    tokens = re.findall(r"[a-z0-9']+", low)
    wh, expects = _kind(tokens)
    kind_noun = ""
    if expects == "thing":
        asked = re.search(r"\b(?:which|what)\s+(\w+)", low)
        noun = kind_noun = asked.group(1) if asked else ""
        if noun in _PLACE_NOUNS:
            expects = "place"
        elif noun in _NAME_NOUNS:
            expects = "name"
        elif noun in _TIME_NOUNS:
            expects = "date"
        elif noun in _TITLE_NOUNS:
            expects = "title"
    also = _also(low)
    words = tuple(content_words(text))
    return Question(text=text, wh=wh, expects=expects, words=words, kind_noun=kind_noun,
                    about_tests=bool(_TEST_WORDS.search(text)), period=_period(text),
                    how_to=bool(_HOW_TO.search(text)),
                    future=bool(_FUTURE.search(text)), also=also, many=_many(low, wh),
                    asked_by=tuple(w for w in words if _asks_with(w.lower(), tokens, expects, also)))


def _kind(tokens: list[str]) -> tuple[str, str]:
    """(wh, expects) from a question's first words."""
    first = tokens[0] if tokens else ""
    second = tokens[1] if len(tokens) > 1 else ""
    if first == "when" or (first in ("what", "which") and second in _TIME_NOUNS):
        return "when", "date"
    if first == "how" and second == "long":
        return ("when", "date") if "ago" in tokens else ("how long", "duration")
    if first == "how" and second in ("many", "much"):
        return "how many", "number"
    if first == "how" and second in ("far", "big", "old", "large", "small", "tall", "heavy", "fast"):
        return "how many", "duration"  # a measure: a number with its unit
    if first == "how" and second in ("often", "frequently"):
        return "how often", "frequency"
    if first == "where":
        return "where", "place"
    if first in ("who", "whom", "whose"):
        return "who", "person"
    if first == "why":
        return "why", "reason"
    if first == "how":
        return "how", "manner"
    if first in ("what", "which"):
        return first, "thing"
    if first in _AUXILIARIES:
        return "yesno", "thing"
    return "topic", "thing"


_MEASURES = frozenset("long far big old large small tall heavy fast".split())
_DURATION_VERBS = frozenset("last lasts lasted take takes took taken".split())


def _asks_with(word: str, tokens: list[str], expects: str, also: tuple[tuple[str, str], ...]) -> bool:
    """Is `word` part of how the question asks rather than what it asks about: the measure after
    "how" ("long", "old"), or the verb of a duration ("last", "take")?"""
    if word in _MEASURES and any(a == "how" and b == word for a, b in zip(tokens, tokens[1:])):
        return True
    durations = expects == "duration" or any(kind == "duration" for _, kind in also)
    return durations and word in _DURATION_VERBS


_SECOND_ASK = re.compile(r"\b(?:and|but)\s+(?P<ask>when|where|who|why|how\s+(?:long|many|much|often|far|old))\b")


def _also(low: str) -> tuple[tuple[str, str], ...]:
    """What a question asks after "and" besides its first ask: "When was the outage and how long
    did it last?" asks a date and a duration."""
    found = []
    for match in _SECOND_ASK.finditer(low):
        kind = _kind(match.group("ask").split())
        if kind not in found:
            found.append(kind)
    return tuple(found)


_NOT_PLURAL = frozenset("""does was is has this his its status thus bus gas news series species lens
    process access address business class glass boss less plus yours ours hers theirs""".split())


def _many(low: str, wh: str) -> bool:
    """Does the question ask for several things ("What activities has she done?", "Which LGBTQ+
    events…"): one of the two words after "what"/"which" is a plural noun. After a singular noun
    of a kind (a song, a flag, a city), an -s word is its verb ("Which flag makes ingest
    quiet?", "Which song motivates her?") unless an auxiliary follows it ("What movie genres
    does she like?")."""
    if wh not in ("what", "which"):
        return False
    tokens = re.findall(r"[a-z0-9'+]+(?:-[a-z0-9'+]+)*", low)  # "follow-ups" is one word
    words = tokens[1:3]
    for at, word in enumerate(words):
        if word in _AUXILIARIES or word in _NOT_PLURAL:
            return False
        if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "'s", "us", "is")):
            after = tokens[3] if len(tokens) > 3 else ""
            return not (at == 1 and words[0] in _SINGULAR_KINDS and after not in _AUXILIARIES)
    return False


_SINGULAR_KINDS = frozenset(n for n in _NAME_NOUNS | _PLACE_NOUNS | _TITLE_NOUNS | _TIME_NOUNS
                            if not n.endswith("s") and n != "environment")
"""Kind nouns in the singular ("environment" only ever qualifies "variables" here)."""


def _period(text: str) -> tuple[int | None, int | None]:
    match = _PERIOD.search(text)
    if match is None:
        return (None, None)
    if match.group("only_year"):
        return (int(match.group("only_year")), None)
    year = int(match.group("year")) if match.group("year") else None
    return (year, _MONTH_NAMES.index(match.group("month").lower()) + 1)
