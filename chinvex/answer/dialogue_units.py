"""Dialogue evidence cut into units, each recording whom it is about.

The words of a turn are not all about the same person. In
`**[D4:3] Caroline:** Thanks, Melanie! This necklace is a gift from my grandma.` the necklace
is Caroline's: "my" refers to the speaker, "you"/"your" to the one spoken to, and a name used
as a form of address ("Thanks, Melanie!") says who listens, not who the sentence is about.
Each dialogue unit therefore records whom it is about (`about`), which lets the extractive
generator refuse "What was grandma's gift to Melanie?" even though every word of that question
appears in the turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from chinvex.answer.attribution import same_person
from chinvex.answer.question_names import USER_ROLES
from chinvex.answer.text import content_words
from chinvex.answer.units import Unit, asks, form_of, sentences

# `**[D1:3] Caroline:** text`, `Caroline: text`, `> **Bob (PM):** text`, `- Alice: text`.
_SPEAKER_LINE = re.compile(
    r"^[ \t>*_-]*(?P<tag>\[[^\]\n]{1,40}\]\s*)?(?:[*_]{1,2})?"
    r"(?P<name>[A-Z][\w.'’-]{0,30}(?: [A-Z][\w.'’-]{0,30}){0,2})"
    r"\s*(?:\([^)\n]{0,40}\))?\s*(?:[*_]{1,2})?:(?:[*_]{1,2})?(?:\s+|$)"
)
# chinvex's own conversation chunks: `[Turn 3 of 12] assistant:` on a line of its own.
_TURN_MARKER = re.compile(
    r"^\[Turn (?P<n>\d+)(?: of \d+)?(?:, part \d+/\d+)?\] (?P<name>[\w .()_-]{1,60}):\s*$"
)
_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|i’m|i've|i’ve|i'd|i’d|i'll|i’ll|me|my|mine|myself|we|we're|we’re|we've|"
    r"we’ve|we'd|we’d|we'll|we’ll|our|ours|ourselves|us)\b",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(
    r"\b(?:you|you're|you’re|you've|you’ve|you'd|you’d|you'll|you’ll|your|yours|yourself|"
    r"yourselves|ya)\b",
    re.IGNORECASE,
)
_GREETING = (
    r"hey|hi|hello|thanks|thank you|thx|dear|bye|goodbye|congrats|congratulations|oh|wow|yo|"
    r"aw+|yes|yeah|yep|no|sorry|ok|okay|great|good|nice|woah|whoa|well|hmm|see you|love you|"
    r"morning|evening|night|cheers"
)
# `Date: 8 May 2023`, `Subject: ...`: header fields of notes and mails, not voices.
_FIELD_NAMES = frozenset(
    """date time subject from to cc bcc title summary tags tag source status author created
    updated modified version note notes warning todo fixme example examples see url link type
    category location place attendees participants agenda question answer q a""".split()
)
_CAPITALISED = re.compile(r"\b[A-Z][a-z][\w’'-]*")
_POSSESSIVE = re.compile(r"['’]s?$")


@dataclass
class Turn:
    """One speaker's turn: its tag (`D4:3`, `Turn 3`), speaker, lines and first line number."""

    tag: str
    name: str
    body: list[str]
    line: int


def dialogue_turns(text: str, speakers: frozenset[str] = frozenset()) -> list[Turn] | None:
    """The chunk's turns if it reads as a dialogue: at least three labelled lines, at least two
    speakers, one of them speaking more than once (a docstring's `Args:`/`Returns:` is not); or
    any labelled line of a speaker known from elsewhere in the evidence. In chinvex's own
    conversation chunks only its turn markers start a turn: "Result: Hello" or "Output: …" inside
    a tool's output is a line of that output, not a speaker."""
    turns: list[Turn] = []
    lines = text.splitlines()
    markers = sum(1 for line in lines if _TURN_MARKER.match(line))
    for number, line in enumerate(lines, start=1):
        marker = _TURN_MARKER.match(line)
        if marker:
            turns.append(Turn(f"Turn {marker.group('n')}", marker.group("name").strip(), [], number))
            continue
        label = None if markers else _SPEAKER_LINE.match(line)
        if label and not line.lstrip().startswith("#") and label.group("name").lower() not in _FIELD_NAMES:
            tag = (label.group("tag") or "").strip().strip("[]")
            turns.append(Turn(tag, label.group("name").strip(), [line[label.end():]], number))
        elif turns and line.strip():
            turns[-1].body.append(line)
    if markers:
        return turns
    names = [t.name.lower() for t in turns]
    distinct = set(names)
    if len(turns) >= 3 and len(distinct) >= 2 and max(names.count(n) for n in distinct) >= 2:
        return turns
    if speakers and turns and all(n in speakers for n in distinct):
        return turns
    return None


def _vocatives(sentence: str, names: set[str]) -> tuple[str, set[str]]:
    """Remove names used as forms of address ("Thanks, Mel!", "Hey Jon, ...", "..., Gina.")."""
    found: set[str] = set()
    out = sentence
    for name in sorted({_POSSESSIVE.sub("", m.group(0)) for m in _CAPITALISED.finditer(sentence)}, key=len, reverse=True):
        if not _is_participant(name.lower(), names):
            continue
        pattern = re.compile(
            r"(^\W*|[,;:]\s*|\b(?:" + _GREETING + r")[,!.]?\s+)" + re.escape(name) + r"(?=\s*[,!?.;:…)]|\s*$)",
            re.IGNORECASE,
        )
        if pattern.search(out):
            found.add(name.lower())
            out = pattern.sub(lambda m: m.group(1) + " ", out)
    return out, found


def _is_participant(word: str, names: set[str]) -> bool:
    return any(same_person(word, n) for n in names)


def dialogue_units(turns: list[Turn], chunk: int, speakers: frozenset[str] = frozenset()) -> list[Unit]:
    names = {t.name.lower() for t in turns} | set(speakers)
    units: list[Unit] = []
    for i, turn in enumerate(turns):
        speaker = turn.name.lower()
        addressee = _addressee(turns, i, names)
        label = f"[{turn.tag}] {turn.name}" if turn.tag else turn.name
        body = " ".join(part.strip() for part in turn.body if part.strip())
        # a tool turn ("assistant (Edit):" then "input: {...}") holds a call's arguments, not words said
        tool = bool(_TOOL_LABEL.search(turn.name)) and bool(form_of(body[:200]))
        output = bool(_TOOL_RESULT.match(turn.name))
        asking = speaker in USER_ROLES
        for sentence in sentences(body):
            analysed, called = _vocatives(sentence, names)
            if addressee is None and called:
                addressee = sorted(called)[0]
            about: set[str] = set()
            first = bool(_FIRST_PERSON.search(analysed))
            second = bool(_SECOND_PERSON.search(analysed))
            if first:
                about.add(speaker)
            # "Do your research and find an agency." is what the speaker advises: neither a
            # fact about the one addressed nor something the speaker did
            advice = bool(_ADVICE.match(analysed))
            if second and addressee and not advice:
                about.add(addressee)
            for word in _CAPITALISED.findall(analysed):
                word = _POSSESSIVE.sub("", word).lower()
                for n in names:
                    if same_person(word, n):
                        about.add(n)
            if not first and not second and not about and not advice:
                # "That race sounds great, Mel!" comments on the one addressed, and so does
                # "Sorry 'bout the accident!" after the other told of an accident; "Started
                # hitting the gym last week." drops its "I" and is the speaker's, and so is
                # "Hey Mel, that roadtrip was insane!": a hello names whom the news is for.
                addressed = set() if _OPENING.match(sentence) else set(called)
                about = addressed or set(_reacted_to(analysed, turns, i, units)) or {speaker}
            frozen = frozenset(about)
            units.append(Unit(
                chunk=chunk, order=len(units), text=sentence, analysed=analysed, kind="dialogue",
                label=label, speaker=turn.name, about=frozen, question=asks(sentence),
                line_start=turn.line, line_end=turn.line + max(0, len(turn.body) - 1), block=i,
                form="tool call" if tool else form_of(sentence) or ("tool output" if output else "")
                or ("request" if asking and _requests(sentence) else ""),
            ))
    return units


_TOOL_LABEL = re.compile(r"\(\s*[\w.:-]+\s*\)\s*$")
"""A chat role with a tool's name: `assistant (Edit)`, `tool (exec_command)`."""

_TOOL_RESULT = re.compile(r"^\s*tool\b", re.IGNORECASE)
"""The role of what a tool returned (`tool (exec_command)`, `tool (Read)`): a command's output or a
file's text, which the agent read, not words anyone said. It answers questions about output only
(units.FORMS "tool output"): in real agent sessions most turns are tool results, and a log line or
a file printed by `sed` otherwise answered "What are the action items?" over the assistant's own
summary."""

_REQUEST = re.compile(
    r"^\W*(?:(?:please|so|now|ok(?:ay)?|also|then|and)[,\s]+)*(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|"
    r"let'?s\s+|let\s+us\s+|i\s+(?:want|need|would\s+like)\s+you\s+to\s+)?"
    r"(?:add|fix|make|create|write|build|implement|run|search|find|change|update|remove|delete|refactor|rename|"
    r"move|use|explain|summari[sz]e|analy[sz]e|review|delegate|check|test|show|list|tell|help|generate|convert|"
    r"port|set\s+up|install|deploy|clean|improve|optimi[sz]e|debug|investigate|look|read|open|edit|replace|split|"
    r"merge|commit|push|start|stop|try|do|draft|plan|document|describe)\b",
    re.IGNORECASE)
"""A user's sentence that asks the agent to do something ("Add jitter to the backoff", "Can you fix
the login bug?"): a request, which says what was wanted, not how it was done nor why (units.FORMS
"request", units.EXPLAINED). In real agent sessions the request echoes the words of a later
"How did we add jitter…?" better than the assistant's account of the change does."""

def _requests(sentence: str) -> bool:
    """Does the sentence, or one of its clauses after a semicolon or colon, ask for something to be
    done ("Retries from many clients line up; add jitter to the backoff")?"""
    return any(_REQUEST.match(clause) for clause in re.split(r"[;:]\s+", sentence))


_OPENING = re.compile(r"^\W*(?:hey|hi|hello|yo|dear|good\s+(?:morning|afternoon|evening)|morning|evening)\b",
                      re.IGNORECASE)
"""A sentence opening with a hello: the name after it says whom the speaker talks to, not whom
the sentence is about."""

_ADVICE = re.compile(
    r"^\W*(?:(?:just|so|and|but|maybe|definitely|really)\s+)?(?:"
    r"(?:do|don't|try|take|make|keep|find|get|go|remember|check|give|stay|start|think\s+about|consider|"
    r"look\s+(?:into|for|at)|focus|reach\s+out|talk\s+to|ask|trust|believe|follow|be)\b(?!\s+you\b)"
    r"|you\s+(?:should|could|might\s+want\s+to|need\s+to|have\s+to|must|ought\s+to)\b)",
    re.IGNORECASE)
"""A sentence that advises ("Do your research…", "You should try…"): it states what the speaker
recommends, not what anyone did or has, so it is about no one a question names."""

REACTION_WORDS = 10
"""A reaction is short ("Sorry 'bout the accident!"); a longer sentence states something of its own."""
_NOT_TOPICS = frozenset("""sounds looks seems must amazing awesome great glad happy sorry cool nice
    time times today yesterday tomorrow week weeks weekend month months year years night days last
    next""".split())
"""Words two turns share without sharing a topic (beside function words): praise and time."""


def _reacted_to(sentence: str, turns: list[Turn], i: int, earlier: list[Unit]) -> frozenset[str]:
    """Whom a short sentence without "I" or "you" comments on, when it comments on what the
    other speaker just told (not asked): the people the told sentences sharing its topic are
    about. "Sorry 'bout the accident!" after "My son got into an accident." is about the one
    who had it; "The store's doing great!" after "Good luck with your store!" stays the
    speaker's, whose store it is. Empty when it is no such comment."""
    if i == 0 or turns[i - 1].name.lower() == turns[i].name.lower() or len(sentence.split()) > REACTION_WORDS:
        return frozenset()
    told = [u for u in earlier if u.block == i - 1 and not u.question]
    topics = _topics(sentence)
    about: set[str] = set()
    for unit in told:
        if topics & _topics(unit.text):
            about |= unit.about
    return frozenset(about)


@lru_cache(maxsize=4096)
def _topics(text: str) -> frozenset[str]:
    """A sentence's topic words, as `_reacted_to` compares them: read once per sentence, though
    each comment after a turn compares against all of that turn's sentences."""
    return frozenset(w.lower() for w in content_words(text)) - _NOT_TOPICS


def _addressee(turns: list[Turn], i: int, names: set[str]) -> str | None:
    """Whom a turn speaks to: in a two-person talk the other one; else the nearest other voice."""
    speaker = turns[i].name.lower()
    others = names - {speaker}
    if len(others) == 1:
        return next(iter(others))
    for j in (i - 1, i + 1, i - 2, i + 2):
        if 0 <= j < len(turns) and turns[j].name.lower() != speaker:
            return turns[j].name.lower()
    return None
