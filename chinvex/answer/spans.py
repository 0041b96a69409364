"""The span a question asks for, cut from the sentence that answers it.

"How many turtles does Nate have?" is answered by "three", not by "a photo of three turtles
sitting on a rock"; "Where did he hide his bone?" by "Melanie's slipper"; "Did she go?" by "Yes".
The sentence stays with the answer's citation as its quote (compose.py), where a reader checks
the span against the words it was cut from.

A span is read by surface patterns for its kind (answer_types.Question.expects): a count for
"how many", a number with its unit for "how long", a rate for "how often", a named or
prepositional place for "where", a name or a relative for "who". When the sentence holds no
span of the asked kind, `span` returns None and the answer is the clause, as before: a span is
only ever cut from words the source says, never made up. First-person words of a turn are said
in the third person ("my slipper" -> "Melanie's slipper"): the answer speaks of the speaker.
"""

from __future__ import annotations

import re

from chinvex.answer.answer_types import DURATION, PLACE_WORDS
from chinvex.answer.question import Question
from chinvex.answer.text import Stemmer, base_word
from chinvex.answer.units import CHECKBOX
from chinvex.retrieval.lexical import index_text

_COUNT = (r"(?:\d+(?:[.,]\d+)*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
          r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|"
          r"eighty|ninety|hundred|thousand|a\s+couple(?:\s+of)?|a\s+few|several|dozens?|a\s+dozen|once|twice|"
          r"a|an)")
_UNIT = (r"(?:years?|months?|weeks?|days?|hours?|minutes?|mins?|seconds?|secs?|decades?|nights?|weekends?|"
         r"miles?|kilometers?|kilometres?|km|meters?|metres?|feet|foot|pounds?|lbs?|kilos?|kg|dollars?|"
         r"bucks|euros?|percent|%|times?)")
_MEASURE = re.compile(rf"\b(?:about\s+|around\s+|over\s+|almost\s+|nearly\s+|only\s+|just\s+)?{_COUNT}"
                      rf"(?:\s+(?:more|whole|full|long|straight))?\s+{_UNIT}\b(?:\s*\([^()\n]{{1,60}}\))?",
                      re.IGNORECASE)
"""A number with its unit ("47 minutes (14:02 to 14:49 UTC)", "a few years", "two hours")."""
_RATE = re.compile(
    rf"\b(?:(?:{_COUNT}|multiple|many|several)\s+times?|once|twice|every\s+(?:other\s+)?(?:\d+\s+|(?:two|three|four|five|six|ten|few)\s+)?\w+|daily|weekly|monthly|"
    rf"yearly|annually|nightly)(?:\s+(?:a|an|per|each|every)\s+(?:day|week|month|year|night|weekend))?"
    rf"(?:\s+or\s+(?:{_COUNT}\s+times?|once|twice)(?:\s+(?:a|an|per|each|every)\s+(?:day|week|month|year))?)?\b",
    re.IGNORECASE)
_WORD_NUMBER = re.compile(r"\b(?:\d+(?:[.,]\d+)*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                          r"thirteen|fourteen|fifteen|twenty|thirty|forty|fifty|hundred|thousand|once|twice|"
                          r"first|second|third|fourth|fifth)\b", re.IGNORECASE)
_ORDINAL = {"first": "one", "second": "two", "third": "three", "fourth": "four", "fifth": "five"}
_PREPOSITION = r"(?:in|at|to|from|near|on|inside|under|behind|beneath|by|around|into)"
_DETERMINER = r"(?:(?:the|a|an|my|his|her|our|their|your|this|that|some)\s+)"
_NAME_RUN = r"[A-Z][\w'’.-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][\w'’.-]*)*"
_PLACE_NAME = re.compile(rf"\b{_PREPOSITION}\s+(?:the\s+)?(?P<span>{_NAME_RUN})")
_PLACE_PHRASE = re.compile(
    rf"\b(?P<prep>{_PREPOSITION})\s+(?P<span>{_DETERMINER}?(?:[\w'’-]+\s+){{0,3}}?{PLACE_WORDS}\b"
    rf"(?-i:\s+(?!(?:I|A)\b)[A-Z0-9][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)?"  # its name: "in room Orion"
    rf"(?:\s+(?:of|in|for)\s+(?:an?\s+|the\s+)?(?:[\w'’-]+\s+){{0,2}}?[\w'’-]+)?)", re.IGNORECASE)
_RELATIVE = re.compile(
    r"\b(?P<span>(?:my|his|her|our|their)\s+(?:\w+\s+)?(?:mom|mum|dad|mother|father|parents?|sister|brother|"
    r"siblings?|friends?|buddy|kids?|son|daughter|children|husband|wife|partner|boyfriend|girlfriend|grandma|"
    r"grandpa|grandmother|grandfather|mentor|teacher|boss|colleague|coworker|neighbou?r|cousin|aunt|uncle|"
    r"family|team|teammates?|coach))\b", re.IGNORECASE)
_PERSON_NAME = re.compile(r"(?<![\w'’])(?P<span>[A-Z][a-z][\w'’-]*(?:\s+[A-Z][a-z][\w'’-]*){0,2})")
_NOT_PERSON = frozenset("""i i'm i've i'd i'll the a an my we our you your he she they it its this that these
    those there here yes no yeah wow oh hey hi hello thanks thank so but and or if when what who how why where
    just really totally sure great cool awesome omg congrats congratulations love glad happy sorry can could
    would will should did do does have has had been being am is are was were let let's it's that's
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december""".split())
_NEGATION = re.compile(r"\b(?:not|never|no|nope|nothing|none|neither|nor|without|n't|\w+n['’]t|cannot)\b",
                       re.IGNORECASE)
_FIRST_PERSON = {"my": "{}'s", "our": "{}'s", "mine": "{}'s", "me": "{}", "i": "{}", "myself": "{}"}


def third_person(text: str, speaker: str | None) -> str:
    """`text` with the speaker's own "my"/"our" said as theirs ("my slipper" -> "Melanie's
    slipper"); unchanged when no speaker is known."""
    if not speaker:
        return text
    name = speaker.split(" (")[0].strip()

    def swap(match: re.Match[str]) -> str:
        return _FIRST_PERSON[match.group(0).lower()].format(name)

    return re.sub(r"\b(?:my|our|mine|myself)\b", swap, text, flags=re.IGNORECASE)


def yes_or_no(question: Question, sentence: str) -> str:
    """"Yes" when the supporting sentence states what was asked, "No" when it states it negated
    and the question does not (or the other way round)."""
    asked_negated = bool(_NEGATION.search(question.text))
    said_negated = bool(_NEGATION.search(sentence))
    return "No" if asked_negated != said_negated else "Yes"


def span(question: Question, sentence: str, speaker: str | None, terms: frozenset[str],
         stemmer: Stemmer, exclude: frozenset[str] = frozenset()) -> str | None:
    """The span of `sentence` of the kind `question` asks for, or None when it holds none.

    `terms` are the question's topic stems (a count next to the thing counted is the count
    asked for); `exclude` lower-cased names not to give as the answer (the people the
    question is about: "Who did Jon meet?" is not answered by "Jon")."""
    expects, wh = question.expects, question.wh
    if expects == "number" and wh == "how many":
        return _count(sentence, terms, stemmer)
    if expects == "duration":
        return _measure(sentence)
    if expects == "frequency":
        found = _RATE.search(sentence)
        return found.group(0) if found else None
    if expects == "place":
        return _place(sentence, speaker, question, exclude)
    if expects == "person":
        return _person(sentence, speaker, question, exclude)
    return None


def _count(sentence: str, terms: frozenset[str], stemmer: Stemmer) -> str | None:
    """The number next to a word the question counts ("three turtles" for "how many turtles"),
    else the only number the sentence holds; "second" counts as two ("my second tournament")."""
    numbers = [m for m in _WORD_NUMBER.finditer(sentence) if not _in_clock_or_date(sentence, m)]
    if not numbers:
        return None
    for match in numbers:
        after = sentence[match.end():match.end() + 40].split()[:3]
        stems = stemmer.stems(index_text(" ".join(base_word(w) for w in after)))
        if stems & terms:
            return _ORDINAL.get(match.group(0).lower(), match.group(0))
    plain = [m for m in numbers if m.group(0).lower() not in _ORDINAL]
    return plain[0].group(0) if len(plain) == 1 else None


def _in_clock_or_date(sentence: str, match: re.Match[str]) -> bool:
    """Is this number part of a time of day, a year or a calendar date ("14:02", "2023")?"""
    before, after = sentence[max(0, match.start() - 1):match.start()], sentence[match.end():match.end() + 1]
    return before in (":", "/", "-") or after in (":", "/") or bool(re.fullmatch(r"(?:19|20)\d\d", match.group(0)))


def _measure(sentence: str) -> str | None:
    found = _MEASURE.search(sentence)
    if found:
        return found.group(0)
    found = DURATION.search(sentence)
    return found.group(0) if found else None


def _place(sentence: str, speaker: str | None, question: Question, exclude: frozenset[str]) -> str | None:
    """A named place after a preposition ("from Sweden"), else a phrase naming a place or spot
    ("in my slipper" -> "Melanie's slipper"). Names of the question and its people are not it."""
    asked = question.text.lower()
    for match in _PLACE_NAME.finditer(sentence):
        name = re.sub(r"['’]s$", "", match.group("span"))
        if name.lower() not in asked and name.lower().split()[0] not in _NOT_PERSON | exclude:
            return name
    for match in _PLACE_PHRASE.finditer(sentence):
        words = match.group("span")
        if words.lower() not in asked:
            prep = match.group("prep").lower()
            kept = words if prep in ("in", "at", "to", "from", "into", "on") else f"{prep} {words}"
            return third_person(re.sub(r"^(?:the|a|an)\s+", "", kept, flags=re.IGNORECASE), speaker)
    return None


def _person(sentence: str, speaker: str | None, question: Question, exclude: frozenset[str]) -> str | None:
    """A name the question does not use (not a speaker of the talk), else a relative or friend
    ("my daughter" -> "Melanie's daughter")."""
    asked = question.text.lower()
    for match in _PERSON_NAME.finditer(sentence):
        name = re.sub(r"['’]s$", "", match.group("span"))
        first = name.split()[0].lower()
        if match.start() == 0 and len(name.split()) == 1:
            continue  # the first word of a sentence is capitalised whatever it is
        if first in _NOT_PERSON or first in exclude or name.lower() in asked:
            continue
        if speaker and first == speaker.split(" (")[0].lower():
            continue
        return name
    found = _RELATIVE.search(sentence)
    if found and found.group("span").lower() not in asked:
        return third_person(found.group("span"), speaker)
    return None


_SUBJECT = re.compile(
    r"^(?:(?:and|so|but|then|also|plus)\s+)?(?:(?:my|our|his|her|their)\s+(?:\w+\s+){0,2}?(?:and\s+(?:i|we|me)\s+)?"
    r"|(?:i|we|they|he|she)\s+(?:and\s+(?:my|our)\s+\w+\s+)?|[A-Z]\w+\s+and\s+(?:i|me)\s+)"
    r"(?:(?:have|has|had|just|also|finally|recently|really|even|all|both|'ve|usually|often|always)\s+)*",
    re.IGNORECASE)
_TRAILING_TIME = re.compile(
    r"\s+(?:(?:on|this|last|next|past|over\s+the)\s+)?(?:(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"week|weekend|month|year|summer|winter|spring|fall|night|morning|evening)s?|yesterday|today|tonight|"
    r"recently|lately|together|again|too|once)\b[.!]*$", re.IGNORECASE)


def item(clause_text: str) -> str:
    """One item of a list answer from the clause that names it: without who did it and when
    ("My family and I went camping at the beach last week" -> "went camping at the beach")."""
    text = CHECKBOX.sub("", clause_text.strip().strip("“”\"").rstrip(".!"))
    stripped = _SUBJECT.sub("", text, count=1)
    for _ in range(3):
        shorter = _TRAILING_TIME.sub("", stripped)
        if shorter == stripped:
            break
        stripped = shorter
    return stripped.strip(" ,") or text
