"""Who and what a question names: the people of a talk it asks about, the other names its
answer must mention (places, products, identifiers), and the things it asks about through a
possessive ("grandpa's gift")."""

from __future__ import annotations

import re
from collections.abc import Iterable

from chinvex.answer.attribution import same_person
from chinvex.answer.statements import IDENTIFIER
from chinvex.answer.units import Unit

USER_ROLES = frozenset({"user", "human", "you", "me", "prompt"})
REPLY_ROLES = frozenset({"assistant", "ai", "model", "chatgpt", "claude", "bot", "tool", "response"})
"""Role labels of chat transcripts: they are not people a question names."""

_NAME = re.compile(r"(?<![\w'’])(?:[A-Z][\w'’.-]*[A-Za-z0-9]|[A-Z])(?:\s+[A-Z][\w'’.-]*[A-Za-z0-9])*")
_POSSESSIVE_PHRASE = re.compile(r"\b(\w+)['’]s\s+([\w-]+)(?:\s+([\w-]+))?")
KIND_NOUNS = frozenset("""reaction reactions attitude attitudes suggestion suggestions opinion opinions feeling feelings
    thought thoughts view views idea ideas plan plans reason reasons goal goals advice take impression impressions
    response responses approach way ways motivation inspiration hope hopes identity status experience experiences""".split())
"""Nouns that name the kind of answer asked for rather than a thing the sources must mention:
"Jon's attitude towards the festival" is answered by "Glad to be part of it"."""
_NOT_NAMES = frozenset(
    """what when where who whom whose why how which is are was were do does did has have had can could
    would will should shall may might must am i the a an in on at of for to and or but if not no yes
    please tell show give list explain describe compare""".split()
)
_MONTHS = frozenset(
    """january february march april may june july august september october november december monday
    tuesday wednesday thursday friday saturday sunday""".split()
)


_SENTENCE_END = re.compile(r"(?:[?!]|(?<=[a-z]{3})\.)[\"'”’)]*\s+")
"""Where a question's next sentence starts ("…for Nate? Answer yes or no."): its first word is
capitalised as every sentence's is, not as a name. Not after "Dr." or an initial."""


def speakers_of(units: Iterable[Unit]) -> set[str]:
    """The people who speak in the evidence's dialogues (chat roles such as "user" are not)."""
    names = {u.speaker.lower() for u in units if u.speaker} - USER_ROLES - REPLY_ROLES - {"system"}
    return {s for s in names if s.split(" ")[0] not in REPLY_ROLES}


def question_names(text: str) -> list[str]:
    """Names the question uses: capitalised words past the first word of each of its sentences,
    and code identifiers.
    These must appear in what answers it ("What is the capital of Australia?" needs Australia)."""
    found: list[str] = []
    stripped = text.strip()
    starts = {0} | {m.end() for m in _SENTENCE_END.finditer(stripped)}
    for match in _NAME.finditer(stripped):
        if match.start() in starts:
            words = match.group(0).split()
            rest = " ".join(words[1:])
            if not rest:
                continue
            candidate = rest
        else:
            candidate = match.group(0)
        words = [re.sub(r"['’]s?$", "", w) for w in candidate.split()]
        words = [w for w in words if w.lower().strip(".") not in _NOT_NAMES | _MONTHS]
        if words:
            found.append(" ".join(words))
    found.extend(m.group(0) for m in IDENTIFIER.finditer(stripped))
    return list(dict.fromkeys(found))


def subject_of(text: str, speakers: Iterable[str]) -> list[str]:
    """What a question asks about through a possessive: "grandpa's gift" names grandpa (not a
    participant of the talk) and a gift; "Caroline's youth center" a youth center, found by
    either word. Each returned phrase must be mentioned, by one of its words, in the passage
    that answers: "What was grandpa's gift to Caroline?" is not answered by a gift from her
    grandma. Participants are checked elsewhere (whom a sentence is about), and nouns naming
    the kind of answer (`KIND_NOUNS`: "Jon's attitude") are not things to find."""
    people = [s.lower() for s in speakers]
    phrases: list[str] = []
    for match in _POSSESSIVE_PHRASE.finditer(text):
        owner, head, after = match.group(1), match.group(2), match.group(3)
        if owner.lower() not in _NOT_NAMES and not any(same_person(owner, p) for p in people):
            phrases.append(owner)
        if head.lower() not in KIND_NOUNS and head.lower() not in _NOT_NAMES:
            phrases.append(f"{head} {after}" if after and after.lower() not in _NOT_NAMES else head)
    return phrases
